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
from fractions import Fraction
from typing import TYPE_CHECKING, List, Optional, Sequence, Tuple

import libcst as cst

from attnlint.analysis.names import binds
from attnlint.analysis.names import child_nodes
from attnlint.analysis.symbolic import ONE, Sym, product

if TYPE_CHECKING:  # pragma: no cover
    from attnlint.analysis import ModuleAnalysis
    from attnlint.analysis.flow import FunctionFacts
    from attnlint.analysis.values import Value, ViewSite


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


def mixes_memory(input_dims: Sequence[Sym], target_dims: Sequence[Sym]) -> Optional[bool]:
    """Can no split or merge of adjacent axes turn `input_dims` into `target_dims`?

    A view is a pure regrouping exactly when both shapes refine one common sequence of factors
    in memory order: then the running products of the two shapes, merged, form a chain in which
    each divides the next (`(b, n, h*d) -> (b, n, h, d)`: b | b*n | b*n*h | b*n*h*d). When at
    some point neither next product divides the other (`(b, n, h*d) -> (b, h, n, d)`: neither
    b*n nor b*h divides the other), the view rereads memory across axes: True.

    Named sizes (atoms) are indivisible: `(B, L, 300) -> (5 * B, L, 60)` puts a factor 5 of the
    last axis next to the batch, and `L` cannot lend it one. Only a division the code writes
    splits a size: `c / heads` says c is heads times a size of its own, and `(B, N, C) ->
    (4 * B, N / 4, C)` splits N into windows (see `quotients_named`). Sizes of 1 go anywhere.
    None when a size is unknown or a division cannot be read that way.
    """
    if any(d is None for d in list(input_dims) + list(target_dims)):
        return None
    dims = quotients_named(list(input_dims) + list(target_dims))
    if dims is None:
        return None
    source = [d for d in dims[: len(input_dims)] if d != ONE]
    target = [d for d in dims[len(input_dims) :] if d != ONE]
    if product(source) != product(target):
        return None

    def divides(small: Sym, big: Sym) -> bool:
        ratio = big / small
        return ratio is not None and ratio.coeff.denominator == 1 and all(e > 0 for _, e in ratio.factors)

    i = t = 0
    left = right = ONE  # running products of the input and the target
    while i < len(source) or t < len(target):
        if left == right:
            if i == len(source) or t == len(target):
                return None  # unreachable when the products agree; stay silent regardless
            left, right = left * source[i], right * target[t]
            i, t = i + 1, t + 1
        elif divides(left, right) and i < len(source):
            left = left * source[i]
            i += 1
        elif divides(right, left) and t < len(target):
            right = right * target[t]
            t += 1
        else:
            return True
    return False


def named_atoms(dims: Sequence[Sym]) -> frozenset:
    """The atoms multiplied (not divided) into some of `dims`."""
    return frozenset(atom for d in dims for atom, e in d.factors if e > 0)


def swaps_literal_sizes(input_dims: Sequence[Sym], target_dims: Sequence[Sym]) -> bool:
    """The target lists the input's own sizes in another order, and the sizes that move are
    distinct numbers (`(512, 8, 3) -> (8, 512, 3)`). Numbers factor many ways (512 = 8 * 64), so
    memory order alone cannot tell this from a regrouping; but a target that names each moved
    axis by its exact size, once, names those axes: a transpose was meant. Sizes of 1, and
    numbers that occur twice (`(4, 4)`: which is which?), say nothing."""
    source, target = list(input_dims), list(target_dims)
    if len(source) != len(target) or any(d is None for d in source + target):
        return False
    moved = [i for i, (a, b) in enumerate(zip(source, target)) if a != b]
    if len(moved) < 2:
        return False
    for i in moved:
        size = source[i]
        value = size.int_value
        if value is None or value < 2 or source.count(size) != 1 or target.count(size) != 1:
            return False
    return sorted(source[i].int_value for i in moved) == sorted(target[i].int_value for i in moved)


