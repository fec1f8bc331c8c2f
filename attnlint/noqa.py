"""Suppression comments, as flake8 and ruff users write them.

- `# noqa` silences every finding on the statement; `# noqa: ATN101, ATN2` silences those codes
  (prefix match, as flake8 does; `,`, `;` or spaces between codes, as ruff accepts); text after the
  codes is a reason.
- `# attnlint: noqa` (optionally `: CODES`) anywhere in a file silences the file; `# flake8: noqa`
  and `# ruff: noqa` are honoured too.
- ruff's own comments: `# ruff: ignore[CODE-or-name, ...]` at the end of a line (that statement) or
  on a line of its own (the next statement), `# ruff: file-ignore[...]` (the file) and
  `# ruff: disable[...]` ... `# ruff: enable[...]` (the lines between), so a team whose ruff turns
  `# noqa: ATN101` into `# ruff: ignore[ATN101]` keeps its suppressions.
- A malformed directive (`# noqa ATN103`, `# noqa : ATN103`, `# noqa: A quick hack`,
  `# attnlint: noqa ATN103`) silences nothing and is reported as a warning, worded as ruff words
  it ("Invalid `# noqa` directive on path:line: ..."); ruff, too, ignores what it cannot read.
Standalone attnlint applies a line's suppression to the whole statement the finding is in.

`ATN100 unused-noqa` (ruff's RUF100) is computed here from what the engine reports as used.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Iterable, List, Optional, Sequence, Set, Tuple

from attnlint.sourcetext import split_lines, split_lines_keepends

_NOQA = re.compile(r"#\s*noqa", re.I)
_FILE_NOQA = re.compile(r"#\s*(?P<tool>attnlint|flake8|ruff)\s*:\s*noqa", re.I)
_RUFF = re.compile(r"#\s*ruff\s*:\s*(?P<kind>ignore|file-ignore|disable|enable)\b(?P<rest>.*)", re.I)
_RUFF_ITEMS = re.compile(r"\[(?P<items>[^\]]*)\]")
# One code in a list: a code with digits (`ATN101`, `ATN1`, `atn103`, `E501`), or attnlint's own
# prefix `ATN` alone. Anything else (`A quick hack`) starts the reason.
_CODE_TOKEN = re.compile(r"(?P<sep>[\s,;]*)(?P<code>[A-Za-z]+[0-9]+|ATN)(?![A-Za-z0-9_])")
OWN_PREFIX = "ATN"
UNUSED_NOQA_CODE = "ATN100"
UNUSED_NOQA_NAME = "unused-noqa"
EXAMPLE_CODES = "ATN101, ATN203"

# `None` in a codes slot means "every code".
Codes = Optional[FrozenSet[str]]


@dataclass(frozen=True)
class CodeSpan:
    code: str  # as written, upper-cased
    start: int  # columns in the line (code points), end exclusive
    end: int


@dataclass(frozen=True)
class LineDirective:
    """One `# noqa: CODES` comment, where it is, for ATN100 and --add-noqa."""

    line: int
    start: int  # the `#` of `# noqa`
    end: int  # end of the codes (a reason may follow)
    codes: Tuple[CodeSpan, ...]
    comment_start: int  # the comment token that holds it
    comment_end: int


@dataclass(frozen=True)
class SuppressionWarning:
    line: int
    directive: str  # "`# noqa`", "`# attnlint: noqa`", "suppression comment"
    reason: str

    def render(self, where: str) -> str:
        """ruff's wording: Invalid `# noqa` directive on path:line: reason"""
        return f"Invalid {self.directive} directive on {where}: {self.reason}"


@dataclass
class NoqaMap:
    by_line: Dict[int, Codes] = field(default_factory=dict)
    file_exempt: bool = False
    file_codes: FrozenSet[str] = frozenset()
    # `# ruff: disable[...]` ranges: (first line, last line, codes); an unmatched one runs to the end.
    ranges: List[Tuple[int, int, FrozenSet[str]]] = field(default_factory=list)
    directives: List[LineDirective] = field(default_factory=list)
    warnings: List[SuppressionWarning] = field(default_factory=list)
    # (line, code as written) pairs that silenced a finding, filled in while suppressing.
    used: Set[Tuple[int, str]] = field(default_factory=set)

    def file_silences(self, code: str) -> bool:
        return self.file_exempt or _matches(code, self.file_codes)

    def line_silences(self, line: int, code: str) -> bool:
        silenced = False
        if line in self.by_line:
            codes = self.by_line[line]
            if codes is None:
                silenced = True
                self.used.add((line, "*"))
            else:
                for c in codes:
                    if code.startswith(c):
                        silenced = True
                        self.used.add((line, c))
        return silenced or any(lo <= line <= hi and _matches(code, codes) for lo, hi, codes in self.ranges)

    @property
    def active(self) -> bool:
        return bool(self.by_line or self.ranges)


