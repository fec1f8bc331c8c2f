"""Verification recipes, one module per rule, named for the rule.

A recipe module runs inside the verification child process and exposes
``run(request: dict) -> list[dict]`` (report dicts, see :class:`attnlint.verify.report.VerificationReport`).
A rule has a recipe when this package holds a module named after the rule's kebab-case name with
underscores (``missing-attention-scale`` -> ``missing_attention_scale.py``): the registry is the one
list, so no table here can go stale. This package's ``__init__`` stays torch-free.
"""

from __future__ import annotations

import importlib.util
from functools import lru_cache
from typing import Dict, Optional


def _module_name(rule_name: str) -> str:
    return rule_name.replace("-", "_")


@lru_cache(maxsize=None)
def _tables() -> tuple:
    from attnlint.rules import registry

    recipes: Dict[str, str] = {}
    codes: Dict[str, str] = {}
    for rule in registry.all_rules():
        module = _module_name(rule.name)
        if importlib.util.find_spec(f"{__name__}.{module}") is not None:
            recipes[rule.code] = module
            codes[rule.name] = rule.code
    return recipes, codes


def recipe_for(code: str) -> Optional[str]:
    """The recipe module (in this package) that verifies rule ``code``'s fix, or None."""
    return _tables()[0].get(code)


def rule_code_for(rule: str) -> str:
    """Normalise a rule code or name to the code; ValueError when no recipe exists."""
    recipes, codes = _tables()
    code = codes.get(rule, rule).upper()
    if code not in recipes:
        known = ", ".join(f"{c} ({m.replace('_', '-')})" for c, m in sorted(recipes.items()))
        raise ValueError(f"no verification recipe for rule {rule!r}; recipes exist for: {known}")
    return code


def __getattr__(name: str):
    # rule code -> recipe module, and rule name -> code: computed from the registry.
    if name == "RECIPE_BY_RULE_CODE":
        return dict(_tables()[0])
    if name == "RULE_CODE_BY_NAME":
        return dict(_tables()[1])
    raise AttributeError(name)
