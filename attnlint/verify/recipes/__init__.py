"""Verification recipes, one module per rule; each rule declares its recipe (``Rule.recipe``).

A recipe module runs inside the verification child process and exposes
``run(request: dict) -> list[dict]`` (report dicts, see :class:`attnlint.verify.report.VerificationReport`).
This package's ``__init__`` stays torch-free: the parent only needs the map below, which is derived
from the rule registry (no hand-kept list).
"""

from __future__ import annotations

from typing import Any, Dict, Optional


def recipe_by_rule_code() -> Dict[str, str]:
    """rule code -> recipe module in this package, for every rule that declares one."""
    from attnlint.rules import registry

    return {rule.code: rule.recipe for rule in registry.all_rules() if rule.recipe}


def rule_code_by_name() -> Dict[str, str]:
    """The rules' kebab-case names are accepted too: name -> code, for rules with a recipe."""
    from attnlint.rules import registry

    return {rule.name: rule.code for rule in registry.all_rules() if rule.recipe}


def __getattr__(name: str) -> Any:
    # `RECIPE_BY_RULE_CODE` / `RULE_CODE_BY_NAME` stay importable for callers of the old tables.
    if name == "RECIPE_BY_RULE_CODE":
        return recipe_by_rule_code()
    if name == "RULE_CODE_BY_NAME":
        return rule_code_by_name()
    raise AttributeError(name)


def recipe_for(code: str) -> Optional[str]:
    """The recipe module (in this package) that verifies rule ``code``'s fix, or None."""
    return recipe_by_rule_code().get(code)


def rule_code_for(rule: str) -> str:
    """Normalise a rule code or name to the code; ValueError when no recipe exists."""
    recipes = recipe_by_rule_code()
    code = rule_code_by_name().get(rule, rule).upper()
    if code not in recipes:
        known = ", ".join(f"{c} ({m.replace('_', '-')})" for c, m in sorted(recipes.items()))
        raise ValueError(f"no verification recipe for rule {rule!r}; recipes exist for: {known}")
    return code

