"""`attnlint server`: a Language Server (LSP over stdio, on pygls 2).

It runs the engine in-process: rules, registry and LibCST stay loaded between keystrokes, and no
CLI is spawned per change. What it offers:

- diagnostics for Python files and notebook documents on open, on change (debounced) and on save,
  with the exact range (in the position encoding negotiated with the client, UTF-16 by default),
  a severity, and the code linking to the rule's page (`codeDescription.href`);
- code actions: the finding's fix (safe ones preferred; unsafe ones labelled "(unsafe)"),
  "Ignore ATNxxx on this line" (adds the noqa), and `source.fixAll.attnlint` with the safe fixes
  only (for `editor.codeActionsOnSave`);
- hover on a finding shows the rule's page;
- `pyproject.toml` is re-read when it changes (watched files, saves, or a newer mtime);
- the `attnlint.verify` command runs `attnlint verify` for the finding under the cursor in a
  subprocess (user code never runs in the server), reports progress and shows the verdict.

pygls is an optional dependency: `pip install 'attnlint[lsp]'`.
"""

from __future__ import annotations

import ast
import asyncio
import os
import sys
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from attnlint import __version__
from attnlint.config import ConfigError, Settings, find_config, load_settings, with_overrides
from attnlint.diagnostics import (
    INTERNAL_ERROR_CODE,
    SYNTAX_ERROR_CODE,
    Applicability,
    Diagnostic,
    Edit,
    FileResult,
    Position,
)
from attnlint.engine import check_source, fix_source
from attnlint.noqa import UNUSED_NOQA_CODE, add_noqa
from attnlint.notebook import NotebookError, join_cells, split_cells
from attnlint.sourcetext import line_offsets

SOURCE = "attnlint"
FIX_ALL_KIND = "source.fixAll.attnlint"
VERIFY_COMMAND = "attnlint.verify"
# Typing pauses shorter than this do not start a check.
DEBOUNCE_SECONDS = float(os.environ.get("ATTNLINT_LSP_DEBOUNCE", "0.25"))
VERIFY_TIMEOUT_SECONDS = 600


# ---------------------------------------------------------------------------------------------
# What the server knows about each open document
# ---------------------------------------------------------------------------------------------
@dataclass
class CellSpan:
    uri: str
    first_line: int  # first program line of the cell (1-based)
    line_count: int


@dataclass
class Checked:
    """The last check of one document: a Python file, or a notebook's code cells as one program."""

    path: str
    source: str  # the program (a notebook's cells joined)
    result: FileResult
    settings: Settings
    cells: List[CellSpan] = field(default_factory=list)  # empty for a Python file
    cell_texts: List[str] = field(default_factory=list)
    masked: list = field(default_factory=list)
    versions: Dict[str, Optional[int]] = field(default_factory=dict)
    # The program with every safe fix applied, computed on the first fix-all request of this version.
    safe_fixed: Optional[str] = None

    @property
    def is_notebook(self) -> bool:
        return bool(self.cells)

    def locate(self, pos: Position) -> Tuple[str, Position]:
        """(document uri, position in it) of a program position."""
        if not self.cells:
            return next(iter(self.versions)), pos
        for cell in self.cells:
            if cell.first_line <= pos.line < cell.first_line + cell.line_count:
                return cell.uri, Position(pos.line - cell.first_line + 1, pos.column)
        # A boundary line: the end of the cell before it.
        before = [c for c in self.cells if c.first_line <= pos.line] or self.cells[:1]
        cell = before[-1]
        return cell.uri, Position(cell.line_count + 1, 0)

    def program_line(self, uri: str, line: int) -> int:
        """Program line (1-based) of a 1-based line in a document."""
        for cell in self.cells:
            if cell.uri == uri:
                return cell.first_line + line - 1
        return line


class AttnlintLanguageServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            "attnlint",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            notebook_document_sync=types.NotebookDocumentSyncOptions(
                notebook_selector=[
                    types.NotebookDocumentFilterWithNotebook(
                        notebook="*", cells=[types.NotebookCellLanguage(language="python")]
                    )
                ],
                save=True,
            ),
        )
        self.checked: Dict[str, Checked] = {}  # by document uri (a notebook: its uri and each cell's)
        self.pending: Dict[str, asyncio.TimerHandle] = {}
        # Configuration by directory, with the config file's mtime when it was read.
        self._settings: Dict[Path, Tuple[Optional[Path], Optional[int], Settings]] = {}

    # --- configuration ----------------------------------------------------------------------
    def settings_for(self, path: str) -> Settings:
        directory = Path(path).resolve().parent if path else Path.cwd()
        config = find_config(directory)
        mtime = config.stat().st_mtime_ns if config is not None and config.exists() else None
        cached = self._settings.get(directory)
        if cached is not None and cached[0] == config and cached[1] == mtime:
            return cached[2]
        try:
            settings = load_settings(config, cwd=directory)
        except ConfigError as exc:
            self.window_show_message(types.ShowMessageParams(types.MessageType.Error, f"attnlint: {exc}"))
            settings = Settings(root=directory)
        self._settings[directory] = (config, mtime, settings)
        return settings

    def forget_settings(self) -> None:
        self._settings.clear()

    # --- checking -----------------------------------------------------------------------------
    def check_text_document(self, uri: str) -> None:
        document = self.workspace.get_text_document(uri)
        if self.workspace.get_notebook_document(cell_uri=uri) is not None:
            self.check_notebook(self.workspace.get_notebook_document(cell_uri=uri).uri)
            return
        path = to_fs_path(uri) or uri
        if path.lower().endswith(".ipynb"):
            return  # a notebook opened as JSON text: its cells are checked as a notebook document
        settings = self.settings_for(path)
        source = document.source
        result = check_source(source, path, settings)
        checked = Checked(path, source, result, settings, versions={uri: document.version})
        self.checked[uri] = checked
        self.publish(checked)

    def check_notebook(self, notebook_uri: str) -> None:
        notebook = self.workspace.get_notebook_document(notebook_uri=notebook_uri)
        if notebook is None:
            return
        code_cells = [c for c in notebook.cells if c.kind == types.NotebookCellKind.Code]
        texts = [self.workspace.get_text_document(c.document).source for c in code_cells]
        program, spans, masked = join_cells(texts)
        path = to_fs_path(notebook_uri) or notebook_uri
        settings = self.settings_for(path)
        result = check_source(program, path, settings)
        checked = Checked(
            path,
            program,
            result,
            settings,
            cells=[CellSpan(c.document, first, count) for c, (first, count) in zip(code_cells, spans)],
            cell_texts=texts,
            masked=masked,
            versions={c.document: self.workspace.get_text_document(c.document).version for c in code_cells},
        )
        previous = self.checked.get(notebook_uri)
        self.checked[notebook_uri] = checked
        for cell in checked.cells:
            self.checked[cell.uri] = checked
        self.publish(checked, previous)

    def schedule(self, key: str, run) -> None:
        """Debounce: run `run()` once the document has been quiet for DEBOUNCE_SECONDS."""
        handle = self.pending.pop(key, None)
        if handle is not None:
            handle.cancel()
        loop = asyncio.get_running_loop()
        self.pending[key] = loop.call_later(DEBOUNCE_SECONDS, self._run_pending, key, run)

    def _run_pending(self, key: str, run) -> None:
        self.pending.pop(key, None)
        try:
            run()
        except Exception as exc:  # a bug must not take the editor session down
            self.window_log_message(types.LogMessageParams(types.MessageType.Error, f"attnlint: {exc!r}"))

    # --- diagnostics --------------------------------------------------------------------------
    def publish(self, checked: Checked, previous: Optional[Checked] = None) -> None:
        by_uri: Dict[str, List[types.Diagnostic]] = {uri: [] for uri in checked.versions}
        if previous is not None:  # cells that were removed get their diagnostics cleared
            for uri in previous.versions:
                by_uri.setdefault(uri, [])
        for diag in checked.result.diagnostics:
            uri, lsp_diag = self.to_lsp(checked, diag)
            by_uri.setdefault(uri, []).append(lsp_diag)
        for uri, diagnostics in by_uri.items():
            self.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=checked.versions.get(uri))
            )

    def lsp_range(self, checked: Checked, start: Position, end: Position) -> Tuple[str, types.Range]:
        uri, start_in = checked.locate(start)
        end_uri, end_in = checked.locate(end)
        if end_uri != uri:  # a span never crosses cells, but be safe: stop at the cell's end
            end_in = Position(start_in.line + 1, 0)
        lines = self.workspace.get_text_document(uri).lines
        server_range = types.Range(
            types.Position(start_in.line - 1, start_in.column), types.Position(end_in.line - 1, end_in.column)
        )
        return uri, self.workspace.position_codec.range_to_client_units(lines, server_range)

    def to_lsp(self, checked: Checked, diag: Diagnostic) -> Tuple[str, types.Diagnostic]:
        uri, lsp_range = self.lsp_range(checked, diag.start, diag.end)
        tags = [types.DiagnosticTag.Unnecessary] if diag.code == UNUSED_NOQA_CODE else None
        if diag.code in (SYNTAX_ERROR_CODE, INTERNAL_ERROR_CODE):
            severity = types.DiagnosticSeverity.Error
        elif diag.code == UNUSED_NOQA_CODE:
            severity = types.DiagnosticSeverity.Hint
        else:
            severity = types.DiagnosticSeverity.Warning
        return uri, types.Diagnostic(
            range=lsp_range,
            message=diag.message,
            severity=severity,
            code=diag.code,
            code_description=types.CodeDescription(href=diag.url) if diag.url else None,
            source=SOURCE,
            tags=tags,
        )

    def diagnostics_at(self, uri: str, lsp_range: types.Range) -> List[Tuple[Diagnostic, types.Range]]:
        """The findings (with their ranges in `uri`) that overlap a client range."""
        checked = self.checked.get(uri)
        if checked is None:
            return []
        found = []
        for diag in checked.result.diagnostics:
            diag_uri, diag_range = self.lsp_range(checked, diag.start, diag.end)
            if diag_uri != uri:
                continue
            if _before(diag_range.end, lsp_range.start) or _before(lsp_range.end, diag_range.start):
                continue
            found.append((diag, diag_range))
        return found

    # --- edits --------------------------------------------------------------------------------
    def edits_for_program(self, checked: Checked, edits: Sequence[Edit]) -> Optional[types.WorkspaceEdit]:
        """Program edits as document edits (per cell in a notebook); None if one crosses cells."""
        per_uri: Dict[str, List[types.TextEdit]] = {}
        for edit in edits:
            uri, lsp_range = self.lsp_range(checked, edit.start, edit.end)
            if checked.locate(edit.end)[0] != uri:
                return None
            per_uri.setdefault(uri, []).append(types.TextEdit(range=lsp_range, new_text=edit.content))
        return self.workspace_edit(checked, per_uri)

    def workspace_edit(self, checked: Checked, per_uri: Dict[str, List[types.TextEdit]]) -> types.WorkspaceEdit:
        return types.WorkspaceEdit(
            document_changes=[
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(
                        uri=uri, version=checked.versions.get(uri)
                    ),
                    edits=text_edits,
                )
                for uri, text_edits in per_uri.items()
            ]
        )

    def replace_text(self, checked: Checked, new_program: str) -> Optional[types.WorkspaceEdit]:
        """The edit that turns the documents' text into `new_program` (one minimal edit per document)."""
        if checked.is_notebook:
            try:
                new_cells = split_cells(
                    new_program, checked.cell_texts, checked.masked, list(range(1, len(checked.cells) + 1))
                )
            except NotebookError:
                return None
            pairs = [(cell.uri, old, new) for cell, old, new in zip(checked.cells, checked.cell_texts, new_cells)]
        else:
            uri = next(iter(checked.versions))
            pairs = [(uri, checked.source, new_program)]
        per_uri = {}
        for uri, old, new in pairs:
            if old != new:
                per_uri[uri] = [self.minimal_edit(uri, old, new)]
        return self.workspace_edit(checked, per_uri) if per_uri else None

    def minimal_edit(self, uri: str, old: str, new: str) -> types.TextEdit:
        prefix = 0
        limit = min(len(old), len(new))
        while prefix < limit and old[prefix] == new[prefix]:
            prefix += 1
        suffix = 0
        while suffix < limit - prefix and old[len(old) - 1 - suffix] == new[len(new) - 1 - suffix]:
            suffix += 1
        start, end = _position_of(old, prefix), _position_of(old, len(old) - suffix)
        lines = self.workspace.get_text_document(uri).lines
        server_range = types.Range(types.Position(start[0], start[1]), types.Position(end[0], end[1]))
        return types.TextEdit(
            range=self.workspace.position_codec.range_to_client_units(lines, server_range),
            new_text=new[prefix : len(new) - suffix],
        )


