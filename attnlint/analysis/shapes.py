"""Shape facts that come from text rather than data flow: shape comments, jaxtyping annotations,
einsum equations, and tensor-literal nesting.

A comment like `# x: (batch, num_tokens, d_in)` or a trailing `# (b, n, d)` is how people write
shapes down; it is evidence of rank when the data flow has none (data flow always wins).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import List, Optional, Tuple

import libcst as cst

_DIM = r"[\w\s\*/+\-\.]+"
_TUPLE = rf"[\(\[]\s*({_DIM}(?:,\s*{_DIM})*),?\s*[\)\]]"
# `# x: (b, n, d)`, `# x shape: [b, n, d]`, `# x = (b, n, d)`, `# q, k, v: (b, h, n, d)`
_NAMED = re.compile(rf"^#+\s*(\w+(?:\s*,\s*\w+)*)(?:\.shape|\s+shape)?\s*[:=]\s*{_TUPLE}")
# A trailing comment that is only a shape: `# (b, n, d)`, `# shape: (b, n, d)`, `# -> [b, h, n, d]`
_BARE = re.compile(rf"^#+\s*(?:shape\s*[:=]?\s*|->\s*|=>\s*)?{_TUPLE}\s*$", re.I)


def _rank_of(dims: str) -> Optional[int]:
    items = [d.strip() for d in dims.split(",") if d.strip()]
    if not items or any("..." in d or d.startswith("*") for d in items):
        return None
    return len(items)


def named_shape_comment(comment: str) -> Optional[Tuple[Tuple[str, ...], int]]:
    """`# q, k, v: (b, h, n, d)` -> ((q, k, v), 4)."""
    match = _NAMED.match(comment.strip())
    if not match:
        return None
    rank = _rank_of(match.group(2))
    names = tuple(n.strip() for n in match.group(1).split(","))
    return None if rank is None else (names, rank)


def bare_shape_comment(comment: str) -> Optional[int]:
    match = _BARE.match(comment.strip())
    return None if not match else _rank_of(match.group(1))


def annotation_rank(annotation: cst.BaseExpression) -> Optional[int]:
    """jaxtyping-style `Float[Tensor, "b n d"]` -> 3."""
    if not isinstance(annotation, cst.Subscript) or len(annotation.slice) != 2:
        return None
    dims = annotation.slice[1].slice
    if not isinstance(dims, cst.Index) or not isinstance(dims.value, cst.SimpleString):
        return None
    text = dims.value.evaluated_value
    if not isinstance(text, str):
        return None
    parts = text.split()
    if not parts or any("..." in p or p.startswith("*") for p in parts):
        return None
    return len(parts)


def literal_rank(node: cst.BaseExpression) -> Optional[int]:
    """Nesting depth of a list/tuple literal: `[[1, 2], [3, 4]]` -> 2."""
    rank = 0
    while isinstance(node, (cst.List, cst.Tuple)):
        rank += 1
        if not node.elements:
            return rank
        node = node.elements[0].value
    return rank


@dataclass(frozen=True)
class Einsum:
    inputs: Tuple[str, ...]
    output: str
    ellipsis: bool

    def contracted(self) -> List[str]:
        if len(self.inputs) != 2:
            return []
        a, b = self.inputs
        return [c for c in a if c in b and c not in self.output]

    def only_in(self, index: int) -> List[str]:
        """Letters of the output that come from operand `index` alone."""
        other = "".join(s for i, s in enumerate(self.inputs) if i != index)
        return [c for c in self.output if c in self.inputs[index] and c not in other]

    @staticmethod
    def axis(subscripts: str, letter: str) -> int:
        """Negative axis of `letter` (counted from the right, which survives a leading `...`)."""
        return subscripts.index(letter) - len(subscripts)


def parse_einsum(equation: str) -> Optional[Einsum]:
    eq = equation.replace(" ", "")
    if "->" not in eq:
        return None  # implicit output: letters sorted; too easy to misread, stay silent
    lhs, out = eq.split("->", 1)
    inputs = tuple(lhs.split(","))
    ellipsis = "..." in eq
    clean = tuple(s.replace("...", "") for s in inputs)
    out_clean = out.replace("...", "")
    if not all(s.isalpha() for s in clean if s) or (out_clean and not out_clean.isalpha()):
        return None
    return Einsum(clean, out_clean, ellipsis)
