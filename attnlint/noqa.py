"""`# noqa` handling, as flake8 and ruff users write it.

- `# noqa` silences every finding on the statement; `# noqa: ATN101, ATN2` silences those codes
  (prefix match, as flake8 does); text after the codes is a reason.
- `# attnlint: noqa` (optionally `: CODES`) anywhere in a file silences the file; `# flake8: noqa`
  is honoured too.
Standalone attnlint applies a line's noqa to the whole statement the finding is in.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Iterable, List, Optional, Tuple

# flake8's own pattern (case-insensitive, optional space after the colon).
_NOQA = re.compile(r"#\s*noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.I)
_FILE_NOQA = re.compile(
    r"#\s*(?:attnlint|flake8)\s*:\s*noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?",
    re.I,
)
_CODE = re.compile(r"[A-Z]+[0-9]+", re.I)

# `None` in a codes slot means "every code".
Codes = Optional[FrozenSet[str]]


@dataclass
class NoqaMap:
    by_line: Dict[int, Codes] = field(default_factory=dict)
    file_exempt: bool = False
    file_codes: FrozenSet[str] = frozenset()

    def file_silences(self, code: str) -> bool:
        return self.file_exempt or _matches(code, self.file_codes)

    def line_silences(self, line: int, code: str) -> bool:
        if line not in self.by_line:
            return False
        codes = self.by_line[line]
        return codes is None or _matches(code, codes)


def _matches(code: str, codes: Iterable[str]) -> bool:
    return any(code.startswith(c) for c in codes)


def _parse_codes(text: Optional[str]) -> Codes:
    if not text:
        return None
    return frozenset(c.upper() for c in _CODE.findall(text))


def _comments(source: str) -> Iterable[Tuple[int, str]]:
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT:
                yield tok.start[0], tok.string
    except (tokenize.TokenError, IndentationError, SyntaxError):
        # Not tokenizable: fall back to a line scan (a `#` inside a string may then count).
        for lineno, line in enumerate(source.splitlines(), 1):
            idx = line.find("#")
            if idx >= 0:
                yield lineno, line[idx:]


def parse_noqa(source: str) -> NoqaMap:
    result = NoqaMap()
    if "noqa" not in source.lower():
        return result
    for line, comment in _comments(source):
        file_match = _FILE_NOQA.search(comment)
        if file_match:
            # flake8 ignores `# flake8: noqa: CODES` entirely; we take the codes, as ruff does.
            codes = _parse_codes(file_match.group("codes"))
            if codes is None:
                result.file_exempt = True
            else:
                result.file_codes = result.file_codes | codes
            continue
        match = _NOQA.search(comment)
        if match:
            codes = _parse_codes(match.group("codes"))
            previous = result.by_line.get(line, frozenset())
            if codes is None or previous is None:
                result.by_line[line] = None
            else:
                result.by_line[line] = previous | codes
    return result


def add_noqa(source: str, rows_codes: Dict[int, List[str]]) -> str:
    """Append `# noqa: CODES` to the given rows (merging with an existing noqa comment)."""
    lines = source.splitlines(keepends=True)
    for row, codes in rows_codes.items():
        if not 1 <= row <= len(lines):
            continue
        line = lines[row - 1]
        body = line.rstrip("\r\n")
        ending = line[len(body):]
        match = _NOQA.search(body)
        if match and match.group("codes") is None:
            continue  # a bare noqa already covers everything
        if match:
            existing = _parse_codes(match.group("codes")) or frozenset()
            merged = sorted(existing | set(codes))
            body = body[: match.start()] + "# noqa: " + ", ".join(merged) + body[match.end():]
        else:
            body = body.rstrip() + "  # noqa: " + ", ".join(sorted(set(codes)))
        lines[row - 1] = body + ending
    return "".join(lines)