def _position_of(text: str, offset: int) -> Tuple[int, int]:
    """0-based (line, code-point column) of an offset."""
    offsets = line_offsets(text)
    line = max(i for i, o in enumerate(offsets) if o <= offset)
    return line, offset - offsets[line]


def _before(a: types.Position, b: types.Position) -> bool:
    return (a.line, a.character) < (b.line, b.character)


server = AttnlintLanguageServer()


# ---------------------------------------------------------------------------------------------
# Document sync
# ---------------------------------------------------------------------------------------------
@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: AttnlintLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
    if ls.workspace.get_notebook_document(cell_uri=params.text_document.uri) is None:
        ls.check_text_document(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: AttnlintLanguageServer, params: types.DidChangeTextDocumentParams) -> None:
    uri = params.text_document.uri
    ls.schedule(uri, lambda: ls.check_text_document(uri))


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: AttnlintLanguageServer, params: types.DidSaveTextDocumentParams) -> None:
    uri = params.text_document.uri
    if uri.endswith("pyproject.toml"):
        recheck_all(ls)
        return
    ls.check_text_document(uri)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: AttnlintLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    ls.checked.pop(uri, None)
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


@server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
def notebook_did_open(ls: AttnlintLanguageServer, params: types.DidOpenNotebookDocumentParams) -> None:
    ls.check_notebook(params.notebook_document.uri)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
