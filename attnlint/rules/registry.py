"""Every rule attnlint has, in code order: the one list that docs, the recipe map, the example
tests and every count are derived from.

A rule is one folder, ``attnlint/rules/<name>/``, whose package defines one :class:`Rule`
subclass; adding the folder adds the rule. Nothing else lists rules.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from functools import lru_cache
from typing import Dict, List, Type

from attnlint.rules.base import Rule


@lru_cache(maxsize=None)
def _rules() -> tuple:
    import attnlint.rules as package

    rules = []
    for info in pkgutil.iter_modules(package.__path__):
        if not info.ispkg:
            continue  # base.py, registry.py: machinery, not rules
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        defined = [
            obj
            for obj in vars(module).values()
            if inspect.isclass(obj) and issubclass(obj, Rule) and obj is not Rule and obj.__module__ == module.__name__
        ]
        if len(defined) != 1:
            raise RuntimeError(f"rule folder {info.name!r} must define exactly one Rule, found {len(defined)}")
        rules.append(defined[0])
    codes = [r.code for r in rules]
    duplicates = sorted({c for c in codes if codes.count(c) > 1})
    if duplicates:
        raise RuntimeError(f"rule codes defined twice: {', '.join(duplicates)}")
    return tuple(sorted(rules, key=lambda r: r.code))


def all_rules() -> List[Type[Rule]]:
    return list(_rules())


def by_code() -> Dict[str, Type[Rule]]:
    return {r.code: r for r in _rules()}


def lookup(code_or_name: str) -> Type[Rule]:
    for rule in _rules():
        if code_or_name.upper() == rule.code or code_or_name == rule.name:
            return rule
    raise KeyError(code_or_name)
