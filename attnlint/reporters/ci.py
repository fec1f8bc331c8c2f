"""Formats read by CI services: GitHub workflow commands, reviewdog's rdjson, GitLab Code Quality."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Sequence

from attnlint.diagnostics import DOCS_HOME, Applicability, Diagnostic, FileResult, Position
from attnlint.reporters.common import (
    TOOL_NAME,
    SourceLines,
    diagnostic_url,
    on_disk,
    one_based,
    stable_hash,
)
from attnlint.reporters.suggestions import build_suggestion


# ---------------------------------------------------------------------------------------------
# GitHub Actions workflow commands
# ---------------------------------------------------------------------------------------------
def _escape_data(text: str) -> str:
    # `%` first, or the escapes introduced below would be escaped again.
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    # Properties are `key=value` pairs separated by `,` and ended by `::`.
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_annotation(diag: Diagnostic) -> str:
    line, col = one_based(diag.start)
    end_line, end_col = one_based(diag.end)
    properties = ",".join(
        f"{key}={_escape_property(str(value))}"
        for key, value in (
            ("title", f"{TOOL_NAME} ({diag.code})"),
            ("file", diag.path),
            ("line", line),
            ("col", col),
            ("endLine", end_line),
            ("endColumn", end_col),
        )
    )
    return f"::error {properties}::{_escape_data(f'{diag.code} {diag.message}')}"


def render_github(results: Sequence[FileResult], full_report: str) -> str:
    """Annotations, then the full report: GitHub shows only 10 error annotations per step, so the
    log must hold everything (lines not starting with `::` are printed as they are)."""
    annotations = [github_annotation(d) for r in map(on_disk, results) for d in r.diagnostics]
    return "".join(line + "\n" for line in annotations) + full_report


# ---------------------------------------------------------------------------------------------
# reviewdog Diagnostic Result (rdjson)
# ---------------------------------------------------------------------------------------------
_RDJSON_SEVERITY = "ERROR"


def _rdjson_range(lines: SourceLines, start: Position, end: Position) -> Dict[str, Any]:
    # reviewdog counts columns in UTF-8 bytes from 1; its range end is exclusive, like ours.
    return {
        "start": {"line": start.line, "column": lines.byte_column(start)},
        "end": {"line": end.line, "column": lines.byte_column(end)},
    }


def _rdjson_diagnostic(diag: Diagnostic, lines: SourceLines, source: Optional[str]) -> Dict[str, Any]:
    entry: Dict[str, Any] = {
        "message": diag.message,
        "location": {"path": diag.path, "range": _rdjson_range(lines, diag.start, diag.end)},
        "severity": _RDJSON_SEVERITY,
        "code": {"value": diag.code, "url": diagnostic_url(diag)},
    }
    # Suggestions become one-click "commit suggestion" buttons on pull requests: offer only fixes
    # that cannot change behaviour, whatever --unsafe-fixes says for local runs. reviewdog wants
    # one suggestion whose lines are the comment's: whole lines (no columns), replaced by `text`.
    if diag.fix is not None and diag.fix.applicability is Applicability.SAFE and source is not None:
        suggestion = build_suggestion(source, [diag])
        if suggestion is not None:
            entry["suggestions"] = [
                {
                    "range": {"start": {"line": suggestion.first}, "end": {"line": suggestion.last}},
                    "text": suggestion.text,
                }
            ]
    return entry


def render_rdjson(results: Sequence[FileResult]) -> str:
    diagnostics: List[Dict[str, Any]] = []
    for result in map(on_disk, results):
        lines = SourceLines(result.source)
        diagnostics.extend(_rdjson_diagnostic(diag, lines, result.source) for diag in result.diagnostics)
    report = {
        "source": {"name": TOOL_NAME, "url": DOCS_HOME},
        "severity": _RDJSON_SEVERITY,
        "diagnostics": diagnostics,
    }
    return json.dumps(report, indent=2, ensure_ascii=False) + "\n"


# ---------------------------------------------------------------------------------------------
# GitLab Code Quality
# ---------------------------------------------------------------------------------------------
def _gitlab_fingerprint(diag: Diagnostic, seen: Dict[str, int]) -> str:
    """Path, code, span and message; a counter separates exact duplicates, because GitLab drops
    findings whose fingerprints collide."""
    start, end = diag.start, diag.end
    span = (start.line, start.column, end.line, end.column)
    base = stable_hash(diag.path, diag.code, *span, diag.message, length=32)
    occurrence = seen.get(base, 0)
    seen[base] = occurrence + 1
    return base if occurrence == 0 else stable_hash(base, occurrence, length=32)


def render_gitlab(results: Sequence[FileResult]) -> str:
    seen: Dict[str, int] = {}
    issues = []
    for result in map(on_disk, results):
        for diag in result.diagnostics:
            issues.append(
                {
                    "description": f"{diag.code} {diag.message}",
                    "check_name": diag.code,
                    "fingerprint": _gitlab_fingerprint(diag, seen),
                    # GitLab's scale: info, minor, major, critical, blocker. Findings are bugs.
                    "severity": "major",
                    "location": {
                        "path": diag.path,
                        "lines": {"begin": diag.start.line, "end": diag.end.line},
                    },
                }
            )
    return json.dumps(issues, indent=2, ensure_ascii=False) + "\n"


# ---------------------------------------------------------------------------------------------
# ruff's other CI formats: pylint, azure, junit (same text, field for field, as ruff writes)
# ---------------------------------------------------------------------------------------------
def render_pylint(results: Sequence[FileResult]) -> str:
    """`path:line: [CODE] message`, flake8's and ruff's pylint format."""
    return "".join(
        f"{d.path}:{d.start.line}: [{d.code}] {d.message}\n" for r in map(on_disk, results) for d in r.diagnostics
    )


def render_azure(results: Sequence[FileResult]) -> str:
    """Azure Pipelines `task.logissue` logging commands, one per finding."""
    out = []
    for result in map(on_disk, results):
        for diag in result.diagnostics:
            line, column = one_based(diag.start)
            out.append(
                f"##vso[task.logissue type=error;sourcepath={diag.path};linenumber={line};"
                f"columnnumber={column};code={diag.code};]{_one_line(diag.message)}\n"
            )
    return "".join(out)


def _one_line(text: str) -> str:
    # A logging command ends at the line break; a message spanning lines would lose its tail.
    return " ".join(text.splitlines())


def _xml(text: str) -> str:
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&apos;")
    )


def _junit_classname(path: str) -> str:
    """ruff's: the path without its extension (`src/model.py` -> `src/model`)."""
    parent, _, name = path.replace("\\", "/").rpartition("/")
    stem = name.rsplit(".", 1)[0] if "." in name.lstrip(".") else name
    return f"{parent}/{stem}" if parent else stem


