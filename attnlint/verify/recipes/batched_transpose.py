"""Recipe for ATN103 batched-transpose: ``X.T`` on a batched tensor in a score product.

The bug: ``queries @ keys.T`` with ``keys`` of shape (batch, tokens, d). ``.T`` reverses *all* dims
on a 3-D tensor, giving (d, tokens, batch). The product then crashes for almost every shape, and is
silently wrong exactly on the cube batch = tokens = d (docs/verify.md). The fix
rewrites ``X.T`` to ``X.transpose(-2, -1)``, which equals ``.T`` bit for bit on 2-D input.

Evidence, per device and dtype (CPU: float64, float32; CUDA: float32 with TF32 off, fp16, bf16):

1. ``unbatched_output_bit_identical`` -- on 2-D input (tokens, d_in), where the old code was right,
   the fixed output is ``torch.equal`` to the original (or both raise the same exception type, for
   classes that only take batched input).
2. ``non_cube_batch_original_crashes_fixed_runs`` -- on (2, d+1, d_in) the original raises (the
   exception type is recorded) and the fixed one runs with the right output shape.
3. ``cube_witness_original_silently_wrong`` -- on the cube (d, d, d_in) the original runs without an
   exception but is outside the tolerance of the float64 reference: the bug is real, not a crash.
4. ``fixed_matches_float64_naive_kernel`` / ``fixed_matches_float64_sdpa`` /
   ``fixed_gradient_matches_float64_reference`` -- on the cube and the non-cube batch, the fixed
   output (and its gradient w.r.t. the input) satisfies FlashAttention's rule against the float64
   naive kernel and against float64 SDPA (MATH backend), computed from the module's own
   projections.

Where the reference q/k/v come from: the module's *own parameters*, never the code under test,
through the single-head reference of :mod:`attnlint.verify.recipes._score_softmax` (one head, no
output projection). Projections are found by attribute name (``W_q``/``W_query``/``q_proj``/
``query``/``to_q``/... and the same for k and v, or ``params["projections"] = {"q": "...", "k":
"...", "v": "..."}``); an ``nn.Parameter``/tensor matrix is applied as ``x @ W`` (the (d_in, d_out)
layout of the book code these bugs come from), or as ``x @ W.T`` when ``params["weight_layout"] ==
"out_in"`` or when ``params["d_in"]`` shows that only that orientation fits; an ``nn.Module`` is
called on ``x``, deep-copied to float64 for the golden reference.

A misidentified projection can only make a correct fix fail verification, never let a wrong one
pass. Scope: single-head self-attention ``forward(x)`` with optional causal masking
(``params["causal"]``) and scale (``params["scale"]``, default ``1/sqrt(d)`` of the key dim).

Runs only inside the verification child process.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Tuple

import torch
from torch import nn

from attnlint.verify.recipes import _score_softmax as common
from attnlint.verify.recipes._score_softmax import Outcome, References, Spec, make_input, references, run_module
from attnlint.verify.tolerance import bit_identical

RULE_CODE = "ATN103"

UNBATCHED_BIT_IDENTICAL = "unbatched_output_bit_identical"
NON_CUBE_CRASH = "non_cube_batch_original_crashes_fixed_runs"
CUBE_SILENTLY_WRONG = "cube_witness_original_silently_wrong"
FIXED_MATCHES_NAIVE = common.FIXED_MATCHES_NAIVE
FIXED_MATCHES_SDPA = common.FIXED_MATCHES_SDPA
FIXED_GRADIENT_MATCHES = common.FIXED_GRADIENT_MATCHES

TRANSPOSE_WARNING = "The use of `x.T` on tensors of dimension other than 2"


def build_spec(module: nn.Module, params: Mapping[str, Any]) -> Spec:
    """The shared spec, single-head with no output projection: the scope of this recipe."""
    return common.build_spec(module, {**params, "heads": 1, "out_proj": None})


def witness_shapes(spec: Spec) -> Dict[str, Tuple[int, ...]]:
    d = spec.d_key
    return {
        # Any token count works on 2-D input; d+2 keeps the score matrix non-square w.r.t. d.
        "unbatched": (d + 2, spec.d_in),
        # (b, n, d) @ (d, n, b) needs n == d: tokens = d + 1 makes the original crash for every d.
        "non_cube": (2, d + 1, spec.d_in),
        # batch = tokens = d: the only shape where `.T` runs and is silently wrong.
        "cube": (d, d, spec.d_in),
    }


def run(request: Mapping[str, Any]) -> List[Dict[str, Any]]:
    torch.set_warn_always(True)  # the `.T` deprecation warning is once per process otherwise
    return common.run_trials(request, RULE_CODE, _verify_on, build_spec, "locate the q/k/v projections")


def _run(module: nn.Module, x: torch.Tensor) -> Outcome:
    return run_module(module, x, record_warnings=True)


def _verify_on(trial: common.Trial) -> None:
    original, fixed, spec, checks, measurements = (
        trial.original,
        trial.fixed,
        trial.spec,
        trial.checks,
        trial.measurements,
    )
    inputs = {
        name: make_input(shape, trial.seed, trial.device, trial.dtype) for name, shape in witness_shapes(spec).items()
    }
    checks.append(_check_unbatched(original, fixed, inputs["unbatched"]))
    checks.append(_check_non_cube(original, fixed, inputs["non_cube"], measurements))
    # The references use the *original* module's parameters (the fixed one holds the same values
    # after the strict load): nothing of the code under judgement goes into them.
    refs = {name: references(original, inputs[name], spec) for name in ("non_cube", "cube")}
    checks.append(_check_cube_bug(original, inputs["cube"], refs["cube"], measurements))
    checks.extend(
        common.check_fixed(
            fixed,
            original,
            inputs,
            refs,
            spec,
            trial.seed,
            measurements,
            names=("cube", "non_cube"),
            bound_suffix="bound",
        )
    )
    if trial.device.startswith("cuda"):
        common.measure_sdpa_backends(original, inputs["cube"], spec, refs["cube"], measurements, name="cube")


def _check_unbatched(original: nn.Module, fixed: nn.Module, x: torch.Tensor) -> List[Any]:
    before, after = _run(original, x), _run(fixed, x)
    shape = tuple(x.shape)
    if before.error is not None or after.error is not None:
        if before.error is not None and after.error is not None and type(before.error) is type(after.error):
            why = f"both raise {type(after.error).__name__} on {shape} (batched-only class)"
            return [UNBATCHED_BIT_IDENTICAL, True, why]
        what = (
            f"original: {before.describe_error() if before.error else 'ran'}; "
            f"fixed: {after.describe_error() if after.error else 'ran'}"
        )
        return [UNBATCHED_BIT_IDENTICAL, False, f"behaviour differs on 2-D input {shape}: {what}"]
    assert before.output is not None and after.output is not None
    if bit_identical(before.output, after.output):
        return [UNBATCHED_BIT_IDENTICAL, True, f"torch.equal on 2-D input {shape}"]
    if before.output.shape != after.output.shape:
        why = f"shapes {tuple(before.output.shape)} vs {tuple(after.output.shape)}"
    else:
        why = f"max|diff|={float((before.output.double() - after.output.double()).abs().max()):.3e}"
    return [UNBATCHED_BIT_IDENTICAL, False, f"not torch.equal on 2-D input {shape}: {why}"]


def _check_non_cube(
    original: nn.Module, fixed: nn.Module, x: torch.Tensor, measurements: Dict[str, float]
) -> List[Any]:
    before, after = _run(original, x), _run(fixed, x)
    shape = tuple(x.shape)
    parts = [f"input {shape}"]
    passed = True
    if before.error is not None:
        parts.append(f"original raises {before.describe_error()}")
    else:
        passed = False
        parts.append("original did NOT raise (was the original really buggy?)")
    if after.error is not None:
        passed = False
        parts.append(f"fixed raises {after.describe_error()}")
    else:
        assert after.output is not None
        expected = shape[:-1]
        if tuple(after.output.shape[:-1]) != expected or not bool(torch.isfinite(after.output).all()):
            passed = False
            finite = bool(torch.isfinite(after.output).all())
            parts.append(f"fixed output shape {tuple(after.output.shape)} / finite={finite}")
        else:
            parts.append(f"fixed runs -> {tuple(after.output.shape)}")
    measurements["non_cube_original_raised"] = float(before.error is not None)
    return [NON_CUBE_CRASH, passed, "; ".join(parts)]


def _check_cube_bug(
    original: nn.Module, x: torch.Tensor, refs: References, measurements: Dict[str, float]
) -> List[Any]:
    return common.check_original_silently_wrong(
        CUBE_SILENTLY_WRONG,
        original,
        x,
        refs,
        measurements,
        name="cube",
        ratio=False,
        not_visible="",
        record_warnings=True,
        note=_transpose_note,
    )


def _transpose_note(outcome: Outcome) -> str:
    return "; `.T` deprecation warning seen" if outcome.warned(TRANSPOSE_WARNING) else ""
