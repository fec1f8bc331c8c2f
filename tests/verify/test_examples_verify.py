"""`attnlint verify examples/`: every fixable finding on the bundled examples is proven on the CPU.

What a user runs, end to end: the command finds each finding's entry, fixes every *other* finding
first (so the evidence is about this rule's fix alone), tells the recipe what the analysis knows (a
causal mask, a q/k/v function, the mask's convention), and runs float64 and float32.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def examples_run():
    proc = subprocess.run(
        [sys.executable, "-m", "attnlint", "verify", "examples/", "--device", "cpu", "--output-format", "json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    return proc, json.loads(proc.stdout)


def test_every_fixable_finding_on_the_examples_verifies(examples_run):
    proc, records = examples_run
    assert records, proc.stderr
    for record in records:
        assert record["verdict"] in ("verified", "equivalent"), record
        assert [(r["device"], r["dtype"]) for r in record["runs"]] == [("cpu", "float64"), ("cpu", "float32")]
    assert proc.returncode == 0, proc.stderr


def test_safe_fixes_are_equivalent_and_unsafe_ones_verified(examples_run):
    _, records = examples_run
    for record in records:
        expected = "equivalent" if record["fix_applicability"] == "safe" else "verified"
        assert record["verdict"] == expected, record


def test_every_rule_has_a_verified_example(examples_run):
    from attnlint.rules import registry

    from attnlint.verify.recipes import recipe_for

    _, records = examples_run
    # ATN100 (unused-noqa) edits comments only: nothing to run, no recipe.
    assert sorted({r["code"] for r in records}) == [r.code for r in registry.all_rules() if recipe_for(r.code)]
