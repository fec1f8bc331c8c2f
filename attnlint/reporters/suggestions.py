"""Fixes as whole-line replacements: what GitHub suggested changes (and reviewdog's) are made of.

A GitHub ```suggestion block replaces the lines its comment covers, from `start_line` to `line`;
reviewdog turns an rdjson suggestion whose range has no columns into exactly such a block (and
insists that the comment's line range equal the suggestion's). So a fix is offered as: the lines
from the finding's first line (or its first edited line, if earlier) to its last, and their text
after the fix. The fix is applied with the engine's own edit applier, so the suggestion is exactly
what `attnlint check --fix` would write there.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from attnlint.diagnostics import Applicability, Diagnostic
from attnlint.sourcetext import split_lines_keepends


@dataclass
class LineSuggestion:
    first: int  # lines replaced, inclusive, in the file as checked
    last: int
    text: str  # the replacement for those lines, without the last line's ending
    diagnostics: List[Diagnostic]
    unsafe: bool


def own_lines(diag: Diagnostic) -> Tuple[int, int]:
    """The lines a finding covers (an end at column 0 of the next line is not on that line)."""
    last = diag.end.line
    if diag.end.column == 0 and last > diag.start.line:
        last -= 1
    return diag.start.line, max(diag.start.line, last)


def _edit_lines(diag: Diagnostic) -> Tuple[int, int]:
    first, last = own_lines(diag)
    for edit in diag.fix.edits:
        end = edit.end.line
        if edit.end.column == 0 and end > edit.start.line:
            end -= 1
        first, last = min(first, edit.start.line), max(last, end)
    return first, last


def build_suggestion(source: str, diagnostics: Sequence[Diagnostic]) -> Optional[LineSuggestion]:
    """The fixes of ``diagnostics`` as a replacement of whole lines, or None if they cannot be one.

    The lines replaced are the findings' lines and every line an edit touches; the text is those
    lines after the edits. Fixes that do not apply together, or whose result would not parse, are
    not suggested.
    """
    from attnlint.engine import apply_fixes

    lines = split_lines_keepends(source)
    first = min(_edit_lines(d)[0] for d in diagnostics)
    last = max(_edit_lines(d)[1] for d in diagnostics)
    if not 1 <= first <= last <= len(lines):
        return None  # an edit past the end of the file (an insertion at EOF) has no line to replace
    fixed, applied = apply_fixes(source, diagnostics)
    if len(applied) != len(diagnostics):
        return None
    prefix, suffix = "".join(lines[: first - 1]), "".join(lines[last:])
    if not (fixed.startswith(prefix) and fixed.endswith(suffix)) or len(fixed) < len(prefix) + len(suffix):
        return None
    try:
        ast.parse(fixed)
    except (SyntaxError, ValueError):
        return None
    block = fixed[len(prefix) : len(fixed) - len(suffix)]
    old_block = "".join(lines[first - 1 : last])
    for ending in ("\r\n", "\n", "\r"):
        if old_block.endswith(ending) and block.endswith(ending):
            block = block[: -len(ending)]
            break
    unsafe = any(d.fix.applicability is not Applicability.SAFE for d in diagnostics)
    return LineSuggestion(first, last, block.replace("\r\n", "\n"), list(diagnostics), unsafe)


def code_fence(text: str) -> str:
    """A code fence longer than any run of backticks in ``text`` (so the block cannot end early)."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)
