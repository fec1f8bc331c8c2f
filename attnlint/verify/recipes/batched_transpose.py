"""Recipe for ATN103 batched-transpose: ``X.T`` on a batched tensor in a score product.

The bug: ``queries @ keys.T`` with ``keys`` of shape (batch, tokens, d). ``.T`` reverses *all* dims
on a 3-D tensor, giving (d, tokens, batch). The product then crashes for almost every shape, and is
silently wrong exactly on the cube batch = tokens = d (shared/notes/verification-facts.md). The fix
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

Where the reference q/k/v come from. We compute them from the module's *own parameters*, not by
hooking the module's forward: hooks only see ``nn.Module`` calls (``x @ self.W_q`` with an
``nn.Parameter`` is invisible to them), and reading q/k/v out of the code under test would make the
reference depend on the code it is judging. The projections are found by attribute name
(``W_q``/``W_query``/``q_proj``/``query``/``to_q``/... and the same for k and v, or
``params["projections"] = {"q": "...", "k": "...", "v": "..."}``):

* an ``nn.Parameter``/tensor matrix is applied as ``x @ W`` (the (d_in, d_out) layout of the book
  code these bugs come from), or as ``x @ W.T`` when ``params["weight_layout"] == "out_in"`` or
  when ``params["d_in"]`` shows that only that orientation fits;
* an ``nn.Module`` (``nn.Linear`` with or without bias, or anything callable) is called on ``x``,
  deep-copied to float64 for the golden reference.

A misidentified projection can only make a correct fix fail verification, never let a wrong one
pass. Scope: single-head self-attention ``forward(x)`` with optional causal masking
(``params["causal"]``) and scale (``params["scale"]``, default ``1/sqrt(d)`` of the key dim).

Runs only inside the verification child process.
"""

from __future__ import annotations

import copy
import contextlib
import math
import warnings
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import torch
from torch import nn

from attnlint.verify.kernels import SDPA_BACKENDS, naive_attention, sdpa_reference
from attnlint.verify.loading import build_pair, constructor_kwargs, load_source
from attnlint.verify.tolerance import (
    DTYPES_BY_DEVICE,
    Comparison,
    bit_identical,
    dtype_from_name,
    exact_fp32_matmul,
    flash_rule,
)

RULE_CODE = "ATN103"

UNBATCHED_BIT_IDENTICAL = "unbatched_output_bit_identical"
NON_CUBE_CRASH = "non_cube_batch_original_crashes_fixed_runs"
CUBE_SILENTLY_WRONG = "cube_witness_original_silently_wrong"
FIXED_MATCHES_NAIVE = "fixed_matches_float64_naive_kernel"
FIXED_MATCHES_SDPA = "fixed_matches_float64_sdpa"
FIXED_GRADIENT_MATCHES = "fixed_gradient_matches_float64_reference"

TRANSPOSE_WARNING = "The use of `x.T` on tensors of dimension other than 2"

# Attribute names of the q/k/v projections, compared lower-cased with underscores removed; earlier
# names win when a module has several.
ROLE_ALIASES: Dict[str, Tuple[str, ...]] = {
    role: (
        f"w{role}", f"w{long}", f"{role}proj", f"{long}proj", f"to{role}", f"{role}linear",
        f"linear{role}", f"{long}linear", f"{long}", f"{role}", f"{long}weight", f"{role}weight",
    )
    for role, long in (("q", "query"), ("k", "key"), ("v", "value"))
}


# ---------------------------------------------------------------------------------------------
# Projections read from the module's own parameters
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Projection:
    """How to compute one of q/k/v from the input with the module's own parameters."""

    attr: str
    layout: str  # "in_out": x @ W; "out_in": x @ W.T; "module": call the submodule

    def apply(self, module: nn.Module, x: torch.Tensor, compute_dtype: torch.dtype) -> torch.Tensor:
        obj = getattr(module, self.attr)
        x = x.to(compute_dtype)
        if self.layout == "module":
            if any(p.dtype != compute_dtype for p in obj.parameters()):
                obj = copy.deepcopy(obj).to(compute_dtype)
            return obj(x)
        weight = obj.to(compute_dtype)
        return x @ weight if self.layout == "in_out" else x @ weight.mT


