"""The one verification harness: load both sources, build both entries, run a recipe per device/dtype.

Every recipe (score/softmax, masking, loss) goes through :func:`run_trials`:

1. load the original and the fixed source as two fresh modules;
2. find the entry in each: an ``nn.Module`` class is built from one seed with the same constructor
   arguments, and the fixed copy gets the original's weights with ``load_state_dict(strict=True)``
   (:mod:`attnlint.verify.loading`); a plain function is used as it is;
3. optionally understand the module (``build(original, params)``, e.g. the per-head reference
   :func:`attnlint.verify.recipes._score_softmax.build_spec`);
4. per (device, dtype): copy both modules there, TF32 off on CUDA, and call ``verify_on(trial)``.

A failure in 1-3 is one ``build_modules`` check (which stage, and what would make it work); a device
that cannot be set up is a ``device_setup`` check; an exception out of ``verify_on`` is a
``harness_error`` check. None of them can read as a pass: a report is ok only when it holds
evidence and all of it holds.

Runs only inside the verification child process.
"""

from __future__ import annotations

import contextlib
import copy
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import torch
from torch import nn

from attnlint.verify.loading import build_pair, constructor_kwargs, load_source
from attnlint.verify.tolerance import DTYPES_BY_DEVICE, dtype_from_name, exact_fp32_matmul


# ---------------------------------------------------------------------------------------------
# Evidence of one (device, dtype) run
# ---------------------------------------------------------------------------------------------
@dataclass
class Trial:
    """One (device, dtype) run of a recipe: the code under test there, and the evidence so far.

    ``original``/``fixed`` are modules moved to (device, dtype), or the functions themselves.
    ``spec`` is what the driver's ``build`` step found (None without one).
    """

    rule_code: str
    device: str
    dtype_name: str
    dtype: torch.dtype
    seed: int
    params: Mapping[str, Any]
    original: Any
    fixed: Any
    is_module: bool
    spec: Any = None
    checks: List[List[Any]] = field(default_factory=list)
    measurements: Dict[str, float] = field(default_factory=dict)

    def add(self, name: str, passed: bool, detail: str) -> None:
        self.checks.append([name, bool(passed), detail])

    def measure(self, name: str, value: float) -> None:
        self.measurements[name] = float(value)

    def report(self) -> Dict[str, Any]:
        return make_report(self.rule_code, self.device, self.dtype_name, self.checks, self.measurements)

    def golden_copy(self, dtype: torch.dtype) -> Any:
        """The original module cast to ``dtype`` (for references); functions as they are.

        Cast from the module under test, so the float64 reference starts from the very parameters
        (rounded to the test dtype) that the code under test uses.
        """
        if not self.is_module:
            return self.original
        return copy.deepcopy(self.original).to(dtype=dtype)


def make_report(
    rule_code: str, device: str, dtype: str, checks: List[List[Any]], measurements: Dict[str, float]
) -> Dict[str, Any]:
    return {"rule_code": rule_code, "device": device, "dtype": dtype, "checks": checks, "measurements": measurements}


# ---------------------------------------------------------------------------------------------
# Running code that may raise
# ---------------------------------------------------------------------------------------------
@dataclass
class Outcome:
    """What running the code under test gave: a value, or the exception it raised."""

    value: Any
    error: Optional[BaseException]
    warning_messages: Tuple[str, ...] = ()  # only when the caller recorded warnings

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def output(self) -> Any:
        return self.value

    def describe_error(self) -> str:
        assert self.error is not None
        text = " ".join(str(self.error).split())
        return f"{type(self.error).__name__}: {text[:160]}"

    def warned(self, text: str) -> bool:
        """Whether a recorded warning's message contains ``text``."""
        return any(text in message for message in self.warning_messages)


def attempt(fn: Callable[[], Any]) -> Outcome:
    try:
        return Outcome(fn(), None)
    except Exception as exc:  # noqa: BLE001 - a crash is evidence, not a harness error
        return Outcome(None, exc)


@dataclass
class References:
    """The three references of FlashAttention's rule for one input."""

    golden: torch.Tensor  # float64 naive kernel
    sdpa: torch.Tensor  # float64 SDPA, MATH backend
    plain: torch.Tensor  # naive kernel in the test dtype (FlashAttention's out_pt)


# ---------------------------------------------------------------------------------------------
# The driver
# ---------------------------------------------------------------------------------------------
class SetupError(Exception):
    """The sources could not be loaded, built or understood; ``str()`` is the ``build_modules`` detail."""


@dataclass
class Entries:
    """Both entries, built once (before any device copy), and what ``build`` found."""

    original: Any
    fixed: Any
    is_module: bool
    spec: Any = None


