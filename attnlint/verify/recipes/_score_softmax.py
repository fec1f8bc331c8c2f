"""Shared machinery for recipes whose bug sits between the scores and the softmax (ATN101, ATN102).

ATN103 (batched_transpose) reuses the reference, the driver (:func:`run_trials`) and the fixed-code
checks (:func:`check_fixed`) with its own witnesses and checks, single-head with no output projection.

Both bugs are *silent*: the buggy module runs, returns the right shape, and trains. So the evidence is
numeric, per device and dtype (CPU: float64, float32; CUDA: float32 with TF32 off, fp16, bf16):

* ``witness_original_silently_wrong`` -- on the witness input (batch 2, 7 tokens by default:
  ``n_q = n_k = 7`` and a head dim chosen by the caller, e.g. 80, whose square root is not a power
  of two) the *original* runs without an exception but fails FlashAttention's rule against the
  float64 reference: the bug is visible there. It fails (the report is not ok) where the bug cannot
  be seen, which is how the tests prove that the witness matters.
* ``fixed_matches_float64_naive_kernel`` / ``fixed_matches_float64_sdpa`` /
  ``fixed_gradient_matches_float64_reference`` -- on the witness and on a single token, the fixed
  output (and its gradient w.r.t. the input) satisfies FlashAttention's rule
  (``max|out - ref| <= 2 * max|out_pt - ref| + floor``, :mod:`attnlint.verify.tolerance`) against
  the float64 naive kernel and against float64 ``F.scaled_dot_product_attention`` (MATH backend),
  both computed per head from the module's *own parameters*.
* Rule-specific checks where the old code was already right, compared with ``torch.equal``
  (see the rule's recipe), and measurements of the invisible cases (``single_token_*``: one query and
  one key; ``first_query_*``: query 0 under a causal mask).

The reference, per head. q/k/v come from the module's projections, found by attribute name
(``W_q``/``W_query``/``q_proj``/``query``/``to_q``/... for each role, or one fused projection
``qkv``/``to_qkv``/``c_attn``/``W_qkv``/``in_proj`` whose output is split in thirds, the layout of
``.chunk(3, dim=-1)`` and nanoGPT's ``.split(n_embd, dim=2)``), or given as
``params["projections"] = {"q": ..., "k": ..., "v": ...}`` / ``{"qkv": ...}``. Each is reshaped into
heads as multi-head code does: ``(b, n, h * hd) -> view (b, n, h, hd) -> transpose(1, 2)``. The head
count is ``params["heads"]`` (an int, or the name of an int attribute), else the first int attribute
named ``num_heads``/``n_heads``/``n_head``/``heads``/``num_attention_heads``/``h``, else 1; a
``head_dim`` int attribute, when present, must agree with width / heads. The heads are merged back
(``transpose(1, 2)`` and flattened) and passed through the output projection found as
``out_proj``/``o_proj``/``W_o``/``to_out``/``c_proj``/``proj``/``fc_out``/``dense``/``out`` (or
``params["out_proj"]``; ``None`` means there is none). Other params: ``init_kwargs``,
``weight_layout``/``d_in`` (matrix parameters, as for ATN103), ``causal`` (top-left causal mask),
``scale`` (default ``head_dim ** -0.5``), ``witness = {"batch": 2, "tokens": 7}``, ``threads``
(intra-op threads in the child, default 1).

A forward that returns a tuple (``(output, weights)``) is judged on its first element. A
misidentified projection can only make a correct fix fail verification, never let a wrong one pass.

Runs only inside the verification child process.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import math
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import torch
from torch import nn

from attnlint.verify.kernels import SDPA_BACKENDS, naive_attention, sdpa_reference
from attnlint.verify.loading import HEAD_COUNT_NAMES
from attnlint.verify.recipes._harness import (  # noqa: F401 - re-exported for the recipes
    Outcome,
    References,
    SetupError,
    Trial,
    attempt,
    build_entries,
    device_dtypes,
    make_report,
)
from attnlint.verify.recipes._harness import run_trials as _run_trials
from attnlint.verify.tolerance import (
    Comparison,
    bit_identical,
    flash_rule,
    max_abs_diff,
)

WITNESS_SILENTLY_WRONG = "witness_original_silently_wrong"
WITNESS_ORIGINAL_RAISES = "witness_original_raises"
FIXED_MATCHES_NAIVE = "fixed_matches_float64_naive_kernel"
FIXED_MATCHES_SDPA = "fixed_matches_float64_sdpa"
FIXED_GRADIENT_MATCHES = "fixed_gradient_matches_float64_reference"

DEFAULT_WITNESS = {"batch": 2, "tokens": 7}

# Attribute names, compared lower-cased with underscores removed; earlier names win.
ROLE_ALIASES: Dict[str, Tuple[str, ...]] = {
    role: (
        f"w{role}",
        f"w{long}",
        f"{role}proj",
        f"{long}proj",
        f"to{role}",
        f"{role}linear",
        f"linear{role}",
        f"{long}linear",
        f"{long}",
        f"{role}",
        f"{long}weight",
        f"{role}weight",
    )
    for role, long in (("q", "query"), ("k", "key"), ("v", "value"))
}
FUSED_ALIASES = ("qkv", "toqkv", "wqkv", "qkvproj", "cattn", "inproj", "qkvlinear", "linearqkv")
OUT_ALIASES = ("outproj", "oproj", "wo", "wout", "toout", "cproj", "proj", "fcout", "dense", "out", "linearout")
# A head count by the constructor's names (normalised), or the one-letter `self.h` of tutorials.
HEADS_ALIASES = tuple(name.replace("_", "") for name in HEAD_COUNT_NAMES) + ("h",)
NO_OUT_PROJECTION = "none"


# ---------------------------------------------------------------------------------------------
# What the reference needs, read from the module's own parameters
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Projection:
    """How to compute one of q/k/v (or the output projection) with the module's own parameters."""

    attr: str
    layout: str  # "in_out": x @ W; "out_in": x @ W.T; "module": call the submodule
    part: Optional[int] = None  # fused qkv: which third of the output

    def apply(self, module: nn.Module, x: torch.Tensor, compute_dtype: torch.dtype) -> torch.Tensor:
        obj = getattr(module, self.attr)
        x = x.to(compute_dtype)
        if self.layout == "module":
            if any(p.dtype != compute_dtype for p in obj.parameters()):
                obj = copy.deepcopy(obj).to(compute_dtype)
            y = obj(x)
        else:
            weight = obj.to(compute_dtype)
            y = x @ weight if self.layout == "in_out" else x @ weight.mT
        return y if self.part is None else y.chunk(3, dim=-1)[self.part]

    def describe(self) -> str:
        return self.attr if self.part is None else f"{self.attr}[{'qkv'[self.part]}]"


