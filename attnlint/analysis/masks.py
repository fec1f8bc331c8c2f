"""Mask facts: how each way of building or transforming a mask changes what its True entries mean.

Pure functions over :class:`MaskFacts`; the evaluator calls them as it meets the operations.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Dict, Optional

import libcst as cst

from attnlint.analysis.names import canonical, qualify
from attnlint.analysis.values import ATTEND, MASKED, MaskFacts

# Parameter names and what they mean in the ecosystem that uses them.
_PARAM_MASKS = {
    # Hugging Face: 1 = real token, 0 = padding.
    "attention_mask": MaskFacts(origin="argument", convention=ATTEND, can_mask_whole_row=True),
    # PyTorch's nn.MultiheadAttention / nn.Transformer: True = padding (ignored).
    "key_padding_mask": MaskFacts(origin="argument", convention=MASKED, dtype="bool", can_mask_whole_row=True),
    "src_key_padding_mask": MaskFacts(origin="argument", convention=MASKED, dtype="bool", can_mask_whole_row=True),
    "tgt_key_padding_mask": MaskFacts(origin="argument", convention=MASKED, dtype="bool", can_mask_whole_row=True),
    "memory_key_padding_mask": MaskFacts(origin="argument", convention=MASKED, dtype="bool", can_mask_whole_row=True),
    # Used both ways in the wild (Hugging Face audio models: 1 = keep): no convention.
    "padding_mask": MaskFacts(origin="argument", can_mask_whole_row=True),
    "pad_mask": MaskFacts(origin="argument", can_mask_whole_row=True),
}
# Names that say "a mask" without saying its convention.
_GENERIC_MASK_NAMES = {"mask", "attn_mask", "src_mask", "tgt_mask", "causal_mask", "memory_mask"}


# PyTorch's attention APIs and the positional index of each of their mask arguments (all read
# True = masked, except SDPA's `attn_mask`: True = may attend).
MASK_ARGUMENTS = {
    "sdpa": {"attn_mask": 3},
    "MultiheadAttention": {"key_padding_mask": 3, "attn_mask": 5},
    "TransformerEncoder": {"mask": 1, "src_key_padding_mask": 2},
    "TransformerEncoderLayer": {"src_mask": 1, "src_key_padding_mask": 2},
    "TransformerDecoderLayer": {
        "tgt_mask": 2,
        "memory_mask": 3,
        "tgt_key_padding_mask": 4,
        "memory_key_padding_mask": 5,
    },
    "TransformerDecoder": {"tgt_mask": 2, "memory_mask": 3, "tgt_key_padding_mask": 4, "memory_key_padding_mask": 5},
    "Transformer": {
        "src_mask": 2,
        "tgt_mask": 3,
        "memory_mask": 4,
        "src_key_padding_mask": 5,
        "tgt_key_padding_mask": 6,
        "memory_key_padding_mask": 7,
    },
}

# The same mask under another keyword of a PyTorch API (same convention, other spelling).
_ALIASES = {"key_padding_mask": "src_key_padding_mask"}


def keyword_for(api: str, param: str) -> Optional[str]:
    """The keyword under which a mask parameter named `param` goes to `api`, when its name says
    it already is in that API's convention (`key_padding_mask` for nn.MultiheadAttention)."""
    keywords = MASK_ARGUMENTS.get(api, {})
    if param in keywords:
        return param
    alias = _ALIASES.get(param)
    return alias if alias in keywords else None


def from_param(name: str) -> Optional[MaskFacts]:
    if name in _PARAM_MASKS:
        return replace(_PARAM_MASKS[name], param=name)
    if name in _GENERIC_MASK_NAMES:
        return MaskFacts(origin="argument", param=name)
    return None


def is_mask_param(name: str) -> bool:
    return name in _PARAM_MASKS or name in _GENERIC_MASK_NAMES


def invert(mask: MaskFacts) -> MaskFacts:
    flipped = {ATTEND: MASKED, MASKED: ATTEND}.get(mask.convention or "")
    return replace(mask, convention=flipped, dtype="bool" if mask.dtype != "float" else mask.dtype)


def compare(mask: MaskFacts, op: cst.BaseCompOp, literal: Optional[float]) -> Optional[MaskFacts]:
    """`mask == 0` flips the convention; `mask == 1`, `mask != 0`, `mask > 0` keep it."""
    if literal is None:
        return None
    if isinstance(op, cst.Equal):
        flips = literal == 0
    elif isinstance(op, cst.NotEqual):
        flips = literal != 0
    elif isinstance(op, (cst.GreaterThan,)) and literal == 0:
        flips = False
    elif isinstance(op, (cst.LessThanEqual,)) and literal == 0:
        flips = True
    else:
        return None
    result = invert(mask) if flips else mask
    return replace(result, dtype="bool")


