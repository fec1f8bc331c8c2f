"""``attnlint verify FILE[::ENTRY]``: every fixable finding in the user's own code, each fix proven.

Parent side, torch-free. For each file:

1. the linter finds the fixable findings (unsafe fixes included: they are the ones that need proof);
2. each finding belongs to the top-level class or function around it, its *entry* (a method's
   finding to its class); findings of one rule in one entry are verified together, because that
   rule's fix rewrites all of them at once;
3. the *baseline* is the file with every other rule's fixes applied, the *fixed* code is the
   baseline with this rule's fixes: the evidence is about this rule's edits alone
   (:func:`attnlint.verify.verify_fix` has the same contract);
4. the entry and what it references are cut out of both (:mod:`attnlint.verify.extract`) and run in
   a fresh ``python -I`` child with a timeout and memory limit; the analysis' facts about the entry
   (causal, q/k/v function, mask conventions) and the user's constructor arguments go with it.

Verdicts: ``verified`` (an unsafe fix, all evidence holds), ``equivalent`` (a safe fix: all evidence
holds, including bit-identity wherever the original worked), ``failed`` (some check on the fixed
code, or on the bug's witness, did not hold: the fix is not applied under ``check --fix --verify``),
``not-run`` (no evidence: the module could not be built, torch is missing, a device is absent, the
child timed out; the reason says what would make it work).
"""

from __future__ import annotations

import difflib
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from attnlint.verify.options import VerifyOptions

VERIFIED, EQUIVALENT, FAILED, NOT_RUN = "verified", "equivalent", "failed", "not-run"
PASSING = (VERIFIED, EQUIVALENT)
# Checks that mean "no evidence was gathered", never "the fix is wrong".
SETUP_CHECKS = ("build_modules", "device_setup", "child_process", "extract_entry", "no_evidence", "harness_error")


@dataclass
class FindingVerdict:
    """One finding and what verifying its fix showed."""

    code: str
    name: str
    message: str
    filename: str
    row: int
    column: int
    entry: Optional[str]
    applicability: str
    verdict: str = NOT_RUN
    reason: str = ""
    reports: List[Any] = field(default_factory=list)  # VerificationReport
    diff: str = ""
    pictures: Optional[Dict[str, Any]] = None
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return self.verdict in PASSING

    def runs(self) -> List[Dict[str, Any]]:
        """Per device/dtype: the verdict there, the largest error and its bound, the failed checks."""
        out = []
        for report in self.reports:
            error, bound = headline_error(report.measurements)
            out.append(
                {
                    "device": report.device,
                    "dtype": report.dtype,
                    "backend": report.measurements.get("backend_name") or _backend(report.device),
                    "verdict": _report_verdict(report, self.applicability),
                    "max_error": error,
                    "bound": bound,
                    # CUDA: each SDPA backend's own error on the witness, in this dtype (context
                    # for the fixed code's error; fused kernels keep fp32 intermediates).
                    "sdpa_backends": sdpa_backend_errors(report.measurements),
                    "failed_checks": [{"name": c.name, "detail": c.detail} for c in report.failed_checks()],
                    "checks": [{"name": c.name, "passed": c.passed, "detail": c.detail} for c in report.checks],
                }
            )
        return out

    def to_json(self) -> Dict[str, Any]:
        return {
            "code": self.code,
            "name": self.name,
            "message": self.message,
            "filename": self.filename,
            "location": {"row": self.row, "column": self.column},
            "entry": self.entry,
            "fix_applicability": self.applicability,
            "verdict": self.verdict,
            "reason": self.reason,
            "runs": [
                {
                    k: ({b: _json_number(e) for b, e in v.items()} if k == "sdpa_backends" else _json_number(v))
                    for k, v in run.items()
                    if k != "checks"
                }
                for run in self.runs()
            ],
        }


def _json_number(value: Any) -> Any:
    """JSON has no NaN or infinity: a fixed output that is NaN reads as the string "nan"."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def sdpa_backend_errors(measurements: Dict[str, float]) -> Dict[str, float]:
    out: Dict[str, float] = {}
    for key, value in measurements.items():
        if key.startswith("sdpa_") and key.endswith("_max_error"):
            backend = key[len("sdpa_") :].split("_", 1)[0]
            out[backend] = max(out.get(backend, value), value)
    return out


def _backend(device: str) -> str:
    return "reference kernels (float64 naive + SDPA math)" if device == "cpu" else "all available SDPA backends"


def headline_error(measurements: Dict[str, float]) -> Tuple[Optional[float], Optional[float]]:
    """The fixed code's largest measured error against the float64 reference, with its bound."""
    worst: Tuple[Optional[float], Optional[float]] = (None, None)
    for key, value in measurements.items():
        if not key.endswith("_fixed_max_error") or "sdpa" in key:
            continue
        prefix = key[: -len("_fixed_max_error")]
        bound = measurements.get(f"{prefix}_fixed_bound", measurements.get(f"{prefix}_bound"))
        if worst[0] is None or value > worst[0]:
            worst = (value, bound)
    return worst


