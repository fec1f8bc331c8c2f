"""Rewrites of masks: invert a convention, slice a fixed-size buffer, zero fully masked rows."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from attnlint.analysis.values import FillSite
from attnlint.diagnostics import Applicability
from attnlint.fixers import bare_code
from attnlint.edits import NodeFix, Replacement

_ATOMS = (cst.Name, cst.Attribute, cst.Call, cst.Subscript)


def _atom(module: cst.Module, node: cst.BaseExpression) -> str:
    """Code for `node` that can take a postfix (`.all()`) or prefix (`~`) operator as a unit."""
    code = module.code_for_node(node)
    return code if isinstance(node, _ATOMS) or node.lpar else f"({code})"


def is_repeatable(node: cst.CSTNode) -> bool:
    """Names, attributes, subscripts, comparisons and pure tensor methods: safe to evaluate twice."""
    if isinstance(node, (cst.Name, cst.Integer, cst.Float, cst.SimpleString)):
        return True
    if isinstance(node, cst.Attribute):
        return is_repeatable(node.value)
    if isinstance(node, cst.UnaryOperation):
        return is_repeatable(node.expression)
    if isinstance(node, cst.Comparison):
        return is_repeatable(node.left) and all(is_repeatable(c.comparator) for c in node.comparisons)
    if isinstance(node, cst.BinaryOperation):
        return is_repeatable(node.left) and is_repeatable(node.right)
    if isinstance(node, cst.Subscript):
        return is_repeatable(node.value) and all(
            isinstance(e.slice, cst.Slice) or is_repeatable(e.slice.value) for e in node.slice
        )
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        pure = {"bool", "float", "unsqueeze", "view", "reshape", "expand", "logical_not", "eq", "ne", "to", "T", "mT"}
        return (
            node.func.attr.value in pure
            and is_repeatable(node.func.value)
            and all(is_repeatable(a.value) for a in node.args)
        )
    return False


def invert_mask(module: cst.Module, mask_node: cst.BaseExpression, expects: str) -> NodeFix:
    """`mask` -> `~mask` (and `~mask` -> `mask`). Unsafe: it changes which positions are attended."""
    if (
        isinstance(mask_node, cst.UnaryOperation)
        and isinstance(mask_node.operator, cst.BitInvert)
        and not mask_node.lpar
    ):
        new = mask_node.expression
    else:
        new = cst.parse_expression(f"~{_atom(module, mask_node)}")
    meaning = "True = may attend" if expects == "attend" else "True = masked"
    return NodeFix(
        f"Invert the mask (this argument expects {meaning})", Applicability.UNSAFE, (Replacement(mask_node, new),)
    )


def slice_buffer(module: cst.Module, buffer: cst.Attribute, rows: str, cols: str) -> NodeFix:
    """`self.mask` -> `self.mask[..., cols - rows:cols, :cols]`, keeping any leading dims.

    The last `rows` rows of the first `cols` columns: the queries are the *latest* positions.
    With as many queries as keys this is the top-left `[:T, :T]`; while decoding with a KV cache
    (one query, T keys) it is the last row, which a top-left slice would get wrong.
    Safe: identical when the current length equals the size the buffer was built with; for
    shorter inputs the old code raised a shape error.
    """
    new = cst.parse_expression(f"{module.code_for_node(buffer)}[..., {cols} - {rows}:{cols}, :{cols}]")
    return NodeFix("Slice the mask buffer to the current lengths", Applicability.SAFE, (Replacement(buffer, new),))


def zero_fully_masked_rows(
    module: cst.Module, softmax_call: cst.Call, scores: Optional[cst.BaseExpression], fill: FillSite, partial: bool
) -> Optional[NodeFix]:
    """`softmax(s)` -> `softmax(s).masked_fill(s.isneginf().all(dim=-1, keepdim=True), 0.0)`.

    Rows whose every score is -inf become exactly 0 (as SDPA defines them) instead of NaN. The
    test reads the scores themselves, so it covers every fill (two masks, a mask that is None on
    some paths) at once. Because masked_fill's backward zeroes the gradient there and the -inf
    fill's backward zeroes it again, q and k gradients stay finite. When the scores expression
    cannot be repeated, the fill's own mask is tested (`m.all(...)`). Not offered for additive
    -inf masks: there the NaN reaches q/k gradients through the addition whatever follows.
    """
    if fill.additive:
        return None
    if scores is not None and is_repeatable(scores):
        rows = f"{_atom(module, scores)}.isneginf()"
    elif is_repeatable(fill.mask_node) and not partial:
        rows = _atom(module, fill.mask_node)
        if fill.keeps_where_true:
            rows = f"(~{rows})"
    else:
        return None
    new = cst.parse_expression(f"{bare_code(module, softmax_call)}.masked_fill({rows}.all(dim=-1, keepdim=True), 0.0)")
    return NodeFix(
        "Zero the weights of fully masked rows after the softmax",
        Applicability.UNSAFE,
        (Replacement(softmax_call, new),),
    )
