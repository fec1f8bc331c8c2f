"""How long `attnlint server` takes to answer, measured as an editor sees it (over stdio).

    python scripts/lsp_latency.py [FILE.py] [--rounds N]

Prints the median and worst time from a change to its diagnostics (the debounce included, set to
0 here) and of a code-action request, for FILE (default: examples/causal_attention.py).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.uris import from_fs_path


async def measure(path: Path, rounds: int) -> None:
    client = LanguageClient("latency", "1")
    published: asyncio.Queue = asyncio.Queue()

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_diagnostics(params):
        published.put_nowait((time.perf_counter(), params))

    env = {**os.environ, "ATTNLINT_LSP_DEBOUNCE": "0"}
    started = time.perf_counter()
    await client.start_io(sys.executable, "-m", "attnlint", "server", env=env)
    await client.initialize_async(types.InitializeParams(capabilities=types.ClientCapabilities()))
    client.initialized(types.InitializedParams())
    uri = from_fs_path(str(path.resolve()))
    text = path.read_text(encoding="utf-8")
    client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "python", 1, text)))
    _, first = await published.get()
    print(f"start + first diagnostics: {time.perf_counter() - started:.2f} s ({len(first.diagnostics)} findings)")
    changes, actions, repeated = [], [], []
    for version in range(2, rounds + 2):
        edited = text + f"\n# edit {version}\n"
        sent = time.perf_counter()
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(version=version, uri=uri),
                [types.TextDocumentContentChangeWholeDocument(text=edited)],
            )
        )
        received, params = await published.get()
        changes.append(received - sent)
        # The first request after a change computes the fixes; the next ones (cursor moves) reuse them.
        for attempt in range(3 if params.diagnostics else 0):
            sent = time.perf_counter()
            await client.text_document_code_action_async(
                types.CodeActionParams(
                    types.TextDocumentIdentifier(uri),
                    params.diagnostics[0].range,
                    types.CodeActionContext(diagnostics=params.diagnostics[:1]),
                )
            )
            (actions if attempt == 0 else repeated).append(time.perf_counter() - sent)
    for name, values in (
        ("change -> diagnostics", changes),
        ("code actions, first after a change", actions),
        ("code actions, repeated", repeated),
    ):
        if values:
            print(f"{name}: median {statistics.median(values) * 1000:.0f} ms, worst {max(values) * 1000:.0f} ms")
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "file", nargs="?", default=str(Path(__file__).resolve().parents[1] / "examples" / "causal_attention.py")
    )
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    asyncio.run(measure(Path(args.file), args.rounds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
