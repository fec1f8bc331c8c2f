"""``attnlint check --fix --verify``: apply only the fixes whose verification passes.

:func:`verified_fixes` is the engine's ``fix_gate``: before fixing a file it verifies every fix the
settings would apply (:mod:`attnlint.verify.session`), then lets through only the fixes of a rule in
an entry (top-level class or function) whose verdict is ``verified`` or ``equivalent``. A ``failed``
or ``not-run`` fix is left unapplied and said so on stderr; the finding stays in the report.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable, Dict, Tuple

from attnlint.diagnostics import Diagnostic


def verified_fixes(source: str, path: str, settings) -> Callable[[str, Diagnostic], bool]:
    from attnlint.verify.options import load_verify_options
    from attnlint.verify.session import entry_at, top_level_spans, verify_source

    options = load_verify_options(Path(path).resolve().parent, settings.config_path)
    findings = [
        f
        for f in verify_source(source, path, settings, options, progress=_progress)
        if settings.fix_allowed(f.code, _applicability(f.applicability))
    ]
    # A rule without a recipe has no verdict, so its fixes are not applied under --verify
    # (allow() below finds no entry for it in `verdicts`).
    verdicts: Dict[Tuple[str, str], bool] = {}
    for f in findings:
        if f.entry is not None:
            verdicts[(f.code, f.entry)] = verdicts.get((f.code, f.entry), True) and f.passed
        if not f.passed:
            print(
                f"attnlint: {path}:{f.row}:{f.column}: {f.code} fix not applied: verification {f.verdict} ({f.reason})",
                file=sys.stderr,
            )
    spans_by_source: Dict[str, list] = {}

    def allow(current: str, diagnostic: Diagnostic) -> bool:
        if current not in spans_by_source:
            spans_by_source.clear()
            spans_by_source[current] = top_level_spans(current)
        owner = entry_at(spans_by_source[current], diagnostic.start.line)
        return owner is not None and verdicts.get((diagnostic.code, owner), False)

    return allow


def _progress(event: str, finding, index: int, total: int) -> None:
    if event == "done":
        where = f"{finding.filename}:{finding.row}:{finding.column} {finding.code} in {finding.entry or '?'}"
        print(f"attnlint: verify [{index}/{total}] {where}: {finding.verdict}", file=sys.stderr, flush=True)


def _applicability(value: str):
    from attnlint.diagnostics import Applicability

    return Applicability(value)
