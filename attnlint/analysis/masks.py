"""Mask facts: how each way of building or transforming a mask changes what its True entries mean.

Pure functions over :class:`MaskFacts`; the evaluator calls them as it meets the operations.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Dict, List, Optional

import libcst as cst

from attnlint.analysis.names import canonical, qualify
from attnlint.analysis.names import Subtree, child_nodes, literal
from attnlint.analysis.values import ATTEND, MASKED, QUERY_MAJOR, MaskFacts

# Parameter names and what they mean in the ecosystem that uses them. Each marks padded keys;
# alone it empties a row only for a sequence that is all padding, which a batch of real data
# does not hold and the code does not show: a row is empty where a causal mask meets left
# padding, or where padded queries are masked too (see _combine, masks_padded_queries).
_PARAM_MASKS = {
    # Hugging Face: 1 = real token, 0 = padding.
    "attention_mask": MaskFacts(origin="argument", convention=ATTEND, marks_padding=True),
    # PyTorch's nn.MultiheadAttention / nn.Transformer: True = padding (ignored).
    "key_padding_mask": MaskFacts(origin="argument", convention=MASKED, dtype="bool", marks_padding=True),
    "src_key_padding_mask": MaskFacts(origin="argument", convention=MASKED, dtype="bool", marks_padding=True),
    "tgt_key_padding_mask": MaskFacts(origin="argument", convention=MASKED, dtype="bool", marks_padding=True),
    "memory_key_padding_mask": MaskFacts(origin="argument", convention=MASKED, dtype="bool", marks_padding=True),
    # Used both ways in the wild (Hugging Face audio models: 1 = keep): no convention.
    "padding_mask": MaskFacts(origin="argument", marks_padding=True),
    "pad_mask": MaskFacts(origin="argument", marks_padding=True),
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


# A padding mask named after what it pads (`encoder_padding_mask`, `src_pad_mask`,
# `enc_key_padding_mask`) means what the bare name means.
_PADDING_SUFFIXES = ("key_padding_mask", "padding_mask", "pad_mask")


def _named_padding_mask(name: str) -> Optional[MaskFacts]:
    if name in _PARAM_MASKS:
        return _PARAM_MASKS[name]
    for suffix in _PADDING_SUFFIXES:
        if name.endswith("_" + suffix) and not name.startswith("_"):
            return _PARAM_MASKS[suffix]
    return None


# Words that say what True means in a mask's name (`memory_valid`, `keep_mask`, `is_visible`,
# `invalid_keys`). A name that also counts or measures (`valid_lens`, `num_valid`) holds numbers.
_ATTEND_WORDS = frozenset({"valid", "keep", "nonpad", "visible"})
_MASKED_WORDS = frozenset({"invalid", "ignore", "ignored"})
_NUMBER_WORDS = frozenset({"len", "lens", "length", "lengths", "num", "n", "count", "counts", "ratio", "idx", "ids"})


def convention_from_words(name: str) -> Optional[str]:
    from attnlint.analysis.names import words

    parts = set(words(name))
    if parts & _NUMBER_WORDS:
        return None
    attend, masked = bool(parts & _ATTEND_WORDS), bool(parts & _MASKED_WORDS)
    if attend == masked:
        return None
    return ATTEND if attend else MASKED


def from_param(name: str, negated: bool = False) -> Optional[MaskFacts]:
    """What a parameter's name says of it as a mask; `negated`: the function inverts it with `~`
    itself, so it holds bool values whatever it is called."""
    named = _named_padding_mask(name)
    if named is not None:
        return replace(named, param=name, shown_bool=negated)
    if name in _GENERIC_MASK_NAMES or negated or names_attended_mask(name):
        # `src_mask`, and so `context_mask`, `enc_mask`: a mask of the sequence attended to.
        return MaskFacts(origin="argument", param=name, dtype="bool" if negated else None, shown_bool=negated)
    return None


def from_local_name(name: str) -> Optional[MaskFacts]:
    """What a local's name says of the mask bound to it when its value says nothing: a padding
    mask's name (`src_key_padding_mask`), or words for what True means (`memory_valid = ...`).
    Parameters do not read the words: what their callers pass says more, and a name must not
    outweigh a traced fact."""
    named = from_param(name)
    if named is not None:
        return named
    said = convention_from_words(name)
    return MaskFacts(origin="name", convention=said) if said is not None else None


def negated_names(body: cst.CSTNode, subtree: Optional[Subtree] = None) -> set:
    """Names the body inverts with `~` as they are (`~keep`, `~valid[:, None, :]`), not inside a
    nested function. A name whose dtype the body tests (`mask.dtype == torch.bool`,
    `mask.is_floating_point()`) is left out: the code takes both kinds, and the `~` sits on the
    bool branch only. `subtree`: `body`'s nodes, already walked."""
    found = set()
    dtype_tested = set()
    for _, node in (subtree or Subtree(body)).outside_definitions():
        kind = type(node)
        if kind is cst.UnaryOperation and type(node.operator) is cst.BitInvert:
            inner = node.expression
            if type(inner) is cst.Subscript:
                inner = inner.value
            if type(inner) is cst.Name:
                found.add(inner.value)
        elif (
            kind is cst.Attribute
            and type(node.value) is cst.Name
            and node.attr.value in ("dtype", "is_floating_point", "is_complex")
        ):
            dtype_tested.add(node.value.value)
    return found - dtype_tested


def is_mask_param(name: str) -> bool:
    return _named_padding_mask(name) is not None or name in _GENERIC_MASK_NAMES


# What a `<what>_mask` parameter masks when `<what>` names the sequence attended over: the
# source, context or memory of a decoder's attention (`ctx_mask`, `enc_mask`, `source_mask`).
_ATTENDED_SEQUENCE_WORDS = frozenset(
    {"ctx", "context", "enc", "encoder", "src", "source", "memory", "mem", "input", "inputs", "seq", "key", "keys", "kv"}
)


def names_attended_mask(name: str) -> bool:
    """`ctx_mask`, `encoder_mask`, `src_mask`: a mask of the sequence some attention attends to."""
    from attnlint.analysis.names import words

    parts = words(name)
    return len(parts) >= 2 and parts[-1] == "mask" and all(w in _ATTENDED_SEQUENCE_WORDS for w in parts[:-1])


# Plural words for one length per sequence of a batch (`lengths`, `x_lens`, `src_lengths`,
# `seq_lens`); a maximum, total or cumulative length (`max_len`, `cu_seqlens`, `total_lengths`)
# or a count is one number or offsets, not where each sequence's padding starts.
_PER_SEQUENCE_LENGTH_WORDS = frozenset({"lengths", "lens", "seqlens"})
_NOT_PER_SEQUENCE_WORDS = frozenset({"max", "min", "total", "cu", "cum", "cumulative", "num", "chunk", "window"})


def names_sequence_lengths(name: str) -> bool:
    """A parameter named as the lengths of the sequences in a padded batch: the information a
    padding mask is made from (`arange(T) < lengths[:, None]`)."""
    from attnlint.analysis.names import words

    parts = set(words(name))
    return bool(parts & _PER_SEQUENCE_LENGTH_WORDS) and not parts & _NOT_PER_SEQUENCE_WORDS and not name.isupper()


def names_padding(name: str) -> bool:
    """The name says a padding mask (`attention_mask`, `key_padding_mask`, `src_pad_mask`), not
    just some mask (`mask`, `causal_mask`)."""
    return _named_padding_mask(name) is not None


def invert(mask: MaskFacts) -> MaskFacts:
    flipped = {ATTEND: MASKED, MASKED: ATTEND}.get(mask.convention or "")
    return replace(
        mask,
        convention=flipped,
        dtype="bool" if mask.dtype != "float" else mask.dtype,
        uniform_rows=frozenset(0.0 if v else 1.0 for v in mask.uniform_rows),
    )


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
    return replace(result, dtype="bool", uniform_rows=frozenset(1.0 if v else 0.0 for v in result.uniform_rows))


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


def buffer_read(expr: cst.CSTNode, attr: str) -> Optional[cst.Attribute]:
    """Where a mask expression reads the registered buffer `self.<attr>` (None: it does not)."""
    stack = [expr]
    while stack:
        node = stack.pop()
        if (
            isinstance(node, cst.Attribute)
            and node.attr.value == attr
            and isinstance(node.value, cst.Name)
            and node.value.value == "self"
        ):
            return node
        stack.extend(reversed(child_nodes(node)))
    return None


def transposed(mask: Optional[MaskFacts]) -> Optional[MaskFacts]:
    """A transposed mask: a triangle turns into the other one, a padding mask moves to another
    axis (a time-major `(src_len, batch)` mask turned batch-first). What True means stays; which
    rows it can empty is no longer known."""
    if mask is None:
        return None
    return replace(mask, can_mask_whole_row=None, uniform_rows=frozenset(), padding_under_causal=False, rows_edited=True)


def combine(a: Optional[MaskFacts], b: Optional[MaskFacts], op: cst.BaseBinaryOp) -> Optional[MaskFacts]:
    """`a & b` / `a | b` of two masks in one convention: still that convention. Combined with
    something we know nothing about (`kpm & ~kpm.all(-1, keepdim=True)`), whether a row can be
    emptied is unknown. The parameters the parts came from are kept (`parts_from`)."""
    if a is None and b is None:
        return None
    combined = _combine(a, b, op)
    parts = frozenset(
        p for facts in (a, b) if facts is not None for p in (facts.param, *facts.parts_from) if p is not None
    )
    return replace(combined, parts_from=parts) if parts and combined.param is None else combined


# The masks a PyTorch attention module fills with -inf for one attention (bool masks read True =
# masked): a square mask and the key-padding mask of the same attention.
_FILLED_TOGETHER = {
    "MultiheadAttention": (("attn_mask", "key_padding_mask"),),
    "TransformerEncoder": (("mask", "src_key_padding_mask"),),
    "TransformerEncoderLayer": (("src_mask", "src_key_padding_mask"),),
    "TransformerDecoderLayer": (("tgt_mask", "tgt_key_padding_mask"), ("memory_mask", "memory_key_padding_mask")),
    "TransformerDecoder": (("tgt_mask", "tgt_key_padding_mask"), ("memory_mask", "memory_key_padding_mask")),
    "Transformer": (("src_mask", "src_key_padding_mask"), ("tgt_mask", "tgt_key_padding_mask")),
}


