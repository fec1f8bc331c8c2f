"""Jupyter notebooks (`.ipynb`): read, check as one program, map findings to cells, write back.

How a notebook is checked (ruff's model, since ruff 0.6 checks notebooks by default):
- the code cells, in order, are concatenated into one program, so a cell sees the names earlier
  cells define; markdown and raw cells are left out;
- IPython syntax that is not Python (`%timeit`, `!pip`, `x = !ls`, `obj?`, `%%bash` cells) is
  replaced by as many neutral lines (`pass`), so every line number maps back;
- between two cells sits one boundary comment line; it keeps the cells apart when fixes change how
  many lines a cell has, and is how a fixed program is split back into cells;
- a finding is reported with its cell (1-based, counting every cell as Jupyter lists them, as ruff
  does) and the line within the cell;
- writing back replaces only the changed cells' `source` values inside the original JSON text, so
  outputs, metadata, ids, indentation, key order, the trailing newline and `source` as a list of
  lines or a string stay byte for byte as they were.

The nbformat JSON is read with the standard library; nbformat itself is not needed.
"""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from attnlint.diagnostics import SYNTAX_ERROR_CODE, SYNTAX_ERROR_NAME, Diagnostic, FileResult, Position
from attnlint.sourcetext import line_offsets, split_lines_keepends

NOTEBOOK_SUFFIX = ".ipynb"
# One comment line between cells. A comment cannot change what the analysis sees, and rules' fixes
# replace expressions, never the comment lines around them.
CELL_BOUNDARY = "# attnlint: cell boundary (not in the notebook)"
# IPython magics whose body is Python: only the `%%` line is masked, the rest is checked.
PYTHON_CELL_MAGICS = frozenset(
    {"time", "timeit", "capture", "prun", "debug", "python", "python3", "pypy", "writefile_disabled"}
)
# What an IPython line becomes: a statement that does nothing, tagged so that it is restored
# exactly even when fixes move lines around it.
_PLACEHOLDER = "pass  # attnlint: IPython line {}"
_PLACEHOLDER_LINE = re.compile(r"^[ \t]*pass  # attnlint: IPython line (\d+)(\r\n|\r|\n)?$")
# `x = !ls`, `out = %time f()`: a magic on the right of an assignment (IPython's "system assign").
_MAGIC_ASSIGN = re.compile(r"^\s*[\w.,\s\[\]()*]+?\s*=\s*[%!]")
# `obj?`, `obj.attr??`, `?obj`, `??obj`: IPython's help syntax.
_HELP = re.compile(r"^\s*(\?{1,2}[\w.]+|[\w.]+\?{1,2})\s*$")


class NotebookError(ValueError):
    """The file is not a notebook attnlint can read (bad JSON or not nbformat 4)."""


class NotPython(Exception):
    """A notebook for another kernel (R, Julia, ...): nothing for attnlint to check."""


def _language(metadata) -> Optional[str]:
    """The notebook's language from its metadata, lower-cased; None when it does not say."""
    if not isinstance(metadata, dict):
        return None
    for key, field_name in (("language_info", "name"), ("kernelspec", "language")):
        table = metadata.get(key)
        if isinstance(table, dict) and isinstance(table.get(field_name), str):
            return table[field_name].lower()
    return None


def is_notebook_path(path: str) -> bool:
    return path.lower().endswith(NOTEBOOK_SUFFIX)


# ---------------------------------------------------------------------------------------------
# Where things are in the JSON text
# ---------------------------------------------------------------------------------------------
_DECODER = json.JSONDecoder()
_WS = re.compile(r"[ \t\n\r]*")


def _skip_ws(text: str, index: int) -> int:
    return _WS.match(text, index).end()


def _value_end(text: str, index: int) -> int:
    return _DECODER.raw_decode(text, index)[1]


def _object_members(text: str, index: int) -> List[Tuple[str, int, int]]:
    """(key, value start, value end) for the JSON object starting at `index`."""
    if text[index] != "{":
        raise NotebookError("expected a JSON object")
    members = []
    index = _skip_ws(text, index + 1)
    if text[index] == "}":
        return members
    while True:
        key, index = json.decoder.scanstring(text, index + 1)
        index = _skip_ws(text, index)
        index = _skip_ws(text, index + 1)  # the colon
        end = _value_end(text, index)
        members.append((key, index, end))
        index = _skip_ws(text, end)
        if text[index] == "}":
            return members
        index = _skip_ws(text, index + 1)  # the comma


