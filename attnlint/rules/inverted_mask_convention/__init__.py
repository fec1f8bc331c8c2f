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
    means "masked". A mask keeps its meaning through `torch.cat` with a constant column (a
    target or class token always real: `torch.cat([ids.ne(pad), torch.ones_like(ids[:, :1],
    dtype=torch.bool)], 1)`).

    A mask a function receives and hands on as it is, whose meaning its caller decides (a
    training step builds `(src != PAD_IDX)` and passes it to the model), is reported where its
    meaning is written, without a fix (the function may have other callers): at the caller's
    argument, followed up through layers that only hand their own parameter on, and at the
    expression that builds it when that argument is a local built once (`valid = arange(T) <
    lens[:, None]`, then `for layer in self.layers: x = layer(x, valid)`) into a parameter named
    for no convention (`mask`). When the parameter's own name already says what the callers
    pass (`valid`, `keep`, `valid_mask` for True = real tokens), the function knows what it
    holds, and the use that reads it the other way is reported, with the fix; so is a use that
    reads it the other way from another layer the caller hands it to (a pooling that fills
    where it is False).

    A mask parameter whose function documents it (a docstring or header-comment line that names
    it and says what True means: `pad_mask: (B, L) bool, True at padding positions`, `mask: 1 for
    tokens that are not masked`) has that convention where nothing traced says otherwise.

    ## Why is this bad?
    PyTorch's two attention APIs use opposite boolean conventions. With the wrong one, a causal
    model attends only to the future, a padded batch attends only to the padding, and fully
    masked rows turn into NaN; the code runs and the loss still goes down. This bug appears in
    widely read public teaching code.

    Only masks whose convention the analysis can trace (and whose dtype is bool; float masks
    are additive in both APIs) are reported. It is traced through helpers, callers and layer
    stacks (`for layer in self.layers: x = layer(x, pad)`), comparison methods
    (`ids.eq(pad_id)`, `torch.ne(tokens, pad)`), `logical_or`/`logical_and`/`logical_not`,
    transposes (a time-major pad mask turned batch-first), and the name of a local whose value
    says nothing else (`memory_valid = pixel_mask.bool()`, `keep_mask`: True = attend;
    `invalid_keys`: True = masked; never `valid_lens`). A class of the checked code named like a
    torch module (`class TransformerEncoderLayer`) is read through its own `forward`.

    ## Fix safety
    The fix is unsafe: it changes which positions are attended (that is the point). For a causal
    mask, `is_causal=True` is often the cleaner fix.
    """

    code = "ATN205"
    name = "inverted-mask-convention"
    summary = "a boolean mask is passed in the opposite convention of the attention API"
    fix_availability = FixAvailability.ALWAYS
    fix_applicability = Applicability.UNSAFE
    triggers = ("mask", "scaled_dot_product_attention", "MultiheadAttention", "Transformer")
    # Reported at a mask given to a torch attention API in this file (or where a caller in this
    # file writes it).
    reported_where = ("scaled_dot_product_attention", "MultiheadAttention", "Transformer")
    recipe = "inverted_mask_convention"

    def check(self, ctx: RuleContext) -> None:
        for use in ctx.analysis.sites("mask_uses"):
            facts = use.mask.mask
            if facts is None or facts.dtype != "bool" or facts.convention not in (ATTEND, MASKED):
                continue
            if facts.convention == use.expects:
                continue
            api = _API.get(use.api, f"nn.{use.api}")
            message = (
                f"this mask means {_MEANING[facts.convention]}, but {api}'s `{use.keyword}` reads "
                f"{_MEANING[use.expects]}: the attention is inverted"
            )
            passed = ctx.analysis.mask_passed_by_caller(use)
            if passed is not None:
                # The parameter means what its caller made it mean: the wrong mask is written
                # there (no fix: the function may have other callers, and the argument may be
                # used elsewhere as it is).
                ctx.report(passed, f"{message} (passed as `{use.mask_node.value}` to the function that uses it)")
                continue
            ctx.report(use.mask_node, message, fix=invert_mask(ctx.module, use.mask_node, use.expects))

    VALID = [
        # The same mask, inverted for SDPA.
        Valid(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F
            from einops import rearrange


            def build_patch_padding_mask(frame_lengths, f_dim, t_dim, patch=16, tstride=10, n_prefix=2):
                valid_t = ((frame_lengths - patch) // tstride + 1).clamp(min=1)
                t_idx = torch.arange(t_dim, device=frame_lengths.device).repeat(f_dim)
                is_pad = t_idx[None, :] >= valid_t[:, None]
                prefix = torch.zeros(frame_lengths.shape[0], n_prefix, dtype=torch.bool)
                return torch.cat([prefix, is_pad], dim=1)


            class Attention(nn.Module):
                def __init__(self, dim, heads=4):
                    super().__init__()
                    self.heads = heads
                    self.qkv = nn.Linear(dim, dim * 3)

                def forward(self, x, key_padding_mask=None):
                    q, k, v = rearrange(self.qkv(x), "b n (k h d) -> k b h n d", k=3, h=self.heads)
                    mask = None
                    if key_padding_mask is not None:
                        mask = ~key_padding_mask[:, None, None, :]
                    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
                    return rearrange(out, "b h n d -> b n (h d)")


            class Encoder(nn.Module):
                def __init__(self, dim):
                    super().__init__()
                    self.attn = Attention(dim)

                def forward(self, x, frame_lengths):
                    pad_mask = build_patch_padding_mask(frame_lengths, 8, (x.shape[1] - 2) // 8)
                    return self.attn(x, key_padding_mask=pad_mask)
            """
        ),
        # The docstring says True marks real tokens: SDPA's own convention.
        Valid(
            """
            import torch.nn.functional as F


            def attend(q, k, v, mask):
                '''mask: (B, L) bool, True for real tokens, False for padding.'''
                return F.scaled_dot_product_attention(q, k, v, attn_mask=mask[:, None, None, :])
            """
        ),
        # A helper turns causal & padding into an additive bias (zeros, finfo.min where not
        # allowed): float values with no True/False convention, handed through the layers to SDPA.
        Valid(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F


            def build_additive_mask(attention_mask, dtype):
                B, T = attention_mask.shape
                causal = torch.ones(T, T, dtype=torch.bool).tril()
                allowed = causal[None, None] & attention_mask.bool()[:, None, None, :]
                mask = torch.zeros(B, 1, T, T, dtype=dtype)
                return mask.masked_fill(~allowed, torch.finfo(dtype).min)


            class Attention(nn.Module):
                def forward(self, q, k, v, mask):
                    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


            class Decoder(nn.Module):
                def __init__(self, vocab, dim):
                    super().__init__()
                    self.tok = nn.Embedding(vocab, dim)
                    self.attn = Attention()

                def forward(self, input_ids, attention_mask):
                    x = self.tok(input_ids)[:, None]
                    mask = build_additive_mask(attention_mask, x.dtype)
                    return self.attn(x, x, x, mask)
            """
        ),
        # A bare `padding_mask` parameter says nothing about its convention.
        Valid(
            """
            import torch.nn as nn


            class Enc(nn.Module):
                def __init__(self, d, h):
                    super().__init__()
                    self.attn = nn.MultiheadAttention(d, h, batch_first=True)

                def forward(self, x, padding_mask):
                    # padding_mask: (b, n) bool, True for real tokens
                    return self.attn(x, x, x, key_padding_mask=~padding_mask)[0]
            """
        ),
        # PyTorch's old tutorial mask, inverted for nn.MultiheadAttention.
        Valid(
            """
            import torch
            import torch.nn as nn


            class Dec(nn.Module):
                def __init__(self, d, h):
                    super().__init__()
                    self.attn = nn.MultiheadAttention(d, h)

                def forward(self, x):
                    sz = x.size(0)
                    mask = (torch.triu(torch.ones(sz, sz)) == 1).transpose(0, 1)
                    return self.attn(x, x, x, attn_mask=~mask)[0]
            """
        ),
        # A transposed triu(ones) is the lower triangle: True = attend.
        Valid(
            """
            import torch
            import torch.nn.functional as F


            def f(q, k, v, T):
                keep = torch.triu(torch.ones(T, T, dtype=torch.bool)).T
                return F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
            """
        ),
        # A bare `padding_mask` is used both ways in the wild (1 = keep in HF audio models): silent.
        Valid(
            """
            import torch.nn.functional as F
            def attend(q, k, v, padding_mask):
                return F.scaled_dot_product_attention(q, k, v, attn_mask=padding_mask.bool()[:, None, None, :])
            """
        ),
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
        # HF attention_mask `.to(torch.bool)` into SDPA.
        Valid(
            """
            import torch
            import torch.nn.functional as F
            def attend(q, k, v, attention_mask):
                return F.scaled_dot_product_attention(q, k, v, attn_mask=attention_mask[:, None, None, :].to(torch.bool))
            """
        ),
        # `~attention_mask.bool()` as key_padding_mask.
        Valid(
            """
            import torch.nn as nn
            class Block(nn.Module):
                def __init__(self, d, h):
                    super().__init__()
                    self.attn = nn.MultiheadAttention(d, h, batch_first=True)
                def forward(self, x, attention_mask):
                    return self.attn(x, x, x, key_padding_mask=~attention_mask.bool())[0]
            """
        ),
        # `tokens == PAD` as key_padding_mask, the PyTorch way.
        Valid(
            """
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            PAD = 0
            class Enc(nn.Module):
                def __init__(self, d, h):
                    super().__init__()
                    self.mha = nn.MultiheadAttention(d, h, batch_first=True)
                def forward(self, token_lists, embed):
                    tokens = pad_sequence(token_lists, batch_first=True, padding_value=PAD)
                    x = embed(tokens)
                    return self.mha(x, x, x, key_padding_mask=tokens == PAD)[0]
            """
        ),
        # `~key_padding_mask` into SDPA.
        Valid(
            """
            import torch.nn.functional as F
            def attend(q, k, v, key_padding_mask):
                return F.scaled_dot_product_attention(q, k, v, attn_mask=~key_padding_mask[:, None, None, :])
            """
        ),
        # A triu future mask as nn.MultiheadAttention's attn_mask.
        Valid(
            """
            import torch
            import torch.nn as nn
            class Block(nn.Module):
                def __init__(self, d, h):
                    super().__init__()
                    self.attn = nn.MultiheadAttention(d, h)
                def forward(self, x):
                    T = x.size(0)
                    future = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), 1)
                    return self.attn(x, x, x, attn_mask=future)[0]
            """
        ),
        # A float causal mask (generate_square_subsequent_mask) to nn.TransformerEncoder.
        Valid(
            """
            import torch.nn as nn
            class GPT(nn.Module):
                def __init__(self, d):
                    super().__init__()
                    layer = nn.TransformerEncoderLayer(d, 8, batch_first=True)
                    self.blocks = nn.TransformerEncoder(layer, 6)
                def forward(self, x):
                    mask = nn.Transformer.generate_square_subsequent_mask(x.size(1), device=x.device)
                    return self.blocks(x, mask=mask, is_causal=True)
            """
        ),
        # An additive float bias into SDPA.
        Valid(
            """
            import torch
            import torch.nn.functional as F
            def attend(q, k, v, key_padding_mask):
                bias = torch.zeros(key_padding_mask.shape, dtype=q.dtype, device=q.device)
                bias = bias.masked_fill(key_padding_mask, float("-inf"))
                return F.scaled_dot_product_attention(q, k, v, attn_mask=bias[:, None, None, :])
            """
        ),
        # SDPA with is_causal and no mask.
        Valid(
            """
            import torch.nn.functional as F
            def attend(q, k, v):
                return F.scaled_dot_product_attention(q, k, v, is_causal=True)
            """
        ),
        # HF _prepare_4d_attention_mask: an additive finfo.min bias into SDPA.
        Valid(
            """
            import torch
            import torch.nn.functional as F
            def _prepare_4d_attention_mask(mask, dtype, tgt_len):
                bsz, src_len = mask.size()
                expanded = mask[:, None, None, :].expand(bsz, 1, tgt_len, src_len).to(dtype)
                inverted = 1.0 - expanded
                return inverted.masked_fill(inverted.to(torch.bool), torch.finfo(dtype).min)
            def attend(q, k, v, attention_mask):
                bias = _prepare_4d_attention_mask(attention_mask, q.dtype, q.size(-2))
                return F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
            """
        ),
        # tril & attention_mask: both True = attend, into SDPA.
        Valid(
            """
            import torch
            import torch.nn.functional as F
            def attend(q, k, v, attention_mask):
                T = q.size(-2)
                causal = torch.tril(torch.ones(T, T, dtype=torch.bool, device=q.device))
                keep = causal & attention_mask.bool()[:, None, None, :]
                return F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
            """
        ),
        # `~tril` as nn.MultiheadAttention's attn_mask.
        Valid(
            """
            import torch
            import torch.nn as nn
            class Block(nn.Module):
                def __init__(self, d, h):
                    super().__init__()
                    self.attn = nn.MultiheadAttention(d, h, batch_first=True)
                def forward(self, x):
                    T = x.size(1)
                    keep = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
                    return self.attn(x, x, x, attn_mask=~keep)[0]
            """
        ),
        # A `>=` lengths padding mask as key_padding_mask.
        Valid(
            """
            import torch
            import torch.nn as nn
            class Enc(nn.Module):
                def __init__(self, d, h):
                    super().__init__()
                    self.mha = nn.MultiheadAttention(d, h, batch_first=True)
                def forward(self, x, lengths):
                    pad = torch.arange(x.size(1), device=x.device)[None, :] >= lengths[:, None]
                    return self.mha(x, x, x, key_padding_mask=pad)[0]
            """
        ),
        # nn.Transformer with every mask in its own convention.
        Valid(
            """
            import torch
            import torch.nn as nn
            PAD = 0
            class Seq2Seq(nn.Module):
                def __init__(self, d):
                    super().__init__()
                    self.transformer = nn.Transformer(d, 8, batch_first=True)
                def forward(self, src, tgt, src_tokens, tgt_tokens):
                    T = tgt.size(1)
                    tgt_mask = torch.triu(torch.ones(T, T, device=tgt.device), diagonal=1).bool()
                    return self.transformer(src, tgt, tgt_mask=tgt_mask,
                                            src_key_padding_mask=src_tokens == PAD,
                                            tgt_key_padding_mask=tgt_tokens == PAD,
                                            memory_key_padding_mask=src_tokens == PAD)
            """
        ),
        # A `<` lengths keep-mask into SDPA.
        Valid(
            """
            import torch
            import torch.nn.functional as F
            def attend(q, k, v, lengths):
                keep = torch.arange(k.size(-2), device=k.device)[None, :] < lengths[:, None]
                return F.scaled_dot_product_attention(q, k, v, attn_mask=keep[:, None, None, :])
            """
        ),
        # The .tril() method form into SDPA (positional).
        Valid(
            """
            import torch
            import torch.nn.functional as F
            def causal_attention(q, k, v):
                T = q.size(-2)
                keep = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
                return F.scaled_dot_product_attention(q, k, v, keep)
            """
        ),
        # x-transformers: a generic mask reshaped with einops: convention unknown.
        Valid(
            """
            import torch
            import torch.nn.functional as F
            from einops import rearrange
            def attend(q, k, v, mask=None):
                if mask is not None:
                    mask = rearrange(mask, "b j -> b 1 1 j")
                return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            """
        ),
        # Ids equal to the pad id, kept in a module attribute: True = ignore, as nn.MultiheadAttention reads it.
        Valid(
            """
            import torch
            import torch.nn as nn


            class TextEncoder(nn.Module):
                def __init__(self, vocab, d=64):
                    super().__init__()
                    self.tok = nn.Embedding(vocab, d, padding_idx=0)
                    self.attn = nn.MultiheadAttention(d, 4, batch_first=True)

                def forward(self, ids):
                    self.padding = ids == 0
                    x = self.tok(ids)
                    return self.attn(x, x, x, key_padding_mask=self.padding)[0]
            """
        ),
        # A time-major pad mask turned batch-first: the transpose keeps what True means.
        Valid(
            """
            import torch.nn as nn


            class Seq2Seq(nn.Module):
                def __init__(self, d, pad_idx=1):
                    super().__init__()
                    self.pad_idx = pad_idx
                    self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(d, 4), 2)

                def padding_of(self, src):
                    # src is time-major: (src_len, batch)
                    return (src == self.pad_idx).transpose(0, 1)

                def forward(self, src, src_embedded):
                    pad = self.padding_of(src)
                    return self.encoder(src_embedded, src_key_padding_mask=pad)
            """
        ),
        # A local named for what True means (`memory_valid`), inverted for the API.
        Valid(
            """
            import torch.nn as nn


            class CrossAttention(nn.Module):
                def __init__(self, d, h):
                    super().__init__()
                    self.attn = nn.MultiheadAttention(d, h)

                def forward(self, queries, features, pixel_mask):
                    memory = features.flatten(2).permute(2, 0, 1)
                    memory_valid = pixel_mask.flatten(1).bool()
                    return self.attn(queries, memory, memory, key_padding_mask=~memory_valid)[0]
            """
        ),
        # A class of the file's own named like torch's: its forward says what the mask means.
        Valid(
            """
            import torch.nn as nn
            import torch.nn.functional as F


            class MultiheadAttention(nn.Module):
                def forward(self, q, k, v, keep):
                    return F.scaled_dot_product_attention(q, k, v, attn_mask=keep[:, None, None, :])


            class Decoder(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.attn = MultiheadAttention()

                def forward(self, x, ids, pad_id):
                    real = ids.ne(pad_id)
                    return self.attn(x, x, x, real)
            """
        ),
        # The padding mask built by `.ne` (True = a real token) and handed down a stack of layers
        # to SDPA, whose `attn_mask` reads True = may attend.
        Valid(
            """
            import torch.nn as nn
            import torch.nn.functional as F


            class Attention(nn.Module):
                def forward(self, x, keep):
                    return F.scaled_dot_product_attention(x, x, x, attn_mask=keep[:, None, None, :])


            class Layer(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.attn = Attention()

                def forward(self, x, keep):
                    return x + self.attn(x, keep)


            class Encoder(nn.Module):
                def __init__(self, vocab, d, depth, pad_id=0):
                    super().__init__()
                    self.pad_id = pad_id
                    self.embed = nn.Embedding(vocab, d)
                    self.layers = nn.ModuleList([Layer() for _ in range(depth)])

                def forward(self, ids):
                    keep = ids.ne(self.pad_id)
                    x = self.embed(ids)
                    for layer in self.layers:
                        x = layer(x, keep)
                    return x
            """
        ),
        # Padding masks made by a helper, True at padding, handed to the model by the training step.
        Valid(
            """
            import torch
            import torch.nn as nn
            from torch.nn import Transformer

            PAD_IDX = 1


            class Seq2Seq(nn.Module):
                def __init__(self, d, nhead, vocab):
                    super().__init__()
                    self.transformer = Transformer(d_model=d, nhead=nhead)
                    self.emb = nn.Embedding(vocab, d)

                def forward(self, src, trg, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask, memory_key_padding_mask):
                    outs = self.transformer(self.emb(src), self.emb(trg), src_mask, tgt_mask, None,
                                            src_padding_mask, tgt_padding_mask, memory_key_padding_mask)
                    return outs


            def create_mask(src, tgt):
                src_padding_mask = (src == PAD_IDX).transpose(0, 1)
                tgt_padding_mask = (tgt == PAD_IDX).transpose(0, 1)
                return src_padding_mask, tgt_padding_mask


            def train_epoch(model, src, tgt):
                src_padding_mask, tgt_padding_mask = create_mask(src, tgt)
                return model(src, tgt, None, None, src_padding_mask, tgt_padding_mask, src_padding_mask)
            """
        ),
        # The same layers given True = padding.
        Valid(
            """
            import torch
            from torch import nn
            class Subsampling(nn.Module):
                def __init__(self, d_model):
                    super().__init__()
                    self.conv = nn.Conv1d(d_model, d_model, 3, stride=2)
                def forward(self, x, lengths):
                    x = self.conv(x.transpose(1, 2)).transpose(1, 2)
                    return x, (lengths - 1) // 2
            class EncoderLayer(nn.Module):
                def __init__(self, d_model, n_heads):
                    super().__init__()
                    self.self_attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
                def forward(self, x, valid_mask):
                    h, _ = self.self_attn(x, x, x, key_padding_mask=valid_mask)
                    return x + h
            class Encoder(nn.Module):
                def __init__(self, d_model=256, n_heads=4, n_layers=6):
                    super().__init__()
                    self.subsample = Subsampling(d_model)
                    self.layers = nn.ModuleList([EncoderLayer(d_model, n_heads) for _ in range(n_layers)])
                def forward(self, feats, feat_lens):
                    x, lens = self.subsample(feats, feat_lens)
                    valid_mask = torch.arange(x.size(1), device=x.device)[None, :] >= lens[:, None]
                    for layer in self.layers:
                        x = layer(x, valid_mask)
                    return x
            """
        ),
    ]

    INVALID = [
        # An audio transformer's key padding mask, True at padded patches as its name says
        # (the lengths comparison behind a cat with the prefix tokens does not show it), given
        # to SDPA's attn_mask, where True means attend.
        Invalid(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F
            from einops import rearrange


            def build_patch_padding_mask(frame_lengths, f_dim, t_dim, patch=16, tstride=10, n_prefix=2):
                valid_t = ((frame_lengths - patch) // tstride + 1).clamp(min=1)
                t_idx = torch.arange(t_dim, device=frame_lengths.device).repeat(f_dim)
                is_pad = t_idx[None, :] >= valid_t[:, None]
                prefix = torch.zeros(frame_lengths.shape[0], n_prefix, dtype=torch.bool)
                return torch.cat([prefix, is_pad], dim=1)


            class Attention(nn.Module):
                def __init__(self, dim, heads=4):
                    super().__init__()
                    self.heads = heads
                    self.qkv = nn.Linear(dim, dim * 3)

                def forward(self, x, key_padding_mask=None):
                    q, k, v = rearrange(self.qkv(x), "b n (k h d) -> k b h n d", k=3, h=self.heads)
                    mask = None
                    if key_padding_mask is not None:
                        mask = key_padding_mask[:, None, None, :]
                    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
                    return rearrange(out, "b h n d -> b n (h d)")


            class Encoder(nn.Module):
                def __init__(self, dim):
                    super().__init__()
                    self.attn = Attention(dim)

                def forward(self, x, frame_lengths):
                    pad_mask = build_patch_padding_mask(frame_lengths, 8, (x.shape[1] - 2) // 8)
                    return self.attn(x, key_padding_mask=pad_mask)
            """,
            fixed="""
            import torch
            import torch.nn as nn
            import torch.nn.functional as F
            from einops import rearrange


            def build_patch_padding_mask(frame_lengths, f_dim, t_dim, patch=16, tstride=10, n_prefix=2):
                valid_t = ((frame_lengths - patch) // tstride + 1).clamp(min=1)
                t_idx = torch.arange(t_dim, device=frame_lengths.device).repeat(f_dim)
                is_pad = t_idx[None, :] >= valid_t[:, None]
                prefix = torch.zeros(frame_lengths.shape[0], n_prefix, dtype=torch.bool)
                return torch.cat([prefix, is_pad], dim=1)


            class Attention(nn.Module):
                def __init__(self, dim, heads=4):
                    super().__init__()
                    self.heads = heads
                    self.qkv = nn.Linear(dim, dim * 3)

                def forward(self, x, key_padding_mask=None):
                    q, k, v = rearrange(self.qkv(x), "b n (k h d) -> k b h n d", k=3, h=self.heads)
                    mask = None
                    if key_padding_mask is not None:
                        mask = key_padding_mask[:, None, None, :]
                    out = F.scaled_dot_product_attention(q, k, v, attn_mask=~mask)
                    return rearrange(out, "b h n d -> b n (h d)")


            class Encoder(nn.Module):
                def __init__(self, dim):
                    super().__init__()
                    self.attn = Attention(dim)

                def forward(self, x, frame_lengths):
                    pad_mask = build_patch_padding_mask(frame_lengths, 8, (x.shape[1] - 2) // 8)
                    return self.attn(x, key_padding_mask=pad_mask)
            """,
            line=26,
        ),
        # A recommender's padding mask marks the real items, with the always-real target's column
        # appended by a torch.cat: True = keep, given where True = masked.
        Invalid(
            """
            import torch
            import torch.nn as nn


            class BST(nn.Module):
                def __init__(self, n_items, d, pad_idx=0):
                    super().__init__()
                    self.pad_idx = pad_idx
                    self.item_emb = nn.Embedding(n_items, d, padding_idx=pad_idx)
                    layer = nn.TransformerEncoderLayer(d, 4, batch_first=True)
                    self.encoder = nn.TransformerEncoder(layer, 2)

                def make_padding_mask(self, hist_items):
                    target_col = torch.ones_like(hist_items[:, :1], dtype=torch.bool)
                    return torch.cat([hist_items.ne(self.pad_idx), target_col], dim=1)

                def forward(self, hist_items, target_item):
                    seq = torch.cat([hist_items, target_item[:, None]], dim=1)
                    x = self.item_emb(seq)
                    pad_mask = self.make_padding_mask(hist_items)
                    return self.encoder(x, src_key_padding_mask=pad_mask)
            """,
            fixed="""
            import torch
            import torch.nn as nn


            class BST(nn.Module):
                def __init__(self, n_items, d, pad_idx=0):
                    super().__init__()
                    self.pad_idx = pad_idx
                    self.item_emb = nn.Embedding(n_items, d, padding_idx=pad_idx)
                    layer = nn.TransformerEncoderLayer(d, 4, batch_first=True)
                    self.encoder = nn.TransformerEncoder(layer, 2)

                def make_padding_mask(self, hist_items):
                    target_col = torch.ones_like(hist_items[:, :1], dtype=torch.bool)
                    return torch.cat([hist_items.ne(self.pad_idx), target_col], dim=1)

                def forward(self, hist_items, target_item):
                    seq = torch.cat([hist_items, target_item[:, None]], dim=1)
                    x = self.item_emb(seq)
                    pad_mask = self.make_padding_mask(hist_items)
                    return self.encoder(x, src_key_padding_mask=~pad_mask)
            """,
            line=21,
        ),
        # The function's docstring says what `pad_mask` holds (True at padding); SDPA reads True
        # as "may attend".
        Invalid(
            """
            import torch.nn as nn
            import torch.nn.functional as F


            class BidirectionalSelfAttention(nn.Module):
                def __init__(self, hidden, heads):
                    super().__init__()
                    self.heads = heads
                    self.in_proj = nn.Linear(hidden, 3 * hidden)

                def forward(self, x, pad_mask):
                    '''x: (B, L, H); pad_mask: (B, L) bool, True at padding positions.'''
                    B, L, H = x.shape
                    q, k, v = self.in_proj(x).view(B, L, 3, self.heads, H // self.heads).permute(2, 0, 3, 1, 4)
                    return F.scaled_dot_product_attention(q, k, v, attn_mask=pad_mask[:, None, None, :])
            """,
            fixed="""
            import torch.nn as nn
            import torch.nn.functional as F


            class BidirectionalSelfAttention(nn.Module):
                def __init__(self, hidden, heads):
                    super().__init__()
                    self.heads = heads
                    self.in_proj = nn.Linear(hidden, 3 * hidden)

                def forward(self, x, pad_mask):
                    '''x: (B, L, H); pad_mask: (B, L) bool, True at padding positions.'''
                    B, L, H = x.shape
                    q, k, v = self.in_proj(x).view(B, L, 3, self.heads, H // self.heads).permute(2, 0, 3, 1, 4)
                    return F.scaled_dot_product_attention(q, k, v, attn_mask=~pad_mask[:, None, None, :])
            """,
            line=15,
        ),
        # The same built with `!=` (True = a real token) in a helper: inverted for the encoder.
        Invalid(
            """
            import torch.nn as nn


            class Seq2Seq(nn.Module):
                def __init__(self, d, pad_idx=1):
                    super().__init__()
                    self.pad_idx = pad_idx
                    self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(d, 4), 2)

                def padding_of(self, src):
                    # src is time-major: (src_len, batch)
                    return (src != self.pad_idx).transpose(0, 1)

                def forward(self, src, src_embedded):
                    pad = self.padding_of(src)
                    return self.encoder(src_embedded, src_key_padding_mask=pad)
            """,
            fixed="""
            import torch.nn as nn


            class Seq2Seq(nn.Module):
                def __init__(self, d, pad_idx=1):
                    super().__init__()
                    self.pad_idx = pad_idx
                    self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(d, 4), 2)

                def padding_of(self, src):
                    # src is time-major: (src_len, batch)
                    return (src != self.pad_idx).transpose(0, 1)

                def forward(self, src, src_embedded):
                    pad = self.padding_of(src)
                    return self.encoder(src_embedded, src_key_padding_mask=~pad)
            """,
        ),
        # The same passed as is: True = a valid pixel is read as True = padding.
        Invalid(
            """
            import torch.nn as nn


            class CrossAttention(nn.Module):
                def __init__(self, d, h):
                    super().__init__()
                    self.attn = nn.MultiheadAttention(d, h)

                def forward(self, queries, features, pixel_mask):
                    memory = features.flatten(2).permute(2, 0, 1)
                    memory_valid = pixel_mask.flatten(1).bool()
                    return self.attn(queries, memory, memory, key_padding_mask=memory_valid)[0]
            """,
            fixed="""
            import torch.nn as nn


            class CrossAttention(nn.Module):
                def __init__(self, d, h):
                    super().__init__()
                    self.attn = nn.MultiheadAttention(d, h)

                def forward(self, queries, features, pixel_mask):
                    memory = features.flatten(2).permute(2, 0, 1)
                    memory_valid = pixel_mask.flatten(1).bool()
                    return self.attn(queries, memory, memory, key_padding_mask=~memory_valid)[0]
            """,
        ),
        # The same stack given `.eq` (True = padding): every layer's SDPA attends only to the pads.
        Invalid(
            """
            import torch.nn as nn
            import torch.nn.functional as F


            class Attention(nn.Module):
                def forward(self, x, padding_mask):
                    return F.scaled_dot_product_attention(x, x, x, attn_mask=padding_mask[:, None, None, :])


            class Layer(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.attn = Attention()

                def forward(self, x, padding_mask):
                    return x + self.attn(x, padding_mask)


            class Encoder(nn.Module):
                def __init__(self, vocab, d, depth, pad_id=0):
                    super().__init__()
                    self.pad_id = pad_id
                    self.embed = nn.Embedding(vocab, d)
                    self.layers = nn.ModuleList([Layer() for _ in range(depth)])

                def forward(self, ids):
                    padding_mask = ids.eq(self.pad_id)
                    x = self.embed(ids)
                    for layer in self.layers:
                        x = layer(x, padding_mask)
                    return x
            """,
            fixed="""
            import torch.nn as nn
            import torch.nn.functional as F


            class Attention(nn.Module):
                def forward(self, x, padding_mask):
                    return F.scaled_dot_product_attention(x, x, x, attn_mask=~padding_mask[:, None, None, :])


            class Layer(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.attn = Attention()

                def forward(self, x, padding_mask):
                    return x + self.attn(x, padding_mask)


            class Encoder(nn.Module):
                def __init__(self, vocab, d, depth, pad_id=0):
                    super().__init__()
                    self.pad_id = pad_id
                    self.embed = nn.Embedding(vocab, d)
                    self.layers = nn.ModuleList([Layer() for _ in range(depth)])

                def forward(self, ids):
                    padding_mask = ids.eq(self.pad_id)
                    x = self.embed(ids)
                    for layer in self.layers:
                        x = layer(x, padding_mask)
                    return x
            """,
            line=7,
        ),
        # `tokens != pad_id` (True = real token) as key_padding_mask.
        Invalid(
            """
            import torch.nn as nn


            class M(nn.Module):
                def __init__(self, d, h):
                    super().__init__()
                    self.attn = nn.MultiheadAttention(d, h, batch_first=True)

                def forward(self, x, tokens, pad_id):
                    return self.attn(x, x, x, key_padding_mask=tokens != pad_id)[0]
            """,
            fixed="""
            import torch.nn as nn


            class M(nn.Module):
                def __init__(self, d, h):
                    super().__init__()
                    self.attn = nn.MultiheadAttention(d, h, batch_first=True)

                def forward(self, x, tokens, pad_id):
                    return self.attn(x, x, x, key_padding_mask=~(tokens != pad_id))[0]
            """,
        ),
        # An inverted keep-mask: the fix drops the `~`.
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            def f(q, k, v, lengths):
                T = k.size(-2)
                keep = torch.arange(T, device=k.device)[None, :] < lengths[:, None]
                return F.scaled_dot_product_attention(q, k, v, attn_mask=~keep[:, None, None, :])
            """,
            fixed="""
            import torch
            import torch.nn.functional as F
            def f(q, k, v, lengths):
                T = k.size(-2)
                keep = torch.arange(T, device=k.device)[None, :] < lengths[:, None]
                return F.scaled_dot_product_attention(q, k, v, attn_mask=keep[:, None, None, :])
            """,
            page=True,
        ),
        # No `mask` in the text; passed positionally.
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            def f(q, k, v):
                T = q.size(-2)
                future = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(diagonal=1)
                return F.scaled_dot_product_attention(q, k, v, future)
            """,
            fixed="""
            import torch
            import torch.nn.functional as F
            def f(q, k, v):
                T = q.size(-2)
                future = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(diagonal=1)
                return F.scaled_dot_product_attention(q, k, v, ~future)
            """,
        ),
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
        # A triu(diagonal=1) causal mask built in forward, into SDPA.
        Invalid(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F
            class CausalSelfAttention(nn.Module):
                def __init__(self, d, h):
                    super().__init__()
                    self.h = h
                    self.qkv = nn.Linear(d, 3 * d)
                def forward(self, x):
                    B, T, C = x.shape
                    q, k, v = self.qkv(x).view(B, T, 3, self.h, C // self.h).permute(2, 0, 3, 1, 4)
                    causal = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=1)
                    y = F.scaled_dot_product_attention(q, k, v, attn_mask=causal)
                    return y.transpose(1, 2).reshape(B, T, C)
            """,
            fixed="""
            import torch
            import torch.nn as nn
            import torch.nn.functional as F
            class CausalSelfAttention(nn.Module):
                def __init__(self, d, h):
                    super().__init__()
                    self.h = h
                    self.qkv = nn.Linear(d, 3 * d)
                def forward(self, x):
                    B, T, C = x.shape
                    q, k, v = self.qkv(x).view(B, T, 3, self.h, C // self.h).permute(2, 0, 3, 1, 4)
                    causal = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=1)
                    y = F.scaled_dot_product_attention(q, k, v, attn_mask=~causal)
                    return y.transpose(1, 2).reshape(B, T, C)
            """,
        ),
        # HF-style SDPA attention with `attention_mask == 0`, `from torch.nn import functional as F`.
        Invalid(
            """
            import torch.nn as nn
            from torch.nn import functional as F
            class BertSdpaSelfAttention(nn.Module):
                def forward(self, query_layer, key_layer, value_layer, attention_mask=None):
                    mask = attention_mask[:, None, None, :] == 0
                    return F.scaled_dot_product_attention(query_layer, key_layer, value_layer, attn_mask=mask)
            """,
            fixed="""
            import torch.nn as nn
            from torch.nn import functional as F
            class BertSdpaSelfAttention(nn.Module):
                def forward(self, query_layer, key_layer, value_layer, attention_mask=None):
                    mask = attention_mask[:, None, None, :] == 0
                    return F.scaled_dot_product_attention(query_layer, key_layer, value_layer, attn_mask=~mask)
            """,
        ),
        # `attention_mask == 1` (True = attend) as nn.MultiheadAttention's key_padding_mask.
        Invalid(
            """
            import torch.nn as nn
            class Block(nn.Module):
                def __init__(self, d, h):
                    super().__init__()
                    self.attn = nn.MultiheadAttention(d, h, batch_first=True)
                def forward(self, x, attention_mask):
                    return self.attn(x, x, x, key_padding_mask=attention_mask == 1)[0]
            """,
            fixed="""
            import torch.nn as nn
            class Block(nn.Module):
                def __init__(self, d, h):
                    super().__init__()
                    self.attn = nn.MultiheadAttention(d, h, batch_first=True)
                def forward(self, x, attention_mask):
                    return self.attn(x, x, x, key_padding_mask=~(attention_mask == 1))[0]
            """,
        ),
        # A tril keep-mask as nn.MultiheadAttention's attn_mask.
        Invalid(
            """
            import torch
            import torch.nn as nn
            class Block(nn.Module):
                def __init__(self, d, h):
                    super().__init__()
                    self.attn = nn.MultiheadAttention(d, h, batch_first=True)
                def forward(self, x):
                    T = x.size(1)
                    keep = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
                    return self.attn(x, x, x, attn_mask=keep, need_weights=False)[0]
            """,
            fixed="""
            import torch
            import torch.nn as nn
            class Block(nn.Module):
                def __init__(self, d, h):
                    super().__init__()
                    self.attn = nn.MultiheadAttention(d, h, batch_first=True)
                def forward(self, x):
                    T = x.size(1)
                    keep = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
                    return self.attn(x, x, x, attn_mask=~keep, need_weights=False)[0]
            """,
        ),
        # A tril mask as nn.TransformerEncoder's `mask`.
        Invalid(
            """
            import torch
            import torch.nn as nn
            class GPT(nn.Module):
                def __init__(self, d):
                    super().__init__()
                    layer = nn.TransformerEncoderLayer(d, 8, batch_first=True)
                    self.blocks = nn.TransformerEncoder(layer, 6)
                def forward(self, x):
                    T = x.size(1)
                    causal = torch.tril(torch.ones(T, T)).bool()
                    return self.blocks(x, mask=causal)
            """,
            fixed="""
            import torch
            import torch.nn as nn
            class GPT(nn.Module):
                def __init__(self, d):
                    super().__init__()
                    layer = nn.TransformerEncoderLayer(d, 8, batch_first=True)
                    self.blocks = nn.TransformerEncoder(layer, 6)
                def forward(self, x):
                    T = x.size(1)
                    causal = torch.tril(torch.ones(T, T)).bool()
                    return self.blocks(x, mask=~causal)
            """,
        ),
        # `torch.ones(T, T).tril().bool()` inline into nn.MultiheadAttention.
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
                    return self.attn(x, x, x, attn_mask=torch.ones(T, T).tril().bool())[0]
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
                    return self.attn(x, x, x, attn_mask=~torch.ones(T, T).tril().bool())[0]
            """,
        ),
        # Top-level script: a triu bool mask into SDPA.
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            q = k = v = torch.randn(1, 4, 8, 16)
            mask = torch.triu(torch.ones(8, 8), diagonal=1).bool()
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            """,
            fixed="""
            import torch
            import torch.nn.functional as F
            q = k = v = torch.randn(1, 4, 8, 16)
            mask = torch.triu(torch.ones(8, 8), diagonal=1).bool()
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=~mask)
            """,
        ),
        # `key_padding_mask` reshaped, into torch.nn.functional.scaled_dot_product_attention.
        Invalid(
            """
            import torch
            def attend(q, k, v, key_padding_mask):
                m = key_padding_mask.unsqueeze(1).unsqueeze(2)
                return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m)
            """,
            fixed="""
            import torch
            def attend(q, k, v, key_padding_mask):
                m = key_padding_mask.unsqueeze(1).unsqueeze(2)
                return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=~m)
            """,
        ),
        # `tokens == PAD` from a pad_sequence batch into SDPA.
        Invalid(
            """
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence
            PAD = 0
            def encode(token_lists, embed, wq, wk, wv):
                tokens = pad_sequence(token_lists, batch_first=True, padding_value=PAD)
                x = embed(tokens)
                pad = tokens == PAD
                return F.scaled_dot_product_attention(x @ wq, x @ wk, x @ wv, attn_mask=pad[:, None, :])
            """,
            fixed="""
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence
            PAD = 0
            def encode(token_lists, embed, wq, wk, wv):
                tokens = pad_sequence(token_lists, batch_first=True, padding_value=PAD)
                x = embed(tokens)
                pad = tokens == PAD
                return F.scaled_dot_product_attention(x @ wq, x @ wk, x @ wv, attn_mask=~pad[:, None, :])
            """,
        ),
        # A keep-mask from lengths as nn.MultiheadAttention's key_padding_mask.
        Invalid(
            """
            import torch
            import torch.nn as nn
            class Enc(nn.Module):
                def __init__(self, d, h):
                    super().__init__()
                    self.mha = nn.MultiheadAttention(d, h, batch_first=True)
                def forward(self, x, lengths):
                    keep = torch.arange(x.size(1), device=x.device)[None, :] < lengths[:, None]
                    return self.mha(x, x, x, key_padding_mask=keep)[0]
            """,
            fixed="""
            import torch
            import torch.nn as nn
            class Enc(nn.Module):
                def __init__(self, d, h):
                    super().__init__()
                    self.mha = nn.MultiheadAttention(d, h, batch_first=True)
                def forward(self, x, lengths):
                    keep = torch.arange(x.size(1), device=x.device)[None, :] < lengths[:, None]
                    return self.mha(x, x, x, key_padding_mask=~keep)[0]
            """,
        ),
        # HF `attention_mask.bool()` as nn.TransformerEncoder's src_key_padding_mask.
        Invalid(
            """
            import torch.nn as nn
            class Enc(nn.Module):
                def __init__(self, layer):
                    super().__init__()
                    self.encoder = nn.TransformerEncoder(layer, 2)
                def forward(self, x, attention_mask):
                    return self.encoder(x, src_key_padding_mask=attention_mask.bool())
            """,
            fixed="""
            import torch.nn as nn
            class Enc(nn.Module):
                def __init__(self, layer):
                    super().__init__()
                    self.encoder = nn.TransformerEncoder(layer, 2)
                def forward(self, x, attention_mask):
                    return self.encoder(x, src_key_padding_mask=~attention_mask.bool())
            """,
        ),
        # The .triu(diagonal=1) method form.
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            def causal_attention(q, k, v):
                T = q.size(-2)
                future = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(diagonal=1)
                return F.scaled_dot_product_attention(q, k, v, attn_mask=future)
            """,
            fixed="""
            import torch
            import torch.nn.functional as F
            def causal_attention(q, k, v):
                T = q.size(-2)
                future = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(diagonal=1)
                return F.scaled_dot_product_attention(q, k, v, attn_mask=~future)
            """,
        ),
        # `tokens != PAD` as nn.Transformer's tgt_key_padding_mask.
        Invalid(
            """
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            PAD = 0
            class Seq2Seq(nn.Module):
                def __init__(self, d):
                    super().__init__()
                    self.transformer = nn.Transformer(d, 8, batch_first=True)
                def forward(self, src, tgt, tgt_lists):
                    tgt_tokens = pad_sequence(tgt_lists, batch_first=True, padding_value=PAD)
                    return self.transformer(src, tgt, tgt_key_padding_mask=tgt_tokens != PAD)
            """,
            fixed="""
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            PAD = 0
            class Seq2Seq(nn.Module):
                def __init__(self, d):
                    super().__init__()
                    self.transformer = nn.Transformer(d, 8, batch_first=True)
                def forward(self, src, tgt, tgt_lists):
                    tgt_tokens = pad_sequence(tgt_lists, batch_first=True, padding_value=PAD)
                    return self.transformer(src, tgt, tgt_key_padding_mask=~(tgt_tokens != PAD))
            """,
        ),
        # `tokens != PAD` as nn.TransformerDecoder's tgt_key_padding_mask.
        Invalid(
            """
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            PAD = 0
            class Dec(nn.Module):
                def __init__(self, d):
                    super().__init__()
                    layer = nn.TransformerDecoderLayer(d, 8, batch_first=True)
                    self.decoder = nn.TransformerDecoder(layer, 6)
                def forward(self, tgt, memory, tgt_lists):
                    tgt_tokens = pad_sequence(tgt_lists, batch_first=True, padding_value=PAD)
                    return self.decoder(tgt, memory, tgt_key_padding_mask=tgt_tokens != PAD)
            """,
            fixed="""
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            PAD = 0
            class Dec(nn.Module):
                def __init__(self, d):
                    super().__init__()
                    layer = nn.TransformerDecoderLayer(d, 8, batch_first=True)
                    self.decoder = nn.TransformerDecoder(layer, 6)
                def forward(self, tgt, memory, tgt_lists):
                    tgt_tokens = pad_sequence(tgt_lists, batch_first=True, padding_value=PAD)
                    return self.decoder(tgt, memory, tgt_key_padding_mask=~(tgt_tokens != PAD))
            """,
        ),
        # A tril mask as nn.TransformerDecoder's tgt_mask.
        Invalid(
            """
            import torch
            import torch.nn as nn
            class Dec(nn.Module):
                def __init__(self, d):
                    super().__init__()
                    layer = nn.TransformerDecoderLayer(d, 8, batch_first=True)
                    self.decoder = nn.TransformerDecoder(layer, 6)
                def forward(self, tgt, memory):
                    T = tgt.size(1)
                    return self.decoder(tgt, memory, tgt_mask=torch.tril(torch.ones(T, T, dtype=torch.bool)))
            """,
            fixed="""
            import torch
            import torch.nn as nn
            class Dec(nn.Module):
                def __init__(self, d):
                    super().__init__()
                    layer = nn.TransformerDecoderLayer(d, 8, batch_first=True)
                    self.decoder = nn.TransformerDecoder(layer, 6)
                def forward(self, tgt, memory):
                    T = tgt.size(1)
                    return self.decoder(tgt, memory, tgt_mask=~torch.tril(torch.ones(T, T, dtype=torch.bool)))
            """,
        ),
        # A helper marks the real tokens (ids above the pad id 0) for a key-padding argument.
        Invalid(
            """
            import torch
            import torch.nn as nn


            def real_tokens(ids):
                return ids > 0


            class TextEncoder(nn.Module):
                def __init__(self, vocab, d=64):
                    super().__init__()
                    self.tok = nn.Embedding(vocab, d, padding_idx=0)
                    layer = nn.TransformerEncoderLayer(d, 4, batch_first=True)
                    self.encoder = nn.TransformerEncoder(layer, 2)

                def forward(self, ids):
                    return self.encoder(self.tok(ids), src_key_padding_mask=real_tokens(ids))
            """,
            fixed="""
            import torch
            import torch.nn as nn


            def real_tokens(ids):
                return ids > 0


            class TextEncoder(nn.Module):
                def __init__(self, vocab, d=64):
                    super().__init__()
                    self.tok = nn.Embedding(vocab, d, padding_idx=0)
                    layer = nn.TransformerEncoderLayer(d, 4, batch_first=True)
                    self.encoder = nn.TransformerEncoder(layer, 2)

                def forward(self, ids):
                    return self.encoder(self.tok(ids), src_key_padding_mask=~real_tokens(ids))
            """,
            line=17,
        ),
        # The same masks True at real tokens: reported where the training step passes them.
        Invalid(
            """
            import torch
            import torch.nn as nn
            from torch.nn import Transformer

            PAD_IDX = 1


            class Seq2Seq(nn.Module):
                def __init__(self, d, nhead, vocab):
                    super().__init__()
                    self.transformer = Transformer(d_model=d, nhead=nhead)
                    self.emb = nn.Embedding(vocab, d)

                def forward(self, src, trg, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask, memory_key_padding_mask):
                    outs = self.transformer(self.emb(src), self.emb(trg), src_mask, tgt_mask, None,
                                            src_padding_mask, tgt_padding_mask, memory_key_padding_mask)
                    return outs


            def create_mask(src, tgt):
                src_padding_mask = (src != PAD_IDX).transpose(0, 1)
                tgt_padding_mask = (tgt != PAD_IDX).transpose(0, 1)
                return src_padding_mask, tgt_padding_mask


            def train_epoch(model, src, tgt):
                src_padding_mask, tgt_padding_mask = create_mask(src, tgt)
                return model(src, tgt, None, None, src_padding_mask, tgt_padding_mask, src_padding_mask)
            """
        ),
        # One mask (True = a real frame) handed to the pooling, which fills where it is False, and
        # to nn.MultiheadAttention, which reads True as padding: the mask is right, the attention
        # reads it inverted.
        Invalid(
            """
            import torch
            from torch import nn
            class Layer(nn.Module):
                def __init__(self, d, h):
                    super().__init__()
                    self.attn = nn.MultiheadAttention(d, h, batch_first=True)
                def forward(self, x, frame_mask):
                    return x + self.attn(x, x, x, key_padding_mask=frame_mask, need_weights=False)[0]
            class Pooling(nn.Module):
                def __init__(self, d):
                    super().__init__()
                    self.score = nn.Linear(d, 1)
                def forward(self, x, frame_mask):
                    w = self.score(x).squeeze(-1).masked_fill(~frame_mask, float("-inf"))
                    return (w.softmax(dim=-1).unsqueeze(-1) * x).sum(1)
            class Encoder(nn.Module):
                def __init__(self, d=256, h=4):
                    super().__init__()
                    self.layer = Layer(d, h)
                    self.pool = Pooling(d)
                def forward(self, x, lengths):
                    frame_mask = torch.arange(x.size(1), device=x.device)[None, :] < lengths[:, None]
                    return self.pool(self.layer(x, frame_mask), frame_mask)
            """,
            line=8,
            fixed="""
            import torch
            from torch import nn
            class Layer(nn.Module):
                def __init__(self, d, h):
                    super().__init__()
                    self.attn = nn.MultiheadAttention(d, h, batch_first=True)
                def forward(self, x, frame_mask):
                    return x + self.attn(x, x, x, key_padding_mask=~frame_mask, need_weights=False)[0]
            class Pooling(nn.Module):
                def __init__(self, d):
                    super().__init__()
                    self.score = nn.Linear(d, 1)
                def forward(self, x, frame_mask):
                    w = self.score(x).squeeze(-1).masked_fill(~frame_mask, float("-inf"))
                    return (w.softmax(dim=-1).unsqueeze(-1) * x).sum(1)
            class Encoder(nn.Module):
                def __init__(self, d=256, h=4):
                    super().__init__()
                    self.layer = Layer(d, h)
                    self.pool = Pooling(d)
                def forward(self, x, lengths):
                    frame_mask = torch.arange(x.size(1), device=x.device)[None, :] < lengths[:, None]
                    return self.pool(self.layer(x, frame_mask), frame_mask)
            """,
        ),
        # A length mask (True = a real frame, from lengths a conv front end shortened) handed through
        # a loop over layers to nn.MultiheadAttention as `valid_mask`: the layer's own name for it
        # says what the caller passes, so the use that reads it the other way is reported.
        Invalid(
            """
            import torch
            from torch import nn
            class Subsampling(nn.Module):
                def __init__(self, d_model):
                    super().__init__()
                    self.conv = nn.Conv1d(d_model, d_model, 3, stride=2)
                def forward(self, x, lengths):
                    x = self.conv(x.transpose(1, 2)).transpose(1, 2)
                    return x, (lengths - 1) // 2
            class EncoderLayer(nn.Module):
                def __init__(self, d_model, n_heads):
                    super().__init__()
                    self.self_attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
                def forward(self, x, valid_mask):
                    h, _ = self.self_attn(x, x, x, key_padding_mask=valid_mask)
                    return x + h
            class Encoder(nn.Module):
                def __init__(self, d_model=256, n_heads=4, n_layers=6):
                    super().__init__()
                    self.subsample = Subsampling(d_model)
                    self.layers = nn.ModuleList([EncoderLayer(d_model, n_heads) for _ in range(n_layers)])
                def forward(self, feats, feat_lens):
                    x, lens = self.subsample(feats, feat_lens)
                    valid_mask = torch.arange(x.size(1), device=x.device)[None, :] < lens[:, None]
                    for layer in self.layers:
                        x = layer(x, valid_mask)
                    return x
            """,
            line=15,
            fixed="""
            import torch
            from torch import nn
            class Subsampling(nn.Module):
                def __init__(self, d_model):
                    super().__init__()
                    self.conv = nn.Conv1d(d_model, d_model, 3, stride=2)
                def forward(self, x, lengths):
                    x = self.conv(x.transpose(1, 2)).transpose(1, 2)
                    return x, (lengths - 1) // 2
            class EncoderLayer(nn.Module):
                def __init__(self, d_model, n_heads):
                    super().__init__()
                    self.self_attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
                def forward(self, x, valid_mask):
                    h, _ = self.self_attn(x, x, x, key_padding_mask=~valid_mask)
                    return x + h
            class Encoder(nn.Module):
                def __init__(self, d_model=256, n_heads=4, n_layers=6):
                    super().__init__()
                    self.subsample = Subsampling(d_model)
                    self.layers = nn.ModuleList([EncoderLayer(d_model, n_heads) for _ in range(n_layers)])
                def forward(self, feats, feat_lens):
                    x, lens = self.subsample(feats, feat_lens)
                    valid_mask = torch.arange(x.size(1), device=x.device)[None, :] < lens[:, None]
                    for layer in self.layers:
                        x = layer(x, valid_mask)
                    return x
            """,
        ),
    ]
