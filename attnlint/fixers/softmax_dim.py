"""Pointing a softmax at the key axis."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from attnlint.analysis.values import SoftmaxSite
from attnlint.diagnostics import Applicability
from attnlint.fixers.keyword import set_keyword
from attnlint.edits import NodeFix, Replacement


def set_softmax_dim(site: SoftmaxSite, axis: int) -> Optional[NodeFix]:
    """Rewrite (or add) the `dim` of a softmax call or of the `nn.Softmax(...)` it was built with.

    Unsafe: it changes which axis sums to one, i.e. every attention weight.
    """
    literal = str(axis)
    message = f"Use `dim={literal}` (the key axis)"
    if site.dim_node is not None:  # written positionally, as `dim=...`, or as `dim=None`
        return NodeFix(message, Applicability.UNSAFE, (Replacement(site.dim_node, cst.parse_expression(literal)),))
    call = site.module_ctor if site.form == "module" else site.call
    if call is None:
        return None
    return set_keyword(call, "dim", literal, message)
