"""Rewrites of axis swaps."""

from __future__ import annotations

import libcst as cst

from attnlint.diagnostics import Applicability
from attnlint.edits import NodeFix, Replacement


def swap_last_two_axes(dot_t: cst.Attribute, spelling: str = "transpose") -> NodeFix:
    """`x.T` -> `x.transpose(-2, -1)` (or `x.mT`, PyTorch 1.11+).

    Safe: on 2-D input both are the same view (bit for bit); on batched input only the new form
    swaps the matrix axes instead of reversing every axis.
    """
    if spelling == "mT":
        return NodeFix(
            message="Replace `.T` with `.mT`",
            applicability=Applicability.SAFE,
            changes=(Replacement(dot_t, dot_t.with_changes(attr=cst.Name("mT"))),),
        )
    new = cst.Call(
        func=cst.Attribute(value=dot_t.value, attr=cst.Name("transpose")),
        args=[
            cst.Arg(
                cst.UnaryOperation(cst.Minus(), cst.Integer("2")),
                comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")),
            ),
            cst.Arg(cst.UnaryOperation(cst.Minus(), cst.Integer("1"))),
        ],
        lpar=dot_t.lpar,
        rpar=dot_t.rpar,
    )
    return NodeFix(
        message="Replace `.T` with `.transpose(-2, -1)`",
        applicability=Applicability.SAFE,
        changes=(Replacement(dot_t, new),),
    )
