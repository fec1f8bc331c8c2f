"""`attnlint server`, driven over stdio by pygls' own language client, as an editor drives it."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Dict, List

import pytest

pytest.importorskip("pygls")

from lsprotocol import types  # noqa: E402
from pygls.lsp.client import LanguageClient  # noqa: E402
from pygls.uris import from_fs_path  # noqa: E402

pytestmark = pytest.mark.lsp

BUGGY = (
    "import torch\n"
    "\n"
    "def attention(q, k, v):\n"
    "    b, n, d = k.shape\n"
    "    scores = q @ k.T / d ** 0.5\n"
    "    return scores.softmax(-1) @ v\n"
)
TIMEOUT = 30


class Editor:
    """A minimal editor: documents as text, and the diagnostics the server published."""

    def __init__(self, client: LanguageClient) -> None:
        self.client = client
        self.diagnostics: Dict[str, List[types.Diagnostic]] = {}
        self.messages: List[types.ShowMessageParams] = []
        self.changed = asyncio.Event()

        @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def published(params: types.PublishDiagnosticsParams) -> None:
            self.diagnostics[params.uri] = list(params.diagnostics)
            self.changed.set()

        @client.feature(types.WINDOW_SHOW_MESSAGE)
        def shown(params: types.ShowMessageParams) -> None:
            self.messages.append(params)

        @client.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
        def progress_create(params: types.WorkDoneProgressCreateParams) -> None:
            return None

    async def wait_for(self, uri: str, predicate) -> List[types.Diagnostic]:
        async def wait() -> List[types.Diagnostic]:
            while True:
                if uri in self.diagnostics and predicate(self.diagnostics[uri]):
                    return self.diagnostics[uri]
                self.changed.clear()
                await self.changed.wait()

        return await asyncio.wait_for(wait(), TIMEOUT)


def apply_text_edits(text: str, edits: List[types.TextEdit]) -> str:
    """Apply LSP edits (ASCII text here, so UTF-16 units are characters)."""
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))

    def offset(pos: types.Position) -> int:
        return offsets[min(pos.line, len(lines))] + pos.character

    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end) :]
    return text


async def start(tmp_path: Path, capabilities: types.ClientCapabilities = None) -> tuple:
    client = LanguageClient("attnlint-test", "1")
    editor = Editor(client)
    env = {**os.environ, "ATTNLINT_LSP_DEBOUNCE": "0.05"}
    await client.start_io(sys.executable, "-m", "attnlint", "server", env=env, cwd=str(tmp_path))
    result = await asyncio.wait_for(
        client.initialize_async(
            types.InitializeParams(
                capabilities=capabilities or types.ClientCapabilities(),
                root_uri=from_fs_path(str(tmp_path)),
            )
        ),
        TIMEOUT,
    )
    client.initialized(types.InitializedParams())
    return client, editor, result


async def stop(client: LanguageClient) -> None:
    await asyncio.wait_for(client.shutdown_async(None), TIMEOUT)
    client.exit(None)
    await asyncio.wait_for(client.stop(), TIMEOUT)


def run(coro):
    return asyncio.run(coro)


def open_python(client: LanguageClient, uri: str, text: str, version: int = 1) -> None:
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="python", version=version, text=text)
        )
    )


def change(client: LanguageClient, uri: str, text: str, version: int) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


async def code_actions(client, uri, diagnostic, only=None) -> List[types.CodeAction]:
    return await asyncio.wait_for(
        client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=diagnostic.range,
                context=types.CodeActionContext(diagnostics=[diagnostic], only=only),
            )
        ),
        TIMEOUT,
    )


def fixes(actions) -> List[types.CodeAction]:
    return [a for a in actions if isinstance(a, types.CodeAction)]


def edits_for(action: types.CodeAction, uri: str) -> List[types.TextEdit]:
    return [e for change in action.edit.document_changes if change.text_document.uri == uri for e in change.edits]


def test_python_document_diagnostic_quick_fix_and_clean(tmp_path):
    async def scenario():
        client, editor, init = await start(tmp_path)
        try:
            assert init.capabilities.position_encoding == types.PositionEncodingKind.Utf16
            uri = from_fs_path(str(tmp_path / "attention.py"))
            open_python(client, uri, BUGGY)
            (diag,) = await editor.wait_for(uri, lambda d: len(d) == 1)
            assert diag.code == "ATN103" and diag.source == "attnlint"
            assert diag.range == types.Range(types.Position(4, 17), types.Position(4, 20))
            assert diag.severity == types.DiagnosticSeverity.Warning
            assert diag.code_description.href.endswith("docs/rules/batched-transpose.md")

            actions = await code_actions(client, uri, diag)
            titles = [a.title for a in actions]
            fix = next(a for a in fixes(actions) if a.title.startswith("Replace `.T`"))
            assert fix.is_preferred and "(unsafe)" not in fix.title
            assert "Ignore ATN103 on this line" in titles
            assert any(a.kind == "source.fixAll.attnlint" for a in fixes(actions))
            assert "Verify the ATN103 fix (attnlint verify)" in titles

            fixed = apply_text_edits(BUGGY, edits_for(fix, uri))
            assert "q @ k.transpose(-2, -1) / d ** 0.5" in fixed
            change(client, uri, fixed, 2)
            await editor.wait_for(uri, lambda d: d == [])

            hover = await client.text_document_hover_async(
                types.HoverParams(types.TextDocumentIdentifier(uri=uri), types.Position(4, 18))
            )
            assert hover is None  # nothing left to explain
        finally:
            await stop(client)

    run(scenario())


def test_ignore_action_fix_all_and_hover(tmp_path):
    source = BUGGY.replace("softmax(-1)", "softmax(1)")  # ATN102 (unsafe fix) next to ATN103 (safe)

    async def scenario():
        client, editor, _ = await start(tmp_path)
        try:
            uri = from_fs_path(str(tmp_path / "attention.py"))
            open_python(client, uri, source)
            diagnostics = await editor.wait_for(uri, lambda d: len(d) == 2)
            by_code = {d.code: d for d in diagnostics}
            hover = await client.text_document_hover_async(
                types.HoverParams(types.TextDocumentIdentifier(uri=uri), by_code["ATN102"].range.start)
            )
            assert hover.contents.value.startswith("# softmax-wrong-axis (ATN102)")

            unsafe = [a for a in fixes(await code_actions(client, uri, by_code["ATN102"])) if "(unsafe)" in a.title]
            assert unsafe and not unsafe[0].is_preferred

            (fix_all,) = await code_actions(client, uri, by_code["ATN103"], only=["source.fixAll.attnlint"])
            after_fix_all = apply_text_edits(source, edits_for(fix_all, uri))
            assert "k.transpose(-2, -1)" in after_fix_all and "softmax(1)" in after_fix_all  # safe fixes only

            ignore = next(
                a
                for a in fixes(await code_actions(client, uri, by_code["ATN102"]))
                if a.title == "Ignore ATN102 on this line"
            )
            ignored = apply_text_edits(source, edits_for(ignore, uri))
            assert "softmax(1) @ v  # noqa: ATN102\n" in ignored
            change(client, uri, ignored, 2)
            remaining = await editor.wait_for(uri, lambda d: len(d) == 1)
            assert remaining[0].code == "ATN103"
        finally:
            await stop(client)

    run(scenario())


def test_configuration_is_reloaded_when_pyproject_changes(tmp_path):
    async def scenario():
        client, editor, _ = await start(tmp_path)
        try:
            uri = from_fs_path(str(tmp_path / "attention.py"))
            open_python(client, uri, BUGGY)
            await editor.wait_for(uri, lambda d: len(d) == 1)
            (tmp_path / "pyproject.toml").write_text('[tool.attnlint]\nignore = ["ATN103"]\n', encoding="utf-8")
            client.workspace_did_change_watched_files(
                types.DidChangeWatchedFilesParams(
                    changes=[
                        types.FileEvent(
                            uri=from_fs_path(str(tmp_path / "pyproject.toml")), type=types.FileChangeType.Created
                        )
                    ]
                )
            )
            await editor.wait_for(uri, lambda d: d == [])
        finally:
            await stop(client)

    run(scenario())


def test_utf8_position_encoding_is_honoured(tmp_path):
    source = BUGGY.replace("    scores = q @ k.T", "    é = 1; scores = q @ k.T")
    caps = types.ClientCapabilities(
        general=types.GeneralClientCapabilities(position_encodings=[types.PositionEncodingKind.Utf8])
    )

    async def scenario():
        client, editor, init = await start(tmp_path, caps)
        try:
            assert init.capabilities.position_encoding == types.PositionEncodingKind.Utf8
            uri = from_fs_path(str(tmp_path / "attention.py"))
            open_python(client, uri, source)
            (diag,) = await editor.wait_for(uri, lambda d: len(d) == 1)
            # `é` is 2 UTF-8 bytes: the column is one more than in code points (24).
            assert diag.range.start == types.Position(4, 25)
        finally:
            await stop(client)

    run(scenario())


NOTEBOOK_CELLS = [
    # Scaled, so that the one finding is ATN103 (random q/k with no scale would also be ATN101).
    "%matplotlib inline\nimport torch\nkeys = torch.rand(2, 3, 4)\nqueries = torch.rand(2, 3, 4)",
    "!pip install -q torch\nscores = queries @ keys.T * queries.shape[-1] ** -0.5\nweights = scores.softmax(-1)",
]


def test_notebook_document_diagnostic_quick_fix_and_clean(tmp_path):
    nb_uri = from_fs_path(str(tmp_path / "notes.ipynb"))
    cell_uris = [f"vscode-notebook-cell:{tmp_path}/notes.ipynb#cell{i}" for i in range(len(NOTEBOOK_CELLS))]

    async def scenario():
        client, editor, _ = await start(tmp_path)
        try:
            client.notebook_document_did_open(
                types.DidOpenNotebookDocumentParams(
                    notebook_document=types.NotebookDocument(
                        uri=nb_uri,
                        notebook_type="jupyter-notebook",
                        version=1,
                        cells=[types.NotebookCell(kind=types.NotebookCellKind.Code, document=u) for u in cell_uris],
                    ),
                    cell_text_documents=[
                        types.TextDocumentItem(uri=u, language_id="python", version=1, text=t)
                        for u, t in zip(cell_uris, NOTEBOOK_CELLS)
                    ],
                )
            )
            (diag,) = await editor.wait_for(cell_uris[1], lambda d: len(d) == 1)
            assert diag.code == "ATN103"
            # Line 2 of the second cell (0-based 1); the magic before it kept the numbering.
            assert diag.range == types.Range(types.Position(1, 19), types.Position(1, 25))
            assert editor.diagnostics[cell_uris[0]] == []

            fix = next(a for a in fixes(await code_actions(client, cell_uris[1], diag)) if a.is_preferred)
            assert [c.text_document.uri for c in fix.edit.document_changes] == [cell_uris[1]]
            fixed = apply_text_edits(NOTEBOOK_CELLS[1], edits_for(fix, cell_uris[1]))
            assert (
                fixed
                == "!pip install -q torch\nscores = queries @ keys.transpose(-2, -1) * queries.shape[-1] ** -0.5\nweights = scores.softmax(-1)"
            )

            ignore = next(
                a for a in fixes(await code_actions(client, cell_uris[1], diag)) if a.title.startswith("Ignore")
            )
            assert apply_text_edits(NOTEBOOK_CELLS[1], edits_for(ignore, cell_uris[1])).startswith(
                "!pip install -q torch\nscores = queries @ keys.T * queries.shape[-1] ** -0.5  # noqa: ATN103\n"
            )

            (fix_all,) = await code_actions(client, cell_uris[1], diag, only=["source.fixAll.attnlint"])
            assert [c.text_document.uri for c in fix_all.edit.document_changes] == [cell_uris[1]]
            assert apply_text_edits(NOTEBOOK_CELLS[1], edits_for(fix_all, cell_uris[1])) == fixed  # magic kept

            client.notebook_document_did_change(
                types.DidChangeNotebookDocumentParams(
                    notebook_document=types.VersionedNotebookDocumentIdentifier(uri=nb_uri, version=2),
                    change=types.NotebookDocumentChangeEvent(
                        cells=types.NotebookDocumentCellChanges(
                            text_content=[
                                types.NotebookDocumentCellContentChanges(
                                    document=types.VersionedTextDocumentIdentifier(uri=cell_uris[1], version=2),
                                    changes=[types.TextDocumentContentChangeWholeDocument(text=fixed)],
                                )
                            ]
                        )
                    ),
                )
            )
            await editor.wait_for(cell_uris[1], lambda d: d == [])
        finally:
            await stop(client)

    run(scenario())


def test_verify_command_reports_progress_and_verdict(tmp_path):
    pytest.importorskip("torch")
    source = (
        "import torch\n"
        "import torch.nn as nn\n"
        "\n"
        "\n"
        "class SelfAttention(nn.Module):\n"
        "    def __init__(self, d_in, d_out):\n"
        "        super().__init__()\n"
        "        self.W_q = nn.Parameter(torch.rand(d_in, d_out))\n"
        "        self.W_k = nn.Parameter(torch.rand(d_in, d_out))\n"
        "        self.W_v = nn.Parameter(torch.rand(d_in, d_out))\n"
        "\n"
        "    def forward(self, x):\n"
        "        # x: (batch, num_tokens, d_in)\n"
        "        queries = x @ self.W_q\n"
        "        keys = x @ self.W_k\n"
        "        values = x @ self.W_v\n"
        "        scores = queries @ keys.T\n"
        "        weights = torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)\n"
        "        return weights @ values\n"
    )

    async def scenario():
        caps = types.ClientCapabilities(window=types.WindowClientCapabilities(work_done_progress=True))
        client, editor, _ = await start(tmp_path, caps)
        try:
            uri = from_fs_path(str(tmp_path / "attention.py"))
            open_python(client, uri, source)
            (diag,) = await editor.wait_for(uri, lambda d: len(d) == 1)
            command = next(a for a in await code_actions(client, uri, diag) if isinstance(a, types.Command))
            assert command.command == "attnlint.verify"
            result = await asyncio.wait_for(
                client.workspace_execute_command_async(
                    types.ExecuteCommandParams(command=command.command, arguments=command.arguments)
                ),
                300,
            )
            assert result["code"] == "ATN103" and result["entry"] == "SelfAttention"
            assert result["ok"] is True, result["output"]
            assert any("verified" in m.message for m in editor.messages)
        finally:
            await stop(client)

    run(scenario())


def test_server_without_pygls_says_how_to_install_it(monkeypatch, capsys):
    from attnlint import cli

    monkeypatch.setitem(sys.modules, "attnlint.server", None)  # as if pygls were missing
    assert cli.main(["server"]) == 2
    assert "pip install 'attnlint[lsp]'" in capsys.readouterr().err