@dataclass(frozen=True)
class Spec:
    q: Projection
    k: Projection
    v: Projection
    out: Optional[Projection]
    heads: int
    heads_from: str
    d_in: int
    head_dim: int
    causal: bool
    scale: Optional[float]

    def describe(self) -> str:
        out = self.out.describe() if self.out is not None else "none"
        return (
            f"reference: q/k/v from {self.q.describe()}/{self.k.describe()}/{self.v.describe()}, "
            f"heads={self.heads} ({self.heads_from}), head_dim={self.head_dim}, out={out}, "
            f"causal={self.causal}"
        )

    @property
    def d_key(self) -> int:
        """The per-head key width (``head_dim``), under the name the single-head ATN103 recipe uses."""
        return self.head_dim


def _normalise(name: str) -> str:
    return name.lower().replace("_", "")


def _as_projection(module: nn.Module, attr: str, params: Mapping[str, Any], part: Optional[int] = None) -> Projection:
    obj = getattr(module, attr)
    if isinstance(obj, nn.Module):
        return Projection(attr, "module", part)
    if isinstance(obj, torch.Tensor) and obj.dim() == 2:
        return Projection(attr, _matrix_layout(obj, params), part)
    raise LookupError(f"{attr!r} is neither a submodule nor a 2-D weight matrix")