def given_together(uses) -> list:
    """(call, facts) for each attention of a PyTorch module (`nn.MultiheadAttention`,
    `nn.Transformer*`) given masks it fills: it masks a score where any of them is True, so
    together they mask their `|` (a causal mask and left padding can leave a query no key; so
    can one mask that already combines them). Not an `nn.MultiheadAttention` call told
    `need_weights=False`: its fused path returns zeros for such rows (torch >= 2.5), no NaN."""
    from attnlint.analysis.calls import argument
    from attnlint.analysis.flow import is_false

    by_call: dict = {}
    for use in uses:
        if use.api in _FILLED_TOGETHER:
            by_call.setdefault(id(use.call), (use.call, use.api, {}))[2][use.keyword] = use
    out = []
    for call, api, found in by_call.values():
        if api == "MultiheadAttention":
            need = argument(call, 4, "need_weights")
            if need is not None and is_false(need.value):
                continue
        for keywords in _FILLED_TOGETHER[api]:
            parts = [_as_filled(found[k].mask.mask) for k in keywords if k in found]
            if not parts or None in parts:
                continue  # a finite bias is added, not filled; a keep mask is ATN205's
            together = parts[0]
            for part in parts[1:]:
                together = combine(together, part, cst.BitOr())
            out.append((call, together))
    return out


def _as_filled(facts: Optional[MaskFacts]) -> Optional[MaskFacts]:
    """A mask an attention module fills where it is True: a bool mask (of that convention or
    none shown), or a bias of -inf where it masks (`triu(full((L, L), -inf), 1)`, to which a
    bool mask is added as -inf)."""
    if facts is None:
        return None
    if facts.dtype == "float" and facts.bias_fill == "-inf" and facts.convention == MASKED:
        return replace(facts, scaled=False, dtype="bool")
    if facts.dtype != "bool" or facts.convention not in (None, MASKED):
        return None
    return replace(facts, convention=MASKED)


def filled_together(fills) -> Optional[MaskFacts]:
    """What several `-inf` fills of the same scores mask together (`s.masked_fill(causal, -inf)`
    then `s.masked_fill(pad, -inf)`): each fills where its mask is True, so together they fill
    where either is, the `|` of masks read True = masked. Only fills whose mask the code shows is
    in that convention count; None with fewer than two of them."""
    parts = [
        f.mask.mask
        for f in fills
        if f.fill == "-inf" and f.mask.mask is not None and f.mask.mask.convention == MASKED
    ]
    if len(parts) < 2:
        return None
    together = parts[0]
    for part in parts[1:]:
        together = combine(together, part, cst.BitOr())
    return together


def _rows_kept_through(rows: frozenset, op: cst.BaseBinaryOp) -> frozenset:
    """Which uniform rows of one operand survive `&` / `|` with anything: a row that is (or can
    be) all False stays all False under `&`, a row all True stays all True under `|`, whatever
    the other operand holds."""
    survivor = 0.0 if isinstance(op, cst.BitAnd) else (1.0 if isinstance(op, cst.BitOr) else None)
    return frozenset({survivor}) if survivor in rows else frozenset()


def _combine(a: Optional[MaskFacts], b: Optional[MaskFacts], op: cst.BaseBinaryOp) -> MaskFacts:
    if a is None or b is None:
        known = a or b
        return replace(
            known, can_mask_whole_row=None, buffer_node=None, uniform_rows=_rows_kept_through(known.uniform_rows, op)
        )
    rows = _rows_kept_through(a.uniform_rows, op) | _rows_kept_through(b.uniform_rows, op)
    # `causal | pad_mask`: OR-ing with a True = masked mask only makes sense for another one
    # (and `&` with True = attend): the operator tells the convention a mask lacks.
    joins = {MASKED: cst.BitOr, ATTEND: cst.BitAnd}
    for known, other in ((a, b), (b, a)):
        if known.convention is not None and other.convention is None and isinstance(op, joins[known.convention]):
            if other.origin in ("argument", "name", "padding", "lengths"):
                other = replace(other, convention=known.convention)
                a, b = known, other
                break
    if a.convention != b.convention or a.convention is None:
        for known, other in ((a, b), (b, a)):
            if known.convention is not None and other.convention is None and isinstance(op, joins[known.convention]):
                # `band & keep` with `keep` read True = attend and `band` of no known meaning: the
                # result attends only where `keep` does (`|` of a True = masked mask masks at least
                # where it does), so a row `keep` can empty stays empty, whatever `band` holds.
                return MaskFacts(
                    origin="combined",
                    convention=known.convention,
                    dtype="bool",
                    can_mask_whole_row=True if known.can_mask_whole_row else None,
                    uniform_rows=rows,
                )
        return MaskFacts(origin="combined", dtype="bool", uniform_rows=rows)
    whole = None
    grows = isinstance(op, cst.BitOr) if a.convention == MASKED else isinstance(op, cst.BitAnd)
    origins = {a.origin, b.origin}
    if a.can_mask_whole_row or b.can_mask_whole_row:
        whole = True
    elif a.can_mask_whole_row is False and b.can_mask_whole_row is False:
        # Masking more (True = masked, `|`; True = attend, `&`) can only empty rows further.
        whole = None if grows else False
    # Padding under a causal mask empties a row only where the padding is on the left (a query
    # in it sees only earlier keys, all padding); right padding, the usual batch, keeps key 0 in
    # every row. The side is a fact of the file (analysis.padding_side), asked where it matters.
    # Lengths masks (`arange(T) < lengths`) pad on the right by construction.
    padding = "padding" in origins or a.marks_padding or b.marks_padding
    causal = "causal" in origins or a.causal_part or b.causal_part
    # Masking more keeps what either part did: a causal part with padding (also one combined
    # earlier, `(causal | pad) | extra`) and the padded keys it marks.
    under_causal = grows and ((causal and padding) or a.padding_under_causal or b.padding_under_causal)
    return MaskFacts(
        origin="combined",
        convention=a.convention,
        dtype="bool",
        can_mask_whole_row=whole,
        uniform_rows=rows,
        marks_padding=grows and (masks_empty_sequences(a) or masks_empty_sequences(b)),
        padding_under_causal=under_causal and not whole,
        causal_part=grows and causal,
    )


def masks_empty_sequences(mask: Optional[MaskFacts]) -> bool:
    """Every key of a sequence that is all padding is masked: a padding mask (a parameter named
    as one, ids compared with the pad id, lengths not shown to be at least 1), or a mask that
    masks at least what one does. Such a sequence's rows are empty; whether the data holds one
    the code does not show (ATN203 asks only when told it can, `empty-sequences = true`)."""
    if mask is None:
        return False
    return mask.marks_padding or (mask.origin in ("padding", "lengths") and mask.can_mask_whole_row is not False)


def masks_padded_queries(node: cst.BinaryOperation, a: Optional[MaskFacts], b: Optional[MaskFacts], op) -> bool:
    """`pad.unsqueeze(1) & pad.unsqueeze(2)`, `valid[:, None, :] * valid[:, :, None]`,
    `rearrange(valid, "b j -> b 1 j") & rearrange(valid, "b i -> b i 1")` (True = attend, `&`
    or a product; `|` for True = masked): one padding mask laid along the keys and along the
    queries. Every padded query's row is then masked whole, in any batch with padding: no empty
    sequence is needed for the NaN (DGL's set transformer, ESPnet-style (B, T, T) masks)."""
    if a is None or b is None or a.convention != b.convention:
        return False
    # A product of 0/1 values keeps what both keep, whatever the name says (`msa_mask[..., :,
    # None] * msa_mask[..., None, :]`): a keep mask's AND.
    convention = a.convention if a.convention is not None else (ATTEND if isinstance(op, cst.Multiply) else None)
    if convention is None:
        return False
    joins = (cst.BitAnd, cst.Multiply) if convention == ATTEND else (cst.BitOr,)
    if not isinstance(op, joins):
        return False
    if a.origin not in ("padding", "lengths", "argument", "name") or b.origin != a.origin:
        return False
    return _laid_along_two_axes(node) is not None


def named_mask_along_both(node: cst.BinaryOperation) -> bool:
    """`seq_mask[..., :, None] * seq_mask[..., None, :]`: one parameter or local named as a mask
    (a `mask` word in its name), laid along two different new axes."""
    from attnlint.analysis.names import words

    name = _laid_along_two_axes(node)
    return name is not None and "mask" in words(name)


def _laid_along_two_axes(node: cst.BinaryOperation) -> Optional[str]:
    """The name both operands lay out with new axes in different places (along the queries and
    along the keys), or None."""
    left, right = _new_axes_of(node.left), _new_axes_of(node.right)
    if (
        left is not None
        and right is not None
        and left[0] == right[0]
        and len(left[1]) == len(right[1])
        and left[1] != right[1]
        and all((x < 0) == (y < 0) for x, y in zip(left[1], right[1]))
    ):
        return left[0]
    return None


def _new_axes_of(node: cst.BaseExpression) -> Optional[tuple]:
    """(the name, where its new axes go) for `name.unsqueeze(i)`, `name[:, None, :, None]` (the
    places of the Nones among the entries) and `rearrange(name, "b j -> b 1 j")` (the places
    of the unit axes), through casts (`.float()`), else None. Two layouts of one mask with new
    axes in different places lay it along different axes (the queries and the keys)."""
    while (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value in ("float", "bool", "long", "int", "to", "type_as")
    ):
        node = node.func.value
    rearranged = _rearranged_unit_axes(node)
    if rearranged is not None:
        return rearranged
    if (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == "unsqueeze"
        and isinstance(node.func.value, cst.Name)
        and len(node.args) == 1
    ):
        # A new axis counted from the end (`unsqueeze(-1)`) is compared only with another counted
        # from the end; one in front of the batch (`unsqueeze(0)`) lays out nothing per sequence.
        at = number(node.args[0].value)
        return (node.func.value.value, (int(at),)) if at is not None and at == int(at) and at != 0 else None
    if isinstance(node, cst.Subscript) and isinstance(node.value, cst.Name):
        entries = [e.slice for e in node.slice]
        if entries and isinstance(entries[0], cst.Index) and isinstance(entries[0].value, cst.Ellipsis):
            # `m[..., :, None]`: the places counted from the end.
            rest = entries[1:]
            nones = [i - len(rest) for i, e in enumerate(rest) if _none_index(e)]
            plain = all(_whole_slice(e) or _none_index(e) for e in rest)
            return (node.value.value, tuple(nones)) if nones and plain else None
        nones = [i for i, e in enumerate(entries) if _none_index(e)]
        plain = all(_whole_slice(e) or _none_index(e) for e in entries)
        if nones and plain and nones[0] > 0:
            return (node.value.value, tuple(nones))
    return None