def notebook_did_change(ls: AttnlintLanguageServer, params: types.DidChangeNotebookDocumentParams) -> None:
    uri = params.notebook_document.uri
    ls.schedule(uri, lambda: ls.check_notebook(uri))


@server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
def notebook_did_save(ls: AttnlintLanguageServer, params: types.DidSaveNotebookDocumentParams) -> None:
    ls.check_notebook(params.notebook_document.uri)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
def notebook_did_close(ls: AttnlintLanguageServer, params: types.DidCloseNotebookDocumentParams) -> None:
    ls.checked.pop(params.notebook_document.uri, None)
    for cell in params.cell_text_documents:
        ls.checked.pop(cell.uri, None)
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=cell.uri, diagnostics=[]))


@server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def watched_files_changed(ls: AttnlintLanguageServer, params: types.DidChangeWatchedFilesParams) -> None:
    if any(change.uri.endswith("pyproject.toml") for change in params.changes):
        recheck_all(ls)


@server.feature(types.INITIALIZED)
def initialized(ls: AttnlintLanguageServer, params: types.InitializedParams) -> None:
    watch = ls.client_capabilities.workspace and ls.client_capabilities.workspace.did_change_watched_files
    if watch and watch.dynamic_registration:
        ls.client_register_capability(
            types.RegistrationParams(
                registrations=[
                    types.Registration(
                        id=str(uuid.uuid4()),
                        method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                        register_options=types.DidChangeWatchedFilesRegistrationOptions(
                            watchers=[types.FileSystemWatcher(glob_pattern="**/pyproject.toml")]
                        ),
                    )
                ]
            )
        )


