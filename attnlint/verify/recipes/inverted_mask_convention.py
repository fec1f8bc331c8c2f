"""Recipe for ATN205 inverted-mask-convention: a mask given in the opposite convention of its API.

SDPA's bool ``attn_mask`` reads True = may attend; ``nn.MultiheadAttention``'s ``key_padding_mask``
reads True = padding (ignored). A ``triu(diagonal=1)`` "future" mask given to SDPA makes every query
attend only to the *future*; a Hugging Face ``attention_mask == 1`` given as ``key_padding_mask``
masks the real tokens and attends to the padding. Both run without an error. The fix is ``~mask``.

Two kinds of entry, told apart by whether ``forward`` takes a mask argument (or
``params["kind"]``):

* ``causal`` -- ``forward(x)`` builds the mask itself. Witness (batch 2, 7 tokens) and one token;
  the reference is causal (``params["causal"]`` defaults to True here) attention from the module's
  own projections (:mod:`attnlint.verify.recipes._score_softmax`). Checks:
  ``witness_original_wrong`` (the original runs and is outside FlashAttention's bound of the
  float64 reference), ``fixed_matches_float64_naive_kernel``, ``fixed_matches_float64_sdpa``,
  ``fixed_gradient_matches_float64_reference`` (on the witness and on one token).
* ``padding`` -- ``forward(x, <mask>)``: the padded-batch witnesses and checks of ATN202 (lengths
  {T, T-2, 1, 0}, right and left padding, garbage drawn twice, real tokens judged), without the two
  that need the original to be right somewhere (it is not: with no padding it masks every key).

A wrong fix such as ``mask.float()`` (an additive 0/1 bias that masks nothing) fails the reference
checks. Runs only inside the verification child process.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping

import torch

from attnlint.verify.kernels import naive_attention, sdpa_reference
from attnlint.verify.recipes import _score_softmax as common
from attnlint.verify.tolerance import flash_rule
from attnlint.verify.recipes._masking import (
    ORIGINAL_WRONG,
    FIXED_GRADIENT_MATCHES,
    FIXED_MATCHES_NAIVE,
    FIXED_MATCHES_SDPA,
    Context,
    attempt,
    find_protocol,
    first_tensor,
    join,
    nan_rows,
    padded_attention_checks,
    randn,
    run_recipe,
)

RULE_CODE = "ATN205"
WITNESS = {"batch": 2, "tokens": 7}


def run(request: Mapping[str, Any]) -> List[Dict[str, Any]]:
    return run_recipe(request, RULE_CODE, _verify_on)


def _verify_on(ctx: Context) -> None:
    if (
        not ctx.is_module
        and ctx.params.get("call") == "qkv"
        and not find_protocol(ctx.original, ctx.params, needs_mask=False).mask_arg
    ):
        _causal_function_checks(ctx)
        return
    kind = ctx.params.get("kind")
    if kind is None:
        kind = "padding" if find_protocol(ctx.original, ctx.params, needs_mask=False).mask_arg else "causal"
    ctx.measure("padding_kind", kind == "padding")
    if kind == "padding":
        padded_attention_checks(ctx, unpadded_reference=False, no_padding_identical=False)
    elif kind == "causal":
        _causal_checks(ctx)
    else:
        raise ValueError(f"params['kind'] must be 'causal' or 'padding', not {kind!r}")


def _causal_checks(ctx: Context) -> None:
    params = dict(ctx.params)
    params.setdefault("causal", True)
    spec = common.build_spec(ctx.original, params)
    given = dict(WITNESS, **(ctx.params.get("witness") or {}))
    inputs = {
        "witness": randn((given["batch"], given["tokens"], spec.d_in), ctx.seed, ctx.device, ctx.dtype),
        "single_token": randn((given["batch"], 1, spec.d_in), ctx.seed, ctx.device, ctx.dtype),
    }
    refs = {name: common.references(ctx.original, x, spec) for name, x in inputs.items()}

    before = common.run_module(ctx.original, inputs["witness"])
    shape = tuple(inputs["witness"].shape)
    if before.error is not None:
        ctx.add(ORIGINAL_WRONG, False, f"original raises on the witness {shape}: {before.describe_error()}")
    else:
        cmp = common.flash_rule(before.output, refs["witness"].golden, refs["witness"].plain)
        ctx.measure("witness_original_max_error", cmp.max_error)
        ctx.measure("witness_original_ratio", cmp.ratio)
        ctx.measure("witness_original_nan_rows", nan_rows(before.output))
        where = f"witness {shape}, {spec.describe()}"
        if cmp.passed:
            ctx.add(ORIGINAL_WRONG, False, f"bug NOT visible on the {where}: {cmp.describe()}")
        else:
            ctx.add(
                ORIGINAL_WRONG,
                True,
                f"original runs on the {where} but {cmp.describe()}; {nan_rows(before.output)} rows NaN",
            )

    naive_parts, sdpa_parts, grad_parts = [], [], []
    naive_ok = sdpa_ok = grad_ok = True
    for name, x in inputs.items():
        after = common.run_module(ctx.fixed, x)
        if after.error is not None:
            text = f"{name}: fixed raises {after.describe_error()}"
            naive_parts.append(text), sdpa_parts.append(text), grad_parts.append(text)
            naive_ok = sdpa_ok = grad_ok = False
            continue
        naive = common.flash_rule(after.output, refs[name].golden, refs[name].plain)
        sdpa = common.flash_rule(after.output, refs[name].sdpa, refs[name].plain)
        ctx.measure(f"{name}_fixed_max_error", naive.max_error)
        ctx.measure(f"{name}_fixed_bound", naive.bound)
        ctx.measure(f"{name}_fixed_sdpa_max_error", sdpa.max_error)
        naive_ok &= naive.passed
        sdpa_ok &= sdpa.passed
        naive_parts.append(f"{name} {tuple(x.shape)}: {naive.describe()}")
        sdpa_parts.append(f"{name} {tuple(x.shape)}: {sdpa.describe()}")
        try:
            with torch.enable_grad():
                grad = common.gradient_comparison(ctx.fixed, ctx.original, x, spec, ctx.seed)
        except Exception as exc:  # noqa: BLE001
            grad_ok = False
            grad_parts.append(f"{name}: backward raises {type(exc).__name__}: {exc}")
            continue
        ctx.measure(f"{name}_fixed_grad_max_error", grad.max_error)
        ctx.measure(f"{name}_grad_bound", grad.bound)
        grad_ok &= grad.passed
        grad_parts.append(f"{name}: {grad.describe()}")
    ctx.add(FIXED_MATCHES_NAIVE, naive_ok, f"{spec.describe()}: " + join(naive_parts))
    ctx.add(FIXED_MATCHES_SDPA, sdpa_ok, join(sdpa_parts))
    ctx.add(FIXED_GRADIENT_MATCHES, grad_ok, join(grad_parts))


def _causal_function_checks(ctx: Context) -> None:
    """`f(q, k, v)` that builds its own causal mask: compare with causal attention on q, k, v."""
    given = dict(WITNESS, **(ctx.params.get("witness") or {}))
    shape = (given["batch"], 2, given["tokens"], 8)
    q, k, v = (randn(shape, ctx.seed + i, ctx.device, ctx.dtype) for i in range(3))
    golden = naive_attention(q, k, v, causal=True)
    plain = naive_attention(q, k, v, causal=True, compute_dtype=None)
    sdpa = sdpa_reference(q.double(), k.double(), v.double(), causal=True)
    before = attempt(lambda: first_tensor(ctx.original(q, k, v)))
    if before.error is not None:
        ctx.add(ORIGINAL_WRONG, False, f"original raises: {before.error}")
    else:
        cmp = flash_rule(before.value, golden, plain)
        ctx.measure("witness_original_max_error", cmp.max_error)
        ctx.add(ORIGINAL_WRONG, not cmp.passed, f"original on q/k/v {shape}: {cmp.describe()}")
    after = attempt(lambda: first_tensor(ctx.fixed(q, k, v)))
    if after.error is not None:
        for name in (FIXED_MATCHES_NAIVE, FIXED_MATCHES_SDPA):
            ctx.add(name, False, f"fixed raises: {after.error}")
        return
    naive_cmp, sdpa_cmp = flash_rule(after.value, golden, plain), flash_rule(after.value, sdpa, plain)
    ctx.measure("witness_fixed_max_error", naive_cmp.max_error)
    ctx.add(FIXED_MATCHES_NAIVE, naive_cmp.passed, f"q/k/v {shape}: {naive_cmp.describe()}")
    ctx.add(FIXED_MATCHES_SDPA, sdpa_cmp.passed, f"q/k/v {shape}: {sdpa_cmp.describe()}")
