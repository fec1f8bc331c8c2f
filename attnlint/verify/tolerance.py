"""How the harness decides that two outputs agree.

Three rules, each for its own situation (see docs/verify.md):

* **Old code was already right** (2-D ``.T``, T == context_length, no padding): the fix must not
  change a single bit, so compare with :func:`torch.equal`, never a tolerance.
* **Golden reference**: always float64, computed from the *same* rounded inputs and parameters the
  code under test saw (upcast, as FlashAttention's tests upcast fp16 inputs to fp32).
* **FlashAttention's rule** for the code under test: ``max|out - ref| <= 2 * max|out_pt - ref| +
  floor``, where ``out_pt`` is a plain, same-dtype implementation. Plain user code in fp16/bf16 has
  3-5x the error of SDPA's math path (which keeps fp32 intermediates), so a same-dtype *SDPA*
  reference or ``assert_close`` defaults would reject correct user code; a same-dtype naive kernel
  sets the bar at what such code can reach. The floor is FA3/FA4's one rounding step,
  ``2 * max|ref + 0.3 - 0.3 - ref|`` in the test dtype. In float64 alone it is raised to a few
  machine epsilons of the output's magnitude: there ``out_pt`` *is* the golden computation, so its
  error is 0 and the rule would otherwise demand near bit equality from code that merely divides
  where the reference multiplies.

Imported only in the verification child process (and tests).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Dict, Iterator, Tuple

import torch

# Which dtypes a fix is verified in, per device. CPU: float64 (exact-ish) and float32 (what users
# run). CUDA: float32 with TF32 off (TF32 would make the reference itself 1e-3 wrong), fp16, bf16.
DTYPES_BY_DEVICE: Dict[str, Tuple[str, ...]] = {
    "cpu": ("float64", "float32"),
    "cuda": ("float32", "float16", "bfloat16"),
}

GOLDEN_DTYPE = torch.float64
FA_SLOPE = 2.0  # FlashAttention: at most twice the error of a plain same-dtype implementation
# In float64 only: the floor is at least this many epsilons of max|ref| (see rounding_floor). Measured
# on the seed (d = 6): correct code is 0.1-0.35 of the resulting bound, the `.T` bug ~1e14 times it.
EPS_FLOOR_MULTIPLIER = 8.0


def dtype_from_name(name: str) -> torch.dtype:
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise ValueError(f"not a floating dtype: {name!r}")
    return dtype


@dataclass(frozen=True)
class Comparison:
    """One application of FlashAttention's rule."""

    max_error: float  # max|out - ref|
    plain_error: float  # max|out_pt - ref|
    floor: float
    bound: float  # FA_SLOPE * plain_error + floor
    same_shape: bool

    @property
    def passed(self) -> bool:
        return self.same_shape and self.max_error <= self.bound

    @property
    def ratio(self) -> float:
        """How many bounds away ``out`` is: <= 1 passes; a real bug is typically >> 100."""
        return self.max_error / self.bound if self.bound > 0 else float("inf")

    def describe(self) -> str:
        if not self.same_shape:
            return "output shape differs from the reference"
        return (
            f"max|out-ref|={self.max_error:.3e} vs bound {self.bound:.3e} "
            f"(= {FA_SLOPE:g}*plain {self.plain_error:.3e} + floor {self.floor:.3e}; ratio {self.ratio:.3g})"
        )


def max_abs_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    """max|a - b| in float64; NaN anywhere (or NaN in one only) counts as infinitely far."""
    a64, b64 = a.detach().to(torch.float64), b.detach().to(torch.float64)
    diff = (a64 - b64).abs()
    both_nan = torch.isnan(a64) & torch.isnan(b64)
    diff = torch.where(both_nan, torch.zeros_like(diff), diff)
    diff = torch.nan_to_num(diff, nan=float("inf"))
    return float(diff.max()) if diff.numel() else 0.0


def rounding_floor(ref: torch.Tensor, dtype: torch.dtype) -> float:
    """The absolute floor of the rule for outputs in ``dtype`` (see the module docstring).

    FA3/FA4's ``2 * max|r + 0.3 - 0.3 - r|`` with ``r`` the reference rounded to ``dtype``. Only in
    the golden dtype itself (float64), where the plain kernel's error is structurally 0, is it
    raised to ``EPS_FLOOR_MULTIPLIER`` epsilons of ``max(1, max|ref|)``; lower precisions keep
    FlashAttention's floor unchanged, so the bound there is exactly FlashAttention's.
    """
    if not ref.numel():
        return 0.0
    r = ref.detach().to(dtype)
    fa3 = 2.0 * float(((r + 0.3 - 0.3) - r).abs().to(torch.float64).nan_to_num(0.0).max())
    if dtype != GOLDEN_DTYPE:
        return fa3
    magnitude = float(ref.detach().abs().to(torch.float64).nan_to_num(0.0).max())
    return max(fa3, EPS_FLOOR_MULTIPLIER * torch.finfo(dtype).eps * max(1.0, magnitude))


def flash_rule(out: torch.Tensor, ref: torch.Tensor, out_plain: torch.Tensor) -> Comparison:
    """FlashAttention's rule: ``max|out-ref| <= 2*max|out_plain-ref| + floor``.

    ``ref`` is the float64 golden output; ``out_plain`` a plain implementation in ``out``'s dtype.
    """
    same_shape = tuple(out.shape) == tuple(ref.shape)
    plain_error = max_abs_diff(out_plain, ref)
    floor = rounding_floor(ref, out.dtype)
    bound = FA_SLOPE * plain_error + floor
    error = max_abs_diff(out, ref) if same_shape else float("inf")
    return Comparison(max_error=error, plain_error=plain_error, floor=floor, bound=bound, same_shape=same_shape)


def bit_identical(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Where the old code was already right: the new code must give the very same bits."""
    return a.dtype == b.dtype and torch.equal(a, b)


@contextlib.contextmanager
def exact_fp32_matmul() -> Iterator[None]:
    """Turn TF32 off for the duration (CUDA fp32 comparisons); restores the previous settings."""
    matmul_tf32 = torch.backends.cuda.matmul.allow_tf32
    cudnn_tf32 = torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = matmul_tf32
        torch.backends.cudnn.allow_tf32 = cudnn_tf32