def _matches(code: str, codes: Iterable[str]) -> bool:
    return any(code.startswith(c) for c in codes)


# ---------------------------------------------------------------------------------------------
# Reading the comments
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Comment:
    line: int
    column: int
    text: str
    own_line: bool  # nothing but whitespace before it on its line


def _comments(source: str) -> Tuple[List[_Comment], List[int]]:
    """The comments, and the lines on which code starts (for own-line `# ruff: ignore`)."""
    comments: List[_Comment] = []
    code_lines: List[int] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT:
                own = not tok.line[: tok.start[1]].strip()
                comments.append(_Comment(tok.start[0], tok.start[1], tok.string, own))
            elif tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER):
                if not code_lines or code_lines[-1] != tok.start[0]:
                    code_lines.append(tok.start[0])
    except (tokenize.TokenError, IndentationError, SyntaxError):
        # Not tokenizable: fall back to a line scan (a `#` inside a string may then count).
        comments, code_lines = [], []
        for lineno, line in enumerate(split_lines(source), 1):
            idx = line.find("#")
            if idx >= 0:
                comments.append(_Comment(lineno, idx, line[idx:], not line[:idx].strip()))
            if line[: idx if idx >= 0 else len(line)].strip():
                code_lines.append(lineno)
    return comments, code_lines


def _code_list(text: str, offset: int) -> Tuple[List[CodeSpan], int]:
    """Codes at the start of `text` (separated by `,`, `;` or spaces) and where they end."""
    codes: List[CodeSpan] = []
    position = 0
    while True:
        match = _CODE_TOKEN.match(text, position)
        if not match or (codes == [] and match.group("sep").strip(" \t")):
            break  # a list may not start with a separator
        codes.append(CodeSpan(match.group("code").upper(), offset + match.start("code"), offset + match.end("code")))
        position = match.end()
    return codes, position


# A loose `# noqa ...` that names one of attnlint's codes (or the bare prefix).
_MENTIONS_OWN_CODE = re.compile(r"\bATN\d*\b", re.I)

_MISSING_CODES = "expected a comma-separated list of codes (e.g., `# noqa: {example}`)."
_MISSING_COLON = "expected `:` followed by a comma-separated list of codes (e.g., `# noqa: {example}`)."


def _parse_line_noqa(comment: _Comment, match: "re.Match[str]", result: NoqaMap) -> None:
    text = comment.text
    rest = text[match.end() :]
    start = comment.column + match.start()
    if not rest.strip() or rest.lstrip().startswith("#") and rest[:1] in (" ", "\t", "#"):
        result.by_line[comment.line] = None  # bare `# noqa` (maybe followed by another comment)
        return
    if rest[0] == ":":
        codes, used = _code_list(rest[1:], comment.column + match.end() + 1)
        if not codes:
            result.warnings.append(
                SuppressionWarning(comment.line, "`# noqa`", _MISSING_CODES.format(example=EXAMPLE_CODES))
            )
            return
        previous = result.by_line.get(comment.line, frozenset())
        names = frozenset(c.code for c in codes)
        result.by_line[comment.line] = None if previous is None else previous | names
        end = comment.column + match.end() + 1 + used
        result.directives.append(
            LineDirective(comment.line, start, end, tuple(codes), comment.column, comment.column + len(text))
        )
        return
    # `# noqa ATN103`, `# noqa : ATN103`, `# noqa-ish`: not a directive a reader can trust. It
    # silences nothing; it is worth a warning when it was meant for attnlint. Other tools' loose
    # forms (`# noqa F403`, common in flake8 projects) are theirs to judge: hundreds of warnings
    # about them would bury the one that matters.
    if _MENTIONS_OWN_CODE.search(rest):
        result.warnings.append(
            SuppressionWarning(comment.line, "`# noqa`", _MISSING_COLON.format(example=EXAMPLE_CODES))
        )


