"""Every rule attnlint has, in code order. Adding a rule is one import and one line here."""

from __future__ import annotations

from functools import lru_cache
from typing import Dict, List, Type

from attnlint.rules.base import Rule


@lru_cache(maxsize=None)
def _rules() -> tuple:
    from attnlint.rules.all_masked_row_nan import AllMaskedRowNan
    from attnlint.rules.batched_transpose import BatchedTranspose
    from attnlint.rules.cross_entropy_ignore_index import CrossEntropyIgnoreIndex
    from attnlint.rules.inverted_mask_convention import InvertedMaskConvention
    from attnlint.rules.missing_attention_scale import MissingAttentionScale
    from attnlint.rules.softmax_wrong_axis import SoftmaxWrongAxis
    from attnlint.rules.unmasked_padding import UnmaskedPadding
    from attnlint.rules.unsliced_causal_mask import UnslicedCausalMask
    from attnlint.rules.unused_noqa import UnusedNoqa

    rules = [
        MissingAttentionScale,
        SoftmaxWrongAxis,
        BatchedTranspose,
        CrossEntropyIgnoreIndex,
        UnmaskedPadding,
        AllMaskedRowNan,
        UnslicedCausalMask,
        InvertedMaskConvention,
        UnusedNoqa,
    ]
    return tuple(sorted(rules, key=lambda r: r.code))


def all_rules() -> List[Type[Rule]]:
    return list(_rules())


def by_code() -> Dict[str, Type[Rule]]:
    return {r.code: r for r in _rules()}


def lookup(code_or_name: str) -> Type[Rule]:
    for rule in _rules():
        if code_or_name.upper() == rule.code or code_or_name == rule.name:
            return rule
    raise KeyError(code_or_name)