def quotients_named(dims: List[Sym]) -> Optional[List[Sym]]:
    """The sizes with each written quotient named: `c / heads` is a size q of its own and c is
    `heads * q` everywhere (`N / 4`: N is `4 * q`). None when a quotient divides a product of
    several sizes (`B * N / 4`: which one is split is not said) or a size is not positive."""
    for _ in range(len(dims)):
        fraction = next((d for d in dims if d.coeff.denominator != 1 or any(e < 0 for _, e in d.factors)), None)
        if fraction is None:
            break
        positive = [(a, e) for a, e in fraction.factors if e > 0]
        if len(positive) != 1 or positive[0][1] != 1:
            return None
        atom = positive[0][0]
        # fraction = k * atom / divisor: name q = atom / divisor, so atom = divisor * q.
        divisor = Sym(coeff=Fraction(fraction.coeff.denominator)) * Sym._make(
            Fraction(1), {a: -e for a, e in fraction.factors if e < 0}
        )
        quotient = Sym.atom(f"{atom.key}/quotient", f"{atom.name} / ({divisor.text()})")
        mapping = {atom.key: divisor * quotient}
        renamed = [d.substitute(mapping) for d in dims]
        if any(d is None for d in renamed):
            return None
        dims = renamed
    if any(
        d.coeff <= 0 or d.coeff.denominator != 1 or any(e < 0 or e.denominator != 1 for _, e in d.factors) for d in dims
    ):
        return None
    return dims


# Calls whose result holds inserted rows or columns (and what `.contiguous()` keeps).
_PADDING = ("torch.pad", "torch.cat", "torch.concat", "torch.concatenate")
_SAME_MEMORY = ("contiguous", "clone", "detach", "to", "float", "half")


def rereads_on_purpose(ev, value: "Value") -> bool:
    """A view of this value that mixes axes is no lost transpose.

    - The value was made by padding or concatenating (`F.pad(x, (1, 0))`, `torch.cat([zero_pad,
      x], dim=-1)`): rereading it under swapped sizes is the relative-position skew of Music
      Transformer and Transformer-XL: pad one column to (n, m + 1), read it as (m + 1, n), drop
      the first row, and every row has moved one step: index arithmetic on memory.
    - The value is a new tensor (`torch.randn(2, 3, 4)`): its axes mean nothing yet.
    """
    if value.constructor is not None or value.reread_memory:
        return True
    return _made_by_padding(ev, value.node)


def _made_by_padding(ev, node: Optional[cst.CSTNode]) -> bool:
    from attnlint.analysis.names import canonical, qualify

    while isinstance(node, cst.Call):
        qualified = canonical(qualify(node.func, ev.aliases))
        if qualified in _PADDING:
            return True
        if isinstance(node.func, cst.Attribute) and node.func.attr.value in _SAME_MEMORY and qualified is None:
            node = node.func.value
            continue
        return False
    return False


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


def call_in_tree(function_node: Optional[cst.CSTNode], view: "ViewSite") -> Optional[cst.Call]:
    """The call as written: `torch.reshape(x, shape)` is recorded in method form (`x.reshape(...)`,
    a node not in the tree); this finds the call whose first argument is the view's input."""
    if function_node is None:
        return None
    for node in _walk(function_node):
        if node is view.call:
            return view.call
    for node in _walk(function_node):
        if isinstance(node, cst.Call) and node.args and node.args[0].value is view.input_node:
            return node
    return None