def recheck_all(ls: AttnlintLanguageServer) -> None:
    ls.forget_settings()
    for uri in [u for u, c in ls.checked.items() if not c.is_notebook]:
        ls.check_text_document(uri)
    for notebook_uri in list(ls.workspace.notebook_documents):
        ls.check_notebook(notebook_uri)


# ---------------------------------------------------------------------------------------------
# Code actions
# ---------------------------------------------------------------------------------------------
@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, types.CodeActionKind.SourceFixAll, FIX_ALL_KIND],
        resolve_provider=False,
    ),
)
def code_action(ls: AttnlintLanguageServer, params: types.CodeActionParams) -> list:
    uri = params.text_document.uri
    checked = ls.checked.get(uri)
    if checked is None:
        return []
    only = params.context.only
    actions: list = []
    if _wants(only, types.CodeActionKind.QuickFix):
        for diag, diag_range in ls.diagnostics_at(uri, params.range):
            actions.extend(quick_fixes(ls, checked, diag, uri, diag_range))
    if _wants(only, FIX_ALL_KIND):
        fix_all = fix_all_action(ls, checked)
        if fix_all is not None:
            actions.append(fix_all)
    return actions


def _wants(only: Optional[Sequence[str]], kind: str) -> bool:
    """Whether a request restricted to `only` kinds accepts `kind` (kinds are dot-separated)."""
    if not only:
        return True
    return any(kind == k or kind.startswith(k + ".") for k in only)


def quick_fixes(ls, checked: Checked, diag: Diagnostic, uri: str, diag_range: types.Range) -> list:
    lsp_diag = ls.to_lsp(checked, diag)[1]
    actions = []
    fix = diag.fix
    if fix is not None and fix.applicability is not Applicability.DISPLAY_ONLY:
        edit = ls.edits_for_program(checked, fix.edits)
        if edit is not None:
            unsafe = fix.applicability is Applicability.UNSAFE
            actions.append(
                types.CodeAction(
                    title=f"{fix.message} ({diag.code}){' (unsafe)' if unsafe else ''}",
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[lsp_diag],
                    edit=edit,
                    is_preferred=not unsafe,
                )
            )
    if diag.code not in (SYNTAX_ERROR_CODE, INTERNAL_ERROR_CODE, UNUSED_NOQA_CODE):
        with_noqa = add_noqa(checked.source, {diag.noqa_row or diag.start.line: [diag.code]})
        edit = ls.replace_text(checked, with_noqa) if with_noqa != checked.source else None
        if edit is not None:
            actions.append(
                types.CodeAction(
                    title=f"Ignore {diag.code} on this line",
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[lsp_diag],
                    edit=edit,
                )
            )
        if diag.code.startswith("ATN") and _has_recipe(diag.code):
            # A bare Command (the protocol allows it next to CodeActions): clients tell the two
            # apart by `command` being a string.
            actions.append(
                types.Command(
                    title=f"Verify the {diag.code} fix (attnlint verify)",
                    command=VERIFY_COMMAND,
                    arguments=[uri, diag_range.start.line, diag_range.start.character],
                )
            )
    return actions


def _has_recipe(code: str) -> bool:
    try:
        from attnlint.verify.recipes import RECIPE_BY_RULE_CODE
    except ImportError:  # pragma: no cover
        return False
    return code in RECIPE_BY_RULE_CODE


def fix_all_action(ls, checked: Checked) -> Optional[types.CodeAction]:
    """Safe fixes only, whatever the configuration says about unsafe ones (for on-save use)."""
    if checked.safe_fixed is None:
        settings = with_overrides(checked.settings, unsafe_fixes=False)
        fixed = fix_source(checked.source, checked.path, settings)
        ok = not fixed.error and fixed.fixed_source is not None
        checked.safe_fixed = fixed.fixed_source if ok else checked.source
    if checked.safe_fixed == checked.source:
        return None
    edit = ls.replace_text(checked, checked.safe_fixed)
    if edit is None:
        return None
    return types.CodeAction(title="attnlint: fix all safe fixes", kind=FIX_ALL_KIND, edit=edit)


