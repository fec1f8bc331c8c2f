"""ATN209 attention-dropout-in-eval."""

from __future__ import annotations

import libcst as cst

from attnlint.analysis import dropout
from attnlint.diagnostics import Applicability
from attnlint.edits import NodeFix, Replacement
from attnlint.fixers.keyword import set_keyword
from attnlint.rules.attention_dropout_in_eval.examples import INVALID, VALID
from attnlint.rules.base import FixAvailability, Rule, RuleContext


class AttentionDropoutInEval(Rule):
    """
    ## What it does
    Checks for dropout on attention weights that also runs at evaluation and inference:
    - `F.dropout(weights, p)` with no `training=` argument (it defaults to `training=True`),
      or with `training=True` written out (`torch.dropout(weights, p, True)`, whose mode argument
      is required, likewise);
    - a helper with no way to know the mode (`def attn_dropout(x, p): return F.dropout(x, p)`)
      that a function knowing its mode gives attention weights, directly or through further
      helpers (reported at the helper's dropout, naming the caller);
    - `F.scaled_dot_product_attention(..., dropout_p=self.dropout)`, whose rate is applied
      whenever it is non-zero, with nothing tying it to the module's mode.

    Reported only where the function has a way to know its mode: a method of an `nn.Module`
    (`self.training`), a module-level attention function given the module (`module.training`,
    the Hugging Face convention), or a `training` parameter.

    ## Why is this bad?
    `model.eval()` switches `nn.Dropout` modules off, but not functional dropout: the weights of
    every forward pass at evaluation and inference are still randomly zeroed and rescaled. Outputs
    become non-deterministic, evaluation metrics are worse than the model, and generation samples
    from a noisier model than the one trained. Nothing fails.

    Not reported: `nn.Dropout` modules (they follow `model.eval()`), calls that pass the mode
    (`training=self.training`, a `training` parameter), dropout under `if self.training:` or with
    a rate computed as `p if self.training else 0.0`, a rate that is a literal zero, a rate that is the function's parameter when every call of
    it in the file passes zero or a rate computed from the mode (`drop=self.p if self.training
    else 0.0`, also through a local that holds the function: `attend = eager_attend`), functions
    with no way to know the mode whose callers do not give them attention weights, and helper
    calls made only while training or handed a rate computed from the mode (or a literal zero).

    SDPA's `dropout_p` taken from a parameter of a helper (`def attend(q, k, v, p)`) is the
    caller's choice: it is checked at each call of the helper in the file instead, and reported
    where a caller that knows its mode passes a rate that ignores it (`attend(q, k, v, self.p)`).
    The name `F.scaled_dot_product_attention` kept in an attribute or a local
    (`self._attention_call = F.scaled_dot_product_attention`) is SDPA when called.

    ## Fix safety
    The fix is safe: it adds `training=self.training` (or `module.training`, or the `training`
    parameter) to the dropout call (replacing a written-out `training=True`), or makes SDPA's
    rate `p if self.training else 0.0`. A helper that cannot know the mode gets no fix: the mode
    has to be passed in by its callers. Training
    behaviour is unchanged; only evaluation and inference stop dropping weights.
    """

    code = "ATN209"
    name = "attention-dropout-in-eval"
    summary = "dropout on attention weights that is not switched off at evaluation"
    fix_availability = FixAvailability.ALWAYS
    fix_applicability = Applicability.SAFE
    triggers = ("dropout", "scaled_dot_product_attention")  # SDPA's rate may be positional
    recipe = "attention_dropout_in_eval"

    def check(self, ctx: RuleContext) -> None:
        for function in ctx.analysis.functions:
            mode = dropout.mode_flag(ctx.analysis, function)
            if mode is None:
                self._dropout_in_helper(ctx, function)
                # A helper that cannot know the mode hands SDPA the rate its callers pass.
                for call in function.attention_calls:
                    rate = dropout.sdpa_dropout(call.call) if call.api == "sdpa" else None
                    if rate is not None and _from_parameter(rate, function):
                        self._rate_from_callers(ctx, function, rate.value)
                continue
            for site in function.dropout_sites:
                if site.training_always and site.on_attention_weights and not site.rate_is_zero:
                    if not dropout.depends_on_mode(function, site.call, site.p_node):
                        ctx.report(
                            site.call,
                            f"`{_short(ctx.code(site.call))}` is told `{site.mode_keyword}=True`: attention weights "
                            f"are dropped at evaluation and inference too; pass {site.mode_keyword}={mode}",
                            fix=_replace_training(site, mode),
                        )
                    continue
                if not site.functional or site.training_given or not site.on_attention_weights or site.rate_is_zero:
                    continue
                if dropout.depends_on_mode(function, site.call, site.p_node):
                    continue
                if dropout.callers_follow_mode(ctx.analysis, function, site.p_node):
                    continue
                ctx.report(
                    site.call,
                    f"`{_short(ctx.code(site.call))}` has no `training=` argument: functional dropout defaults "
                    "to training=True, so attention weights are dropped at evaluation and inference too; "
                    f"pass training={mode}",
                    fix=set_keyword(
                        site.call, "training", mode, f"Pass `training={mode}`", applicability=Applicability.SAFE
                    ),
                )
            for call in function.attention_calls:
                if call.api != "sdpa":
                    continue
                rate = dropout.sdpa_dropout(call.call)
                if rate is None or dropout.depends_on_mode(function, call.call, rate):
                    continue
                if _from_parameter(rate, function):
                    self._rate_from_callers(ctx, function, rate.value)
                    continue
                rate_code = ctx.code(rate)
                ctx.report(
                    call.call,
                    f"scaled_dot_product_attention applies `dropout_p={_short(rate_code)}` in every mode, "
                    f"evaluation and inference included; use `dropout_p={rate_code} if {mode} else 0.0`",
                    fix=_only_while_training(ctx, rate, mode, "Apply the dropout only while training"),
                )

    def _dropout_in_helper(self, ctx: RuleContext, helper) -> None:
        """A helper with no way to know the mode (`def attn_dropout(x, p): return F.dropout(x, p)`)
        that callers which know theirs give attention weights: it drops them in every mode."""
        for site in helper.dropout_sites:
            if not site.functional or site.training_given or site.rate_is_zero:
                continue
            if site.input.softmax is not None:
                param = None  # the helper computes the weights itself
            elif site.input.param is not None and site.input.param in helper.params:
                param = site.input.param
            else:
                continue
            callers = dropout.weights_from_callers(ctx.analysis, helper, param)
            rate = site.p_node
            if isinstance(rate, cst.Name) and rate.value in helper.params:
                # The callers' rates: one that is a literal zero drops nothing.
                callers = [c for c in callers if not _passes_zero(c.call, helper, rate.value)]
            if not callers:
                continue
            first = callers[0]
            where = f"{first.caller.class_name}.{first.caller.name}" if first.caller.class_name else first.caller.name
            ctx.report(
                site.call,
                f"`{_short(ctx.code(site.call))}` has no `training=` argument and `{helper.name}` cannot know the "
                f"mode: `{where}` gives it attention weights, which are dropped at evaluation and inference too; "
                f"pass the mode in (`training={first.mode}`)",
            )

    def _rate_from_callers(self, ctx: RuleContext, helper, param: str) -> None:
        """The helper hands its `param` to SDPA as is: a caller that knows its mode and passes a
        rate that does not follow it (`self._attend(q, k, v, self.p)`) drops at evaluation."""
        for passed in dropout.rates_from_callers(ctx.analysis, helper, param):
            mode = dropout.mode_flag(ctx.analysis, passed.caller)
            node = passed.rate
            if mode is None or dropout.is_literal_zero(node) or _from_parameter(node, passed.caller):
                continue
            if dropout.depends_on_mode(passed.caller, passed.call, node):
                continue
            rate_code = ctx.code(node)
            ctx.report(
                passed.call,
                f"`{_short(rate_code)}` becomes scaled_dot_product_attention's `dropout_p` in `{helper.name}`, "
                f"in every mode, evaluation and inference included; pass `{rate_code} if {mode} else 0.0`",
                fix=_only_while_training(ctx, node, mode, "Pass the rate only while training"),
            )

    VALID = VALID
    INVALID = INVALID