@dataclass(frozen=True)
class Spec:
    """Everything about the entry the witnesses and references need."""

    q: Projection
    k: Projection
    v: Projection
    d_in: int
    d_key: int
    causal: bool
    scale: Optional[float]


def _normalise(name: str) -> str:
    return name.lower().replace("_", "")


def locate_projections(module: nn.Module, params: Mapping[str, Any]) -> Dict[str, Projection]:
    explicit: Mapping[str, str] = params.get("projections") or {}
    candidates = list(module._parameters) + list(module._modules)
    found: Dict[str, Projection] = {}
    for role, aliases in ROLE_ALIASES.items():
        attr = explicit.get(role)
        if attr is None:
            by_alias = {_normalise(name): name for name in candidates}
            attr = next((by_alias[a] for a in aliases if a in by_alias), None)
        if attr is None:
            raise LookupError(
                f"cannot find the {role} projection among {candidates}; "
                "pass params['projections'] = {'q': ..., 'k': ..., 'v': ...}"
            )
        obj = getattr(module, attr)
        if isinstance(obj, nn.Module):
            found[role] = Projection(attr, "module")
        elif isinstance(obj, torch.Tensor) and obj.dim() == 2:
            found[role] = Projection(attr, _matrix_layout(obj, params))
        else:
            raise LookupError(f"{attr!r} is neither a submodule nor a 2-D weight matrix")
    return found


def _matrix_layout(weight: torch.Tensor, params: Mapping[str, Any]) -> str:
    layout = params.get("weight_layout")
    if layout in ("in_out", "out_in"):
        return layout
    d_in = params.get("d_in")
    if d_in is not None and weight.shape[0] != d_in and weight.shape[1] == d_in:
        return "out_in"
    return "in_out"


def _input_dim(module: nn.Module, q: Projection, params: Mapping[str, Any]) -> int:
    if params.get("d_in") is not None:
        return int(params["d_in"])
    obj = getattr(module, q.attr)
    if q.layout == "module":
        if isinstance(obj, nn.Linear):
            return obj.in_features
        raise LookupError(f"cannot tell the input width of {q.attr!r}; pass params['d_in']")
    return int(obj.shape[0] if q.layout == "in_out" else obj.shape[1])


def build_spec(module: nn.Module, params: Mapping[str, Any]) -> Spec:
    projections = locate_projections(module, params)
    d_in = _input_dim(module, projections["q"], params)
    param = next(iter(module.parameters()), None)
    probe_dtype = param.dtype if param is not None else torch.get_default_dtype()
    with torch.no_grad():  # the key width is whatever the key projection really produces
        d_key = projections["k"].apply(module, torch.zeros(1, d_in, dtype=probe_dtype), probe_dtype).shape[-1]
    scale = params.get("scale")
    return Spec(
        q=projections["q"],
        k=projections["k"],
        v=projections["v"],
        d_in=d_in,
        d_key=int(d_key),
        causal=bool(params.get("causal", False)),
        scale=None if scale is None else float(scale),
    )


# ---------------------------------------------------------------------------------------------
# Running modules and references
# ---------------------------------------------------------------------------------------------
@dataclass
class Outcome:
    output: Optional[torch.Tensor]
    error: Optional[BaseException]
    transpose_warning: bool

    def describe_error(self) -> str:
        assert self.error is not None
        first = str(self.error).strip().splitlines()[0] if str(self.error).strip() else ""
        return f"{type(self.error).__name__}: {first[:160]}"


def run_module(module: nn.Module, x: torch.Tensor) -> Outcome:
    with warnings.catch_warnings(record=True) as caught, torch.no_grad():
        warnings.simplefilter("always")
        try:
            out = module(x)
        except Exception as exc:  # noqa: BLE001 - a crash is evidence, not a harness error
            return Outcome(None, exc, _saw_transpose_warning(caught))
    if not isinstance(out, torch.Tensor):
        return Outcome(None, TypeError(f"forward returned {type(out).__name__}, not a tensor"), False)
    return Outcome(out, None, _saw_transpose_warning(caught))