def _array_items(text: str, index: int) -> List[Tuple[int, int]]:
    """(start, end) of each element of the JSON array starting at `index`."""
    items = []
    index = _skip_ws(text, index + 1)
    if text[index] == "]":
        return items
    while True:
        end = _value_end(text, index)
        items.append((index, end))
        index = _skip_ws(text, end)
        if text[index] == "]":
            return items
        index = _skip_ws(text, index + 1)


def _raw_offset(text: str, literal_start: int, decoded_index: int) -> int:
    """Offset in `text` of character `decoded_index` of the JSON string literal at `literal_start`."""
    i = literal_start + 1
    n = 0
    while n < decoded_index and text[i] != '"':
        if text[i] == "\\":
            if text[i + 1] == "u":
                code = int(text[i + 2 : i + 6], 16)
                i += 6
                if 0xD800 <= code < 0xDC00 and text.startswith("\\u", i):  # a surrogate pair is one character
                    i += 6
            else:
                i += 2
        else:
            i += 1
        n += 1
    return i


# ---------------------------------------------------------------------------------------------
# The notebook and its cell map
# ---------------------------------------------------------------------------------------------
@dataclass
class CodeCell:
    number: int  # 1-based position among all cells
    source: str  # the cell's text, as Jupyter shows it
    is_list: bool  # `source` was a list of lines (nbformat's usual form) rather than one string
    span: Tuple[int, int]  # the `source` value in the JSON text
    literals: List[Tuple[int, int]]  # each string literal of the value: (start, end) in the JSON text
    pieces: List[str]  # the decoded literals (one per list element; the whole string otherwise)
    # Per line of `source`: (literal index, decoded offset of the line's start within that literal).
    line_starts: List[Tuple[int, int]] = field(default_factory=list)


@dataclass
class CellIndex:
    """Program line -> cell, line in cell and place in the JSON text. Picklable, kept with results."""

    # One entry per code cell: (first program line, line count, cell number).
    cells: List[Tuple[int, int, int]]
    # Per program line (index line - 1): JSON text offset where that line starts, or -1 (boundary).
    json_offsets: List[int]
    json_text: str
    _text_lines: Optional[List[int]] = field(default=None, repr=False, compare=False)

    def cell_of(self, line: int) -> Optional[Tuple[int, int]]:
        """(cell number, 1-based line in the cell) of a program line; None for a boundary line."""
        starts = [c[0] for c in self.cells]
        i = bisect.bisect_right(starts, line) - 1
        if i < 0:
            return None
        first, count, number = self.cells[i]
        if line >= first + count:
            return None
        return number, line - first + 1

    def cell_position(self, pos: Position) -> Tuple[int, Position]:
        """(cell number, position within the cell). A boundary line counts as the end of the cell before."""
        located = self.cell_of(pos.line)
        if located is None:
            previous = self.cell_of(pos.line - 1)
            if previous is None:
                return (self.cells[0][2] if self.cells else 1), Position(1, 0)
            return previous[0], Position(previous[1] + 1, 0)
        return located[0], Position(located[1], pos.column)

    def json_position(self, pos: Position) -> Position:
        """Where a program position is in the notebook file itself (line 1-based, column 0-based).

        CI tools that annotate the file on disk (GitHub, SARIF viewers, reviewdog, GitLab) need this:
        the cell's line inside the JSON `source` string."""
        line = min(max(pos.line, 1), len(self.json_offsets))
        start = self.json_offsets[line - 1] if self.json_offsets else -1
        while start < 0 and line > 1:
            line -= 1
            start = self.json_offsets[line - 1]
        if start < 0:
            return Position(1, 0)
        # The line's characters sit inside one JSON string literal; escapes make it longer.
        offset = _raw_offset(self.json_text, start - 1, pos.column) if pos.column else start
        if self._text_lines is None:
            self._text_lines = line_offsets(self.json_text)
        offsets = self._text_lines
        row = bisect.bisect_right(offsets, offset) - 1
        return Position(row + 1, offset - offsets[row])


@dataclass
class Notebook:
    text: str  # the JSON, as read
    cells: List[CodeCell]
    program: str  # what is analysed
    index: CellIndex
    # Per cell: the original lines the masking replaced (line index in cell -> original line).
    masked: List[Dict[int, str]]
    ensure_ascii: bool  # how the file escapes non-ASCII (for lines we write)