# ---------------------------------------------------------------------------------------------
# Hover
# ---------------------------------------------------------------------------------------------
@server.feature(types.TEXT_DOCUMENT_HOVER)
def hover(ls: AttnlintLanguageServer, params: types.HoverParams) -> Optional[types.Hover]:
    from attnlint.docs import render_rule_page
    from attnlint.rules import registry

    point = types.Range(params.position, params.position)
    for diag, diag_range in ls.diagnostics_at(params.text_document.uri, point):
        rule = registry.by_code().get(diag.code)
        if rule is None:
            continue
        return types.Hover(
            contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=render_rule_page(rule)),
            range=diag_range,
        )
    return None


# ---------------------------------------------------------------------------------------------
# attnlint.verify
# ---------------------------------------------------------------------------------------------
def enclosing_definition(source: str, line: int) -> Optional[str]:
    """The top-level class or function around a program line: what `verify --entry` runs."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.lineno <= line <= (node.end_lineno or node.lineno):
                return node.name
    return None


@server.command(VERIFY_COMMAND)
async def verify(ls: AttnlintLanguageServer, *args) -> dict:
    """Arguments: document uri, 0-based line, character (the cursor). Runs in a subprocess."""
    uri, line, character = args[0], int(args[1]), int(args[2])
    point = types.Range(types.Position(line, character), types.Position(line, character))
    found = [d for d, _ in ls.diagnostics_at(uri, point) if _has_recipe(d.code)]
    checked = ls.checked.get(uri)
    if not found or checked is None:
        message = "attnlint verify: no finding with a verification recipe under the cursor"
        ls.window_show_message(types.ShowMessageParams(types.MessageType.Warning, message))
        return {"ok": None, "message": message}
    diag = found[0]
    entry = enclosing_definition(checked.source, diag.start.line)
    if entry is None:
        message = f"attnlint verify: {diag.code} is not inside a top-level class or function to run"
        ls.window_show_message(types.ShowMessageParams(types.MessageType.Warning, message))
        return {"ok": None, "message": message}
    token = str(uuid.uuid4())
    progress = ls.work_done_progress
    try:
        await progress.create_async(token)
        created = True
    except Exception:  # the client does not support server-initiated progress
        created = False
    if created:
        progress.begin(token, types.WorkDoneProgressBegin(title=f"attnlint verify {diag.code}", message=entry))
    with tempfile.TemporaryDirectory(prefix="attnlint-verify-") as tmp:
        target = Path(tmp) / "module.py"
        target.write_text(checked.source, encoding="utf-8")
        command = [sys.executable, "-m", "attnlint", "verify", diag.code, str(target), "--entry", entry]
        if created:
            progress.report(token, types.WorkDoneProgressReport(message="running the original and the fixed code"))
        process = await asyncio.create_subprocess_exec(
            *command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, cwd=tmp
        )
        try:
            output, _ = await asyncio.wait_for(process.communicate(), VERIFY_TIMEOUT_SECONDS)
        except asyncio.TimeoutError:
            process.kill()
            output = b"timed out"
    text = output.decode("utf-8", "replace").strip()
    ok = process.returncode == 0
    verdict = f"attnlint verify {diag.code} ({entry}): {'verified' if ok else 'NOT verified'}"
    if created:
        progress.end(token, types.WorkDoneProgressEnd(message=verdict))
    ls.window_show_message(
        types.ShowMessageParams(
            types.MessageType.Info if ok else types.MessageType.Warning, verdict + ("\n" + text if text else "")
        )
    )
    return {"ok": ok, "code": diag.code, "entry": entry, "output": text, "returncode": process.returncode}


def main() -> int:
    server.start_io()
    return 0
