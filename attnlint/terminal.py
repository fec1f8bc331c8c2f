"""What only a person at a terminal sees: colour and a progress line.

Colour follows the conventions terminals and CI agree on: `--color`/`--no-color` decide; without
either, colour is on when the stream is a terminal, unless `NO_COLOR` is set (https://no-color.org)
or `TERM=dumb`; `FORCE_COLOR` turns it on when piped. The reporters stay plain: colour is laid over
their text here, so every format and test sees the same words.
"""

from __future__ import annotations

import os
import re
import sys
from typing import Optional, TextIO

_RESET = "\x1b[0m"
_BOLD = "\x1b[1m"
_RED = "\x1b[31m"
_CYAN = "\x1b[36m"
_GREEN = "\x1b[32m"
_BLUE = "\x1b[34m"

# `path:line:col: CODE [*] message`, as attnlint's text formats print a finding.
_HEADER = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<code>[A-Z]+\d+)(?P<fix> \[\*\])? ")
_GUTTER = re.compile(r"^(?P<gutter>\s*\d*\s*\|)")
_SUMMARY = re.compile(r"^(Found \d+ errors?.*|\[\*\] .*|No fixes available.*)$")


def wants_colour(choice: Optional[bool], stream: TextIO) -> bool:
    """`choice` is --color (True), --no-color (False) or neither (None)."""
    if choice is not None:
        return choice
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    if os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def colourise(text: str) -> str:
    """Colour a `full` or `concise` report line by line (ruff's palette: bold path, red code)."""
    return "\n".join(_colour_line(line) for line in text.split("\n"))


def _colour_line(line: str) -> str:
    match = _HEADER.match(line)
    if match:
        fix = f"{_CYAN}{match['fix']}{_RESET}" if match["fix"] else ""
        return (
            f"{_BOLD}{match['path']}{_RESET}{_CYAN}:{_RESET}{match['line']}{_CYAN}:{_RESET}{match['col']}"
            f"{_CYAN}:{_RESET} {_BOLD}{_RED}{match['code']}{_RESET}{fix} {line[match.end():]}"
        )
    if line == "All checks passed!":
        return f"{_BOLD}{_GREEN}{line}{_RESET}"
    if _SUMMARY.match(line):
        return f"{_BOLD}{line}{_RESET}"
    gutter = _GUTTER.match(line)
    if gutter:
        return f"{_BLUE}{gutter['gutter']}{_RESET}{line[gutter.end():]}"
    return line


class Progress:
    """`Checked 120/4000 files` on one stderr line, redrawn in place; silent unless stderr is a
    terminal (CI logs and pipes never see it) and the run is long enough to want it."""

    MIN_FILES = 50

    def __init__(self, total: int, stream: Optional[TextIO] = None, enabled: bool = True) -> None:
        self.total = total
        self.stream = stream or sys.stderr
        isatty = getattr(self.stream, "isatty", None)
        self.enabled = enabled and total >= self.MIN_FILES and bool(isatty and isatty())
        self._shown = -1

    def __call__(self, done: int) -> None:
        if not self.enabled or done == self._shown:
            return
        self._shown = done
        self.stream.write(f"\rChecked {done}/{self.total} files")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled and self._shown >= 0:
            self.stream.write("\r\x1b[K")  # erase the line, so the report starts clean
            self.stream.flush()