def _saw_transpose_warning(caught: Sequence[warnings.WarningMessage]) -> bool:
    return any(TRANSPOSE_WARNING in str(w.message) for w in caught)


def attention_from_params(
    module: nn.Module, x: torch.Tensor, spec: Spec, compute_dtype: Optional[torch.dtype], kernel: str = "naive"
) -> torch.Tensor:
    """Attention with the module's own projections; ``compute_dtype`` None = x's dtype (FA's out_pt)."""
    dtype = x.dtype if compute_dtype is None else compute_dtype
    q, k, v = (p.apply(module, x, dtype) for p in (spec.q, spec.k, spec.v))
    if kernel == "sdpa":
        return sdpa_reference(q, k, v, causal=spec.causal, scale=spec.scale, backend="math")
    return naive_attention(q, k, v, causal=spec.causal, scale=spec.scale, compute_dtype=dtype)


@dataclass
class References:
    golden: torch.Tensor  # float64 naive kernel
    sdpa: torch.Tensor  # float64 SDPA, MATH backend
    plain: torch.Tensor  # naive kernel in the test dtype (FlashAttention's out_pt)


def references(module: nn.Module, x: torch.Tensor, spec: Spec) -> References:
    with torch.no_grad():
        return References(
            golden=attention_from_params(module, x, spec, torch.float64),
            sdpa=attention_from_params(module, x, spec, torch.float64, kernel="sdpa"),
            plain=attention_from_params(module, x, spec, None),
        )


def gradient_comparison(
    module: nn.Module, reference_module: nn.Module, x: torch.Tensor, spec: Spec, seed: int
) -> Comparison:
    """FlashAttention's rule on d(out . g)/dx: ``module`` vs float64 / same-dtype references.

    The references are built from ``reference_module``'s parameters.
    """
    with torch.enable_grad():
        x_test = x.detach().clone().requires_grad_(True)
        out = module(x_test)
        generator = torch.Generator().manual_seed(seed + 1)
        upstream64 = torch.randn(out.shape, generator=generator, dtype=torch.float64).to(out.device)
        (grad_test,) = torch.autograd.grad(out, x_test, upstream64.to(out.dtype))

        x_golden = x.detach().to(torch.float64).requires_grad_(True)
        golden = attention_from_params(reference_module, x_golden, spec, torch.float64)
        (grad_golden,) = torch.autograd.grad(golden, x_golden, upstream64)

        x_plain = x.detach().clone().requires_grad_(True)
        plain = attention_from_params(reference_module, x_plain, spec, None)
        (grad_plain,) = torch.autograd.grad(plain, x_plain, upstream64.to(plain.dtype))
    return flash_rule(grad_test, grad_golden, grad_plain)


# ---------------------------------------------------------------------------------------------
# The recipe
# ---------------------------------------------------------------------------------------------
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


def make_input(shape: Tuple[int, ...], seed: int, device: str, dtype: torch.dtype) -> torch.Tensor:
    # Drawn in float64 on the CPU, then rounded: every dtype and device sees the same values.
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=generator, dtype=torch.float64).to(device=device, dtype=dtype)


