"""What CPython's parser says about a text before LibCST is allowed near it.

LibCST's native parser crashes the whole process (a segfault, no exception) on some inputs
CPython refuses cheaply, such as 2,000 nested parentheses, and spends minutes on others (20,000
chained `+`). CPython's parser has hard limits instead (200 nested brackets, 100 indentation
levels, its recursion limit while building the AST), so it is asked first:

- CPython accepts the text: LibCST may parse it;
- CPython hits one of its limits: the file is a syntax error (ATN001) for every Python version,
  and LibCST never sees it;
- CPython reports an ordinary syntax error: LibCST may still know the grammar (it parses newer
  Python than the interpreter running attnlint), but only when the text stays within CPython's
  bracket limit, which no Python version lifts.

What no check here can rule out is isolated by the engine's process pool (a crashing worker costs
one file, reported as ATN003).
"""

from __future__ import annotations

import io
import symtable
import tokenize
from dataclasses import dataclass
from typing import Optional

# CPython's tokenizer refuses deeper bracket nesting (MAXLEVEL in Parser/tokenizer.h, every
# version since 3.0); LibCST has no such limit and overflows its native stack far beyond it.
MAX_BRACKET_DEPTH = 200

_OPENERS = "([{"
_CLOSERS = ")]}"

# CPython's messages for its own limits rather than for grammar (Parser/tokenizer.c, pegen).
_LIMIT_MESSAGES = (
    "too many nested parentheses",
    "too many levels of indentation",
    "too many statically nested blocks",
    "too complex",
    "too deeply nested",
)


@dataclass(frozen=True)
class Verdict:
    """CPython's opinion of one text.

    `error` is None when CPython parses it. `at_limit` says the error is one of CPython's limits
    (nesting, recursion, memory), which no newer grammar lifts: LibCST must not be tried.
    """

    error: Optional[str] = None
    line: Optional[int] = None
    column: Optional[int] = None
    at_limit: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def libcst_may_parse(self) -> bool:
        return not self.at_limit


def cpython_verdict(source: str) -> Verdict:
    """Parse with CPython and classify the outcome.

    `symtable` runs CPython's parser and its symbol-table pass on the C-level AST without building
    Python AST objects: about 2.5x cheaper than `ast.parse`, with the same limits (the recursion
    guard fires during the pass instead of during AST construction), and it also reports the
    errors CPython finds only when compiling (`nonlocal` at module level), which are errors too.
    """
    try:
        symtable.symtable(source, "<attnlint>", "exec")
    except SyntaxError as exc:
        message = exc.msg or "invalid syntax"
        at_limit = any(text in message for text in _LIMIT_MESSAGES)
        if not at_limit and bracket_depth(source) > MAX_BRACKET_DEPTH:
            at_limit = True  # an earlier grammar error hid the nesting from CPython
            message = f"{message} (and brackets nested deeper than {MAX_BRACKET_DEPTH} levels)"
        return Verdict(message, exc.lineno, exc.offset, at_limit)
    except (RecursionError, MemoryError):
        # pegen reports its stack overflow as MemoryError, the symbol-table pass as RecursionError.
        return Verdict("too deeply nested for Python's parser", 1, 1, at_limit=True)
    except ValueError as exc:  # "source code string cannot contain null bytes"
        return Verdict(str(exc), 1, 1, at_limit=True)
    return Verdict()


def bracket_depth(source: str) -> int:
    """The deepest bracket nesting in `source`, brackets in strings and comments not counted.

    Uses the tokenizer, so it works on text CPython cannot parse; where the tokenizer gives up
    the raw count of the rest stands in (an over-estimate, which only makes the guard stricter).
    """
    depth = deepest = 0
    consumed = 0  # characters of `source` the tokenizer got through (approximately)
    lines = source.splitlines(keepends=True)
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.OP:
                if token.string in _OPENERS:
                    depth += 1
                    deepest = max(deepest, depth)
                elif token.string in _CLOSERS:
                    depth = max(depth - 1, 0)
            consumed = token.end[0]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        rest = "".join(lines[max(consumed - 1, 0) :])
        deepest = max(deepest, depth + _raw_depth(rest))
    return deepest


def _raw_depth(text: str) -> int:
    depth = deepest = 0
    for char in text:
        if char in _OPENERS:
            depth += 1
            deepest = max(deepest, depth)
        elif char in _CLOSERS:
            depth = max(depth - 1, 0)
    return deepest
