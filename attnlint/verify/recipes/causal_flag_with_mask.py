"""Recipe for ATN207 causal-flag-with-mask: SDPA given an explicit mask and `is_causal=True`.

Witnesses (:mod:`attnlint.verify.recipes._functional`): a KV-cache step (3 queries, 7 keys, the
queries being the last positions) and a square batch (5 by 5), each with a padding mask when the
entry takes one. The reference is float64 attention with the padding mask and a causal mask
aligned to the lower right (query i sees keys up to i + n_k - n_q), which is what decoding means.

* ``original_wrong_with_kv_cache`` -- the original raises or is off the reference (top-left
  alignment) on the KV-cache witness;
* ``fixed_matches_reference_kv_cache`` / ``fixed_matches_reference_square`` -- the fixed code
  satisfies FlashAttention's rule against the reference on both. A fix that folds in a top-left
  triangle (`tril()` with no offset) fails the first.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping

import torch

from attnlint.verify.recipes import _functional as fn
from attnlint.verify.recipes._masking import run_recipe

RULE_CODE = "ATN207"


def run(request: Mapping[str, Any]) -> List[Dict[str, Any]]:
    return run_recipe(request, RULE_CODE, _verify_on)


def _verify_on(trial) -> None:
    params = trial.params
    names = set(fn.positional_names(trial.original))
    padded = bool(names & (set(fn.KEEP_NAMES) | set(fn.PADDING_NAMES) | {"attention_mask", "lengths"}))
    for label, n_q, n_k, lengths in (("kv_cache", 3, 7, (7, 5)), ("square", 5, 5, (5, 3))):
        w = fn.make_witness(trial.seed, trial.device, trial.dtype, n_q, n_k, lengths)
        mask = torch.ones(n_q, n_k, dtype=torch.bool, device=w.q.device).tril(n_k - n_q)
        if padded:
            mask = w.key_mask() & mask
        ref, out_plain = fn.reference(w, mask), fn.plain(w, mask)
        if label == "kv_cache":
            fn.differs(
                trial,
                "original_wrong_with_kv_cache",
                fn.run(trial.original, w, params),
                ref,
                out_plain,
                "3 queries after 4 cached keys",
            )
        fn.compare(
            trial,
            f"fixed_matches_reference_{label}",
            fn.run(trial.fixed, w, params),
            ref,
            out_plain,
            f"{n_q} queries, {n_k} keys, lower-right causal",
        )
