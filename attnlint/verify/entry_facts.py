"""What the analysis knows about an entry that the verification recipe needs (parent side, no torch).

The recipes run in the child on live objects; what only the *source* shows (a causal mask built
inside, a function taking q, k, v, the convention a mask argument is read in) comes from the shared
analysis and travels as recipe params:

* ``causal`` -- a causal (``triu``/``tril``) mask is applied inside the entry;
* ``call = "qkv"`` -- the entry is a function whose first three parameters are queries, keys, values;
* ``mask_format`` -- how a mask argument must be built for the witnesses. The parameter's *name*
  decides when the linter's table (:mod:`attnlint.analysis.masks`) gives it a convention; otherwise
  the code does: the mask passed straight to SDPA's ``attn_mask`` (True = may attend, broadcast over
  heads and queries), to a ``*key_padding_mask`` (True = padding), or filled where True
  (``scores.masked_fill(mask[...], -inf)``: True = padding). When neither tells, nothing is assumed
  and the recipe says what to pass.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, Optional

import libcst as cst


def entry_facts(sources: Iterable[str], entry: str) -> Dict[str, Any]:
    """Facts about ``entry``, read from each of ``sources`` (the original first, then the fixed code:
    a fix that passes the mask on shows how the mask is meant to be read)."""
    from attnlint.analysis import analyze_module
    from attnlint.analysis.values import KEY, QUERY, VALUE
    from attnlint.verify.recipes._mask_names import mask_format_for_name

    facts: Dict[str, Any] = {"causal": False, "padded_queries": False, "qkv_function": False, "mask_format": {}}
    for source in sources:
        try:
            analysis = analyze_module(cst.parse_module(source))
        except Exception:  # noqa: BLE001 - an unparsable source has no facts; extraction reports it
            continue
        for function in analysis.functions:
            if function.class_name != entry and not (function.class_name is None and function.name == entry):
                continue
            for site in list(function.fill_sites) + list(function.mask_uses):
                mask = site.mask.mask
                if mask is not None and (mask.origin == "causal" or mask.causal_part):
                    facts["causal"] = True
                if mask is not None and mask.masks_padded_queries:
                    facts["padded_queries"] = True
            if function.class_name is None:
                roles = [value.role for value in list(function.params.values())[:3]]
                facts["qkv_function"] = facts["qkv_function"] or roles == [QUERY, KEY, VALUE]
            for name in function.params:
                if name in facts["mask_format"]:
                    continue
                fmt = (
                    mask_format_for_name(name)
                    or _format_from_callers(function.params[name])
                    or _format_from_use(function, name)
                )
                if fmt is not None:
                    facts["mask_format"][name] = fmt
    return facts


def _format_from_callers(value: Any) -> Optional[str]:
    """The witness format of a parameter whose callers all build one kind of per-token mask (ids
    compared with the pad id, lengths against positions): what it means comes from them, not
    from how this entry reads it, which is what a convention bug gets wrong."""
    from attnlint.analysis.values import ATTEND, MASKED

    mask = value.mask
    if mask is None or mask.origin not in ("padding", "lengths") or mask.dtype != "bool":
        return None
    if value.rank is not None and value.rank != 2:
        return None  # spread over heads or queries by the caller: not (batch, tokens)
    return {MASKED: "key_padding", ATTEND: "keep"}.get(mask.convention or "")


def _format_from_use(function: Any, name: str) -> Optional[str]:
    """The witness format the code reads parameter ``name`` in, when it uses it directly."""
    for use in function.mask_uses:
        if _names_param(use.mask_node, name):
            if use.api == "sdpa" and use.keyword == "attn_mask":
                if isinstance(use.mask_node, cst.Name):
                    return "sdpa_keep"
                # `attn_mask=keep[:, None, None, :]`: the parameter is a (batch, tokens) keep-mask
                # that the code spreads over heads and queries itself.
                return "keep" if _spreads_tokens_to_4d(use.mask_node) else None
            if use.keyword.endswith("key_padding_mask"):
                return "key_padding"
    for fill in function.fill_sites:
        if _names_param(fill.mask_node, name) and not fill.keeps_where_true:
            return "key_padding"  # filled where True: True marks the padding
    return None


def _spreads_tokens_to_4d(node: cst.CSTNode) -> bool:
    """`m[:, None, None, :]`: a (batch, tokens) mask given axes for the heads and the queries."""
    if not isinstance(node, cst.Subscript) or len(node.slice) != 4:
        return False
    kinds = []
    for element in node.slice:
        index = element.slice
        if isinstance(index, cst.Index) and isinstance(index.value, cst.Name) and index.value.value == "None":
            kinds.append("new")
        elif isinstance(index, cst.Slice) and index.lower is None and index.upper is None and index.step is None:
            kinds.append("all")
        else:
            return False
    return kinds == ["all", "new", "new", "all"]


def _names_param(node: Optional[cst.CSTNode], name: str) -> bool:
    """``name`` itself, or a subscript/unsqueeze of it (``mask[:, None, None, :]``)."""
    while node is not None:
        if isinstance(node, cst.Name):
            return node.value == name
        if isinstance(node, cst.Subscript):
            node = node.value
        elif (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value in ("unsqueeze", "view", "reshape", "bool", "to")
        ):
            node = node.func.value
        else:
            return False
    return False
