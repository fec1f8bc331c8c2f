"""The engine: files -> parse -> analysis -> rules -> findings -> (fixes).

Speed is designed in, because LibCST is 60-100x slower than `ast`:
- a text pre-filter: a file that contains none of the enabled rules' trigger strings is not parsed;
- one parse and one shared analysis per file, whatever the number of rules;
- only the PositionProvider metadata, without the defensive deep copy;
- a process pool over files, big files first (attnlint.scheduling).
"""

from __future__ import annotations

import io
import os
import re
import tokenize
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from attnlint import prefilter
from attnlint.config import Settings
from attnlint.diagnostics import (
    INTERNAL_ERROR_CODE,
    INTERNAL_ERROR_NAME,
    IO_ERROR_CODE,
    ISSUES_URL,
    IO_ERROR_NAME,
    SYNTAX_ERROR_CODE,
    SYNTAX_ERROR_NAME,
    Applicability,
    Diagnostic,
    Edit,
    FileResult,
    Fix,
    Position,
)
from attnlint.deepstack import call_with_deep_stack
from attnlint.fileio import read_regular, write_fixed
from attnlint.noqa import UNUSED_NOQA_CODE, NoqaMap, parse_noqa, unused_noqa
from attnlint.notebook import attach_notebook, check_notebook, is_notebook_path
from attnlint.parseguard import MAX_CHAIN, chain_too_long, cpython_verdict, parse_module
from attnlint.rules import registry
from attnlint.rules.base import InsertBefore, NodeFix, Replacement, Rule, RuleContext

# Many files (cache first, then a process pool) are run by attnlint.scheduling, which imports no
# LibCST, so that a warm run never loads the parser; re-exported for the engine's callers.
from attnlint.scheduling import Job, process_files  # noqa: F401
from attnlint.sourcetext import line_offsets

# Fixes can enable other fixes (or overlap one another); re-check and re-apply up to this often.
MAX_FIX_PASSES = 10


# ---------------------------------------------------------------------------------------------
# Rules for a file
# ---------------------------------------------------------------------------------------------
def rules_for(path: str, settings: Settings) -> List[Rule]:
    all_rules = registry.all_rules()
    codes = [r.code for r in all_rules]
    enabled = set(settings.selected_codes(codes)) - settings.ignored_for_path(path, codes)
    return [r(settings.rule_options.get(r.code)) for r in all_rules if r.code in enabled]


def might_match(source: str, rules: Sequence[Rule]) -> bool:
    """Cheap pre-filter: can any rule fire on this text at all? A rule can where one of its
    triggers matches and, if it names where its findings stand (`reported_where`), one of those."""
    plain = tuple(sorted({t for rule in rules if not rule.reported_where for t in rule.triggers}))
    if plain and prefilter.triggers(plain).search(source):
        return True
    return any(
        prefilter.triggers(tuple(rule.reported_where)).search(source)
        and prefilter.triggers(tuple(rule.triggers)).search(source)
        for rule in rules
        if rule.reported_where
    )


def _any_rule_triggers(text: str) -> bool:
    """Whether any rule's triggers match `text`: the definitions whose text can matter to the
    analysis (see analysis.selection). Every rule's, not only the selected ones': what the
    analysis knows of a function never depends on which rules are on."""
    return _every_trigger().search(text)


@lru_cache(maxsize=1)
def _every_trigger() -> prefilter.Triggers:
    return prefilter.triggers(tuple(sorted({t for rule in registry.all_rules() for t in rule.triggers})))


