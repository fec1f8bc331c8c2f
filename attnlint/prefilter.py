"""What a file costs before LibCST: the trigger pre-filter.

It runs on every file of a tree, so it is built for throughput. The rules' triggers are regular
expressions. One alternation of all of them is slow on files that match none (the regex engine
tries every branch at every position; a branch that starts with ``\\b`` has no literal prefix to
skip ahead with), so each trigger is searched on its own, behind a substring test of the literal
text it cannot match without (``inf`` for ``\\binf\\b``), which runs at memory speed. A file that
holds none of those literals costs a few ``in`` tests.

The syntax check of skipped files is CPython's, in :mod:`attnlint.parseguard` (the engine's guard
before LibCST), so that one check decides what is a syntax error.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Sequence, Tuple

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