def build_entries(
    request: Mapping[str, Any],
    params: Mapping[str, Any],
    seed: int,
    build: Optional[Callable[[nn.Module, Mapping[str, Any]], Any]] = None,
    locate_stage: str = "locate the projections and heads",
    usual_values: Optional[Mapping[str, Any]] = None,
) -> Entries:
    """Load both sources and build both entries; raises :class:`SetupError` saying which stage failed."""
    entry = request["entry"]
    stage = "load the original source"
    try:
        original_module = load_source(request["original_source"], "attnlint_verify_original")
        stage = "load the fixed source"
        fixed_module = load_source(request["fixed_source"], "attnlint_verify_fixed")
        stage = f"find {entry!r}"
        original_obj = getattr(original_module, entry)
        fixed_obj = getattr(fixed_module, entry)
        is_module = isinstance(original_obj, type) and issubclass(original_obj, nn.Module)
        if is_module:
            stage = "choose constructor arguments"
            kwargs = constructor_kwargs(original_obj, params.get("init_kwargs") or {}, usual_values)
            stage = "construct both modules from one seed and load the weights strictly"
            original_obj, fixed_obj = build_pair(original_obj, fixed_obj, kwargs, seed)
        elif not callable(original_obj) or not callable(fixed_obj):
            raise TypeError(f"{entry!r} is neither an nn.Module class nor a function")
        spec = None
        if build is not None:
            if not is_module:
                raise TypeError(f"{entry!r} is a function; this recipe needs an nn.Module class")
            stage = locate_stage
            spec = build(original_obj, params)
    except Exception as exc:  # noqa: BLE001 - reported as a failed setup check
        raise SetupError(f"could not {stage}: {type(exc).__name__}: {' '.join(str(exc).split())}") from exc
    return Entries(original_obj, fixed_obj, is_module, spec)


def device_dtypes(request: Mapping[str, Any]) -> List[Tuple[str, str]]:
    """The (device, dtype name) pairs to run on: the request's, else every device's defaults."""
    devices = request.get("devices") or (["cpu"] + (["cuda"] if torch.cuda.is_available() else []))
    dtypes_by_device: Mapping[str, Sequence[str]] = request.get("dtypes") or {}
    pairs: List[Tuple[str, str]] = []
    for device in devices:
        if device in dtypes_by_device:
            dtype_names = list(dtypes_by_device[device])
        else:
            dtype_names = list(DTYPES_BY_DEVICE.get(device.split(":")[0], ()))
        pairs.extend((device, dtype_name) for dtype_name in dtype_names)
    return pairs


def run_trials(
    request: Mapping[str, Any],
    rule_code: str,
    verify_on: Callable[[Trial], None],
    build: Optional[Callable[[nn.Module, Mapping[str, Any]], Any]] = None,
    locate_stage: str = "locate the projections and heads",
    initial_measurements: Callable[[Any], Dict[str, float]] = lambda spec: {},
    usual_values: Optional[Mapping[str, Any]] = None,
) -> List[Dict[str, Any]]:
    """Build the entries, then run ``verify_on`` once per device and dtype; one report dict each.
    ``usual_values``: constructor values this recipe's witness needs instead of the usual ones."""
    params: Mapping[str, Any] = request.get("params") or {}
    seed = int(request.get("seed", 0))
    # The witnesses are tiny: intra-op threads only add scheduling noise, which on a busy machine
    # costs seconds per run. One thread by default (this child process is ours alone).
    torch.set_num_threads(max(1, int(params.get("threads", 1))))
    try:
        entries = build_entries(request, params, seed, build, locate_stage, usual_values)
    except SetupError as exc:
        return [make_report(rule_code, "any", "any", [["build_modules", False, str(exc)]], {})]
    reports: List[Dict[str, Any]] = []
    for device, dtype_name in device_dtypes(request):
        try:
            dtype = dtype_from_name(dtype_name)
            if device.startswith("cuda") and not torch.cuda.is_available():
                raise RuntimeError("CUDA was requested but torch.cuda.is_available() is False")
            if entries.is_module:
                original = copy.deepcopy(entries.original).to(device=device, dtype=dtype)
                fixed = copy.deepcopy(entries.fixed).to(device=device, dtype=dtype)
            else:
                original, fixed = entries.original, entries.fixed
        except Exception as exc:  # noqa: BLE001
            reports.append(make_report(rule_code, device, dtype_name, [["device_setup", False, _text(exc)]], {}))
            continue
        trial = Trial(
            rule_code,
            device,
            dtype_name,
            dtype,
            seed,
            params,
            original,
            fixed,
            entries.is_module,
            spec=entries.spec,
            measurements=initial_measurements(entries.spec),
        )
        # fp32 on CUDA must mean fp32: TF32 would put the reference itself ~1e-3 off.
        guard = exact_fp32_matmul() if device.startswith("cuda") else contextlib.nullcontext()
        with guard:
            try:
                verify_on(trial)
            except Exception as exc:  # noqa: BLE001 - a harness failure is a failed check, never a pass
                trial.add("harness_error", False, _text(exc)[:400])
        reports.append(trial.report())
    return reports


def _text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"