def _none_index(entry) -> bool:
    """`None` as a subscript entry: a new axis."""
    return isinstance(entry, cst.Index) and isinstance(entry.value, cst.Name) and entry.value.value == "None"


def _whole_slice(entry) -> bool:
    """`:` as a subscript entry: the axis kept whole."""
    return isinstance(entry, cst.Slice) and entry.lower is None and entry.upper is None and entry.step is None


def _rearranged_unit_axes(node: cst.BaseExpression) -> Optional[tuple]:
    """`rearrange(name, "b j -> b 1 j")`: (name, the places of the unit axes added)."""
    from attnlint.analysis.einops_calls import parse_pattern

    func = node.func if isinstance(node, cst.Call) else None
    called = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", None)
    positional = [a.value for a in node.args if a.keyword is None] if called == "rearrange" else []
    if len(positional) != 2 or not isinstance(positional[0], cst.Name):
        return None
    pattern = positional[1]
    parsed = parse_pattern(pattern.evaluated_value) if isinstance(pattern, cst.SimpleString) else None
    if parsed is None:
        return None
    lhs, rhs = parsed
    units = [i for i, group in enumerate(rhs) if group in ((), ("1",))]
    kept = [group for group in rhs if group not in ((), ("1",))]
    if not units or kept != lhs or units[0] == 0:
        return None
    return positional[0].value, tuple(units)


def _varies_along_keys(fill, scores) -> bool:
    """The fill's mask takes different values along the scores' key axis (the code shows it)."""
    facts = scores.scores
    if facts is None:
        return False
    key = facts.key_axis if facts.key_axis is not None else (-1 if facts.layout == QUERY_MAJOR else None)
    axes = broadcast_axes(fill, scores.rank) if key is not None else None
    return axes is not None and key in axes[1]


def broadcast_axes(fill, rank: Optional[int]):
    """For a mask fill of rank-`rank` scores: (the axes its mask is constant along, the axes
    it varies along), as negative indices, or None when the code does not show them.

    From the mask's shape when known (a literal size 1 broadcasts), else from an indexing made
    only of `:` and `None` (`~pad[:, None, :]`): masked_fill cannot grow the scores, so a mask
    indexed with as many entries as the scores have axes has exactly that rank, with a size-1
    axis at each None. An `unsqueeze` at a negative axis tells the same from the end."""
    if rank is None or fill.mask.mask is None:
        return None
    shape = fill.mask.shape
    if shape is not None and len(shape) == rank and all(a.size is not None for a in shape):
        constant = {i - rank for i, a in enumerate(shape) if a.size.int_value == 1}
        return constant, {i - rank for i in range(rank)} - constant
    node = fill.mask_node
    while isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.BitInvert):
        node = node.expression
    if (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == "unsqueeze"
        and len(node.args) == 1
    ):
        # `pad.unsqueeze(-2)`: counted from the end, the new size-1 axis is at that place
        # whatever the mask's rank, and the axes after it are the mask's own.
        at = number(node.args[0].value)
        if at is None or at != int(at) or not -rank <= at < -1:
            return None
        return {int(at)}, set(range(int(at) + 1, 0))
    if not isinstance(node, cst.Subscript) or len(node.slice) != rank:
        return None
    constant, varying = set(), set()
    for i, element in enumerate(node.slice):
        part = element.slice
        if isinstance(part, cst.Index) and isinstance(part.value, cst.Name) and part.value.value == "None":
            constant.add(i - rank)
        elif isinstance(part, cst.Slice) and part.lower is None and part.upper is None and part.step is None:
            varying.add(i - rank)
        else:
            return None
    return constant, varying


def fill_kind(node: cst.BaseExpression, aliases: Dict[str, str]) -> Optional[str]:
    """ "-inf" for every spelling of negative infinity, "finite" for a number, else None. A
    choice of two (`-1e8 if x.dtype == torch.float32 else -1e4`) is what both are ("-inf" when
    either is: the rows it empties are empty on that path)."""
    if isinstance(node, cst.IfExp):
        kinds = {fill_kind(node.body, aliases), fill_kind(node.orelse, aliases)}
        if None in kinds:
            return None
        return "-inf" if "-inf" in kinds else "finite"
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
        return float(literal(node))
    if isinstance(node, cst.Float):
        return float(literal(node))
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = number(node.expression)
        return None if inner is None else -inner
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return 1.0 if node.value == "True" else 0.0
    return None


# ------------------------------------------------------------------------------------------
# Handlers: how the evaluator builds, transforms and applies masks
# ------------------------------------------------------------------------------------------
from attnlint.analysis import handlers  # noqa: E402
from attnlint.analysis.handlers import Call  # noqa: E402


def _flow():
    from attnlint.analysis import flow

    return flow


def lengths_at(ev, queries, keys, queries_axis: int = -2, keys_axis: int = -1):
    """The query and key lengths where a mask meets attention: `queries`' axis `queries_axis`
    and `keys`' axis `keys_axis` (the scores' last two axes, or SDPA's q and k), with the names
    in scope that hold each. None when neither size is known."""
    from attnlint.analysis.values import MaskLengths

    n_q, n_k = (ev.resolve(v.size_of(a)) if v is not None else None for v, a in ((queries, queries_axis), (keys, keys_axis)))
    if n_q is None and n_k is None:
        return None

    def names(size):
        found = ev.names_for(size)
        # Plain local names read best in a slice (`T`), then attributes (`self.n`).
        return tuple(n for n in found if n.isidentifier()) + tuple(n for n in found if not n.isidentifier())

    return MaskLengths(queries=n_q, keys=n_k, query_names=names(n_q), key_names=names(n_k))


def comparison(ev, node: cst.Comparison, left, rights):
    """`mask == 0`, `tokens != pad_id`, `arange(T)[None] < lengths[:, None]`."""
    from attnlint.analysis.values import Value

    mask = None
    if len(node.comparisons) == 1:
        comp = node.comparisons[0]
        literal = number(comp.comparator)
        if literal is None and rights and rights[0].int_value is not None:
            literal = float(rights[0].int_value)  # a named constant (`PAD_IDX`)
        if left.mask is not None:
            mask = compare(left.mask, comp.operator, literal)
        elif _names_pad(comp.comparator) and isinstance(comp.operator, (cst.Equal, cst.NotEqual)):
            # `tokens == pad_id`, `tokens != self.pad_token_id`: the constant's name says padding.
            # Alone it empties a row only for an all-padding sequence (see the token-id case).
            convention = MASKED if isinstance(comp.operator, cst.Equal) else ATTEND
            mask = MaskFacts(origin="padding", convention=convention, dtype="bool")
        elif left.padded:
            # `tokens == pad_id` / `tokens != pad_id` on a padded batch.
            pad = left.padding.value
            if pad is not None and literal is not None and pad == literal:
                convention = (
                    MASKED
                    if isinstance(comp.operator, cst.Equal)
                    else (ATTEND if isinstance(comp.operator, cst.NotEqual) else None)
                )
                if convention:
                    mask = MaskFacts(origin="padding", convention=convention, dtype="bool")
        elif left.token_ids and literal == 0 and isinstance(comp.operator, _ID_COMPARISONS):
            # `item_seq > 0`, `tokens == 0` on integer ids: id 0 is the padding. Alone it empties
            # a row only for a sequence that is all padding, which nothing here shows (sentence
            # batches never have one); under a causal mask, left padding empties the first rows
            # (see _combine).
            keeps = isinstance(comp.operator, (cst.NotEqual, cst.GreaterThan))
            mask = MaskFacts(origin="padding", convention=ATTEND if keeps else MASKED, dtype="bool")
        elif rights and (rights[0].lengths or left.lengths):
            # `arange(T)[None, :] < lengths[:, None]`: True = a real token.
            op = comp.operator
            lengths_right = rights[0].lengths
            keeps = isinstance(op, cst.LessThan) if lengths_right else isinstance(op, cst.GreaterThan)
            drops = isinstance(op, cst.GreaterThanEqual) if lengths_right else isinstance(op, cst.LessThanEqual)
            if keeps or drops:
                # Only a length of 0 empties its row: lengths shown to be at least 1 keep the first
                # key; others say nothing the code shows (a batch of real data has no empty one).
                positive = (rights[0] if lengths_right else left).positive_lengths
                mask = MaskFacts(
                    origin="lengths",
                    convention=ATTEND if keeps else MASKED,
                    dtype="bool",
                    can_mask_whole_row=False if positive else None,
                )
    if mask is None and _elementwise_test(node, left, rights):
        # Any other elementwise comparison (`x.abs().sum(-1) != 0`, `dist > radius`): a bool
        # tensor, 0/1 values, whose True entries mean nothing the code says. Scores against a
        # threshold that does not come from their own row (a number, a module attribute, a
        # parameter) can fall on one side of it for every key of a row, which then is empty
        # whichever side is masked; a threshold from the row (`topk`, `max`, `mean`) is unknown.
        # Query-key similarities (`cosine_similarity(q[:, None], keys[None])`, `cdist(q, keys)`)
        # are scores of their own: one number per pair, a row per query.
        sides = ((left, node.comparisons[0].comparator, rights[0]), (rights[0], node.left, left))
        thresholded = any(
            (scores.scores is not None or scores.similarity)
            and threshold.scores is None
            and not threshold.similarity
            and _independent_threshold(ev, written, threshold)
            for scores, written, threshold in sides
        )
        # Such a row can fall all on one side of the threshold, either side: it can be all False
        # and all True, which `&` / `|` with any other mask keeps (see _combine).
        mask = MaskFacts(
            origin="comparison",
            dtype="bool",
            can_mask_whole_row=True if thresholded else None,
            uniform_rows=frozenset({0.0, 1.0}) if thresholded else frozenset(),
        )
    rank = left.rank if left.rank is not None else (rights[0].rank if rights else None)
    if left.kind in ("tensor", "unknown") or mask is not None:
        shape = left.shape if left.rank == rank else None
        return Value(kind="tensor", rank=rank, shape=shape, node=node, mask=mask)
    return Value(kind="unknown", node=node)


