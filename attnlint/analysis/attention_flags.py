"""Attention API calls given both an explicit mask and `is_causal=True`.

SDPA and `nn.MultiheadAttention` take a causal flag next to their mask. Given both, SDPA raises on
some versions and backends and on others (CPU, torch 2.x) combines the mask with a *top-left*
aligned causal mask, which is wrong whenever the queries are not the last keys' positions: a
KV cache, cross attention, a prefix-LM mask. `nn.MultiheadAttention` reads `is_causal` as a hint
that `attn_mask` *is* causal and may drop the mask for a fast path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, List, Optional

import libcst as cst

from attnlint.analysis.calls import argument
from attnlint.analysis.values import AttentionCallSite, Value

if TYPE_CHECKING:  # pragma: no cover
    from attnlint.analysis.evaluator import FunctionFacts

# Where `is_causal` sits in each API's signature.
_CAUSAL_POSITION = {"sdpa": 5, "MultiheadAttention": 7}


@dataclass(frozen=True)
class CausalFlagWithMask:
    site: AttentionCallSite
    flag: cst.BaseExpression  # the `True` given for is_causal
    mask_node: cst.BaseExpression
    mask: Value
    # The query and key operands as written (SDPA: sizes for a lower-right causal mask).
    query_node: Optional[cst.BaseExpression]
    key_node: Optional[cst.BaseExpression]

    @property
    def api(self) -> str:
        return self.site.api

    @property
    def mask_is_causal(self) -> Optional[bool]:
        """True: the mask is itself a causal triangle; False: built from something else (padding,
        lengths); None: the code does not show where it came from."""
        facts = self.mask.mask
        if facts is None or facts.origin in (None, "argument"):
            return None
        return facts.origin == "causal"


def causal_flags_with_masks(function: "FunctionFacts") -> List[CausalFlagWithMask]:
    found = []
    for site in function.attention_calls:
        position = _CAUSAL_POSITION.get(site.api)
        if position is None:
            continue
        flag = argument(site.call, position, "is_causal")
        if flag is None or not (isinstance(flag.value, cst.Name) and flag.value.value == "True"):
            continue
        for use in function.mask_uses:
            if use.call is site.call and use.keyword == "attn_mask":
                query = argument(site.call, 0, "query")
                key = argument(site.call, 1, "key")
                found.append(
                    CausalFlagWithMask(
                        site=site,
                        flag=flag.value,
                        mask_node=use.mask_node,
                        mask=use.mask,
                        query_node=query.value if query is not None else None,
                        key_node=key.value if key is not None else None,
                    )
                )
    return found