def _report_verdict(report: Any, applicability: str) -> str:
    if report.ok:
        return EQUIVALENT if applicability == "safe" else VERIFIED
    if any(c.name in SETUP_CHECKS for c in report.failed_checks()):
        return NOT_RUN
    return FAILED


def combine(reports: Sequence[Any], applicability: str) -> Tuple[str, str]:
    """The finding's verdict over every device/dtype, and why."""
    if not reports:
        return NOT_RUN, "nothing was run"
    verdicts = [_report_verdict(r, applicability) for r in reports]
    if FAILED in verdicts:
        bad = [r for r, v in zip(reports, verdicts) if v == FAILED]
        checks = sorted({c.name for r in bad for c in r.failed_checks()})
        where = ", ".join(f"{r.device}/{r.dtype}" for r in bad)
        return FAILED, f"{', '.join(checks)} on {where}"
    if NOT_RUN in verdicts:
        report = next(r for r, v in zip(reports, verdicts) if v == NOT_RUN)
        check = report.failed_checks()[0]
        return NOT_RUN, f"{check.name}: {check.detail}" + _hint(check.detail)
    return verdicts[0], f"{len(reports)} device/dtype run(s), every check holds"


def _hint(detail: str) -> str:
    if "needs" in detail and "--init" in detail:
        return ""
    if "choose constructor arguments" in detail or "construct both modules" in detail:
        return " (give constructor arguments with --init '{\"name\": value}' or [tool.attnlint.verify] init)"
    if "mask_format" in detail:
        return " (pass --param mask_format=key_padding|attention_mask|keep|sdpa_keep)"
    return ""


# ---------------------------------------------------------------------------------------------
# Which entry holds each finding
# ---------------------------------------------------------------------------------------------
def top_level_spans(source: str) -> List[Tuple[str, int, int]]:
    """(name, first line, last line) of every top-level class and function."""
    wrapper = MetadataWrapper(cst.parse_module(source))
    positions = wrapper.resolve(PositionProvider)
    spans = []
    for stmt in wrapper.module.body:
        if isinstance(stmt, (cst.ClassDef, cst.FunctionDef)):
            pos = positions[stmt]
            spans.append((stmt.name.value, pos.start.line, pos.end.line))
    return spans


def entry_at(spans: Sequence[Tuple[str, int, int]], line: int) -> Optional[str]:
    return next((name for name, first, last in spans if first <= line <= last), None)


def parse_target(target: str) -> Tuple[Path, Optional[str]]:
    """``src/model.py::MultiHeadAttention`` -> (path, entry); a plain path -> (path, None)."""
    path, sep, entry = target.partition("::")
    return Path(path), (entry or None) if sep else None


# ---------------------------------------------------------------------------------------------
# Verifying a file
# ---------------------------------------------------------------------------------------------
Progress = Callable[[str, "FindingVerdict", int, int], None]  # ("start" | "done", finding, i, n)


def fixable_findings(
    source: str, display: str, settings: Any, entry: Optional[str], skipped: Optional[List[str]] = None
) -> List[FindingVerdict]:
    """The findings with a fix (safe or unsafe) in ``source``, each with its entry.

    Findings of rules with no verification recipe (a fix that edits comments only, such as removing
    an unused ``noqa``, has nothing to run) are not asked for; their codes go to ``skipped``.
    """
    from attnlint.verify.recipes import recipe_for

    from attnlint.config import with_overrides
    from attnlint.engine import check_source

    result = check_source(source, display, with_overrides(settings, unsafe_fixes=True))
    if result.error:
        raise ValueError(result.error)
    spans = top_level_spans(source)
    findings = []
    for diag in sorted(result.diagnostics, key=lambda d: d.sort_key):
        if diag.fix is None or diag.fix.applicability.value == "display-only":
            continue
        if recipe_for(diag.code) is None:
            if skipped is not None:
                skipped.append(diag.code)
            continue
        owner = entry_at(spans, diag.start.line)
        if entry is not None and owner != entry:
            continue
        findings.append(
            FindingVerdict(
                code=diag.code,
                name=diag.name,
                message=diag.message,
                filename=display,
                row=diag.start.line,
                column=diag.start.column + 1,
                entry=owner,
                applicability=diag.fix.applicability.value,
            )
        )
    return findings