_ID_COMPARISONS = (cst.Equal, cst.NotEqual, cst.GreaterThan, cst.LessThanEqual)


def _independent_threshold(ev, node: cst.BaseExpression, value) -> bool:
    """A threshold written as a number, read from the module (`self.threshold`), or a parameter
    of the function as it was passed: nothing the scores' rows computed."""
    if number(node) is not None:
        return True
    if isinstance(node, cst.Attribute):
        # `self.threshold`, `self.cfg.min_similarity`, `config.cutoff`: a setting of the module
        # or a field of a configuration parameter.
        root = node.value
        while isinstance(root, cst.Attribute):
            root = root.value
        if isinstance(root, cst.Name) and root.value == "self":
            return True
        return isinstance(root, cst.Name) and root.value in ev.facts.params and root.value in ev.env and (
            ev.env[root.value].param == root.value
        )
    return isinstance(node, cst.Name) and node.value in ev.facts.params and value.param == node.value
_ORDER_TESTS = (cst.Equal, cst.NotEqual, cst.GreaterThan, cst.GreaterThanEqual, cst.LessThan, cst.LessThanEqual)


def _elementwise_test(node: cst.Comparison, left, rights) -> bool:
    """One comparison (`==`, `<`, ...: not `is`, `in`, not a chain) with a tensor on one side and
    no tuple, string or None on either: an elementwise test giving a bool tensor."""
    if len(node.comparisons) != 1 or not isinstance(node.comparisons[0].operator, _ORDER_TESTS):
        return False
    sides = (node.left, node.comparisons[0].comparator)
    literals = (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString, cst.Tuple, cst.List)
    if any(isinstance(side, literals) for side in sides):
        return False
    if any(isinstance(side, cst.Name) and side.value == "None" for side in sides):
        return False
    values = (left, *rights)
    if any(v.kind in ("tuple", "module", "shape") for v in values):
        return False
    # A tensor, or a value the analysis does not follow (`frames.abs().sum(-1) > 0`): what flows
    # into scores from a comparison is a tensor's test, not a Python bool.
    return any(v.kind in ("tensor", "unknown") for v in values)


def integer_batch(rows: cst.BaseExpression) -> bool:
    """A literal batch of integer ids (`[[3, 4, 5, 0], [7, 0, 0, 0]]`): at least two rows of
    non-negative integers, not all 0/1 (a 0/1 matrix is a mask: see literal_mask)."""
    if not isinstance(rows, (cst.List, cst.Tuple)) or len(rows.elements) < 2:
        return False
    values = []
    for row in rows.elements:
        if not isinstance(row.value, (cst.List, cst.Tuple)) or not row.value.elements:
            return False
        for e in row.value.elements:
            if not isinstance(e.value, cst.Integer):
                return False
            values.append(int(e.value.evaluated_value))
    return any(v > 1 for v in values)


def embedded_names(
    body: cst.CSTNode, cls, aliases: Dict[str, str], subtree: Optional[Subtree] = None
) -> set:
    """Names a function hands to an nn.Embedding (`self.embed(tokens)`, `F.embedding(ids, w)`)
    before assigning them: they hold integer ids from the start of the body. `subtree`: `body`'s
    nodes, already walked."""
    subtree = subtree or Subtree(body)
    assigned, found = set(), set()
    # An assignment binds once its whole statement has run: (end of its subtree, its names).
    pending: list = []
    for index, node in subtree.outside_definitions():
        while pending and pending[-1][0] <= index:
            assigned.update(pending.pop()[1])
        kind = type(node)
        if kind is cst.Call and node.args and type(node.args[0].value) is cst.Name:
            name = node.args[0].value.value
            if name not in assigned and _is_embedding(node.func, cls, aliases):
                found.add(name)
        elif kind is cst.Assign or kind is cst.AugAssign or kind is cst.AnnAssign:
            targets = [t.target for t in node.targets] if kind is cst.Assign else [node.target]
            pending.append((subtree.ends[index], [t.value for t in targets if type(t) is cst.Name]))
            pending.sort(key=lambda p: -p[0])
    return found


def compared_with_pad(body: cst.CSTNode) -> set:
    """Names the function never rebinds and tests against a pad id (`tokens != self.pad_id`,
    `src.eq(PAD_IDX)`): by the function's own account they hold padding."""
    compared, assigned = set(), set()

    def visit(node: cst.CSTNode) -> None:
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return
        if (
            isinstance(node, cst.Comparison)
            and isinstance(node.left, cst.Name)
            and len(node.comparisons) == 1
            and isinstance(node.comparisons[0].operator, (cst.Equal, cst.NotEqual))
            and _names_pad(node.comparisons[0].comparator)
        ):
            compared.add(node.left.value)
        if (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and isinstance(node.func.value, cst.Name)
            and node.func.attr.value in ("eq", "ne")
            and len(node.args) == 1
            and _names_pad(node.args[0].value)
        ):
            compared.add(node.func.value.value)
        if isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            for target in targets:
                assigned.update(n.value for n in _walk_names(target))
        for child in child_nodes(node):
            visit(child)

    visit(body)
    return compared - assigned


def _walk_names(node: cst.CSTNode):
    if isinstance(node, cst.Name):
        yield node
    elif isinstance(node, (cst.Tuple, cst.List)):
        for element in node.elements:
            yield from _walk_names(element.value)


def _is_embedding(func: cst.BaseExpression, cls, aliases: Dict[str, str]) -> bool:
    if canonical(qualify(func, aliases)) == "torch.nn.functional.embedding":
        return True
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
        module = cls.attrs.get(func.attr.value) if cls is not None else None
        return module is not None and module.kind == "module" and module.module_type == "Embedding"
    return False


def product(a: MaskFacts, b: MaskFacts) -> MaskFacts:
    """`keep_a * keep_b` of two 0/1 masks: 1 where both are 1, an `&` of two keep masks. In any
    other convention the product means no one thing (True = masked would need an OR)."""
    zero_rows = frozenset({0.0}) if 0.0 in a.uniform_rows | b.uniform_rows else frozenset()
    dtype = a.dtype if a.dtype == b.dtype else ("float" if "float" in (a.dtype, b.dtype) else "int")
    if a.convention == b.convention == ATTEND:
        return replace(combine(a, b, cst.BitAnd()), dtype=dtype, uniform_rows=zero_rows)
    return MaskFacts(origin="combined", dtype=dtype, uniform_rows=zero_rows)


def literal_mask(rows: cst.BaseExpression) -> Optional[MaskFacts]:
    """A 0/1 (or bool) matrix written out, with at least two rows: the truth values that fill a
    whole row. Nothing for other literals (token ids, numbers)."""
    if not isinstance(rows, (cst.List, cst.Tuple)) or len(rows.elements) < 2:
        return None
    uniform = set()
    for row in rows.elements:
        if not isinstance(row.value, (cst.List, cst.Tuple)) or not row.value.elements:
            return None
        values = [number(e.value) for e in row.value.elements]
        if any(v not in (0.0, 1.0) for v in values):
            return None
        if len(set(values)) == 1:
            uniform.add(values[0])
    if not uniform:
        return None
    return MaskFacts(origin="literal", dtype="int", uniform_rows=frozenset(uniform))


def _names_pad(node: cst.BaseExpression) -> bool:
    """`PAD`, `pad_id`, `self.pad_token_id`, `tokenizer.pad_token_id`, `padding_idx`."""
    from attnlint.analysis.names import words

    name = node.attr.value if isinstance(node, cst.Attribute) else getattr(node, "value", None)
    return isinstance(name, str) and any(w in ("pad", "padding") for w in words(name))


def add_terms(ev, left, right, node: cst.CSTNode, left_node=None, right_node=None):
    """`scores + bias`, `scores - max`: additive terms keep the scores what they are; an
    additive mask (`scores + m`, m = zeros.masked_fill(mask, -inf)) is a fill."""
    from attnlint.analysis.values import Value

    if left.kind == "tuple" or right.kind == "tuple":
        from attnlint.analysis import losses

        return losses.concatenated_lists(left, right, node)
    if left.scores is not None and right.scores is not None:
        from attnlint.analysis.scores import summed_scores

        both = summed_scores(left.scores, right.scores)
        if both is None:
            return Value(kind="tensor", rank=left.rank if left.rank == right.rank else None, node=node)
        return left.with_(node=node, scores=both, scaled=both.scaled, scale=both.scale, fills=left.fills + right.fills)
    if left.scores is not None and right.scores is None:
        return _with_additive_fill(ev, left.with_(node=node), right, node, left_node, right_node)
    if right.scores is not None and left.scores is None:
        return _with_additive_fill(ev, right.with_(node=node), left, node, right_node, left_node)
    if left.kind == "scalar" and right.kind == "scalar":
        return Value(kind="scalar", node=node)
    if (
        isinstance(node, cst.BinaryOperation)
        and isinstance(node.operator, cst.Subtract)
        and number(node.left) == 1.0
        and right.mask is not None
        and not right.mask.scaled
    ):
        # `1.0 - keep`: the complement of a 0/1 mask (on the way to `(1.0 - keep) * -1e4`).
        return right.with_(node=node, mask=replace(invert(right.mask), dtype=right.mask.dtype), scores=None)
    for weights, other in ((left, right), (right, left)):
        scalar_like = other.kind == "scalar" or (
            other.rank is None and other.role is None and other.mask is None and other.softmax is None
        )
        if weights.softmax is not None and scalar_like:
            return weights.with_(node=node)  # `softmax(s) + eps`: still those weights
    from attnlint.analysis.values import KEY, QUERY

    for projected, bias in ((left, right), (right, left)):
        if projected.role in (QUERY, KEY) and bias.is_parameter and bias.mask is None and bias.scores is None:
            # `query + self.u_bias` (Transformer-XL's content bias): still the queries, with the
            # factors they carry; the bias is added, not multiplied in.
            return projected.with_(node=node)
    ranks = [r for r in (left.rank, right.rank) if r is not None]
    rank = max(ranks) if len(ranks) == 2 else None
    role = left.role if left.role == right.role else None
    from attnlint.analysis.shapes import broadcast

    result = Value(
        kind="tensor",
        rank=rank,
        role=role,
        node=node,
        shape=broadcast(left.shape, right.shape),
        padding=_padding_of_sum(left, right, node),
    )
    for mask, other in ((left, right), (right, left)):
        if (
            mask.mask is not None
            and not mask.mask.scaled
            and other.constructor is not None
            and other.constructor.function == "torch.eye"
        ):
            # `adj + torch.eye(n)`: self loops added to a 0/1 adjacency, still a keep mask (0, 1,
            # 2 before a clamp), and every node now keeps itself.
            return mask.with_(node=node, mask=replace(mask.mask, can_mask_whole_row=False))
    for logits, term, logits_node, term_node in ((left, right, left_node, right_node), (right, left, right_node, left_node)):
        if _unmasked_tensor(logits) and (term.mask is not None or term.additive_fill is not None):
            # `energy + mask` on logits the analysis cannot tell are Q·Kᵀ (additive attention):
            # recorded like a fill of the scores; it counts where a softmax normalises the sum.
            summed = _with_additive_fill(
                ev, result.with_(fills=logits.fills), term, node, logits_node, term_node, on_scores=False
            )
            return _keeps_fixed_bias(summed, term)
    for bias, other in ((left, right), (right, left)):
        plain = other.mask is None and other.scores is None and other.softmax is None
        if other.kind in ("tensor", "unknown") and plain:
            return _keeps_fixed_bias(result, bias)
    return result


