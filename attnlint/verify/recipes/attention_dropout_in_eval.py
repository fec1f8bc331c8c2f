"""Recipe for ATN209 attention-dropout-in-eval: functional dropout on the weights at evaluation.

Checks, per device and dtype (see :mod:`attnlint.verify.recipes._functional` for how the entry is
called; a module is put in `eval()` / `train()`, a function gets `training=` / `module.training`):

* ``original_drops_at_evaluation`` -- in evaluation mode, the original gives different outputs
  under two RNG seeds: its dropout is on (the bug is visible);
* ``fixed_deterministic_at_evaluation`` -- the fixed code gives the same bits under both seeds;
* ``training_unchanged`` -- in training mode, under one seed, original and fixed give the same
  bits: the fix is safe. A wrong fix (`training=False`, dropout removed) fails here.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping

import torch

from attnlint.verify.recipes import _functional as fn
from attnlint.verify.recipes._masking import run_recipe

RULE_CODE = "ATN209"


def run(request: Mapping[str, Any]) -> List[Dict[str, Any]]:
    return run_recipe(request, RULE_CODE, _verify_on)


def _verify_on(trial) -> None:
    params = trial.params
    w = fn.make_witness(trial.seed, trial.device, trial.dtype, 6, 6, (6, 6))
    o1, o2 = (fn.run(trial.original, w, params, training=False, seed=s) for s in (1, 2))
    f1, f2 = (fn.run(trial.fixed, w, params, training=False, seed=s) for s in (1, 2))
    if o1.ok and o2.ok:
        dropped = not torch.equal(o1.value, o2.value)
        what = "different" if dropped else "the same"
        trial.add("original_drops_at_evaluation", dropped, f"two seeds in eval mode give {what} outputs")
    else:
        trial.add("original_drops_at_evaluation", False, (o1 if not o1.ok else o2).describe_error())
    fn.bit_identical(trial, "fixed_deterministic_at_evaluation", f1, f2, "the fixed code under two seeds in eval mode")
    t_orig = fn.run(trial.original, w, params, training=True, seed=3)
    t_fixed = fn.run(trial.fixed, w, params, training=True, seed=3)
    fn.bit_identical(trial, "training_unchanged", t_orig, t_fixed, "original and fixed in training mode, one seed")