def parse_notebook(text: str) -> Notebook:
    """Read a notebook's JSON text. Raises NotebookError when it is not nbformat 4 JSON."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise NotebookError(f"not valid JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        if isinstance(data, dict) and "worksheets" in data:
            raise NotebookError(
                "nbformat 3 notebooks are not supported; convert with `jupyter nbconvert --to notebook`"
            )
        raise NotebookError("not an nbformat notebook (no `cells` list)")
    if not isinstance(data.get("nbformat"), int) or data["nbformat"] < 4:
        raise NotebookError("not an nbformat 4 notebook (`nbformat` is missing or older than 4)")
    language = _language(data.get("metadata"))
    if language is not None and language != "python":
        raise NotPython(language)
    start = _skip_ws(text, 0)
    cells_span = next(((s, e) for k, s, e in _object_members(text, start) if k == "cells"), None)
    code_cells: List[CodeCell] = []
    for number, (cell_start, _) in enumerate(_array_items(text, cells_span[0]), 1):
        cell = data["cells"][number - 1]
        if not isinstance(cell, dict) or "cell_type" not in cell:
            raise NotebookError(f"cell {number} has no `cell_type`")
        if cell["cell_type"] != "code":
            continue
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(s, str) for s in source):
            is_list = True
        elif isinstance(source, str):
            is_list = False
        else:
            raise NotebookError(f"cell {number}: `source` is neither a string nor a list of strings")
        span = next(((s, e) for k, s, e in _object_members(text, cell_start) if k == "source"), None)
        if span is None:  # a code cell without source: nothing to check, nothing to write
            continue
        literals = _array_items(text, span[0]) if is_list else [span]
        cell_text = "".join(source) if is_list else source
        code_cells.append(CodeCell(number, cell_text, is_list, span, literals, source if is_list else [source]))
    for cell in code_cells:
        cell.line_starts = _line_starts(cell)
    program, index_cells, json_offsets, masked = _concatenate(text, code_cells)
    return Notebook(
        text=text,
        cells=code_cells,
        program=program,
        index=CellIndex(index_cells, json_offsets, text),
        masked=masked,
        ensure_ascii=not any(ord(c) > 127 for c in text) and "\\u" in text,
    )


def _line_starts(cell: CodeCell) -> List[Tuple[int, int]]:
    """Where each line of the cell starts: (literal index, decoded offset within that literal)."""
    # nbformat splits source after each line end, but a writer may not; count lines in each piece.
    starts: List[Tuple[int, int]] = []
    at_line_start = True
    for i, value in enumerate(cell.pieces):
        offset = 0
        for piece in split_lines_keepends(value):
            if at_line_start:
                starts.append((i, offset))
            offset += len(piece)
            at_line_start = piece.endswith(("\n", "\r"))
    return starts


def _concatenate(text: str, cells: List[CodeCell]):
    program, spans, masked = join_cells([cell.source for cell in cells])
    json_offsets: List[int] = []
    literal_offsets: Dict[Tuple[int, int], int] = {}
    for k, (cell, (_, count)) in enumerate(zip(cells, spans)):
        if k:
            json_offsets.append(-1)  # the boundary line
        for i in range(count):
            if i < len(cell.line_starts):
                literal, decoded = cell.line_starts[i]
                lit_start = cell.literals[literal][0]
                key = (lit_start, decoded)
                if key not in literal_offsets:
                    literal_offsets[key] = _raw_offset(text, lit_start, decoded)
                json_offsets.append(literal_offsets[key])
            else:
                json_offsets.append(-1)
    index_cells = [(first, count, cell.number) for cell, (first, count) in zip(cells, spans)]
    return program, index_cells, json_offsets, masked


# ---------------------------------------------------------------------------------------------
# IPython syntax
# ---------------------------------------------------------------------------------------------
def mask_ipython(source: str) -> Tuple[List[str], Dict[int, str]]:
    """The cell's lines with IPython-only lines replaced by `pass` at the same indentation.

    Only lines that start a statement are candidates: `% b` continuing an expression inside
    brackets is Python's modulo, not a magic. Returns the lines and {line index: original line}."""
    lines = split_lines_keepends(source)
    replaced: Dict[int, str] = {}
    first = lines[0].strip() if lines else ""
    if first.startswith("%%"):
        name = first[2:].split()[0] if len(first) > 2 else ""
        body_is_python = name in PYTHON_CELL_MAGICS
        for i, line in enumerate(lines):
            if i == 0 or not body_is_python:
                replaced[i] = line
        if not body_is_python:
            return [_neutral(line, i, indent=False) for i, line in enumerate(lines)], replaced
        lines = [_neutral(lines[0], 0, indent=False)] + lines[1:]
    state = _ContinuationScanner()
    out: List[str] = []
    for i, line in enumerate(lines):
        if i in replaced:
            out.append(line)
            state.feed(line)
            continue
        if state.at_statement_start and _is_ipython_line(line):
            replaced[i] = line
            out.append(_neutral(line, i, indent=True))
            continue
        out.append(line)
        state.feed(line)
    return out, replaced