def _keeps_fixed_bias(result, term):
    """`alibi + causal` with causal a -inf triangle built at a fixed size: a bias that masks what
    the triangle masks, at that size (a buffer of it must be sliced)."""
    if term.mask is not None and term.mask.scaled and term.mask.built_size:
        return result.with_(mask=term.mask)
    return result


def _padding_of_sum(left, right, node):
    """A padded batch plus a term that is no mask (`tok_emb(ids) + pos_emb(positions)`, `ids + 1`)
    is still padded at the same positions; what the padding holds is known only when the term
    is a number added (or subtracted)."""
    from attnlint.analysis.values import Padding

    if left.padded == right.padded:
        return None  # neither, or two paddings we cannot combine
    padded, other = (left, right) if left.padded else (right, left)
    if other.mask is not None or other.additive_fill is not None or other.scores is not None:
        return None
    pad = padded.padding.value
    term = other.int_value if other.kind == "scalar" else None
    if pad is None or term is None or not isinstance(node, cst.BinaryOperation):
        return Padding(value=None)
    if not isinstance(node.operator, cst.Subtract):
        return Padding(value=pad + term)
    return Padding(value=pad - term if padded is left else term - pad)


def multiplied_by_mask(ev, node: cst.BinaryOperation, left, right):
    """`scores * keep`: logits multiplied by a 0/1 mask (not by a bias, not by a number) keep
    their scale; the product is recorded like a fill whose masked entries become 0. None when
    neither side is logits times a mask."""
    from attnlint.analysis.values import FillSite

    for logits, term, logits_node, term_node in ((left, right, node.left, node.right), (right, left, node.right, node.left)):
        if term.mask is None and logits.scores is not None and _named_mask_parameter(ev, term):
            # `scores * relation_mask` with a parameter its name calls a mask: whatever its
            # encoding (0/1 either way round, or a bias), a mask multiplied into the scores
            # does not mask them. Whether callers pass a mask is for the rule to ask.
            term = term.with_(mask=MaskFacts(origin="argument", param=term.param))
        if term.mask is None or term.mask.scaled or term.softmax is not None or term.scores is not None:
            continue
        if logits.scores is None and not _unmasked_tensor(logits):
            continue
        site = FillSite(
            call=node,
            mask_node=term_node,
            mask=term,
            fill="finite",
            in_place=False,
            keeps_where_true=term.mask.convention == ATTEND,
            receiver_node=logits_node,
            on_scores=logits.scores is not None,
            multiplied=True,
        )
        ev.facts.fill_sites.append(site)
        return logits.with_(node=node, fills=logits.fills + (site,))
    return None


def _named_mask_parameter(ev, value) -> bool:
    """A tensor read from a parameter, as passed (or broadcast), whose name ends in `mask`
    (`relation_mask`, `pair_mask`): a mask by role, of no known encoding."""
    from attnlint.analysis.names import words

    param = value.param
    if param is None or param not in ev.facts.params or value.kind not in ("tensor", "unknown"):
        return False
    passed = ev.facts.params[param]
    if value.sym is not None and passed.sym is not None and value.sym != passed.sym:
        return False  # arithmetic on it (`mask * -1e9`, `1 - mask`): no longer the mask as passed
    parts = words(param)
    if not parts or parts[-1] not in ("mask", "masks"):
        return False
    # The product is the mask's only use (besides `is None` tests): code that reads it again
    # (`scores * m + (1 - m) * -1e4`, `w * m / (w * m).sum(-1)`) may apply it another way.
    return _reads_of(ev.facts.node, param) == 1


def _reads_of(function_node, name: str) -> int:
    """How often the function body reads `name`, not counting `name is None` tests."""
    if not isinstance(function_node, cst.FunctionDef):
        return 0
    count = 0
    stack = [function_node.body]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if (
            isinstance(node, cst.Comparison)
            and isinstance(node.left, cst.Name)
            and node.left.value == name
            and all(isinstance(c.operator, (cst.Is, cst.IsNot)) for c in node.comparisons)
        ):
            continue
        if isinstance(node, cst.Name) and node.value == name:
            count += 1
        stack.extend(child_nodes(node))
    return count


def _unmasked_tensor(value) -> bool:
    """A tensor that is no mask, bias or weights itself (logits of some kind)."""
    return (
        value.kind == "tensor"
        and value.mask is None
        and value.additive_fill is None
        and value.softmax is None
        and value.scores is None
        and not value.padded
        and not value.lengths
    )


def _with_additive_fill(ev, scores, term, node, scores_node=None, term_node=None, on_scores=True):
    from attnlint.analysis.values import FillSite

    fill = term.additive_fill
    if fill is None and term.mask is not None:
        # `scores + mask`: an additive mask whose fill value we cannot see, unless it was built
        # whole as a bias (a triangle of -inf).
        site = FillSite(
            call=node,
            mask_node=term_node if term_node is not None else term.node,
            mask=term,
            fill=term.mask.bias_fill if term.mask.scaled else None,
            in_place=False,
            additive=True,
            receiver_node=scores_node,
            on_scores=on_scores,
            lengths=lengths_at(ev, scores, scores),
        )
        ev.facts.fill_sites.append(site)
        return scores.with_(fills=scores.fills + (site,))
    if fill is None:
        return scores
    site = FillSite(
        call=node,
        mask_node=fill.mask_node,
        mask=fill.mask,
        fill=fill.fill,
        in_place=False,
        additive=True,
        on_scores=on_scores,
        source=fill,
        lengths=lengths_at(ev, scores, scores),
    )
    ev.facts.fill_sites.append(site)
    return scores.with_(fills=scores.fills + (site,))


def store_into(ev, target: cst.Subscript, value) -> None:
    """`x[idx] = value`: what a partial store changes about x."""
    flow = _flow()
    owner = flow.owner_name(target.value)
    stored = ev.env.get(owner) if owner is not None else None
    if stored is not None and stored.softmax is not None:
        ev.env[owner] = stored.with_(guarded=True)  # `w[torch.isnan(w)] = 0`
    if stored is not None and _filled_through_index(ev, stored, owner, target, value):
        stored = ev.env[owner]
    scattered = _scattered_edges(ev, stored, target, value) or _block_of_ones(stored, target, value)
    if scattered is not None:
        ev.env[owner] = stored.with_(mask=scattered)
        return
    if stored is not None and stored.mask is not None:
        # `key_padding_mask[:, 0] = False` makes some keys always visible (a row can no
        # longer be emptied for sure); `padding_mask[1] = True` only masks more.
        written = number(value.node) if value.node is not None else None
        # Without a known convention, True is read as "masked" (as masked_fill reads it).
        masks_more = written is not None and (written != 0) == (stored.mask.convention != ATTEND)
        if not masks_more:
            ev.env[owner] = stored.with_(mask=replace(stored.mask, can_mask_whole_row=None, rows_edited=True))
        elif stored.mask.convention is None:
            # Which way the write goes is a guess: no later layout may claim emptied rows.
            ev.env[owner] = stored.with_(mask=replace(stored.mask, rows_edited=True))
    if owner is not None and owner in ev.env:
        # `targets[targets == pad] = -100`, `ids[i, :len(seq)] = seq` (see losses.stored_into).
        from attnlint.analysis import losses

        before = ev.env[owner]
        changed = losses.stored_into(before, target, value)
        if changed is not None:
            ev.env[owner] = changed
            # `labels = batch["labels"]; labels[labels == pad] = -100`: the same tensor, so the
            # dict's entry changes too.
            for name, holder in list(ev.env.items()):
                if holder.entries and any(entry is before for _, entry in holder.entries):
                    ev.env[name] = holder.with_(
                        entries=tuple((k, changed if entry is before else entry) for k, entry in holder.entries)
                    )
    current = ev.env.get(owner) if owner is not None else None
    if (
        current is not None
        and current.constructor is not None
        and current.scale is None
        and value.kind == "tensor"
        and value.scale is not None
    ):
        # A KV cache (`self.cache_k[:b, pos:pos + n] = xk` into `torch.zeros(...)`): it holds
        # what is written into it, multiplied by what that was (zeros scale to zeros).
        current = current.with_(scale=value.scale, scaled=value.scaled)
        ev.env[owner] = current
    if current is not None and current.constructor is not None and value.rank is not None and value.rank >= 2:
        # `heads[i] = attn @ v` into `torch.zeros(h, b, n, d)`: the new tensor now holds results
        # laid out along its axes; a view of it reads them (view_order.rereads_on_purpose).
        ev.env[owner] = current.with_(constructor=None)


