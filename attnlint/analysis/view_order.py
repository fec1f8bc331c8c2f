"""Where a view/reshape puts each element: the input's axes split into their smallest named parts
("atoms"), and the order in which the target shape lists those atoms.

`(b, n, h*d) -> (b, h, n, d)`: atoms b, n, h, d in memory order; the target lists b, h, n, d: the
order changes (n and h swap), so the view rereads memory as if it had been transposed.
`(B, C, H, W) -> (B, g, C/g, H, W)` splits C into g, C/g in place: the atoms keep their order, a
plain split. When the sizes do not factor into atoms both sides share, the order is unknown (None).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING, List, Optional, Sequence, Tuple

import libcst as cst

from attnlint.analysis.symbolic import Sym, product

if TYPE_CHECKING:  # pragma: no cover
    from attnlint.analysis import ModuleAnalysis
    from attnlint.analysis.flow import FunctionFacts
    from attnlint.analysis.values import ViewSite


@dataclass(frozen=True)
class ViewOrder:
    atoms: Tuple[Sym, ...]  # the input's axes split into parts, in memory order
    # For each target axis, the atoms it holds (indices into `atoms`, in memory order).
    groups: Tuple[Tuple[int, ...], ...]
    split: bool  # some input axis is split into several atoms
    merged: bool  # some target axis merges several atoms

    @property
    def order(self) -> Tuple[int, ...]:
        """The atoms in the order the target lists them."""
        return tuple(i for group in self.groups for i in group)

    @property
    def moves_data(self) -> bool:
        """The target lists the atoms in another order than memory: a transpose was meant."""
        return self.order != tuple(range(len(self.atoms)))


def view_order(input_dims: Sequence[Sym], target_dims: Sequence[Sym]) -> Optional[ViewOrder]:
    source, target = list(input_dims), list(target_dims)
    atoms: List[Sym] = []
    split = False
    for dim in source:
        if dim in target:
            atoms.append(dim)
            continue
        parts = _factorisation(dim, [t for t in target if t not in source])
        if parts is None:
            atoms.append(dim)  # merged into a target axis, or nothing both sides name
            continue
        split = True
        atoms += parts
    groups: List[Tuple[int, ...]] = []
    used: set = set()
    merged = False
    for dim in target:
        free = [i for i, a in enumerate(atoms) if i not in used]
        match = next((i for i in free if atoms[i] == dim), None)
        if match is not None:
            groups.append((match,))
            used.add(match)
            continue
        parts = _factorisation(dim, [atoms[i] for i in free])
        if parts is None:
            return None
        indices: List[int] = []
        for part in parts:
            indices.append(next(i for i in free if atoms[i] == part and i not in indices))
        groups.append(tuple(sorted(indices)))
        used.update(indices)
        merged = True
    if len(used) != len(atoms):
        return None
    return ViewOrder(tuple(atoms), tuple(groups), split, merged)


def input_is_parameter(analysis: "ModuleAnalysis", function: "FunctionFacts", view: "ViewSite") -> bool:
    """The view reads a learned parameter (`self.pos_bias.view(1, 1, h, d)`): its axes have no
    meaning before training, so any consistent reading is as good as another."""
    node = view.input_node
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
        facts = analysis.classes.get(function.class_name) if function.class_name else None
        value = facts.attrs.get(node.attr.value) if facts is not None else None
        return bool(value is not None and value.is_parameter)
    return False


def _factorisation(dim: Sym, candidates: Sequence[Sym]) -> Optional[List[Sym]]:
    """Two or three of the candidates (in their order) whose product is `dim`."""
    for size in (2, 3):
        for picks in combinations(range(len(candidates)), size):
            chosen = [candidates[i] for i in picks]
            if product(chosen) == dim:
                return chosen
    return None
