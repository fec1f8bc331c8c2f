"""ATN106 view-as-transpose."""

from __future__ import annotations

from itertools import combinations
from typing import List, Optional, Sequence

import libcst as cst

from attnlint.analysis.symbolic import product
from attnlint.diagnostics import Applicability
from attnlint.edits import NodeFix, Replacement
from attnlint.rules.base import FixAvailability, Rule, RuleContext
from attnlint.rules.view_as_transpose.examples import INVALID, VALID


class ViewAsTranspose(Rule):
    """
    ## What it does
    Checks for a `view`/`reshape` whose target shape moves an axis of its input among the others
    (`(b, n, h * d) -> (b, h, n, d)`, `(B, C, T) -> (B, T, C)`, `(B, C, H, W) -> (B, H * W, C)`),
    where a transpose (or a head split followed by a transpose) was meant. The analysis knows both
    shapes symbolically (`b, n, _ = x.shape`, `nn.Linear` sizes, `self.head_dim`).

    ## Why is this bad?
    `view` and `reshape` never move data: they reread the same memory in row-major order under a
    new shape. When the sizes match but the order of the axes does not, the new tensor interleaves
    what were different axes: "heads" that hold pieces of several tokens, "tokens" that hold
    channels of several pixels. Everything runs, shapes check out, and the attention mixes positions
    with features.

    Not reported: views that only split or merge adjacent axes in memory order
    (`(b, n, h * d) -> (b, n, h, d)`, `(t, h, d) -> (t * h, d)`), reshapes of data already made
    contiguous in the target order (`x.transpose(1, 2).reshape(b, n, -1)`), and shapes the analysis
    cannot evaluate.

    ## Fix safety
    The fix is safe: the result has the same shape and is contiguous like the view's, with the
    data in the order the target shape names: the transpose (`x.transpose(1, 2).contiguous()`),
    the head split then the transpose (`x.view(b, n, h, d).transpose(1, 2).contiguous()`), or the
    permutation then the merge (`x.permute(0, 2, 3, 1).reshape(B, H * W, C)`). It is offered when
    every size of the target is written as an argument and no axis is both split and merged.
    """

    code = "ATN106"
    name = "view-as-transpose"
    summary = "a view/reshape that swaps axes in size but not in memory (a transpose was meant)"
    fix_availability = FixAvailability.SOMETIMES
    fix_applicability = Applicability.SAFE
    triggers = (r"\.view\(", r"\.reshape\(", r"reshape\(")
    recipe = "view_as_transpose"

    def check(self, ctx: RuleContext) -> None:
        for function in ctx.analysis.functions:
            for view in function.view_sites:
                if not view.transposes_by_view:
                    continue
                before = ", ".join(d.text() for d in view.input_dims)
                after = ", ".join(d.text() for d in view.target_dims)
                method = view.call.func.attr.value if isinstance(view.call.func, cst.Attribute) else "reshape"
                ctx.report(
                    view.call,
                    f"`{method}` rereads ({before}) memory as ({after}): the sizes match but the axes "
                    "are not in memory order, so positions mix with features; transpose (or permute) instead",
                    fix=_fix(ctx, view),
                )

    VALID = VALID
    INVALID = INVALID


def _fix(ctx: RuleContext, view) -> Optional[NodeFix]:
    call = view.call
    if view.input_node is None or not isinstance(call.func, cst.Attribute):
        return None
    args = [a for a in call.args if a.keyword is None and not a.star]
    if len(args) == 1 and isinstance(args[0].value, (cst.Tuple, cst.List)):
        sizes = [e.value for e in args[0].value.elements]
    else:
        sizes = [a.value for a in args]
    if len(sizes) != len(view.target_dims) or any(_is_minus_one(s) for s in sizes):
        return None
    source, target = list(view.input_dims), list(view.target_dims)
    # Atoms: the input's axes, split into target axes where an input axis is a product of them.
    atoms: List = []
    atom_code: List[Optional[str]] = []
    split = False
    for dim in source:
        if dim in target:
            atoms.append(dim)
            atom_code.append(ctx.code(sizes[target.index(dim)]))
            continue
        parts = _factorisation(dim, [t for t in target if t not in source])
        if parts is None:  # merged into a target axis, or nothing we can follow
            atoms.append(dim)
            atom_code.append(None)
            continue
        split = True
        atoms += parts
        atom_code += [ctx.code(sizes[target.index(p)]) for p in parts]
    # Each target axis is an atom, or a product of atoms (a merge).
    groups: List[List[int]] = []
    used: set = set()
    merged = False
    for dim in target:
        free = [i for i, a in enumerate(atoms) if i not in used]
        match = next((i for i in free if atoms[i] == dim), None)
        if match is not None:
            groups.append([match])
            used.add(match)
            continue
        parts = _factorisation(dim, [atoms[i] for i in free])
        if parts is None:
            return None
        indices = []
        for part in parts:
            index = next(i for i in free if atoms[i] == part and i not in indices)
            indices.append(index)
        groups.append(sorted(indices))
        used.update(indices)
        merged = True
    if split and merged or len(used) != len(atoms):
        return None
    order = [i for group in groups for i in group]
    receiver = ctx.code(view.input_node)
    if not isinstance(view.input_node, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)):
        receiver = f"({receiver})"
    if split:
        receiver += f".view({', '.join(c for c in atom_code)})"
    swapped = [i for i, j in enumerate(order) if i != j]
    if len(swapped) == 2:
        receiver += f".transpose({swapped[0]}, {swapped[1]})"
    else:
        receiver += f".permute({', '.join(str(i) for i in order)})"
    if merged:
        receiver += f".reshape({', '.join(ctx.code(s) for s in sizes)})"
    else:
        receiver += ".contiguous()"
    return NodeFix(
        "Move the data with a transpose instead of rereading it", Applicability.SAFE,
        (Replacement(call, cst.parse_expression(receiver)),),
    )


def _factorisation(dim, candidates: Sequence) -> Optional[list]:
    """The candidates (in their order) whose product is `dim`: two or three of them."""
    n = len(candidates)
    for size in (2, 3):
        for picks in combinations(range(n), size):
            chosen = [candidates[i] for i in picks]
            if product(chosen) == dim:
                return chosen
    return None


def _is_minus_one(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.UnaryOperation) and isinstance(node.expression, cst.Integer)