def _matrix_layout(weight: torch.Tensor, params: Mapping[str, Any]) -> str:
    layout = params.get("weight_layout")
    if layout in ("in_out", "out_in"):
        return layout
    d_in = params.get("d_in")
    if d_in is not None and weight.shape[0] != d_in and weight.shape[1] == d_in:
        return "out_in"
    return "in_out"


def _by_alias(candidates: Sequence[str], aliases: Sequence[str]) -> Optional[str]:
    by_alias = {_normalise(name): name for name in candidates}
    return next((by_alias[a] for a in aliases if a in by_alias), None)


def locate_qkv(module: nn.Module, params: Mapping[str, Any]) -> Dict[str, Projection]:
    explicit: Mapping[str, str] = params.get("projections") or {}
    candidates = list(module._parameters) + list(module._modules)
    if "qkv" in explicit:
        return {role: _as_projection(module, explicit["qkv"], params, i) for i, role in enumerate("qkv")}
    found: Dict[str, str] = {}
    for role, aliases in ROLE_ALIASES.items():
        attr = explicit.get(role) or _by_alias(candidates, aliases)
        if attr is not None:
            found[role] = attr
    if len(found) == 3:
        return {role: _as_projection(module, attr, params) for role, attr in found.items()}
    fused = _by_alias(candidates, FUSED_ALIASES)
    if not found and fused is not None:
        return {role: _as_projection(module, fused, params, i) for i, role in enumerate("qkv")}
    raise LookupError(
        f"cannot find the q/k/v projections among {candidates} (found {found or 'none'}); pass "
        "params['projections'] = {'q': ..., 'k': ..., 'v': ...} or {'qkv': ...}"
    )


def locate_out(module: nn.Module, params: Mapping[str, Any]) -> Optional[Projection]:
    if "out_proj" in params:
        attr = params["out_proj"]
        return None if attr in (None, NO_OUT_PROJECTION) else _as_projection(module, attr, params)
    attr = _by_alias(list(module._parameters) + list(module._modules), OUT_ALIASES)
    return None if attr is None else _as_projection(module, attr, params)


def locate_heads(module: nn.Module, params: Mapping[str, Any]) -> Tuple[int, str]:
    given = params.get("heads")
    if isinstance(given, int) and not isinstance(given, bool):
        return given, "params"
    if isinstance(given, str):
        value = getattr(module, given)
        if not isinstance(value, int):
            raise LookupError(f"params['heads'] names {given!r}, which is not an int attribute")
        return value, given
    ints = {
        name: value for name, value in vars(module).items() if isinstance(value, int) and not isinstance(value, bool)
    }
    attr = _by_alias(list(ints), HEADS_ALIASES)
    return (ints[attr], attr) if attr is not None else (1, "default: no heads attribute")


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
    qkv = locate_qkv(module, params)
    out = locate_out(module, params)
    heads, heads_from = locate_heads(module, params)
    d_in = _input_dim(module, qkv["q"], params)
    param = next(iter(module.parameters()), None)
    dtype = param.dtype if param is not None else torch.get_default_dtype()
    with torch.no_grad():  # the widths are whatever the projections really produce
        probe = torch.zeros(1, 1, d_in, dtype=dtype)
        widths = {role: int(p.apply(module, probe, dtype).shape[-1]) for role, p in qkv.items()}
    if widths["q"] != widths["k"]:
        raise LookupError(f"query width {widths['q']} != key width {widths['k']}")
    if heads < 1 or widths["q"] % heads or widths["v"] % heads:
        raise LookupError(f"widths {widths} are not divisible by heads={heads} ({heads_from})")
    head_dim = widths["q"] // heads
    declared = vars(module).get("head_dim")
    if isinstance(declared, int) and declared != head_dim:
        raise LookupError(f"module.head_dim={declared} but width {widths['q']} / heads {heads} = {head_dim}")
    scale = params.get("scale")
    return Spec(
        q=qkv["q"],
        k=qkv["k"],
        v=qkv["v"],
        out=out,
        heads=heads,
        heads_from=heads_from,
        d_in=d_in,
        head_dim=head_dim,
        causal=bool(params.get("causal", False)),
        scale=None if scale is None else float(scale),
    )


