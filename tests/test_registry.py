"""The registry is the one list of rules: every rule folder is a rule, each declared recipe exists."""

from __future__ import annotations

import importlib.util
import pkgutil

import pytest

import attnlint.rules as rules_package
from attnlint.rules import registry
from attnlint.verify.recipes import recipe_by_rule_code, rule_code_for

RULES = registry.all_rules()


def test_every_rule_folder_is_registered_in_code_order():
    folders = sorted(info.name for info in pkgutil.iter_modules(rules_package.__path__) if info.ispkg)
    assert sorted(r.__module__.rsplit(".", 1)[-1] for r in RULES) == folders
    assert [r.code for r in RULES] == sorted(r.code for r in RULES)
    assert len({r.name for r in RULES}) == len(RULES)


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_declared_recipe_is_a_module_and_maps_back(rule):
    if rule.recipe is None:
        pytest.skip(f"{rule.code} declares no recipe")
    assert importlib.util.find_spec(f"attnlint.verify.recipes.{rule.recipe}") is not None
    assert recipe_by_rule_code()[rule.code] == rule.recipe
    assert rule_code_for(rule.name) == rule.code == rule_code_for(rule.code.lower())


def test_recipe_map_has_only_registered_rules():
    assert set(recipe_by_rule_code()) == {r.code for r in RULES if r.recipe}
    with pytest.raises(ValueError):
        rule_code_for("ATN999")
