"""Human output: `full` (ruff's default look, with source snippets) and `concise` (one line each).

Both end with ruff's summary lines, which users and scripts recognise (`Found 8 errors.`,
`[*] 4 fixable with the --fix option.`, `All checks passed!`), word for word.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence

from attnlint.diagnostics import Diagnostic, FileResult, Position
from attnlint.reporters.common import (
    SourceLines,
    cell_position,
    count_fixes,
    fix_applies,
    iter_diagnostics,
    one_based,
    plural,
    rule_name,
    total_fixed,
)

# A long multi-line span (a whole function call) would flood the terminal; show its ends only.
_MAX_SNIPPET_LINES = 6
_TAB = "    "


def render_text(
    results: Sequence[FileResult],
    *,
    full: bool,
    unsafe_fixes: bool,
    show_fixes: bool,
    statistics: bool,
    fix_mode: bool,
) -> str:
    out: List[str] = []
    if statistics:
        # ruff's --statistics replaces the per-diagnostic listing with the table.
        out.extend(statistics_table(results, unsafe_fixes))
    else:
        for result, diag in iter_diagnostics(results):
            out.append(header(diag, unsafe_fixes, result))
            if full:
                out.extend(snippet(diag, SourceLines(result.source), _line_label(result)))
                out.append("")
    if show_fixes and total_fixed(results):
        _blank_line(out)
        out.extend(fix_summary(results))
        out.append("")
    out.extend(summary_lines(results, unsafe_fixes=unsafe_fixes, fix_mode=fix_mode))
    return "\n".join(out) + "\n"


def render_grouped(results: Sequence[FileResult], *, unsafe_fixes: bool, fix_mode: bool) -> str:
    """ruff's `grouped`: a heading per file, then `row:col CODE message` aligned, then the summary."""
    out: List[str] = []
    for result in results:
        if not result.diagnostics:
            continue
        # A notebook's rows read `cell N:row`, as in the full output.
        starts = []
        for d in result.diagnostics:
            cell, start = cell_position(result, d.start)
            row, col = one_based(start)
            starts.append((f"cell {cell}:{row}" if cell is not None else str(row), col))
        row_width = max(len(str(row)) for row, _ in starts)
        col_width = max(len(str(col)) for _, col in starts)
        out.append(f"{result.path}:")
        for diag, (row, col) in zip(result.diagnostics, starts):
            marker = " [*]" if fix_applies(diag.fix, unsafe_fixes) else ""
            out.append(f"  {row:>{row_width}}:{col:<{col_width}} {diag.code}{marker} {diag.message}")
        out.append("")
    out.extend(summary_lines(results, unsafe_fixes=unsafe_fixes, fix_mode=fix_mode))
    return "\n".join(out) + "\n"


def _blank_line(out: List[str]) -> None:
    """Separate blocks by exactly one blank line (full mode already ends each diagnostic with one)."""
    if out and out[-1] != "":
        out.append("")


def header(diag: Diagnostic, unsafe_fixes: bool, result: Optional[FileResult] = None) -> str:
    """`path:line:col: CODE message`; in a notebook `path:cell N:line:col: ...` (ruff's form)."""
    cell, start = cell_position(result, diag.start) if result is not None else (None, diag.start)
    line, column = one_based(start)
    where = f"cell {cell}:{line}:{column}" if cell is not None else f"{line}:{column}"
    marker = " [*]" if fix_applies(diag.fix, unsafe_fixes) else ""
    return f"{diag.path}:{where}: {diag.code}{marker} {diag.message}"


def _line_label(result: FileResult) -> Callable[[int], int]:
    """Snippet gutters number a notebook's lines within their cell."""
    if result.notebook is None:
        return lambda line: line
    return lambda line: cell_position(result, Position(line, 0))[1].line


# ---------------------------------------------------------------------------------------------
# Source snippet
# ---------------------------------------------------------------------------------------------
def _char_width(char: str) -> int:
    """Terminal cells for one character, so that carets line up under CJK text and accents."""
    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def _width(text: str) -> int:
    return sum(_char_width(c) for c in text.replace("\t", _TAB))


@dataclass(frozen=True)
class _Underline:
    line: int
    start: int  # code-point columns within that line, end exclusive
    end: int


def _underlines(diag: Diagnostic, lines: SourceLines) -> List[_Underline]:
    """One underline per source line the span covers."""
    start, end = diag.start, diag.end
    last = end.line
    # A span that ends at column 0 ends with the previous line's break: don't show an empty line.
    if end.line > start.line and end.column == 0:
        last -= 1
    spans = []
    for number in range(start.line, last + 1):
        text = lines.line(number)
        if text is None:
            break
        indent = len(text) - len(text.lstrip())
        begin = start.column if number == start.line else indent
        stop = end.column if number == end.line else len(text)
        spans.append(_Underline(number, begin, max(begin, stop)))
    if len(spans) > _MAX_SNIPPET_LINES:
        spans = spans[:3] + spans[-2:]
    return spans


