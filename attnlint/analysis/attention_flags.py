"""Attention API calls given both an explicit mask and `is_causal=True`.

SDPA and `nn.MultiheadAttention` take a causal flag next to their mask. Given both, SDPA raises on
some versions and backends and on others (CPU, torch 2.x) combines the mask with a *top-left*
aligned causal mask, which is wrong whenever the queries are not the last keys' positions: a
KV cache, cross attention, a prefix-LM mask. `nn.MultiheadAttention` reads `is_causal` as a hint
that `attn_mask` *is* causal and may drop the mask for a fast path.

The flag is often computed: `is_causal = T > 1` (causal except when decoding one token). Such a
flag holds on ordinary inputs whether or not a mask is given, so it meets the mask as `True`
does. A flag computed from the mask itself (`is_causal=mask is None`, `... and mask is None`) has
no known truth, and is not reported. A value's `truth` (see :class:`Value`) is computed here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, List, Optional

import libcst as cst

from attnlint.analysis.calls import argument
from attnlint.analysis.names import literal
from attnlint.analysis.values import AttentionCallSite, Value

if TYPE_CHECKING:  # pragma: no cover
    from attnlint.analysis.evaluator import FunctionFacts

# Where `is_causal` sits in each API's signature.
_CAUSAL_POSITION = {"sdpa": 5, "MultiheadAttention": 7}


def comparison_truth(node: cst.Comparison, left: Value, rights: List[Value]) -> Optional[bool]:
    """`T > 1`, `q.size(2) != 1`, `1 < seq_len`: a size read from a tensor (a scalar the code does
    not know as a constant, and not a parameter) tested against a small literal in a way every
    size above one passes. True then; None for every other comparison (`is None`, `==`, a
    tensor's elements, a constant, a parameter)."""
    if len(node.comparisons) != 1:
        return None
    comp = node.comparisons[0]
    operator = comp.operator
    literal = _int_literal(comp.comparator)
    size = left
    if literal is None and rights:
        # `1 < T`: the literal on the left, the size on the right.
        literal, size = _int_literal(node.left), rights[0]
        mirrored = {cst.LessThan: cst.GreaterThan, cst.LessThanEqual: cst.GreaterThanEqual}
        operator = mirrored.get(type(operator), type(operator))()
    if literal is None or size.kind != "scalar" or size.sym is None or size.int_value is not None:
        return None
    if size.param is not None:
        return None  # `heads > 1`, `causal > 0`: a setting the caller picks, not a size of the input
    if isinstance(operator, cst.GreaterThan) and literal <= 1:
        return True
    if isinstance(operator, cst.GreaterThanEqual) and literal <= 2:
        return True
    if isinstance(operator, cst.NotEqual) and literal in (0, 1):
        return True
    return None


def shown_number(value: Value) -> bool:
    """A number the code computes (`dim ** -0.5`, `8`, a caller's `head_dim ** -0.5` bound to a
    parameter): not None, and non-zero; not a setting the code only names (a bare parameter)."""
    sym = value.sym
    if value.kind not in ("scalar", "unknown") or value.rank is not None or value.is_none or sym is None:
        return False
    if sym.is_const:
        return sym.coeff != 0
    return not (len(sym.factors) == 1 and sym.factors[0][1] == 1 and sym.coeff == 1)


def none_test_truth(node: cst.Comparison, left: Value, rights: List[Value]) -> Optional[bool]:
    """`x is None` / `x is not None` for an x known to be None, or a number the code shows."""
    if len(node.comparisons) != 1 or not is_none_literal_node(node.comparisons[0].comparator):
        return None
    operator = node.comparisons[0].operator
    if left.is_none:
        known = True
    elif shown_number(left):
        known = False
    else:
        return None
    if isinstance(operator, cst.Is):
        return known
    if isinstance(operator, cst.IsNot):
        return not known
    return None


def is_none_test(node: cst.BaseExpression) -> bool:
    """`x is None`, `x is not None`, or a call of a helper that tests it (`exists(x)`)."""
    if isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
        return is_none_literal_node(node.comparisons[0].comparator)
    return isinstance(node, cst.Call)


def is_none_literal_node(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def boolean_truth(node: cst.BooleanOperation, left: Value, right: Value) -> Optional[bool]:
    """`a and b`, `a or b` over the truth of each side (None when it does not follow)."""
    a, b = left.truth, right.truth
    if isinstance(node.operator, cst.And):
        if a is False or b is False:
            return False
        return True if a is True and b is True else None
    if a is True or b is True:
        return True
    return False if a is False and b is False else None


def _int_literal(node: cst.BaseExpression) -> Optional[int]:
    return int(literal(node)) if isinstance(node, cst.Integer) else None


@dataclass(frozen=True)
class CausalFlagWithMask:
    site: AttentionCallSite
    flag: cst.BaseExpression  # the expression given for is_causal (`True`, `is_causal`, `T > 1`)
    mask_node: cst.BaseExpression
    mask: Value
    # The query and key operands as written (SDPA: sizes for a lower-right causal mask).
    query_node: Optional[cst.BaseExpression]
    key_node: Optional[cst.BaseExpression]

    @property
    def api(self) -> str:
        return self.site.api

    @property
    def flag_is_literal(self) -> bool:
        """`is_causal=True` as written (not a flag computed at run time)."""
        return isinstance(self.flag, cst.Name) and self.flag.value == "True"

    @property
    def mask_is_causal(self) -> Optional[bool]:
        """True: the mask is itself a causal triangle; False: built from something else (padding,
        lengths); None: the code does not show where it came from."""
        facts = self.mask.mask
        if facts is None or facts.origin in (None, "argument", "comparison", "negation"):
            return None  # a comparison may be a causal one (`arange(T)[:, None] >= arange(T)`)
        return facts.origin == "causal"


def causal_flags_with_masks(function: "FunctionFacts") -> List[CausalFlagWithMask]:
    found = []
    for site in function.attention_calls:
        position = _CAUSAL_POSITION.get(site.api)
        if position is None:
            continue
        written = argument(site.call, position, "is_causal")
        flag = written.value if written is not None else site.causal_flag_node  # or in `**kwargs`
        if flag is None:
            continue
        literal = isinstance(flag, cst.Name) and flag.value == "True"
        if not literal and (site.causal_flag is None or site.causal_flag.truth is not True):
            continue
        for use in function.mask_uses:
            if use.call is site.call and use.keyword == "attn_mask":
                query = argument(site.call, 0, "query")
                key = argument(site.call, 1, "key")
                found.append(
                    CausalFlagWithMask(
                        site=site,
                        flag=flag,
                        mask_node=use.mask_node,
                        mask=use.mask,
                        query_node=query.value if query is not None else None,
                        key_node=key.value if key is not None else None,
                    )
                )
    return found
