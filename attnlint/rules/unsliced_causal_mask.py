"""ATN204 unsliced-causal-mask."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from attnlint.diagnostics import Applicability
from attnlint.fixers.masking import is_repeatable, slice_buffer
from attnlint.rules.base import FixAvailability, Invalid, Rule, RuleContext, Valid


class UnslicedCausalMask(Rule):
    """
    ## What it does
    Checks for a mask buffer registered at a fixed size (`context_length`, `block_size`) and then
    applied without slicing to the current length: `masked_fill_(self.mask.bool(), -inf)`,
    `self.bias == 0`, `torch.where(self.causal, ...)`, `attn_mask=self.mask`.

    ## Why is this bad?
    The buffer is `(context_length, context_length)`; the scores are `(num_tokens, num_tokens)`.
    The code works only when every input is exactly `context_length` long, which is how it is
    usually tested, and fails on the first shorter prompt (generation, evaluation, the last
    batch).

    Not reported: sliced buffers (`self.mask[:T, :T]`, KV-cache offsets), masks built at the
    right size inside `forward`.

    ## Example
    ```python
    attn_scores.masked_fill_(self.mask.bool(), -torch.inf)
    ```

    ## Use instead
    ```python
    attn_scores.masked_fill_(self.mask[..., :attn_scores.size(-2), :attn_scores.size(-1)].bool(), -torch.inf)
    ```

    ## Fix safety
    The fix is safe: when the input is `context_length` long the slice is the whole buffer, so
    the output is bit-identical; shorter inputs used to raise. The slice keeps leading dims
    (`...`), so `(1, 1, T, T)` buffers work too.
    """

    code = "ATN204"
    name = "unsliced-causal-mask"
    summary = "a mask buffer built at a fixed size is applied without slicing to the current length"
    fix_availability = FixAvailability.SOMETIMES
    fix_applicability = Applicability.SAFE
    triggers = ("register_buffer",)

    def check(self, ctx: RuleContext) -> None:
        seen = set()
        for fill in ctx.analysis.sites("fill_sites"):
            rows = cols = None
            if fill.receiver_node is not None and is_repeatable(fill.receiver_node):
                subject = ctx.code(fill.receiver_node)
                rows, cols = f"{subject}.size(-2)", f"{subject}.size(-1)"
            self._check_mask(ctx, fill.mask, fill.mask_node, rows, cols, seen)
        for use in ctx.analysis.sites("mask_uses"):
            rows = cols = None
            if use.api == "sdpa":
                q, k = (_positional(use.call, 0), _positional(use.call, 1))
                if q is not None and k is not None and is_repeatable(q) and is_repeatable(k):
                    rows, cols = f"{ctx.code(q)}.size(-2)", f"{ctx.code(k)}.size(-2)"
            self._check_mask(ctx, use.mask, use.mask_node, rows, cols, seen)

    def _check_mask(self, ctx, value, mask_node, rows, cols, seen) -> None:
        facts = value.mask
        if facts is None or not facts.buffer_attr or not facts.built_size or facts.sliced:
            return
        buffer = facts.buffer_node or _find_buffer(mask_node, facts.buffer_attr)
        if buffer is None or id(buffer) in seen:
            return
        seen.add(id(buffer))
        size = ", ".join(facts.built_size)
        if len(facts.built_size) == 1 and size.startswith(("(", "[")):
            size = size[1:-1]  # torch.full((n, n), ...)
        # The sizes come from where the mask is used; slice in place only when the buffer is read
        # in that same expression (`mask = self.mask.bool()` earlier may precede the scores).
        local = _find_buffer(mask_node, facts.buffer_attr) is buffer
        fix = slice_buffer(ctx.module, buffer, rows, cols) if rows and local else None
        ctx.report(
            buffer,
            f"`self.{facts.buffer_attr}` was built as ({size}) and is used whole: inputs shorter than "
            "that fail; slice it to the current length",
            fix=fix,
        )

    VALID = [
        # The course notes: sliced to num_tokens.
        Valid(
            """
            import torch
            import torch.nn as nn
            class CausalAttention(nn.Module):
                def __init__(self, context_length):
                    super().__init__()
                    mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)
                    self.register_buffer("mask", mask.bool())
                def forward(self, x):
                    b, num_tokens, d_in = x.shape
                    attn_scores = self.W_q(x) @ self.W_k(x).transpose(1, 2)
                    attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
                    return attn_scores
            """
        ),
        # nanoGPT.
        Valid(
            """
            import torch
            import torch.nn as nn
            class CausalSelfAttention(nn.Module):
                def __init__(self, config):
                    super().__init__()
                    self.register_buffer("bias", torch.tril(torch.ones(config.block_size, config.block_size))
                                                .view(1, 1, config.block_size, config.block_size))
                def forward(self, att, T):
                    return att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
            """
        ),
        # KV-cache offset slice.
        Valid(
            """
            import torch
            import torch.nn as nn
            class A(nn.Module):
                def __init__(self, n):
                    super().__init__()
                    self.register_buffer("causal", torch.tril(torch.ones(n, n, dtype=torch.bool)))
                def forward(self, s, start, T):
                    return torch.where(self.causal[start:start + T, :start + T], s, float("-inf"))
            """
        ),
        # Mask built at the right size in forward.
        Valid(
            """
            import torch
            def forward(self, s):
                T = s.size(-1)
                mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
                return s.masked_fill(mask, float("-inf"))
            """
        ),
        # A buffer that is not a mask.
        Valid(
            """
            import torch
            import torch.nn as nn
            class A(nn.Module):
                def __init__(self, n):
                    super().__init__()
                    self.register_buffer("scale", torch.ones(n))
                def forward(self, s):
                    return s * self.scale
            """
        ),
    ]

    INVALID = [
        # An additive -inf causal buffer added whole.
        Invalid(
            """
            import torch
            import torch.nn as nn
            class A(nn.Module):
                def __init__(self, block_size):
                    super().__init__()
                    self.register_buffer("mask", torch.triu(torch.full((block_size, block_size), float("-inf")), diagonal=1))
                def forward(self, q, k):
                    att = q @ k.transpose(-2, -1) * q.size(-1) ** -0.5
                    att = att + self.mask
                    return att.softmax(-1)
            """,
            fixed="""
            import torch
            import torch.nn as nn
            class A(nn.Module):
                def __init__(self, block_size):
                    super().__init__()
                    self.register_buffer("mask", torch.triu(torch.full((block_size, block_size), float("-inf")), diagonal=1))
                def forward(self, q, k):
                    att = q @ k.transpose(-2, -1) * q.size(-1) ** -0.5
                    att = att + self.mask[..., :att.size(-2), :att.size(-1)]
                    return att.softmax(-1)
            """,
        ),
        # The buffer read into a variable first (reported where it is read; no fix there).
        Invalid(
            """
            import torch
            import torch.nn as nn
            class A(nn.Module):
                def __init__(self, d_in, d_out, context_length):
                    super().__init__()
                    self.W_query = nn.Linear(d_in, d_out)
                    self.W_key = nn.Linear(d_in, d_out)
                    self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))
                def forward(self, x):
                    queries, keys = self.W_query(x), self.W_key(x)
                    attn_scores = queries @ keys.transpose(2, 3)
                    mask_bool = self.mask.bool()
                    attn_scores.masked_fill_(mask_bool, -torch.inf)
                    return attn_scores
            """,
        ),
        # The course notes' CausalAttention without the slice.
        Invalid(
            """
            import torch
            import torch.nn as nn
            class CausalAttention(nn.Module):
                def __init__(self, context_length):
                    super().__init__()
                    mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)
                    self.register_buffer("mask", mask.bool())
                def forward(self, x):
                    attn_scores = self.W_q(x) @ self.W_k(x).transpose(1, 2)
                    attn_scores.masked_fill_(self.mask.bool(), -torch.inf)
                    return attn_scores
            """,
            fixed="""
            import torch
            import torch.nn as nn
            class CausalAttention(nn.Module):
                def __init__(self, context_length):
                    super().__init__()
                    mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)
                    self.register_buffer("mask", mask.bool())
                def forward(self, x):
                    attn_scores = self.W_q(x) @ self.W_k(x).transpose(1, 2)
                    attn_scores.masked_fill_(self.mask[..., :attn_scores.size(-2), :attn_scores.size(-1)].bool(), -torch.inf)
                    return attn_scores
            """,
            line=10,
            column=33,
        ),
        # nanoGPT's bias buffer compared whole.
        Invalid(
            """
            import torch
            import torch.nn as nn
            class CausalSelfAttention(nn.Module):
                def __init__(self, config):
                    super().__init__()
                    self.register_buffer("bias", torch.tril(torch.ones(config.block_size, config.block_size))
                                                .view(1, 1, config.block_size, config.block_size))
                def forward(self, att):
                    return att.masked_fill(self.bias == 0, float("-inf"))
            """,
            fixed="""
            import torch
            import torch.nn as nn
            class CausalSelfAttention(nn.Module):
                def __init__(self, config):
                    super().__init__()
                    self.register_buffer("bias", torch.tril(torch.ones(config.block_size, config.block_size))
                                                .view(1, 1, config.block_size, config.block_size))
                def forward(self, att):
                    return att.masked_fill(self.bias[..., :att.size(-2), :att.size(-1)] == 0, float("-inf"))
            """,
        ),
        # torch.where with a bool buffer.
        Invalid(
            """
            import torch
            import torch.nn as nn
            class A(nn.Module):
                def __init__(self, max_len):
                    super().__init__()
                    self.register_buffer("causal", torch.tril(torch.ones(max_len, max_len, dtype=torch.bool)))
                def forward(self, scores):
                    return torch.where(self.causal, scores, float("-inf"))
            """,
            fixed="""
            import torch
            import torch.nn as nn
            class A(nn.Module):
                def __init__(self, max_len):
                    super().__init__()
                    self.register_buffer("causal", torch.tril(torch.ones(max_len, max_len, dtype=torch.bool)))
                def forward(self, scores):
                    return torch.where(self.causal[..., :scores.size(-2), :scores.size(-1)], scores, float("-inf"))
            """,
        ),
        # SDPA attn_mask from a buffer.
        Invalid(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F
            class A(nn.Module):
                def __init__(self, context_length):
                    super().__init__()
                    self.register_buffer("mask", torch.tril(torch.ones(context_length, context_length)).bool())
                def forward(self, q, k, v):
                    return F.scaled_dot_product_attention(q, k, v, attn_mask=self.mask)
            """,
            fixed="""
            import torch
            import torch.nn as nn
            import torch.nn.functional as F
            class A(nn.Module):
                def __init__(self, context_length):
                    super().__init__()
                    self.register_buffer("mask", torch.tril(torch.ones(context_length, context_length)).bool())
                def forward(self, q, k, v):
                    return F.scaled_dot_product_attention(q, k, v, attn_mask=self.mask[..., :q.size(-2), :k.size(-2)])
            """,
        ),
        # Additive use of a float causal buffer.
        Invalid(
            """
            import torch
            import torch.nn as nn
            class A(nn.Module):
                def __init__(self, block_size):
                    super().__init__()
                    self.register_buffer("mask", torch.triu(torch.ones(block_size, block_size), diagonal=1).bool())
                def forward(self, q, k):
                    s = q @ k.transpose(-2, -1) * self.scale
                    s = s.masked_fill(self.mask, float("-inf"))
                    return s.softmax(-1)
            """,
            fixed="""
            import torch
            import torch.nn as nn
            class A(nn.Module):
                def __init__(self, block_size):
                    super().__init__()
                    self.register_buffer("mask", torch.triu(torch.ones(block_size, block_size), diagonal=1).bool())
                def forward(self, q, k):
                    s = q @ k.transpose(-2, -1) * self.scale
                    s = s.masked_fill(self.mask[..., :s.size(-2), :s.size(-1)], float("-inf"))
                    return s.softmax(-1)
            """,
        ),
    ]


def _positional(call: cst.Call, index: int) -> Optional[cst.BaseExpression]:
    positional = [a for a in call.args if a.keyword is None and not a.star]
    return positional[index].value if index < len(positional) else None


def _find_buffer(node: cst.CSTNode, attr: str) -> Optional[cst.Attribute]:
    """The `self.<attr>` expression inside a mask expression."""
    if isinstance(node, cst.Attribute) and node.attr.value == attr and isinstance(node.value, cst.Name) \
            and node.value.value == "self":
        return node
    for child in node.children:
        found = _find_buffer(child, attr)
        if found is not None:
            return found
    return None
