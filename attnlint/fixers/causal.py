"""Causality and an explicit mask: drop a redundant `is_causal`, or fold a lower-right aligned
causal mask into the explicit one."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from attnlint.diagnostics import Applicability
from attnlint.edits import NodeFix, Replacement


def drop_causal_flag(flag: cst.BaseExpression, message: str) -> NodeFix:
    """`is_causal=True` -> `is_causal=False`: the mask already is causal."""
    return NodeFix(message, Applicability.UNSAFE, (Replacement(flag, cst.Name("False")),))


def fold_lower_right_causal(
    flag: cst.BaseExpression,
    mask: cst.BaseExpression,
    mask_code: str,
    query_code: str,
    key_code: str,
    mask_dtype: Optional[str],
    torch_name: str,
) -> NodeFix:
    """`attn_mask=m, is_causal=True` -> `attn_mask=m & causal, is_causal=False`, with `causal` the
    lower-right aligned triangle (query i sees keys up to i + n_k - n_q), right for a KV cache and
    equal to the usual triangle when the lengths agree. A bool mask (True = may attend) is and-ed
    with it; a float (additive) mask gets -inf above it; when the dtype is unknown, both.
    """
    n_q, n_k = f"{query_code}.size(-2)", f"{key_code}.size(-2)"
    causal = f"{torch_name}.ones({n_q}, {n_k}, dtype={torch_name}.bool, device={query_code}.device).tril({n_k} - {n_q})"
    as_bool = f"({mask_code} & {causal})"
    as_float = f'{mask_code}.masked_fill(~{causal}, float("-inf"))'
    if mask_dtype == "bool":
        folded = as_bool
    elif mask_dtype == "float":
        folded = as_float
    else:
        folded = f"({as_bool} if {mask_code}.dtype == {torch_name}.bool else {as_float})"
    return NodeFix(
        "Fold a lower-right aligned causal mask into `attn_mask` and drop `is_causal`",
        Applicability.UNSAFE,
        (Replacement(mask, cst.parse_expression(folded)), Replacement(flag, cst.Name("False"))),
    )