# ---------------------------------------------------------------------------------------------
# Checking one source text
# ---------------------------------------------------------------------------------------------
def check_source(
    source: str, path: str = "<stdin>", settings: Optional[Settings] = None, *, apply_noqa: bool = True
) -> FileResult:
    """Check one source text. `apply_noqa=False` leaves suppression to the caller (flake8)."""
    settings = settings or Settings()
    rules = rules_for(path, settings)
    result = FileResult(path=path, source=source)
    verdict = cpython_verdict(source)
    if not rules or not might_match(source, rules):
        # Nothing can fire: only a syntax error is worth reporting, and CPython finds it ~100x
        # faster than LibCST (which is asked only when it may know newer grammar). A malformed
        # suppression is still worth a warning.
        if apply_noqa and not settings.ignore_noqa:
            result.warnings = parse_noqa(source).warnings
        if not verdict.ok and (verdict.at_limit or not _libcst_parses(source)):
            _report_syntax_error(result, path, verdict.error, verdict.line, verdict.column)
        return result
    if verdict.at_limit:  # LibCST must never see it (it can crash the process)
        _report_syntax_error(result, path, verdict.error, verdict.line, verdict.column)
        return result
    if chain_too_long(source):  # valid Python, but LibCST's parser would crash or take minutes
        _report_internal_error(
            result,
            path,
            f"an expression here chains more than {MAX_CHAIN:,} operators; LibCST, attnlint's parser, "
            "would crash or take minutes on it",
        )
        return result
    noqa = parse_noqa(source) if apply_noqa and not settings.ignore_noqa else NoqaMap()
    result.warnings = noqa.warnings
    if noqa.file_exempt:
        return result
    rules = [r for r in rules if not noqa.file_silences(r.code)]
    try:
        module = parse_module(source)
    except cst.ParserSyntaxError as exc:
        if verdict.ok:  # valid Python that LibCST cannot read (e.g. 20,000 concatenated strings)
            _report_internal_error(
                result, path, f"LibCST, attnlint's parser, cannot parse this valid Python ({' '.join(exc.message.split())})"
            )
        elif verdict.error is not None:  # CPython's own parser locates errors better than LibCST's
            _report_syntax_error(result, path, verdict.error, verdict.line, verdict.column)
        else:
            _report_syntax_error(result, path, exc.message, exc.raw_line, exc.raw_column + 1)
        return result
    except (RecursionError, MemoryError, ValueError) as exc:
        _report_internal_error(result, path, f"LibCST, attnlint's parser, failed ({type(exc).__name__}: {exc})")
        return result
    try:
        try:
            result.diagnostics = _run_rules(module, path, rules, noqa, settings, source, result.depends_on)
        except RecursionError:  # deeply nested valid code: again, with room to recurse
            result.diagnostics = call_with_deep_stack(
                _run_rules, module, path, rules, noqa, settings, source, result.depends_on
            )
        if any(r.code == UNUSED_NOQA_CODE for r in rules):
            result.diagnostics = _with_unused_noqa(result.diagnostics, noqa, source, path, rules, settings)
    except (Exception, RecursionError) as exc:  # one file never takes the run down
        result.diagnostics = []
        _report_internal_error(result, path, f"attnlint failed on this file ({type(exc).__name__}: {exc})")
    return result


def _report_syntax_error(
    result: FileResult, path: str, message: str, line: Optional[int], column: Optional[int]
) -> None:
    result.error = f"SyntaxError: {message} at {line}:{column}"
    result.diagnostics.append(_syntax_error(path, message, line, column))


def _report_internal_error(result: FileResult, path: str, what: str) -> None:
    """ATN003: attnlint could not check a file Python accepts; the other files are still checked."""
    start = Position(1, 0)
    message = f"{what}; the file was not checked; please report it ({ISSUES_URL})"
    result.error = message
    result.internal_error = True
    result.diagnostics.append(
        Diagnostic(INTERNAL_ERROR_CODE, INTERNAL_ERROR_NAME, message, path, start, start, noqa_row=1)
    )


def _syntax_error(path: str, message: str, line: Optional[int], column: Optional[int]) -> Diagnostic:
    """ATN001 at a 1-based (line, column) as parsers report them."""
    line = max(line or 1, 1)
    start = Position(line, max((column or 1) - 1, 0))
    return Diagnostic(
        code=SYNTAX_ERROR_CODE,
        name=SYNTAX_ERROR_NAME,
        message=f"SyntaxError: {message}; the file was not checked",
        path=path,
        start=start,
        end=start,
        noqa_row=line,
    )


# Where a file's project starts: the nearest folder above it that holds one of these.
_PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
_projects: Dict[Path, object] = {}


def project_for(file: Path):
    """The project (attnlint.analysis.project.Project) a checked file belongs to, one per root and
    process, so that each imported module of it is read once per run: the nearest folder above the
    file with a project marker, else the file's own folder."""
    from attnlint.analysis.project import Project

    folder = file.resolve().parent
    root = next((d for d in (folder, *folder.parents) if any((d / m).exists() for m in _PROJECT_MARKERS)), folder)
    if root not in _projects:
        _projects[root] = Project([root])
    return _projects[root]


