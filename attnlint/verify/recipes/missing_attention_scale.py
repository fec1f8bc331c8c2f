"""Recipe for ATN101 missing-attention-scale: a softmax over ``Q Kᵀ`` with no ``1/sqrt(d_k)`` scale.

The bug is silent: the module runs and trains, but its scores are ``sqrt(d_k)`` times too large, so
its softmax is sharper than the model it claims to be. The fix multiplies the product by
``q.shape[-1] ** -0.5`` -- an operand's contracted axis, i.e. the **per-head** dimension. Scaling by
the model width (``self.d_out ** -0.5``) in multi-head code is a wrong fix seen in public code; the
per-head float64 reference rejects it (off by ``sqrt(heads)`` in every logit).

Where the bug cannot be seen (docs/verify.md), and what this recipe does there:

* one key (``n_q = n_k = 1``): a softmax over one score is exactly 1 whatever the scale, so original
  and fixed must be ``torch.equal`` -- check ``single_key_bit_identical``;
* one query under a causal mask: query 0 sees only key 0, so its output row must be ``torch.equal``
  too -- check ``causal_first_query_bit_identical`` (causal modules only, on the witness);
* head dim 1: ``1 ** -0.5 == 1.0``; the witness check then fails (the bug is invisible) and
  ``witness_original_equals_fixed`` is 1 -- the tests use this to show that the witness matters.

Witnesses should use a head dim whose square root is not a power of two (e.g. 80): only then do
``scores / sqrt(d)`` and ``scores * d ** -0.5`` differ in the last bit, so only tolerances (not bit
equality) can accept every correct placement of the scale.

Common checks and the reference: :mod:`attnlint.verify.recipes._score_softmax`.
Runs only inside the verification child process.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping

import torch
from torch import nn

from attnlint.verify.recipes._score_softmax import References, Spec, run_module, run_recipe
from attnlint.verify.tolerance import bit_identical, max_abs_diff

RULE_CODE = "ATN101"

SINGLE_KEY_BIT_IDENTICAL = "single_key_bit_identical"
CAUSAL_FIRST_QUERY_BIT_IDENTICAL = "causal_first_query_bit_identical"


def run(request: Mapping[str, Any]) -> List[Dict[str, Any]]:
    return run_recipe(request, RULE_CODE, _invisible_cases, invisible_on_single_token=True)


def _invisible_cases(
    original: nn.Module,
    fixed: nn.Module,
    inputs: Mapping[str, torch.Tensor],
    refs: Mapping[str, References],
    spec: Spec,
    measurements: Dict[str, float],
) -> List[List[Any]]:
    checks = [_check_single_key(original, fixed, inputs["single_token"])]
    if spec.causal:
        checks.append(_check_causal_first_query(original, fixed, inputs["witness"], measurements))
    return checks


def _check_single_key(original: nn.Module, fixed: nn.Module, x: torch.Tensor) -> List[Any]:
    before, after = run_module(original, x), run_module(fixed, x)
    shape = tuple(x.shape)
    if before.output is None or after.output is None:
        what = before.describe_error() if before.error else after.describe_error()
        return [SINGLE_KEY_BIT_IDENTICAL, False, f"on one token {shape}: {what}"]
    if bit_identical(before.output, after.output):
        return [SINGLE_KEY_BIT_IDENTICAL, True, f"torch.equal on one token {shape} (softmax over one key is 1)"]
    diff = max_abs_diff(before.output, after.output)
    return [SINGLE_KEY_BIT_IDENTICAL, False, f"not torch.equal on one token {shape}: max|diff|={diff:.3e}"]


def _check_causal_first_query(
    original: nn.Module, fixed: nn.Module, x: torch.Tensor, measurements: Dict[str, float]
) -> List[Any]:
    before, after = run_module(original, x), run_module(fixed, x)
    shape = tuple(x.shape)
    if before.output is None or after.output is None:
        what = before.describe_error() if before.error else after.describe_error()
        return [CAUSAL_FIRST_QUERY_BIT_IDENTICAL, False, f"on the witness {shape}: {what}"]
    first_before, first_after = before.output[..., :1, :], after.output[..., :1, :]
    later = max_abs_diff(before.output[..., 1:, :], after.output[..., 1:, :])
    measurements["first_query_original_vs_fixed_max_diff"] = max_abs_diff(first_before, first_after)
    measurements["later_queries_original_vs_fixed_max_diff"] = later
    if bit_identical(first_before, first_after):
        why = f"query 0 of {shape} is torch.equal (it sees one key); later queries differ by {later:.3e}"
        return [CAUSAL_FIRST_QUERY_BIT_IDENTICAL, True, why]
    diff = measurements["first_query_original_vs_fixed_max_diff"]
    return [CAUSAL_FIRST_QUERY_BIT_IDENTICAL, False, f"query 0 of {shape} differs: max|diff|={diff:.3e}"]
