"""Output formats. One entry point, :func:`render`, so the CLI never cares which format it prints.

Formats and who reads them:
- ``full`` / ``concise``: people (ruff's look and summary lines);
- ``json`` / ``json-lines``: scripts (ruff's field names);
- ``github``: GitHub Actions annotations; ``sarif``: GitHub code scanning and other SARIF viewers;
- ``rdjson``: reviewdog; ``gitlab``: GitLab Code Quality;
- ``github-review``: the body of a GitHub pull-request review (needs ``--diff-base``);
- ``grouped``, ``pylint``, ``azure`` (Azure Pipelines), ``junit`` (CI test reports): as ruff writes them.

Reporters only format: they never print, and they do not report unreadable files on their own
(the CLI warns about ``FileResult.error`` on stderr, as ruff does); SARIF, the one format with a
place for them, lists them as tool notifications.
"""

from __future__ import annotations

from typing import Mapping, Optional, Sequence

from attnlint.changes import FileChanges
from attnlint.diagnostics import FileResult
from attnlint.reporters.ci import (
    render_azure,
    render_github,
    render_gitlab,
    render_junit,
    render_pylint,
    render_rdjson,
)
from attnlint.reporters.github_review import render_github_review
from attnlint.reporters.json_formats import render_json, render_json_lines
from attnlint.reporters.sarif import render_sarif
from attnlint.reporters.text import render_grouped, render_text

__all__ = ["FORMATS", "STATISTICS_FORMATS", "render"]

FORMATS = (
    "full",
    "concise",
    "grouped",
    "json",
    "json-lines",
    "junit",
    "github",
    "github-review",
    "sarif",
    "rdjson",
    "gitlab",
    "pylint",
    "azure",
)
# As in ruff, --statistics has a text and a JSON form only.
STATISTICS_FORMATS = ("full", "concise", "json")


def render(
    fmt: str,
    results: Sequence[FileResult],
    *,
    unsafe_fixes: bool = False,
    show_fixes: bool = False,
    statistics: bool = False,
    fix_mode: bool = False,
    diff_scope: Optional[Mapping[str, FileChanges]] = None,
) -> str:
    """The whole report for ``results`` (one FileResult per checked file) in format ``fmt``.

    ``unsafe_fixes`` decides which fixes count as applicable (``[*]``, summary counts);
    ``show_fixes`` lists what was fixed; ``fix_mode`` says fixes were applied this run, so the
    summary reads ``Found N errors (F fixed, R remaining).``; ``diff_scope`` is each file's changes
    under ``--diff-base`` (by display path), which ``github-review`` needs. Raises ValueError for an unknown
    format, or for ``statistics`` with a format that has no statistics form.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown output format {fmt!r}; choose from {', '.join(FORMATS)}")
    if statistics and fmt not in STATISTICS_FORMATS:
        raise ValueError(
            f"--statistics is not supported with --output-format {fmt}; use one of {', '.join(STATISTICS_FORMATS)}"
        )
    results = list(results)

    def text(full: bool) -> str:
        return render_text(
            results,
            full=full,
            unsafe_fixes=unsafe_fixes,
            show_fixes=show_fixes,
            statistics=statistics,
            fix_mode=fix_mode,
        )

    if fmt == "full":
        return text(full=True)
    if fmt == "concise":
        return text(full=False)
    if fmt == "json":
        return render_json(results, statistics_only=statistics, unsafe_fixes=unsafe_fixes)
    if fmt == "json-lines":
        return render_json_lines(results)
    if fmt == "github":
        return render_github(results, text(full=True))
    if fmt == "sarif":
        return render_sarif(results)
    if fmt == "rdjson":
        return render_rdjson(results)
    if fmt == "gitlab":
        return render_gitlab(results)
    if fmt == "grouped":
        return render_grouped(results, unsafe_fixes=unsafe_fixes, fix_mode=fix_mode)
    if fmt == "github-review":
        return render_github_review(results, diff_scope, unsafe_fixes=unsafe_fixes)
    if fmt == "junit":
        return render_junit(results)
    if fmt == "pylint":
        return render_pylint(results)
    return render_azure(results)