def _run_rules(
    module: cst.Module,
    path: str,
    rules: Sequence[Rule],
    noqa: NoqaMap,
    settings: Settings,
    source: Optional[str] = None,
    depends_on: Optional[list] = None,
) -> List[Diagnostic]:
    from attnlint.analysis import analyze_module

    file = Path(path) if path not in ("<stdin>", "-") else None
    project = project_for(file) if file is not None and file.suffix == ".py" else None
    analysis = analyze_module(module, project=project, path=file, wanted=_any_rule_triggers, source=source)
    contexts = []
    for rule in rules:
        ctx = RuleContext(module, analysis)
        rule.check(ctx)
        if ctx.reports:
            contexts.append((rule, ctx))
    if depends_on is not None:
        # After the rules: a question may read a neighbour (`pads_left`), which the results
        # then depend on too.
        depends_on.extend(analysis.imported_files)
    if not contexts:
        return []
    # Positions cost a full code generation; most files have no finding and never pay it.
    # `unsafe_skip_copy` keeps node identity, so the reported nodes are the wrapper's nodes.
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    if source is not None and _FORM_FEED_INDENT.search(source):
        positions = _SourceColumns(wrapper, positions, source)
    diagnostics: List[Diagnostic] = []
    statement_spans: Optional[List[Tuple[int, int]]] = None
    for rule, ctx in contexts:
        for report in ctx.reports:
            span = positions[report.node]
            start = Position(span.start.line, span.start.column)
            end = Position(span.end.line, span.end.column)
            if noqa.active:
                if statement_spans is None:
                    statement_spans = _statement_spans(wrapper.module, positions)
                lines = _enclosing_lines(start.line, end.line, statement_spans)
                if any(noqa.line_silences(line, rule.code) for line in lines):
                    continue
            diagnostics.append(
                Diagnostic(
                    code=rule.code,
                    name=rule.name,
                    message=report.message,
                    path=path,
                    start=start,
                    end=end,
                    fix=_configured(_to_fix(report.fix, wrapper.module, positions), rule.code, settings),
                    noqa_row=start.line,
                    url=rule.url(),
                )
            )
    diagnostics.sort(key=lambda d: d.sort_key)
    return diagnostics


def _with_unused_noqa(
    diagnostics: List[Diagnostic], noqa: NoqaMap, source: str, path: str, rules: Sequence[Rule], settings: Settings
) -> List[Diagnostic]:
    """ATN100, judged once every other rule has reported (and marked the noqa it used)."""
    known = [r.code for r in registry.all_rules()]
    checked = [r.code for r in rules]
    extra = []
    for diag in unused_noqa(noqa, source, path, checked, known):
        if noqa.line_silences(diag.start.line, UNUSED_NOQA_CODE):
            continue
        rule = registry.by_code()[UNUSED_NOQA_CODE]
        extra.append(replace(diag, fix=_configured(diag.fix, diag.code, settings), url=rule.url()))
    return sorted(diagnostics + extra, key=lambda d: d.sort_key)


# A form feed in a line's indentation: LibCST drops it when it regenerates the line (its code is
# then not the source), so its columns there are one short and edits would land early.
_FORM_FEED_INDENT = re.compile(r"^[ \t]*\f", re.MULTILINE)


class _SourceColumns:
    """LibCST's positions moved onto the source, for lines whose indentation LibCST rewrote
    (form feeds): it counts columns in its own regenerated code. Lines never move."""

    def __init__(self, wrapper: MetadataWrapper, positions, source: str) -> None:
        from attnlint.sourcetext import split_lines

        self._positions = positions
        self._shift: Dict[int, Tuple[int, int]] = {}  # line -> (from column, shift)
        generated = split_lines(wrapper.module.code)
        for number, (ours, theirs) in enumerate(zip(split_lines(source), generated), start=1):
            if ours != theirs and ours.lstrip(" \t\f") == theirs.lstrip(" \t\f"):
                indent = len(theirs) - len(theirs.lstrip(" \t\f"))
                self._shift[number] = (indent, len(ours) - len(theirs))

    def _moved(self, position):
        from libcst.metadata import CodePosition

        start_column, shift = self._shift.get(position.line, (0, 0))
        column = position.column + shift if position.column >= start_column else position.column
        return CodePosition(position.line, column)

    def __getitem__(self, node):
        from libcst.metadata import CodeRange

        span = self._positions[node]
        return CodeRange(self._moved(span.start), self._moved(span.end))


