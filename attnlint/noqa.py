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

from attnlint.sourcetext import split_lines, split_lines_keepends

# A noqa comment, then optionally a colon and what follows on the comment (codes, then a reason).
_NOQA = re.compile(r"#\s*noqa(?P<colon>:[\s]?(?P<codes>[^#]*))?", re.I)
_FILE_NOQA = re.compile(r"#\s*(?:attnlint|flake8)\s*:\s*noqa(?P<colon>:[\s]?(?P<codes>[^#]*))?", re.I)
# A code (`ATN101`, `atn1`: any case with digits) or an upper-case prefix (`ATN`); anything else
# (a lower-case word) starts the reason.
_CODE = re.compile(r"[A-Za-z]+[0-9]+|[A-Z]+")

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


def _parse_codes(match: "re.Match[str]") -> Codes:
    """None (every code) for a bare noqa; else the codes listed after the colon, up to the first
    word that is not a code (the reason). A malformed list (`ATN1O3`) silences nothing."""
    if match.group("colon") is None:
        return None
    codes = []
    for token in re.split(r"[,\s]+", (match.group("codes") or "").strip()):
        if not _CODE.fullmatch(token):
            break
        codes.append(token.upper())
    return frozenset(codes)


def _reason(match: "re.Match[str]", n_codes: int) -> str:
    """The words after the codes of a `# noqa: CODES reason`, with their leading space."""
    words = re.split(r"([,\s]+)", (match.group("codes") or "").strip())
    rest = "".join(words[2 * n_codes :]).lstrip(", ")
    return f" {rest}" if rest else ""


def _comments(source: str) -> Iterable[Tuple[int, str]]:
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT:
                yield tok.start[0], tok.string
    except (tokenize.TokenError, IndentationError, SyntaxError):
        # Not tokenizable: fall back to a line scan (a `#` inside a string may then count).
        for lineno, line in enumerate(split_lines(source), 1):
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
            # flake8 ignores a file-level noqa that lists codes; we take the codes, as ruff does.
            codes = _parse_codes(file_match)
            if codes is None:
                result.file_exempt = True
            else:
                result.file_codes = result.file_codes | codes
            continue
        match = _NOQA.search(comment)
        if match:
            codes = _parse_codes(match)
            previous = result.by_line.get(line, frozenset())
            if codes is None or previous is None:
                result.by_line[line] = None
            else:
                result.by_line[line] = previous | codes
    return result


def add_noqa(source: str, rows_codes: Dict[int, List[str]]) -> str:
    """Add `# noqa: CODES` for findings reported on the given rows; the result always parses.

    The comment goes at the end of the reported row when a comment can end that row (flake8
    only reads that row); when the row ends inside a string or with a `\\` continuation it goes
    at the end of the statement (attnlint applies noqa to the whole statement). An existing
    `# noqa: X` comment on that row is merged; a bare `# noqa` already covers everything.
    """
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return source
    # Rows where a comment may be placed: those that end with NL/NEWLINE (after any comment).
    comment_at: Dict[int, tokenize.TokenInfo] = {}
    line_ends: Dict[int, int] = {}  # row -> column where the code (and any comment) ends
    statement_end: Dict[int, int] = {}  # row -> last row of its logical line
    logical_start = 1
    for tok in tokens:
        if tok.type == tokenize.COMMENT:
            comment_at[tok.start[0]] = tok
        if tok.type in (tokenize.NL, tokenize.NEWLINE):
            line_ends[tok.start[0]] = tok.start[1]
        if tok.type == tokenize.NEWLINE:
            for row in range(logical_start, tok.start[0] + 1):
                statement_end[row] = tok.start[0]
            logical_start = tok.end[0] + 1
        elif tok.type in (tokenize.NL, tokenize.COMMENT) and tok.start[0] == logical_start:
            pass
    targets: Dict[int, set] = {}
    for row, codes in rows_codes.items():
        place = row if row in line_ends else statement_end.get(row)
        if place is None or place not in line_ends:
            continue
        targets.setdefault(place, set()).update(codes)
    lines = split_lines_keepends(source)
    for row, codes in targets.items():
        line = lines[row - 1]
        body = line.rstrip("\r\n")
        ending = line[len(body) :]
        comment = comment_at.get(row)
        if comment is not None:
            match = _NOQA.search(comment.string)
            if match and match.group("colon") is None:
                continue  # a bare noqa already covers everything
            if match:
                existing = _parse_codes(match) or frozenset()
                merged = sorted(existing | codes)
                reason = _reason(match, len(existing))
                new_comment = comment.string[: match.start()] + "# noqa: " + ", ".join(merged) + reason
            else:
                new_comment = comment.string + "  # noqa: " + ", ".join(sorted(codes))
            body = body[: comment.start[1]] + new_comment + body[comment.end[1] :]
        else:
            end = line_ends[row]
            body = body[:end].rstrip() + "  # noqa: " + ", ".join(sorted(codes)) + body[end:]
        lines[row - 1] = body + ending
    result = "".join(lines)
    try:
        compile(result, "<add-noqa>", "exec", dont_inherit=True, flags=0x400)  # PyCF_ONLY_AST
    except SyntaxError:
        return source
    return result
