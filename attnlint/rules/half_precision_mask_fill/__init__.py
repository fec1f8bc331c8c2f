"""ATN206 half-precision-mask-fill."""

from __future__ import annotations

import libcst as cst

from attnlint.analysis import fill_values, precision
from attnlint.diagnostics import Applicability
from attnlint.fixers.fill_value import dtype_min_fill
from attnlint.rules.base import FixAvailability, Rule, RuleContext
from attnlint.rules.half_precision_mask_fill.examples import INVALID, VALID


class HalfPrecisionMaskFill(Rule):
    """
    ## What it does
    Checks for masked attention scores filled with a large negative constant that does not
    survive half precision, in code that can run in half precision. The filled tensor is the
    scores, a tensor a softmax normalises (additive attention energies), or a mask on its way to
    the scores: an additive mask added to them, or a float mask handed to SDPA,
    `nn.MultiheadAttention` or `nn.Transformer*` (which add it to theirs), or a mask filled on
    its way, under a mask keyword (`attn_mask=`), to a layer of another library (fairseq's
    `MultiheadAttention`: the fill itself raises on a half mask). The constant, written
    in the fill, as a named constant, or as a config field's default (`mask_value: float = -1e9`
    read as `self.cfg.mask_value`, when nothing in the file sets the field otherwise):
    - a constant beyond float16's range (`-1e9`, `-1e20`; float16 ends at ±65504);
    - float32's `torch.finfo(torch.float32).min`, beyond float16's and bfloat16's range.

    Reported only when the analysis shows the scores can be half precision, and the message says
    what shows it: the function is written for any dtype (it casts to its input's dtype, or takes a
    `dtype`), or the file runs in half precision (`.half()`, `autocast`, `torch.float16`,
    `torch.bfloat16`, or a mixed-precision training set-up: a `GradScaler`, apex's
    `amp.initialize`, `fp16=True`, `mixed_precision="fp16"`, Lightning's `precision=16`, a
    `--fp16` flag), or a configuration that selects it (a `fp16: bool = True` field,
    `self.use_fp16 = True`, a dtype setting holding `"float16"` / `"bf16"`).

    ## Why is this bad?
    `scores.masked_fill(mask, -1e9)` on float16 scores raises `value cannot be converted to type
    c10::Half without overflow`; with `torch.where` or a cast, the constant silently becomes
    `-inf`, so a fully masked row (an empty or left-padded sequence) is NaN again, which is what the
    finite constant was meant to prevent. This is how fp16 training and inference of
    float32-tested models broke in apex, fairseq and transformers.

    Not reported: float32-only code (the classic `masked_fill(mask == 0, -1e9)` in a float32 model),
    constants within the range (`-1e4`, `-65504`), `float("-inf")` (ATN203's business), fills in the
    scores' own dtype (`torch.finfo(scores.dtype).min`), additive masks made in float32 here
    (`torch.zeros(n, n).masked_fill(...)`: the sum is promoted to float32), scores cast to float32
    before the fill (`scores = scores.float()`, OpenNMT's attention), and fills the analysis
    cannot evaluate.

    ## Fix safety
    The fix is safe: it fills with `torch.finfo(scores.dtype).min` (the filled mask's own dtype, for
    a mask). In float32 the softmax gives the
    same weights (exp underflows to exactly 0 either way; a fully masked row stays uniform); only
    half precision changes, from an error or NaN rows to the intended result. It is offered when the
    filled scores are a plain name and `torch` is imported.
    """

    code = "ATN206"
    name = "half-precision-mask-fill"
    summary = "a mask fill constant that overflows in float16/bfloat16 in code that runs in half precision"
    fix_availability = FixAvailability.SOMETIMES
    fix_applicability = Applicability.SAFE
    triggers = (r"\de\+?\d", r"\d{6}", r"finfo")
    recipe = "half_precision_mask_fill"

    def check(self, ctx: RuleContext) -> None:
        aliases = ctx.analysis.aliases
        torch_name = ctx.analysis.torch_name
        in_file = None
        reaching = _fills_reaching_scores(ctx.analysis)
        for function in ctx.analysis.functions:
            sites = [
                s
                for s in function.fill_sites
                if not s.additive and (s.on_scores or (id(s.call) in reaching and not s.float32_receiver))
            ]
            if not sites:
                continue
            evidence = precision.function_evidence(function.node, aliases)
            if not evidence:
                if in_file is None:
                    in_file = precision.file_evidence(ctx.module, aliases)
                evidence = in_file
            if not evidence:
                continue
            for site in sites:
                if site.on_scores and precision.cast_to_float32_before(function.node, site.receiver_node, site.call):
                    # `scores = scores.float()` first: the fill meets float32. (A mask made in
                    # float32 for an attention API is cast to the queries' dtype there.)
                    continue
                constant = fill_values.fill_constant(site, aliases, function.node, ctx.module)
                if constant is None:
                    continue
                broken = [d for d in precision.HALF_DTYPES if d in evidence.dtypes and constant.overflows(d)]
                if not broken:
                    continue
                written = ctx.code(constant.node)
                dtypes = " and ".join(broken)
                # A mask filled on its way to the scores (an additive mask) is named as such.
                filled = "scores" if site.on_scores else "mask"
                receiver = ctx.code(site.receiver_node) if _plain(site.receiver_node) else filled
                ctx.report(
                    site.call,
                    f"fill `{written}` is beyond the range of {dtypes} and the {filled} can be half precision "
                    f"({evidence.reason}): masked_fill raises, and a cast turns it into -inf (NaN rows); "
                    f"fill with torch.finfo({receiver}.dtype).min",
                    fix=self._fix(site, torch_name),
                )

    @staticmethod
    def _fix(site, torch_name):
        node = fill_values.fill_node(site)
        receiver = site.receiver_node
        if node is None or torch_name is None or not _plain(receiver):
            return None
        return dtype_min_fill(node, cst.Module([]).code_for_node(receiver), torch_name, Applicability.SAFE)

    VALID = VALID
    INVALID = INVALID


def _fills_reaching_scores(analysis) -> set:
    """The fill calls whose constant ends up in attention scores: filled tensors a softmax
    normalises (whatever made them), the fills that built an additive mask added to the scores,
    and those that built a float mask handed to an attention API (which adds it to its scores).
    By call node: a helper's fill reaches its caller's softmax through the helper's summary (a
    reading of its own for that call), whose fill site is the same call."""
    reaching = set()
    for function in analysis.functions:
        for softmax in function.softmax_sites:
            reaching.update(id(fill.call) for fill in softmax.input.fills)
        for fill in function.fill_sites:
            if fill.source is not None:
                reaching.add(id(fill.source.call))
        for use in list(function.mask_uses) + list(function.mask_handoffs):
            if use.mask.additive_fill is not None:
                reaching.add(id(use.mask.additive_fill.call))
    return reaching


def _plain(node) -> bool:
    if isinstance(node, cst.Name):
        return True
    return isinstance(node, cst.Attribute) and _plain(node.value)
