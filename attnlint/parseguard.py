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

CPython also accepts what LibCST handles badly: one expression chaining thousands of operators
(`a + a + ...`, `y.a.a...`, `f()()...`, `a and a and ...`) is a flat list for CPython but a nested
tree for LibCST, whose native parser takes minutes on 10,000 links and crashes on 20,000 `and`s.
`longest_chain` counts them from the tokens, and such a file is not given to LibCST.

What no check here can rule out is isolated by the engine's process pool (a crashing worker costs
one file, reported as ATN003).
"""

from __future__ import annotations

import io
import re
import symtable
import threading
import tokenize
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Union

if TYPE_CHECKING:  # LibCST is imported where a parse happens: a warm run never loads it
    import libcst as cst

# CPython's tokenizer refuses deeper bracket nesting (MAXLEVEL in Parser/tokenizer.h, every
# version since 3.0); LibCST has no such limit and overflows its native stack far beyond it.
MAX_BRACKET_DEPTH = 200

# The longest chain of operators, attribute links, call/subscript trailers or implicitly
# concatenated strings in one expression that LibCST is given (2,000 `+` parse in about 3 s;
# its time grows faster than the square of the length). Real code stays far below it.
MAX_CHAIN = 2000

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


# Tokens that end an expression's chain at their bracket level.
_SEPARATORS = {",", ";", ":", "=", ":=", "->"} | {
    op + "=" for op in ("+", "-", "*", "/", "//", "%", "@", "**", "<<", ">>", "&", "|", "^")
}
_SEPARATOR_NAMES = {"if", "else", "for", "lambda", "return", "yield", "assert", "del", "import", "from", "with", "as"}
_LINK_NAMES = {"and", "or", "not", "is", "in", "await"}


# What cuts a chain short at any bracket level, and what may be a link: for the cheap scan that
# rules nearly every file out.
# (`==` is cut too: comparisons are one flat node for LibCST as well.)
_PIECE = re.compile(r"[^,;:=]+")
_LINKISH = re.compile(r"[.+\-*/%@&|^<>~(\['\"]|\b(?:and|or|not|is|in|await)\b")


def chain_too_long(source: str, limit: int = MAX_CHAIN) -> bool:
    """Whether some expression chains more than `limit` links (see `longest_chain`).

    A cheap scan first: a chain cannot cross a comma, colon or `=`, so some text between two of
    those must be longer than `limit` and hold that many link characters (prose in docstrings
    may too). Only then are the tokens counted.
    """
    if len(source) <= limit:
        return False
    suspect = any(
        piece.end() - piece.start() > limit and len(_LINKISH.findall(piece.group())) > limit
        for piece in _PIECE.finditer(source)
    )
    return suspect and longest_chain(source) > limit


def longest_chain(source: str) -> int:
    """The most links in one expression chain at one bracket level (an estimate from tokens:
    operators, `and`/`or`/`not`, `.`, call and subscript trailers, adjacent strings)."""
    counts = [0]
    longest = 0
    previous = None
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            kind, text = token.type, token.string
            link = False
            if kind == tokenize.OP:
                if text in _OPENERS:
                    # A trailer (`f(...)`, `x[...]`) links to what precedes it.
                    link = previous is not None and (previous.type in (tokenize.NAME, tokenize.STRING) or previous.string in ")]")
                    if link:
                        counts[-1] += 1
                        longest = max(longest, counts[-1])
                    counts.append(0)
                    previous = token
                    continue
                if text in _CLOSERS:
                    if len(counts) > 1:
                        counts.pop()
                    previous = token
                    continue
                link = text not in _SEPARATORS
            elif kind == tokenize.NAME:
                if text in _SEPARATOR_NAMES:
                    counts[-1] = 0
                link = text in _LINK_NAMES
            elif kind == tokenize.STRING:
                link = previous is not None and previous.type == tokenize.STRING
            elif kind in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
                counts = [0]
            if kind == tokenize.OP and not link:
                counts[-1] = 0
            elif link:
                counts[-1] += 1
                longest = max(longest, counts[-1])
            if kind not in (tokenize.NL, tokenize.COMMENT):
                previous = token
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass  # only text CPython accepted is measured, and it tokenizes
    return longest


_VALIDATION = threading.Lock()


def parse_module(source: Union[str, bytes]) -> "cst.Module":
    """`libcst.parse_module`, without validating each node the parser builds.

    Every LibCST node checks its own fields when it is constructed (`__post_init__`): whitespace
    by regular expression, parentheses, operators. The parser only builds valid nodes, so on a
    parsed tree those checks prove nothing and cost a fifth of the parse (LibCST's own comment
    there suggests moving them out of parsing). The checks are off only while a parse runs (one
    at a time, under a lock), so the nodes fixers build are checked; a node another thread
    builds meanwhile is not, and every fixed file is parsed again before it is written anyway.
    """
    import libcst as cst
    from libcst._nodes.base import CSTNode

    with _VALIDATION:
        checked = CSTNode.__post_init__
        CSTNode.__post_init__ = _unchecked  # type: ignore[method-assign]
        try:
            return cst.parse_module(source)
        finally:
            CSTNode.__post_init__ = checked  # type: ignore[method-assign]


def _unchecked(self: object) -> None:
    return None
