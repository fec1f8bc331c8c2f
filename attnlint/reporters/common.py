"""What every reporter shares: position conversions, fix counting, rule look-ups, hashing.

Diagnostics carry LibCST positions (1-based lines, 0-based code-point columns, exclusive ends).
Each consumer wants something else: text, JSON, GitHub and SARIF count columns from 1 in code
points; reviewdog counts UTF-8 bytes from 1. All conversions live here so that the formats cannot
drift apart (ruff's rdjson output is off on non-ASCII lines because it converts in one place only).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Iterator, List, Optional, Sequence, Tuple

from attnlint.diagnostics import (
    DOCS_URL,
    SYNTAX_ERROR_CODE,
    SYNTAX_ERROR_NAME,
    Applicability,
    Diagnostic,
    FileResult,
    Fix,
    Position,
)
from attnlint.rules import registry

TOOL_NAME = "attnlint"

# Only these end a line for LibCST (and Python's tokenizer). `str.splitlines` also splits on form
# feeds, vertical tabs and Unicode separators, which would shift every line number after them.
from attnlint.sourcetext import split_lines as _split_lines


def split_lines(source: str) -> List[str]:
    """The file's lines as LibCST numbers them, without their line endings."""
    return _split_lines(source)


class SourceLines:
    """One file's text, indexed by LibCST line number; tolerates a missing source."""

    def __init__(self, source: Optional[str]) -> None:
        self._lines: Optional[List[str]] = None if source is None else split_lines(source)

    @property
    def known(self) -> bool:
        return self._lines is not None

    def line(self, number: int) -> Optional[str]:
        """Line ``number`` (1-based), or None when the source is unknown or the line is past EOF."""
        if self._lines is None or not 1 <= number <= len(self._lines):
            return None
        return self._lines[number - 1]

    def byte_column(self, pos: Position) -> int:
        """1-based UTF-8 byte column of ``pos`` (reviewdog's unit).

        Without the source we cannot know the bytes; the code-point column is then the best guess
        (and exact on ASCII lines). A column past the end of the line (an end at the line break,
        or an insertion at EOF) counts one byte per missing character, so it stays monotonic.
        """
        text = self.line(pos.line)
        if text is None:
            return pos.column + 1
        prefix = text[: pos.column]
        overflow = max(0, pos.column - len(text))
        # surrogatepass: a lone surrogate in a str literal must not crash the whole report.
        return len(prefix.encode("utf-8", "surrogatepass")) + overflow + 1


def one_based(pos: Position) -> Tuple[int, int]:
    """(line, 1-based code-point column): what text, JSON, GitHub and SARIF all use."""
    return pos.line, pos.column + 1


# ---------------------------------------------------------------------------------------------
# Notebooks: positions are positions in the analysed program (the code cells concatenated); each
# format says where that is in the notebook. Text and JSON: the cell and the line in it (ruff's
# `cell` field); formats that annotate the file on disk: the place in the notebook's JSON text.
# ---------------------------------------------------------------------------------------------
def cell_position(result: FileResult, pos: Position) -> Tuple[Optional[int], Position]:
    """(cell number, position in the cell) for a notebook, (None, pos) for a Python file."""
    if result.notebook is None:
        return None, pos
    return result.notebook.cell_position(pos)


def file_position(result: FileResult, pos: Position) -> Position:
    """The position in the file on disk: in a notebook, inside the cell's JSON `source` string."""
    if result.notebook is None:
        return pos
    return result.notebook.json_position(pos)


def file_text(result: FileResult) -> Optional[str]:
    """The text of the file on disk (a notebook's JSON, not the program analysed)."""
    if result.notebook is None:
        return result.source
    return result.notebook.json_text


