"""Documentation stays true: rule pages are generated from the rules and carry ruff's sections."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from attnlint.docs import render_rule_page
from attnlint.rules import registry

ROOT = Path(__file__).resolve().parents[1]
SECTIONS = ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety")


@pytest.mark.parametrize("rule", registry.all_rules(), ids=lambda r: r.code)
def test_rule_page_has_every_section(rule):
    page = render_rule_page(rule)
    assert page.startswith(f"# {rule.name} ({rule.code})")
    for section in SECTIONS:
        assert section in page, f"{rule.code} page lacks {section!r}"
    assert rule.fix_sentence() in page
    assert rule.code in page.split("## Suppressing it")[1]


def test_generated_docs_are_up_to_date():
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_rule_docs.py"), "--check"],
        capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_readme_lists_every_rule():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for rule in registry.all_rules():
        assert f"| {rule.code} | [{rule.name}](docs/rules/{rule.name}.md)" in readme