def _parse_file_noqa(comment: _Comment, match: "re.Match[str]", result: NoqaMap) -> None:
    tool = match.group("tool").lower()
    rest = comment.text[match.end() :]
    label = f"`# {tool}: noqa`"
    if not rest.strip() or rest[:1] in (" ", "\t") and rest.lstrip().startswith("#"):
        result.file_exempt = True
        return
    if rest[0] == ":":
        codes, _ = _code_list(rest[1:], 0)
        if codes:
            # flake8 ignores a file-level noqa that lists codes; we take the codes, as ruff does.
            result.file_codes = result.file_codes | frozenset(c.code for c in codes)
            return
        reason = f"expected a comma-separated list of codes (e.g., `# {tool}: noqa: {EXAMPLE_CODES}`)."
    else:
        # `# attnlint: noqa ATN103` once silenced the whole file: the codes were meant, not the file.
        reason = f"expected `:` followed by a comma-separated list of codes (e.g., `# {tool}: noqa: {EXAMPLE_CODES}`)."
    result.warnings.append(SuppressionWarning(comment.line, label, reason))


def _ruff_codes(items: str) -> Optional[FrozenSet[str]]:
    """attnlint codes among a `# ruff: ...[...]` comment's items (codes or rule names); None if the
    list is malformed. Other tools' codes and names are not ours and are left out."""
    from attnlint.rules import registry

    by_name = {rule.name: rule.code for rule in registry.all_rules()}
    by_name[UNUSED_NOQA_NAME] = UNUSED_NOQA_CODE
    codes = set()
    for item in items.split(","):
        item = item.strip()
        if not item:
            return None
        if item in by_name:
            codes.add(by_name[item])
        elif re.fullmatch(r"[A-Za-z]+[0-9]*", item) and item.upper().startswith(OWN_PREFIX):
            codes.add(item.upper())
        elif not re.fullmatch(r"[A-Za-z0-9-]+", item):
            return None
    return frozenset(codes)


def _parse_ruff(comment: _Comment, match: "re.Match[str]", code_lines: List[int], result: NoqaMap, opened) -> None:
    kind = match.group("kind").lower()
    items = _RUFF_ITEMS.match(match.group("rest").lstrip())
    codes = _ruff_codes(items.group("items")) if items else None
    if codes is None:
        result.warnings.append(
            SuppressionWarning(
                comment.line, "suppression comment", f"expected `# ruff: {kind}[rule-code-or-name, ...]`."
            )
        )
        return
    if not codes:
        return
    if kind == "file-ignore":
        result.file_codes = result.file_codes | codes
    elif kind == "ignore":
        line = comment.line
        if comment.own_line:  # applies to the next line with code
            line = next((n for n in code_lines if n > comment.line), None)
            if line is None:
                return
        previous = result.by_line.get(line, frozenset())
        result.by_line[line] = None if previous is None else previous | codes
    elif kind == "disable":
        for code in codes:
            opened.setdefault(code, comment.line)
    else:  # enable
        for code in codes:
            if code in opened:
                result.ranges.append((opened.pop(code), comment.line, frozenset({code})))


def parse_noqa(source: str) -> NoqaMap:
    result = NoqaMap()
    lowered = source.lower()
    if "noqa" not in lowered and "ruff" not in lowered:
        return result
    comments, code_lines = _comments(source)
    opened: Dict[str, int] = {}
    for comment in comments:
        file_match = _FILE_NOQA.search(comment.text)
        if file_match:
            _parse_file_noqa(comment, file_match, result)
            continue
        ruff_match = _RUFF.search(comment.text)
        if ruff_match:
            _parse_ruff(comment, ruff_match, code_lines, result, opened)
            continue
        match = _NOQA.search(comment.text)
        if match:
            _parse_line_noqa(comment, match, result)
    end = source.count("\n") + 2
    for code, first in opened.items():  # an unmatched `disable` runs to the end of the file
        result.ranges.append((first, end, frozenset({code})))
    return result