def on_disk(result: FileResult) -> FileResult:
    """The result as formats that annotate the file on disk see it (GitHub, SARIF, reviewdog,
    GitLab). A Python file is returned as is. For a notebook, positions move into the JSON text
    and messages start with `cell N, line L:`; fixes are dropped, because an edit of the program
    is not an edit of the JSON text (`attnlint --fix` applies them)."""
    if result.notebook is None:
        return result
    from dataclasses import replace

    diagnostics = []
    for diag in result.diagnostics:
        cell, start = cell_position(result, diag.start)
        diagnostics.append(
            replace(
                diag,
                message=f"cell {cell}, line {start.line}: {diag.message}",
                start=file_position(result, diag.start),
                end=file_position(result, diag.end),
                noqa_row=file_position(result, Position(diag.noqa_row or 1, 0)).line,
                fix=None,
            )
        )
    return replace(result, diagnostics=diagnostics, source=file_text(result), notebook=None)


def iter_diagnostics(results: Sequence[FileResult]) -> Iterator[Tuple[FileResult, Diagnostic]]:
    """Every diagnostic with its file, in report order (files as given, diagnostics sorted)."""
    for result in results:
        for diag in result.diagnostics:
            yield result, diag


# ---------------------------------------------------------------------------------------------
# Fixes
# ---------------------------------------------------------------------------------------------
def fix_applies(fix: Optional[Fix], unsafe_fixes: bool) -> bool:
    """Would `--fix` apply this fix (ruff's `[*]`)? Display-only fixes never apply."""
    if fix is None:
        return False
    if fix.applicability is Applicability.SAFE:
        return True
    return unsafe_fixes and fix.applicability is Applicability.UNSAFE


@dataclass(frozen=True)
class FixCounts:
    applicable: int  # applied by --fix as configured now
    hidden: int  # unsafe fixes that --unsafe-fixes would enable


def count_fixes(results: Sequence[FileResult], unsafe_fixes: bool) -> FixCounts:
    applicable = hidden = 0
    for _, diag in iter_diagnostics(results):
        if fix_applies(diag.fix, unsafe_fixes):
            applicable += 1
        elif diag.fix is not None and diag.fix.applicability is Applicability.UNSAFE:
            hidden += 1
    return FixCounts(applicable, hidden)


def total_fixed(results: Sequence[FileResult]) -> int:
    return sum(sum(result.fixed.values()) for result in results)


def plural(count: int, singular: str, plural_form: Optional[str] = None) -> str:
    """`1 error`, `2 errors`; `1 fix`, `2 fixes` (ruff's wording)."""
    word = singular if count == 1 else (plural_form or singular + "s")
    return f"{count} {word}"


# ---------------------------------------------------------------------------------------------
# Rules and the tool
# ---------------------------------------------------------------------------------------------
def rule_name(code: str) -> Optional[str]:
    """The kebab-case name for a code, for places that only have the code (fixed counts)."""
    if code == SYNTAX_ERROR_CODE:
        return SYNTAX_ERROR_NAME
    rule = registry.by_code().get(code)
    return rule.name if rule is not None else None


def diagnostic_url(diag: Diagnostic) -> str:
    return diag.url or rule_page_url(diag.name)


def rule_page_url(name: str) -> str:
    """The rule's page, docs/rules/<name>.md, on the project's repository."""
    return DOCS_URL.format(name=name)


def tool_version() -> str:
    """`attnlint.__version__` when the package defines it, else the installed distribution's."""
    import attnlint

    version = getattr(attnlint, "__version__", None)
    if isinstance(version, str):
        return version
    from importlib import metadata

    try:
        return metadata.version(TOOL_NAME)
    except metadata.PackageNotFoundError:
        # Running from a source tree that was never installed (e.g. tests on a bare checkout).
        return "0+unknown"


def stable_hash(*parts: object, length: int = 16) -> str:
    """A hex digest that is the same on every machine and Python (unlike `hash()`)."""
    # NUL separators: ("ab", "c") and ("a", "bc") must not collide.
    data = "\0".join(str(part) for part in parts).encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()[:length]
