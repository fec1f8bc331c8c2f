"""Lines as LibCST and Python count them: only `\\r\\n`, `\\r` and `\\n` end a line.

`str.splitlines()` also breaks at form feeds, `\\x1c`-`\\x1e`, `\\x85`, U+2028 and U+2029, which
may sit inside comments and strings; using it to map LibCST positions puts edits on the wrong
line.
"""

from __future__ import annotations

import re
from typing import List

LINE_BREAK = re.compile(r"\r\n|\r|\n")


def split_lines(source: str) -> List[str]:
    """The lines, without their endings (a trailing newline gives a final empty line)."""
    return LINE_BREAK.split(source)


def split_lines_keepends(source: str) -> List[str]:
    lines, start = [], 0
    for match in LINE_BREAK.finditer(source):
        lines.append(source[start : match.end()])
        start = match.end()
    if start < len(source):
        lines.append(source[start:])
    return lines


def line_offsets(source: str) -> List[int]:
    """Offset of the first character of each line (1-based line n at index n - 1)."""
    offsets = [0]
    offsets.extend(match.end() for match in LINE_BREAK.finditer(source))
    return offsets