def _to_fix(node_fix: Optional[NodeFix], module: cst.Module, positions) -> Optional[Fix]:
    if node_fix is None:
        return None
    edits = []
    lines = None
    for change in node_fix.changes:
        if isinstance(change, Replacement):
            span = positions[change.old]
            edits.append(
                Edit(
                    Position(span.start.line, span.start.column),
                    Position(span.end.line, span.end.column),
                    module.code_for_node(change.new),
                )
            )
        elif isinstance(change, InsertBefore):
            span = positions[change.statement]
            start = Position(span.start.line, span.start.column)
            if lines is None:
                from attnlint.sourcetext import split_lines

                lines = split_lines(module.code)  # Python's own line breaks, not str.splitlines
            line = lines[span.start.line - 1] if span.start.line <= len(lines) else ""
            indent = line[: len(line) - len(line.lstrip(" \t\f"))]
            newline = module.default_newline
            edits.append(Edit(start, start, f"{change.code}{newline}{indent}"))
        else:  # pragma: no cover - programming error in a rule
            raise TypeError(f"unknown change {change!r}")
    edits.sort(key=lambda e: (e.start, e.end))
    return Fix(node_fix.message, node_fix.applicability, tuple(edits))


def _configured(fix: Optional[Fix], code: str, settings: Settings) -> Optional[Fix]:
    """The fix as this configuration sees it: extend-(un)safe-fixes, and unfixable -> display-only."""
    if fix is None:
        return None
    applicability = settings.effective_applicability(code, fix.applicability)
    if not settings.is_fixable(code):
        applicability = Applicability.DISPLAY_ONLY
    if applicability is fix.applicability:
        return fix
    return Fix(fix.message, applicability, fix.edits)


class _StatementCollector(cst.CSTVisitor):
    def __init__(self) -> None:
        self.nodes: List[cst.CSTNode] = []

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self.nodes.append(node)


def _statement_spans(module: cst.Module, positions) -> List[Tuple[int, int]]:
    collector = _StatementCollector()
    module.visit(collector)
    spans = []
    for node in collector.nodes:
        span = positions[node]
        spans.append((span.start.line, span.end.line))
    return spans


def _enclosing_lines(first: int, last: int, spans: List[Tuple[int, int]]) -> range:
    """The lines of the innermost statement that holds the finding (noqa anywhere there counts)."""
    best: Optional[Tuple[int, int]] = None
    for lo, hi in spans:
        if lo <= first and last <= hi and (best is None or hi - lo < best[1] - best[0]):
            best = (lo, hi)
    if best is None:
        return range(first, last + 1)
    return range(best[0], best[1] + 1)


# ---------------------------------------------------------------------------------------------
# Fixing one source text
# ---------------------------------------------------------------------------------------------
def fix_source(
    source: str,
    path: str = "<stdin>",
    settings: Optional[Settings] = None,
    unsafe: Optional[bool] = None,
    allow_fix: Optional[Callable[[str, Diagnostic], bool]] = None,
) -> FileResult:
    """Apply every allowed fix, re-checking until nothing changes. Never returns unparsable code.

    ``allow_fix(current_source, diagnostic)``, when given, must also accept a fix for it to be
    applied (``check --fix --verify``: only fixes proven by running them).
    """
    settings = settings or Settings()
    if unsafe is not None and unsafe != settings.unsafe_fixes:
        from attnlint.config import with_overrides

        settings = with_overrides(settings, unsafe_fixes=unsafe)
    original = source
    fixed: Dict[str, int] = {}
    warnings: List[str] = []
    result = check_source(source, path, settings)
    for _ in range(MAX_FIX_PASSES):
        if result.error:
            break
        applicable = [d for d in result.diagnostics if d.fix and settings.fix_allowed(d.code, d.fix.applicability)]
        if allow_fix is not None:
            applicable = [d for d in applicable if allow_fix(source, d)]
        if not applicable:
            break
        new_source, applied = _apply_parsable(source, applicable, warnings)
        if not applied or new_source == source:
            break
        source = new_source
        for d in applied:
            fixed[d.code] = fixed.get(d.code, 0) + 1
        result = check_source(source, path, settings)
    else:
        warnings.append(f"fixes did not settle after {MAX_FIX_PASSES} passes; some remain (please report)")
    result.fix_warnings = warnings
    result.fixed = fixed
    result.original_source = original
    result.fixed_source = source
    return result


