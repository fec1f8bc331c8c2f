"""The bundled examples (the README's first command) report what their docstrings announce."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("check_examples", ROOT / "scripts" / "check_examples.py")
check_examples = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_examples)


def test_every_example_reports_exactly_what_it_announces():
    assert check_examples.differences() == []


def test_a_missing_finding_is_caught(tmp_path, monkeypatch):
    # The checker itself can fail: an example announcing a code it does not show is reported.
    (tmp_path / "clean.py").write_text('"""- ATN101: announced but absent."""\nx = 1\n', encoding="utf-8")
    monkeypatch.setattr(check_examples, "EXAMPLES", tmp_path)
    assert check_examples.differences() == ["clean.py: ATN101 announced 1x, reported 0x"]