# ---------------------------------------------------------------------------------------------
# References and running the code under test
# ---------------------------------------------------------------------------------------------
def split_heads(t: torch.Tensor, heads: int) -> torch.Tensor:
    """(..., n, h * hd) -> (..., h, n, hd), as ``view(b, n, h, hd).transpose(1, 2)``."""
    return t.unflatten(-1, (heads, -1)).transpose(-3, -2)


def merge_heads(t: torch.Tensor) -> torch.Tensor:
    """(..., h, n, hd) -> (..., n, h * hd), as ``transpose(1, 2).reshape(b, n, -1)``."""
    return t.transpose(-3, -2).flatten(-2)


def heads_qkv(module: nn.Module, x: torch.Tensor, spec: Spec, dtype: torch.dtype) -> Tuple[torch.Tensor, ...]:
    return tuple(split_heads(p.apply(module, x, dtype), spec.heads) for p in (spec.q, spec.k, spec.v))


def attention_from_params(
    module: nn.Module, x: torch.Tensor, spec: Spec, compute_dtype: Optional[torch.dtype], kernel: str = "naive"
) -> torch.Tensor:
    """Per-head attention with the module's own parameters; ``compute_dtype`` None = x's dtype (out_pt)."""
    dtype = x.dtype if compute_dtype is None else compute_dtype
    q, k, v = heads_qkv(module, x, spec, dtype)
    if kernel == "sdpa":
        o = sdpa_reference(q, k, v, causal=spec.causal, scale=spec.scale, backend="math")
    else:
        o = naive_attention(q, k, v, causal=spec.causal, scale=spec.scale, compute_dtype=dtype)
    o = merge_heads(o)
    return o if spec.out is None else spec.out.apply(module, o, dtype)


def references(module: nn.Module, x: torch.Tensor, spec: Spec) -> References:
    with torch.no_grad():
        return References(
            golden=attention_from_params(module, x, spec, torch.float64),
            sdpa=attention_from_params(module, x, spec, torch.float64, kernel="sdpa"),
            plain=attention_from_params(module, x, spec, None),
        )


def _first_tensor(out: Any) -> Any:
    return out[0] if isinstance(out, (tuple, list)) and out else out


def run_module(module: nn.Module, x: torch.Tensor, record_warnings: bool = False) -> Outcome:
    """Run ``module(x)`` without grad; with ``record_warnings``, every warning it raises is recorded
    (and not shown) in ``Outcome.warning_messages``."""
    recorder = warnings.catch_warnings(record=True) if record_warnings else contextlib.nullcontext()
    with recorder as caught, torch.no_grad():
        if record_warnings:
            warnings.simplefilter("always")
        try:
            out = _first_tensor(self_attend(module, x))
        except Exception as exc:  # noqa: BLE001 - a crash is evidence, not a harness error
            return Outcome(None, exc, _messages(caught))
    if not isinstance(out, torch.Tensor):
        return Outcome(None, TypeError(f"forward returned {type(out).__name__}, not a tensor"))
    return Outcome(out, None, _messages(caught))


def self_attend(module: nn.Module, x: torch.Tensor) -> Any:
    """The module as self-attention over ``x``: ``x`` for every required input of its forward.

    The reference projects q, k and v from one ``x``; a module written as ``forward(q, k, v,
    mask=None)`` (the Annotated Transformer's) is that self-attention when given ``x`` three
    times. Optional inputs (a mask, a cache) keep their defaults."""
    return module(*([x] * max(1, len(required_inputs(module)))))


def required_inputs(module: nn.Module) -> List[str]:
    """The positional inputs ``module.forward`` needs (no default)."""
    try:
        params = list(inspect.signature(module.forward).parameters.values())
    except (TypeError, ValueError):
        return []
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in params if p.kind in positional and p.default is inspect.Parameter.empty]


