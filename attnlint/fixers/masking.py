"""Rewrites of masks: invert a convention, slice a fixed-size buffer, zero fully masked rows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Collection, Optional

import libcst as cst

from attnlint.analysis.values import FillSite, MaskLengths
from attnlint.diagnostics import Applicability
from attnlint.edits import InsertBefore, NodeFix, Replacement
from attnlint.fixers import bare_code

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


@dataclass(frozen=True)
class LengthReads:
    """How to read the current lengths where a mask is used, for a fix that must name them."""

    both: str  # `s.shape[-2:]`, or `q.size(-2), k.size(-2)`: (queries, keys)
    keys: str  # `s.size(-1)`: the keys alone (when there are as many queries)


def slice_buffer(
    module: cst.Module,
    buffer: cst.Attribute,
    lengths: Optional[MaskLengths],
    reads: Optional[LengthReads],
    statement: Optional[cst.SimpleStatementLine],
    taken: Collection[str],
) -> Optional[NodeFix]:
    """`self.mask` -> `self.mask[..., :T, :T]`, keeping any leading dims; the lengths named once.

    The slice is the last Q rows of the first K columns (`[..., K - Q:K, :K]`): the queries are
    the *latest* positions. With as many queries as keys (shown by the analysis) that is the
    top-left `[..., :T, :T]`; while decoding with a KV cache (one query, T keys) it is the last
    row, which a top-left slice would get wrong. The lengths are written by name: the names the
    code already has for them (`T` from `B, T, C = x.size()`), else a new line before the
    statement reads them once (`q_len, k_len = s.shape[-2:]`). None when neither can be done
    (the statement cannot take a line before it).
    Safe: identical when the current length equals the size the buffer was built with; for
    shorter inputs the old code raised a shape error.
    """
    code = module.code_for_node(buffer)
    changes: list = []
    if lengths is not None and lengths.square and lengths.query_names:
        n = lengths.query_names[0]
        sliced = f"{code}[..., :{n}, :{n}]"
    elif lengths is not None and lengths.query_names and lengths.key_names:
        q, k = lengths.query_names[0], lengths.key_names[0]
        sliced = f"{code}[..., {k} - {q}:{k}, :{k}]"
    elif reads is None or statement is None:
        return None
    elif lengths is not None and lengths.square:
        n = fresh_name("seq_len", taken)
        changes.append(InsertBefore(statement, f"{n} = {reads.keys}"))
        sliced = f"{code}[..., :{n}, :{n}]"
    else:
        q, k = fresh_name("q_len", taken), fresh_name("k_len", taken)
        changes.append(InsertBefore(statement, f"{q}, {k} = {reads.both}"))
        sliced = f"{code}[..., {k} - {q}:{k}, :{k}]"
    changes.append(Replacement(buffer, cst.parse_expression(sliced)))
    return NodeFix("Slice the mask buffer to the current lengths", Applicability.SAFE, tuple(changes))


def fresh_name(base: str, taken: Collection[str]) -> str:
    """`base`, or `base_2`, `base_3`, ...: a name the function does not use yet."""
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}_{n}"
    return name


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