def _apply_parsable(source: str, applicable: Sequence[Diagnostic], warnings: List[str]) -> Tuple[str, List[Diagnostic]]:
    """Apply the fixes together; if the result does not parse, find the ones that do alone."""
    new_source, applied = apply_fixes(source, applicable)
    if _parses(new_source):
        return new_source, applied
    kept: List[Diagnostic] = []
    for diag in applied:
        candidate, _ = apply_fixes(source, kept + [diag])
        if _parses(candidate):
            kept.append(diag)
        else:
            warnings.append(
                f"{diag.code} fix at {diag.start.line}:{diag.start.column + 1} would not parse; "
                "it was not applied (please report)"
            )
    return apply_fixes(source, kept) if kept else (source, [])


def _parses(source: str) -> bool:
    """Whether the text parses: CPython first (LibCST can crash on what CPython refuses at its
    limits), then LibCST, which must be able to read the result of a fix."""
    verdict = cpython_verdict(source)
    return not verdict.at_limit and not chain_too_long(source) and _libcst_parses(source)


def _libcst_parses(source: str) -> bool:
    try:
        cst.parse_module(source)
    except Exception:
        return False
    return True


def apply_fixes(source: str, diagnostics: Sequence[Diagnostic]) -> Tuple[str, List[Diagnostic]]:
    """Apply the fixes that do not overlap an earlier one; the rest wait for the next pass."""
    offsets = line_offsets(source)

    def offset(pos: Position) -> int:
        return offsets[pos.line - 1] + pos.column

    chosen: List[Tuple[int, int, str]] = []
    applied: List[Diagnostic] = []
    taken: List[Tuple[int, int]] = []
    for diag in sorted(diagnostics, key=lambda d: d.fix.edits[0].start if d.fix.edits else d.start):
        spans = [(offset(e.start), offset(e.end), e.content) for e in diag.fix.edits]
        if any(_overlaps(a, b, lo, hi) for a, b, _ in spans for lo, hi in taken):
            continue
        taken.extend((a, b) for a, b, _ in spans)
        chosen.extend(spans)
        applied.append(diag)
    out = source
    for start, end, content in sorted(chosen, key=lambda s: (s[0], s[1]), reverse=True):
        out = out[:start] + content + out[end:]
    return out, applied


def _overlaps(a: int, b: int, lo: int, hi: int) -> bool:
    if a == b or lo == hi:  # insertions clash only when strictly inside another edit
        return lo < a < hi or a < lo < b or (a == lo and b == hi)
    return a < hi and lo < b


# ---------------------------------------------------------------------------------------------
# Files on disk
# ---------------------------------------------------------------------------------------------
@dataclass
class DecodedFile:
    text: str
    encoding: str
    bom: bool
    raw: Optional[bytes] = None  # the bytes read, so a write can tell whether the file changed since


def read_source(path: Path, raw: Optional[bytes] = None) -> DecodedFile:
    raw = read_regular(path) if raw is None else raw
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
        text = raw.decode(encoding)
    except (SyntaxError, UnicodeDecodeError) as exc:
        raise SourceDecodeError(_decode_problem(raw, exc)) from exc
    bom = encoding == "utf-8-sig"
    if bom:
        encoding = "utf-8"
    return DecodedFile(text=text, encoding=encoding, bom=bom, raw=raw)


class SourceDecodeError(ValueError):
    """The bytes are not text in the encoding Python would read them with."""


def _decode_problem(raw: bytes, exc: Exception) -> str:
    """`not valid UTF-8 (byte 0xe9 at line 1, column 6); add a coding declaration ...`."""
    if isinstance(exc, SyntaxError) and "unknown encoding" in str(exc):
        return str(exc).split(" for ")[0].rstrip(":")  # `unknown encoding: klingon`
    if isinstance(exc, SyntaxError) and "encoding problem" in str(exc):
        return str(exc).split(" for ")[0]
    try:
        raw.decode(getattr(exc, "encoding", None) or "utf-8")
    except UnicodeDecodeError as error:
        line = raw.count(b"\n", 0, error.start) + 1
        column = error.start - (raw.rfind(b"\n", 0, error.start) + 1) + 1
        name = "UTF-8" if error.encoding.replace("-", "").lower().startswith("utf8") else error.encoding
        return (
            f"not valid {name} (byte 0x{raw[error.start]:02x} at line {line}, byte {column}); "
            "save it as UTF-8 or declare its encoding (`# -*- coding: latin-1 -*-`)"
        )
    return str(exc)