def _is_ipython_line(line: str) -> bool:
    stripped = line.strip()
    if not stripped:
        return False
    if stripped[0] in "%!":
        return True
    return bool(_HELP.match(line) or (_MAGIC_ASSIGN.match(line) and "==" not in line.split("=")[0] + "="))


def _neutral(line: str, index: int, indent: bool) -> str:
    body = line.rstrip("\r\n")
    ending = line[len(body) :]
    spaces = body[: len(body) - len(body.lstrip())] if indent else ""
    return spaces + _PLACEHOLDER.format(index) + ending


class _ContinuationScanner:
    """Tracks whether the next line starts a statement: not inside brackets, a string, or after `\\`."""

    def __init__(self) -> None:
        self.depth = 0
        self.string: Optional[str] = None  # the open triple quote
        self.backslash = False

    @property
    def at_statement_start(self) -> bool:
        return self.depth == 0 and self.string is None and not self.backslash

    def feed(self, line: str) -> None:
        i, n = 0, len(line)
        self.backslash = False
        while i < n:
            c = line[i]
            if self.string is not None:
                if c == "\\":
                    i += 2
                    continue
                if line.startswith(self.string, i):
                    i += len(self.string)
                    self.string = None
                    continue
                i += 1
                continue
            if c == "#":
                break
            if c in "\"'":
                triple = line[i : i + 3]
                if triple in ('"""', "'''"):
                    self.string = triple
                    i += 3
                    continue
                j = i + 1
                while j < n and line[j] != c and line[j] not in "\r\n":
                    j += 2 if line[j] == "\\" else 1
                i = j + 1
                continue
            if c in "([{":
                self.depth += 1
            elif c in ")]}":
                self.depth = max(0, self.depth - 1)
            elif c == "\\" and line[i + 1 : i + 2] in ("\n", "\r", ""):
                self.backslash = True
            i += 1


# ---------------------------------------------------------------------------------------------
# Writing back
# ---------------------------------------------------------------------------------------------
def split_program(notebook: Notebook, program: str) -> List[str]:
    """The cells' new sources from a (fixed) program. Raises NotebookError if the cells cannot be
    told apart any more (a fix removed a boundary), so that nothing is written."""
    return split_cells(program, [c.source for c in notebook.cells], notebook.masked, [c.number for c in notebook.cells])


def join_cells(sources: Sequence[str]) -> Tuple[str, List[Tuple[int, int]], List[Dict[int, str]]]:
    """The program for these cell texts (as an editor holds them): the program, each cell's
    (first program line, line count), and each cell's masked IPython lines."""
    lines: List[str] = []
    spans: List[Tuple[int, int]] = []
    masked: List[Dict[int, str]] = []
    for k, source in enumerate(sources):
        if k:
            lines.append(CELL_BOUNDARY + "\n")
        cell_lines, replaced = mask_ipython(source)
        masked.append(replaced)
        spans.append((len(lines) + 1, len(cell_lines)))
        lines.extend(line if line.endswith(("\n", "\r")) else line + "\n" for line in cell_lines)
    return "".join(lines), spans, masked


def split_cells(
    program: str, originals: Sequence[str], masked: Sequence[Dict[int, str]], numbers: Sequence[int]
) -> List[str]:
    """Cell texts from a program that :func:`join_cells` built (then fixed)."""
    pieces = re.split(r"(?m)^" + re.escape(CELL_BOUNDARY) + r"\r?\n", program)
    if len(pieces) != len(originals):
        raise NotebookError("a fix crossed a cell boundary; the notebook was not written")
    sources = []
    for original, piece, replaced, number in zip(originals, pieces, masked, numbers):
        lines = split_lines_keepends(piece)
        restored = 0
        for i, line in enumerate(lines):
            match = _PLACEHOLDER_LINE.match(line)
            if match and int(match.group(1)) in replaced:
                lines[i] = replaced[int(match.group(1))]
                restored += 1
        if restored != len(replaced):
            raise NotebookError(f"cell {number}: a fix removed an IPython line; the notebook was not written")
        text = "".join(lines)
        if not original.endswith(("\n", "\r")) and text.endswith("\n"):
            text = text[:-1]  # the newline the concatenation added
        sources.append(text)
    return sources


