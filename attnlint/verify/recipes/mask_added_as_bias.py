"""Recipe for ATN208 mask-added-as-bias: a 0/1 mask added to the scores masks nothing.

Witness (:mod:`attnlint.verify.recipes._functional`): a padded batch (lengths 5 and 3, garbage-free
random q/k/v), the mask passed as the entry's parameter names it; ``params["causal"]`` when the
entry builds a causal triangle itself. The reference is float64 attention with the true mask.

* ``original_masks_nothing`` -- the original is off the reference (padding and the future attended);
* ``fixed_matches_masked_reference`` -- the fixed code satisfies FlashAttention's rule against it.
  A fix that keeps adding 0/1 values (or fills with 0) fails.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping

import torch

from attnlint.verify.recipes import _functional as fn
from attnlint.verify.recipes._masking import run_recipe

RULE_CODE = "ATN208"


def run(request: Mapping[str, Any]) -> List[Dict[str, Any]]:
    return run_recipe(request, RULE_CODE, _verify_on)


def _verify_on(trial) -> None:
    params = trial.params
    w = fn.make_witness(trial.seed, trial.device, trial.dtype, 5, 5, (5, 3))
    names = set(fn.positional_names(trial.original))
    mask = None
    if names & (set(fn.KEEP_NAMES) | set(fn.PADDING_NAMES) | {"attention_mask", "lengths"}):
        mask = w.key_mask()
    if params.get("causal"):
        causal = torch.ones(5, 5, dtype=torch.bool, device=w.q.device).tril()
        mask = causal if mask is None else (mask & causal)
    ref, out_plain = fn.reference(w, mask), fn.plain(w, mask)
    fn.differs(trial, "original_masks_nothing", fn.run(trial.original, w, params), ref, out_plain, "padded batch")
    fn.compare(trial, "fixed_matches_masked_reference", fn.run(trial.fixed, w, params), ref, out_plain, "padded batch")