def encode_source(decoded: DecodedFile, text: str) -> bytes:
    data = text.encode(decoded.encoding)
    return b"\xef\xbb\xbf" + data if decoded.bom else data


def write_atomically(path: Path, decoded: DecodedFile, text: str) -> None:
    """Write `text` in the file's encoding, safely (see attnlint.fileio): never half a file, never
    over a change made since `decoded` was read, never to a read-only file.

    A symbolic link is followed: its target is rewritten and the link stays a link."""
    data = encode_source(decoded, text)
    expected = decoded.raw if decoded.raw is not None else read_regular(path)
    write_fixed(path, expected, data)


def process_file(job: Job, settings: Settings) -> FileResult:
    path = Path(job.path)
    cache = None
    data: Optional[bytes] = None
    if job.use_cache and not job.fix:
        from attnlint.cache import result_cache

        cache = result_cache(settings)
        if settings.cache_dir is not None:  # --cache-dir (the cache keys on settings, not on place)
            cache.directory = settings.cache_dir
        try:
            data = read_regular(path)
        except OSError:
            data = None  # reported below, uncached
        if data is not None:
            hit = cache.get(job.display, data)
            if hit is not None:
                return _with_cell_map(hit) if is_notebook_path(job.path) else hit
    try:
        decoded = read_source(path, data)
    except (OSError, SourceDecodeError, UnicodeDecodeError, SyntaxError, LookupError) as exc:
        start = Position(1, 0)
        message = f"cannot read the file: {_describe(exc)}"
        return FileResult(
            path=job.display,
            error=message,
            diagnostics=[Diagnostic(IO_ERROR_CODE, IO_ERROR_NAME, message, job.display, start, start, noqa_row=1)],
        )
    notebook = is_notebook_path(job.path)
    if not job.fix:
        result = check_notebook(decoded.text, job.display, settings) if notebook else check_source(decoded.text, job.display, settings)
        # Warnings are shown every run; a result built on other files' facts is as stale as they are.
        if cache is not None and data is not None and not result.warnings and not result.depends_on:
            cache.put(job.display, data, decoded.encoding if not decoded.bom else "utf-8-sig", result)
        return result
    if notebook and job.fix_gate is not None:
        # Verification runs .py modules; a notebook's fixes are not proven, so --verify applies none.
        result = check_notebook(decoded.text, job.display, settings)
        result.fix_warnings.append("fixes in notebooks are not verified; none applied under --verify")
    elif notebook:
        result = check_notebook(decoded.text, job.display, settings, fix=True)
    else:
        allow_fix = job.fix_gate(decoded.text, job.display, settings) if job.fix_gate is not None else None
        result = fix_source(decoded.text, job.display, settings, allow_fix=allow_fix)
    if job.write and result.fixed and result.fixed_source != decoded.text:
        try:
            write_atomically(path, decoded, result.fixed_source)
        except OSError as exc:
            return _unwritten(job, decoded, settings, exc)
    return result


def _with_cell_map(result: FileResult) -> FileResult:
    """A cached notebook result keeps only the notebook's text: rebuild the program and cell map
    (a clean result, which may come back without its text, needs neither)."""
    if not result.diagnostics or result.source is None:
        return result
    return attach_notebook(result, result.source)


def _unwritten(job: Job, decoded: DecodedFile, settings: Settings, exc: OSError) -> FileResult:
    """The fixes could not be written: report the file as it is on disk (its findings, unfixed)
    and say why, so no output claims a fix that is not there."""
    result = check_source(decoded.text, job.display, settings)
    message = f"cannot write fixes: {_describe(exc)}"
    start = Position(1, 0)
    result.error = message
    result.diagnostics.insert(0, Diagnostic(IO_ERROR_CODE, IO_ERROR_NAME, message, job.display, start, start, noqa_row=1))
    return result


def _describe(exc: BaseException) -> str:
    """An OS error without the path (the report shows it already): `Permission denied`."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc)


def process_isolated(job: Job, settings: Settings) -> FileResult:
    """Check one file in a process of its own: if the process dies, the file is ATN003."""
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    try:
        with ProcessPoolExecutor(max_workers=1) as pool:
            return pool.submit(process_file, job, settings).result()
    except BrokenProcessPool:
        result = FileResult(path=job.display)
        _report_internal_error(result, job.display, "attnlint's process crashed on this file")
        return result
