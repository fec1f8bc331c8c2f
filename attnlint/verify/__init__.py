"""Runtime verification: attnlint proves an autofix by running the buggy and the fixed code.

Public API::

    verify(rule_code, buggy_source, fixed_source, *, entry, params=None, devices=None,
           dtypes=None, seed=0, timeout_s=180.0) -> list[VerificationReport]
    verify_fix(rule_code, buggy_source, *, entry, **kwargs) -> list[VerificationReport]

Each report is one (device, dtype) with a list of ``Check(name, passed, detail)`` and the raw
``measurements``; ``report.ok`` is True only when every check passed. Problems with the user code
(it does not build, crashes the interpreter, times out) come back as failed checks, never as
exceptions; only an unknown rule raises ``ValueError``.

This package is imported by the linter: it must stay free of torch at import time. torch is only
ever imported in the verification child process (:mod:`attnlint.verify.child`), which also keeps
CUDA out of the caller's process.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence

from attnlint.verify.entry_facts import entry_facts
from attnlint.verify.extract import ExtractionError, extract_entry
from attnlint.verify.recipes import recipe_for, rule_code_for
from attnlint.verify.report import Check, VerificationReport
from attnlint.verify.runner import DEFAULT_MEMORY_LIMIT_BYTES, DEFAULT_TIMEOUT_S, run_child

__all__ = [
    "Check",
    "VerificationReport",
    "verify",
    "verify_fix",
    "supported_rules",
]


def supported_rules() -> List[str]:
    """Rule codes that have a verification recipe."""
    from attnlint.verify.recipes import RECIPE_BY_RULE_CODE

    return sorted(RECIPE_BY_RULE_CODE)


def verify(
    rule_code: str,
    buggy_source: str,
    fixed_source: str,
    *,
    entry: str,
    params: Optional[Mapping[str, Any]] = None,
    devices: Optional[Sequence[str]] = None,
    dtypes: Optional[Mapping[str, Sequence[str]]] = None,
    seed: int = 0,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> List[VerificationReport]:
    """Run rule ``rule_code``'s recipe on the buggy and the fixed source; one report per device/dtype.

    See :func:`verify_run` (which also returns the attention-weight pictures).
    """
    return verify_run(
        rule_code,
        buggy_source,
        fixed_source,
        entry=entry,
        params=params,
        devices=devices,
        dtypes=dtypes,
        seed=seed,
        timeout_s=timeout_s,
    ).reports


@dataclass
class VerificationRun:
    """One child run: the reports, and (when asked for) the attention weights to draw."""

    reports: List[VerificationReport]
    pictures: Optional[Dict[str, Any]] = None


def verify_run(
    rule_code: str,
    buggy_source: str,
    fixed_source: str,
    *,
    entry: str,
    params: Optional[Mapping[str, Any]] = None,
    devices: Optional[Sequence[str]] = None,
    dtypes: Optional[Mapping[str, Sequence[str]]] = None,
    seed: int = 0,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    pictures: bool = False,
    memory_bytes: int = DEFAULT_MEMORY_LIMIT_BYTES,
) -> VerificationRun:
    """Run rule ``rule_code``'s recipe on the buggy and the fixed source; one report per device/dtype.

    ``entry`` names the top-level class (or function) under test; only it and the top-level
    statements it uses are run (see :mod:`attnlint.verify.extract`). ``params`` are recipe options
    (for ATN103: ``init_kwargs``, ``projections``, ``weight_layout``, ``d_in``, ``causal``,
    ``scale``). ``devices=None`` means the CPU plus CUDA when the *child* finds it available (the
    caller's process never touches CUDA); ``dtypes`` maps a device to dtype names and defaults to
    float64/float32 on CPU and float32 (TF32 off)/float16/bfloat16 on CUDA.
    """
    code = rule_code_for(rule_code)
    try:
        original = extract_entry(buggy_source, entry)
        fixed = extract_entry(fixed_source, entry)
    except ExtractionError as exc:
        return VerificationRun([_harness_failure(code, "extract_entry", str(exc))])
    request: Dict[str, Any] = {
        "rule_code": code,
        "recipe": recipe_for(code),
        "original_source": original,
        "fixed_source": fixed,
        "entry": entry,
        "params": dict(params or {}),
        "devices": list(devices) if devices is not None else None,
        "dtypes": {k: list(v) for k, v in dtypes.items()} if dtypes is not None else None,
        "seed": int(seed),
        "limits": {
            # Wall-clock is enforced by the parent; CPU seconds catch a child that outlives it.
            "cpu_seconds": int(max(60.0, 4 * timeout_s)),
            "memory_bytes": int(memory_bytes),
        },
        "pictures": bool(pictures),
    }
    result = run_child(request, timeout_s=timeout_s)
    if result.reply is None:
        detail = result.error or "no reply"
        if result.stderr_tail.strip():
            detail += " | stderr: " + result.stderr_tail.strip().splitlines()[-1][:300]
        return VerificationRun([_harness_failure(code, "child_process", detail)])
    if "error" in result.reply:
        return VerificationRun([_harness_failure(code, "child_process", str(result.reply["error"]))])
    reports = [VerificationReport.from_dict(report) for report in result.reply.get("reports", [])]
    if not reports:  # e.g. a device with no dtypes to run: no evidence must never read as success
        failure = _harness_failure(code, "no_evidence", f"nothing was run for devices={devices!r}, dtypes={dtypes!r}")
        return VerificationRun([failure])
    return VerificationRun(reports, result.reply.get("pictures"))


def verify_fix(rule_code: str, buggy_source: str, *, entry: str, **kwargs: Any) -> List[VerificationReport]:
    """Fix ``buggy_source`` with attnlint's own engine, then verify this rule's fix alone.

    Real code often has several bugs at once (the course notes' CausalAttention has an unsliced
    mask *and* a softmax over the wrong axis). The claim under test is "this rule's fix turns code
    with this bug into code that matches the reference", so every *other* finding is fixed first
    (unsafe fixes included): the baseline differs from the fixed code by this rule's edits only.
    Facts the recipe needs and the analysis already knows (is the entry causal?) are passed on
    unless ``params`` sets them. ``kwargs`` go to :func:`verify`.
    """
    code = rule_code_for(rule_code)
    try:
        from attnlint.config import Settings
        from attnlint.engine import fix_source
        from attnlint.rules import registry

        others = [r.code for r in registry.all_rules() if r.code != code]
        baseline = fix_source(buggy_source, settings=Settings(select=others), unsafe=True).fixed_source
        result = fix_source(baseline, settings=Settings(select=[code]), unsafe=True)
    except Exception as exc:  # noqa: BLE001 - e.g. the rule is not registered in this build
        return [_harness_failure(code, "fix_applied", f"the engine could not fix: {type(exc).__name__}: {exc}")]
    fixed_source = result.fixed_source
    if fixed_source is None or fixed_source == baseline:
        return [_harness_failure(code, "fix_applied", "the engine produced no fix for this source")]
    params = dict(kwargs.pop("params", None) or {})
    params = params_from_facts(entry_facts([baseline, fixed_source], entry), params)
    return verify(code, baseline, fixed_source, entry=entry, params=params, **kwargs)


def params_from_facts(facts: Mapping[str, Any], params: Mapping[str, Any]) -> Dict[str, Any]:
    """Recipe params from what the analysis knows about the entry; the caller's params win."""
    out = dict(params)
    if "causal" not in out and facts["causal"]:
        out["causal"] = True
    if "padded_queries" not in out and facts["padded_queries"]:
        out["padded_queries"] = True
    if "call" not in out and facts["qkv_function"]:
        out["call"] = "qkv"  # `def attention(q, k, v, ...)`: call it with q, k, v
    if "mask_format" not in out and facts["mask_format"]:
        out["mask_format"] = dict(facts["mask_format"])
    return out


def _harness_failure(rule_code: str, name: str, detail: str) -> VerificationReport:
    return VerificationReport(rule_code=rule_code, device="any", dtype="any", checks=[Check(name, False, detail)])
