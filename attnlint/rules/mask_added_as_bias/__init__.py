"""ATN208 mask-added-as-bias."""

from __future__ import annotations

import libcst as cst

from attnlint.analysis import fill_values, mask_encoding
from attnlint.analysis.values import ATTEND, MASKED
from attnlint.diagnostics import Applicability
from attnlint.edits import NodeFix, Replacement
from attnlint.fixers.fill_value import dtype_min_fill
from attnlint.analysis.names import contains
from attnlint.rules.base import FixAvailability, Rule, RuleContext
from attnlint.rules.mask_added_as_bias.examples import INVALID, VALID

# A fill this close to zero leaves a masked key's weight within a factor e of a kept one.
NEGLIGIBLE_FILL = 1.0


class MaskAddedAsBias(Rule):
    """
    ## What it does
    Checks for masks that mask nothing because their values are used as the wrong encoding:
    - a 0/1 keep-mask (bool, integer or float) **added** to the scores as if it were an additive
      `-inf` bias (`scores + mask`), also when the adding is done by a function of another file of
      the project (`scaled_dot_product(q, k, v, bias=attn_bias)`): reported where the mask handed
      to it is made (`attn_bias = attention_mask[:, None, None, :].to(dtype)`);
    - a float 0/1 mask passed where an API adds float masks: SDPA's `attn_mask`,
      `nn.MultiheadAttention`'s and `nn.Transformer*`'s masks;
    - a fill so close to zero that it masks nothing (`masked_fill(mask, -1e-9)`, `0`, `-eps` with
      `eps=1e-12` a parameter's default that no call in the file that can reach the function
      overrides);
    - a 0/1 mask **multiplied** into the scores before the softmax (`scores * mask`): a masked
      score becomes 0, not -inf.
    - an out-of-place fill of the scores written as a statement (`scores.masked_fill(mask, -inf)`
      with its result thrown away): the scores stay unmasked. Logits of any kind count (a
      bilinear `bmm(enc, W(dec))`) when the tensor the fill was meant for reaches a softmax, and
      so do fills of the weights after it (`attn.masked_fill(no_media, 0.0)` as a statement).

    A mask counts as 0/1 when the analysis shows it: built from a comparison, a triangle of ones
    or lengths, here or by every caller that passes it in; padded with `True`/`False`
    (`F.pad(frame_mask, (1, 0), value=True)`); bool (any elementwise comparison, a
    `~` inversion, a parameter the function inverts with `~` itself); or a mask parameter with a known
    convention (Hugging Face's `attention_mask`), or named as the padding mask of the sequence
    attended to (`context_mask`, `enc_mask`, `src_pad_mask`), that the function broadcasts itself
    (`mask[:, None, None, :]`, `rearrange(mask, "b j -> b 1 1 j")`), so it is the raw mask, not a
    bias a caller already made, or that a caller broadcasts so with no arithmetic on the way
    and hands down (a BERT encoder's `extended_mask` helper that only reshapes and casts). A cast to the queries' or scores' dtype (`.to(q.dtype)`) is a
    cast to float.
    Multiplied into the scores, any mask parameter counts (its name ends in `mask`:
    `relation_mask`, `edge_mask`), since a product masks nothing whatever the encoding (0/1 either
    way round, or a bias), when the product is its only use in the function (`s * m + (1 - m) *
    -1e4` reads it again) and every caller in the file passes a mask for it (one the analysis
    traced, or the caller's own mask parameter handed on: `self.pool(h, clicked_mask.float())`).

    ## Why is this bad?
    Adding 1 to the kept logits and 0 to the masked ones shifts every row by a constant where it
    is fully kept and changes the masked keys' weights by a factor of e at most: padding and the
    future are attended almost as much as real tokens. The model trains and produces plausible
    output. SDPA adds a float `attn_mask` to the scores in the same way. Multiplying instead sets
    masked scores to 0, and `exp(0)` weighs them like any average key.

    Not reported: additive masks built as biases (`(1.0 - mask) * torch.finfo(dtype).min`,
    `masked_fill(~keep, -inf)`, `generate_square_subsequent_mask`), mask parameters used as they
    come (in Hugging Face layers they are already biases), bool masks given to SDPA (see ATN205 for
    their convention), fills of the weights after the softmax, a finite fill after a `-inf` one
    (a guard for emptied rows; not a mask that varies along the keys, `~valid[:, None, None, :]`), and a multiplied mask followed by the additive form
    (`s * m + (1 - m) * -1e4`) or by renormalising the weights over the kept keys.

    ## Fix safety
    The fix is unsafe: it changes the attention (that is the point). An added 0/1 mask becomes the
    additive form, `(1.0 - mask.to(scores.dtype)) * torch.finfo(scores.dtype).min` for a keep
    mask (`mask.to(...) * finfo.min` for a True = masked one); a float 0/1 mask given to an API
    becomes bool in the API's convention (`mask.bool()` for SDPA's True = attend, `~mask.bool()`
    for nn.MultiheadAttention's True = masked); a negligible fill becomes
    `torch.finfo(scores.dtype).min`; a discarded `masked_fill` becomes `masked_fill_`. A multiplied
    mask has no fix. The fixes of an added or float mask are offered when the mask's convention is
    known, the scores are a plain name and `torch` is imported.
    """

    code = "ATN208"
    name = "mask-added-as-bias"
    summary = "a 0/1 mask added to the scores (or given as a float attn_mask), or a fill that masks nothing"
    fix_availability = FixAvailability.SOMETIMES
    fix_applicability = Applicability.UNSAFE
    triggers = (r"mask|tril|triu|where|keep|pad|length", "softmax", "Softmax", "scaled_dot_product_attention")
    # Reported at a fill that reaches a softmax, at a mask given to an attention API, or at a
    # call handing a mask to another file's function that adds it to its scores.
    reported_where = (
        "softmax",
        "Softmax",
        "scaled_dot_product_attention",
        "MultiheadAttention",
        "Transformer",
        r"key_padding_mask|attn_mask|src_mask|tgt_mask|memory_mask|attention_mask|attn_bias",
    )
    recipe = "mask_added_as_bias"

    def check(self, ctx: RuleContext) -> None:
        aliases = ctx.analysis.aliases
        torch_name = ctx.analysis.torch_name
        reported_calls: set = set()
        for function in ctx.analysis.functions:
            # Only fills that reach a softmax mask anything (linear attention fills with 0 on purpose).
            reaching = {id(fill) for softmax in function.softmax_sites for fill in softmax.input.fills}
            # A mask multiplied in counts when nothing masks the scores after it (`s * m + (1 - m)
            # * -1e4` is the additive form) and the weights are not renormalised over the kept
            # keys afterwards (`w * m / (w * m).sum(-1)`, AllenNLP's masked_softmax).
            multiplied_last = {
                id(softmax.input.fills[-1])
                for softmax in function.softmax_sites
                if softmax.input.fills and softmax.input.fills[-1].multiplied and not softmax.renormalized
            }
            # Fills thrown away on tensors a softmax then normalises (logits the analysis cannot
            # tell are Q·Kᵀ, such as a bilinear `bmm(enc, W(dec))`).
            dropped = {id(fill) for softmax in function.softmax_sites for fill in softmax.input.dropped_fills}
            for site in function.fill_sites:
                if site.discarded and (site.on_scores or id(site) in dropped):
                    self._discarded(ctx, site)
                    continue
                if id(site) not in reaching:
                    continue
                if site.multiplied:
                    if id(site) in multiplied_last:
                        self._multiplied(ctx, function, site)
                elif site.adds_the_mask:
                    self._added(ctx, function, site, torch_name)
                elif not site.additive and not site.restores:
                    self._negligible_fill(ctx, function, site, torch_name)
            for call, site, param, made in ctx.analysis.masks_added_by_helpers_of_other_files():
                if function.node is not None and contains(function.node, call) and id(call) not in reported_calls:
                    reported_calls.add(id(call))
                    self._added_by_helper(ctx, call, site, param, made)
            for site in function.weight_fills:
                # `attn.masked_fill(no_media, 0.0)` as a statement: the weights stay as they were.
                if site.discarded:
                    self._discarded(ctx, site)
            for use in function.mask_uses:
                self._float_mask_to_api(ctx, function, use)

    def _added(self, ctx, function, site, torch_name) -> None:
        reason = mask_encoding.zero_one_reason(site.mask, function.node)
        if reason is None:
            return
        mask_code = ctx.code(site.mask_node)
        fix = None
        convention = site.mask.mask.convention
        if torch_name is not None and _plain(site.receiver_node) and convention in (ATTEND, MASKED):
            scores = ctx.code(site.receiver_node)
            cast = f"{_atom(mask_code)}.to({scores}.dtype)"
            masked = f"(1.0 - {cast})" if convention == ATTEND else cast
            bias = cst.parse_expression(f"({masked} * {torch_name}.finfo({scores}.dtype).min)")
            fix = NodeFix(
                "Add the mask as a bias: `finfo(dtype).min` where masked, 0 where kept",
                Applicability.UNSAFE,
                (Replacement(site.mask_node, bias),),
            )
        ctx.report(
            site.call,
            f"`{_short(mask_code)}` is {reason}, added to the scores as if it were a -inf bias: kept "
            "logits move by 1 and masked ones by 0, so nothing is masked",
            fix=fix,
        )

    def _added_by_helper(self, ctx, call, site, param, made) -> None:
        """A 0/1 mask handed to a function of another file that adds it to its scores: reported
        where the mask is made (what the fix turns into a bias), else at the call."""
        reason = mask_encoding.zero_one_reason(site.mask, None)
        if reason is None:
            return
        where = made if ctx.analysis.parent_of(made) is not None else call
        ctx.report(
            where,
            f"`{_short(ctx.code(made))}` is handed to `{ctx.code(call.func)}` as its `{param}`, which it adds to "
            f"the scores as a -inf bias, but it is {reason}: kept logits move by 1 and masked ones by 0, "
            "so nothing is masked",
        )

    def _discarded(self, ctx, site) -> None:
        call = site.call
        fix = None
        func = call.func if isinstance(call, cst.Call) else None
        if isinstance(func, cst.Attribute) and func.attr.value == "masked_fill":
            fix = NodeFix(
                "Fill in place (`masked_fill_`)",
                Applicability.UNSAFE,
                (Replacement(func.attr, cst.Name("masked_fill_")),),
            )
        ctx.report(
            call,
            f"the result of `{_short(ctx.code(call))}` is thrown away: the fill returns a new tensor, so the "
            f"{'weights' if site.on_weights else 'scores'} stay unmasked; assign it back or fill in place",
            fix=fix,
        )

    def _multiplied(self, ctx, function, site) -> None:
        reason = mask_encoding.multiplied_reason(site.mask, function.node)
        if reason is None:
            return
        facts = site.mask.mask
        if facts.origin == "argument" and facts.param is not None:
            # A mask by its name only: a caller in the file that passes anything else for it
            # (soft weights, a tensor of no known kind) says it is no mask.
            passed = ctx.analysis.arguments_for(function, facts.param)
            if not all(mask_encoding.passed_as_mask(arg) for arg in passed):
                return
        ctx.report(
            site.call,
            f"`{_short(ctx.code(site.mask_node))}` is {reason}, multiplied into the scores before the softmax: "
            "a masked score becomes 0, and exp(0) still gives it weight; fill the masked scores with "
            "torch.finfo(scores.dtype).min (masked_fill) instead",
        )

    def _negligible_fill(self, ctx, function, site, torch_name) -> None:
        constant = fill_values.fill_constant(site, ctx.analysis.aliases, function.node, ctx.module)
        if constant is None or constant.value == float("-inf") or abs(constant.value) > NEGLIGIBLE_FILL:
            return
        fix = None
        node = fill_values.fill_node(site)
        if node is not None and torch_name is not None and _plain(site.receiver_node):
            fix = dtype_min_fill(node, ctx.code(site.receiver_node), torch_name, Applicability.UNSAFE)
        ctx.report(
            site.call,
            f"masked scores are filled with `{ctx.code(constant.node)}`, which masks nothing: a masked key "
            "keeps a weight within a factor e of the others; fill with torch.finfo(scores.dtype).min",
            fix=fix,
        )

    def _float_mask_to_api(self, ctx, function, use) -> None:
        facts = use.mask.mask
        if facts is None or facts.dtype != "float":
            return
        reason = mask_encoding.zero_one_reason(use.mask, function.node)
        if reason is None:
            return
        code = ctx.code(use.mask_node)
        fix = None
        if facts.convention in (ATTEND, MASKED):
            flip = facts.convention != use.expects
            new = f"~{_atom(code)}.bool()" if flip else f"{_atom(code)}.bool()"
            fix = NodeFix(
                f"Pass the mask as bool in the API's convention (`{new}`)",
                Applicability.UNSAFE,
                (Replacement(use.mask_node, cst.parse_expression(new)),),
            )
        api = "scaled_dot_product_attention" if use.api == "sdpa" else use.api
        ctx.report(
            use.call,
            f"`{_short(code)}` is {reason} in float, and {api} adds a float `{use.keyword}` to the scores: "
            "1.0/0.0 masks nothing; pass it as bool",
            fix=fix,
        )

    VALID = VALID
    INVALID = INVALID


def _plain(node) -> bool:
    if isinstance(node, cst.Name):
        return True
    return isinstance(node, cst.Attribute) and _plain(node.value)


def _atom(code: str) -> str:
    """Parenthesise unless the expression binds tighter than a method call already."""
    node = cst.parse_expression(code)
    if isinstance(node, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) or node.lpar:
        return code
    return f"({code})"


def _short(code: str, limit: int = 60) -> str:
    code = " ".join(code.split())
    return code if len(code) <= limit else code[: limit - 3] + "..."
