"""Recipe for ATN203 all-masked-row-nan: a ``-inf`` fill that can cover a whole row of scores.

softmax over a row of ``-inf`` is NaN: an empty sequence, or left padding under a causal mask,
gives NaN outputs, and the NaN reaches every parameter's gradient. The fix zeroes fully masked rows
after the softmax, ``softmax(s).masked_fill(M.all(dim=-1, keepdim=True), 0.0)`` (M the
``masked_fill`` mask), which is what SDPA 2.13 returns there, and -- because the ``-inf`` came from
``masked_fill``, whose backward zeroes the masked positions -- keeps every gradient finite. The fixer
refuses additive ``-inf`` masks: there the NaN reaches q/k gradients through the addition whatever
is done after the softmax (docs/verify.md); this recipe is how that is shown.

Witness: lengths {T, T-2, 1, 0} padded to T = 7, right and left, garbage in the padded slots drawn
twice. The entry is ``forward(x, <mask>)`` or, with ``params["call"] = "qkv"``, ``f(q, k, v, <mask>)``
(see :mod:`attnlint.verify.recipes._masking`); ``params["causal"]`` says the code also applies a
causal mask (then left padding empties rows too); ``params["padded_queries"]`` that it masks
padded queries as well as padded keys (``pad[:, :, None] | pad[:, None, :]``: every padded query's
row is empty, and the reference masks it whole too). Evidence, per device and dtype:

1. ``witness_original_nan`` -- the original's output has NaN rows (``*_fully_masked_rows`` of them
   are fully masked by the reference mask) and NaN gradients: the bug is visible.
2. ``fixed_output_finite``.
3. ``fixed_matches_float64_naive_kernel`` / ``fixed_matches_float64_sdpa`` -- *every* row, fully
   masked ones included (0, as SDPA), within FlashAttention's bound of the float64 reference.
4. ``fixed_gradients_finite`` -- backward of a random upstream over every output: the gradients
   w.r.t. q, k, v (or x and every parameter) are finite.
5. ``fixed_gradient_matches_float64_reference`` -- those gradients against the float64 reference's
   (fully masked rows: 0): for q/k/v entries dq, dk, dv; for modules dx and the gradient of each
   q/k/v projection's output (the module's "q, k, v gradients").
6. ``fixed_ignores_padding_garbage`` -- the real tokens' outputs are ``torch.equal`` across garbage.
7. ``no_empty_rows_bit_identical`` -- right padding, lengths {T, T-2, 1, 3} (no padding at all
   where padded queries are masked): no row is fully masked, the old code was right, and the fixed outputs and input gradients are ``torch.equal``.

Wrong fixes this rejects: ``nan_to_num`` after an additive ``-inf`` mask (4-5 fail: NaN q/k
gradients), a finite fill such as ``-1e9`` (3 fails: fully masked rows become mean(V), not 0).
Runs only inside the verification child process.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping

import torch
from torch import nn

from attnlint.verify.recipes._masking import (
    FIXED_GRADIENT_MATCHES,
    FIXED_IGNORES_GARBAGE,
    FIXED_MATCHES_NAIVE,
    FIXED_MATCHES_SDPA,
    SIDES,
    WITNESS_LENGTHS,
    WITNESS_TOKENS,
    Context,
    SpecGolden,
    entry_gradients,
    finite,
    find_protocol,
    flash_rule,
    golden_gradients,
    join,
    make_golden,
    make_witness,
    max_abs_diff,
    nan_rows,
    references,
    rule_on,
    run_entry,
    run_recipe,
    upstream,
)

RULE_CODE = "ATN203"

ORIGINAL_NAN = "witness_original_nan"
FIXED_FINITE = "fixed_output_finite"
FIXED_GRADIENTS_FINITE = "fixed_gradients_finite"
NO_EMPTY_ROWS_BIT_IDENTICAL = "no_empty_rows_bit_identical"
NO_EMPTY_ROWS_LENGTHS = (WITNESS_TOKENS, WITNESS_TOKENS - 2, 1, 3)


def run(request: Mapping[str, Any]) -> List[Dict[str, Any]]:
    return run_recipe(request, RULE_CODE, _verify_on)


def fully_masked_rows(keep: torch.Tensor, causal: bool, per_row: int, padded_queries: bool = False) -> int:
    """Query rows that may attend to no key at all under the reference mask."""
    n = keep.shape[1]
    allowed = keep[:, None, :].expand(-1, n, -1)
    if padded_queries:
        allowed = allowed & keep[:, :, None]
    if causal:
        allowed = allowed & torch.ones(n, n, dtype=torch.bool, device=keep.device).tril()
    return int((~allowed.any(dim=-1)).sum()) * per_row


def nonfinite(tensors) -> int:
    return int(sum(int((~torch.isfinite(t)).sum()) for t in tensors))


def _verify_on(ctx: Context) -> None:
    protocol = find_protocol(ctx.original, ctx.params, needs_mask=True)
    golden = make_golden(ctx, protocol)
    causal = bool(ctx.params.get("causal", False))
    padded_queries = bool(ctx.params.get("padded_queries", False))
    is_module = isinstance(ctx.original, nn.Module)
    witnesses = {
        side: [make_witness(ctx, protocol, golden, WITNESS_LENGTHS, side, garbage=g) for g in (0, 1)] for side in SIDES
    }
    per_row = int(witnesses["right"][0].inputs[0].shape[1]) if protocol.call == "qkv" else 1  # heads
    where = f"{protocol.describe()}; {golden.describe}"
    hooks = _projection_modules(golden)

    # 1. The original: NaN rows and NaN gradients on the witness.
    parts, nan_seen, ran = [], False, True
    for side, (w0, _) in witnesses.items():
        before = run_entry(protocol, ctx.original, w0)
        if not before.ok:
            ran = False
            parts.append(f"{side}: original raises {before.describe_error()}")
            continue
        expected = fully_masked_rows(w0.keep, causal, per_row, padded_queries)
        rows = nan_rows(before.value)
        ctx.measure(f"{side}_fully_masked_rows", expected)
        ctx.measure(f"{side}_original_nan_rows", rows)
        g64 = upstream(tuple(before.value.shape), ctx.seed, ctx.device)
        grads = []
        try:
            inputs_grads, param_grads, _ = entry_gradients(protocol, ctx.original, w0, g64, params_too=is_module)
            grads = inputs_grads + list(param_grads.values())
            bad = nonfinite(grads)
            ctx.measure(f"{side}_original_nonfinite_grads", bad)
            grad_text = f"{bad} non-finite gradient entries"
        except Exception as exc:  # noqa: BLE001
            grad_text = f"backward raises {type(exc).__name__}: {exc}"
        nan_seen |= rows > 0
        parts.append(f"{side} {w0.shape}: {rows} NaN output rows ({expected} fully masked rows); {grad_text}")
    ctx.add(
        ORIGINAL_NAN,
        ran and nan_seen,
        ("" if nan_seen else "bug NOT visible: ") + f"lengths {list(WITNESS_LENGTHS)}, causal={causal}: " + join(parts),
    )

    # 2-3, 6. The fixed forward: finite, equal to the reference on every row, blind to garbage.
    finite_parts, naive_parts, sdpa_parts, garbage_parts = [], [], [], []
    finite_ok = naive_ok = sdpa_ok = garbage_ok = True
    fixed_out: Dict[str, torch.Tensor] = {}
    for side, (w0, w1) in witnesses.items():
        after, after_other = run_entry(protocol, ctx.fixed, w0), run_entry(protocol, ctx.fixed, w1)
        if not after.ok or not after_other.ok:
            text = f"{side}: fixed raises {(after if not after.ok else after_other).describe_error()}"
            for p in (finite_parts, naive_parts, sdpa_parts, garbage_parts):
                p.append(text)
            finite_ok = naive_ok = sdpa_ok = garbage_ok = False
            continue
        fixed_out[side] = after.value
        is_finite = finite(after.value) and finite(after_other.value)
        finite_ok &= is_finite
        ctx.measure(f"{side}_fixed_nan_rows", nan_rows(after.value))
        finite_parts.append(f"{side}: {nan_rows(after.value)} NaN rows, {'all finite' if is_finite else 'NOT finite'}")
        refs = references(golden, w0)
        naive, sdpa = rule_on(after.value, refs, lambda t: t)
        ctx.measure(f"{side}_fixed_max_error", naive.max_error)
        ctx.measure(f"{side}_fixed_bound", naive.bound)
        ctx.measure(f"{side}_fixed_sdpa_max_error", sdpa.max_error)
        naive_ok &= naive.passed
        sdpa_ok &= sdpa.passed
        naive_parts.append(f"{side}: {naive.describe()}")
        sdpa_parts.append(f"{side}: {sdpa.describe()}")
        same = torch.equal(w0.real(after.value), w1.real(after_other.value))
        garbage_ok &= same
        garbage_parts.append(f"{side}: real outputs {'torch.equal' if same else 'DIFFER'} across two garbage draws")
    ctx.add(FIXED_FINITE, finite_ok, join(finite_parts))
    ctx.add(FIXED_MATCHES_NAIVE, naive_ok, f"every row (fully masked rows = 0), {where}: " + join(naive_parts))
    ctx.add(FIXED_MATCHES_SDPA, sdpa_ok, "every row: " + join(sdpa_parts))

    # 4-5. The fixed backward: finite, and equal to the reference's.
    fin_parts, grad_parts = [], []
    fin_ok = grad_ok = True
    for side, (w0, _) in witnesses.items():
        if side not in fixed_out:
            fin_ok = grad_ok = False
            fin_parts.append(f"{side}: fixed raises"), grad_parts.append(f"{side}: fixed raises")
            continue
        g64 = upstream(tuple(fixed_out[side].shape), ctx.seed, ctx.device)
        try:
            inputs_grads, param_grads, hooked = entry_gradients(
                protocol, ctx.fixed, w0, g64, params_too=is_module, hooks=hooks
            )
        except Exception as exc:  # noqa: BLE001
            fin_ok = grad_ok = False
            text = f"{side}: backward raises {type(exc).__name__}: {exc}"
            fin_parts.append(text), grad_parts.append(text)
            continue
        labels = ["dx"] if protocol.call == "x" else ["dq", "dk", "dv"]
        bad_inputs = nonfinite(inputs_grads)
        bad_params = {n: nonfinite([g]) for n, g in param_grads.items() if nonfinite([g])}
        ctx.measure(f"{side}_fixed_nonfinite_grads", bad_inputs + sum(bad_params.values()))
        fin_ok &= bad_inputs == 0 and not bad_params
        text = f"{side}: {'/'.join(labels)} {'finite' if bad_inputs == 0 else f'{bad_inputs} non-finite entries'}"
        if is_module:
            text += (
                f", {len(param_grads)} parameter gradients finite"
                if not bad_params
                else f", non-finite parameter gradients {bad_params}"
            )
        fin_parts.append(text)

        ref_grads = golden_gradients(golden, w0, g64, torch.float64)
        plain_grads = golden_gradients(golden, w0, g64, None)
        for label, gf, gr, gp in zip(labels, inputs_grads, ref_grads, plain_grads):
            cmp = flash_rule(gf, gr, gp)
            ctx.measure(f"{side}_fixed_{label}_max_error", cmp.max_error)
            ctx.measure(f"{side}_{label}_bound", cmp.bound)
            grad_ok &= cmp.passed
            grad_parts.append(f"{side} {label}: {cmp.describe()}")
        if hooked:
            for name, cmp in _projection_grad_comparisons(golden, w0, g64, hooked).items():
                ctx.measure(f"{side}_fixed_d{name}_max_error", cmp.max_error)
                grad_ok &= cmp.passed
                grad_parts.append(f"{side} d({name} output): {cmp.describe()}")
    ctx.add(FIXED_GRADIENTS_FINITE, fin_ok, join(fin_parts))
    ctx.add(FIXED_GRADIENT_MATCHES, grad_ok, "every row: " + join(grad_parts))
    ctx.add(FIXED_IGNORES_GARBAGE, garbage_ok, join(garbage_parts))

    # 7. No fully masked row: the old code was right, the fix must not change a bit. Where padded
    # queries are masked too, any padding empties rows: the batch is then unpadded.
    no_empty = (WITNESS_TOKENS,) * len(NO_EMPTY_ROWS_LENGTHS) if padded_queries else NO_EMPTY_ROWS_LENGTHS
    w = make_witness(ctx, protocol, golden, no_empty, "right")
    ctx.measure("no_empty_rows_fully_masked_rows", fully_masked_rows(w.keep, causal, per_row, padded_queries))
    before, after = run_entry(protocol, ctx.original, w), run_entry(protocol, ctx.fixed, w)
    if not before.ok or not after.ok:
        what = before.describe_error() if not before.ok else after.describe_error()
        ctx.add(NO_EMPTY_ROWS_BIT_IDENTICAL, False, f"right-padded lengths {list(no_empty)}: {what}")
        return
    g64 = upstream(tuple(before.value.shape), ctx.seed, ctx.device)
    grads_before, _, _ = entry_gradients(protocol, ctx.original, w, g64)
    grads_after, _, _ = entry_gradients(protocol, ctx.fixed, w, g64)
    same_out = torch.equal(before.value, after.value)
    same_grad = all(torch.equal(a, b) for a, b in zip(grads_before, grads_after))
    ctx.measure("no_empty_rows_max_diff", max_abs_diff(before.value, after.value))
    ctx.add(
        NO_EMPTY_ROWS_BIT_IDENTICAL,
        same_out and same_grad,
        f"right-padded lengths {list(no_empty)} (no fully masked row): outputs "
        f"{'torch.equal' if same_out else 'DIFFER'}, input gradients {'torch.equal' if same_grad else 'DIFFER'}",
    )


def _projection_modules(golden) -> List[str]:
    """The q/k/v projections that are submodules (their outputs can be hooked)."""
    if not isinstance(golden, SpecGolden):
        return []
    spec = golden.spec
    names: List[str] = []
    for p in (spec.q, spec.k, spec.v):
        if p.layout == "module" and p.attr not in names:
            names.append(p.attr)
    return names


def _projection_grad_comparisons(golden: SpecGolden, w, g64, hooked: Mapping[str, torch.Tensor]):
    """FlashAttention's rule on the gradient of each projection's output (fused: split q/k/v)."""
    grads = {}
    for dtype in (torch.float64, None):
        with torch.enable_grad():
            compute = w.inputs[0].dtype if dtype is None else dtype
            projections = golden.projections(w.inputs[0], compute)
            raw = {name: t.detach().requires_grad_(True) for name, t in projections.items()}
            out = golden.from_projections(raw, w.keep, compute, "naive")
            names = [n for n in raw if n in hooked]
            got = torch.autograd.grad(out, [raw[n] for n in names], g64.to(out.dtype), allow_unused=True)
        grads[dtype] = {n: (g if g is not None else torch.zeros_like(raw[n])) for n, g in zip(names, got)}
    return {name: flash_rule(hooked[name], grads[torch.float64][name], grads[None][name]) for name in grads[None]}