def verify_source(
    source: str,
    display: str,
    settings: Any,
    options: VerifyOptions,
    *,
    entry: Optional[str] = None,
    params: Optional[Dict[str, Any]] = None,
    pictures: bool = False,
    progress: Optional[Progress] = None,
    skipped: Optional[List[str]] = None,
) -> List[FindingVerdict]:
    """Verify the fix of every fixable finding in ``source`` (only ``entry``'s, when given); the
    codes of fixable findings whose rule has no recipe are appended to ``skipped``."""
    findings = fixable_findings(source, display, settings, entry, skipped)
    groups: Dict[Tuple[str, Optional[str]], List[FindingVerdict]] = {}
    for finding in findings:
        groups.setdefault((finding.code, finding.entry), []).append(finding)
    done = 0
    for (code, owner), members in groups.items():
        for finding in members:
            if progress:
                progress("start", finding, done + 1, len(findings))
        started = time.monotonic()
        _verify_group(source, display, settings, options, code, owner, members, params or {}, pictures)
        for finding in members:
            finding.seconds = time.monotonic() - started
            done += 1
            if progress:
                progress("done", finding, done, len(findings))
    return findings


def _verify_group(source, display, settings, options, code, owner, members, params, pictures) -> None:
    from attnlint.verify import params_from_facts, verify_run
    from attnlint.verify.entry_facts import entry_facts
    from attnlint.verify.recipes import recipe_for

    def settle(verdict: str, reason: str) -> None:
        for finding in members:
            finding.verdict, finding.reason = verdict, reason

    if owner is None:
        return settle(NOT_RUN, "the finding is not inside a top-level class or function; nothing to run")
    if recipe_for(code) is None:
        return settle(NOT_RUN, f"{code} has no verification recipe")
    try:
        baseline, fixed = rule_fix_pair(source, display, settings, code)
    except Exception as exc:  # noqa: BLE001
        return settle(NOT_RUN, f"the engine could not fix: {type(exc).__name__}: {exc}")
    if fixed == baseline:
        return settle(NOT_RUN, "the engine produced no fix for this finding")
    diff = "".join(
        difflib.unified_diff(
            baseline.splitlines(keepends=True),
            fixed.splitlines(keepends=True),
            f"{display} (before {code}'s fix)",
            f"{display} (after {code}'s fix)",
        )
    )

    def run_on(name: str):
        run_params = dict(params)
        init = options.init_for(name)
        if init:
            run_params["init_kwargs"] = {**init, **run_params.get("init_kwargs", {})}
        run_params = params_from_facts(entry_facts([baseline, fixed], name), run_params)
        return verify_run(
            code,
            baseline,
            fixed,
            entry=name,
            params=run_params,
            devices=options.devices,
            dtypes=options.dtypes_by_device(),
            timeout_s=options.timeout_s,
            memory_bytes=options.memory_bytes,
            pictures=pictures,
        )

    run = run_on(owner)
    if _needs_module(run.reports):
        # A helper function (`def attend(q, k, v)`) whose recipe needs a module: prove the fix
        # through the first class in the file that calls it, which is how the helper is used.
        caller = next(iter(calling_classes(baseline, owner)), None)
        if caller is not None:
            run = run_on(caller)
            for finding in members:
                finding.entry = f"{caller} (via {owner})"
    verdict, reason = combine(run.reports, members[0].applicability)
    for finding in members:
        finding.verdict, finding.reason = verdict, reason
        finding.reports, finding.diff, finding.pictures = run.reports, diff, run.pictures


def _needs_module(reports: Sequence[Any]) -> bool:
    return any(c.name == "build_modules" and "needs an nn.Module class" in c.detail for r in reports for c in r.checks)


def calling_classes(source: str, function: str) -> List[str]:
    """Top-level classes whose body names ``function``, in file order."""
    names = []
    for stmt in cst.parse_module(source).body:
        if isinstance(stmt, cst.ClassDef):
            finder = _NameFinder(function)
            stmt.visit(finder)
            if finder.found:
                names.append(stmt.name.value)
    return names


class _NameFinder(cst.CSTVisitor):
    def __init__(self, name: str) -> None:
        self.name, self.found = name, False

    def visit_Name(self, node: cst.Name) -> None:
        self.found = self.found or node.value == self.name


def rule_fix_pair(source: str, display: str, settings: Any, code: str) -> Tuple[str, str]:
    """(baseline, fixed): every other rule's fixes applied, then this rule's on top."""
    from attnlint.config import with_overrides
    from attnlint.engine import fix_source
    from attnlint.rules import registry

    others = [r.code for r in registry.all_rules() if r.code != code]
    base_settings = with_overrides(settings, unsafe_fixes=True)
    baseline = fix_source(source, display, _selecting(base_settings, others)).fixed_source or source
    fixed = fix_source(baseline, display, _selecting(base_settings, [code])).fixed_source or baseline
    return baseline, fixed


def _selecting(settings: Any, codes: List[str]) -> Any:
    from dataclasses import replace

    return replace(settings, select=list(codes), extend_select=[], ignore=[], per_file_ignores={})


def exit_code(findings: Sequence[FindingVerdict]) -> int:
    """0 only when every finding asked for verified (or is equivalent); else 1."""
    return 0 if all(f.passed for f in findings) else 1