def run(request: Mapping[str, Any]) -> List[Dict[str, Any]]:
    torch.set_warn_always(True)  # the `.T` deprecation warning is once per process otherwise
    entry = request["entry"]
    params: Mapping[str, Any] = request.get("params") or {}
    seed = int(request.get("seed", 0))

    stage = "load the original source"
    try:
        original_module = load_source(request["original_source"], "attnlint_verify_original")
        stage = "load the fixed source"
        fixed_module = load_source(request["fixed_source"], "attnlint_verify_fixed")
        stage = f"find {entry!r}"
        original_cls = getattr(original_module, entry)
        fixed_cls = getattr(fixed_module, entry)
        stage = "choose constructor arguments"
        kwargs = constructor_kwargs(original_cls, params.get("init_kwargs") or {})
        stage = "construct both modules from one seed and load the weights strictly"
        original, fixed = build_pair(original_cls, fixed_cls, kwargs, seed)
        stage = "locate the q/k/v projections"
        spec = build_spec(original, params)
    except Exception as exc:  # noqa: BLE001 - reported as a failed setup check
        return [_setup_failure(stage, exc)]

    devices = request.get("devices") or (["cpu"] + (["cuda"] if torch.cuda.is_available() else []))
    dtypes_by_device: Mapping[str, Sequence[str]] = request.get("dtypes") or {}
    reports: List[Dict[str, Any]] = []
    for device in devices:
        if device in dtypes_by_device:
            dtype_names = list(dtypes_by_device[device])
        else:
            dtype_names = list(DTYPES_BY_DEVICE.get(device.split(":")[0], ()))
        for dtype_name in dtype_names:
            reports.append(_verify_on(original, fixed, spec, device, dtype_name, seed))
    return reports


def _setup_failure(stage: str, exc: BaseException) -> Dict[str, Any]:
    detail = f"could not {stage}: {type(exc).__name__}: {' '.join(str(exc).split())}"
    return {
        "rule_code": RULE_CODE,
        "device": "any",
        "dtype": "any",
        "checks": [["build_modules", False, detail]],
        "measurements": {},
    }


def _verify_on(
    original_cpu: nn.Module, fixed_cpu: nn.Module, spec: Spec, device: str, dtype_name: str, seed: int
) -> Dict[str, Any]:
    checks: List[List[Any]] = []
    measurements: Dict[str, float] = {}
    report = {
        "rule_code": RULE_CODE,
        "device": device,
        "dtype": dtype_name,
        "checks": checks,
        "measurements": measurements,
    }
    try:
        dtype = dtype_from_name(dtype_name)
        if device.startswith("cuda") and not torch.cuda.is_available():
            raise RuntimeError("CUDA was requested but torch.cuda.is_available() is False")
        original = copy.deepcopy(original_cpu).to(device=device, dtype=dtype)
        fixed = copy.deepcopy(fixed_cpu).to(device=device, dtype=dtype)
    except Exception as exc:  # noqa: BLE001
        checks.append(["device_setup", False, f"{type(exc).__name__}: {exc}"])
        return report

    # fp32 on CUDA must mean fp32: TF32 would put the reference itself ~1e-3 off.
    guard = exact_fp32_matmul() if device.startswith("cuda") else contextlib.nullcontext()
    with guard:
        try:
            shapes = witness_shapes(spec)
            inputs = {name: make_input(shape, seed, device, dtype) for name, shape in shapes.items()}
            checks.append(_check_unbatched(original, fixed, inputs["unbatched"]))
            checks.append(_check_non_cube(original, fixed, inputs["non_cube"], measurements))
            # The references use the *original* module's parameters (the fixed one holds the same
            # values after the strict load): nothing of the code under judgement goes into them.
            refs = {name: references(original, inputs[name], spec) for name in ("non_cube", "cube")}
            checks.append(_check_cube_bug(original, inputs["cube"], refs["cube"], measurements))
            checks.extend(_check_fixed(fixed, original, inputs, refs, spec, seed, measurements))
            if device.startswith("cuda"):
                _measure_sdpa_backends(original, inputs["cube"], spec, refs["cube"], measurements)
        except Exception as exc:  # noqa: BLE001 - a harness failure is a failed check, never a pass
            checks.append(["harness_error", False, f"{type(exc).__name__}: {exc}"])
    return report


