"""ATN207's examples: run as tests (tests/test_rule_examples.py); the flagged one is its page's."""

from attnlint.rules.base import Invalid, Valid

VALID = [
    # The same helper: the self-attention causal with no mask, the cross-attention masked and
    # not causal.
    Valid(
        """
        import torch.nn as nn
        import torch.nn.functional as F


        class MHA(nn.Module):
            def __init__(self, d, h):
                super().__init__()
                self.h, self.d_k = h, d // h
                self.w_q, self.w_k, self.w_v = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)

            def _split(self, x):
                b, t, _ = x.shape
                return x.view(b, t, self.h, self.d_k).transpose(1, 2)

            def forward(self, q, k, v, attn_mask=None, causal=False):
                q, k, v = self._split(self.w_q(q)), self._split(self.w_k(k)), self._split(self.w_v(v))
                out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=causal)
                b, _, t, _ = out.shape
                return out.transpose(1, 2).reshape(b, t, self.h * self.d_k)


        class DecoderLayer(nn.Module):
            def __init__(self, d, h):
                super().__init__()
                self.self_attn = MHA(d, h)
                self.src_attn = MHA(d, h)

            def forward(self, y, memory, tgt_mask, src_mask):
                y = y + self.self_attn(y, y, y, causal=True)
                return y + self.src_attn(y, memory, memory, attn_mask=src_mask[:, None, None, :])
        """
    ),
    # A dict of keyword arguments that sets is_causal without a mask.
    Valid(
        """
        import torch.nn.functional as F


        def causal_attention(q, k, v, train):
            options = dict(dropout_p=0.1 if train else 0.0, is_causal=True)
            return F.scaled_dot_product_attention(q, k, v, **options)
        """
    ),
    # is_causal alone.
    Valid(
        """
        import torch.nn.functional as F
        def attend(q, k, v):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        """
    ),
    # A mask alone.
    Valid(
        """
        import torch.nn.functional as F
        def attend(q, k, v, attn_mask):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
        """
    ),
    # The flag decided at run time (Hugging Face's sdpa path).
    Valid(
        """
        import torch
        def sdpa_attention_forward(module, query, key, value, attention_mask):
            is_causal = query.shape[2] > 1 and attention_mask is None
            return torch.nn.functional.scaled_dot_product_attention(
                query, key, value, attn_mask=attention_mask, is_causal=is_causal
            )
        """
    ),
    # Mask given explicitly as None.
    Valid(
        """
        import torch.nn.functional as F
        def attend(q, k, v):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=None, is_causal=True)
        """
    ),
    # A KV cache with the causal part folded in, lower-right aligned, and no flag.
    Valid(
        """
        import torch
        import torch.nn.functional as F
        def decode(q, k, v, pad_keep):
            L, S = q.size(-2), k.size(-2)
            causal = torch.ones(L, S, dtype=torch.bool, device=q.device).tril(S - L)
            return F.scaled_dot_product_attention(q, k, v, attn_mask=pad_keep & causal)
        """
    ),
    # is_causal=False with a mask.
    Valid(
        """
        import torch.nn.functional as F
        def attend(q, k, v, mask):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=False)
        """
    ),
    # nn.MultiheadAttention with the causal mask and the hint (the documented use).
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
                causal = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=1)
                return self.attn(x, x, x, attn_mask=causal, is_causal=True, need_weights=False)[0]
        """
    ),
    # nn.MultiheadAttention with a mask we cannot see and the hint: the caller's promise.
    Valid(
        """
        import torch.nn as nn
        class Block(nn.Module):
            def __init__(self, d, h):
                super().__init__()
                self.attn = nn.MultiheadAttention(d, h)
            def forward(self, x, attn_mask):
                return self.attn(x, x, x, attn_mask=attn_mask, is_causal=True)[0]
        """
    ),
    # Two branches: the flag on one, the mask on the other.
    Valid(
        """
        import torch.nn.functional as F
        def attend(q, k, v, mask=None):
            if mask is None:
                return F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        """
    ),
    # Module with a configured flag and no mask.
    Valid(
        """
        import torch.nn as nn
        import torch.nn.functional as F
        class CausalSelfAttention(nn.Module):
            def forward(self, x):
                q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
                y = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=True)
                return self.c_proj(y)
        """
    ),
    # The flag from a module attribute: not shown True here.
    Valid(
        """
        import torch.nn as nn
        import torch.nn.functional as F
        class Attention(nn.Module):
            def forward(self, q, k, v, mask):
                return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=self.is_causal)
        """
    ),
    # A user function named like SDPA's argument list but not SDPA.
    Valid(
        """
        def attention(q, k, v, attn_mask=None, is_causal=False):
            return q
        def forward(q, k, v, mask):
            return attention(q, k, v, attn_mask=mask, is_causal=True)
        """
    ),
    # Causal mask via key padding for nn.MultiheadAttention: key_padding_mask is not attn_mask.
    Valid(
        """
        import torch
        import torch.nn as nn
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.mha = nn.MultiheadAttention(64, 4, batch_first=True)
            def forward(self, x, key_padding_mask):
                T = x.size(1)
                causal = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
                return self.mha(x, x, x, key_padding_mask=key_padding_mask, attn_mask=causal, is_causal=True)[0]
        """
    ),
    # einops heads, flag alone.
    Valid(
        """
        import torch.nn.functional as F
        from einops import rearrange
        def attend(x, to_qkv, heads):
            q, k, v = map(lambda t: rearrange(t, "b n (h d) -> b h n d", h=heads), to_qkv(x).chunk(3, dim=-1))
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        """
    ),
    # is_causal positional False.
    Valid(
        """
        import torch.nn.functional as F
        def attend(q, k, v, mask):
            return F.scaled_dot_product_attention(q, k, v, mask, 0.0, False)
        """
    ),
    # A computed flag that is off whenever a mask is given.
    Valid(
        """
        import torch.nn as nn
        import torch.nn.functional as F
        class SelfAttention(nn.Module):
            def forward(self, q, k, v, pad_mask=None):
                B, H, T, D = q.shape
                causal = T > 1 and pad_mask is None
                return F.scaled_dot_product_attention(q, k, v, attn_mask=pad_mask, is_causal=causal)
        """
    ),
    # The flag cleared on the path that builds a mask.
    Valid(
        """
        import torch
        import torch.nn.functional as F
        def attend(q, k, v, lengths=None):
            use_causal = q.size(-2) != 1
            mask = None
            if lengths is not None:
                mask = torch.arange(k.size(-2), device=k.device)[None, :] < lengths[:, None]
                mask = mask[:, None, None, :]
                use_causal = False
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=use_causal)
        """
    ),
    # A size test the other way round: true only for a single query.
    Valid(
        """
        import torch.nn.functional as F
        def attend(q, k, v, bias):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=bias, is_causal=q.size(-2) == 1)
        """
    ),
    # A computed flag and no mask.
    Valid(
        """
        import torch.nn.functional as F
        def attend(q, k, v):
            seq_len = q.shape[2]
            return F.scaled_dot_product_attention(q, k, v, attn_mask=None, is_causal=seq_len > 1)
        """
    ),
]

INVALID = [
    # A helper whose `is_causal` is its `causal` parameter, called with the target's padding
    # mask and `causal=True`.
    Invalid(
        """
        import torch.nn as nn
        import torch.nn.functional as F


        class MHA(nn.Module):
            def __init__(self, d, h):
                super().__init__()
                self.h, self.d_k = h, d // h
                self.w_q, self.w_k, self.w_v = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)

            def _split(self, x):
                b, t, _ = x.shape
                return x.view(b, t, self.h, self.d_k).transpose(1, 2)

            def forward(self, q, k, v, attn_mask=None, causal=False):
                q, k, v = self._split(self.w_q(q)), self._split(self.w_k(k)), self._split(self.w_v(v))
                out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=causal)
                b, _, t, _ = out.shape
                return out.transpose(1, 2).reshape(b, t, self.h * self.d_k)


        class DecoderLayer(nn.Module):
            def __init__(self, d, h):
                super().__init__()
                self.self_attn = MHA(d, h)
                self.src_attn = MHA(d, h)

            def forward(self, y, memory, tgt_mask, src_mask):
                y = y + self.self_attn(y, y, y, attn_mask=tgt_mask[:, None, None, :], causal=True)
                return y + self.src_attn(y, memory, memory, attn_mask=src_mask[:, None, None, :])
        """,
        line=29,
    ),
    # KV-cache decoding: the queries are the last positions.
    Invalid(
        """
        import torch
        import torch.nn.functional as F
        def decode_step(q, k, v, attn_mask):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=True)
        """,
        fixed="""
        import torch
        import torch.nn.functional as F
        def decode_step(q, k, v, attn_mask):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=((attn_mask & torch.ones(q.size(-2), k.size(-2), dtype=torch.bool, device=q.device).tril(k.size(-2) - q.size(-2))) if attn_mask.dtype == torch.bool else attn_mask.masked_fill(~torch.ones(q.size(-2), k.size(-2), dtype=torch.bool, device=q.device).tril(k.size(-2) - q.size(-2)), float("-inf"))), is_causal=False)
        """,
        line=4,
    ),
    # A padding mask built here (bool) with the flag.
    Invalid(
        """
        import torch
        import torch.nn.functional as F
        def attend(q, k, v, lengths):
            keep = torch.arange(k.size(-2))[None, :] < lengths[:, None]
            keep = keep[:, None, None, :]
            return F.scaled_dot_product_attention(q, k, v, attn_mask=keep, is_causal=True)
        """,
        fixed="""
        import torch
        import torch.nn.functional as F
        def attend(q, k, v, lengths):
            keep = torch.arange(k.size(-2))[None, :] < lengths[:, None]
            keep = keep[:, None, None, :]
            return F.scaled_dot_product_attention(q, k, v, attn_mask=(keep & torch.ones(q.size(-2), k.size(-2), dtype=torch.bool, device=q.device).tril(k.size(-2) - q.size(-2))), is_causal=False)
        """,
        page=True,
    ),
    # The mask is itself causal: the flag is redundant (and raises on some backends).
    Invalid(
        """
        import torch
        import torch.nn.functional as F
        def attend(q, k, v):
            T = q.size(-2)
            causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
            return F.scaled_dot_product_attention(q, k, v, attn_mask=causal, is_causal=True)
        """,
        fixed="""
        import torch
        import torch.nn.functional as F
        def attend(q, k, v):
            T = q.size(-2)
            causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
            return F.scaled_dot_product_attention(q, k, v, attn_mask=causal, is_causal=False)
        """,
    ),
    # Cross attention with a memory mask and the flag.
    Invalid(
        """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        class CrossAttention(nn.Module):
            def forward(self, x, memory, memory_mask):
                q = self.to_q(x)
                k = self.to_k(memory)
                v = self.to_v(memory)
                return F.scaled_dot_product_attention(q, k, v, attn_mask=memory_mask, is_causal=True)
        """,
        fixed="""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        class CrossAttention(nn.Module):
            def forward(self, x, memory, memory_mask):
                q = self.to_q(x)
                k = self.to_k(memory)
                v = self.to_v(memory)
                return F.scaled_dot_product_attention(q, k, v, attn_mask=((memory_mask & torch.ones(q.size(-2), k.size(-2), dtype=torch.bool, device=q.device).tril(k.size(-2) - q.size(-2))) if memory_mask.dtype == torch.bool else memory_mask.masked_fill(~torch.ones(q.size(-2), k.size(-2), dtype=torch.bool, device=q.device).tril(k.size(-2) - q.size(-2)), float("-inf"))), is_causal=False)
        """,
    ),
    # A module with a KV cache.
    Invalid(
        """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        class CachedAttention(nn.Module):
            def forward(self, x, cache_k, cache_v, mask):
                q = self.wq(x)
                k = torch.cat([cache_k, self.wk(x)], dim=-2)
                v = torch.cat([cache_v, self.wv(x)], dim=-2)
                out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=0.0, is_causal=True)
                return self.wo(out)
        """,
        fixed="""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        class CachedAttention(nn.Module):
            def forward(self, x, cache_k, cache_v, mask):
                q = self.wq(x)
                k = torch.cat([cache_k, self.wk(x)], dim=-2)
                v = torch.cat([cache_v, self.wv(x)], dim=-2)
                out = F.scaled_dot_product_attention(q, k, v, attn_mask=((mask & torch.ones(q.size(-2), k.size(-2), dtype=torch.bool, device=q.device).tril(k.size(-2) - q.size(-2))) if mask.dtype == torch.bool else mask.masked_fill(~torch.ones(q.size(-2), k.size(-2), dtype=torch.bool, device=q.device).tril(k.size(-2) - q.size(-2)), float("-inf"))), dropout_p=0.0, is_causal=False)
                return self.wo(out)
        """,
    ),
    # Positional mask.
    Invalid(
        """
        import torch
        import torch.nn.functional as F
        def attend(q, k, v, mask):
            return F.scaled_dot_product_attention(q, k, v, mask, is_causal=True)
        """,
        fixed="""
        import torch
        import torch.nn.functional as F
        def attend(q, k, v, mask):
            return F.scaled_dot_product_attention(q, k, v, ((mask & torch.ones(q.size(-2), k.size(-2), dtype=torch.bool, device=q.device).tril(k.size(-2) - q.size(-2))) if mask.dtype == torch.bool else mask.masked_fill(~torch.ones(q.size(-2), k.size(-2), dtype=torch.bool, device=q.device).tril(k.size(-2) - q.size(-2)), float("-inf"))), is_causal=False)
        """,
    ),
    # A float additive prefix-LM bias (zeros filled with -inf: float, so the causal part is
    # folded in as a fill).
    Invalid(
        """
        import torch
        import torch.nn.functional as F
        def prefix_lm(q, k, v, prefix_len):
            n = q.size(-2)
            bias = torch.zeros(n, n).masked_fill(torch.arange(n)[None, :] >= prefix_len, float("-inf"))
            return F.scaled_dot_product_attention(q, k, v, attn_mask=bias, is_causal=True)
        """,
        fixed="""
        import torch
        import torch.nn.functional as F
        def prefix_lm(q, k, v, prefix_len):
            n = q.size(-2)
            bias = torch.zeros(n, n).masked_fill(torch.arange(n)[None, :] >= prefix_len, float("-inf"))
            return F.scaled_dot_product_attention(q, k, v, attn_mask=bias.masked_fill(~torch.ones(q.size(-2), k.size(-2), dtype=torch.bool, device=q.device).tril(k.size(-2) - q.size(-2)), float("-inf")), is_causal=False)
        """,
    ),
    # HF-style module-level function.
    Invalid(
        """
        import torch
        def sdpa_attention_forward(module, query, key, value, attention_mask, dropout=0.0):
            return torch.nn.functional.scaled_dot_product_attention(
                query, key, value, attn_mask=attention_mask, dropout_p=dropout, is_causal=True
            )
        """,
        fixed="""
        import torch
        def sdpa_attention_forward(module, query, key, value, attention_mask, dropout=0.0):
            return torch.nn.functional.scaled_dot_product_attention(
                query, key, value, attn_mask=((attention_mask & torch.ones(query.size(-2), key.size(-2), dtype=torch.bool, device=query.device).tril(key.size(-2) - query.size(-2))) if attention_mask.dtype == torch.bool else attention_mask.masked_fill(~torch.ones(query.size(-2), key.size(-2), dtype=torch.bool, device=query.device).tril(key.size(-2) - query.size(-2)), float("-inf"))), dropout_p=dropout, is_causal=False
            )
        """,
    ),
    # Mask indexed in the call: no plain name to fold into, no fix.
    Invalid(
        """
        import torch.nn.functional as F
        def attend(q, k, v, key_padding_mask):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=~key_padding_mask[:, None, None, :], is_causal=True)
        """,
        fixed=None,
    ),
    # from-import spelling.
    Invalid(
        """
        import torch
        from torch.nn.functional import scaled_dot_product_attention as sdpa
        def attend(q, k, v, mask):
            return sdpa(q, k, v, attn_mask=mask, is_causal=True)
        """,
        fixed="""
        import torch
        from torch.nn.functional import scaled_dot_product_attention as sdpa
        def attend(q, k, v, mask):
            return sdpa(q, k, v, attn_mask=((mask & torch.ones(q.size(-2), k.size(-2), dtype=torch.bool, device=q.device).tril(k.size(-2) - q.size(-2))) if mask.dtype == torch.bool else mask.masked_fill(~torch.ones(q.size(-2), k.size(-2), dtype=torch.bool, device=q.device).tril(k.size(-2) - q.size(-2)), float("-inf"))), is_causal=False)
        """,
    ),
    # Config dataclass driving a block.
    Invalid(
        """
        from dataclasses import dataclass
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        @dataclass
        class Config:
            n_head: int = 4
            n_embd: int = 64
        class Block(nn.Module):
            def __init__(self, cfg: Config):
                super().__init__()
                self.cfg = cfg
            def forward(self, q, k, v, pad_mask):
                return F.scaled_dot_product_attention(q, k, v, attn_mask=pad_mask, is_causal=True)
        """,
        fixed="""
        from dataclasses import dataclass
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        @dataclass
        class Config:
            n_head: int = 4
            n_embd: int = 64
        class Block(nn.Module):
            def __init__(self, cfg: Config):
                super().__init__()
                self.cfg = cfg
            def forward(self, q, k, v, pad_mask):
                return F.scaled_dot_product_attention(q, k, v, attn_mask=((pad_mask & torch.ones(q.size(-2), k.size(-2), dtype=torch.bool, device=q.device).tril(k.size(-2) - q.size(-2))) if pad_mask.dtype == torch.bool else pad_mask.masked_fill(~torch.ones(q.size(-2), k.size(-2), dtype=torch.bool, device=q.device).tril(k.size(-2) - q.size(-2)), float("-inf"))), is_causal=False)
        """,
    ),
    # A bool mask with the convention shown (True = keep) and the flag.
    Invalid(
        """
        import torch
        import torch.nn.functional as F
        def attend(q, k, v, ids, pad_id):
            keep = (ids != pad_id)[:, None, None, :]
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=keep, is_causal=True)
            return out
        """,
        fixed="""
        import torch
        import torch.nn.functional as F
        def attend(q, k, v, ids, pad_id):
            keep = (ids != pad_id)[:, None, None, :]
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=(keep & torch.ones(q.size(-2), k.size(-2), dtype=torch.bool, device=q.device).tril(k.size(-2) - q.size(-2))), is_causal=False)
            return out
        """,
    ),
    # nn.MultiheadAttention told a padding mask is causal.
    Invalid(
        """
        import torch
        import torch.nn as nn
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.mha = nn.MultiheadAttention(64, 1, batch_first=True)
            def forward(self, x, lengths):
                T = x.size(1)
                pad = torch.arange(T)[None, :] >= lengths[:, None]
                mask = pad[:, None, :].expand(-1, T, -1)
                return self.mha(x, x, x, attn_mask=mask, is_causal=True)[0]
        """,
        fixed=None,
    ),
    # A mask created by a helper call in a method, then passed with the flag.
    Invalid(
        """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        class Attention(nn.Module):
            def forward(self, q, k, v, attention_mask=None):
                mask = attention_mask
                return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=True)
        """,
        fixed="""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        class Attention(nn.Module):
            def forward(self, q, k, v, attention_mask=None):
                mask = attention_mask
                return F.scaled_dot_product_attention(q, k, v, attn_mask=((mask & torch.ones(q.size(-2), k.size(-2), dtype=torch.bool, device=q.device).tril(k.size(-2) - q.size(-2))) if mask.dtype == torch.bool else mask.masked_fill(~torch.ones(q.size(-2), k.size(-2), dtype=torch.bool, device=q.device).tril(k.size(-2) - q.size(-2)), float("-inf"))), is_causal=False)
        """,
    ),
    # Both given in a loop over layers.
    Invalid(
        """
        import torch
        import torch.nn.functional as F
        def run(layers, x, mask):
            for layer in layers:
                q, k, v = layer(x)
                x = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=True)
            return x
        """,
        fixed="""
        import torch
        import torch.nn.functional as F
        def run(layers, x, mask):
            for layer in layers:
                q, k, v = layer(x)
                x = F.scaled_dot_product_attention(q, k, v, attn_mask=((mask & torch.ones(q.size(-2), k.size(-2), dtype=torch.bool, device=q.device).tril(k.size(-2) - q.size(-2))) if mask.dtype == torch.bool else mask.masked_fill(~torch.ones(q.size(-2), k.size(-2), dtype=torch.bool, device=q.device).tril(k.size(-2) - q.size(-2)), float("-inf"))), is_causal=False)
            return x
        """,
    ),
    # The flag computed from the query length: True for any prompt, padded or not.
    Invalid(
        """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        class Decoder(nn.Module):
            def forward(self, q, k, v, keep=None):
                B, H, T, D = q.shape
                bias = None
                if keep is not None:
                    bias = (1.0 - keep[:, None, None, :].to(q.dtype)) * torch.finfo(q.dtype).min
                causal = T > 1
                return F.scaled_dot_product_attention(q, k, v, attn_mask=bias, is_causal=causal)
        """,
        line=11,
    ),
    # The same test written inline, with the literal first.
    Invalid(
        """
        import torch.nn.functional as F
        def attend(q, k, v, key_padding_mask):
            keep = ~key_padding_mask[:, None, None, :]
            return F.scaled_dot_product_attention(q, k, v, attn_mask=keep, is_causal=1 < q.size(2))
        """,
        line=4,
    ),
    # Both arguments travel in a dict of keyword arguments.
    Invalid(
        """
        import torch
        import torch.nn.functional as F


        def packed_attention(q, k, v, lengths, train):
            n = q.size(-2)
            keep = torch.arange(n, device=q.device)[None, :] < lengths[:, None]
            options = {"attn_mask": keep[:, None, None, :], "dropout_p": 0.1 if train else 0.0, "is_causal": True}
            return F.scaled_dot_product_attention(q, k, v, **options)
        """,
        line=9,
    ),
]