def write_back(notebook: Notebook, sources: List[str]) -> str:
    """The notebook's JSON text with only the changed cells' `source` values rewritten."""
    text = notebook.text
    out: List[str] = []
    position = 0
    for cell, new in zip(notebook.cells, sources):
        if new == cell.source:
            continue
        start, end = cell.span
        out.append(text[position:start])
        out.append(_source_json(notebook, cell, new))
        position = end
    out.append(text[position:])
    return "".join(out)


def _source_json(notebook: Notebook, cell: CodeCell, new: str) -> str:
    text = notebook.text
    if not cell.is_list:
        return json.dumps(new, ensure_ascii=notebook.ensure_ascii)
    # Keep each unchanged line's literal as written, and the separators the file uses.
    known: Dict[str, str] = {}
    for start, end in cell.literals:
        known.setdefault(json.loads(text[start:end]), text[start:end])
    lines = split_lines_keepends(new)
    literals = [known.get(line) or json.dumps(line, ensure_ascii=notebook.ensure_ascii) for line in lines]
    start, end = cell.span
    if cell.literals:
        first, last = cell.literals[0][0], cell.literals[-1][1]
        opening, closing = text[start + 1 : first], text[last : end - 1]
        separator = text[cell.literals[0][1] : cell.literals[1][0]] if len(cell.literals) > 1 else "," + opening
    else:
        opening, closing, separator = "", "", ", "
    if not literals:
        return "[]"
    return "[" + opening + separator.join(literals) + closing + "]"


# ---------------------------------------------------------------------------------------------
# Checking and fixing (the engine's hook for `.ipynb` files)
# ---------------------------------------------------------------------------------------------
def invalid_notebook(path: str, reason: str) -> FileResult:
    """An unreadable notebook: ATN001, as a file that does not parse; it is never written."""
    message = f"Invalid notebook: {reason}; the file was not checked"
    start = Position(1, 0)
    return FileResult(
        path=path,
        error=message,
        diagnostics=[Diagnostic(SYNTAX_ERROR_CODE, SYNTAX_ERROR_NAME, message, path, start, start, noqa_row=1)],
    )


def check_notebook(text: str, path: str, settings, *, fix: bool = False):
    """Check (or fix) a notebook's JSON text. The result's positions are program positions; its
    `notebook` maps them to cells. When fixing, `fixed_source` is the new JSON text."""
    from attnlint.engine import check_source, fix_source

    try:
        notebook = parse_notebook(text)
    except NotebookError as exc:
        return invalid_notebook(path, str(exc))
    except NotPython:  # another kernel's code is not Python: silence, not ATN001 on every cell
        return FileResult(path=path, source=text, original_source=text, fixed_source=text)
    if fix:
        result = fix_source(notebook.program, path, settings)
        program = result.fixed_source
        result.original_source = text
        result.fixed_source = text
        if result.fixed and program != notebook.program:
            try:
                result.fixed_source = write_back(notebook, split_program(notebook, program))
            except NotebookError as exc:
                # Nothing is written; the findings are those of the notebook as it is.
                warnings = result.fix_warnings + [str(exc)]
                result = check_source(notebook.program, path, settings)
                result.fix_warnings = warnings
                result.original_source = result.fixed_source = text
                program = notebook.program
        # The diagnostics that remain refer to the fixed program; map them with its own index.
        after = parse_notebook(result.fixed_source) if result.fixed_source != text else notebook
        result.source = program
        result.notebook = after.index
        return result
    result = check_source(notebook.program, path, settings)
    result.source = notebook.program
    result.notebook = notebook.index
    return result


def attach_notebook(result, text: str):
    """A cached result (its diagnostics only) made whole again: the program and the cell map."""
    try:
        notebook = parse_notebook(text)
    except NotPython:
        return result
    result.source = notebook.program
    result.notebook = notebook.index
    return result


def changed_cells(before: str, after: str) -> List[Tuple[int, str, str]]:
    """(cell number, old source, new source) for each code cell whose source differs."""
    old, new = parse_notebook(before), parse_notebook(after)
    return [(a.number, a.source, b.source) for a, b in zip(old.cells, new.cells) if a.source != b.source]


def rewrite_program(text: str, transform) -> str:
    """The notebook's JSON text after `transform(program) -> program` (e.g. adding noqa comments),
    with only the changed cells rewritten. Raises NotebookError when it cannot be done safely."""
    try:
        notebook = parse_notebook(text)
    except NotPython:
        return text
    program = transform(notebook.program)
    if program == notebook.program:
        return text
    return write_back(notebook, split_program(notebook, program))
