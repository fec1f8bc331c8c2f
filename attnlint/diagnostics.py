"""The data that flows from rules to fixes and reporters.

Positions follow LibCST: lines are 1-based, columns are 0-based code points, ends are exclusive.
Reporters convert to whatever their consumer wants (1-based columns, UTF-8 byte columns).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Optional, Tuple

# The project's home; its docs/ folder is the documentation (rule pages are docs/rules/<name>.md).
REPOSITORY_URL = "https://github.com/attnlint/attnlint"
DOCS_HOME = f"{REPOSITORY_URL}/blob/main/docs/README.md"
DOCS_URL = f"{REPOSITORY_URL}/blob/main/docs/rules/{{name}}.md"
# Where ATN003 (attnlint failed on a file) asks users to report it.
ISSUES_URL = f"{REPOSITORY_URL}/issues"


@dataclass(frozen=True, order=True)
class Position:
    line: int  # 1-based
    column: int  # 0-based, in code points


class Applicability(str, enum.Enum):
    """How sure we are that a fix keeps behaviour where the old code was right (ruff's model)."""

    SAFE = "safe"  # identical wherever the old code was correct; applied by --fix
    UNSAFE = "unsafe"  # changes numbers; applied only with --unsafe-fixes
    DISPLAY_ONLY = "display-only"  # shown, never applied


@dataclass(frozen=True)
class Edit:
    start: Position
    end: Position
    content: str


@dataclass(frozen=True)
class Fix:
    message: str
    applicability: Applicability
    edits: Tuple[Edit, ...]


@dataclass(frozen=True)
class Diagnostic:
    code: str
    name: str
    message: str
    path: str
    start: Position
    end: Position
    fix: Optional[Fix] = None
    # The line a noqa comment for this finding belongs on.
    noqa_row: int = 0
    url: Optional[str] = None

    @property
    def sort_key(self):
        return (self.path, self.start, self.code)


# Findings about files rather than code (ruff's E999 / E902): not rules, never suppressible.
SYNTAX_ERROR_CODE = "ATN001"
SYNTAX_ERROR_NAME = "syntax-error"
IO_ERROR_CODE = "ATN002"
IO_ERROR_NAME = "io-error"
# attnlint itself failed on this file (a bug to report); the other files are still checked.
INTERNAL_ERROR_CODE = "ATN003"
INTERNAL_ERROR_NAME = "internal-error"


@dataclass
class FileResult:
    """What checking (and maybe fixing) one file produced."""

    path: str
    diagnostics: list = field(default_factory=list)
    # The source the diagnostics refer to (after fixes, if any were applied).
    source: Optional[str] = None
    # Number of fixes applied, by code.
    fixed: dict = field(default_factory=dict)
    # The fixed text when fixes were computed but not written (--diff, stdin).
    fixed_source: Optional[str] = None
    original_source: Optional[str] = None
    # Set when the file could not be read or parsed; the file is skipped and nothing is written.
    error: Optional[str] = None
    # attnlint itself failed on the file (exit code 2, as ruff does for internal errors).
    internal_error: bool = False
    # Fixes that could not be applied (they would not parse, or kept changing): shown on stderr.
    fix_warnings: list = field(default_factory=list)
    # Malformed suppression comments (attnlint.noqa.SuppressionWarning): shown on stderr, as ruff does.
    warnings: list = field(default_factory=list)
    # Other files of the project whose facts the analysis used (`from .data import PAD_ID`): the
    # result is only as fresh as they are, so it is not cached.
    depends_on: list = field(default_factory=list)
    # For a notebook: the map from the analysed program's lines to cells (attnlint.notebook.CellIndex);
    # `source` is then that program and positions are program positions.
    notebook: Optional[object] = None
