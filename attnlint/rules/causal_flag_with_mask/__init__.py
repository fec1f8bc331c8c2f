"""ATN207 causal-flag-with-mask."""

from __future__ import annotations

import libcst as cst

from attnlint.analysis import attention_flags
from attnlint.diagnostics import Applicability
from attnlint.fixers.causal import drop_causal_flag, fold_lower_right_causal
from attnlint.rules.base import FixAvailability, Rule, RuleContext
from attnlint.rules.causal_flag_with_mask.examples import INVALID, VALID


class CausalFlagWithMask(Rule):
    """
    ## What it does
    Checks for `F.scaled_dot_product_attention` given both an explicit `attn_mask` and
    `is_causal=True`, and for `nn.MultiheadAttention` given `is_causal=True` with an `attn_mask`
    the code builds from something other than a causal triangle (padding, lengths). Keywords
    spread from a dict built in the function (`**dict(attn_mask=m, is_causal=True)`) count as
    written in the call.

    ## Why is this bad?
    The two do not combine the way the code assumes. Depending on the PyTorch version and backend,
    SDPA raises (`Explicit attn_mask should not be set when is_causal=True`), or combines the mask
    with a causal mask aligned to the *top-left* corner (query `i` sees keys `0..i`; torch 2.x on
    CPU). Top-left alignment is wrong whenever the queries are not the first positions: decoding
    with a KV cache (one new query sees every cached key), cross attention, prefix-LM masks. For
    `nn.MultiheadAttention`, `is_causal` is a hint that `attn_mask` *is* the causal mask; with a
    padding mask the fast path may use a causal mask instead of it.

    A flag computed as a test that the sequence is longer than one (`is_causal = T > 1`,
    `is_causal=q.size(2) != 1`) is True on ordinary inputs, mask or no mask, and is reported too.
    So is a call of this file that hands a helper both a mask and `True` for the parameter the
    helper gives SDPA as `is_causal` (`self.self_attn(h, h, h, attn_mask=pad, causal=True)`):
    reported at that call.

    Not reported: `is_causal=True` alone, `is_causal` computed from the mask at run time
    (`is_causal=mask is None`, `T > 1 and mask is None`), a flag the code does not show the value
    of (`self.is_causal`, a parameter no call here sets), `nn.MultiheadAttention` whose `attn_mask` is the causal
    mask (the documented use of the hint) or comes from where the code does not show.

    ## Fix safety
    The fix is unsafe: it changes which keys some queries attend to. When the mask is itself a
    causal triangle, `is_causal` is dropped. Otherwise causality is folded into the mask, aligned
    to the lower right (query `i` sees keys up to `i + n_k - n_q`, which is the usual triangle when
    query and key lengths agree, and right for a KV cache), and `is_causal` is dropped: `&` for a
    bool mask, `-inf` above the triangle for a float mask. For cross attention with no causal
    intent, remove the flag by hand instead. The fold is offered when the mask, the queries and the
    keys are plain names, `torch` is imported and the flag is the literal `True`; a computed flag
    (`T > 1`) gets no fix, since what the code means where it is False is for its author to say.
    """

    code = "ATN207"
    name = "causal-flag-with-mask"
    summary = "attention given both an explicit mask and is_causal=True"
    fix_availability = FixAvailability.SOMETIMES
    fix_applicability = Applicability.UNSAFE
    triggers = ("is_causal",)
    recipe = "causal_flag_with_mask"

    def check(self, ctx: RuleContext) -> None:
        torch_name = ctx.analysis.torch_name
        own = set()
        for function in ctx.analysis.functions:
            for found in attention_flags.causal_flags_with_masks(function):
                own.add(id(found.site.call))
                causal = found.mask_is_causal
                if found.api == "MultiheadAttention":
                    if causal is not False:
                        continue  # the documented hint, or a mask we cannot see
                    ctx.report(
                        found.site.call,
                        f"`is_causal=True` tells nn.MultiheadAttention that `attn_mask` "
                        f"`{ctx.code(found.mask_node)}` is the causal mask, but it is built from "
                        f"{found.mask.mask.origin}: the fast path may apply a causal mask instead of it",
                    )
                    continue
                if not found.flag_is_literal:
                    # `is_causal=T > 1`: true on ordinary inputs, whether or not the mask is given.
                    # No fix: what the code means for the inputs where the flag is false (one
                    # query, decoding) is for its author to say.
                    ctx.report(
                        found.site.call,
                        f"scaled_dot_product_attention gets `attn_mask` `{ctx.code(found.mask_node)}` and "
                        f"`is_causal={_short(ctx.code(found.flag))}`, which is True for any sequence longer than "
                        "one, mask or no mask: some backends raise, others add a top-left aligned causal mask; "
                        "fold causality into the mask, or set is_causal only when there is no mask",
                    )
                    continue
                if causal:
                    ctx.report(
                        found.site.call,
                        f"`attn_mask` `{ctx.code(found.mask_node)}` is already causal and `is_causal=True` "
                        "is given too: SDPA raises on some backends; drop `is_causal`",
                        fix=drop_causal_flag(found.flag, "Drop `is_causal` (the mask is causal)"),
                    )
                    continue
                ctx.report(
                    found.site.call,
                    f"scaled_dot_product_attention gets both `attn_mask` `{ctx.code(found.mask_node)}` and "
                    "`is_causal=True`: some backends raise, others add a top-left aligned causal mask, wrong "
                    "with a KV cache, cross attention or a prefix mask; fold causality into the mask",
                    fix=self._fold(ctx, found, torch_name),
                )
        self._through_calls(ctx, own)

    def _through_calls(self, ctx: RuleContext, reported: set) -> None:
        """A helper whose `is_causal` is its parameter, called here with a mask and that flag
        true: reported at the call (what the helper's own reading cannot tell)."""
        for call, found in ctx.analysis.causal_flags_with_masks_by_calls():
            if id(found.site.call) in reported or id(call) in reported or found.mask_is_causal:
                continue
            reported.add(id(call))
            ctx.report(
                call,
                f"this call makes `{ctx.code(call.func)}` give scaled_dot_product_attention both an `attn_mask` "
                f"and `is_causal={found.flag.value}` true: some backends raise, others add a top-left aligned "
                "causal mask; fold causality into the mask",
            )

    @staticmethod
    def _fold(ctx: RuleContext, found, torch_name):
        names = (found.mask_node, found.query_node, found.key_node)
        if torch_name is None or not all(isinstance(n, cst.Name) for n in names):
            return None
        dtype = found.mask.mask.dtype if found.mask.mask is not None else None
        return fold_lower_right_causal(
            found.flag,
            found.mask_node,
            found.mask_node.value,
            found.query_node.value,
            found.key_node.value,
            dtype,
            torch_name,
        )

    VALID = VALID
    INVALID = INVALID


def _short(code: str, limit: int = 60) -> str:
    code = " ".join(code.split())
    return code if len(code) <= limit else code[: limit - 3] + "..."