def snippet(diag: Diagnostic, lines: SourceLines, number: Callable[[int], int] = lambda line: line) -> List[str]:
    """The annotated source, ruff style::

      |
    3 |     w = q @ k.transpose(-1, -2)
      |             ^^^^^^^^^^^^^^^^^^^ ATN101
      |
      = help: Scale the scores
    """
    spans = _underlines(diag, lines)
    gutter = max((len(str(number(span.line))) for span in spans), default=1)
    pad = " " * gutter
    out: List[str] = []
    if spans:
        out.append(f"{pad} |")
        previous = None
        for index, span in enumerate(spans):
            if previous is not None and span.line != previous + 1:
                out.append(f"{'.' * gutter} |")  # lines elided from a long span
            previous = span.line
            text = lines.line(span.line) or ""
            out.append(f"{number(span.line):>{gutter}} | {text.replace(chr(9), _TAB)}".rstrip())
            carets = "^" * max(1, _width(text[span.start : span.end]))
            label = f" {diag.code}" if index == len(spans) - 1 else ""
            out.append(f"{pad} | {' ' * _width(text[: span.start])}{carets}{label}")
        out.append(f"{pad} |")
    if diag.fix is not None:
        out.append(f"{pad} = help: {diag.fix.message}")
    return out


# ---------------------------------------------------------------------------------------------
# Summaries
# ---------------------------------------------------------------------------------------------
def summary_lines(results: Sequence[FileResult], *, unsafe_fixes: bool, fix_mode: bool) -> List[str]:
    remaining = sum(len(result.diagnostics) for result in results)
    fixed = total_fixed(results) if fix_mode else 0
    out: List[str] = []
    if fixed:
        out.append(f"Found {plural(fixed + remaining, 'error')} ({fixed} fixed, {remaining} remaining).")
    elif remaining:
        out.append(f"Found {plural(remaining, 'error')}.")
    else:
        out.append("All checks passed!")

    counts = count_fixes(results, unsafe_fixes)
    hidden = f"{plural(counts.hidden, 'hidden fix', 'hidden fixes')} can be enabled with the --unsafe-fixes option"
    if counts.applicable and counts.hidden:
        out.append(f"[*] {counts.applicable} fixable with the --fix option ({hidden}).")
    elif counts.applicable:
        out.append(f"[*] {counts.applicable} fixable with the --fix option.")
    elif counts.hidden:
        out.append(f"No fixes available ({hidden}).")
    return out


def fix_summary(results: Sequence[FileResult]) -> List[str]:
    """ruff's --show-fixes block: what was fixed, per file and code, most frequent first."""
    total = total_fixed(results)
    counts = [n for result in results for n in result.fixed.values()]
    digits = len(str(max(counts)))
    out = [f"Fixed {plural(total, 'error')}:"]
    for result in sorted(results, key=lambda r: r.path):
        if not any(result.fixed.values()):
            continue
        out.append(f"- {result.path}:")
        for code, count in sorted(result.fixed.items(), key=lambda item: (-item[1], item[0])):
            if not count:
                continue
            name = rule_name(code)
            suffix = f" ({name})" if name else ""
            out.append(f"    {count:>{digits}} × {code}{suffix}")
    return out


@dataclass
class Statistic:
    code: str
    name: str
    count: int = 0
    fixable: bool = False


def statistics(results: Sequence[FileResult], unsafe_fixes: bool) -> List[Statistic]:
    """Counts by code, most frequent first (ties by code), as ruff orders them."""
    by_code: Dict[str, Statistic] = {}
    for _, diag in iter_diagnostics(results):
        stat = by_code.setdefault(diag.code, Statistic(diag.code, diag.name))
        stat.count += 1
        stat.fixable = stat.fixable or fix_applies(diag.fix, unsafe_fixes)
    return sorted(by_code.values(), key=lambda s: (-s.count, s.code))


def statistics_table(results: Sequence[FileResult], unsafe_fixes: bool) -> List[str]:
    """ruff's layout: counts right-aligned, codes padded, `[*] `/`[ ] ` only if anything is fixable."""
    stats = statistics(results, unsafe_fixes)
    if not stats:
        return []
    count_width = max(len(str(s.count)) for s in stats)
    code_width = max(len(s.code) for s in stats)
    any_fixable = any(s.fixable for s in stats)
    out = []
    for s in stats:
        marker = ("[*] " if s.fixable else "[ ] ") if any_fixable else ""
        out.append(f"{s.count:>{count_width}}\t{s.code:<{code_width}}\t{marker}{s.name}")
    return out
