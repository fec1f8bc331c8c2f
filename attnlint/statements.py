"""Which statement, and which definition, a line of a file belongs to.

Two consumers: `--diff-base` keeps a finding when any line of its statement changed (a finding on
line 3 of a call whose argument changed on line 5 is the change's doing), and SARIF fingerprints
name a finding by its statement's text and its enclosing definition rather than by line numbers,
so code scanning keeps tracking an alert when unrelated edits move it.

Python's own parser is enough here (and far cheaper than LibCST): only statement extents and
definition names are needed. A file that does not parse gets one-line statements.
"""

from __future__ import annotations

import ast
import bisect
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from attnlint.sourcetext import split_lines

_COMPOUND_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclass(frozen=True)
class _Span:
    first: int
    last: int
    # The dotted path of the innermost def/class holding the statement ("" at module level).
    scope: str


class StatementIndex:
    """Statement extents of one source text, queried by line."""

    def __init__(self, source: str) -> None:
        self._lines = split_lines(source)
        self._spans: List[_Span] = []
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return
        self._collect(tree.body, "")
        self._spans.sort(key=lambda s: (s.first, -s.last))
        self._firsts = [s.first for s in self._spans]

    def _collect(self, statements: Sequence[ast.stmt], scope: str) -> None:
        for stmt in statements:
            first = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", ())])
            children = _child_statements(stmt)
            if children:
                # A compound statement's own lines are its header: `def f(...):`, `if x:`.
                header_end = max(first, min(child.lineno for child in children) - 1)
                self._spans.append(_Span(first, min(header_end, stmt.end_lineno or stmt.lineno), scope))
                inner = scope
                if isinstance(stmt, _DEFINITIONS):
                    inner = f"{scope}.{stmt.name}" if scope else stmt.name
                self._collect(children, inner)
            else:
                self._spans.append(_Span(first, stmt.end_lineno or stmt.lineno, scope))

    def _innermost(self, first: int, last: int) -> Optional[_Span]:
        best: Optional[_Span] = None
        # Spans are sorted by first line; only those starting at or before `first` can hold it.
        for index in range(bisect.bisect_right(getattr(self, "_firsts", []), first) - 1, -1, -1):
            span = self._spans[index]
            if span.first <= first and last <= span.last:
                if best is None or span.last - span.first < best.last - best.first:
                    best = span
            if best is not None and span.last < first:
                break
        return best

    def statement_lines(self, first: int, last: int) -> Tuple[int, int]:
        """The lines of the innermost statement holding lines ``first``..``last`` (or those lines)."""
        span = self._innermost(first, last)
        if span is None:
            return first, last
        return span.first, span.last

    def statement_text(self, first: int, last: int) -> str:
        """The statement's text with all whitespace runs collapsed (re-indenting does not change it)."""
        lo, hi = self.statement_lines(first, last)
        return " ".join(" ".join(self._lines[lo - 1 : hi]).split())

    def scope(self, first: int, last: int) -> str:
        """Dotted name of the def/class enclosing the statement, e.g. ``Attention.forward``."""
        span = self._innermost(first, last)
        return span.scope if span is not None else ""


def _child_statements(stmt: ast.stmt) -> List[ast.stmt]:
    children: List[ast.stmt] = []
    for field in _COMPOUND_BODIES:
        for item in getattr(stmt, field, None) or ():
            if isinstance(item, ast.stmt):
                children.append(item)
            else:  # except handlers and match cases hold statements one level down
                children.extend(s for s in getattr(item, "body", ()) if isinstance(s, ast.stmt))
    return children