# ---------------------------------------------------------------------------------------------
# ATN100 unused-noqa
# ---------------------------------------------------------------------------------------------
def unused_noqa(noqa: NoqaMap, source: str, path: str, checked: Sequence[str], known: Sequence[str]):
    """ATN100 for each `# noqa: CODES` whose attnlint codes silenced nothing.

    Only attnlint's own codes are judged: other tools' codes (`E501`) and blanket `# noqa` are left
    alone. A code of a rule that did not run on this file (not selected, per-file-ignored) is not
    judged either: running a subset of rules must not strip the others' suppressions. A code that
    names no attnlint rule (`ATN999`) is unknown, hence unused."""
    from attnlint.diagnostics import Applicability, Diagnostic, Edit, Fix, Position

    lines = split_lines(source)
    diagnostics = []
    for directive in noqa.directives:
        unused: List[CodeSpan] = []
        notes: List[str] = []
        seen: Set[str] = set()
        for span in directive.codes:
            code = span.code
            if not code.startswith(OWN_PREFIX):
                continue
            matching = [c for c in known if c.startswith(code)]
            if code in seen:
                unused.append(span)
                notes.append(f"duplicated: `{code}`")
                continue
            seen.add(code)
            if not matching:
                unused.append(span)
                notes.append(f"unknown: `{code}`")
            elif all(c in checked for c in matching) and (directive.line, code) not in noqa.used:
                unused.append(span)
                notes.append(f"unused: `{code}`")
        if not unused:
            continue
        line = lines[directive.line - 1]
        start = Position(directive.line, directive.start)
        end = Position(directive.line, directive.end)
        edit = _removal(line, directive, unused)
        diagnostics.append(
            Diagnostic(
                code=UNUSED_NOQA_CODE,
                name=UNUSED_NOQA_NAME,
                message=f"Unused `noqa` directive ({'; '.join(notes)})",
                path=path,
                start=start,
                end=end,
                fix=Fix(
                    "Remove unused `noqa` directive" if len(unused) == len(directive.codes) else "Remove unused codes",
                    Applicability.SAFE,
                    (Edit(Position(directive.line, edit[0]), Position(directive.line, edit[1]), edit[2]),),
                ),
                noqa_row=directive.line,
                url=None,
            )
        )
    return diagnostics


def _removal(line: str, directive: LineDirective, unused: Sequence[CodeSpan]) -> Tuple[int, int, str]:
    """(start column, end column, replacement) that drops the unused codes, or the whole directive
    (with its reason and the spaces before it) when none is left."""
    kept = [c for c in directive.codes if c not in unused]
    if kept:
        text = line[directive.start : directive.end]
        colon = text.index(":")
        new = text[: colon + 1] + " " + ", ".join(c.code for c in kept)
        return directive.start, directive.end, new
    # The directive and its reason run to the next `#` of the comment, or to the end of it.
    following = line.find("#", directive.end, directive.comment_end)
    if following >= 0:
        return directive.start, following, ""  # `# noqa: ATN1 # other` -> `# other`
    begin = directive.start
    while begin > 0 and line[begin - 1] in " \t":  # `x = 1  # noqa: ATN1` -> `x = 1`
        begin -= 1
    return begin, directive.comment_end, ""


# ---------------------------------------------------------------------------------------------
# --add-noqa
# ---------------------------------------------------------------------------------------------
def add_noqa(source: str, rows_codes: Dict[int, List[str]], reason: Optional[str] = None) -> str:
    """Add `# noqa: CODES` (and `reason`, if given) for findings reported on the given rows; the
    result always parses.

    The comment goes at the end of the reported row when a comment can end that row (flake8
    only reads that row); when the row ends inside a string or with a `\\` continuation it goes
    at the end of the statement (attnlint applies noqa to the whole statement). An existing
    `# noqa: X` comment on that row is merged (its reason kept); a bare `# noqa` already covers
    everything.
    """
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return source
    suffix = f" {reason.strip()}" if reason and reason.strip() else ""
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
            parsed = parse_noqa(comment.string + "\n")
            if 1 in parsed.by_line and parsed.by_line[1] is None and not parsed.directives:
                continue  # a bare noqa already covers everything
            if parsed.directives:
                directive = parsed.directives[0]
                merged = sorted({c.code for c in directive.codes} | codes)
                text = comment.string
                new_comment = text[: directive.start] + "# noqa: " + ", ".join(merged) + text[directive.end :]
            else:
                new_comment = comment.string + "  # noqa: " + ", ".join(sorted(codes)) + suffix
            body = body[: comment.start[1]] + new_comment + body[comment.end[1] :]
        else:
            end = line_ends[row]
            body = body[:end].rstrip() + "  # noqa: " + ", ".join(sorted(codes)) + suffix + body[end:]
        lines[row - 1] = body + ending
    result = "".join(lines)
    try:
        compile(result, "<add-noqa>", "exec", dont_inherit=True, flags=0x400)  # PyCF_ONLY_AST
    except SyntaxError:
        return source
    return result
