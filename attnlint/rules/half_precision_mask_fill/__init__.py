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
    survive half precision, in code that can run in half precision:
    - a constant beyond float16's range (`-1e9`, `-1e20`; float16 ends at ±65504);
    - float32's `torch.finfo(torch.float32).min`, beyond float16's and bfloat16's range.

    Reported only when the analysis shows the scores can be half precision, and the message says
    what shows it: the function is written for any dtype (it casts to its input's dtype, or takes a
    `dtype`), or the file runs in half precision (`.half()`, `autocast`, `torch.float16`,
    `torch.bfloat16`).

    ## Why is this bad?
    `scores.masked_fill(mask, -1e9)` on float16 scores raises `value cannot be converted to type
    c10::Half without overflow`; with `torch.where` or a cast, the constant silently becomes
    `-inf`, so a fully masked row (an empty or left-padded sequence) is NaN again, which is what the
    finite constant was meant to prevent. This is how fp16 training and inference of
    float32-tested models broke in apex, fairseq and transformers.

    Not reported: float32-only code (the classic `masked_fill(mask == 0, -1e9)` in a float32 model),
    constants within the range (`-1e4`, `-65504`), `float("-inf")` (ATN203's business), fills in the
    scores' own dtype (`torch.finfo(scores.dtype).min`), and fills the analysis cannot evaluate.

    ## Fix safety
    The fix is safe: it fills with `torch.finfo(scores.dtype).min`. In float32 the softmax gives the
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
        torch_name = next((local for local, full in aliases.items() if full == "torch"), None)
        in_file = None
        for function in ctx.analysis.functions:
            sites = [s for s in function.fill_sites if s.on_scores and not s.additive]
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
                constant = fill_values.fill_constant(site, aliases, function.node, ctx.module)
                if constant is None:
                    continue
                broken = [d for d in precision.HALF_DTYPES if d in evidence.dtypes and constant.overflows(d)]
                if not broken:
                    continue
                written = ctx.code(constant.node)
                dtypes = " and ".join(broken)
                ctx.report(
                    site.call,
                    f"fill `{written}` is beyond the range of {dtypes} and the scores can be half precision "
                    f"({evidence.reason}): masked_fill raises, and a cast turns it into -inf (NaN rows); "
                    "fill with torch.finfo(scores.dtype).min",
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


def _plain(node) -> bool:
    if isinstance(node, cst.Name):
        return True
    return isinstance(node, cst.Attribute) and _plain(node.value)