def _check_unbatched(original: nn.Module, fixed: nn.Module, x: torch.Tensor) -> List[Any]:
    before, after = run_module(original, x), run_module(fixed, x)
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
    before, after = run_module(original, x), run_module(fixed, x)
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
    outcome = run_module(original, x)
    shape = tuple(x.shape)
    if outcome.error is not None:
        return [CUBE_SILENTLY_WRONG, False, f"original raises on the cube {shape}: {outcome.describe_error()}"]
    assert outcome.output is not None
    comparison = flash_rule(outcome.output, refs.golden, refs.plain)
    measurements["cube_original_max_error"] = comparison.max_error
    measurements["cube_bound"] = comparison.bound
    warned = "; `.T` deprecation warning seen" if outcome.transpose_warning else ""
    if comparison.passed:
        why = f"original is within tolerance on the cube {shape}: {comparison.describe()}"
        return [CUBE_SILENTLY_WRONG, False, why]
    return [CUBE_SILENTLY_WRONG, True, f"original runs on the cube {shape} but {comparison.describe()}{warned}"]


def _check_fixed(
    fixed: nn.Module,
    original: nn.Module,
    inputs: Mapping[str, torch.Tensor],
    refs: Mapping[str, References],
    spec: Spec,
    seed: int,
    measurements: Dict[str, float],
) -> List[List[Any]]:
    naive_parts, sdpa_parts, grad_parts = [], [], []
    naive_ok = sdpa_ok = grad_ok = True
    for name in ("cube", "non_cube"):
        x = inputs[name]
        outcome = run_module(fixed, x)
        if outcome.error is not None:
            text = f"{name}: fixed raises {outcome.describe_error()}"
            naive_parts.append(text)
            sdpa_parts.append(text)
            grad_parts.append(text)
            naive_ok = sdpa_ok = grad_ok = False
            continue
        assert outcome.output is not None
        ref = refs[name]
        naive = flash_rule(outcome.output, ref.golden, ref.plain)
        sdpa = flash_rule(outcome.output, ref.sdpa, ref.plain)
        measurements[f"{name}_fixed_max_error"] = naive.max_error
        measurements[f"{name}_bound"] = naive.bound
        measurements[f"{name}_plain_max_error"] = naive.plain_error
        measurements[f"{name}_fixed_sdpa_max_error"] = sdpa.max_error
        naive_ok &= naive.passed
        sdpa_ok &= sdpa.passed
        naive_parts.append(f"{name} {tuple(x.shape)}: {naive.describe()}")
        sdpa_parts.append(f"{name} {tuple(x.shape)}: {sdpa.describe()}")
        try:
            grad = gradient_comparison(fixed, original, x, spec, seed)
        except Exception as exc:  # noqa: BLE001
            grad_ok = False
            grad_parts.append(f"{name}: backward raises {type(exc).__name__}: {exc}")
            continue
        measurements[f"{name}_fixed_grad_max_error"] = grad.max_error
        measurements[f"{name}_grad_bound"] = grad.bound
        grad_ok &= grad.passed
        grad_parts.append(f"{name}: {grad.describe()}")
    return [
        [FIXED_MATCHES_NAIVE, naive_ok, " | ".join(naive_parts)],
        [FIXED_MATCHES_SDPA, sdpa_ok, " | ".join(sdpa_parts)],
        [FIXED_GRADIENT_MATCHES, grad_ok, " | ".join(grad_parts)],
    ]


def _measure_sdpa_backends(
    fixed: nn.Module, x: torch.Tensor, spec: Spec, refs: References, measurements: Dict[str, float]
) -> None:
    """Informational on CUDA: each available SDPA backend's own error in the test dtype.

    Not a pass/fail check: fused kernels keep fp32 intermediates, so plain user code is legitimately
    worse than them (see tolerance.py); the numbers put the fixed code's error in context.
    """
    with torch.no_grad():
        q, k, v = (p.apply(fixed, x, x.dtype) for p in (spec.q, spec.k, spec.v))
        for backend in SDPA_BACKENDS:
            try:
                out = sdpa_reference(q, k, v, causal=spec.causal, scale=spec.scale, backend=backend)
            except Exception:  # noqa: BLE001 - backend not available for this dtype/shape/GPU
                continue
            error = float((out.double() - refs.golden).abs().max())
            measurements[f"sdpa_{backend}_cube_max_error"] = error if math.isfinite(error) else float("inf")
