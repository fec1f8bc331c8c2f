"""The result cache: same answers as without it, invalidated by content and settings."""

from __future__ import annotations

import json
from pathlib import Path

from attnlint import cli, engine
from attnlint.cache import CACHE_DIR, ResultCache
from attnlint.config import Settings

BUGGY = "def f(q, k):\n    b, n, d = k.shape\n    return q @ k.T\n"


def _run(capsys, *args):
    code = cli.main(["check", "--output-format", "json", *args])
    return code, json.loads(capsys.readouterr().out)


def test_cached_run_reports_the_same(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text(BUGGY)
    first = _run(capsys, ".")
    assert (tmp_path / CACHE_DIR).is_dir()
    assert _run(capsys, ".") == first
    assert first[1][0]["code"] == "ATN103"


def test_cache_hit_skips_parsing(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text(BUGGY)
    _run(capsys, ".")

    def fail(*_args, **_kwargs):
        raise AssertionError("parsed despite a cache hit")

    monkeypatch.setattr(engine, "check_source", fail)
    code, found = _run(capsys, ".", "--jobs", "1")
    assert code == 1 and found[0]["location"] == {"row": 3, "column": 16}


def test_changed_file_or_settings_miss(tmp_path):
    settings = Settings(root=tmp_path)
    cache = ResultCache(tmp_path, settings)
    result = engine.check_source(BUGGY, "m.py", settings)
    cache.put("m.py", BUGGY.encode(), "utf-8", result)
    assert cache.get("m.py", BUGGY.encode()).diagnostics == result.diagnostics
    assert cache.get("m.py", (BUGGY + "\n").encode()) is None
    other = ResultCache(tmp_path, Settings(root=tmp_path, ignore=["ATN103"]))
    assert other.get("m.py", BUGGY.encode()) is None


def test_corrupt_entry_is_a_miss(tmp_path):
    settings = Settings(root=tmp_path)
    cache = ResultCache(tmp_path, settings)
    cache.put("m.py", BUGGY.encode(), "utf-8", engine.check_source(BUGGY, "m.py", settings))
    for entry in (tmp_path / CACHE_DIR).rglob("*"):
        if entry.is_file() and entry.name != ".gitignore":
            entry.write_text("{not json")
    assert cache.get("m.py", BUGGY.encode()) is None


def test_no_cache_writes_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text(BUGGY)
    _run(capsys, "--no-cache", ".")
    assert not (tmp_path / CACHE_DIR).exists()


def test_fix_does_not_use_stale_cache(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "m.py"
    path.write_text(BUGGY)
    _run(capsys, ".")
    assert cli.main(["check", "--fix", "."]) == 0
    capsys.readouterr()
    code, found = _run(capsys, ".")
    assert code == 0 and found == []
    assert "transpose(-2, -1)" in Path("m.py").read_text()
