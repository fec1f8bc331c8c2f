"""Setting or adding one keyword argument of a call."""

from __future__ import annotations

import libcst as cst

from attnlint.diagnostics import Applicability
from attnlint.edits import NodeFix, Replacement


def set_keyword(
    call: cst.Call, keyword: str, value_code: str, message: str, applicability: Applicability = Applicability.UNSAFE
) -> NodeFix:
    """`f(a)` -> `f(a, keyword=value)`; `f(a, keyword=old)` -> `f(a, keyword=value)`."""
    value = cst.parse_expression(value_code)
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return NodeFix(message, applicability, (Replacement(arg.value, value),))
    new_arg = cst.Arg(
        value=value,
        keyword=cst.Name(keyword),
        equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
    )
    args = list(call.args)
    if args and args[-1].comma is cst.MaybeSentinel.DEFAULT:
        args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    return NodeFix(message, applicability, (Replacement(call, call.with_changes(args=args + [new_arg])),))
