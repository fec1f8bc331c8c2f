"""Fixes in terms of nodes: what a fixer returns and the engine turns into text edits.

A leaf module (it depends on diagnostics only), so that fixers build fixes without importing rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Tuple

from attnlint.diagnostics import Applicability

if TYPE_CHECKING:  # pragma: no cover
    # Annotations only: the registry (which a warm run imports) must not load LibCST.
    import libcst as cst


@dataclass(frozen=True)
class Replacement:
    """Replace one node's text by another node's code."""

    old: cst.CSTNode
    new: cst.CSTNode


@dataclass(frozen=True)
class NodeFix:
    """A fix in terms of nodes; the engine turns it into text edits using positions."""

    message: str
    applicability: Applicability
    changes: Tuple[Replacement, ...]
