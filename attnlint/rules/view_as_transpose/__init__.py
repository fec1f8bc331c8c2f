"""ATN106 view-as-transpose."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from attnlint.analysis import view_order
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
    shapes symbolically (`b, n, _ = x.shape`, `nn.Linear` sizes, `self.head_dim`, a helper's
    result, the sizes a smoke test passes: a layer other callers give tensors of unknown rank is
    checked with the sizes of the call that shows them), and reports a view when no split or merge of adjacent
    axes can give the target: heads folded into the batch without a transpose (`(B, L, H * d) ->
    (B * H, L, d)`), or unfolded back without one (`(B * H, L, d) -> (B, L, H * d)`). One axis
    of unknown size (the tokens of an input whose length nothing shows) is a size of its own when
    the target's `-1` takes it: `(b, h, ?, d) -> (b, -1, h * d)` merges heads before tokens.

    ## Why is this bad?
    `view` and `reshape` never move data: they reread the same memory in row-major order under a
    new shape. When the sizes match but the order of the axes does not, the new tensor interleaves
    what were different axes: "heads" that hold pieces of several tokens, "tokens" that hold
    channels of several pixels. Everything runs, shapes check out, and the attention mixes positions
    with features.

    Not reported: views that only split or merge adjacent axes in memory order
    (`(b, n, h * d) -> (b, n, h, d)`, `(t, h, d) -> (t * h, d)`), reshapes of data already made
    contiguous in the target order (`x.transpose(1, 2).reshape(b, n, -1)`), splits the code writes
    (`x.view(b * 4, n // 4, d)`), the relative-position skew of Music Transformer and
    Transformer-XL (a tensor just padded or concatenated, reread under swapped sizes on purpose),
    new tensors (`torch.randn(2, 3, 4).view(2, 4, 3)`), swaps that sizes cannot show (a square
    `(n, n)`; literal sizes such as `(512, 8) -> (8, 512)`, which also factor as a regrouping), and
    shapes the analysis cannot evaluate.

    ## Fix safety
    The fix is safe: the result has the same shape and is contiguous like the view's, with the
    data in the order the target shape names: the transpose (`x.transpose(1, 2).contiguous()`),
    the head split then the transpose (`x.view(b, n, h, d).transpose(1, 2).contiguous()`, with
    `reshape` where the code wrote `reshape`, which also takes a non-contiguous input), or the
    permutation then the merge (`x.permute(0, 2, 3, 1).reshape(B, H * W, C)`). It is offered when
    every size of the target is written as an argument and no axis is both split and merged;
    when the sizes do not factor into named parts both shapes share (`5 * B`), the view is
    reported without a fix.
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
                self._check_view(ctx, function, view)
        # A view whose sizes only a call in this file shows (a smoke test on `torch.randn(2, 7,
        # d)`): wrong on that call at least.
        for function, view in ctx.analysis.views_in_calls():
            self._check_view(ctx, function, view)

    def _check_view(self, ctx: RuleContext, function, view) -> None:
        if not view.transposes_by_view or view.rereads_on_purpose:
            return  # in memory order, the relative-position skew, or a new tensor
        order = view_order.view_order(view.input_dims, view.target_dims)
        if order is not None and not order.moves_data:
            return  # the factors read in memory order after all: stay silent
        if view_order.input_is_parameter(ctx.analysis, function, view):
            return
        call = view_order.call_in_tree(function.node, view)
        if call is None or view_order.reread_later(function.node, call, function.view_sites):
            return  # not found as written, or index arithmetic on memory (a relative shift)
        before = ", ".join(d.text() for d in view.input_dims)
        after = ", ".join(d.text() for d in view.target_dims)
        method = view.call.func.attr.value if isinstance(view.call.func, cst.Attribute) else "reshape"
        # The last axis kept in place: what mixes is positions of different axes (rows of a
        # window grid read as columns), not positions with features.
        mixed = "positions of different axes mix" if view.input_dims[-1] == view.target_dims[-1] else "positions mix with features"
        ctx.report(
            call,
            f"`{method}` rereads ({before}) memory as ({after}): the sizes match but the axes "
            f"are not in memory order, so {mixed}; transpose (or permute) instead",
            fix=_fix(ctx, view, order) if call is view.call and order is not None else None,
        )

    VALID = VALID
    INVALID = INVALID


def _fix(ctx: RuleContext, view, order) -> Optional[NodeFix]:
    """The transpose, the split then the transpose, or the permutation then the merge."""
    call = view.call
    if view.input_node is None or not isinstance(call.func, cst.Attribute) or (order.split and order.merged):
        return None
    args = [a for a in call.args if a.keyword is None and not a.star]
    if len(args) == 1 and isinstance(args[0].value, (cst.Tuple, cst.List)):
        sizes = [e.value for e in args[0].value.elements]
    else:
        sizes = [a.value for a in args]
    if len(sizes) != len(view.target_dims) or any(_is_minus_one(s) for s in sizes):
        return None
    receiver = ctx.code(view.input_node)
    if not isinstance(view.input_node, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)):
        receiver = f"({receiver})"
    if order.split:
        # Every atom is a target axis here (nothing is merged): its size as the code writes it.
        code_of = {group[0]: ctx.code(size) for group, size in zip(order.groups, sizes)}
        # The split the code meant, with the method it wrote: `reshape` also takes a
        # non-contiguous input, where `view` would raise.
        method = call.func.attr.value if call.func.attr.value in ("view", "reshape") else "reshape"
        receiver += f".{method}({', '.join(code_of[i] for i in range(len(order.atoms)))})"
    permutation = order.order
    swapped = [i for i, j in enumerate(permutation) if i != j]
    if len(swapped) == 2:
        receiver += f".transpose({swapped[0]}, {swapped[1]})"
    else:
        receiver += f".permute({', '.join(str(i) for i in permutation)})"
    if order.merged:
        receiver += f".reshape({', '.join(ctx.code(s) for s in sizes)})"
    else:
        receiver += ".contiguous()"
    return NodeFix(
        "Move the data with a transpose instead of rereading it",
        Applicability.SAFE,
        (Replacement(call, cst.parse_expression(receiver)),),
    )


def _is_minus_one(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.UnaryOperation) and isinstance(node.expression, cst.Integer)