def reread_later(function_node: Optional[cst.CSTNode], call: cst.Call, view_sites=()) -> bool:
    """The view's result is viewed or reshaped again in the same function (`x = x.reshape(b, h, r, q)`,
    `x = x[:, :, 1:]`, `x.reshape(b, h, q, r)`: Transformer-XL's relative shift). Such code does index
    arithmetic on memory on purpose; it does not use the result as a transposed operand.

    So is a result cut down right away (`padded.reshape(b, h, c, r)[:, :, 1:]`, or its name sliced
    later): the skew drops the row the reread shifted in, whoever padded the input."""
    if function_node is None:
        return False
    for node in _walk(function_node):
        if isinstance(node, cst.Subscript) and node.value is call and _trims(node):
            return True
    name = None
    statements = list(_statements(function_node))
    for index, stmt in enumerate(statements):
        if isinstance(stmt, cst.Assign) and any(n is call for n in _walk(stmt.value)):
            if len(stmt.targets) == 1 and isinstance(stmt.targets[0].target, cst.Name):
                name = stmt.targets[0].target.value
                later = statements[index + 1 :]
                break
    if name is None:
        return False
    # Slices of the last axis alone, two or more (`qkv[..., :d]`, `qkv[..., d:2 * d]`): the
    # features split into queries, keys and values, not a skew's dropped row.
    feature_cuts = 0
    # Later views the analysis shows only merge or split adjacent axes (`x.reshape(b * h, n, d)`
    # of the misordered `(b, h, n, d)`): they keep the order, they do not skew it back.
    regroupings = {id(site.call) for site in view_sites if mixes_memory(site.input_dims, site.target_dims) is False}
    for stmt in later:
        for node in _walk(stmt):
            if not isinstance(node, cst.Call):
                continue
            func = node.func
            method = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
            if method not in ("view", "reshape") or id(node) in regroupings:
                continue
            operands = [func.value] if isinstance(func, cst.Attribute) else []
            operands += [a.value for a in node.args[:1]]
            if any(_names(o, name) for o in operands):
                return True
        for node in _walk(stmt):
            if isinstance(node, cst.Subscript) and _names(node.value, name) and _trims(node):
                if not _cuts_last_axis_only(node):
                    return True
                feature_cuts += 1
        if binds(stmt, name) and not (isinstance(stmt, cst.Assign) and _rooted_at(stmt.value, name)):
            break  # `y, _ = mhsa(y, y, y)`: a later view of `y` reads another tensor
    return feature_cuts == 1


def _cuts_last_axis_only(subscript: cst.Subscript) -> bool:
    """`x[..., :d]`, `x[..., :, d:]` is not: only the last entry is a bounded slice, after an
    `...` (which says the entry is the last axis whatever the rank) and whole-axis slices."""
    elements = list(subscript.slice)
    last = elements[-1].slice if elements else None
    if not isinstance(last, cst.Slice) or (last.lower is None and last.upper is None):
        return False
    for element in elements[:-1]:
        inner = element.slice
        if isinstance(inner, cst.Index) and isinstance(inner.value, cst.Ellipsis):
            continue
        if isinstance(inner, cst.Slice) and inner.lower is None and inner.upper is None and inner.step is None:
            continue
        return False
    return len(elements) > 1 and any(
        isinstance(e.slice, cst.Index) and isinstance(e.slice.value, cst.Ellipsis) for e in elements[:-1]
    )


def _rooted_at(node: cst.CSTNode, name: str) -> bool:
    """`name[:, :, 1:]`, `name.contiguous()`: the same memory, sliced or copied."""
    while True:
        if isinstance(node, cst.Subscript):
            node = node.value
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            node = node.func.value
        else:
            return isinstance(node, cst.Name) and node.value == name


def _trims(subscript: cst.Subscript) -> bool:
    """`x[:, :, 1:]`, `x[1:]`, `x[..., :n]`: some axis is cut (a bounded slice)."""
    return any(
        isinstance(e.slice, cst.Slice) and (e.slice.lower is not None or e.slice.upper is not None)
        for e in subscript.slice
    )


def _names(node: cst.CSTNode, name: str) -> bool:
    """`name`, or a subscript of it (`name[:, :, 1:]`)."""
    while isinstance(node, cst.Subscript):
        node = node.value
    return isinstance(node, cst.Name) and node.value == name


def _statements(node: cst.CSTNode):
    for child in _walk(node):
        if isinstance(child, (cst.Assign, cst.Expr, cst.Return, cst.AugAssign, cst.AnnAssign)):
            yield child


def _walk(node: cst.CSTNode):
    yield node
    for child in child_nodes(node):
        yield from _walk(child)
