"""Recipe for ATN206 half-precision-mask-fill: a fill constant beyond float16's range.

Witness (:mod:`attnlint.verify.recipes._functional`): a padded batch (lengths 5 and 3) with the mask
passed as the entry's parameter names it (``params["mask_format"]``: ``keep`` or ``masked``).

* ``fixed_equals_original_in_<dtype>`` -- in the run's own dtype (float64/float32 on CPU) the fix
  changes nothing: the same bits (the fix is safe there);
* ``original_fails_in_float16`` -- in float16 the original raises (`masked_fill` overflow) or gives
  non-finite or wrong values;
* ``fixed_matches_reference_in_float16`` -- in float16 the fixed code satisfies FlashAttention's rule
  against float64 attention with the true mask. A fix that changes float32 results (a fill of 0, a
  different mask) fails the first check.
"""

from __future__ import annotations

import copy
from typing import Any, Dict, List, Mapping

import torch
from torch import nn

from attnlint.verify.recipes import _functional as fn
from attnlint.verify.recipes._masking import run_recipe

RULE_CODE = "ATN206"


def run(request: Mapping[str, Any]) -> List[Dict[str, Any]]:
    return run_recipe(request, RULE_CODE, _verify_on)


def _in(entry: Any, dtype: torch.dtype) -> Any:
    return copy.deepcopy(entry).to(dtype) if isinstance(entry, nn.Module) else entry


def _verify_on(trial) -> None:
    params = trial.params
    w = fn.make_witness(trial.seed, trial.device, trial.dtype, 5, 5, (5, 3))
    fn.bit_identical(
        trial,
        f"fixed_equals_original_in_{trial.dtype_name}",
        fn.run(trial.original, w, params),
        fn.run(trial.fixed, w, params),
        f"original and fixed in {trial.dtype_name}",
    )
    half = fn.make_witness(trial.seed, trial.device, torch.float16, 5, 5, (5, 3))
    mask = half.key_mask()
    ref, out_plain = fn.reference(half, mask), fn.plain(half, mask)
    original, fixed = _in(trial.original, torch.float16), _in(trial.fixed, torch.float16)
    fn.differs(trial, "original_fails_in_float16", fn.run(original, half, params), ref, out_plain, "float16 scores")
    fn.compare(
        trial, "fixed_matches_reference_in_float16", fn.run(fixed, half, params), ref, out_plain, "float16 scores"
    )