def _filled_through_index(ev, stored, owner: str, target: cst.Subscript, value) -> bool:
    """`att[~mask] = float("-inf")`: a store through a bool mask is `att.masked_fill_(~mask,
    -inf)`, recorded as that fill (True when it was). Labels rewritten at their padding with an
    integer (`targets[targets == pad] = -100`) are no scores: losses.stored_into reads them."""
    from attnlint.analysis.values import FillSite

    if stored.kind != "tensor" or stored.softmax is not None or stored.padded or stored.token_ids:
        return False
    if stored.mask is not None or value.node is None:
        return False  # a write into a mask changes the mask (see store_into)
    if len(target.slice) != 1 or not isinstance(target.slice[0].slice, cst.Index):
        return False
    fill = fill_kind(value.node, ev.aliases)
    if fill is None or _integer_literal(value.node):
        return False  # `targets[targets == pad] = -100`: ids rewritten, not scores masked
    index_node = target.slice[0].slice.value
    index = ev.eval(index_node)
    if index.mask is None or index.mask.dtype not in ("bool", None) or index.kind != "tensor":
        return False
    site = FillSite(
        call=target,
        mask_node=index_node,
        mask=index,
        fill=fill,
        in_place=True,
        receiver_node=target.value,
        on_scores=stored.scores is not None,
        lengths=lengths_at(ev, stored, stored),
    )
    ev.facts.fill_sites.append(site)
    ev.env[owner] = stored.with_(fills=(site,) if fill != "-inf" and stored.fills else stored.fills + (site,))
    return True


def _integer_literal(node: cst.CSTNode) -> bool:
    if isinstance(node, cst.UnaryOperation):
        node = node.expression
    return isinstance(node, cst.Integer)


def _block_of_ones(stored, target: cst.Subscript, value) -> Optional[MaskFacts]:
    """`mask = torch.zeros(B, X, M); mask[i, :len_x[i], :len_mem[i]] = 1` (or `.fill_(1)`): per
    sequence, ones in the block of its real queries and keys, zeros elsewhere. A keep mask whose
    rows past a sequence's query length are all zero: every padded query's row is empty."""
    if stored is None or value.node is None or number(value.node) in (None, 0.0):
        return None
    ctor = stored.constructor
    if ctor is None or ctor.function != "torch.zeros" or stored.mask is not None or len(ctor.sizes) < 3:
        return None
    elements = [e.slice for e in target.slice]
    if len(elements) != len(ctor.sizes) or not isinstance(elements[0], cst.Index):
        return None
    extents = elements[1:]
    if len(extents) < 2 or not all(
        isinstance(e, cst.Slice) and e.lower is None and e.upper is not None and e.step is None for e in extents
    ):
        return None
    # Per sequence: the first index a name, each extent a length read at it (`len_x[i]`), not
    # a fixed block (`pixel_mask[1, :600, :800] = 1` marks an image's real pixels).
    index = elements[0].value
    if not isinstance(index, cst.Name) or not all(_read_at(e.upper, index.value) for e in extents):
        return None
    return MaskFacts(
        origin="lengths",
        convention=ATTEND,
        dtype="float",
        can_mask_whole_row=True,
        masks_padded_queries=True,
    )


def _read_at(node: cst.BaseExpression, index: str) -> bool:
    """`lengths[i]`, `self.lens[i]`: one entry of a per-sequence tensor, at `index`."""
    return (
        isinstance(node, cst.Subscript)
        and len(node.slice) == 1
        and isinstance(node.slice[0].slice, cst.Index)
        and isinstance(node.slice[0].slice.value, cst.Name)
        and node.slice[0].slice.value.value == index
    )


def _scattered_edges(ev, stored, target: cst.Subscript, value) -> Optional[MaskFacts]:
    """`adj = torch.zeros(n, n); adj[src, dst] = 1`: ones scattered at the pairs index tensors
    name, zeros elsewhere. A 0/1 keep mask (an adjacency) in which a row no pair names (a node
    without neighbours) stays all zero. Row indices that are `arange`/`range` (every row gets an
    entry), the same index twice (`adj[i, i] = 1`, self loops) or slices show no such row."""
    if stored is None or value.node is None or number(value.node) in (None, 0.0):
        return None
    ctor, mask = stored.constructor, stored.mask
    fresh = ctor is not None and ctor.function == "torch.zeros" and mask is None
    growing = mask is not None and mask.origin == "scattered"
    if not (fresh or growing):
        return None
    elements = [e.slice for e in target.slice]
    if len(elements) != 2 or not all(isinstance(e, cst.Index) for e in elements):
        return None
    rows, cols = (e.value for e in elements)
    if not all(isinstance(i, (cst.Name, cst.Subscript, cst.Attribute)) for i in (rows, cols)):
        return None
    if rows.deep_equals(cols) or any(_covers_every_row(ev, i) for i in (rows, cols)):
        return None
    if any(ev.eval(i).kind == "scalar" for i in (rows, cols)):
        return None  # `adj[i, j] = 1` in a loop over numbers: which rows it reaches is not shown
    return MaskFacts(
        origin="scattered",
        convention=ATTEND,
        dtype="bool" if ctor is not None and ctor.dtype == "bool" else "float",
        can_mask_whole_row=True,
    )


def _covers_every_row(ev, index: cst.BaseExpression) -> bool:
    """`torch.arange(n)`, `range(n)`, or a name bound to one: an entry in every row."""
    if isinstance(index, cst.Name):
        found = ev.env.get(index.value)
        return found is not None and found.constructor is not None and found.constructor.function == "torch.arange"
    return False


def triangular_of(ev, kind: str, source, diagonal_arg: Optional[cst.Arg], node):
    """`triu`/`tril` of a ones tensor: a causal mask (anything else: just a tensor)."""
    from attnlint.analysis.values import Value

    ctor = source.constructor
    result = Value(kind="tensor", rank=source.rank, shape=source.shape, node=node)
    if ctor is None or ctor.function not in ("torch.ones", "torch.full", "torch.ones_like"):
        return result
    diagonal = _flow().int_literal(diagonal_arg.value) if diagonal_arg is not None else 0
    if diagonal is None and kind == "tril" and ctor.function != "torch.full":
        # `ones(q, past + q).tril(diagonal=past)` (queries after a KV cache): whatever the
        # diagonal, True marks what a query may attend; whether a row can be empty is unknown.
        mask = replace(triangular(kind, 0, ctor.dtype, ctor.sizes), can_mask_whole_row=None)
        return result.with_(mask=mask)
    if diagonal is None:
        return result
    mask = triangular(kind, diagonal, ctor.dtype, ctor.sizes)
    written = number(ctor.fill_value) if ctor.fill_value is not None else _full_value(source.node)
    if ctor.function == "torch.full" and written not in (1.0,):
        # `torch.full((T, T), finfo.min).triu(1)`: a triangle of a large negative number is an
        # additive (bias) mask, not 0/1 values; of an unknown value, it may be one. A triangle
        # of -inf is a -inf fill wherever it is added.
        fill = ctor.fill_value
        if fill is None and isinstance(source.node, cst.Call):
            arg = _flow()._arg(source.node, 1, "fill_value")
            fill = arg.value if arg is not None else None
        bias_fill = "-inf" if fill is not None and fill_kind(fill, ev.aliases) == "-inf" else None
        mask = replace(
            mask, scaled=True, dtype="float" if mask.dtype in (None, "float") else mask.dtype, bias_fill=bias_fill
        )
    return result.with_(mask=mask)


def _full_value(node) -> Optional[float]:
    """The fill value of a `torch.full(size, value)` call (None: not one, or not a number)."""
    if not isinstance(node, cst.Call):
        return None
    fill = _flow()._arg(node, 1, "fill_value")
    return number(fill.value) if fill is not None else None


def _at_least_one(ev, node: Optional[cst.BaseExpression]) -> bool:
    """Is this bound a number shown to be at least 1 (`min=1`, `min=self.min_len` set to 2)?"""
    if node is None:
        return False
    if isinstance(node, cst.Float):
        return float(node.value) >= 1
    value = ev.eval(node)
    return value.int_value is not None and value.int_value >= 1


def _clamped_lengths(ev, call: Call, lengths, bound: Optional[cst.Arg]):
    """Lengths clamped from below: at least 1 when the bound is, so a mask from them keeps the
    first key of every row (`lengths.clamp(min=1)`). None for anything that is no lengths."""
    if not lengths.lengths:
        return None
    return lengths.with_(node=call.node, positive_lengths=lengths.positive_lengths or _at_least_one(
        ev, bound.value if bound is not None else None
    ))


@handlers.method("clamp", "clip", "clamp_min", "clamp_max")
def _clamp_method(ev, call: Call):
    ev.args(call.node)
    receiver = call.receiver
    if receiver.mask is not None and not receiver.mask.scaled:
        # `(adj + eye).clamp(max=1)`: a keep mask with self loops, back to 0/1 values.
        return receiver.with_(node=call.node)
    return _clamped_lengths(ev, call, receiver, _flow()._arg(call.node, 0, "min"))


@handlers.function("torch.clamp", "torch.clip", "torch.clamp_min")
def _clamp_function(ev, call: Call):
    values = ev.args(call.node)
    if not values:
        return None
    return _clamped_lengths(ev, call, values[0], _flow()._arg(call.node, 1, "min"))


@handlers.function("torch.nn.utils.rnn.pack_padded_sequence")
def _pack_padded_sequence(ev, call: Call):
    """`pack_padded_sequence(x, lengths.cpu(), ...)` raises for a length of 0: from here on the
    lengths (the name the argument reads) are at least 1."""
    ev.args(call.node)
    lengths = _flow()._arg(call.node, 1, "lengths")
    node = lengths.value if lengths is not None else None
    # `lengths.cpu()`, `lengths.to("cpu")`, `lengths.tolist()`: the same numbers.
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in _SAME_NUMBERS:
        node = node.func.value
    owner = _flow().owner_name(node) if node is not None else None
    if owner is not None and owner in ev.env and ev.env[owner].lengths:
        ev.env[owner] = ev.env[owner].with_(positive_lengths=True)
    from attnlint.analysis.values import Value

    return Value(kind="unknown", node=call.node)


_SAME_NUMBERS = ("cpu", "to", "tolist", "long", "int", "cuda", "detach")


@handlers.method("fill_diagonal_")
def _fill_diagonal(ev, call: Call):
    """`adj.fill_diagonal_(1)`: self loops, every row keeps its own entry; a mask no longer shows
    an empty row."""
    receiver = call.receiver
    ev.args(call.node)
    if receiver.mask is None:
        return None
    result = receiver.with_(node=call.node, mask=replace(receiver.mask, can_mask_whole_row=None, rows_edited=True))
    ev.update_in_place(call.receiver_node, result)
    return result