def triangular(kind: str, diagonal: int, dtype: Optional[str], size: tuple) -> MaskFacts:
    """`triu(ones, diagonal=1)`: ones strictly above the diagonal mark the future: True = masked.
    `tril(ones)`: ones on and below the diagonal mark what may be attended: True = attend.

    Other diagonals give no convention: `triu(ones)` (diagonal 0) is as often transposed into
    the "attend" lower triangle (PyTorch's old tutorial) as it is used as a mask.
    """
    if kind == "triu":
        convention = MASKED if diagonal >= 1 else None
        return MaskFacts(
            origin="causal", convention=convention, dtype=dtype, built_size=size, can_mask_whole_row=diagonal <= 0
        )
    return MaskFacts(
        origin="causal",
        convention=ATTEND if diagonal >= 0 else None,
        dtype=dtype,
        built_size=size,
        can_mask_whole_row=diagonal < 0,
    )


def transposed(mask: Optional[MaskFacts]) -> Optional[MaskFacts]:
    """A transposed mask: a triangle turns into the other one, a padding mask onto the query
    axis; what True means is no longer known."""
    if mask is None:
        return None
    return replace(mask, convention=None, can_mask_whole_row=None)


def combine(a: Optional[MaskFacts], b: Optional[MaskFacts], op: cst.BaseBinaryOp) -> Optional[MaskFacts]:
    """`a & b` / `a | b` of two masks in one convention: still that convention. Combined with
    something we know nothing about (`kpm & ~kpm.all(-1, keepdim=True)`), whether a row can be
    emptied is unknown."""
    if a is None and b is None:
        return None
    if a is None or b is None:
        known = a or b
        return replace(known, can_mask_whole_row=None, buffer_node=None)
    if a.convention != b.convention or a.convention is None:
        return MaskFacts(origin="combined", dtype="bool")
    whole = None
    if a.can_mask_whole_row or b.can_mask_whole_row:
        whole = True
    elif a.can_mask_whole_row is False and b.can_mask_whole_row is False:
        # Masking more (True = masked, `|`; True = attend, `&`) can only empty rows further.
        grows = isinstance(op, cst.BitOr) if a.convention == MASKED else isinstance(op, cst.BitAnd)
        whole = None if grows else False
    return MaskFacts(origin="combined", convention=a.convention, dtype="bool", can_mask_whole_row=whole)


def fill_kind(node: cst.BaseExpression, aliases: Dict[str, str]) -> Optional[str]:
    """ "-inf" for every spelling of negative infinity, "finite" for a number, else None."""
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = node.expression
        if isinstance(inner, (cst.Integer, cst.Float)):
            return "finite"
        if _is_inf(inner, aliases):
            return "-inf"
        if isinstance(inner, cst.Attribute) and inner.attr.value == "max":
            return "finite"  # -torch.finfo(dtype).max
        return None
    if isinstance(node, (cst.Integer, cst.Float)):
        return "finite"
    if isinstance(node, cst.Call):
        qualified = canonical(qualify(node.func, aliases))
        if isinstance(node.func, cst.Name) and node.func.value == "float" and node.args:
            arg = node.args[0].value
            if isinstance(arg, cst.SimpleString) and isinstance(arg.evaluated_value, str):
                text = arg.evaluated_value.strip().lower()
                if text in ("-inf", "-infinity"):
                    return "-inf"
                try:
                    float(text)
                    return "finite" if "inf" not in text and "nan" not in text else None
                except ValueError:
                    return None
        if qualified == "torch.tensor" and node.args:
            return fill_kind(node.args[0].value, aliases)
    if isinstance(node, cst.Attribute) and node.attr.value == "min":
        return "finite"  # torch.finfo(dtype).min
    return None


def _is_inf(node: cst.BaseExpression, aliases: Dict[str, str]) -> bool:
    qualified = qualify(node, aliases)
    if qualified in ("torch.inf", "math.inf", "numpy.inf", "numpy.Inf", "numpy.infty"):
        return True
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "float" and node.args:
        arg = node.args[0].value
        return isinstance(arg, cst.SimpleString) and arg.evaluated_value in ("inf", "Inf", "infinity")
    return False


def number(node: Optional[cst.BaseExpression]) -> Optional[float]:
    if isinstance(node, cst.Integer):
        return float(node.evaluated_value)
    if isinstance(node, cst.Float):
        return float(node.evaluated_value)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = number(node.expression)
        return None if inner is None else -inner
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return 1.0 if node.value == "True" else 0.0
    return None
