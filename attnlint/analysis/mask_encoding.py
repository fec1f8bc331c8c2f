"""How a mask encodes "masked": as 0/1 values (bool, integer or float keep/ignore masks) or as an
additive bias (0 where kept, -inf or a large negative number where masked).

The two look alike as tensors and are easy to confuse: a 0/1 mask *added* to the scores, or handed
to an API that adds float masks (SDPA's float `attn_mask`), shifts the kept logits by one and
masks nothing. What shows a mask holds 0/1 values:

- it is built from a comparison, a triangle of ones, or lengths (its convention is known), here
  or by every caller in the file that passes it as a parameter;
- it is bool, or the result of an elementwise comparison (cast or not: still 0/1 values);
- it is a mask parameter with a known convention (Hugging Face's `attention_mask`: 1 = keep) that
  this function broadcasts itself (`mask[:, None, None, :]`, `.unsqueeze(1)`): the raw 2-D mask,
  not one a caller already turned into a bias. A parameter used as it comes may be the caller's
  additive mask (every Hugging Face attention layer receives one), so it is unknown.
"""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from attnlint.analysis.values import MaskFacts, Value
from attnlint.analysis.names import child_nodes

_BROADCASTING_METHODS = ("unsqueeze", "view", "reshape", "expand", "repeat")
# Origins that say nothing about a mask's values: a parameter's or a name's convention (a
# name is a role's fallback, not data flow).
_UNBUILT = (None, "argument", "name")
_ORIGIN_WORDS = {
    "causal": "a triangle of ones",
    "padding": "a comparison with the pad id",
    "lengths": "sequence lengths",
    "combined": "combined masks",
    "comparison": "a comparison",
    "negation": "a `~` inversion",
    "bool_pad": "padding with `True`/`False`",
}


def zero_one_reason(value: Value, function_node: Optional[cst.CSTNode]) -> Optional[str]:
    """Why `value` is a 0/1 mask (for messages), or None when the code does not show it."""
    facts: Optional[MaskFacts] = value.mask
    if facts is None or facts.scaled:  # `mask * -1e9`: a bias
        return None
    # A comparison gives bool values; a cast (`.float()`) keeps them 0/1, a factor marks `scaled`.
    if facts.origin not in _UNBUILT and (
        facts.dtype == "bool" or facts.convention is not None or facts.origin in ("comparison", "negation", "bool_pad")
    ):
        # Built from a comparison, a triangle of ones or lengths: here, or by every caller of
        # this function (caller contexts bind the parameter to what they build), so 0/1 values.
        return f"a {facts.dtype or '0/1'} mask built from {_ORIGIN_WORDS.get(facts.origin, facts.origin)}"
    param = facts.param or value.param
    if param is not None:
        # A parameter: what its callers built (a triangle of ones, or of `finfo.min`) is not
        # this function's business; only broadcasting the raw mask here shows it is 0/1.
        # So does the name of a padding mask of the sequence attended to (`context_mask`,
        # `enc_mask`, `src_pad_mask`): laid out per key here, it is the raw key-padding mask, 0/1
        # values whichever way round.
        known = facts.convention is not None or _names_key_padding(param)
        if known and function_node is not None and broadcast_here(param, function_node):
            return f"the 0/1 `{param}` (broadcast here, so not yet a bias)"
        if known and facts.laid_out_per_key:
            # Broadcast by a caller (`attention_mask[:, None, None, :].to(dtype)` in a helper)
            # and handed down as it is: the parameter's 0/1 values, not a bias.
            return f"the 0/1 `{param}` (broadcast by the caller with no arithmetic, so not a bias)"
        if facts.shown_bool:
            return f"the bool `{param}` (inverted with `~` here, so not a bias)"
        return None
    return None


def multiplied_reason(value: Value, function_node: Optional[cst.CSTNode]) -> Optional[str]:
    """Why `value`, multiplied into the scores, is a mask that the product cannot apply (for
    messages), or None when the code does not show it is a mask.

    A product masks nothing whatever the mask's encoding: a 0/1 keep mask leaves masked scores at
    0 (weighted exp(0) by the softmax), a True = masked one zeroes the kept scores, and a bias
    multiplies the kept scores by 0. So a mask parameter of no known encoding counts too (by its
    name, a role: whether the callers in the file pass masks is asked by the rule)."""
    reason = zero_one_reason(value, function_node)
    if reason is not None:
        return reason
    facts: Optional[MaskFacts] = value.mask
    if facts is None or facts.scaled or facts.origin != "argument" or facts.param is None:
        return None
    return "a mask parameter (by its name)"


