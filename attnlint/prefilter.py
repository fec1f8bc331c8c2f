"""What a file costs before LibCST: the trigger pre-filter and the syntax check of skipped files.

Both run on every file of a tree, so both are built for throughput:

- The rules' triggers are regular expressions. One alternation of all of them is slow on files
  that match none (the regex engine tries every branch at every position; a branch that starts
  with ``\\b`` has no literal prefix to skip ahead with), so each trigger is searched on its own,
  behind a substring test of the literal text it cannot match without (``inf`` for ``\\binf\\b``),
  which runs at memory speed. A file that holds none of those literals costs a few ``in`` tests.
- A file that no rule can fire on is still checked for syntax errors. Compiling it to bytecode
  finds every error the parser finds, about 2.5x faster than building the ``ast`` objects (most of
  the time of ``ast.parse`` goes into making Python objects of the tree). Only when it fails is
  the file parsed to an AST, so that what is reported is what the parser says, and errors found
  after parsing (``return`` outside a function) are not reported as syntax errors.
"""

from __future__ import annotations

import ast
import re
import warnings
from functools import lru_cache
from typing import Optional, Sequence, Tuple

try:  # Python 3.11+
    from re import _parser as _sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - 3.9, 3.10
    import sre_parse as _sre_parse  # type: ignore[no-redef]

_LITERAL = _sre_parse.LITERAL
_AT = _sre_parse.AT


class Triggers:
    """A set of trigger regexes: does a text match any of them?"""

    def __init__(self, patterns: Sequence[str]) -> None:
        self.patterns = tuple(patterns)
        self._checks: Tuple[Tuple[str, "re.Pattern[str]"], ...] = tuple(
            (required_literal(p), re.compile(p)) for p in self.patterns
        )

    def search(self, text: str) -> bool:
        for literal, pattern in self._checks:
            if literal in text and pattern.search(text) is not None:
                return True
        return False


@lru_cache(maxsize=64)
def triggers(patterns: Tuple[str, ...]) -> Triggers:
    return Triggers(patterns)


def required_literal(pattern: str) -> str:
    """The longest run of literal characters every match of `pattern` contains ("" if unknown).

    Zero-width assertions (``\\b``, ``^``) do not interrupt a run; anything else does; a pattern
    with alternation at its top level, or flags that change what a literal matches, has none."""
    try:
        parsed = _sre_parse.parse(pattern)
    except re.error:
        return ""
    if parsed.state.flags & (re.IGNORECASE | re.VERBOSE):
        return ""
    best, run = "", []
    for op, arg in parsed:
        if op is _LITERAL:
            run.append(chr(arg))
            continue
        if op is _AT:
            continue
        if len(run) > len(best):
            best = "".join(run)
        run = []
    if len(run) > len(best):
        best = "".join(run)
    return best


def syntax_error(source: str) -> Optional[SyntaxError]:
    """The SyntaxError CPython's parser raises for `source`, or None when it parses.

    None too for what the parser cannot judge (null bytes, nesting beyond its limits): the
    caller decides about those."""
    try:
        with warnings.catch_warnings():
            # Compiling may warn (invalid escapes, `is` with a literal); that is not ours to say.
            warnings.simplefilter("ignore")
            compile(source, "<attnlint>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        pass  # the parser decides below: a compiler-only error is not a syntax error
    else:
        return None
    try:
        compile(source, "<attnlint>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        return exc
    except (ValueError, RecursionError, MemoryError):  # null bytes, absurd nesting
        return None
    return None
