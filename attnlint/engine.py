"""The engine: files -> parse -> analysis -> rules -> findings -> (fixes).

Speed is designed in, because LibCST is 60-100x slower than `ast`:
- a text pre-filter: a file that contains none of the enabled rules' trigger strings is not parsed;
- one parse and one shared analysis per file, whatever the number of rules;
- only the PositionProvider metadata, without the defensive deep copy;
- a process pool over files, big files first (attnlint.scheduling).
"""

from __future__ import annotations

import ast
import io
import os
import tempfile
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from attnlint import prefilter
from attnlint.config import Settings
from attnlint.diagnostics import (
    INTERNAL_ERROR_CODE,
    INTERNAL_ERROR_NAME,
    IO_ERROR_CODE,
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
from attnlint.noqa import NoqaMap, parse_noqa
from attnlint.rules import registry
from attnlint.rules.base import NodeFix, Replacement, Rule, RuleContext

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
    """Cheap pre-filter: can any rule fire on this text at all?"""
    return prefilter.triggers(tuple(sorted({t for rule in rules for t in rule.triggers}))).search(source)


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
    if not rules or not might_match(source, rules):
        # Nothing can fire: only a syntax error is worth reporting, and `ast` finds it ~100x
        # faster than LibCST.
        error = prefilter.syntax_error(source)
        if error is not None and not _parses(source):  # LibCST knows grammar newer than this Python
            result.error = f"SyntaxError: {error.msg} at {error.lineno}:{error.offset}"
            result.diagnostics.append(_syntax_error(path, error.msg, error.lineno, error.offset))
        return result
    noqa = parse_noqa(source) if apply_noqa else NoqaMap()
    if noqa.file_exempt:
        return result
    rules = [r for r in rules if not noqa.file_silences(r.code)]
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        # CPython's own parser locates errors better than LibCST's; use it when it agrees.
        error = _compile_error(source)
        if error is not None:
            message, line, column = error.msg, error.lineno, error.offset
        else:
            message, line, column = exc.message, exc.raw_line, exc.raw_column + 1
        result.error = f"SyntaxError: {message} at {line}:{column}"
        result.diagnostics.append(_syntax_error(path, message, line, column))
        return result
    except (RecursionError, ValueError) as exc:
        result.error = f"cannot parse: {exc}"
        return result
    try:
        result.diagnostics = _run_rules(module, path, rules, noqa, settings)
    except (Exception, RecursionError) as exc:  # one file never takes the run down
        start = Position(1, 0)
        message = f"attnlint failed on this file ({type(exc).__name__}: {exc}); please report it"
        result.error = message
        result.internal_error = True
        result.diagnostics = [
            Diagnostic(INTERNAL_ERROR_CODE, INTERNAL_ERROR_NAME, message, path, start, start, noqa_row=1)
        ]
    return result


def _compile_error(source: str) -> Optional[SyntaxError]:
    try:
        compile(source, "<attnlint>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        return exc
    except (ValueError, RecursionError, MemoryError):  # null bytes, absurd nesting
        return None
    return None


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


def _run_rules(
    module: cst.Module, path: str, rules: Sequence[Rule], noqa: NoqaMap, settings: Settings
) -> List[Diagnostic]:
    from attnlint.analysis import analyze_module

    analysis = analyze_module(module)
    contexts = []
    for rule in rules:
        ctx = RuleContext(module, analysis)
        rule.check(ctx)
        if ctx.reports:
            contexts.append((rule, ctx))
    if not contexts:
        return []
    # Positions cost a full code generation; most files have no finding and never pay it.
    # `unsafe_skip_copy` keeps node identity, so the reported nodes are the wrapper's nodes.
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    diagnostics: List[Diagnostic] = []
    statement_spans: Optional[List[Tuple[int, int]]] = None
    for rule, ctx in contexts:
        for report in ctx.reports:
            span = positions[report.node]
            start = Position(span.start.line, span.start.column)
            end = Position(span.end.line, span.end.column)
            if noqa.by_line:
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


def _to_fix(node_fix: Optional[NodeFix], module: cst.Module, positions) -> Optional[Fix]:
    if node_fix is None:
        return None
    edits = []
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
    source: str, path: str = "<stdin>", settings: Optional[Settings] = None, unsafe: Optional[bool] = None
) -> FileResult:
    """Apply every allowed fix, re-checking until nothing changes. Never returns unparsable code."""
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


def read_source(path: Path, raw: Optional[bytes] = None) -> DecodedFile:
    raw = path.read_bytes() if raw is None else raw
    encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    bom = encoding == "utf-8-sig"
    text = raw.decode(encoding)
    if bom:
        encoding = "utf-8"
    return DecodedFile(text=text, encoding=encoding, bom=bom)


def write_atomically(path: Path, decoded: DecodedFile, text: str) -> None:
    """Write via a temp file in the same directory and `os.replace`: never half a file.

    A symbolic link is followed: its target is rewritten and the link stays a link."""
    path = path.resolve()
    data = text.encode(decoded.encoding)
    if decoded.bom:
        data = b"\xef\xbb\xbf" + data
    directory = path.parent
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".attnlint-tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        except OSError:
            pass
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def process_file(job: Job, settings: Settings) -> FileResult:
    path = Path(job.path)
    cache = None
    data: Optional[bytes] = None
    if job.use_cache and not job.fix:
        from attnlint.cache import result_cache

        cache = result_cache(settings)
        try:
            data = path.read_bytes()
        except OSError:
            data = None  # reported below, uncached
        if data is not None:
            hit = cache.get(job.display, data)
            if hit is not None:
                return hit
    try:
        decoded = read_source(path, data)
    except (OSError, UnicodeDecodeError, SyntaxError, LookupError) as exc:
        start = Position(1, 0)
        message = f"cannot read the file: {exc}"
        return FileResult(
            path=job.display,
            error=message,
            diagnostics=[Diagnostic(IO_ERROR_CODE, IO_ERROR_NAME, message, job.display, start, start, noqa_row=1)],
        )
    if not job.fix:
        result = check_source(decoded.text, job.display, settings)
        if cache is not None and data is not None:
            cache.put(job.display, data, decoded.encoding if not decoded.bom else "utf-8-sig", result)
        return result
    result = fix_source(decoded.text, job.display, settings)
    if job.write and result.fixed and result.fixed_source != decoded.text:
        try:
            write_atomically(path, decoded, result.fixed_source)
        except OSError as exc:
            result.error = f"cannot write fixes: {exc}"
            result.fixed = {}
    return result
