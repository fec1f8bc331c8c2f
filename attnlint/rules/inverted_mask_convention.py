"""ATN205 inverted-mask-convention."""

from __future__ import annotations

from attnlint.analysis.values import ATTEND, MASKED
from attnlint.diagnostics import Applicability
from attnlint.fixers.masking import invert_mask
from attnlint.rules.base import FixAvailability, Invalid, Rule, RuleContext, Valid

_MEANING = {ATTEND: "True = may attend", MASKED: "True = masked out"}
_API = {"sdpa": "scaled_dot_product_attention", "MultiheadAttention": "nn.MultiheadAttention"}


class InvertedMaskConvention(Rule):
    """
    ## What it does
    Checks for a boolean mask whose True entries mean "masked" (built with
    `triu(..., diagonal=1)`, `attention_mask == 0`, `~keep`, or named `*_padding_mask`) passed as
    `F.scaled_dot_product_attention`'s `attn_mask`, where True means "may attend"; and for a
    "True = attend" mask (`tril(...)`, `attention_mask.bool()`) passed as
    `nn.MultiheadAttention`'s or `nn.Transformer*`'s `key_padding_mask`/`attn_mask`, where True
    means "masked".

    ## Why is this bad?
    PyTorch's two attention APIs use opposite boolean conventions. With the wrong one, a causal
    model attends only to the future, a padded batch attends only to the padding, and fully
    masked rows turn into NaN; the code runs and the loss still goes down. This bug appears in
    widely read public teaching code.

    Only masks whose convention the analysis can trace (and whose dtype is bool; float masks
    are additive in both APIs) are reported.

    ## Example
    ```python
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)  # True = future
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    ```

    ## Use instead
    ```python
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)  # True = future
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=~mask)
    ```

    ## Fix safety
    The fix is unsafe: it changes which positions are attended (that is the point). For a causal
    mask, `is_causal=True` is often the cleaner fix.
    """

    code = "ATN205"
    name = "inverted-mask-convention"
    summary = "a boolean mask is passed in the opposite convention of the attention API"
    fix_availability = FixAvailability.ALWAYS
    fix_applicability = Applicability.UNSAFE
    triggers = ("mask",)

    def check(self, ctx: RuleContext) -> None:
        for use in ctx.analysis.sites("mask_uses"):
            facts = use.mask.mask
            if facts is None or facts.dtype != "bool" or facts.convention not in (ATTEND, MASKED):
                continue
            if facts.convention == use.expects:
                continue
            api = _API.get(use.api, f"nn.{use.api}")
            ctx.report(
                use.mask_node,
                f"this mask means {_MEANING[facts.convention]}, but {api}'s `{use.keyword}` reads "
                f"{_MEANING[use.expects]}: the attention is inverted",
                fix=invert_mask(ctx.module, use.mask_node, use.expects),
            )

    VALID = [
        Valid(
            """
            import torch
            import torch.nn.functional as F
            def f(q, k, v, T):
                keep = torch.tril(torch.ones(T, T, dtype=torch.bool))
                return F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
            """
        ),
        Valid(
            """
            import torch
            import torch.nn.functional as F
            def f(q, k, v, T):
                future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
                return F.scaled_dot_product_attention(q, k, v, attn_mask=~future)
            """
        ),
        # MHA with True = masked, as it expects.
        Valid(
            """
            import torch
            import torch.nn as nn
            class Block(nn.Module):
                def __init__(self, d, h):
                    super().__init__()
                    self.attn = nn.MultiheadAttention(d, h, batch_first=True)
                def forward(self, x, attention_mask):
                    T = x.size(1)
                    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
                    out, _ = self.attn(x, x, x, key_padding_mask=attention_mask == 0, attn_mask=future)
                    return out
            """
        ),
        # Float (additive) masks are not this rule's.
        Valid(
            """
            import torch
            import torch.nn.functional as F
            def f(q, k, v, T):
                m = torch.triu(torch.ones(T, T), diagonal=1)
                return F.scaled_dot_product_attention(q, k, v, attn_mask=m)
            """
        ),
        # Convention unknown: a generic mask argument.
        Valid(
            """
            import torch.nn.functional as F
            def f(q, k, v, mask):
                return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            """
        ),
        Valid(
            """
            import torch.nn as nn
            class Enc(nn.Module):
                def __init__(self, layer):
                    super().__init__()
                    self.encoder = nn.TransformerEncoder(layer, num_layers=2)
                def forward(self, src, src_key_padding_mask):
                    return self.encoder(src, src_key_padding_mask=src_key_padding_mask)
            """
        ),
        # HF attention_mask turned into "attend" bools for SDPA.
        Valid(
            """
            import torch.nn.functional as F
            def f(q, k, v, attention_mask):
                return F.scaled_dot_product_attention(q, k, v, attn_mask=attention_mask.bool()[:, None, None, :])
            """
        ),
    ]

    INVALID = [
        # rasbt's MHAPyTorchSDPAWithoutFlash pattern: a triu buffer straight into SDPA.
        Invalid(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F
            class MHA(nn.Module):
                def __init__(self, context_length):
                    super().__init__()
                    self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1).bool())
                def forward(self, q, k, v):
                    T = q.size(-2)
                    attn_mask = self.mask[:T, :T]
                    return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
            """,
            fixed="""
            import torch
            import torch.nn as nn
            import torch.nn.functional as F
            class MHA(nn.Module):
                def __init__(self, context_length):
                    super().__init__()
                    self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1).bool())
                def forward(self, q, k, v):
                    T = q.size(-2)
                    attn_mask = self.mask[:T, :T]
                    return F.scaled_dot_product_attention(q, k, v, attn_mask=~attn_mask)
            """,
            line=11,
            column=65,
        ),
        # `attention_mask == 0` is True at padding: SDPA would attend only to padding.
        Invalid(
            """
            import torch.nn.functional as F
            def f(q, k, v, attention_mask):
                m = (attention_mask == 0)[:, None, None, :]
                return F.scaled_dot_product_attention(q, k, v, m)
            """,
            fixed="""
            import torch.nn.functional as F
            def f(q, k, v, attention_mask):
                m = (attention_mask == 0)[:, None, None, :]
                return F.scaled_dot_product_attention(q, k, v, ~m)
            """,
        ),
        # key_padding_mask (True = pad) given to SDPA.
        Invalid(
            """
            import torch.nn.functional as F
            def f(q, k, v, key_padding_mask):
                return F.scaled_dot_product_attention(q, k, v, attn_mask=key_padding_mask[:, None, None, :])
            """,
            fixed="""
            import torch.nn.functional as F
            def f(q, k, v, key_padding_mask):
                return F.scaled_dot_product_attention(q, k, v, attn_mask=~key_padding_mask[:, None, None, :])
            """,
        ),
        # HF attention_mask (1 = attend) as MHA's key_padding_mask.
        Invalid(
            """
            import torch.nn as nn
            class Block(nn.Module):
                def __init__(self, d, h):
                    super().__init__()
                    self.attn = nn.MultiheadAttention(d, h, batch_first=True)
                def forward(self, x, attention_mask):
                    out, _ = self.attn(x, x, x, key_padding_mask=attention_mask.bool())
                    return out
            """,
            fixed="""
            import torch.nn as nn
            class Block(nn.Module):
                def __init__(self, d, h):
                    super().__init__()
                    self.attn = nn.MultiheadAttention(d, h, batch_first=True)
                def forward(self, x, attention_mask):
                    out, _ = self.attn(x, x, x, key_padding_mask=~attention_mask.bool())
                    return out
            """,
        ),
        # A tril (True = attend) causal mask as MHA's attn_mask.
        Invalid(
            """
            import torch
            import torch.nn as nn
            class Block(nn.Module):
                def __init__(self, d, h):
                    super().__init__()
                    self.attn = nn.MultiheadAttention(d, h)
                def forward(self, x):
                    T = x.size(0)
                    causal = torch.tril(torch.ones(T, T)).bool()
                    return self.attn(x, x, x, attn_mask=causal)[0]
            """,
            fixed="""
            import torch
            import torch.nn as nn
            class Block(nn.Module):
                def __init__(self, d, h):
                    super().__init__()
                    self.attn = nn.MultiheadAttention(d, h)
                def forward(self, x):
                    T = x.size(0)
                    causal = torch.tril(torch.ones(T, T)).bool()
                    return self.attn(x, x, x, attn_mask=~causal)[0]
            """,
        ),
        # A padding mask from pad ids, in the "attend" convention, to nn.TransformerEncoder.
        Invalid(
            """
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            PAD = 0
            class Enc(nn.Module):
                def __init__(self, layer):
                    super().__init__()
                    self.encoder = nn.TransformerEncoder(layer, num_layers=2)
                def forward(self, token_lists):
                    tokens = pad_sequence(token_lists, batch_first=True, padding_value=PAD)
                    keep = tokens != PAD
                    return self.encoder(self.embed(tokens), src_key_padding_mask=keep)
            """,
            fixed="""
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            PAD = 0
            class Enc(nn.Module):
                def __init__(self, layer):
                    super().__init__()
                    self.encoder = nn.TransformerEncoder(layer, num_layers=2)
                def forward(self, token_lists):
                    tokens = pad_sequence(token_lists, batch_first=True, padding_value=PAD)
                    keep = tokens != PAD
                    return self.encoder(self.embed(tokens), src_key_padding_mask=~keep)
            """,
        ),
    ]