def passed_as_mask(value: Value) -> bool:
    """What a caller passes is a mask: one the analysis traced (`mask=...`), or the caller's own
    parameter named as a mask (`clicked_mask`, `evidence_mask.float()`, broadcast or cast but
    with no arithmetic on it: `1 - m` or `m * -1e9` is no longer the mask as passed), by the same
    role a multiplied mask parameter is read by (see multiplied_reason)."""
    if value.mask is not None:
        return True
    param = value.param
    if param is None or value.kind not in ("tensor", "unknown"):
        return False
    if value.sym is not None and value.sym.text() != param:
        return False
    from attnlint.analysis.names import words

    parts = words(param)
    return bool(parts) and parts[-1] in ("mask", "masks")


def _names_key_padding(param: str) -> bool:
    from attnlint.analysis.masks import names_attended_mask, names_padding

    return names_attended_mask(param) or names_padding(param)


def broadcast_here(param: str, function_node: cst.CSTNode) -> bool:
    """`param[:, None, None, :]`, `param.unsqueeze(1)`, `param.view(b, 1, 1, n)`,
    `rearrange(param, "b j -> b 1 1 j")` in the function. Not when the code puts a new axis
    before its first (`param.unsqueeze(1).unsqueeze(0)`, `param[None]`): a padding mask keeps
    its batch axis first, so that is a mask of other axes (Swin's per-window bias, (nW, N, N)
    to (1, nW, 1, N, N)), not the raw padding mask."""
    if _leading_axis_added(param, function_node):
        return False
    for node in _walk(function_node):
        if isinstance(node, cst.Call) and _adds_unit_axes(node, param):
            return True
        if isinstance(node, cst.Subscript) and _is_name(node.value, param):
            if any(
                isinstance(e.slice, cst.Index) and isinstance(e.slice.value, cst.Name) and e.slice.value.value == "None"
                for e in node.slice
            ):
                return True
        if (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value in _BROADCASTING_METHODS
            and _is_name(node.func.value, param)
        ):
            return True
    return False


def _leading_axis_added(param: str, function_node: cst.CSTNode) -> bool:
    """`param.unsqueeze(0)` (after other broadcasting calls too) or `param[None, ...]`."""
    for node in _walk(function_node):
        if isinstance(node, cst.Subscript) and _is_name(node.value, param) and node.slice:
            first = node.slice[0].slice
            if isinstance(first, cst.Index) and _is_name(first.value, "None"):
                return True
        if (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value == "unsqueeze"
            and node.args
            and isinstance(node.args[0].value, cst.Integer)
            and node.args[0].value.value == "0"
        ):
            receiver = node.func.value
            while (
                isinstance(receiver, cst.Call)
                and isinstance(receiver.func, cst.Attribute)
                and receiver.func.attr.value in _BROADCASTING_METHODS
            ):
                receiver = receiver.func.value
            if _is_name(receiver, param):
                return True
    return False


def _adds_unit_axes(node: cst.Call, param: str) -> bool:
    """`rearrange(param, "b j -> b 1 1 j")`, `einops.rearrange(param, "b n -> b () () n")`: the
    same axes, with new axes of size 1 among them."""
    from attnlint.analysis.einops_calls import parse_pattern

    func = node.func
    name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", None)
    positional = [a.value for a in node.args if a.keyword is None]
    if name != "rearrange" or len(positional) < 2 or not _is_name(positional[0], param):
        return False
    pattern = positional[1]
    if not isinstance(pattern, cst.SimpleString) or not isinstance(pattern.evaluated_value, str):
        return False
    parsed = parse_pattern(pattern.evaluated_value)
    if parsed is None:
        return False
    lhs, rhs = parsed
    units = [g for g in rhs if g in ((), ("1",))]
    kept = [g for g in rhs if g not in ((), ("1",))]
    return bool(units) and kept == lhs


def _is_name(node: cst.CSTNode, name: str) -> bool:
    return isinstance(node, cst.Name) and node.value == name


def _walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    yield node
    for child in child_nodes(node):
        yield from _walk(child)