@handlers.method("fill_")
def _fill_in_place(ev, call: Call):
    """`torch.empty(n, n).fill_(v)`: a new tensor filled with v is `torch.full((n, n), v)`."""
    receiver, ctor = call.receiver, call.receiver.constructor
    args = ev.args(call.node)
    if isinstance(call.receiver_node, cst.Subscript) and args:
        # `mask[i, :n, :m].fill_(1)`: a store into part of the tensor, as `mask[i, :n, :m] = 1`.
        store_into(ev, call.receiver_node, args[0])
        return receiver.with_(node=call.node)
    if ctor is None or ctor.function not in ("torch.empty", "torch.zeros", "torch.ones", "torch.full") or not args:
        return None
    filled = receiver.with_(
        node=call.node, mask=None, constructor=replace(ctor, function="torch.full", fill_value=call.node.args[0].value)
    )
    ev.update_in_place(call.receiver_node, filled)
    return filled


@handlers.function("torch.tril", "torch.triu")
def _triangular_function(ev, call: Call):
    values = ev.args(call.node)
    if not values:
        return None
    flow = _flow()
    return triangular_of(ev, call.name.rsplit(".", 1)[-1], values[0], flow._arg(call.node, 1, "diagonal"), call.node)


@handlers.method("tril", "triu", "tril_", "triu_")
def _triangular_method(ev, call: Call):
    ev.args(call.node)
    return triangular_of(ev, call.name.rstrip("_"), call.receiver, _flow()._arg(call.node, 0, "diagonal"), call.node)


@handlers.method("logical_not", "bitwise_not")
def _logical_not(ev, call: Call):
    receiver = call.receiver
    if receiver.mask is None:
        return None
    return receiver.with_(node=call.node, mask=invert(receiver.mask), scores=None, softmax=None)


# The function and method spellings of `&`, `|` and `~` on masks (`torch.logical_or(future,
# pad)`, `keep.logical_and(causal)`, `torch.logical_not(keep)`) mean what the operators mean.
_LOGICAL_CALLS = {"logical_and": cst.BitAnd, "logical_or": cst.BitOr, "bitwise_and": cst.BitAnd, "bitwise_or": cst.BitOr}


def _logical_of(ev, node: cst.Call, name: str, left, right):
    from attnlint.analysis.values import Value

    rank = left.rank if left.rank is not None else right.rank
    mask = combine(left.mask, right.mask, _LOGICAL_CALLS[name]())
    return Value(kind="tensor", rank=rank, node=node, mask=mask)


@handlers.function(*("torch." + name for name in _LOGICAL_CALLS))
def _logical_function(ev, call: Call):
    args = call.args
    if len(args) != 2 or any(a.keyword is not None or a.star for a in args):
        return None
    left, right = ev.eval(args[0].value), ev.eval(args[1].value)
    return _logical_of(ev, call.node, call.name.rsplit(".", 1)[-1], left, right)


@handlers.method(*_LOGICAL_CALLS)
def _logical_method(ev, call: Call):
    args = call.args
    if len(args) != 1 or args[0].keyword is not None or args[0].star:
        return None
    return _logical_of(ev, call.node, call.name, call.receiver, ev.eval(args[0].value))


@handlers.function("torch.logical_not", "torch.bitwise_not")
def _logical_not_function(ev, call: Call):
    args = call.args
    if len(args) != 1 or args[0].keyword is not None or args[0].star:
        return None
    from attnlint.analysis.values import Value

    inner = ev.eval(args[0].value)
    if inner.mask is None:
        return Value(kind="tensor", rank=inner.rank, node=call.node)
    return inner.with_(node=call.node, mask=invert(inner.mask), scores=None, softmax=None)


# The method and function spellings of the comparison operators (`ids.eq(pad_id)`,
# `torch.ne(tokens, pad)`, `arange(T).lt(lengths[:, None])`) mean what the operators mean.
_COMPARISON_CALLS = {
    "eq": cst.Equal,
    "ne": cst.NotEqual,
    "lt": cst.LessThan,
    "le": cst.LessThanEqual,
    "gt": cst.GreaterThan,
    "ge": cst.GreaterThanEqual,
}


@handlers.method(*_COMPARISON_CALLS)
def _comparison_method(ev, call: Call):
    if len(call.args) != 1 or call.args[0].keyword is not None or call.receiver_node is None:
        return None
    return _as_comparison(ev, call.node, call.name, call.receiver_node, call.receiver, call.args[0].value)


@handlers.function(*("torch." + name for name in _COMPARISON_CALLS))
def _comparison_function(ev, call: Call):
    args = call.args
    if len(args) != 2 or any(a.keyword is not None or a.star for a in args):
        return None
    left = ev.eval(args[0].value)
    return _as_comparison(ev, call.node, call.name.rsplit(".", 1)[-1], args[0].value, left, args[1].value)


def _as_comparison(ev, node: cst.Call, name: str, left_node, left, right_node):
    """The call read as the comparison `left <op> right` it spells."""
    right = ev.eval(right_node)
    spelled = cst.Comparison(
        left=left_node, comparisons=[cst.ComparisonTarget(operator=_COMPARISON_CALLS[name](), comparator=right_node)]
    )
    return comparison(ev, spelled, left, [right]).with_(node=node)


@handlers.function_named("generate_square_subsequent_mask")
def _square_subsequent(ev, call: Call):
    from attnlint.analysis.values import Value

    if not call.args:
        return None
    ev.args(call.node)
    size = _flow().code(call.args[0].value)
    # -inf above the diagonal, 0 elsewhere: an additive causal mask, nonzero where masked.
    return Value(
        kind="tensor",
        rank=2,
        node=call.node,
        mask=MaskFacts(
            origin="causal",
            convention=MASKED,
            dtype="float",
            built_size=(size, size),
            can_mask_whole_row=False,
            scaled=True,
            bias_fill="-inf",
        ),
    )


@handlers.method("masked_fill", "masked_fill_")
def _masked_fill_method(ev, call: Call):
    return masked_fill(ev, call.node, call.receiver, call.receiver_node, in_place=call.name.endswith("_"))


@handlers.function("torch.masked_fill")
def _masked_fill_function(ev, call: Call):
    node = call.node
    if len(node.args) < 3:
        return None
    receiver = ev.eval(node.args[0].value)
    shifted = node.with_changes(args=node.args[1:])  # (input, mask, value) -> .masked_fill(mask, value)
    result = masked_fill(ev, shifted, receiver, node.args[0].value, in_place=False)
    for site in reversed(ev.facts.fill_sites):  # point the site back at the node in the tree
        if site.call is shifted:
            site.call = node
            break
    return result


def masked_fill(ev, node: cst.Call, receiver, receiver_node, in_place: bool):
    from attnlint.analysis import losses
    from attnlint.analysis.values import UNKNOWN, FillSite

    flow = _flow()
    mask_arg, value_arg = flow._arg(node, 0, "mask"), flow._arg(node, 1, "value")
    mask = ev.eval(mask_arg.value) if mask_arg is not None else UNKNOWN
    written = ev.eval(value_arg.value) if value_arg is not None else None
    fill = fill_kind(value_arg.value, ev.aliases) if value_arg is not None else None
    if fill is None and written is not None and written.node is not None and written.node is not value_arg.value:
        # A name bound to the fill (`min_dtype = torch.finfo(dtype).min`): what it was bound to.
        fill = fill_kind(written.node, ev.aliases)
    if receiver.softmax is not None:
        # Weights zeroed where masked, after the softmax: fully masked rows are handled.
        if mask_arg is not None:
            ev.facts.weight_fills.append(
                FillSite(
                    call=node,
                    mask_node=mask_arg.value,
                    mask=mask,
                    fill=fill,
                    in_place=in_place,
                    receiver_node=receiver_node,
                    on_weights=True,
                )
            )
        result = receiver.with_(node=node, guarded=True)
        if in_place:
            ev.update_in_place(receiver_node, result)
        return result
    if receiver.padded and value_arg is not None:
        # `targets.masked_fill(targets == pad, -100)`: the padding value is rewritten.
        value = number(value_arg.value)
        result = losses.repadded(receiver, value if value is not None else written.int_value)
        if in_place:
            ev.update_in_place(receiver_node, result)
        return result
    if mask_arg is None:
        return receiver.with_(node=node)
    if fill == "-inf" and mask.mask is not None and mask.mask.origin == "argument" and mask.mask.convention == ATTEND:
        # `masked_fill_(attention_mask, -inf)`: the code fills where a parameter named as a keep
        # mask (1 = attend) is True, so it reads it as a prepared mask of its own kind (True =
        # masked); what the name says (its convention, that its rows can be emptied) does not hold.
        mask = mask.with_(mask=replace(mask.mask, convention=None, can_mask_whole_row=None))
    site = FillSite(
        call=node,
        mask_node=mask_arg.value,
        mask=mask,
        fill=fill,
        in_place=in_place,
        receiver_node=receiver_node,
        on_scores=receiver.scores is not None,
        float32_receiver=receiver.constructor is not None and receiver.constructor.half is False,
        lengths=lengths_at(ev, receiver, receiver),
    )
    # A finite fill after a -inf one (`s.masked_fill(all_masked_rows, 0.0)`) may restore
    # exactly the emptied rows: a guard before the softmax. Not one whose mask varies along
    # the keys (`~key_valid[:, None, None, :]`): that masks keys, not rows.
    restores = (
        fill != "-inf" and any(f.fill == "-inf" for f in receiver.fills) and not _varies_along_keys(site, receiver)
    )
    site = replace(site, restores=restores)
    ev.facts.fill_sites.append(site)
    fills = (site,) if restores else receiver.fills + (site,)
    if receiver.scores is None:
        # `zeros.masked_fill(mask, -inf)`: an additive mask in the making. A 0/1 mask filled with
        # anything but 0/1 (`keep.masked_fill(keep == 0, -inf)`) holds a bias from here on, also
        # where it goes as a parameter (which does not carry `additive_fill`).
        bias = receiver.mask
        if bias is not None and fill is not None and number(value_arg.value) not in (0.0, 1.0):
            bias = replace(bias, scaled=True)
        elif bias is None and mask.mask is not None and _zeros(receiver) and fill is not None:
            # `torch.zeros(mask.shape).masked_fill(mask, -inf)`: a bias of the mask's facts
            # (which rows it can empty), holding `fill` where it masks; it keeps them where it
            # goes as a parameter.
            # Float values now, no True/False convention.
            bias = replace(
                mask.mask, scaled=True, bias_fill=fill if fill == "-inf" else None, dtype="float", convention=None
            )
        # Kept among the value's fills too: a tensor that is filled and then normalised
        # (`logits.masked_fill_(~keep, -1e20)` before a softmax) is the scores, whatever made it.
        result = receiver.with_(node=node, additive_fill=site, mask=bias, fills=fills)
    else:
        result = receiver.with_(node=node, fills=fills)
    if in_place:
        ev.update_in_place(receiver_node, result)
    return result