def undriven_inputs(module: nn.Module) -> List[str]:
    """Required inputs the self-attention witness cannot give: past the first, every required
    input must be a query, key or value (`forward(q, k, v)`); a mask (`pad_mask`) or a size
    (`forward(x, h, w)`) is something this recipe's witnesses do not make."""
    from attnlint.analysis.names import role_from_name
    from attnlint.analysis.values import KEY, QUERY, VALUE

    return [name for name in required_inputs(module)[1:] if role_from_name(name) not in (QUERY, KEY, VALUE)]


def _messages(caught: Optional[Sequence[warnings.WarningMessage]]) -> Tuple[str, ...]:
    return tuple(str(w.message) for w in caught or ())


def gradient_comparison(
    module: nn.Module, reference_module: nn.Module, x: torch.Tensor, spec: Spec, seed: int
) -> Comparison:
    """FlashAttention's rule on d(out . g)/dx, references from ``reference_module``'s parameters."""
    with torch.enable_grad():
        x_test = x.detach().clone().requires_grad_(True)
        out = _first_tensor(self_attend(module, x_test))
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


def make_input(shape: Tuple[int, ...], seed: int, device: str, dtype: torch.dtype) -> torch.Tensor:
    # Drawn in float64 on the CPU, then rounded: every dtype and device sees the same values.
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=generator, dtype=torch.float64).to(device=device, dtype=dtype)


def witness_shapes(spec: Spec, params: Mapping[str, Any]) -> Dict[str, Tuple[int, ...]]:
    given = dict(DEFAULT_WITNESS, **(params.get("witness") or {}))
    return {
        "witness": (int(given["batch"]), int(given["tokens"]), spec.d_in),
        "single_token": (int(given["batch"]), 1, spec.d_in),  # n_q = n_k = 1
    }


# ---------------------------------------------------------------------------------------------
# The recipe (also used by ATN103's batched_transpose recipe, with its own checks)
# ---------------------------------------------------------------------------------------------
# Rule-specific checks: (original, fixed, inputs, outputs-so-far, spec, measurements) -> checks.
ExtraChecks = Callable[
    [nn.Module, nn.Module, Mapping[str, torch.Tensor], Mapping[str, "References"], Spec, Dict[str, float]],
    List[List[Any]],
]


def run_trials(
    request: Mapping[str, Any],
    rule_code: str,
    verify_on: Callable[[Trial], None],
    build: Callable[[nn.Module, Mapping[str, Any]], Spec] = build_spec,
    locate_stage: str = "locate the projections and heads",
    initial_measurements: Callable[[Spec], Dict[str, float]] = lambda spec: {},
    usual_values: Optional[Mapping[str, Any]] = None,
) -> List[Dict[str, Any]]:
    """The one harness (:func:`attnlint.verify.recipes._harness.run_trials`) with the per-head spec
    built from the module: ``trial.spec`` is set when ``verify_on`` runs."""
    return _run_trials(request, rule_code, verify_on, build, locate_stage, initial_measurements, usual_values)


def run_recipe(
    request: Mapping[str, Any],
    rule_code: str,
    extra_checks: Optional[ExtraChecks] = None,
    *,
    invisible_on_single_token: bool = False,
    loud_original_counts: bool = False,
    usual_values: Optional[Mapping[str, Any]] = None,
) -> List[Dict[str, Any]]:
    """Run the common checks (plus ``extra_checks``) for ``rule_code``; one report dict per device/dtype.

    ``invisible_on_single_token``: the rule's bug cannot change the output of one query over one
    key (a scale, a view that moves a size-1 axis), so there the original must equal the
    reference; where it does not, the reference does not model the module (a projection or head
    count read wrongly) and nothing can be concluded (``no_evidence``: not-run, never failed).
    ``loud_original_counts``: an original that raises on the witness is wrong too (a view of a
    non-contiguous chunk raises instead of mixing positions), so the witness check accepts it.
    ``usual_values``: constructor values the witness needs instead of the loader's usual ones.
    """
    return run_trials(
        request,
        rule_code,
        lambda trial: _verify_on(trial, extra_checks, invisible_on_single_token, loud_original_counts),
        build_spec,
        initial_measurements=lambda spec: {"heads": float(spec.heads), "head_dim": float(spec.head_dim)},
        usual_values=usual_values,
    )


