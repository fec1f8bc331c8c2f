"""ATN104 wrong-attention-scale."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from attnlint.analysis import attention
from attnlint.analysis.scores import ScaleKind
from attnlint.diagnostics import Applicability
from attnlint.edits import NodeFix, Replacement
from attnlint.fixers.keyword import set_keyword
from attnlint.rules.base import FixAvailability, Rule, RuleContext
from attnlint.rules.wrong_attention_scale.examples import INVALID, VALID

_WHAT = {
    ScaleKind.ROOT_MULTIPLIED: "multiplied by sqrt({head}) instead of divided",
    ScaleKind.NO_ROOT: "divided by {head} without the square root",
}


class WrongAttentionScale(Rule):
    """
    ## What it does
    Checks for attention scores that are scaled, but not by `1/sqrt(d_head)` of the contracted
    (per-head) axis (also a product handed to a softmax helper other code shares, as the helper
    sees this caller's product; reported in the caller):
    - multi-head code scaled by the model width instead of the per-head dimension (also when
      the heads are projected from the width `dim` to `heads * dim_head` and the scale is
      `dim ** -0.5`);
    - the root multiplied instead of divided (`* sqrt(d)`), or the dimension used without the root
      (`/ d`), including scores scaled twice: queries multiplied by `self.scaling` and the kernel
      they are passed to (`eager_attention_forward(..., scaling=self.scaling, **kwargs)`) scaling
      again;
    - one `1/sqrt(size)` factor applied twice, to the queries and again at the product
      (`self.to_q(x) * self.scale`, then `torch.baddbmm(..., alpha=self.scale)`): the scores get
      its square whatever the size is (no fix is offered: which application to keep is the
      author's choice);
    - queries (or keys) scaled by 1/sqrt of their feature size and then handed to
      `F.scaled_dot_product_attention` with no `scale=`, which scales by it again (the fix passes
      `scale=1.0`);
    - a quantity that is not the feature dimension at all (a sequence length, the tensor's rank);
    - the scale applied to the weights *after* the softmax, which leaves the softmax unscaled.

    The analysis compares the factor with the contracted axis symbolically (`dim // heads`,
    `self.head_dim`, `q.shape[-1]`), so it reports only what it can evaluate. Heads folded into
    the batch (`rearrange(t, "b n (h d) -> (b h) n d")`, `view(bsz * num_heads, n, d)`) are still
    heads. A helper that
    scales by one of its parameters (`attention(q, k, v, d_model)`) is checked with what its
    callers pass, and the finding points at the caller's argument; so is a module whose
    temperature is a constructor argument (`ScaledDotProductAttention(temperature=d_model **
    0.5)`), judged with the sizes its builder has in scope, however many constructors up. Sizes
    read from a config's fields (`args.dim` of a dataclass with `dim: int = 4096`) keep their
    names (the default is one example), through KV caches and `repeat_interleave`d heads. A
    config object handed down (`Head(config, head_size)` inside `Block(config)`) is one object:
    `config.n_embd` read in both is one size. Rotary embeddings (`q * cos + rotate_half(q) *
    sin`) leave the scale as it was.

    Where it is reported: at the factor applied to the scores, or at the first factor applied on
    the way in when only q and k are scaled (`queries / e ** (1/4)`); at the caller's argument for
    a temperature the constructor is given; where a caller's `__init__` writes the attribute it
    passes as `scaling=` when that holds a wrong quantity (`self.scaling = config.hidden_size **
    -0.5`), at the argument otherwise; but where the factor is applied when the attribute
    holds a size (`self.dim_head`, divided by without its root): the constructor was given the
    right size.

    ## Why is this bad?
    With `h` heads, `1/sqrt(d_model)` is `sqrt(h)` times too small: the softmax is flattened
    towards uniform. `* sqrt(d)` and `/ d` are off by a factor of `d` either way, and a scale after
    the softmax rescales weights that no longer sum to one. The model trains, worse, and
    checkpoints from the reference implementation give wrong outputs.

    Not reported: a learned or configured temperature, cosine-similarity attention, a scale folded
    into a projection's initialisation (T5), q and k each scaled by a fourth root, `scale=` given to
    SDPA, single-head code where the model width *is* the head dimension, and any factor the
    analysis cannot evaluate.

    ## Fix safety
    The fix is unsafe: it changes every attention weight, and a model trained with the wrong
    scale needs retraining. It replaces the factor with the per-head dimension the code already
    names (`self.head_dim`, `d_k`), else the operand's contracted axis (`q.shape[-1]`). It is
    offered when the scores get one factor (`*`, `/`, `*=`, `/=`, `.div(...)`, `torch.mul`, a
    `baddbmm` alpha): the analysis knows which expression is that factor. A scale of the wrong
    quantity kept in an attribute that `__init__` sets once and only the scores read
    (`self.scale = dim ** -0.5`) is reported, and mended, where it is set (`self.scale =
    dim_head ** -0.5`), when a name for the per-head dimension is defined there; else the
    factor where it is applied is replaced. A scale after the softmax
    has no fix.
    """

    code = "ATN104"
    name = "wrong-attention-scale"
    summary = "attention scores scaled by something other than 1/sqrt(d_head)"
    fix_availability = FixAvailability.SOMETIMES
    fix_applicability = Applicability.UNSAFE
    triggers = ("softmax", "Softmax")
    recipe = "wrong_attention_scale"

    def check(self, ctx: RuleContext) -> None:
        self._scaled_before_sdpa(ctx)
        seen = set()
        # A helper's softmax sees each caller's product (a shared `masked_softmax(scores, lens)`).
        for site in ctx.analysis.softmax_sites + ctx.analysis.scores_through_helpers:
            scores = site.input.scores
            if scores is None or id(scores.product) in seen:
                continue
            seen.add(id(scores.product))
            verdict = scores.scale_verdict()
            head = verdict.head_dim.text() if verdict.head_dim is not None else "d_head"
            if verdict.kind == ScaleKind.WRONG_DIMENSION:
                if not verdict.model_width and set(verdict.used.atoms()) & set(verdict.head_dim.atoms()):
                    # Neither the width nor another quantity: sizes the analysis could not relate
                    # (`h = self.heads` next to `heads`); unknown never fires.
                    continue
                what = "the model width" if verdict.model_width else "something other than the feature dimension"
                message = (
                    f"attention scores are scaled by 1/sqrt({verdict.used.text()}), {what}: the per-head "
                    f"dimension here is {head}"
                )
            elif verdict.kind == ScaleKind.NO_ROOT and len(scores.every_scale_step) >= 2:
                # `q * self.scaling` and again `* scaling` in the kernel: each right, both wrong.
                whole = head if head.replace(".", "").replace("_", "").isalnum() else f"({head})"
                message = (
                    f"attention scores are scaled twice (on the way in and again at the product): 1/{whole} "
                    f"in all; scale by 1/sqrt({head}) once"
                )
            elif verdict.kind == ScaleKind.SCALED_TWICE:
                # One factor on the way in and again at the product: report the second, which is
                # the one to drop (no fix: which of the two the author meant to keep is theirs).
                first, second = scores.every_scale_step
                ctx.report(
                    second.factor,
                    f"attention scores are scaled twice by `{ctx.code(second.factor)}` (already applied "
                    f"to `{ctx.code(first.node)}`): the scores get its square; apply it once",
                )
                continue
            elif verdict.kind in _WHAT:
                message = f"attention scores are {_WHAT[verdict.kind].format(head=head)}: use 1/sqrt({head})"
            elif verdict.kind == ScaleKind.MISSING and _head_dim_factor(site.scaled_after, verdict.head_dim):
                node, _factor = _head_dim_factor(site.scaled_after, verdict.head_dim)
                ctx.report(
                    node,
                    "the scale is applied to the weights after the softmax: the softmax itself sees "
                    f"unscaled scores; scale the scores by 1/sqrt({head}) before it",
                )
                continue
            else:
                continue
            passed = ctx.analysis.scale_passed_by_caller(site)
            if passed is not None:
                # `scaling` is the callee's parameter: the wrong value is the caller's argument, and
                # the callee (shared by other backends) keeps applying what it is given. A wrong
                # quantity the caller's `__init__` wrote into the attribute it passes is wrong there.
                written = ctx.analysis.attribute_value_node(passed) if verdict.kind == ScaleKind.WRONG_DIMENSION else None
                ctx.report(written or passed, message + " (passed by the caller)")
                continue
            passed = ctx.analysis.scale_passed_to_constructor(site)
            if passed is not None and (verdict.kind == ScaleKind.WRONG_DIMENSION or not scores.scaled_by_a_size()):
                # `self.temperature = temperature`: the value is the constructor's argument.
                attr = ctx.code(scores.every_scale_step[0].factor)
                ctx.report(passed, f"{message} (`{attr}`, applied in `{site.function}`)")
                continue
            # A wrong value is made where the attribute is set (`self.scale = dim ** -0.5`,
            # `self.temperature = 1 / head_dim`); an attribute holding the head dimension or a
            # right scale (`/ self.head_dim`, `/ self.scale`) is wrong in how it is applied, at the use.
            definition = ctx.analysis.scale_definition(site)
            if definition is not None and (verdict.kind == ScaleKind.WRONG_DIMENSION or not definition.holds_head_dim_or_root):
                # `self.scale = dim ** -0.5` in `__init__`: the wrong value is written there.
                attr = ctx.code(scores.scale_steps[0].factor)
                fix = self._fix_definition(scores, definition) or self._fix(ctx, scores)
                ctx.report(definition.node, f"{message} (`{attr}`, applied in `{site.function}`)", fix=fix)
                continue
            # Where the factor is applied: at the scores, or on the way in (`q / e ** (1/4)`).
            if scores.scale_steps:
                target = scores.scale_steps[-1].node
            elif scores.operand_scale_steps:
                target = scores.operand_scale_steps[0].node
            else:
                target = scores.product
            ctx.report(target, message, fix=self._fix(ctx, scores))

    @staticmethod
    def _fix(ctx: RuleContext, scores) -> Optional[NodeFix]:
        # Replacing the one factor at the product sets the whole scale only when nothing was
        # multiplied into q or k on the way (`q * self.scaling`, then `/ sqrt(head_dim)`).
        if len(scores.scale_steps) != 1 or scores.scale_steps[0].factor is None or scores.operand_scale_steps:
            return None
        step = scores.scale_steps[0]
        if scores.head_dim_names:
            head = scores.head_dim_names[0]
        elif scores.feature_dim is not None:
            operand, axis = scores.feature_dim
            head = f"{ctx.code(operand)}.shape[{axis}]"
        else:
            return None
        replacement = cst.parse_expression(f"{head} ** 0.5" if step.divides else f"{head} ** -0.5")
        return NodeFix(f"Scale by 1/sqrt({head})", Applicability.UNSAFE, (Replacement(step.factor, replacement),))

    @staticmethod
    def _fix_definition(scores, definition) -> Optional[NodeFix]:
        if not definition.head_dim_names or scores.operand_scale_steps:
            return None
        head = definition.head_dim_names[0]
        new = f"{head} ** 0.5" if scores.scale_steps[0].divides else f"{head} ** -0.5"
        return NodeFix(
            f"Scale by 1/sqrt({head})", Applicability.UNSAFE, (Replacement(definition.node, cst.parse_expression(new)),)
        )

    @staticmethod
    def _scaled_before_sdpa(ctx: RuleContext) -> None:
        """Queries (or keys) scaled by 1/sqrt(head_dim) on the way in, then SDPA at its default
        scale, which applies 1/sqrt(head_dim) again."""
        for site in ctx.analysis.sites("attention_calls"):
            operand = attention.prescaled_sdpa_operand(site)
            if operand is None:
                continue
            steps = [ctx.code(step.factor) for step in operand.scale_steps]
            written = f" by `{steps[0]}`" if len(steps) == 1 else ""
            ctx.report(
                site.call,
                f"the {'queries' if operand is site.inputs[0] else 'keys'} are already scaled{written} "
                "(1/sqrt of their feature size), and scaled_dot_product_attention scales by it again "
                "by default: the scores get 1/head_dim; pass `scale=1.0`",
                fix=set_keyword(site.call, "scale", "1.0", "Pass `scale=1.0`: the queries are scaled already"),
            )

    VALID = VALID
    INVALID = INVALID


def _head_dim_factor(scaled_after, head_dim):
    """The factor multiplied into the weights after the softmax that is made of the head dimension
    (`w / math.sqrt(d_k)`): a scale in the wrong place, not a temperature."""
    if head_dim is None:
        return None
    atoms = set(head_dim.atoms())
    for node, factor in reversed(scaled_after):
        if factor is not None and not factor.is_const and set(factor.atoms()) <= atoms:
            return node, factor
    return None
