"""ATN204 unsliced-causal-mask."""

from __future__ import annotations

import libcst as cst

from attnlint.analysis import masks
from attnlint.analysis.calls import positional
from attnlint.diagnostics import Applicability
from attnlint.analysis.names import contains, names_in
from attnlint.fixers import statement_taking_a_line_before
from attnlint.fixers.masking import LengthReads, is_repeatable, slice_buffer
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

    ## Fix safety
    The fix is safe: when the input is `context_length` long the slice is the whole buffer, so
    the output is bit-identical; shorter inputs used to raise. The fix slices the *last* rows
    (`[..., K - Q:K, :K]` for Q queries and K keys), which is `[:T, :T]` when Q = K and stays right
    while decoding with a KV cache (one query against T keys). `...` keeps leading dims, so
    `(1, 1, T, T)` buffers work too.

    The lengths are written by name. When the code has names for them (`B, T, C = x.size()`),
    the fix uses those: `self.bias[..., :T, :T]` where the scores are shown to be (T, T). Otherwise
    it adds one line before the statement, `q_len, k_len = att.shape[-2:]`, and slices with
    `[..., k_len - q_len:k_len, :k_len]`. Where no line can go before the statement (a one-line
    `if` suite, a comprehension) the finding has no fix.
    """

    code = "ATN204"
    name = "unsliced-causal-mask"
    summary = "a mask buffer built at a fixed size is applied without slicing to the current length"
    fix_availability = FixAvailability.SOMETIMES
    fix_applicability = Applicability.SAFE
    # A fixed-size mask kept on the module: a registered buffer, or a tensor attribute built in
    # __init__ (`self.mask = torch.tril(...)`).
    triggers = ("register_buffer", "tril", "triu")
    recipe = "unsliced_causal_mask"

    def check(self, ctx: RuleContext) -> None:
        seen = set()
        # A function that asserts the lengths itself (`assert T == self.context_length`) uses
        # the whole buffer on purpose.
        for function in ctx.analysis.functions:
            if function.length_checked:
                continue
            for fill in function.fill_sites:
                reads = None
                if fill.receiver_node is not None and is_repeatable(fill.receiver_node):
                    subject = ctx.code(fill.receiver_node)
                    reads = LengthReads(both=f"{subject}.shape[-2:]", keys=f"{subject}.size(-1)")
                self._check_mask(ctx, function, fill.mask, fill.mask_node, fill.lengths, reads, seen)
            for use in function.mask_uses:
                reads = None
                if use.api == "sdpa":
                    q, k = (positional(use.call, 0), positional(use.call, 1))
                    if q is not None and k is not None and is_repeatable(q) and is_repeatable(k):
                        q_len, k_len = f"{ctx.code(q)}.size(-2)", f"{ctx.code(k)}.size(-2)"
                        reads = LengthReads(both=f"{q_len}, {k_len}", keys=k_len)
                self._check_mask(ctx, function, use.mask, use.mask_node, use.lengths, reads, seen)

    def _check_mask(self, ctx, function, value, mask_node, lengths, reads, seen) -> None:
        facts = value.mask
        if facts is None or facts.origin != "causal" or not facts.buffer_attr or not facts.built_size or facts.sliced:
            return  # a fixed-size mask that is not causal (Swin's window masks) is used whole by design
        buffer = facts.buffer_node or masks.buffer_read(mask_node, facts.buffer_attr)
        if buffer is None or id(buffer) in seen:
            return
        seen.add(id(buffer))
        size = ", ".join(facts.built_size)
        if len(facts.built_size) == 1 and size.startswith(("(", "[")):
            size = size[1:-1]  # torch.full((n, n), ...)
        # The sizes come from where the mask is used; slice in place only when the buffer is read
        # in that same expression (`mask = self.mask.bool()` earlier may precede the scores).
        fix = None
        where = buffer
        if masks.buffer_read(mask_node, facts.buffer_attr) is buffer:
            statement = statement_taking_a_line_before(ctx.analysis, buffer)
            taken = names_in(function.node or ctx.module) if statement is not None else ()
            fix = slice_buffer(ctx.module, buffer, lengths, reads, statement, taken)
        elif contains(function.node, buffer) or (
            ctx.analysis.in_property(buffer) and isinstance(function.node, cst.FunctionDef) and contains(function.node, mask_node)
        ):
            # Read into a name first (`mask = self.mask.bool()`), or by a property (`def
            # causal_mask(self): return self.bias`): the use, where the sizes clash.
            where = mask_node
        ctx.report(
            where,
            f"`self.{facts.buffer_attr}` was built as ({size}) and is not sliced to the current length: "
            "inputs shorter than that fail",
            fix=fix,
        )

    VALID = [
        # The property's buffer, sliced where it is used.
        Valid(
            """
            import math
            import torch
            import torch.nn as nn
            import torch.nn.functional as F


            class CausalSelfAttention(nn.Module):
                def __init__(self, n_embd, n_head, block_size):
                    super().__init__()
                    self.n_head = n_head
                    self.c_attn = nn.Linear(n_embd, 3 * n_embd)
                    self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size))

                @property
                def causal_mask(self):
                    return self.bias

                def forward(self, x):
                    B, T, C = x.size()
                    q, k, v = self.c_attn(x).split(C, dim=2)
                    q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
                    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
                    att = att.masked_fill(self.causal_mask[:, :, :T, :T] == 0, float("-inf"))
                    return F.softmax(att, dim=-1) @ v
            """
        ),
        # The code asserts the full length itself.
        Valid(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F


            class A(nn.Module):
                def __init__(self, context_length):
                    super().__init__()
                    self.context_length = context_length
                    self.register_buffer("mask", torch.tril(torch.ones(context_length, context_length, dtype=torch.bool)))

                def forward(self, q, k, v):
                    assert q.size(-2) == self.context_length
                    return F.scaled_dot_product_attention(q, k, v, attn_mask=self.mask)
            """
        ),
        # A fixed-size mask that is not causal (a window layout) is used whole by design.
        Valid(
            """
            import torch
            import torch.nn as nn
            class WindowAttention(nn.Module):
                def __init__(self, window_size):
                    super().__init__()
                    n = window_size * window_size
                    mask = torch.zeros(n, n)
                    mask[: n // 2, n // 2 :] = float("-inf")
                    self.register_buffer("attn_mask", mask)
                def forward(self, attn):
                    return (attn + self.attn_mask).softmax(-1)
            """
        ),
        # gpt-fast: rows gathered by the KV-cache positions.
        Valid(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F
            class A(nn.Module):
                def __init__(self, max_seq_length):
                    super().__init__()
                    self.register_buffer("causal_mask", torch.tril(torch.ones(max_seq_length, max_seq_length, dtype=torch.bool)))
                def forward(self, q, k, v, input_pos):
                    mask = self.causal_mask[None, None, input_pos]
                    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            """
        ),
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
        # The course notes' MultiHeadAttention: sliced into mask_bool first.
        Valid(
            """
            import torch
            import torch.nn as nn
            class MultiHeadAttention(nn.Module):
                def __init__(self, d_in, d_out, context_length, num_heads):
                    super().__init__()
                    self.W_query = nn.Linear(d_in, d_out)
                    self.W_key = nn.Linear(d_in, d_out)
                    self.num_heads = num_heads
                    self.head_dim = d_out // num_heads
                    self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))
                def forward(self, x):
                    b, num_tokens, d_in = x.shape
                    queries = self.W_query(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
                    keys = self.W_key(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
                    attn_scores = queries @ keys.transpose(2, 3)
                    mask_bool = self.mask.bool()[:num_tokens, :num_tokens]
                    attn_scores.masked_fill_(mask_bool, -torch.inf)
                    return attn_scores
            """
        ),
        # nanoGPT in full: `self.bias[:, :, :T, :T]`.
        Valid(
            """
            import math
            import torch
            import torch.nn as nn
            import torch.nn.functional as F
            class CausalSelfAttention(nn.Module):
                def __init__(self, config):
                    super().__init__()
                    self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
                    self.n_head = config.n_head
                    self.n_embd = config.n_embd
                    self.register_buffer("bias", torch.tril(torch.ones(config.block_size, config.block_size))
                                                .view(1, 1, config.block_size, config.block_size))
                def forward(self, x):
                    B, T, C = x.size()
                    q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
                    k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                    q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                    v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
                    att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
                    att = F.softmax(att, dim=-1)
                    return att @ v
            """
        ),
        # Karpathy's Head: `self.tril[:T, :T]`.
        Valid(
            """
            import torch
            import torch.nn as nn
            from torch.nn import functional as F
            block_size = 256
            class Head(nn.Module):
                def __init__(self, n_embd, head_size):
                    super().__init__()
                    self.key = nn.Linear(n_embd, head_size, bias=False)
                    self.query = nn.Linear(n_embd, head_size, bias=False)
                    self.register_buffer('tril', torch.tril(torch.ones(block_size, block_size)))
                def forward(self, x):
                    B, T, C = x.shape
                    k = self.key(x)
                    q = self.query(x)
                    wei = q @ k.transpose(-2, -1) * k.shape[-1] ** -0.5
                    wei = wei.masked_fill(self.tril[:T, :T] == 0, float('-inf'))
                    return F.softmax(wei, dim=-1)
            """
        ),
        # A causal mask built in forward at the current length.
        Valid(
            """
            import torch
            import torch.nn as nn
            class Attention(nn.Module):
                def forward(self, q, k, v):
                    T = q.size(-2)
                    causal = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
                    att = (q @ k.transpose(-2, -1)).masked_fill(~causal, float("-inf"))
                    return att.softmax(-1) @ v
            """
        ),
        # Rotary caches are buffers but not masks.
        Valid(
            """
            import torch
            import torch.nn as nn
            class Rotary(nn.Module):
                def __init__(self, dim, max_seq_len):
                    super().__init__()
                    inv_freq = 1.0 / (10000 ** (torch.arange(0, dim, 2).float() / dim))
                    t = torch.arange(max_seq_len).float()
                    freqs = torch.outer(t, inv_freq)
                    self.register_buffer("cos_cached", freqs.cos(), persistent=False)
                    self.register_buffer("sin_cached", freqs.sin(), persistent=False)
                def forward(self, x):
                    return x * self.cos_cached + x.flip(-1) * self.sin_cached
            """
        ),
        # SDPA with a sliced persistent=False buffer.
        Valid(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F
            class Attention(nn.Module):
                def __init__(self, block_size):
                    super().__init__()
                    self.register_buffer("mask", torch.tril(torch.ones(block_size, block_size, dtype=torch.bool)), persistent=False)
                def forward(self, q, k, v):
                    T = q.size(-2)
                    return F.scaled_dot_product_attention(q, k, v, attn_mask=self.mask[:T, :T])
            """
        ),
        # nn.MultiheadAttention with a sliced buffer.
        Valid(
            """
            import torch
            import torch.nn as nn
            class Block(nn.Module):
                def __init__(self, d_model, n_head, block_size):
                    super().__init__()
                    self.attn = nn.MultiheadAttention(d_model, n_head, batch_first=True)
                    self.register_buffer("attn_mask", torch.triu(torch.ones(block_size, block_size, dtype=torch.bool), diagonal=1))
                def forward(self, x):
                    T = x.size(1)
                    out, _ = self.attn(x, x, x, attn_mask=self.attn_mask[:T, :T], need_weights=False)
                    return out
            """
        ),
        # KV cache: a 4-d buffer sliced from the cache offset.
        Valid(
            """
            import torch
            import torch.nn as nn
            class CachedAttention(nn.Module):
                def __init__(self, config):
                    super().__init__()
                    n = config.block_size
                    self.register_buffer("bias", torch.tril(torch.ones(n, n)).view(1, 1, n, n))
                def forward(self, q, k, start_pos):
                    T = q.size(2)
                    att = q @ k.transpose(-2, -1)
                    att = att.masked_fill(self.bias[:, :, start_pos:start_pos + T, :start_pos + T] == 0, float("-inf"))
                    return att.softmax(-1)
            """
        ),
        # The fix's own form: `[..., :s.size(-2), :s.size(-1)]`.
        Valid(
            """
            import torch
            import torch.nn as nn
            class Attention(nn.Module):
                def __init__(self, block_size):
                    super().__init__()
                    self.register_buffer("mask", torch.triu(torch.full((block_size, block_size), float("-inf")), diagonal=1))
                def forward(self, q, k):
                    att = q @ k.transpose(-2, -1)
                    att = att + self.mask[..., :att.size(-2), :att.size(-1)]
                    return att.softmax(-1)
            """
        ),
        # The buffer rebuilt when the input grows past it, then sliced.
        Valid(
            """
            import torch
            import torch.nn as nn
            class Attention(nn.Module):
                def __init__(self, block_size):
                    super().__init__()
                    self.register_buffer("mask", torch.triu(torch.ones(block_size, block_size, dtype=torch.bool), diagonal=1), persistent=False)
                def forward(self, scores):
                    T = scores.size(-1)
                    if T > self.mask.size(-1):
                        self.mask = torch.triu(torch.ones(T, T, dtype=torch.bool, device=scores.device), diagonal=1)
                    return scores.masked_fill(self.mask[:T, :T], float("-inf"))
            """
        ),
        # The attribute rebuilt at the current length in forward.
        Valid(
            """
            import torch
            import torch.nn as nn
            class Attention(nn.Module):
                def __init__(self, block_size):
                    super().__init__()
                    self.register_buffer("mask", torch.triu(torch.ones(block_size, block_size, dtype=torch.bool), diagonal=1), persistent=False)
                def forward(self, scores):
                    T = scores.size(-1)
                    self.mask = torch.triu(torch.ones(T, T, dtype=torch.bool, device=scores.device), diagonal=1)
                    return scores.masked_fill(self.mask, float("-inf"))
            """
        ),
        # A helper method of the class that slices before filling.
        Valid(
            """
            import torch
            import torch.nn as nn
            class Attention(nn.Module):
                def __init__(self, max_len):
                    super().__init__()
                    self.register_buffer("causal", torch.tril(torch.ones(max_len, max_len)).bool())
                def _apply_mask(self, scores):
                    n = scores.size(-1)
                    return scores.masked_fill(~self.causal[:n, :n], float("-inf"))
                def forward(self, q, k):
                    return self._apply_mask(q @ k.transpose(-2, -1)).softmax(-1)
            """
        ),
        # torch.where with a KV-cache offset slice from scores.shape.
        Valid(
            """
            import torch
            import torch.nn as nn
            class Attention(nn.Module):
                def __init__(self, config):
                    super().__init__()
                    self.register_buffer("causal", torch.tril(torch.ones(config.block_size, config.block_size, dtype=torch.bool)))
                def forward(self, scores, offset):
                    q_len, k_len = scores.shape[-2:]
                    return torch.where(self.causal[offset:offset + q_len, :k_len], scores, float("-inf"))
            """
        ),
        # ALiBi slopes and a scale: buffers that are not masks.
        Valid(
            """
            import torch
            import torch.nn as nn
            class Attention(nn.Module):
                def __init__(self, n_heads):
                    super().__init__()
                    self.register_buffer("slopes", torch.tensor([2 ** (-8 * (i + 1) / n_heads) for i in range(n_heads)]).view(1, n_heads, 1, 1))
                    self.register_buffer("scale", torch.tensor(64 ** -0.5))
                def forward(self, scores):
                    return scores * self.scale
            """
        ),
        # A mask argument (not a buffer) used whole.
        Valid(
            """
            import torch
            import torch.nn as nn
            class Attention(nn.Module):
                def __init__(self, block_size):
                    super().__init__()
                    self.register_buffer("pos", torch.arange(block_size))
                def forward(self, scores, mask):
                    return scores.masked_fill(mask == 0, float("-inf")).softmax(-1)
            """
        ),
        # Flash path with is_causal, sliced fallback path.
        Valid(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F
            class Attention(nn.Module):
                def __init__(self, config):
                    super().__init__()
                    self.flash = hasattr(F, "scaled_dot_product_attention")
                    if not self.flash:
                        self.register_buffer("bias", torch.tril(torch.ones(config.block_size, config.block_size)).view(1, 1, config.block_size, config.block_size))
                def forward(self, q, k, v):
                    if self.flash:
                        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
                    T = q.size(-2)
                    att = (q @ k.transpose(-2, -1)).masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
                    return att.softmax(-1) @ v
            """
        ),
        # register_buffer(name=..., tensor=...) and a slice.
        Valid(
            """
            import torch
            import torch.nn as nn
            class Attention(nn.Module):
                def __init__(self, context_length):
                    super().__init__()
                    self.register_buffer(name="mask", tensor=torch.triu(torch.ones(context_length, context_length), diagonal=1))
                def forward(self, q, k):
                    scores = q @ k.transpose(-2, -1)
                    n = scores.shape[-1]
                    scores.masked_fill_(self.mask.bool()[:n, :n], -torch.inf)
                    return scores
            """
        ),
        # narrow() to the current length.
        Valid(
            """
            import torch
            import torch.nn as nn
            class Attention(nn.Module):
                def __init__(self, block_size):
                    super().__init__()
                    self.register_buffer("mask", torch.triu(torch.ones(block_size, block_size, dtype=torch.bool), diagonal=1))
                def forward(self, scores):
                    T = scores.size(-1)
                    return scores.masked_fill(self.mask.narrow(0, 0, T).narrow(1, 0, T), float("-inf"))
            """
        ),
        # The buffer read into a local, then sliced.
        Valid(
            """
            import torch
            import torch.nn as nn
            class A(nn.Module):
                def __init__(self, block_size):
                    super().__init__()
                    self.register_buffer("mask", torch.triu(torch.ones(block_size, block_size), diagonal=1).bool())
                def forward(self, att):
                    T = att.size(-1)
                    mask = self.mask
                    return att.masked_fill(mask[:T, :T], float("-inf"))
            """
        ),
        # A getter method returns the sliced buffer.
        Valid(
            """
            import torch
            import torch.nn as nn
            class A(nn.Module):
                def __init__(self, block_size):
                    super().__init__()
                    self.register_buffer("mask", torch.triu(torch.ones(block_size, block_size), diagonal=1).bool())
                def get_mask(self, T):
                    return self.mask[:T, :T]
                def forward(self, att):
                    return att.masked_fill(self.get_mask(att.size(-1)), float("-inf"))
            """
        ),
        # A mask attribute rebuilt in forward at the current length is not fixed.
        Valid(
            """
            import torch
            import torch.nn as nn
            class Attention(nn.Module):
                def forward(self, scores):
                    T = scores.size(-1)
                    self.future = torch.ones(T, T, device=scores.device).triu(1).bool()
                    return scores.masked_fill(self.future, float("-inf")).softmax(-1)
            """
        ),
        # A sliced ALiBi + causal buffer.
        Valid(
            """
            import torch
            import torch.nn as nn


            class AlibiAttention(nn.Module):
                def __init__(self, heads, max_len=1024):
                    super().__init__()
                    pos = torch.arange(max_len)
                    slopes = 2.0 ** -torch.arange(1, heads + 1)
                    distance = (pos[None, :] - pos[:, None]).clamp(max=0).float()
                    future = torch.full((max_len, max_len), float("-inf")).triu(1)
                    self.register_buffer("bias", (slopes[:, None, None] * distance + future).unsqueeze(0))

                def forward(self, q, k, v):
                    n = q.size(-2)
                    s = q @ k.transpose(-2, -1) * q.size(-1) ** -0.5
                    return (s + self.bias[:, :, :n, :n]).softmax(-1) @ v
            """
        ),
    ]

    INVALID = [
        # nanoGPT with the mask behind a property that returns the whole buffer.
        Invalid(
            """
            import math
            import torch
            import torch.nn as nn
            import torch.nn.functional as F


            class CausalSelfAttention(nn.Module):
                def __init__(self, n_embd, n_head, block_size):
                    super().__init__()
                    self.n_head = n_head
                    self.c_attn = nn.Linear(n_embd, 3 * n_embd)
                    self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size))

                @property
                def causal_mask(self):
                    return self.bias

                def forward(self, x):
                    B, T, C = x.size()
                    q, k, v = self.c_attn(x).split(C, dim=2)
                    q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
                    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
                    att = att.masked_fill(self.causal_mask == 0, float("-inf"))
                    return F.softmax(att, dim=-1) @ v
            """,
            line=23,
        ),
        # Only the rows are sliced: the keys stay at block_size.
        Invalid(
            """
            import torch
            import torch.nn as nn
            class A(nn.Module):
                def __init__(self, block_size):
                    super().__init__()
                    self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size))
                def forward(self, att, T):
                    return att.masked_fill(self.bias[:, :, :T] == 0, float("-inf"))
            """,
            fixed="""
            import torch
            import torch.nn as nn
            class A(nn.Module):
                def __init__(self, block_size):
                    super().__init__()
                    self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size))
                def forward(self, att, T):
                    q_len, k_len = att.shape[-2:]
                    return att.masked_fill(self.bias[..., k_len - q_len:k_len, :k_len][:, :, :T] == 0, float("-inf"))
            """,
        ),
        # The functional torch.masked_fill.
        Invalid(
            """
            import torch
            import torch.nn as nn
            class A(nn.Module):
                def __init__(self, max_len):
                    super().__init__()
                    self.register_buffer("mask", torch.triu(torch.ones(max_len, max_len, dtype=torch.bool), 1))
                def forward(self, scores):
                    return torch.masked_fill(scores, self.mask, float("-inf"))
            """,
            fixed="""
            import torch
            import torch.nn as nn
            class A(nn.Module):
                def __init__(self, max_len):
                    super().__init__()
                    self.register_buffer("mask", torch.triu(torch.ones(max_len, max_len, dtype=torch.bool), 1))
                def forward(self, scores):
                    q_len, k_len = scores.shape[-2:]
                    return torch.masked_fill(scores, self.mask[..., k_len - q_len:k_len, :k_len], float("-inf"))
            """,
        ),
        # nn.Transformer.generate_square_subsequent_mask as a fixed-size buffer (no fix for nn.Transformer* masks).
        Invalid(
            """
            import torch.nn as nn
            class A(nn.Module):
                def __init__(self, d, block_size):
                    super().__init__()
                    layer = nn.TransformerEncoderLayer(d, 4, batch_first=True)
                    self.encoder = nn.TransformerEncoder(layer, 2)
                    self.register_buffer("causal_mask", nn.Transformer.generate_square_subsequent_mask(block_size))
                def forward(self, x):
                    return self.encoder(x, mask=self.causal_mask)
            """,
        ),
        # register_buffer with keyword arguments in any order.
        Invalid(
            """
            import torch
            import torch.nn as nn
            class A(nn.Module):
                def __init__(self, n):
                    super().__init__()
                    self.register_buffer(tensor=torch.tril(torch.ones(n, n, dtype=torch.bool)), name="causal_mask")
                def forward(self, s):
                    return s.masked_fill(~self.causal_mask, float("-inf"))
            """,
            fixed="""
            import torch
            import torch.nn as nn
            class A(nn.Module):
                def __init__(self, n):
                    super().__init__()
                    self.register_buffer(tensor=torch.tril(torch.ones(n, n, dtype=torch.bool)), name="causal_mask")
                def forward(self, s):
                    q_len, k_len = s.shape[-2:]
                    return s.masked_fill(~self.causal_mask[..., k_len - q_len:k_len, :k_len], float("-inf"))
            """,
        ),
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
                    q_len, k_len = att.shape[-2:]
                    att = att + self.mask[..., k_len - q_len:k_len, :k_len]
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
                    q_len, k_len = attn_scores.shape[-2:]
                    attn_scores.masked_fill_(self.mask[..., k_len - q_len:k_len, :k_len].bool(), -torch.inf)
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
                    q_len, k_len = att.shape[-2:]
                    return att.masked_fill(self.bias[..., k_len - q_len:k_len, :k_len] == 0, float("-inf"))
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
                    q_len, k_len = scores.shape[-2:]
                    return torch.where(self.causal[..., k_len - q_len:k_len, :k_len], scores, float("-inf"))
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
                    q_len, k_len = q.size(-2), k.size(-2)
                    return F.scaled_dot_product_attention(q, k, v, attn_mask=self.mask[..., k_len - q_len:k_len, :k_len])
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
                    q_len, k_len = s.shape[-2:]
                    s = s.masked_fill(self.mask[..., k_len - q_len:k_len, :k_len], float("-inf"))
                    return s.softmax(-1)
            """,
        ),
        # nanoGPT's attention in full, the (1, 1, block_size, block_size) bias compared whole.
        Invalid(
            """
            import math
            import torch
            import torch.nn as nn
            import torch.nn.functional as F
            class CausalSelfAttention(nn.Module):
                def __init__(self, config):
                    super().__init__()
                    self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
                    self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
                    self.n_head = config.n_head
                    self.n_embd = config.n_embd
                    self.register_buffer("bias", torch.tril(torch.ones(config.block_size, config.block_size))
                                                .view(1, 1, config.block_size, config.block_size))
                def forward(self, x):
                    B, T, C = x.size()
                    q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
                    k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                    q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                    v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
                    att = att.masked_fill(self.bias == 0, float("-inf"))
                    att = F.softmax(att, dim=-1)
                    y = att @ v
                    y = y.transpose(1, 2).contiguous().view(B, T, C)
                    return self.c_proj(y)
            """,
            fixed="""
            import math
            import torch
            import torch.nn as nn
            import torch.nn.functional as F
            class CausalSelfAttention(nn.Module):
                def __init__(self, config):
                    super().__init__()
                    self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
                    self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
                    self.n_head = config.n_head
                    self.n_embd = config.n_embd
                    self.register_buffer("bias", torch.tril(torch.ones(config.block_size, config.block_size))
                                                .view(1, 1, config.block_size, config.block_size))
                def forward(self, x):
                    B, T, C = x.size()
                    q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
                    k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                    q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                    v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
                    att = att.masked_fill(self.bias[..., :T, :T] == 0, float("-inf"))
                    att = F.softmax(att, dim=-1)
                    y = att @ v
                    y = y.transpose(1, 2).contiguous().view(B, T, C)
                    return self.c_proj(y)
            """,
            line=21,
            column=30,
            page=True,
        ),
        # A bool triu buffer registered with persistent=False.
        Invalid(
            """
            import torch
            import torch.nn as nn
            class Attention(nn.Module):
                def __init__(self, block_size):
                    super().__init__()
                    self.register_buffer(
                        "mask", torch.triu(torch.ones(block_size, block_size, dtype=torch.bool), diagonal=1), persistent=False
                    )
                def forward(self, q, k, v):
                    scores = q @ k.transpose(-2, -1) / q.size(-1) ** 0.5
                    scores = scores.masked_fill(self.mask, float("-inf"))
                    return scores.softmax(dim=-1) @ v
            """,
            fixed="""
            import torch
            import torch.nn as nn
            class Attention(nn.Module):
                def __init__(self, block_size):
                    super().__init__()
                    self.register_buffer(
                        "mask", torch.triu(torch.ones(block_size, block_size, dtype=torch.bool), diagonal=1), persistent=False
                    )
                def forward(self, q, k, v):
                    scores = q @ k.transpose(-2, -1) / q.size(-1) ** 0.5
                    q_len, k_len = scores.shape[-2:]
                    scores = scores.masked_fill(self.mask[..., k_len - q_len:k_len, :k_len], float("-inf"))
                    return scores.softmax(dim=-1) @ v
            """,
            line=11,
            column=36,
        ),
        # register_buffer(name=..., tensor=...) keyword form.
        Invalid(
            """
            import torch
            import torch.nn as nn
            class Attention(nn.Module):
                def __init__(self, context_length):
                    super().__init__()
                    self.register_buffer(name="mask", tensor=torch.triu(torch.ones(context_length, context_length), diagonal=1))
                def forward(self, q, k):
                    scores = q @ k.transpose(-2, -1)
                    scores.masked_fill_(self.mask.bool(), -torch.inf)
                    return scores
            """,
            fixed="""
            import torch
            import torch.nn as nn
            class Attention(nn.Module):
                def __init__(self, context_length):
                    super().__init__()
                    self.register_buffer(name="mask", tensor=torch.triu(torch.ones(context_length, context_length), diagonal=1))
                def forward(self, q, k):
                    scores = q @ k.transpose(-2, -1)
                    q_len, k_len = scores.shape[-2:]
                    scores.masked_fill_(self.mask[..., k_len - q_len:k_len, :k_len].bool(), -torch.inf)
                    return scores
            """,
            line=9,
            column=28,
        ),
        # nn.MultiheadAttention's attn_mask from a buffer (no fix: the query length is not at hand).
        Invalid(
            """
            import torch
            import torch.nn as nn
            class Block(nn.Module):
                def __init__(self, d_model, n_head, block_size):
                    super().__init__()
                    self.attn = nn.MultiheadAttention(d_model, n_head, batch_first=True)
                    self.register_buffer("attn_mask", torch.triu(torch.ones(block_size, block_size, dtype=torch.bool), diagonal=1))
                def forward(self, x):
                    out, _ = self.attn(x, x, x, attn_mask=self.attn_mask, need_weights=False)
                    return out
            """,
            line=9,
            column=46,
        ),
        # Applied in a helper method of the same class, inverted with `~`.
        Invalid(
            """
            import torch
            import torch.nn as nn
            class Attention(nn.Module):
                def __init__(self, max_len):
                    super().__init__()
                    self.register_buffer("causal", torch.tril(torch.ones(max_len, max_len)).bool())
                def _apply_mask(self, scores):
                    return scores.masked_fill(~self.causal, float("-inf"))
                def forward(self, q, k):
                    return self._apply_mask(q @ k.transpose(-2, -1)).softmax(-1)
            """,
            fixed="""
            import torch
            import torch.nn as nn
            class Attention(nn.Module):
                def __init__(self, max_len):
                    super().__init__()
                    self.register_buffer("causal", torch.tril(torch.ones(max_len, max_len)).bool())
                def _apply_mask(self, scores):
                    q_len, k_len = scores.shape[-2:]
                    return scores.masked_fill(~self.causal[..., k_len - q_len:k_len, :k_len], float("-inf"))
                def forward(self, q, k):
                    return self._apply_mask(q @ k.transpose(-2, -1)).softmax(-1)
            """,
            line=8,
            column=35,
        ),
        # A -inf buffer built with the `.triu(1)` method, added whole.
        Invalid(
            """
            import torch
            import torch.nn as nn
            class Attention(nn.Module):
                def __init__(self, block_size):
                    super().__init__()
                    self.register_buffer("bias", torch.full((block_size, block_size), float("-inf")).triu(1))
                def forward(self, q, k):
                    logits = q @ k.transpose(-2, -1)
                    logits = logits + self.bias
                    return logits.softmax(-1)
            """,
            fixed="""
            import torch
            import torch.nn as nn
            class Attention(nn.Module):
                def __init__(self, block_size):
                    super().__init__()
                    self.register_buffer("bias", torch.full((block_size, block_size), float("-inf")).triu(1))
                def forward(self, q, k):
                    logits = q @ k.transpose(-2, -1)
                    q_len, k_len = logits.shape[-2:]
                    logits = logits + self.bias[..., k_len - q_len:k_len, :k_len]
                    return logits.softmax(-1)
            """,
            line=9,
            column=26,
        ),
        # The course notes' MultiHeadAttention with a cfg dict, without the slice.
        Invalid(
            """
            import torch
            import torch.nn as nn
            class MultiHeadAttention(nn.Module):
                def __init__(self, cfg):
                    super().__init__()
                    self.W_query = nn.Linear(cfg["emb_dim"], cfg["emb_dim"])
                    self.W_key = nn.Linear(cfg["emb_dim"], cfg["emb_dim"])
                    self.register_buffer("mask", torch.triu(torch.ones(cfg["context_length"], cfg["context_length"]), diagonal=1))
                def forward(self, x):
                    b, num_tokens, d = x.shape
                    queries = self.W_query(x).view(b, num_tokens, 4, d // 4).transpose(1, 2)
                    keys = self.W_key(x).view(b, num_tokens, 4, d // 4).transpose(1, 2)
                    attn_scores = queries @ keys.transpose(2, 3)
                    attn_scores.masked_fill_(self.mask.bool(), -torch.inf)
                    return attn_scores
            """,
            fixed="""
            import torch
            import torch.nn as nn
            class MultiHeadAttention(nn.Module):
                def __init__(self, cfg):
                    super().__init__()
                    self.W_query = nn.Linear(cfg["emb_dim"], cfg["emb_dim"])
                    self.W_key = nn.Linear(cfg["emb_dim"], cfg["emb_dim"])
                    self.register_buffer("mask", torch.triu(torch.ones(cfg["context_length"], cfg["context_length"]), diagonal=1))
                def forward(self, x):
                    b, num_tokens, d = x.shape
                    queries = self.W_query(x).view(b, num_tokens, 4, d // 4).transpose(1, 2)
                    keys = self.W_key(x).view(b, num_tokens, 4, d // 4).transpose(1, 2)
                    attn_scores = queries @ keys.transpose(2, 3)
                    attn_scores.masked_fill_(self.mask[..., :num_tokens, :num_tokens].bool(), -torch.inf)
                    return attn_scores
            """,
            line=14,
            column=33,
        ),
        # SDPA with a float -inf buffer passed positionally.
        Invalid(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F
            class Attention(nn.Module):
                def __init__(self, max_seq_len):
                    super().__init__()
                    mask = torch.full((max_seq_len, max_seq_len), float("-inf"))
                    self.register_buffer("attn_bias", torch.triu(mask, diagonal=1), persistent=False)
                def forward(self, q, k, v):
                    return F.scaled_dot_product_attention(q, k, v, self.attn_bias)
            """,
            fixed="""
            import torch
            import torch.nn as nn
            import torch.nn.functional as F
            class Attention(nn.Module):
                def __init__(self, max_seq_len):
                    super().__init__()
                    mask = torch.full((max_seq_len, max_seq_len), float("-inf"))
                    self.register_buffer("attn_bias", torch.triu(mask, diagonal=1), persistent=False)
                def forward(self, q, k, v):
                    q_len, k_len = q.size(-2), k.size(-2)
                    return F.scaled_dot_product_attention(q, k, v, self.attn_bias[..., k_len - q_len:k_len, :k_len])
            """,
            line=10,
            column=55,
        ),
        # Karpathy's Head: the `tril` buffer at the module-level block_size, compared whole.
        Invalid(
            """
            import torch
            import torch.nn as nn
            from torch.nn import functional as F
            block_size = 256
            class Head(nn.Module):
                def __init__(self, n_embd, head_size):
                    super().__init__()
                    self.key = nn.Linear(n_embd, head_size, bias=False)
                    self.query = nn.Linear(n_embd, head_size, bias=False)
                    self.value = nn.Linear(n_embd, head_size, bias=False)
                    self.register_buffer('tril', torch.tril(torch.ones(block_size, block_size)))
                def forward(self, x):
                    B, T, C = x.shape
                    k = self.key(x)
                    q = self.query(x)
                    wei = q @ k.transpose(-2, -1) * k.shape[-1] ** -0.5
                    wei = wei.masked_fill(self.tril == 0, float('-inf'))
                    wei = F.softmax(wei, dim=-1)
                    return wei @ self.value(x)
            """,
            fixed="""
            import torch
            import torch.nn as nn
            from torch.nn import functional as F
            block_size = 256
            class Head(nn.Module):
                def __init__(self, n_embd, head_size):
                    super().__init__()
                    self.key = nn.Linear(n_embd, head_size, bias=False)
                    self.query = nn.Linear(n_embd, head_size, bias=False)
                    self.value = nn.Linear(n_embd, head_size, bias=False)
                    self.register_buffer('tril', torch.tril(torch.ones(block_size, block_size)))
                def forward(self, x):
                    B, T, C = x.shape
                    k = self.key(x)
                    q = self.query(x)
                    wei = q @ k.transpose(-2, -1) * k.shape[-1] ** -0.5
                    wei = wei.masked_fill(self.tril[..., :T, :T] == 0, float('-inf'))
                    wei = F.softmax(wei, dim=-1)
                    return wei @ self.value(x)
            """,
            line=17,
            column=30,
        ),
        # SDPA whose q and k are projection calls: reported, no fix (they would be evaluated twice).
        Invalid(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F
            class Attention(nn.Module):
                def __init__(self, d, block_size):
                    super().__init__()
                    self.q_proj = nn.Linear(d, d)
                    self.k_proj = nn.Linear(d, d)
                    self.v_proj = nn.Linear(d, d)
                    self.register_buffer("mask", torch.ones(block_size, block_size, dtype=torch.bool).tril())
                def forward(self, x):
                    return F.scaled_dot_product_attention(self.q_proj(x), self.k_proj(x), self.v_proj(x), attn_mask=self.mask)
            """,
            line=12,
            column=104,
        ),
        # Hugging Face style: a (1, 1, n, n) bool buffer in torch.where, persistent=False.
        Invalid(
            """
            import torch
            import torch.nn as nn
            class Attention(nn.Module):
                def __init__(self, config):
                    super().__init__()
                    n = config.max_position_embeddings
                    self.register_buffer("causal_mask", torch.tril(torch.ones(n, n, dtype=torch.bool)).view(1, 1, n, n), persistent=False)
                def forward(self, attn_weights):
                    attn_weights = torch.where(self.causal_mask, attn_weights, float("-inf"))
                    return attn_weights.softmax(-1)
            """,
            fixed="""
            import torch
            import torch.nn as nn
            class Attention(nn.Module):
                def __init__(self, config):
                    super().__init__()
                    n = config.max_position_embeddings
                    self.register_buffer("causal_mask", torch.tril(torch.ones(n, n, dtype=torch.bool)).view(1, 1, n, n), persistent=False)
                def forward(self, attn_weights):
                    q_len, k_len = attn_weights.shape[-2:]
                    attn_weights = torch.where(self.causal_mask[..., k_len - q_len:k_len, :k_len], attn_weights, float("-inf"))
                    return attn_weights.softmax(-1)
            """,
            line=9,
            column=35,
        ),
        # The same buffer used whole in two methods: both reported and fixed.
        Invalid(
            """
            import torch
            import torch.nn as nn
            class Attention(nn.Module):
                def __init__(self, block_size):
                    super().__init__()
                    self.register_buffer("mask", torch.triu(torch.ones(block_size, block_size), diagonal=1).bool())
                def forward(self, q, k):
                    s = q @ k.transpose(-2, -1)
                    return s.masked_fill(self.mask, float("-inf")).softmax(-1)
                def scores(self, q, k):
                    s = q @ k.transpose(-2, -1)
                    return s.masked_fill(self.mask, -1e9)
            """,
            fixed="""
            import torch
            import torch.nn as nn
            class Attention(nn.Module):
                def __init__(self, block_size):
                    super().__init__()
                    self.register_buffer("mask", torch.triu(torch.ones(block_size, block_size), diagonal=1).bool())
                def forward(self, q, k):
                    s = q @ k.transpose(-2, -1)
                    q_len, k_len = s.shape[-2:]
                    return s.masked_fill(self.mask[..., k_len - q_len:k_len, :k_len], float("-inf")).softmax(-1)
                def scores(self, q, k):
                    s = q @ k.transpose(-2, -1)
                    q_len, k_len = s.shape[-2:]
                    return s.masked_fill(self.mask[..., k_len - q_len:k_len, :k_len], -1e9)
            """,
            line=9,
            column=29,
        ),
        # An additive -1e9 buffer.
        Invalid(
            """
            import torch
            import torch.nn as nn
            class Attention(nn.Module):
                def __init__(self, seq_len):
                    super().__init__()
                    self.register_buffer("mask", torch.triu(torch.full((seq_len, seq_len), -1e9), diagonal=1))
                def forward(self, q, k, v):
                    att = torch.matmul(q, k.transpose(-2, -1))
                    att = att + self.mask
                    return torch.softmax(att, dim=-1) @ v
            """,
            fixed="""
            import torch
            import torch.nn as nn
            class Attention(nn.Module):
                def __init__(self, seq_len):
                    super().__init__()
                    self.register_buffer("mask", torch.triu(torch.full((seq_len, seq_len), -1e9), diagonal=1))
                def forward(self, q, k, v):
                    att = torch.matmul(q, k.transpose(-2, -1))
                    q_len, k_len = att.shape[-2:]
                    att = att + self.mask[..., k_len - q_len:k_len, :k_len]
                    return torch.softmax(att, dim=-1) @ v
            """,
            line=9,
            column=20,
        ),
        # Moved to the device before use: the slice goes on the buffer itself.
        Invalid(
            """
            import torch
            import torch.nn as nn
            class A(nn.Module):
                def __init__(self, block_size):
                    super().__init__()
                    self.register_buffer("mask", torch.triu(torch.ones(block_size, block_size), diagonal=1))
                def forward(self, att):
                    return att.masked_fill(self.mask.to(att.device).bool(), float("-inf"))
            """,
            fixed="""
            import torch
            import torch.nn as nn
            class A(nn.Module):
                def __init__(self, block_size):
                    super().__init__()
                    self.register_buffer("mask", torch.triu(torch.ones(block_size, block_size), diagonal=1))
                def forward(self, att):
                    q_len, k_len = att.shape[-2:]
                    return att.masked_fill(self.mask[..., k_len - q_len:k_len, :k_len].to(att.device).bool(), float("-inf"))
            """,
            line=8,
            column=31,
        ),
        # nn.TransformerDecoder's tgt_mask from a buffer (no fix).
        Invalid(
            """
            import torch
            import torch.nn as nn
            class A(nn.Module):
                def __init__(self, d, block_size):
                    super().__init__()
                    self.decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(d, 4), 2)
                    self.register_buffer("tgt_mask", torch.triu(torch.ones(block_size, block_size, dtype=torch.bool), diagonal=1))
                def forward(self, tgt, memory):
                    return self.decoder(tgt, memory, tgt_mask=self.tgt_mask)
            """,
            line=9,
            column=50,
        ),
        # A tril buffer unsqueezed to four dims, compared with 0.
        Invalid(
            """
            import torch
            import torch.nn as nn
            class A(nn.Module):
                def __init__(self, max_len):
                    super().__init__()
                    self.register_buffer("mask", torch.tril(torch.ones(max_len, max_len)).unsqueeze(0).unsqueeze(0))
                def forward(self, scores):
                    return scores.masked_fill(self.mask == 0, -1e4)
            """,
            fixed="""
            import torch
            import torch.nn as nn
            class A(nn.Module):
                def __init__(self, max_len):
                    super().__init__()
                    self.register_buffer("mask", torch.tril(torch.ones(max_len, max_len)).unsqueeze(0).unsqueeze(0))
                def forward(self, scores):
                    q_len, k_len = scores.shape[-2:]
                    return scores.masked_fill(self.mask[..., k_len - q_len:k_len, :k_len] == 0, -1e4)
            """,
            line=8,
            column=34,
        ),
        # Sized by an attribute, `self.block_size`.
        Invalid(
            """
            import torch
            import torch.nn as nn
            class A(nn.Module):
                def __init__(self, block_size):
                    super().__init__()
                    self.block_size = block_size
                    self.register_buffer("mask", torch.triu(torch.ones(self.block_size, self.block_size), diagonal=1).bool())
                def forward(self, att):
                    return att.masked_fill(self.mask, float("-inf"))
            """,
            fixed="""
            import torch
            import torch.nn as nn
            class A(nn.Module):
                def __init__(self, block_size):
                    super().__init__()
                    self.block_size = block_size
                    self.register_buffer("mask", torch.triu(torch.ones(self.block_size, self.block_size), diagonal=1).bool())
                def forward(self, att):
                    q_len, k_len = att.shape[-2:]
                    return att.masked_fill(self.mask[..., k_len - q_len:k_len, :k_len], float("-inf"))
            """,
            line=9,
            column=31,
        ),
        # torch.where with a tril buffer sized by config.block_size through a local.
        Invalid(
            """
            import torch
            import torch.nn as nn
            class Attention(nn.Module):
                def __init__(self, config):
                    super().__init__()
                    n = config.block_size
                    self.register_buffer("causal", torch.tril(torch.ones(n, n, dtype=torch.bool)))
                def forward(self, q, k):
                    att = q @ k.transpose(-2, -1)
                    att = torch.where(self.causal, att, torch.tensor(float("-inf")))
                    return att.softmax(-1)
            """,
            fixed="""
            import torch
            import torch.nn as nn
            class Attention(nn.Module):
                def __init__(self, config):
                    super().__init__()
                    n = config.block_size
                    self.register_buffer("causal", torch.tril(torch.ones(n, n, dtype=torch.bool)))
                def forward(self, q, k):
                    att = q @ k.transpose(-2, -1)
                    q_len, k_len = att.shape[-2:]
                    att = torch.where(self.causal[..., k_len - q_len:k_len, :k_len], att, torch.tensor(float("-inf")))
                    return att.softmax(-1)
            """,
            line=10,
            column=26,
        ),
        # A KV cache: the lengths the code names are used as they are (the last rows).
        Invalid(
            """
            import torch
            import torch.nn as nn
            class CachedAttention(nn.Module):
                def __init__(self, max_positions):
                    super().__init__()
                    self.register_buffer("causal", torch.tril(torch.ones(max_positions, max_positions)).bool())
                def forward(self, q, k_cache):
                    batch, heads, n_new, head_dim = q.shape
                    _, _, n_total, _ = k_cache.shape
                    scores = q @ k_cache.transpose(-2, -1) * head_dim ** -0.5
                    return scores.masked_fill(~self.causal, float("-inf")).softmax(-1)
            """,
            fixed="""
            import torch
            import torch.nn as nn
            class CachedAttention(nn.Module):
                def __init__(self, max_positions):
                    super().__init__()
                    self.register_buffer("causal", torch.tril(torch.ones(max_positions, max_positions)).bool())
                def forward(self, q, k_cache):
                    batch, heads, n_new, head_dim = q.shape
                    _, _, n_total, _ = k_cache.shape
                    scores = q @ k_cache.transpose(-2, -1) * head_dim ** -0.5
                    return scores.masked_fill(~self.causal[..., n_total - n_new:n_total, :n_total], float("-inf")).softmax(-1)
            """,
        ),
        # The new line's names do not clash with names the function already uses.
        Invalid(
            """
            import torch
            import torch.nn as nn
            class A(nn.Module):
                def __init__(self, block_size):
                    super().__init__()
                    self.register_buffer("mask", torch.triu(torch.ones(block_size, block_size), diagonal=1).bool())
                def forward(self, s, q_len):
                    s = s.masked_fill(self.mask, float("-inf"))
                    return s.softmax(-1)[..., :q_len]
            """,
            fixed="""
            import torch
            import torch.nn as nn
            class A(nn.Module):
                def __init__(self, block_size):
                    super().__init__()
                    self.register_buffer("mask", torch.triu(torch.ones(block_size, block_size), diagonal=1).bool())
                def forward(self, s, q_len):
                    q_len_2, k_len = s.shape[-2:]
                    s = s.masked_fill(self.mask[..., k_len - q_len_2:k_len, :k_len], float("-inf"))
                    return s.softmax(-1)[..., :q_len]
            """,
        ),
        # Reported, not fixed: a one-line `if` suite has no line of its own to read the lengths in.
        Invalid(
            """
            import torch
            import torch.nn as nn
            class A(nn.Module):
                def __init__(self, block_size):
                    super().__init__()
                    self.register_buffer("mask", torch.triu(torch.ones(block_size, block_size), diagonal=1).bool())
                def forward(self, s, causal=True):
                    if causal: s = s.masked_fill(self.mask, float("-inf"))
                    return s.softmax(-1)
            """,
        ),
        # Reported, not fixed: inside a comprehension the scores are the comprehension's own name.
        Invalid(
            """
            import torch
            import torch.nn as nn
            class A(nn.Module):
                def __init__(self, block_size):
                    super().__init__()
                    self.register_buffer("mask", torch.triu(torch.ones(block_size, block_size), diagonal=1).bool())
                def forward(self, per_head_scores):
                    return [s.masked_fill(self.mask, float("-inf")).softmax(-1) for s in per_head_scores]
            """,
        ),
        # The buffer exists only when causal, is combined with the caller's mask, and reaches
        # the masked_fill through a helper function.
        Invalid(
            """
            import torch
            import torch.nn as nn

            def attend(q, k, v, keep=None):
                scores = q @ k.transpose(-2, -1) * q.size(-1) ** -0.5
                if keep is not None:
                    scores = scores.masked_fill(~keep, float("-inf"))
                return scores.softmax(-1) @ v

            class Attention(nn.Module):
                def __init__(self, causal=False, max_len=None):
                    super().__init__()
                    if causal and max_len is not None:
                        self.register_buffer("keep", torch.ones(max_len, max_len, dtype=torch.bool).tril())
                    else:
                        self.keep = None

                def forward(self, q, k, v, keep=None):
                    if self.keep is not None:
                        keep = self.keep if keep is None else keep & self.keep
                    return attend(q, k, v, keep)
            """,
            line=20,
            column=19,
        ),
        # A plain tensor attribute built in __init__ is as fixed as a registered buffer.
        Invalid(
            """
            import torch
            import torch.nn as nn
            class Attention(nn.Module):
                def __init__(self, block_size):
                    super().__init__()
                    self.future = torch.ones(block_size, block_size).triu(diagonal=1).bool()
                def forward(self, q, k):
                    B, H, T, D = q.shape
                    w = (q @ k.transpose(-2, -1)) / D ** 0.5
                    return w.masked_fill(self.future, float("-inf")).softmax(-1)
            """,
            fixed="""
            import torch
            import torch.nn as nn
            class Attention(nn.Module):
                def __init__(self, block_size):
                    super().__init__()
                    self.future = torch.ones(block_size, block_size).triu(diagonal=1).bool()
                def forward(self, q, k):
                    B, H, T, D = q.shape
                    w = (q @ k.transpose(-2, -1)) / D ** 0.5
                    q_len, k_len = w.shape[-2:]
                    return w.masked_fill(self.future[..., k_len - q_len:k_len, :k_len], float("-inf")).softmax(-1)
            """,
        ),
        # A frozen nn.Parameter holding the mask.
        Invalid(
            """
            import torch
            import torch.nn as nn
            class Attention(nn.Module):
                def __init__(self, n_positions):
                    super().__init__()
                    self.keep = nn.Parameter(torch.tril(torch.ones(n_positions, n_positions)), requires_grad=False)
                def forward(self, scores):
                    return torch.softmax(scores.masked_fill(self.keep == 0, -1e9), dim=-1)
            """,
            fixed="""
            import torch
            import torch.nn as nn
            class Attention(nn.Module):
                def __init__(self, n_positions):
                    super().__init__()
                    self.keep = nn.Parameter(torch.tril(torch.ones(n_positions, n_positions)), requires_grad=False)
                def forward(self, scores):
                    q_len, k_len = scores.shape[-2:]
                    return torch.softmax(scores.masked_fill(self.keep[..., k_len - q_len:k_len, :k_len] == 0, -1e9), dim=-1)
            """,
        ),
        # Read into a name first: reported where it meets the scores (no fix: the slice belongs
        # where the lengths are known).
        Invalid(
            """
            import torch
            import torch.nn as nn
            class Attention(nn.Module):
                def __init__(self, context_length):
                    super().__init__()
                    self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))
                def forward(self, scores):
                    blocked = self.mask.bool()
                    scores = scores.masked_fill(blocked, float("-inf"))
                    return scores.softmax(-1)
            """,
            line=9,
            column=36,
        ),
        # ALiBi slopes plus a -inf triangle, registered whole and added whole.
        Invalid(
            """
            import torch
            import torch.nn as nn


            class AlibiAttention(nn.Module):
                def __init__(self, heads, max_len=1024):
                    super().__init__()
                    pos = torch.arange(max_len)
                    slopes = 2.0 ** -torch.arange(1, heads + 1)
                    distance = (pos[None, :] - pos[:, None]).clamp(max=0).float()
                    future = torch.full((max_len, max_len), float("-inf")).triu(1)
                    self.register_buffer("bias", (slopes[:, None, None] * distance + future).unsqueeze(0))

                def forward(self, q, k, v):
                    s = q @ k.transpose(-2, -1) * q.size(-1) ** -0.5
                    return (s + self.bias).softmax(-1) @ v
            """,
            fixed="""
            import torch
            import torch.nn as nn


            class AlibiAttention(nn.Module):
                def __init__(self, heads, max_len=1024):
                    super().__init__()
                    pos = torch.arange(max_len)
                    slopes = 2.0 ** -torch.arange(1, heads + 1)
                    distance = (pos[None, :] - pos[:, None]).clamp(max=0).float()
                    future = torch.full((max_len, max_len), float("-inf")).triu(1)
                    self.register_buffer("bias", (slopes[:, None, None] * distance + future).unsqueeze(0))

                def forward(self, q, k, v):
                    s = q @ k.transpose(-2, -1) * q.size(-1) ** -0.5
                    q_len, k_len = s.shape[-2:]
                    return (s + self.bias[..., k_len - q_len:k_len, :k_len]).softmax(-1) @ v
            """,
            line=16,
        ),
        # Whisper's spelling of the causal mask (empty, fill_, triu_), passed down to the layers.
        Invalid(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F


            class SelfAttention(nn.Module):
                def __init__(self, width):
                    super().__init__()
                    self.qkv = nn.Linear(width, 3 * width)

                def attend(self, q, k, v, mask=None):
                    w = q @ k.transpose(-1, -2) / q.size(-1) ** 0.5
                    if mask is not None:
                        w = w + mask
                    return F.softmax(w, dim=-1) @ v

                def forward(self, x, mask=None):
                    q, k, v = self.qkv(x).chunk(3, dim=-1)
                    return self.attend(q, k, v, mask)


            class Decoder(nn.Module):
                def __init__(self, width, n_ctx):
                    super().__init__()
                    self.layer = SelfAttention(width)
                    mask = torch.empty(n_ctx, n_ctx).fill_(-float("inf")).triu_(1)
                    self.register_buffer("mask", mask, persistent=False)

                def forward(self, x):
                    return self.layer(x, mask=self.mask)
            """,
            line=30,
        ),
    ]