def _verify_on(
    trial: Trial, extra_checks: Optional[ExtraChecks], invisible_on_single_token: bool, loud_original_counts: bool
) -> None:
    original, fixed, spec = trial.original, trial.fixed, trial.spec
    checks, measurements = trial.checks, trial.measurements
    shapes = witness_shapes(spec, trial.params)
    inputs = {name: make_input(shape, trial.seed, trial.device, trial.dtype) for name, shape in shapes.items()}
    # The references use the *original* module's parameters (the fixed one holds the same
    # values after the strict load): nothing of the code under judgement goes into them.
    refs = {name: references(original, x, spec) for name, x in inputs.items()}
    undriven = undriven_inputs(original)
    if undriven:
        checks.append(
            [
                "no_evidence",
                False,
                f"the entry needs inputs ({', '.join(undriven)}) that this recipe's self-attention witness "
                "does not make; verify the attention function it calls (FILE::Name)",
            ]
        )
        return
    if invisible_on_single_token:
        mismatch = reference_mismatch(original, inputs["single_token"], refs["single_token"], spec)
        if mismatch is not None:
            checks.append(["no_evidence", False, mismatch])
            return
    witness = check_original_silently_wrong(
        WITNESS_SILENTLY_WRONG, original, inputs["witness"], refs["witness"], measurements, context=spec.describe()
    )
    if loud_original_counts and not witness[1] and witness[2].startswith("original raises"):
        witness = [WITNESS_ORIGINAL_RAISES, True, witness[2] + " (the bug is loud here, not silent)"]
    checks.append(witness)
    _measure_equal_outputs(original, fixed, inputs["witness"], measurements)
    _measure_single_token(original, fixed, inputs["single_token"], refs["single_token"], measurements)
    checks.extend(check_fixed(fixed, original, inputs, refs, spec, trial.seed, measurements))
    if extra_checks is not None:
        checks.extend(extra_checks(original, fixed, inputs, refs, spec, measurements))
    if trial.device.startswith("cuda"):
        measure_sdpa_backends(original, inputs["witness"], spec, refs["witness"], measurements)


def check_original_silently_wrong(
    check: str,
    original: nn.Module,
    x: torch.Tensor,
    refs: References,
    measurements: Dict[str, float],
    *,
    name: str = "witness",
    context: str = "",
    ratio: bool = True,
    not_visible: str = "bug NOT visible: ",
    record_warnings: bool = False,
    note: Optional[Callable[[Outcome], str]] = None,
) -> List[Any]:
    """``check`` passes when the original runs on input ``name`` but fails FlashAttention's rule.

    Measures ``{name}_original_max_error``, ``{name}_bound`` (and ``{name}_original_ratio`` with
    ``ratio``). ``context`` follows the shape in the detail; ``note(outcome)`` ends it when the bug
    shows (with ``record_warnings``, the outcome holds the warnings the original raised).
    """
    outcome = run_module(original, x, record_warnings=record_warnings)
    shape = tuple(x.shape)
    if outcome.error is not None:
        return [check, False, f"original raises on the {name} {shape}: {outcome.describe_error()}"]
    assert outcome.output is not None
    comparison = flash_rule(outcome.output, refs.golden, refs.plain)
    measurements[f"{name}_original_max_error"] = comparison.max_error
    measurements[f"{name}_bound"] = comparison.bound
    if ratio:
        measurements[f"{name}_original_ratio"] = comparison.ratio
    where = f"{name} {shape}, {context}" if context else f"{name} {shape}"
    if comparison.passed:
        return [check, False, f"{not_visible}original is within tolerance on the {where}: {comparison.describe()}"]
    tail = note(outcome) if note is not None else ""
    return [check, True, f"original runs on the {where} but {comparison.describe()}{tail}"]


