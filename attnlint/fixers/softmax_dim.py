"""Pointing a softmax at the key axis."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from attnlint.analysis.values import SoftmaxSite
from attnlint.diagnostics import Applicability
from attnlint.rules.base import NodeFix, Replacement


def set_softmax_dim(site: SoftmaxSite, axis: int) -> Optional[NodeFix]:
    """Rewrite (or add) the `dim` of a softmax call or of the `nn.Softmax(...)` it was built with.

    Unsafe: it changes which axis sums to one, i.e. every attention weight.
    """
    literal = str(axis)
    message = f"Use `dim={literal}` (the key axis)"
    if site.dim_given and site.dim_node is not None:
        new = cst.parse_expression(literal)
        return NodeFix(message, Applicability.UNSAFE, (Replacement(site.dim_node, new),))
    call = site.module_ctor if site.form == "module" else site.call
    if call is None:
        return None
    if site.dim_node is not None:  # `dim=None` written out
        return NodeFix(message, Applicability.UNSAFE, (Replacement(site.dim_node, cst.parse_expression(literal)),))
    new_arg = cst.Arg(
        value=cst.parse_expression(literal),
        keyword=cst.Name("dim"),
        equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
    )
    args = list(call.args)
    if args:
        last = args[-1]
        if last.comma is cst.MaybeSentinel.DEFAULT:
            args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    new_call = call.with_changes(args=args + [new_arg])
    return NodeFix(message, Applicability.UNSAFE, (Replacement(call, new_call),))
