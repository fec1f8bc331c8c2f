"""Documentation stays true: rule pages and the README's table are generated from the registry,
carry ruff's sections, and show only examples the rule itself reports (and their tested fixes)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from attnlint.config import Settings
from attnlint.docs import README_TABLE_END, README_TABLE_START, render_rule_page
from attnlint.engine import check_source, fix_source
from attnlint.rules import registry

ROOT = Path(__file__).resolve().parents[1]
SECTIONS = ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety")
RULES = registry.all_rules()


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_rule_page_has_every_section_in_order(rule):
    page = render_rule_page(rule)
    assert page.startswith(f"# {rule.name} ({rule.code})")
    positions = [page.find(section) for section in SECTIONS]
    assert -1 not in positions, f"{rule.code} page lacks {[s for s, p in zip(SECTIONS, positions) if p < 0]}"
    assert positions == sorted(positions), f"{rule.code} page has ruff's sections out of order"
    assert rule.fix_sentence() in page
    assert rule.code in page.split("## Suppressing it")[1]


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_docstring_has_no_hand_written_examples(rule):
    # Examples on a page come from the tested INVALID example; a hand-written one can drift.
    doc = rule.__doc__ or ""
    assert "## Example" not in doc and "## Use instead" not in doc


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_page_example_is_a_finding_and_use_instead_is_its_fix(rule):
    example = rule.page_example()
    assert example is not None, f"{rule.code} flags no INVALID example with page=True"
    settings = Settings(select=[rule.code])
    found = [d for d in check_source(example.source, "example.py", settings).diagnostics if d.code == rule.code]
    assert found, f"{rule.code}'s page shows an example it does not report"
    assert example.fixed_source is not None, f"{rule.code}'s page example needs a fix for *Use instead*"
    fixed = fix_source(example.source, "example.py", settings, unsafe=True).fixed_source
    assert fixed == example.fixed_source
    page = render_rule_page(rule)
    example_block = page.split("## Example\n```python\n", 1)[1].split("\n```", 1)[0]
    use_block = page.split("## Use instead\n```python\n", 1)[1].split("\n```", 1)[0]
    assert example_block == example.source.rstrip()
    assert use_block == fixed.rstrip()


def test_generated_docs_and_readme_table_are_up_to_date():
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_rule_docs.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def _readme_rows():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme.split(README_TABLE_START, 1)[1].split(README_TABLE_END, 1)[0]
    rows = [line.split("|")[1:-1] for line in table.strip().splitlines()[2:]]
    return {cells[0].strip(): [c.strip() for c in cells] for cells in rows}


def test_readme_table_lists_every_rule_and_only_them():
    rows = _readme_rows()
    assert sorted(rows) == [r.code for r in RULES]
    for rule in RULES:
        assert rows[rule.code][1] == f"[{rule.name}](docs/rules/{rule.name}.md)"
        assert rows[rule.code][3] == rule.summary


def test_readme_fix_column_says_what_attnlint_rules_says():
    listing = subprocess.run(
        [sys.executable, "-m", "attnlint", "rules"], capture_output=True, text=True, check=True
    ).stdout.splitlines()[1:]
    rows = _readme_rows()
    assert len(listing) == len(RULES)
    for line in listing:
        code, name, rest = line.split(None, 2)
        fix = re.match(r"(none|\w+ \(\w+\))", rest).group(1)
        assert rows[code][2] == fix, f"{code}: README says {rows[code][2]!r}, `attnlint rules` says {fix!r}"