def _replace_training(site, mode: str) -> NodeFix:
    """`training=True` -> `training=self.training`: identical while training."""
    fixed = cst.parse_expression(mode)
    return NodeFix(f"Pass `{site.mode_keyword}={mode}`", Applicability.SAFE, (Replacement(site.training_node, fixed),))


def _passes_zero(call: cst.Call, helper, param: str) -> bool:
    """Does this call of `helper` give its `param` a literal zero (`drop(w, 0.0)`)?"""
    from attnlint.analysis.calls import argument
    from attnlint.analysis.summaries import param_names

    node = helper.node
    if not isinstance(node, cst.FunctionDef):
        return False
    names = param_names(node, helper.class_name is not None)
    arg = argument(call, names.index(param) if param in names else 99, param)
    return arg is not None and dropout.is_literal_zero(arg.value)


def _from_parameter(rate: cst.BaseExpression, function) -> bool:
    """`dropout_p=dropout` with `dropout` a parameter: the caller picks the rate for the mode."""
    return isinstance(rate, cst.Name) and rate.value in function.params


def _short(code: str, limit: int = 60) -> str:
    code = " ".join(code.split())
    return code if len(code) <= limit else code[: limit - 3] + "..."


def _only_while_training(ctx: RuleContext, rate: cst.BaseExpression, mode: str, what: str) -> NodeFix:
    """`rate` -> `rate if self.training else 0.0`: safe, identical while training."""
    fixed = cst.parse_expression(f"{ctx.code(rate)} if {mode} else 0.0")
    return NodeFix(f"{what} (`if {mode} else 0.0`)", Applicability.SAFE, (Replacement(rate, fixed),))
