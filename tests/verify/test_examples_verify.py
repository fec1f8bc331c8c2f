"""Every fixable finding on the bundled examples is fixed and the fix proven by running it (CPU).

This is what `attnlint verify CODE FILE --entry NAME` does for a user: other findings in the file
are fixed first, so the evidence is about this rule's fix alone; the analysis tells the recipe
what it knows (a causal mask, a q/k/v function). The cases are the findings themselves (no list
kept by hand): each finding's entry is the top-level class or function that holds it.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("torch")

from attnlint.rules import registry
from attnlint.verify import verify_fix

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
_spec = importlib.util.spec_from_file_location("check_examples", ROOT / "scripts" / "check_examples.py")
check_examples = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_examples)


def _entry_holding(filename: str, line: int) -> str:
    tree = ast.parse((EXAMPLES / filename).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)) and node.lineno <= line <= node.end_lineno:
            return node.name
    raise AssertionError(f"{filename}:{line} is not inside a top-level class or function")


def _cases():
    rules = registry.by_code()
    for filename, code, line in check_examples.findings():
        if rules[code].recipe and rules[code].fix_applicability is not None:
            yield pytest.param(code, filename, _entry_holding(filename, line), id=f"{code}-{filename}:{line}")


CASES = list(_cases())


@pytest.mark.parametrize("code,filename,entry", CASES)
def test_example_fix_is_verified(code, filename, entry):
    source = (EXAMPLES / filename).read_text(encoding="utf-8")
    reports = verify_fix(code, source, entry=entry, devices=("cpu",))
    assert [(r.device, r.dtype) for r in reports] == [("cpu", "float64"), ("cpu", "float32")]
    for report in reports:
        assert report.ok, report.summary()
        # The evidence includes the bug: something must show the original wrong (or crashing).
        failing_original = [c for c in report.checks if "original" in c.name]
        assert failing_original, report.summary()


def test_cases_come_from_the_examples():
    assert CASES, "no fixable finding with a recipe on the bundled examples"
