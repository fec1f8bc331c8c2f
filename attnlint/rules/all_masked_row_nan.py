"""ATN203 all-masked-row-nan."""

from __future__ import annotations

from attnlint.diagnostics import Applicability
from attnlint.fixers.masking import zero_fully_masked_rows
from attnlint.rules.base import FixAvailability, Invalid, Rule, RuleContext, Valid


class AllMaskedRowNan(Rule):
    """
    ## What it does
    Checks for scores filled with `-inf` (`masked_fill(mask, float("-inf"))`, `-torch.inf`,
    `-math.inf`, `-np.inf`, an additive `-inf` mask, `torch.where(keep, scores, -inf)`) from a
    padding or attention mask that can mask a whole row, followed by a softmax with nothing that
    handles fully masked rows.

    ## Why is this bad?
    The softmax of a row that is all `-inf` is `0/0 = NaN`. Such rows appear with an empty
    sequence in the batch, or with left padding plus a causal mask (the first real token's
    predecessors are all padding). The NaN spreads through the values, the loss and every
    gradient: one bad batch can destroy a run. `F.scaled_dot_product_attention` defines these
    rows as 0 instead.

    Not reported: pure causal masks that keep the diagonal (no row can be empty), finite fills
    (`-1e9`, `torch.finfo(dtype).min`), a guard after the softmax (`torch.where`, `masked_fill`,
    `nan_to_num`), and SDPA.

    ## Example
    ```python
    scores = scores.masked_fill(key_padding_mask[:, None, None, :], float("-inf"))
    weights = scores.softmax(dim=-1)
    ```

    ## Use instead
    ```python
    scores = scores.masked_fill(key_padding_mask[:, None, None, :], float("-inf"))
    weights = scores.softmax(dim=-1).masked_fill(key_padding_mask[:, None, None, :].all(dim=-1, keepdim=True), 0.0)
    ```

    ## Fix safety
    The fix is unsafe: rows that were NaN become 0 (all other rows are bit-identical). It zeroes
    the rows after the softmax with `masked_fill`, which also keeps the q and k gradients finite.
    `nan_to_num` after an *additive* `-inf` mask fixes the forward pass only (the gradients stay
    NaN), so for additive masks no fix is offered: use `masked_fill` or a finite fill instead.
    """

    code = "ATN203"
    name = "all-masked-row-nan"
    summary = "a -inf mask that can empty a whole row makes softmax return NaN"
    fix_availability = FixAvailability.SOMETIMES
    fix_applicability = Applicability.UNSAFE
    triggers = ("inf",)

    def check(self, ctx: RuleContext) -> None:
        reported = set()
        for site in ctx.analysis.softmax_sites:
            if site.guarded:
                continue
            for fill in site.input.get_extra("fills") or ():
                facts = fill.mask.mask
                if fill.fill != "-inf" or facts is None or not facts.can_mask_whole_row:
                    continue
                if id(fill.call) in reported:
                    continue
                reported.add(id(fill.call))
                source = f"`{facts.param}`" if facts.param else f"this {facts.origin or ''} mask".replace("  ", " ")
                ctx.report(
                    fill.call,
                    f"-inf fill from {source} can mask every key of a row (an empty or left-padded "
                    "sequence); softmax then returns NaN for that row",
                    fix=zero_fully_masked_rows(ctx.module, site.call, fill),
                )

    VALID = [
        # Pure causal mask keeping the diagonal (the course notes).
        Valid(
            """
            import torch
            import torch.nn as nn
            class CausalAttention(nn.Module):
                def __init__(self, context_length):
                    super().__init__()
                    self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))
                def forward(self, q, k, v):
                    b, n, d = q.shape
                    s = q @ k.transpose(1, 2)
                    s.masked_fill_(self.mask.bool()[:n, :n], -torch.inf)
                    return torch.softmax(s / d ** 0.5, dim=-1) @ v
            """
        ),
        # Finite fill.
        Valid(
            """
            import torch
            def attention(q, k, v, attention_mask):
                s = q @ k.transpose(-2, -1) / q.size(-1) ** 0.5
                s = s.masked_fill(attention_mask == 0, -1e9)
                return s.softmax(-1) @ v
            """
        ),
        Valid(
            """
            import torch
            def attention(q, k, v, attention_mask):
                s = q @ k.transpose(-2, -1) / q.size(-1) ** 0.5
                s = s.masked_fill(attention_mask == 0, torch.finfo(s.dtype).min)
                return s.softmax(-1) @ v
            """
        ),
        # Guarded after the softmax.
        Valid(
            """
            import torch
            def attention(q, k, v, key_padding_mask):
                s = (q @ k.transpose(-2, -1)) * q.size(-1) ** -0.5
                m = key_padding_mask[:, None, None, :]
                s = s.masked_fill(m, float("-inf"))
                w = s.softmax(dim=-1)
                w = w.masked_fill(m.all(dim=-1, keepdim=True), 0.0)
                return w @ v
            """
        ),
        Valid(
            """
            import torch
            def attention(q, k, v, padding_mask):
                s = (q @ k.transpose(-2, -1)) * q.size(-1) ** -0.5
                s = s.masked_fill(padding_mask, float("-inf"))
                w = torch.nan_to_num(torch.softmax(s, dim=-1))
                return w @ v
            """
        ),
        # SDPA handles fully masked rows.
        Valid(
            """
            import torch.nn.functional as F
            def attention(q, k, v, attention_mask):
                return F.scaled_dot_product_attention(q, k, v, attn_mask=attention_mask.bool())
            """
        ),
        # A generic `mask` argument: what it can mask is unknown.
        Valid(
            """
            import torch
            def attention(q, k, v, mask):
                s = (q @ k.transpose(-2, -1)) * q.size(-1) ** -0.5
                s = s.masked_fill(mask == 0, float("-inf"))
                return s.softmax(-1) @ v
            """
        ),
        # tril causal mask used with where.
        Valid(
            """
            import torch
            def attention(q, k, v):
                T = q.size(-2)
                keep = torch.tril(torch.ones(T, T, dtype=torch.bool))
                s = torch.where(keep, (q @ k.transpose(-2, -1)) * q.size(-1) ** -0.5, float("-inf"))
                return s.softmax(-1) @ v
            """
        ),
    ]

    INVALID = [
        Invalid(
            """
            import torch
            def attention(q, k, v, key_padding_mask):
                s = (q @ k.transpose(-2, -1)) * q.size(-1) ** -0.5
                s = s.masked_fill(key_padding_mask[:, None, None, :], float("-inf"))
                w = s.softmax(dim=-1)
                return w @ v
            """,
            fixed="""
            import torch
            def attention(q, k, v, key_padding_mask):
                s = (q @ k.transpose(-2, -1)) * q.size(-1) ** -0.5
                s = s.masked_fill(key_padding_mask[:, None, None, :], float("-inf"))
                w = s.softmax(dim=-1).masked_fill(key_padding_mask[:, None, None, :].all(dim=-1, keepdim=True), 0.0)
                return w @ v
            """,
            line=4,
            column=8,
        ),
        # HF-style attention_mask (1 = attend) with `== 0`, -math.inf.
        Invalid(
            """
            import math
            import torch
            def attention(q, k, v, attention_mask):
                scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.size(-1))
                scores = scores.masked_fill(attention_mask == 0, -math.inf)
                probs = torch.softmax(scores, dim=-1)
                return torch.matmul(probs, v)
            """,
            fixed="""
            import math
            import torch
            def attention(q, k, v, attention_mask):
                scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.size(-1))
                scores = scores.masked_fill(attention_mask == 0, -math.inf)
                probs = torch.softmax(scores, dim=-1).masked_fill((attention_mask == 0).all(dim=-1, keepdim=True), 0.0)
                return torch.matmul(probs, v)
            """,
        ),
        # In-place fill, -torch.inf.
        Invalid(
            """
            import torch
            def forward(self, q, k, v, padding_mask):
                s = q @ k.transpose(-2, -1) * self.scale
                s.masked_fill_(padding_mask.unsqueeze(1), -torch.inf)
                return torch.softmax(s, dim=-1) @ v
            """,
            fixed="""
            import torch
            def forward(self, q, k, v, padding_mask):
                s = q @ k.transpose(-2, -1) * self.scale
                s.masked_fill_(padding_mask.unsqueeze(1), -torch.inf)
                return torch.softmax(s, dim=-1).masked_fill(padding_mask.unsqueeze(1).all(dim=-1, keepdim=True), 0.0) @ v
            """,
        ),
        # Padding mask combined with a causal mask (left padding + causal).
        Invalid(
            """
            import numpy as np
            import torch
            def forward(self, q, k, v, attention_mask):
                T = q.size(-2)
                causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
                keep = causal & attention_mask.bool()[:, None, None, :]
                s = q @ k.transpose(-2, -1) * self.scale
                s = s.masked_fill(~keep, -np.inf)
                return s.softmax(-1) @ v
            """,
            fixed="""
            import numpy as np
            import torch
            def forward(self, q, k, v, attention_mask):
                T = q.size(-2)
                causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
                keep = causal & attention_mask.bool()[:, None, None, :]
                s = q @ k.transpose(-2, -1) * self.scale
                s = s.masked_fill(~keep, -np.inf)
                return s.softmax(-1).masked_fill((~keep).all(dim=-1, keepdim=True), 0.0) @ v
            """,
        ),
        # Additive -inf mask: reported, no fix (the gradients would stay NaN).
        Invalid(
            """
            import torch
            def forward(self, q, k, v, key_padding_mask):
                bias = torch.zeros_like(key_padding_mask, dtype=q.dtype).masked_fill(key_padding_mask, float("-inf"))
                s = q @ k.transpose(-2, -1) * self.scale + bias[:, None, None, :]
                return s.softmax(-1) @ v
            """,
        ),
        # torch.where(keep, scores, -inf) with a lengths mask.
        Invalid(
            """
            import torch
            def forward(self, q, k, v, lengths):
                T = k.size(-2)
                keep = torch.arange(T)[None, :] < lengths[:, None]
                s = q @ k.transpose(-2, -1) * self.scale
                s = torch.where(keep[:, None, None, :], s, float("-inf"))
                return s.softmax(-1) @ v
            """,
            fixed="""
            import torch
            def forward(self, q, k, v, lengths):
                T = k.size(-2)
                keep = torch.arange(T)[None, :] < lengths[:, None]
                s = q @ k.transpose(-2, -1) * self.scale
                s = torch.where(keep[:, None, None, :], s, float("-inf"))
                return s.softmax(-1).masked_fill((~keep[:, None, None, :]).all(dim=-1, keepdim=True), 0.0) @ v
            """,
        ),
    ]
