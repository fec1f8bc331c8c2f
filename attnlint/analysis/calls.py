"""Reading a call's arguments as Python binds them (positional or by keyword)."""

from __future__ import annotations

from typing import Optional

import libcst as cst


def argument(call: Optional[cst.Call], position: int, keyword: str) -> Optional[cst.Arg]:
    """The argument bound to a parameter: by keyword, else the `position`-th positional one."""
    if call is None:
        return None
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg
    positional = [a for a in call.args if a.keyword is None and not a.star]
    if position < len(positional):
        return positional[position]
    return None


def positional(call: cst.Call, index: int) -> Optional[cst.BaseExpression]:
    """The value of the `index`-th positional argument, if there is one."""
    args = [a for a in call.args if a.keyword is None and not a.star]
    return args[index].value if index < len(args) else None