def render_junit(results: Sequence[FileResult]) -> str:
    """JUnit XML for CI test-report views: one test suite per file, one failed test per finding."""
    files = [on_disk(r) for r in results if r.diagnostics]
    total = sum(len(r.diagnostics) for r in files)
    out = ['<?xml version="1.0" encoding="UTF-8"?>']
    indent = "    "
    if not files:
        out.append(f'<testsuites name="{TOOL_NAME}" tests="1" failures="0" errors="0">')
        out.append(
            f'{indent}<testsuite name="{TOOL_NAME}" tests="1" disabled="0" errors="0" failures="0" '
            f'package="org.{TOOL_NAME}">'
        )
        out.append(f'{indent * 2}<testcase name="No errors found" classname="{TOOL_NAME}">')
        out.append(f"{indent * 2}</testcase>")
        out.append(f"{indent}</testsuite>")
        out.append("</testsuites>")
        return "\n".join(out) + "\n"
    out.append(f'<testsuites name="{TOOL_NAME}" tests="{total}" failures="{total}" errors="0">')
    for result in files:
        count = len(result.diagnostics)
        out.append(
            f'{indent}<testsuite name="{_xml(result.path)}" tests="{count}" disabled="0" errors="0" '
            f'failures="{count}" package="org.{TOOL_NAME}">'
        )
        for diag in result.diagnostics:
            line, column = one_based(diag.start)
            message = _xml(diag.message)
            out.append(
                f'{indent * 2}<testcase name="org.{TOOL_NAME}.{diag.code}" '
                f'classname="{_xml(_junit_classname(diag.path))}" line="{line}" column="{column}">'
            )
            out.append(f'{indent * 3}<failure message="{message}">line {line}, col {column}, {message}</failure>')
            out.append(f"{indent * 2}</testcase>")
        out.append(f"{indent}</testsuite>")
    out.append("</testsuites>")
    return "\n".join(out) + "\n"
