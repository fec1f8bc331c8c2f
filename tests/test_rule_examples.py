"""Every rule's own valid and invalid examples, run as tests (Fixit's way).

A rule cannot be added without examples: `test_every_rule_has_examples` fails first.
"""

from __future__ import annotations

import pytest

from attnlint.config import Settings
from attnlint.engine import check_source, fix_source
from attnlint.rules import registry

RULES = registry.all_rules()


def _settings(rule, options) -> Settings:
    settings = Settings(select=[rule.code])
    if options:
        settings.rule_options[rule.code] = dict(options)
    return settings


def _cases(kind: str):
    for rule in RULES:
        for index, example in enumerate(getattr(rule, kind)):
            yield pytest.param(rule, example, id=f"{rule.code}-{kind.lower()}-{index}")


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_every_rule_has_examples(rule):
    assert len(rule.VALID) >= 5, f"{rule.code} needs valid examples"
    assert len(rule.INVALID) >= 5, f"{rule.code} needs invalid examples"


@pytest.mark.parametrize("rule,example", list(_cases("VALID")))
def test_valid_example_is_silent(rule, example):
    result = check_source(example.source, "example.py", _settings(rule, example.options))
    assert result.error is None, result.error
    found = [d for d in result.diagnostics if d.code == rule.code]
    assert found == [], "\n".join(f"{d.start.line}:{d.start.column} {d.message}" for d in found)


@pytest.mark.parametrize("rule,example", list(_cases("INVALID")))
def test_invalid_example_is_reported_and_fixed(rule, example):
    settings = _settings(rule, example.options)
    result = check_source(example.source, "example.py", settings)
    assert result.error is None, result.error
    found = [d for d in result.diagnostics if d.code == rule.code]
    assert found, f"{rule.code} did not report:\n{example.source}"
    first = found[0]
    assert first.name == rule.name
    if example.line is not None:
        assert first.start.line == example.line
    if example.column is not None:
        assert first.start.column == example.column
    fixed = fix_source(example.source, "example.py", settings, unsafe=True)
    if example.fixed_source is None:
        assert fixed.fixed_source == example.source, "example has no fix but one was applied"
    else:
        assert fixed.fixed_source == example.fixed_source
        # A fixed file is clean for this rule, and fixing it again changes nothing.
        again = check_source(fixed.fixed_source, "example.py", settings)
        assert [d for d in again.diagnostics if d.code == rule.code] == []
        assert fix_source(fixed.fixed_source, "example.py", settings, unsafe=True).fixed_source == fixed.fixed_source