def reference_mismatch(original: nn.Module, x: torch.Tensor, refs: References, spec: Spec) -> Optional[str]:
    """Why the reference cannot judge this module, or None: on one query over one key, where the
    bug cannot show, the original is off the reference (an original that raises says nothing)."""
    outcome = run_module(original, x)
    if outcome.error is not None or outcome.output is None:
        return None
    comparison = flash_rule(outcome.output, refs.golden, refs.plain)
    if comparison.passed:
        return None
    return (
        f"the reference does not reproduce this module ({spec.describe()}): on a single token "
        f"{tuple(x.shape)}, where this bug cannot change the output, the original is off it "
        f"({comparison.describe()}); name its projections with --param projections=... and "
        "--param out_proj=..., or verify the attention function it calls (FILE::Name)"
    )


def _measure_equal_outputs(
    original: nn.Module, fixed: nn.Module, x: torch.Tensor, measurements: Dict[str, float]
) -> None:
    """Whether the fix changed a single bit on the witness (it must not where the bug is invisible)."""
    before, after = run_module(original, x), run_module(fixed, x)
    if before.output is not None and after.output is not None:
        measurements["witness_original_equals_fixed"] = float(bit_identical(before.output, after.output))
        measurements["witness_original_vs_fixed_max_diff"] = max_abs_diff(before.output, after.output)


def _measure_single_token(
    original: nn.Module, fixed: nn.Module, x: torch.Tensor, refs: References, measurements: Dict[str, float]
) -> None:
    """n_q = n_k = 1: how far the original is from the reference, and from the fixed code."""
    before, after = run_module(original, x), run_module(fixed, x)
    if before.output is None:
        return
    comparison = flash_rule(before.output, refs.golden, refs.plain)
    measurements["single_token_original_max_error"] = comparison.max_error
    measurements["single_token_bound"] = comparison.bound
    measurements["single_token_bug_visible"] = float(not comparison.passed)
    if after.output is not None:
        measurements["single_token_original_equals_fixed"] = float(bit_identical(before.output, after.output))


def check_fixed(
    fixed: nn.Module,
    original: nn.Module,
    inputs: Mapping[str, torch.Tensor],
    refs: Mapping[str, References],
    spec: Spec,
    seed: int,
    measurements: Dict[str, float],
    names: Sequence[str] = ("witness", "single_token"),
    bound_suffix: str = "fixed_bound",
) -> List[List[Any]]:
    """The three fixed-code checks (naive kernel, SDPA, gradient) over the inputs ``names``.

    Measures ``{name}_fixed_max_error``, ``{name}_{bound_suffix}``, ``{name}_plain_max_error``,
    ``{name}_fixed_sdpa_max_error``, ``{name}_fixed_grad_max_error`` and ``{name}_grad_bound``.
    """
    naive_parts, sdpa_parts, grad_parts = [], [], []
    naive_ok = sdpa_ok = grad_ok = True
    for name in names:
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
        measurements[f"{name}_{bound_suffix}"] = naive.bound
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


def measure_sdpa_backends(
    original: nn.Module,
    x: torch.Tensor,
    spec: Spec,
    refs: References,
    measurements: Dict[str, float],
    name: str = "witness",
) -> None:
    """Informational on CUDA: each available SDPA backend's own error in the test dtype, on input ``name``.

    Measures ``sdpa_{backend}_{name}_max_error``. Not a pass/fail check: fused kernels keep fp32
    intermediates, so plain user code is legitimately worse than them (see tolerance.py); the numbers
    put the fixed code's error in context.
    """
    with torch.no_grad():
        q, k, v = heads_qkv(original, x, spec, x.dtype)
        for backend in SDPA_BACKENDS:
            try:
                o = merge_heads(sdpa_reference(q, k, v, causal=spec.causal, scale=spec.scale, backend=backend))
                if spec.out is not None:
                    o = spec.out.apply(original, o, x.dtype)
            except Exception:  # noqa: BLE001 - backend not available for this dtype/shape/GPU
                continue
            error = max_abs_diff(o, refs.golden)
            measurements[f"sdpa_{backend}_{name}_max_error"] = error if math.isfinite(error) else float("inf")
