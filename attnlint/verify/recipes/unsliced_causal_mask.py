"""Recipe for ATN204 unsliced-causal-mask: a mask buffer built at ``context_length``, used whole.

The bug is a crash, not a wrong number: the buffer is (context_length, context_length) and the
scores are (T, T), so the code only runs when every input is exactly ``context_length`` long, which
is how it is usually tested. The safe fix slices the buffer to the current lengths,
``self.mask[..., :S.size(-2), :S.size(-1)]``. Witnesses (docs/verify.md: the
bug only shows when T < context_length), per device and dtype:

1. ``short_input_original_raises_fixed_runs`` -- at T = 1, context_length // 2 and
   context_length - 1 the original raises and the fixed code runs to a finite output of the right
   shape.
2. ``fixed_matches_float64_naive_kernel`` / ``fixed_matches_float64_sdpa`` /
   ``fixed_gradient_matches_float64_reference`` -- at those lengths and at T = context_length, the
   fixed output (and its gradient w.r.t. the input) satisfies FlashAttention's rule against the
   float64 causal reference from the module's own projections
   (:mod:`attnlint.verify.recipes._score_softmax`; causal folded into a bool mask).
3. ``full_length_bit_identical`` -- at T = context_length the old code was right: the fixed output
   is ``torch.equal`` to the original's.
4. ``over_length_both_raise`` -- at T = context_length + 1 both raise (a slice must not silently
   accept inputs longer than the buffer).

``context_length`` is the size of the module's square mask buffer (``params["context_length"]``
overrides). A wrong slice such as ``[:T - 1]`` fails 1-2 (it raises); one that runs but takes the
wrong block (``[:T, -T:]``) passes 3 -- which is why T < context_length is the witness -- and fails 2.
Params: ``init_kwargs``, ``causal`` (default True), and those of ``_score_softmax``. Runs only inside
the verification child process.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping

import torch

from attnlint.verify.recipes import _score_softmax as common
from attnlint.verify.recipes._masking import (
    FIXED_GRADIENT_MATCHES,
    FIXED_MATCHES_NAIVE,
    FIXED_MATCHES_SDPA,
    Context,
    join,
    max_abs_diff,
    randn,
    run_recipe,
)

RULE_CODE = "ATN204"

SHORT_INPUT = "short_input_original_raises_fixed_runs"
FULL_LENGTH_BIT_IDENTICAL = "full_length_bit_identical"
OVER_LENGTH_BOTH_RAISE = "over_length_both_raise"
BATCH = 2


def run(request: Mapping[str, Any]) -> List[Dict[str, Any]]:
    return run_recipe(request, RULE_CODE, _verify_on)


def context_length(module: torch.nn.Module, params: Mapping[str, Any]) -> int:
    if params.get("context_length") is not None:
        return int(params["context_length"])
    sizes = {
        name: int(b.shape[-1])
        for name, b in module.named_buffers()
        if b.dim() >= 2 and b.shape[-1] == b.shape[-2] and b.shape[-1] > 1
    }
    if not sizes:
        raise LookupError("the module has no square mask buffer; pass params['context_length']")
    return max(sizes.values())


def _verify_on(ctx: Context) -> None:
    params = dict(ctx.params)
    params.setdefault("causal", True)
    spec = common.build_spec(ctx.original, params)
    n = context_length(ctx.original, params)
    ctx.measure("context_length", n)
    shorts = sorted({1, max(1, n // 2), n - 1})
    x = {t: randn((BATCH, t, spec.d_in), ctx.seed, ctx.device, ctx.dtype) for t in shorts + [n, n + 1]}

    # 1. Shorter than the buffer: the original raises, the fixed code runs.
    parts, ok = [], True
    for t in shorts:
        before, after = common.run_module(ctx.original, x[t]), common.run_module(ctx.fixed, x[t])
        text = f"T={t}: original " + (f"raises {before.describe_error()}" if before.error else "RUNS")
        ok &= before.error is not None
        if after.error is not None:
            ok = False
            text += f"; fixed raises {after.describe_error()}"
        else:
            right = tuple(after.output.shape[:-1]) == (BATCH, t) and bool(torch.isfinite(after.output).all())
            ok &= right
            text += f"; fixed runs -> {tuple(after.output.shape)}" + ("" if right else " (wrong shape or not finite)")
        parts.append(text)
    ctx.measure("short_inputs_original_raised", ok)
    ctx.add(SHORT_INPUT, ok, f"context_length={n}: " + join(parts))

    # 2. The fixed code against the float64 causal reference, at every length it should accept.
    naive_parts, sdpa_parts, grad_parts = [], [], []
    naive_ok = sdpa_ok = grad_ok = True
    for t in shorts + [n]:
        after = common.run_module(ctx.fixed, x[t])
        if after.error is not None:
            text = f"T={t}: fixed raises {after.describe_error()}"
            naive_parts.append(text), sdpa_parts.append(text), grad_parts.append(text)
            naive_ok = sdpa_ok = grad_ok = False
            continue
        refs = common.references(ctx.original, x[t], spec)
        naive = common.flash_rule(after.output, refs.golden, refs.plain)
        sdpa = common.flash_rule(after.output, refs.sdpa, refs.plain)
        ctx.measure(f"T{t}_fixed_max_error", naive.max_error)
        ctx.measure(f"T{t}_fixed_bound", naive.bound)
        ctx.measure(f"T{t}_fixed_sdpa_max_error", sdpa.max_error)
        naive_ok &= naive.passed
        sdpa_ok &= sdpa.passed
        naive_parts.append(f"T={t}: {naive.describe()}")
        sdpa_parts.append(f"T={t}: {sdpa.describe()}")
        try:
            with torch.enable_grad():
                grad = common.gradient_comparison(ctx.fixed, ctx.original, x[t], spec, ctx.seed)
        except Exception as exc:  # noqa: BLE001
            grad_ok = False
            grad_parts.append(f"T={t}: backward raises {type(exc).__name__}: {exc}")
            continue
        ctx.measure(f"T{t}_fixed_grad_max_error", grad.max_error)
        grad_ok &= grad.passed
        grad_parts.append(f"T={t}: {grad.describe()}")
    ctx.add(FIXED_MATCHES_NAIVE, naive_ok, f"{spec.describe()}: " + join(naive_parts))
    ctx.add(FIXED_MATCHES_SDPA, sdpa_ok, join(sdpa_parts))
    ctx.add(FIXED_GRADIENT_MATCHES, grad_ok, join(grad_parts))

    # 3. At T == context_length the old code was right: the very same bits.
    before, after = common.run_module(ctx.original, x[n]), common.run_module(ctx.fixed, x[n])
    if before.error is not None or after.error is not None:
        what = before.describe_error() if before.error is not None else after.describe_error()
        ctx.add(FULL_LENGTH_BIT_IDENTICAL, False, f"T={n}: {what}")
    else:
        same = torch.equal(before.output, after.output)
        ctx.measure("full_length_max_diff", max_abs_diff(before.output, after.output))
        ctx.add(
            FULL_LENGTH_BIT_IDENTICAL,
            same,
            f"T=context_length={n}: original and fixed outputs "
            + ("torch.equal" if same else f"differ by {ctx.measurements['full_length_max_diff']:.3e}"),
        )

    # 4. Longer than the buffer: both must raise.
    before, after = common.run_module(ctx.original, x[n + 1]), common.run_module(ctx.fixed, x[n + 1])
    both = before.error is not None and after.error is not None
    original = f"raises {before.describe_error()}" if before.error else "RUNS"
    fixed = f"raises {after.describe_error()}" if after.error else "RUNS (accepts inputs longer than its mask)"
    text = f"T={n + 1}: original {original}; fixed {fixed}"
    ctx.add(OVER_LENGTH_BOTH_RAISE, both, text)
