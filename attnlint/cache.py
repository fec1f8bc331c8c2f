"""A content-hash cache of check results, so unchanged files are not parsed again.

The key covers everything a result depends on: attnlint's version, the settings that shape
findings (rules, options, fix applicability), the display path and the file's bytes. Entries are
one small JSON file each under `.attnlint_cache/` at the project root, written atomically; a
missing, stale or unreadable entry is a miss, never an error. `--no-cache` turns it off.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import asdict
from functools import lru_cache
from pathlib import Path
from typing import Optional

from attnlint import __version__
from attnlint.config import Settings
from attnlint.diagnostics import Applicability, Diagnostic, Edit, FileResult, Fix, Position

CACHE_DIR = ".attnlint_cache"


def settings_fingerprint(settings: Settings) -> str:
    relevant = {
        "select": settings.select,
        "ignore": settings.ignore,
        "extend_select": settings.extend_select,
        "per_file_ignores": settings.per_file_ignores,
        "rule_options": settings.rule_options,
        "fixable": settings.fixable,
        "unfixable": settings.unfixable,
        "extend_safe_fixes": settings.extend_safe_fixes,
        "extend_unsafe_fixes": settings.extend_unsafe_fixes,
        "root": str(settings.root),
    }
    return json.dumps(relevant, sort_keys=True, default=str)


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """attnlint's own code, so an edited or reinstalled checkout never reads stale results."""
    digest = hashlib.sha256(__version__.encode())
    package = Path(__file__).resolve().parent
    for path in sorted(package.rglob("*.py")):
        stat = path.stat()
        digest.update(f"{path.relative_to(package)}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()


@lru_cache(maxsize=1)
def libcst_version() -> str:
    try:
        from importlib.metadata import version

        return version("libcst")
    except Exception:  # pragma: no cover - metadata missing in odd installs
        return "unknown"


_CACHES: dict = {}


def result_cache(settings: Settings) -> "ResultCache":
    """One cache object per process and configuration (not one per file)."""
    key = (str(settings.root), settings_fingerprint(settings))
    if key not in _CACHES:
        _CACHES[key] = ResultCache(settings.root, settings)
    return _CACHES[key]


class ResultCache:
    def __init__(self, root: Path, settings: Settings) -> None:
        self.directory = root / CACHE_DIR
        self.salt = f"{code_fingerprint()}\0{libcst_version()}\0{settings_fingerprint(settings)}"
        self._marked = False  # the cache directory's .gitignore has been written

    def _key(self, display: str, data: bytes) -> str:
        digest = hashlib.sha256(self.salt.encode())
        digest.update(b"\0" + display.encode() + b"\0")
        digest.update(data)
        return digest.hexdigest()

    def get(self, display: str, data: bytes) -> Optional[FileResult]:
        key = self._key(display, data)
        path = self.directory / key[:2] / key
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            diagnostics = [_diagnostic(d) for d in record["diagnostics"]]
            # Reporters show the text around findings only; a clean file's text is not kept.
            source = data.decode(record["encoding"]) if diagnostics else None
            return FileResult(path=display, diagnostics=diagnostics, source=source)
        except (OSError, ValueError, KeyError, TypeError, LookupError):
            return None

    def put(self, display: str, data: bytes, encoding: str, result: FileResult) -> None:
        if result.error:
            return  # errors are re-reported, never cached
        key = self._key(display, data)
        target = self.directory / key[:2] / key
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            if not self._marked:
                (self.directory / ".gitignore").write_text("*\n", encoding="utf-8")
                self._marked = True
            payload = json.dumps({"encoding": encoding, "diagnostics": [asdict(d) for d in result.diagnostics]})
            fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(payload)
            os.replace(tmp, target)
        except OSError:
            pass  # a read-only tree just runs uncached


def _position(data) -> Position:
    return Position(data["line"], data["column"])


def _diagnostic(data) -> Diagnostic:
    fix = data.get("fix")
    if fix is not None:
        fix = Fix(
            fix["message"],
            Applicability(fix["applicability"]),
            tuple(Edit(_position(e["start"]), _position(e["end"]), e["content"]) for e in fix["edits"]),
        )
    return Diagnostic(
        code=data["code"],
        name=data["name"],
        message=data["message"],
        path=data["path"],
        start=_position(data["start"]),
        end=_position(data["end"]),
        fix=fix,
        noqa_row=data["noqa_row"],
        url=data.get("url"),
    )
