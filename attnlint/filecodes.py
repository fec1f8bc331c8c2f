"""Pages for the codes that are about files, not code (ruff's E902 / invalid-syntax kind).

ATN001-ATN003 are not rules: they cannot be selected, ignored or suppressed, and have no fix.
`attnlint rule ATN001` prints their page like a rule's, in the same sections.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional

from attnlint.diagnostics import (
    DOCS_URL,
    INTERNAL_ERROR_CODE,
    INTERNAL_ERROR_NAME,
    IO_ERROR_CODE,
    IO_ERROR_NAME,
    ISSUES_URL,
    SYNTAX_ERROR_CODE,
    SYNTAX_ERROR_NAME,
)
from attnlint.parseguard import MAX_CHAIN


@dataclass(frozen=True)
class FileCode:
    code: str
    name: str
    summary: str
    what: str
    why: str
    example: str

    def url(self) -> str:
        return DOCS_URL.format(name=self.name)

    def page(self) -> str:
        return (
            f"# {self.name} ({self.code})\n\n"
            f"Reported on a file, not a rule: it cannot be selected, ignored or suppressed with `# noqa`.\n\n"
            f"## What it does\n\n{self.what}\n\n"
            f"## Why is this bad?\n\n{self.why}\n\n"
            f"## Example\n\n{self.example}\n\n"
            "## Fix safety\n\nFix is not available.\n"
        )

    def record(self) -> dict:
        return {
            "code": self.code,
            "name": self.name,
            "summary": self.summary,
            "fix": "Fix is not available.",
            "fix_availability": "not",
            "fix_applicability": None,
            "options": {},
            "url": self.url(),
            "explanation": self.page(),
        }


FILE_CODES: Dict[str, FileCode] = {
    SYNTAX_ERROR_CODE: FileCode(
        SYNTAX_ERROR_CODE,
        SYNTAX_ERROR_NAME,
        "the file is not valid Python",
        "Reports a file that Python's parser rejects, at the place CPython reports, with CPython's "
        "message. This includes code nested deeper than Python's parser allows (more than 200 "
        "nested brackets, 100 indentation levels, or an expression too deep to build), which no "
        "Python version can run. The file is skipped: it is not checked and never written.",
        "attnlint cannot analyse what it cannot parse, so none of its rules ran on the file. A file "
        "written for a newer Python than the one running attnlint is parsed with LibCST's grammar "
        "(which knows Python up to 3.14) and is not reported.",
        "```python\ndef attention(q, k:      # ATN001 SyntaxError: '(' was never closed\n    return q @ k.T\n```",
    ),
    IO_ERROR_CODE: FileCode(
        IO_ERROR_CODE,
        IO_ERROR_NAME,
        "the file could not be read, or its fixes could not be written",
        "Reports a path attnlint could not check or fix: it does not exist, it cannot be read "
        "(permissions, a directory that cannot be listed), it is not a regular file (a named pipe, "
        "a socket, a symbolic link loop or a broken link), it is not valid text in its encoding, or "
        "`--fix` could not write its fixes (a read-only file or directory, or a file that changed on "
        "disk while attnlint was fixing it). The other paths are still checked.",
        "A path that was not checked is not clean: the run exits 1, and the finding is in every "
        "output format so that CI shows it. When fixes could not be written, the file's findings "
        "are reported as they stand on disk, unfixed.",
        "```text\nsrc/model.py:1:1: ATN002 cannot write fixes: the file is read-only (mode 0444); "
        "fixes were not written\n```",
    ),
    INTERNAL_ERROR_CODE: FileCode(
        INTERNAL_ERROR_CODE,
        INTERNAL_ERROR_NAME,
        "attnlint itself failed on the file (a bug: please report it)",
        "Reports a file that Python accepts but attnlint could not check: its parser (LibCST) "
        "rejected or crashed on valid code, or one of its rules raised an error. A file with one "
        f"expression chaining more than {MAX_CHAIN:,} operators (generated code) is reported here without "
        "being parsed: LibCST would crash or take minutes on it. The other files "
        "are still checked, and the run exits 2.",
        f"It is a bug in attnlint. Please report it at {ISSUES_URL} with the message and, if you "
        "can, the file (or the smallest part of it that still fails).",
        "```text\ngen.py:1:1: ATN003 LibCST, attnlint's parser, cannot parse this valid Python (...); "
        "the file was not checked; please report it\n```",
    ),
}


def lookup(code: str) -> Optional[FileCode]:
    return FILE_CODES.get(code.upper()) or next((c for c in FILE_CODES.values() if c.name == code), None)