def _zeros(value) -> bool:
    """A tensor built full of zeros (`torch.zeros(...)`, `zeros_like`, `new_zeros`)."""
    ctor = value.constructor
    return ctor is not None and ctor.function in ("torch.zeros", "torch.zeros_like", "new_zeros")


@handlers.function("torch.where")
def _where(ev, call: Call):
    from attnlint.analysis import losses
    from attnlint.analysis.values import FillSite, Value

    node = call.node
    if len(node.args) != 3:
        return None
    cond = ev.eval(node.args[0].value)
    a, b = ev.eval(node.args[1].value), ev.eval(node.args[2].value)
    for weights in (a, b):
        if weights.softmax is not None:
            return weights.with_(node=node, guarded=True)  # where(all_masked, 0, weights)
    if a.padded or b.padded:
        return losses.repadded(a if a.padded else b, None)  # rewritten somewhere
    for kept, other_node, keep_when_true in ((a, node.args[2].value, True), (b, node.args[1].value, False)):
        fill = fill_kind(other_node, ev.aliases)
        other = b if keep_when_true else a
        # The filled side is a constant we can read, or (`mask_value = finfo.min`) a
        # scalar-like value while the kept side holds the scores.
        fill_like = fill is not None or (
            kept.scores is not None and other.scores is None and other.rank in (None, 0) and cond.mask is not None
        )
        if not fill_like or kept.kind == "scalar":
            continue
        mask = cond.mask
        if mask is not None and keep_when_true:
            mask = invert(mask)  # where(keep, scores, fill): filled where ~keep
        site = FillSite(
            call=node,
            mask_node=node.args[0].value,
            mask=cond.with_(mask=mask),
            fill=fill,
            in_place=False,
            keeps_where_true=keep_when_true,
            receiver_node=node.args[1].value if keep_when_true else node.args[2].value,
            on_scores=kept.scores is not None,
            lengths=lengths_at(ev, kept, kept),
        )
        ev.facts.fill_sites.append(site)
        return kept.with_(node=node, fills=kept.fills + (site,))
    # `where(rows_all_masked, zeros, scores)`: scores replaced at places we cannot read,
    # which may be exactly the rows a fill emptied; the earlier fills no longer tell.
    if a.scores is not None and b.scores is None:
        return a.with_(node=node, fills=())
    if b.scores is not None and a.scores is None:
        return b.with_(node=node, fills=())
    from attnlint.analysis.shapes import broadcast

    return Value(
        kind="tensor", rank=a.rank if a.rank is not None else b.rank, node=node, shape=broadcast(a.shape, b.shape)
    )


@handlers.function("torch.cosine_similarity", "torch.nn.functional.cosine_similarity", "torch.cdist")
def _similarity(ev, call: Call):
    """`cosine_similarity(q[:, None], keys[None], dim=-1)`, `cdist(q, keys)`: one similarity per
    (query, key) pair, when the two operands are different tensors. Of a tensor with itself the
    diagonal is the best match (1, or distance 0), so a threshold always keeps it: no fact."""
    from attnlint.analysis.values import Value

    values = ev.args(call.node)
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    if len(values) < 2 or len(positional) < 2:
        return Value(kind="tensor", node=call.node)
    roots = [_root_name(node) for node in positional[:2]]
    different = None not in roots and roots[0] != roots[1]
    return Value(kind="tensor", node=call.node, similarity=different)


def _root_name(node: cst.BaseExpression) -> Optional[str]:
    """The name a broadcast or view of a tensor reads (`q` of `q.unsqueeze(1)`, `self.keys` of
    `self.keys[None]`)."""
    while True:
        if isinstance(node, cst.Subscript):
            node = node.value
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in (
            "unsqueeze", "view", "reshape", "expand", "expand_as", "detach", "float", "contiguous", "to",
        ):
            node = node.func.value
        else:
            break
    return _flow().code(node) if isinstance(node, (cst.Name, cst.Attribute)) else None


# NumPy spellings of the mask constructors (`np.tril(np.ones((T, T)))`, then `torch.from_numpy`):
# the same triangle of ones, whatever library made it.
@handlers.function("numpy.ones", "numpy.zeros")
def _numpy_constructor(ev, call: Call):
    from attnlint.analysis.shapes import _constructor

    return _constructor(ev, Call(node=call.node, name="torch." + call.name.rsplit(".", 1)[-1]))


@handlers.function("numpy.tril", "numpy.triu")
def _numpy_triangular(ev, call: Call):
    values = ev.args(call.node)
    if not values:
        return None
    return triangular_of(ev, call.name.rsplit(".", 1)[-1], values[0], _flow()._arg(call.node, 1, "k"), call.node)


@handlers.function("torch.from_numpy")
def _from_numpy(ev, call: Call):
    """`torch.from_numpy(a)`: the same values, as a tensor."""
    values = ev.args(call.node)
    if len(values) != 1 or call.args[0].keyword is not None or values[0].mask is None:
        return None
    return values[0].with_(kind="tensor", node=call.node)


# What a function's own documentation says a mask parameter's True entries are, on the line
# that names it (`pad_mask: (B, L) bool, True at padding positions`, `# mask: True for real
# tokens`): a stated convention, read where nothing traced says one.
_DOC_KEPT = re.compile(r"\b(?:not\s+(?:masked|padded|padding|ignored)|unmasked|non-?pad(?:ding|ded)?)\b", re.IGNORECASE)
_DOC_ATTEND_WORDS = r"(?:real|valid|kept|keep|attend(?:ed|s)?|visible|present|observed)"
_DOC_MASKED_WORDS = r"(?:pad|padding|padded|masked|ignored?|invalid|excluded|blocked|disallowed)"
_DOC_TRUE = r"(?:\bTrue\b|\b1\b)"
_DOC_SAYS = {
    ATTEND: (
        re.compile(_DOC_TRUE + r"[^.;:]{0,25}?\b" + _DOC_ATTEND_WORDS + r"\b", re.IGNORECASE),
        re.compile(r"\b" + _DOC_ATTEND_WORDS + r"\b[^.;:]{0,20}?\b(?:is|are)\s+(?:set\s+to\s+)?True\b", re.IGNORECASE),
    ),
    MASKED: (
        re.compile(_DOC_TRUE + r"[^.;:]{0,25}?\b" + _DOC_MASKED_WORDS + r"\b", re.IGNORECASE),
        re.compile(r"\b" + _DOC_MASKED_WORDS + r"\b[^.;:]{0,20}?\b(?:is|are)\s+(?:set\s+to\s+)?True\b", re.IGNORECASE),
    ),
}


def documented_convention(function: cst.FunctionDef, name: str) -> Optional[str]:
    """ATTEND or MASKED when the function's docstring or header comment says, on a line that
    names the parameter, what its True entries mean; None when it says nothing or both."""
    texts = []
    header = getattr(function.body, "header", None)
    if header is not None and header.comment is not None:
        texts.append(header.comment.value)
    body = getattr(function.body, "body", ())
    first = body[0] if body else None
    if isinstance(first, cst.SimpleStatementLine) and first.body and isinstance(first.body[0], cst.Expr):
        doc = first.body[0].value
        if isinstance(doc, (cst.SimpleString, cst.ConcatenatedString)):
            value = doc.evaluated_value
            if isinstance(value, str):
                texts.append(value)
    mentions = re.compile(r"(?<![\w.])" + re.escape(name) + r"\b")
    found = set()
    for text in texts:
        for line in text.splitlines():
            named = mentions.search(line)
            if named is None:
                continue
            # "not masked", "non-padding": kept entries, said with a masked word.
            said = _DOC_KEPT.sub("kept", line[named.end() :])
            # Of "True for real tokens, False for padding" the first statement about True counts.
            first = {}
            for convention, patterns in _DOC_SAYS.items():
                starts = [m.start() for m in (p.search(said) for p in patterns) if m is not None]
                if starts:
                    first[convention] = min(starts)
            if first:
                found.add(min(first, key=first.get))
    return found.pop() if len(found) == 1 else None


_DOC_UNUSED = re.compile(r"\b(not used|unused|ignored|is ignored|no effect|for compatibility|does not support)\b", re.I)


def documented_as_unused(function: cst.FunctionDef, name: str) -> bool:
    """The function's docstring says the parameter is not used: in the paragraph that names it
    (`attention_mask: Whisper does not support masking of the input_features, this argument is
    preserved for compatibility, but it is not used`). An unused parameter said so on purpose."""
    body = getattr(function.body, "body", ())
    first = body[0] if body else None
    if not (isinstance(first, cst.SimpleStatementLine) and first.body and isinstance(first.body[0], cst.Expr)):
        return False
    doc = first.body[0].value
    value = doc.evaluated_value if isinstance(doc, (cst.SimpleString, cst.ConcatenatedString)) else None
    if not isinstance(value, str):
        return False
    mentions = re.compile(r"(?<![\w.])" + re.escape(name) + r"\b")
    for paragraph in _parameter_paragraphs(value):
        if mentions.search(paragraph) and _DOC_UNUSED.search(paragraph):
            return True
    return False


def _parameter_paragraphs(text: str) -> List[str]:
    """The docstring cut where a line starts at the indentation of a parameter's entry (`name
    (type):`, `name:`): each parameter's description with its continuation lines."""
    paragraphs: List[str] = []
    current: List[str] = []
    for line in text.splitlines():
        if re.match(r"\s*[\w*]+\s*(\(.*\))?\s*:", line) and current:
            paragraphs.append("\n".join(current))
            current = []
        current.append(line)
    if current:
        paragraphs.append("\n".join(current))
    return paragraphs
