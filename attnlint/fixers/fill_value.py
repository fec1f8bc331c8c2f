"""Replacing the fill of masked scores by the most negative value of the scores' own dtype."""

from __future__ import annotations

import libcst as cst

from attnlint.diagnostics import Applicability
from attnlint.edits import NodeFix, Replacement


def dtype_min_fill(
    fill: cst.BaseExpression, scores_code: str, torch_name: str, applicability: Applicability
) -> NodeFix:
    """`masked_fill(mask, -1e9)` -> `masked_fill(mask, torch.finfo(scores.dtype).min)`."""
    new = cst.parse_expression(f"{torch_name}.finfo({scores_code}.dtype).min")
    return NodeFix(f"Fill with `{torch_name}.finfo({scores_code}.dtype).min`", applicability, (Replacement(fill, new),))
