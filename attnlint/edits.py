"""Fixes in terms of nodes: what a fixer returns and the engine turns into text edits.

A leaf module (it depends on diagnostics only), so that fixers build fixes without importing rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Tuple, Union

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
class InsertBefore:
    """Insert a new statement line before `statement` (a SimpleStatementLine), at its indentation.

    For fixes that name a value once (`q_len, k_len = s.shape[-2:]`) instead of repeating the
    expression that computes it inside another expression.
    """

    statement: cst.SimpleStatementLine
    code: str  # one statement, without indentation or newline


@dataclass(frozen=True)
class NodeFix:
    """A fix in terms of nodes; the engine turns it into text edits using positions."""

    message: str
    applicability: Applicability
    changes: Tuple[Union[Replacement, InsertBefore], ...]
