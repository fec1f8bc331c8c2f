"""ATN104's examples: run as tests (tests/test_rule_examples.py); the flagged one is its page's."""

from attnlint.rules.base import Invalid, Valid

VALID = [
    # The queries are scaled on the way in and SDPA is told not to scale again.
    Valid(
        """
        import torch.nn as nn
        import torch.nn.functional as F


        class Attention(nn.Module):
            def __init__(self, dim, n_heads):
                super().__init__()
                self.n_heads, self.head_dim = n_heads, dim // n_heads
                self.softmax_scale = self.head_dim ** -0.5
                self.wq = nn.Linear(dim, dim, bias=False)
                self.wk = nn.Linear(dim, dim, bias=False)
                self.wv = nn.Linear(dim, dim, bias=False)

            def forward(self, x):
                bsz, seqlen, _ = x.shape
                xq = self.wq(x).view(bsz, seqlen, self.n_heads, self.head_dim)
                xk = self.wk(x).view(bsz, seqlen, self.n_heads, self.head_dim)
                xv = self.wv(x).view(bsz, seqlen, self.n_heads, self.head_dim)
                xq = xq * self.softmax_scale
                xq, xk, xv = (t.transpose(1, 2) for t in (xq, xk, xv))
                out = F.scaled_dot_product_attention(xq, xk, xv, is_causal=True, scale=1.0)
                return out.transpose(1, 2).reshape(bsz, seqlen, -1)
        """
    ),
    # The queries are scaled where they are projected; the kernel is told a scale of 1.0.
    Valid(
        """
        import torch
        from torch import nn
        def eager_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
            attn_weights = torch.matmul(query, key.transpose(2, 3)) * scaling
            if attention_mask is not None:
                attn_weights = attn_weights + attention_mask
            attn_weights = nn.functional.softmax(attn_weights, dim=-1)
            return torch.matmul(attn_weights, value), attn_weights
        class DecoderAttention(nn.Module):
            def __init__(self, embed_dim, num_heads):
                super().__init__()
                self.num_heads = num_heads
                self.head_dim = embed_dim // num_heads
                self.scaling = self.head_dim ** -0.5
                self.q_proj = nn.Linear(embed_dim, embed_dim)
                self.k_proj = nn.Linear(embed_dim, embed_dim)
                self.v_proj = nn.Linear(embed_dim, embed_dim)
            def forward(self, hidden_states, attention_mask=None, **kwargs):
                bsz, tgt_len, _ = hidden_states.size()
                shape = (bsz, -1, self.num_heads, self.head_dim)
                query = (self.q_proj(hidden_states) * self.scaling).view(shape).transpose(1, 2)
                key = self.k_proj(hidden_states).view(shape).transpose(1, 2)
                value = self.v_proj(hidden_states).view(shape).transpose(1, 2)
                out, _ = eager_attention_forward(self, query, key, value, attention_mask, scaling=1.0, **kwargs)
                return out
        """
    ),
    # Sizes from a dataclass config, keys read back from a KV cache: the head size.
    Valid(
        """
        import math
        from dataclasses import dataclass
        import torch
        from torch import nn
        @dataclass
        class GPTConfig:
            n_embd: int = 768
            n_head: int = 12
            block_size: int = 1024
        class KVCachedAttention(nn.Module):
            def __init__(self, config: GPTConfig):
                super().__init__()
                self.n_head = config.n_head
                self.n_embd = config.n_embd
                self.head_size = config.n_embd // config.n_head
                self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
                self.register_buffer("k_cache", torch.zeros(1, config.block_size, self.n_head, self.head_size))
            def forward(self, x, pos):
                B, T, C = x.shape
                q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
                q = q.view(B, T, self.n_head, self.head_size)
                self.k_cache[:, pos:pos + T] = k.view(B, T, self.n_head, self.head_size)
                keys = self.k_cache[:, :pos + T]
                att = q.transpose(1, 2) @ keys.permute(0, 2, 3, 1) / math.sqrt(self.head_size)
                return att.softmax(dim=-1)
        """
    ),
    # The temperature a multi-head layer passes to its attention module: the root of d_k.
    Valid(
        """
        import numpy as np
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        class ScaledDotProductAttention(nn.Module):
            def __init__(self, temperature):
                super().__init__()
                self.temperature = temperature
            def forward(self, q, k, v):
                attn = torch.matmul(q / self.temperature, k.transpose(2, 3))
                return torch.matmul(F.softmax(attn, dim=-1), v)
        class MultiHeadAttention(nn.Module):
            def __init__(self, n_head, d_model, d_k):
                super().__init__()
                self.n_head, self.d_k = n_head, d_k
                self.w_qs = nn.Linear(d_model, n_head * d_k, bias=False)
                self.w_ks = nn.Linear(d_model, n_head * d_k, bias=False)
                self.w_vs = nn.Linear(d_model, n_head * d_k, bias=False)
                self.attention = ScaledDotProductAttention(temperature=np.power(d_k, 0.5))
            def forward(self, q, k, v):
                b, n = q.size(0), q.size(1)
                q = self.w_qs(q).view(b, n, self.n_head, self.d_k).transpose(1, 2)
                k = self.w_ks(k).view(b, k.size(1), self.n_head, self.d_k).transpose(1, 2)
                v = self.w_vs(v).view(b, v.size(1), self.n_head, self.d_k).transpose(1, 2)
                return self.attention(q, k, v).transpose(1, 2).reshape(b, n, -1)
        """
    ),
    # QK-norm (a LayerNorm or the identity by config) and then the right scale, kept in an
    # attribute named for a temperature.
    Valid(
        """
        import torch.nn as nn


        class QKNormAttention(nn.Module):
            def __init__(self, hidden_size, num_heads, qk_norm=True):
                super().__init__()
                self.num_heads = num_heads
                self.head_dim = hidden_size // num_heads
                self.temperature = self.head_dim ** -0.5
                self.qkv = nn.Linear(hidden_size, hidden_size * 3)
                self.q_norm = nn.LayerNorm(self.head_dim) if qk_norm else nn.Identity()
                self.k_norm = nn.LayerNorm(self.head_dim) if qk_norm else nn.Identity()

            def forward(self, x):
                B, N, C = x.shape
                qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
                q, k, v = qkv.unbind(0)
                q, k = self.q_norm(q), self.k_norm(k)
                attn = (q @ k.transpose(-2, -1)) * self.temperature
                return (attn.softmax(dim=-1) @ v).transpose(1, 2).reshape(B, N, C)
        """
    ),
    # Heads folded into the batch by einops, scaled by the per-head size.
    Valid(
        """
        import torch
        from torch import nn
        from einops import rearrange


        class LatentCrossAttention(nn.Module):
            def __init__(self, latent_dim, media_dim, heads=4, head_dim=32):
                super().__init__()
                self.h = heads
                self.scale = head_dim ** -0.5
                self.to_q = nn.Linear(latent_dim, heads * head_dim, bias=False)
                self.to_k = nn.Linear(media_dim, heads * head_dim, bias=False)
                self.to_v = nn.Linear(media_dim, heads * head_dim, bias=False)

            def forward(self, latents, media):
                q, k, v = self.to_q(latents), self.to_k(media), self.to_v(media)
                q, k, v = (rearrange(t, "b n (h d) -> (b h) n d", h=self.h) for t in (q, k, v))
                logits = torch.bmm(q, k.transpose(1, 2)) * self.scale
                out = torch.bmm(logits.softmax(dim=-1), v)
                return rearrange(out, "(b h) n d -> b n (h d)", h=self.h)
        """
    ),
    # The same folding scaled by the piece's width: right.
    Valid(
        """
        import math
        import torch
        import torch.nn as nn


        class FoldedHeads(nn.Module):
            def __init__(self, width, heads):
                super().__init__()
                self.width, self.heads = width, heads
                self.q = nn.Linear(width, width)
                self.kv = nn.Linear(width, 2 * width)

            def forward(self, x, y):
                q = self.q(x)
                k, v = self.kv(y).chunk(2, dim=-1)
                size = self.width // self.heads
                # Heads folded into the batch: (heads * B, N, size).
                q, k, v = (torch.cat(t.split(size, 2), 0) for t in (q, k, v))
                logits = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(size)
                return torch.bmm(logits.softmax(dim=2), v)
        """
    ),
    # Windows of the sequence folded into the batch (local attention): the pieces are split
    # along the tokens, each keeps the full width, and the full width is the right scale.
    Valid(
        """
        import math
        import torch
        import torch.nn as nn


        class LocalWindows(nn.Module):
            def __init__(self, width, window):
                super().__init__()
                self.width, self.window = width, window
                self.qkv = nn.Linear(width, 3 * width)

            def forward(self, x):
                q, k, v = self.qkv(x).chunk(3, dim=-1)
                q, k, v = (torch.cat(t.split(self.window, 1), 0) for t in (q, k, v))
                logits = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(self.width)
                return torch.bmm(logits.softmax(dim=2), v)
        """
    ),
    # The scale read from the key operand: a product's contracted axes are one size.
    Valid(
        """
        import math
        import torch.nn.functional as F
        import torch
        def retrieve(query_vec, memory):
            scores = query_vec @ memory.T / math.sqrt(memory.size(1))
            return F.softmax(scores, dim=1) @ memory
        if __name__ == "__main__":
            n_queries, n_items, d = 4, 10, 16
            retrieve(torch.randn(n_queries, d), torch.randn(n_items, d))
        """
    ),
    Valid(
        """
        import torch
        def attention(q, k, v):
            # q, k, v: (batch, heads, seq, head_dim)
            scores = torch.matmul(q, k.permute(0, 1, 3, 2)) / k.shape[3] ** 0.5
            return torch.softmax(scores, dim=-1) @ v
        """
    ),
    # nanoGPT: the per-head dimension from the operand.
    Valid(
        """
        import math
        import torch.nn.functional as F
        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
            k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            return F.softmax(att, dim=-1)
        """
    ),
    # timm: head_dim from the module.
    Valid(
        """
        import torch.nn as nn
        class Attention(nn.Module):
            def __init__(self, dim, num_heads=8):
                super().__init__()
                self.num_heads = num_heads
                self.head_dim = dim // num_heads
                self.scale = self.head_dim ** -0.5
                self.qkv = nn.Linear(dim, dim * 3)
            def forward(self, x):
                B, N, C = x.shape
                qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
                q, k, v = qkv.unbind(0)
                attn = (q * self.scale) @ k.transpose(-2, -1)
                return attn.softmax(dim=-1) @ v
        """
    ),
    # Single head: the model width is the head dimension.
    Valid(
        """
        import torch
        import torch.nn as nn
        class SelfAttention(nn.Module):
            def __init__(self, d_in, d_out):
                super().__init__()
                self.d_out = d_out
                self.W_query = nn.Linear(d_in, d_out, bias=False)
                self.W_key = nn.Linear(d_in, d_out, bias=False)
                self.W_value = nn.Linear(d_in, d_out, bias=False)
            def forward(self, x):
                queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
                scores = queries @ keys.transpose(-2, -1) / self.d_out ** 0.5
                return torch.softmax(scores, dim=-1) @ values
        """
    ),
    # A learned temperature.
    Valid(
        """
        import torch
        def attend(self, q, k, v):
            b, h, n, d = q.shape
            logits = q @ k.transpose(-2, -1) / self.temperature
            return logits.softmax(-1) @ v
        """
    ),
    # Cosine-similarity attention with a learned scale (Swin v2).
    Valid(
        """
        import torch.nn.functional as F
        def attend(self, q, k, v):
            b, h, n, d = q.shape
            q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
            sim = (q @ k.transpose(-2, -1)) * self.logit_scale.exp()
            return sim.softmax(dim=-1) @ v
        """
    ),
    # q and k each by a fourth root.
    Valid(
        """
        import torch
        def attend(q, k, v):
            b, h, n, d = q.shape
            q = q * d ** -0.25
            k = k * d ** -0.25
            return torch.einsum("bhij,bhjd->bhid", torch.einsum("bhid,bhjd->bhij", q, k).softmax(-1), v)
        """
    ),
    # SDPA with an explicit scale.
    Valid(
        """
        import torch.nn.functional as F
        def attend(q, k, v):
            b, h, n, d = q.shape
            return F.scaled_dot_product_attention(q, k, v, scale=d ** -0.5)
        """
    ),
    # A configured scale we cannot evaluate.
    Valid(
        """
        def attend(self, q, k, v):
            b, h, n, d = q.shape
            s = (q @ k.transpose(-2, -1)) * self.config.attn_scale
            return s.softmax(-1) @ v
        """
    ),
    # d_k from the query's shape, via math.sqrt.
    Valid(
        """
        import math
        import torch
        def attention(query, key, value):
            d_k = query.size(-1)
            scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
            return torch.softmax(scores, dim=-1) @ value
        """
    ),
    # Multi-head with the per-head size passed in.
    Valid(
        """
        import torch
        def attend(x, wq, wk, heads):
            b, n, dim = x.shape
            dh = dim // heads
            q = (x @ wq).view(b, n, heads, dh).transpose(1, 2)
            k = (x @ wk).view(b, n, heads, dh).transpose(1, 2)
            s = q @ k.transpose(-2, -1) / dh ** 0.5
            return s.softmax(-1)
        """
    ),
    # Learned prototypes compared with the raw token features: `einsum("pd,bnd->bpn")` here is a
    # similarity map (a linear layer by its shape), not queries against keys; the division after
    # the softmax is not read as a misplaced scale.
    Valid(
        """
        import math
        import torch
        import torch.nn as nn


        class PrototypeRouter(nn.Module):
            def __init__(self, width, n_protos):
                super().__init__()
                self.protos = nn.Parameter(torch.randn(n_protos, width))
                self.width = width

            def forward(self, feats):
                sims = torch.einsum("pd,bnd->bpn", self.protos, feats)
                share = sims.softmax(dim=-1) / math.sqrt(self.width)
                return torch.einsum("bpn,bnd->bpd", share, feats)
        """
    ),
    # The weights rescaled after the softmax by a non-size (a gate).
    Valid(
        """
        import torch
        def attend(q, k, v, gate):
            b, h, n, d = q.shape
            w = (q @ k.transpose(-2, -1) * d ** -0.5).softmax(-1) * gate
            return w @ v
        """
    ),
    # T5: no runtime scale, folded into the init.
    Valid(
        """
        import torch
        import torch.nn as nn
        class T5Attention(nn.Module):
            def __init__(self, d_model, d_kv):
                super().__init__()
                self.q = nn.Linear(d_model, d_kv, bias=False)
                self.k = nn.Linear(d_model, d_kv, bias=False)
                nn.init.normal_(self.q.weight, std=(d_model * d_kv) ** -0.5)
            def forward(self, x):
                return torch.matmul(self.q(x), self.k(x).transpose(-1, -2)).softmax(dim=-1)
        """
    ),
    # einops heads with the per-head scale.
    Valid(
        """
        import torch
        from einops import rearrange
        def attend(x, to_qkv, heads, dim_head):
            q, k, v = map(lambda t: rearrange(t, "b n (h d) -> b h n d", h=heads), to_qkv(x).chunk(3, dim=-1))
            sim = torch.einsum("b h i d, b h j d -> b h i j", q, k) * dim_head ** -0.5
            return sim.softmax(dim=-1)
        """
    ),
    # baddbmm with the right alpha.
    Valid(
        """
        import torch
        def attend(q, k, bias):
            bh, n, d = q.shape
            s = torch.baddbmm(bias, q, k.transpose(1, 2), beta=1.0, alpha=d ** -0.5)
            return s.softmax(-1)
        """
    ),
    # Scale applied in place.
    Valid(
        """
        import math
        def attend(q, k, v):
            b, h, n, d = q.shape
            s = q @ k.transpose(-2, -1)
            s /= math.sqrt(d)
            return s.softmax(-1) @ v
        """
    ),
    # Numbers in a smoke test are examples: the per-head scale stays correct whatever they are
    # (384 // 6 = 64 here, and 384 ** -0.5 has no exact value).
    Valid(
        """
        import torch
        from torch import nn

        class PatchAttention(nn.Module):
            def __init__(self, width, n_heads=8):
                super().__init__()
                self.n_heads = n_heads
                self.scale = (width // n_heads) ** -0.5
                self.to_qkv = nn.Linear(width, 3 * width)

            def forward(self, tokens):
                b, n, _ = tokens.shape
                q, k, v = self.to_qkv(tokens).chunk(3, dim=-1)
                q, k, v = (t.reshape(b, n, self.n_heads, -1).transpose(1, 2) for t in (q, k, v))
                attn = (q @ k.transpose(-1, -2) * self.scale).softmax(dim=-1)
                return (attn @ v).transpose(1, 2).reshape(b, n, -1)

        if __name__ == "__main__":
            print(PatchAttention(384, n_heads=6)(torch.randn(2, 17, 384)).shape)
        """
    ),
    # One head built as its own module with the full width: the width is its head dimension.
    Valid(
        """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F

        EMBED = 96

        class SoloHead(nn.Module):
            def __init__(self, size):
                super().__init__()
                self.query = nn.Linear(EMBED, size, bias=False)
                self.key = nn.Linear(EMBED, size, bias=False)
                self.value = nn.Linear(EMBED, size, bias=False)

            def forward(self, x):
                _, _, width = x.shape
                q, k = self.query(x), self.key(x)
                affinity = q @ k.transpose(-2, -1) * width ** -0.5
                return F.softmax(affinity, dim=-1) @ self.value(x)

        if __name__ == "__main__":
            print(SoloHead(EMBED)(torch.randn(3, 7, EMBED)).shape)
        """
    ),
    # A temperature its caller sets: not a size, whatever number it is given.
    Valid(
        """
        import torch
        import torch.nn as nn

        class TemperedHead(nn.Module):
            def __init__(self, width, size, temperature):
                super().__init__()
                self.temperature = temperature
                self.q = nn.Linear(width, size)
                self.k = nn.Linear(width, size)

            def forward(self, x):
                logits = self.q(x) @ self.k(x).transpose(1, 2) / self.temperature
                return logits.softmax(-1)

        class Heads(nn.Module):
            def __init__(self, width, count):
                super().__init__()
                self.heads = nn.ModuleList([TemperedHead(width, width // count, 16) for _ in range(count)])

        if __name__ == "__main__":
            Heads(64, 4)
        """
    ),
    # Heads projected from the model width to `heads * dim_head`, scaled by the per-head size.
    Valid(
        """
        import torch
        from torch import nn
        from einops import rearrange


        class Attention(nn.Module):
            def __init__(self, dim, heads=8, dim_head=64):
                super().__init__()
                inner_dim = dim_head * heads
                self.heads = heads
                self.scale = dim_head ** -0.5
                self.to_q = nn.Linear(dim, inner_dim, bias=False)
                self.to_kv = nn.Linear(dim, inner_dim * 2, bias=False)

            def forward(self, x, context=None):
                context = x if context is None else context
                q = self.to_q(x)
                k, v = self.to_kv(context).chunk(2, dim=-1)
                q, k, v = (rearrange(t, "b n (h d) -> b h n d", h=self.heads) for t in (q, k, v))
                sim = torch.einsum("b h i d, b h j d -> b h i j", q, k) * self.scale
                attn = sim.softmax(dim=-1)
                out = torch.einsum("b h i j, b h j d -> b h i d", attn, v)
                return rearrange(out, "b h n d -> b n (h d)")
        """
    ),
    # Cross-attention from a query width to `n_heads * head_size`, scaled by the head size.
    Valid(
        """
        import math
        import torch
        import torch.nn as nn


        class CrossAttention(nn.Module):
            def __init__(self, query_dim, context_dim, n_heads, head_size):
                super().__init__()
                self.n_heads = n_heads
                self.head_size = head_size
                self.q_proj = nn.Linear(query_dim, n_heads * head_size)
                self.kv_proj = nn.Linear(context_dim, 2 * n_heads * head_size)

            def forward(self, x, context):
                b, n, _ = x.shape
                m = context.shape[1]
                q = self.q_proj(x).view(b, n, self.n_heads, -1).transpose(1, 2)
                k, v = self.kv_proj(context).chunk(2, dim=-1)
                k = k.view(b, m, self.n_heads, -1).transpose(1, 2)
                v = v.view(b, m, self.n_heads, -1).transpose(1, 2)
                logits = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.head_size)
                weights = logits.softmax(dim=-1)
                return torch.matmul(weights, v).transpose(1, 2).reshape(b, n, -1)
        """
    ),
    # The model width in the scale, but the callers' numbers make it the head size (64 = 64):
    # the numbers decide, and for them the scale is right.
    Valid(
        """
        import torch
        from torch import nn
        from einops import rearrange


        class Attention(nn.Module):
            def __init__(self, dim, heads=8, dim_head=64):
                super().__init__()
                self.heads = heads
                self.scale = dim ** -0.5
                self.to_qkv = nn.Linear(dim, dim_head * heads * 3, bias=False)

            def forward(self, x):
                qkv = self.to_qkv(x).chunk(3, dim=-1)
                q, k, v = map(lambda t: rearrange(t, "b n (h d) -> b h n d", h=self.heads), qkv)
                attn = (q @ k.transpose(-1, -2) * self.scale).softmax(dim=-1)
                return rearrange(attn @ v, "b h n d -> b n (h d)")


        if __name__ == "__main__":
            # One configuration where the width is the head size: 64 = 64.
            print(Attention(64, heads=4, dim_head=64)(torch.randn(2, 10, 64)).shape)
        """
    ),
    # A module-level helper given the per-head size by its caller.
    Valid(
        """
        import math
        import torch
        import torch.nn as nn


        def dot_product_attention(query, key, value, width):
            logits = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(width)
            return torch.matmul(logits.softmax(dim=-1), value)


        class MultiHeadedAttention(nn.Module):
            def __init__(self, n_heads, d_model):
                super().__init__()
                self.n_heads = n_heads
                self.d_model = d_model
                self.d_k = d_model // n_heads
                self.projections = nn.ModuleList([nn.Linear(d_model, d_model) for _ in range(3)])
                self.out = nn.Linear(d_model, d_model)

            def forward(self, query, key, value):
                n_batch = query.size(0)
                query, key, value = [
                    proj(t).view(n_batch, -1, self.n_heads, self.d_k).transpose(1, 2)
                    for proj, t in zip(self.projections, (query, key, value))
                ]
                context = dot_product_attention(query, key, value, self.d_k)
                context = context.transpose(1, 2).contiguous().view(n_batch, -1, self.d_model)
                return self.out(context)
        """
    ),
    # The caller passes its configured head size, the one its views split q and k into.
    Valid(
        """
        import math
        import torch
        import torch.nn as nn


        def dot_product_attention(query, key, value, width):
            logits = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(width)
            return torch.matmul(logits.softmax(dim=-1), value)


        class Attention(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.num_heads = config.num_attention_heads
                self.head_dim = config.head_dim
                self.hidden_size = config.hidden_size
                self.q_proj = nn.Linear(self.hidden_size, self.num_heads * self.head_dim)
                self.k_proj = nn.Linear(self.hidden_size, self.num_heads * self.head_dim)
                self.v_proj = nn.Linear(self.hidden_size, self.num_heads * self.head_dim)

            def forward(self, hidden_states):
                bsz, q_len, _ = hidden_states.size()
                shape = (bsz, q_len, self.num_heads, self.head_dim)
                q = self.q_proj(hidden_states).view(shape).transpose(1, 2)
                k = self.k_proj(hidden_states).view(shape).transpose(1, 2)
                v = self.v_proj(hidden_states).view(shape).transpose(1, 2)
                return dot_product_attention(q, k, v, self.head_dim)
        """
    ),
    # BERT-style heads split by `x.size()[:-1] + (heads, head_size)`, scaled by the head size.
    Valid(
        """
        import math
        import torch
        from torch import nn


        class EncoderSelfAttention(nn.Module):
            def __init__(self, hidden_size, num_heads):
                super().__init__()
                self.num_heads = num_heads
                self.head_size = hidden_size // num_heads
                self.hidden_size = hidden_size
                self.query = nn.Linear(hidden_size, hidden_size)
                self.key = nn.Linear(hidden_size, hidden_size)
                self.value = nn.Linear(hidden_size, hidden_size)

            def split_heads(self, x):
                x = x.view(x.size()[:-1] + (self.num_heads, self.head_size))
                return x.permute(0, 2, 1, 3)

            def forward(self, hidden_states, extended_mask=None):
                q = self.split_heads(self.query(hidden_states))
                k = self.split_heads(self.key(hidden_states))
                v = self.split_heads(self.value(hidden_states))
                scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_size)
                if extended_mask is not None:
                    scores = scores + extended_mask
                probs = nn.functional.softmax(scores, dim=-1)
                context = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
                return context.view(context.size()[:-2] + (self.hidden_size,))
        """
    ),
    # Heads split by `(*input_shape, -1, head_dim)`, scaled by the head size's inverse root.
    Valid(
        """
        import torch
        import torch.nn as nn


        class DecoderAttention(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.head_dim = config.head_dim
                self.num_heads = config.num_attention_heads
                self.q_proj = nn.Linear(config.hidden_size, self.num_heads * self.head_dim, bias=False)
                self.k_proj = nn.Linear(config.hidden_size, self.num_heads * self.head_dim, bias=False)
                self.v_proj = nn.Linear(config.hidden_size, self.num_heads * self.head_dim, bias=False)

            def forward(self, hidden_states):
                input_shape = hidden_states.shape[:-1]
                hidden_shape = (*input_shape, -1, self.head_dim)
                query = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
                key = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
                value = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
                weights = torch.matmul(query, key.transpose(2, 3)) * self.head_dim ** -0.5
                weights = nn.functional.softmax(weights, dim=-1, dtype=torch.float32).to(query.dtype)
                return torch.matmul(weights, value).transpose(1, 2).reshape(*input_shape, -1)
        """
    ),
    # Relative-position attention: the content and position scores summed, then divided by the
    # root of the head size.
    Valid(
        """
        import math
        import torch
        import torch.nn as nn


        class RelativeSelfAttention(nn.Module):
            def __init__(self, d_model, n_head):
                super().__init__()
                self.n_head = n_head
                self.d_head = d_model // n_head
                self.root = math.sqrt(self.d_head)
                self.qkv = nn.Linear(d_model, 3 * d_model)
                self.pos = nn.Linear(d_model, d_model, bias=False)
                self.content_bias = nn.Parameter(torch.zeros(n_head, self.d_head))
                self.position_bias = nn.Parameter(torch.zeros(n_head, self.d_head))

            def forward(self, x, pos_emb):
                b, t, _ = x.shape
                q, k, v = self.qkv(x).chunk(3, dim=-1)
                q = q.view(b, t, self.n_head, self.d_head)
                k = k.view(b, t, self.n_head, self.d_head).transpose(1, 2)
                v = v.view(b, t, self.n_head, self.d_head).transpose(1, 2)
                p = self.pos(pos_emb).view(b, t, self.n_head, self.d_head).transpose(1, 2)
                ac = torch.matmul((q + self.content_bias).transpose(1, 2), k.transpose(-2, -1))
                bd = torch.matmul((q + self.position_bias).transpose(1, 2), p.transpose(-2, -1))
                logits = (ac + bd) / self.root
                return torch.matmul(logits.softmax(dim=-1), v)
        """
    ),
    Valid(
        """
        import torch
        import torch.nn as nn


        class CrossAttention(nn.Module):
            def __init__(self, query_dim, heads=8, dim_head=64):
                super().__init__()
                self.scale = dim_head ** -0.5
                self.heads = heads
                self.to_q = nn.Linear(query_dim, heads * dim_head, bias=False)
                self.to_k = nn.Linear(query_dim, heads * dim_head, bias=False)

            def fold_heads(self, t):
                b, n, d = t.shape
                return t.view(b, n, self.heads, d // self.heads).transpose(1, 2).reshape(b * self.heads, n, d // self.heads)

            def forward(self, x):
                q = self.fold_heads(self.to_q(x) * self.scale)
                k = self.fold_heads(self.to_k(x))
                empty = torch.empty(q.shape[0], q.shape[1], k.shape[1], dtype=q.dtype)
                scores = torch.baddbmm(empty, q, k.transpose(1, 2), beta=0, alpha=1.0)
                return scores.softmax(dim=-1)


        class UNetBlock(nn.Module):
            def __init__(self, channels, n_heads, d_head):
                super().__init__()
                self.attn = CrossAttention(channels, heads=n_heads, dim_head=d_head)

            def forward(self, x):
                return self.attn(x)
        """
    ),
    Valid(
        """
        import torch
        import torch.nn as nn


        class QKVAttention(nn.Module):
            def __init__(self, heads, width):
                super().__init__()
                self.heads, self.width = heads, width
                self.qkv = nn.Linear(width, 3 * width)

            def forward(self, x):
                b, n, _ = x.shape
                ch = self.width // self.heads
                q, k, v = self.qkv(x).view(b, n, 3 * self.heads, ch).transpose(1, 2).chunk(3, dim=1)
                scale = ch ** -0.25
                weight = torch.einsum("bhtc,bhsc->bhts", q * scale, k * scale)
                return torch.einsum("bhts,bhsc->bhtc", weight.softmax(dim=-1), v)
        """
    ),
    # GroupViT: single-head scores scaled by the root of their width, then a Gumbel-softmax
    # helper that divides by its temperature `tau`: a temperature is no size, so no width.
    Valid(
        """
        import torch
        from torch import nn
        def gumbel_softmax(logits, tau=1, dim=-1):
            gumbels = -torch.empty_like(logits).exponential_().log()
            gumbels = (logits + gumbels) / tau
            return gumbels.softmax(dim)
        class AssignAttention(nn.Module):
            def __init__(self, hidden_size):
                super().__init__()
                self.scale = hidden_size ** -0.5
                self.q_proj = nn.Linear(hidden_size, hidden_size)
                self.k_proj = nn.Linear(hidden_size, hidden_size)
            def forward(self, query, key):
                raw_attn = (self.q_proj(query) @ self.k_proj(key).transpose(-2, -1)) * self.scale
                return gumbel_softmax(raw_attn, dim=-2)
        """
    ),
]

INVALID = [
    # A dataclass config computes the scale in a property: 1/head_dim, no square root.
    Invalid(
        """
        from dataclasses import dataclass

        import torch
        import torch.nn as nn


        @dataclass
        class EncoderConfig:
            d_model: int = 384
            n_heads: int = 6

            @property
            def head_dim(self) -> int:
                return self.d_model // self.n_heads

            @property
            def attn_scale(self) -> float:
                return 1.0 / self.head_dim


        class SelfAttention(nn.Module):
            def __init__(self, cfg: EncoderConfig):
                super().__init__()
                self.cfg = cfg
                self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)

            def forward(self, x):
                b, n, _ = x.shape
                h, hd = self.cfg.n_heads, self.cfg.head_dim
                q, k, v = self.qkv(x).reshape(b, n, 3, h, hd).unbind(dim=2)
                scores = torch.einsum("bihd,bjhd->bhij", q, k) * self.cfg.attn_scale
                return torch.einsum("bhij,bjhd->bihd", scores.softmax(dim=-1), v).reshape(b, n, h * hd)
        """,
        fixed="""
        from dataclasses import dataclass

        import torch
        import torch.nn as nn


        @dataclass
        class EncoderConfig:
            d_model: int = 384
            n_heads: int = 6

            @property
            def head_dim(self) -> int:
                return self.d_model // self.n_heads

            @property
            def attn_scale(self) -> float:
                return 1.0 / self.head_dim


        class SelfAttention(nn.Module):
            def __init__(self, cfg: EncoderConfig):
                super().__init__()
                self.cfg = cfg
                self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)

            def forward(self, x):
                b, n, _ = x.shape
                h, hd = self.cfg.n_heads, self.cfg.head_dim
                q, k, v = self.qkv(x).reshape(b, n, 3, h, hd).unbind(dim=2)
                scores = torch.einsum("bihd,bjhd->bhij", q, k) * hd ** -0.5
                return torch.einsum("bhij,bjhd->bihd", scores.softmax(dim=-1), v).reshape(b, n, h * hd)
        """,
        line=31,
    ),
    # Queries scaled on the way in, then SDPA at its default scale: scaled twice.
    Invalid(
        """
        import torch.nn as nn
        import torch.nn.functional as F


        class Attention(nn.Module):
            def __init__(self, dim, n_heads):
                super().__init__()
                self.n_heads, self.head_dim = n_heads, dim // n_heads
                self.softmax_scale = self.head_dim ** -0.5
                self.wq = nn.Linear(dim, dim, bias=False)
                self.wk = nn.Linear(dim, dim, bias=False)
                self.wv = nn.Linear(dim, dim, bias=False)

            def forward(self, x):
                bsz, seqlen, _ = x.shape
                xq = self.wq(x).view(bsz, seqlen, self.n_heads, self.head_dim)
                xk = self.wk(x).view(bsz, seqlen, self.n_heads, self.head_dim)
                xv = self.wv(x).view(bsz, seqlen, self.n_heads, self.head_dim)
                xq = xq * self.softmax_scale
                xq, xk, xv = (t.transpose(1, 2) for t in (xq, xk, xv))
                out = F.scaled_dot_product_attention(xq, xk, xv, is_causal=True)
                return out.transpose(1, 2).reshape(bsz, seqlen, -1)
        """,
        fixed="""
        import torch.nn as nn
        import torch.nn.functional as F


        class Attention(nn.Module):
            def __init__(self, dim, n_heads):
                super().__init__()
                self.n_heads, self.head_dim = n_heads, dim // n_heads
                self.softmax_scale = self.head_dim ** -0.5
                self.wq = nn.Linear(dim, dim, bias=False)
                self.wk = nn.Linear(dim, dim, bias=False)
                self.wv = nn.Linear(dim, dim, bias=False)

            def forward(self, x):
                bsz, seqlen, _ = x.shape
                xq = self.wq(x).view(bsz, seqlen, self.n_heads, self.head_dim)
                xk = self.wk(x).view(bsz, seqlen, self.n_heads, self.head_dim)
                xv = self.wv(x).view(bsz, seqlen, self.n_heads, self.head_dim)
                xq = xq * self.softmax_scale
                xq, xk, xv = (t.transpose(1, 2) for t in (xq, xk, xv))
                out = F.scaled_dot_product_attention(xq, xk, xv, is_causal=True, scale=1.0)
                return out.transpose(1, 2).reshape(bsz, seqlen, -1)
        """,
        line=21,
    ),
    # lucidrains' `default(self.scale, ...)`: the one construction passes the model width's root.
    Invalid(
        """
        import torch
        import torch.nn as nn
        from einops import rearrange


        def exists(val):
            return val is not None


        def default(val, d):
            return val if exists(val) else d


        class Attend(nn.Module):
            def __init__(self, scale=None):
                super().__init__()
                self.scale = scale

            def forward(self, q, k, v):
                scale = default(self.scale, q.shape[-1] ** -0.5)
                sim = torch.einsum("b h i d, b h j d -> b h i j", q, k) * scale
                attn = sim.softmax(dim=-1)
                return torch.einsum("b h i j, b h j d -> b h i d", attn, v)


        class Attention(nn.Module):
            def __init__(self, dim, dim_head=64, heads=8):
                super().__init__()
                inner_dim = dim_head * heads
                self.heads = heads
                self.to_qkv = nn.Linear(dim, inner_dim * 3, bias=False)
                self.attend = Attend(scale=dim ** -0.5)

            def forward(self, x):
                q, k, v = self.to_qkv(x).chunk(3, dim=-1)
                q, k, v = map(lambda t: rearrange(t, "b n (h d) -> b h n d", h=self.heads), (q, k, v))
                return self.attend(q, k, v)
        """,
        fixed="""
        import torch
        import torch.nn as nn
        from einops import rearrange


        def exists(val):
            return val is not None


        def default(val, d):
            return val if exists(val) else d


        class Attend(nn.Module):
            def __init__(self, scale=None):
                super().__init__()
                self.scale = scale

            def forward(self, q, k, v):
                scale = default(self.scale, q.shape[-1] ** -0.5)
                sim = torch.einsum("b h i d, b h j d -> b h i j", q, k) * q.shape[-1] ** -0.5
                attn = sim.softmax(dim=-1)
                return torch.einsum("b h i j, b h j d -> b h i d", attn, v)


        class Attention(nn.Module):
            def __init__(self, dim, dim_head=64, heads=8):
                super().__init__()
                inner_dim = dim_head * heads
                self.heads = heads
                self.to_qkv = nn.Linear(dim, inner_dim * 3, bias=False)
                self.attend = Attend(scale=dim ** -0.5)

            def forward(self, x):
                q, k, v = self.to_qkv(x).chunk(3, dim=-1)
                q, k, v = map(lambda t: rearrange(t, "b n (h d) -> b h n d", h=self.heads), (q, k, v))
                return self.attend(q, k, v)
        """,
        line=21,
    ),
    # A dataclass computes the scale in `__post_init__` from its fields: 1/head_dim, no root.
    Invalid(
        """
        from dataclasses import dataclass, field

        import torch.nn as nn


        @dataclass
        class EncoderConfig:
            hidden: int = 512
            heads: int = 8
            head_dim: int = field(init=False)
            attn_scale: float = field(init=False)

            def __post_init__(self):
                self.head_dim = self.hidden // self.heads
                self.attn_scale = 1.0 / self.head_dim


        class SelfAttention(nn.Module):
            def __init__(self, cfg: EncoderConfig):
                super().__init__()
                self.cfg = cfg
                self.qkv = nn.Linear(cfg.hidden, 3 * cfg.hidden)

            def forward(self, x):
                B, T, _ = x.shape
                q, k, v = self.qkv(x).view(B, T, 3, self.cfg.heads, self.cfg.head_dim).unbind(dim=2)
                q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
                scores = q @ k.transpose(-1, -2) * self.cfg.attn_scale
                return (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, self.cfg.hidden)
        """,
        fixed="""
        from dataclasses import dataclass, field

        import torch.nn as nn


        @dataclass
        class EncoderConfig:
            hidden: int = 512
            heads: int = 8
            head_dim: int = field(init=False)
            attn_scale: float = field(init=False)

            def __post_init__(self):
                self.head_dim = self.hidden // self.heads
                self.attn_scale = 1.0 / self.head_dim


        class SelfAttention(nn.Module):
            def __init__(self, cfg: EncoderConfig):
                super().__init__()
                self.cfg = cfg
                self.qkv = nn.Linear(cfg.hidden, 3 * cfg.hidden)

            def forward(self, x):
                B, T, _ = x.shape
                q, k, v = self.qkv(x).view(B, T, 3, self.cfg.heads, self.cfg.head_dim).unbind(dim=2)
                q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
                scores = q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5
                return (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, self.cfg.hidden)
        """,
        line=28,
    ),
    # The queries are scaled where they are projected, and the kernel (called with **kwargs)
    # scales the scores again: 1/head_dim in all.
    Invalid(
        """
        import torch
        from torch import nn
        def eager_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
            attn_weights = torch.matmul(query, key.transpose(2, 3)) * scaling
            if attention_mask is not None:
                attn_weights = attn_weights + attention_mask
            attn_weights = nn.functional.softmax(attn_weights, dim=-1)
            return torch.matmul(attn_weights, value), attn_weights
        class DecoderAttention(nn.Module):
            def __init__(self, embed_dim, num_heads):
                super().__init__()
                self.num_heads = num_heads
                self.head_dim = embed_dim // num_heads
                self.scaling = self.head_dim ** -0.5
                self.q_proj = nn.Linear(embed_dim, embed_dim)
                self.k_proj = nn.Linear(embed_dim, embed_dim)
                self.v_proj = nn.Linear(embed_dim, embed_dim)
            def forward(self, hidden_states, attention_mask=None, **kwargs):
                bsz, tgt_len, _ = hidden_states.size()
                shape = (bsz, -1, self.num_heads, self.head_dim)
                query = (self.q_proj(hidden_states) * self.scaling).view(shape).transpose(1, 2)
                key = self.k_proj(hidden_states).view(shape).transpose(1, 2)
                value = self.v_proj(hidden_states).view(shape).transpose(1, 2)
                out, _ = eager_attention_forward(self, query, key, value, attention_mask, scaling=self.scaling, **kwargs)
                return out
        """
    ),
    # Sizes from a dataclass config (its defaults are examples, the names are the sizes), keys
    # read back from a KV cache: the root of the embedding width, not of a head's.
    Invalid(
        """
        import math
        from dataclasses import dataclass
        import torch
        from torch import nn
        @dataclass
        class GPTConfig:
            n_embd: int = 768
            n_head: int = 12
            block_size: int = 1024
        class KVCachedAttention(nn.Module):
            def __init__(self, config: GPTConfig):
                super().__init__()
                self.n_head = config.n_head
                self.n_embd = config.n_embd
                self.head_size = config.n_embd // config.n_head
                self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
                self.register_buffer("k_cache", torch.zeros(1, config.block_size, self.n_head, self.head_size))
            def forward(self, x, pos):
                B, T, C = x.shape
                q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
                q = q.view(B, T, self.n_head, self.head_size)
                self.k_cache[:, pos:pos + T] = k.view(B, T, self.n_head, self.head_size)
                keys = self.k_cache[:, :pos + T]
                att = q.transpose(1, 2) @ keys.permute(0, 2, 3, 1) / math.sqrt(self.n_embd)
                return att.softmax(dim=-1)
        """,
        fixed="""
        import math
        from dataclasses import dataclass
        import torch
        from torch import nn
        @dataclass
        class GPTConfig:
            n_embd: int = 768
            n_head: int = 12
            block_size: int = 1024
        class KVCachedAttention(nn.Module):
            def __init__(self, config: GPTConfig):
                super().__init__()
                self.n_head = config.n_head
                self.n_embd = config.n_embd
                self.head_size = config.n_embd // config.n_head
                self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
                self.register_buffer("k_cache", torch.zeros(1, config.block_size, self.n_head, self.head_size))
            def forward(self, x, pos):
                B, T, C = x.shape
                q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
                q = q.view(B, T, self.n_head, self.head_size)
                self.k_cache[:, pos:pos + T] = k.view(B, T, self.n_head, self.head_size)
                keys = self.k_cache[:, :pos + T]
                att = q.transpose(1, 2) @ keys.permute(0, 2, 3, 1) / self.head_size ** 0.5
                return att.softmax(dim=-1)
        """,
    ),
    # The temperature passed to the attention module is the root of the model width, while the
    # heads it attends over are d_k wide: reported where the value is written.
    Invalid(
        """
        import numpy as np
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        class ScaledDotProductAttention(nn.Module):
            def __init__(self, temperature):
                super().__init__()
                self.temperature = temperature
            def forward(self, q, k, v):
                attn = torch.matmul(q / self.temperature, k.transpose(2, 3))
                return torch.matmul(F.softmax(attn, dim=-1), v)
        class MultiHeadAttention(nn.Module):
            def __init__(self, n_head, d_model, d_k):
                super().__init__()
                self.n_head, self.d_k = n_head, d_k
                self.w_qs = nn.Linear(d_model, n_head * d_k, bias=False)
                self.w_ks = nn.Linear(d_model, n_head * d_k, bias=False)
                self.w_vs = nn.Linear(d_model, n_head * d_k, bias=False)
                self.attention = ScaledDotProductAttention(temperature=np.power(d_model, 0.5))
            def forward(self, q, k, v):
                b, n = q.size(0), q.size(1)
                q = self.w_qs(q).view(b, n, self.n_head, self.d_k).transpose(1, 2)
                k = self.w_ks(k).view(b, k.size(1), self.n_head, self.d_k).transpose(1, 2)
                v = self.w_vs(v).view(b, v.size(1), self.n_head, self.d_k).transpose(1, 2)
                return self.attention(q, k, v).transpose(1, 2).reshape(b, n, -1)
        """
    ),
    # The scale kept in `__init__` has lost its root (1/d instead of 1/sqrt(d)): the value is
    # wrong where it is written, so it is reported and mended there. QK-norm on the way does
    # not excuse it: normalised queries and keys give dot products that grow with d.
    Invalid(
        """
        import torch.nn as nn


        class QKNormAttention(nn.Module):
            def __init__(self, hidden_size, num_heads, qk_norm=True):
                super().__init__()
                self.num_heads = num_heads
                self.head_dim = hidden_size // num_heads
                self.temperature = 1.0 / self.head_dim
                self.qkv = nn.Linear(hidden_size, hidden_size * 3)
                self.q_norm = nn.LayerNorm(self.head_dim) if qk_norm else nn.Identity()
                self.k_norm = nn.LayerNorm(self.head_dim) if qk_norm else nn.Identity()

            def forward(self, x):
                B, N, C = x.shape
                qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
                q, k, v = qkv.unbind(0)
                q, k = self.q_norm(q), self.k_norm(k)
                attn = (q @ k.transpose(-2, -1)) * self.temperature
                return (attn.softmax(dim=-1) @ v).transpose(1, 2).reshape(B, N, C)
        """,
        fixed="""
        import torch.nn as nn


        class QKNormAttention(nn.Module):
            def __init__(self, hidden_size, num_heads, qk_norm=True):
                super().__init__()
                self.num_heads = num_heads
                self.head_dim = hidden_size // num_heads
                self.temperature = self.head_dim ** -0.5
                self.qkv = nn.Linear(hidden_size, hidden_size * 3)
                self.q_norm = nn.LayerNorm(self.head_dim) if qk_norm else nn.Identity()
                self.k_norm = nn.LayerNorm(self.head_dim) if qk_norm else nn.Identity()

            def forward(self, x):
                B, N, C = x.shape
                qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
                q, k, v = qkv.unbind(0)
                q, k = self.q_norm(q), self.k_norm(k)
                attn = (q @ k.transpose(-2, -1)) * self.temperature
                return (attn.softmax(dim=-1) @ v).transpose(1, 2).reshape(B, N, C)
        """,
    ),
    # Heads folded into the batch by einops (`(b h) n d`), scaled by the latent width.
    Invalid(
        """
        import torch
        from torch import nn
        from einops import rearrange


        class LatentCrossAttention(nn.Module):
            def __init__(self, latent_dim, media_dim, heads=4, head_dim=32):
                super().__init__()
                self.h = heads
                self.scale = latent_dim ** -0.5
                self.to_q = nn.Linear(latent_dim, heads * head_dim, bias=False)
                self.to_k = nn.Linear(media_dim, heads * head_dim, bias=False)
                self.to_v = nn.Linear(media_dim, heads * head_dim, bias=False)

            def forward(self, latents, media):
                q, k, v = self.to_q(latents), self.to_k(media), self.to_v(media)
                q, k, v = (rearrange(t, "b n (h d) -> (b h) n d", h=self.h) for t in (q, k, v))
                logits = torch.bmm(q, k.transpose(1, 2)) * self.scale
                out = torch.bmm(logits.softmax(dim=-1), v)
                return rearrange(out, "(b h) n d -> b n (h d)", h=self.h)
        """,
        fixed="""
        import torch
        from torch import nn
        from einops import rearrange


        class LatentCrossAttention(nn.Module):
            def __init__(self, latent_dim, media_dim, heads=4, head_dim=32):
                super().__init__()
                self.h = heads
                self.scale = head_dim ** -0.5
                self.to_q = nn.Linear(latent_dim, heads * head_dim, bias=False)
                self.to_k = nn.Linear(media_dim, heads * head_dim, bias=False)
                self.to_v = nn.Linear(media_dim, heads * head_dim, bias=False)

            def forward(self, latents, media):
                q, k, v = self.to_q(latents), self.to_k(media), self.to_v(media)
                q, k, v = (rearrange(t, "b n (h d) -> (b h) n d", h=self.h) for t in (q, k, v))
                logits = torch.bmm(q, k.transpose(1, 2)) * self.scale
                out = torch.bmm(logits.softmax(dim=-1), v)
                return rearrange(out, "(b h) n d -> b n (h d)", h=self.h)
        """,
        line=10,
    ),
    # Multi-head code scaled by the model width.
    Invalid(
        """
        import math
        import torch.nn as nn
        class MultiHeadAttention(nn.Module):
            def __init__(self, d_model, num_heads):
                super().__init__()
                self.d_model = d_model
                self.num_heads = num_heads
                self.head_dim = d_model // num_heads
                self.qkv = nn.Linear(d_model, 3 * d_model)
            def forward(self, x):
                B, T, C = x.shape
                q, k, v = self.qkv(x).split(self.d_model, dim=2)
                q = q.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
                k = k.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
                att = (q @ k.transpose(-2, -1)) / math.sqrt(self.d_model)
                return att.softmax(dim=-1)
        """,
        fixed="""
        import math
        import torch.nn as nn
        class MultiHeadAttention(nn.Module):
            def __init__(self, d_model, num_heads):
                super().__init__()
                self.d_model = d_model
                self.num_heads = num_heads
                self.head_dim = d_model // num_heads
                self.qkv = nn.Linear(d_model, 3 * d_model)
            def forward(self, x):
                B, T, C = x.shape
                q, k, v = self.qkv(x).split(self.d_model, dim=2)
                q = q.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
                k = k.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
                att = (q @ k.transpose(-2, -1)) / self.head_dim ** 0.5
                return att.softmax(dim=-1)
        """,
        line=15,
        page=True,
    ),
    # The root multiplied instead of divided.
    Invalid(
        """
        import math
        import torch
        def attention(query, key, value):
            batch, heads, tokens, d_k = query.shape
            scores = torch.matmul(query, key.transpose(-2, -1)) * math.sqrt(d_k)
            return torch.softmax(scores, dim=-1) @ value
        """,
        fixed="""
        import math
        import torch
        def attention(query, key, value):
            batch, heads, tokens, d_k = query.shape
            scores = torch.matmul(query, key.transpose(-2, -1)) * d_k ** -0.5
            return torch.softmax(scores, dim=-1) @ value
        """,
    ),
    # The dimension without the root.
    Invalid(
        """
        import torch
        def attention(q, k, v):
            b, h, n, d = q.shape
            scores = (q @ k.transpose(-2, -1)) / d
            return scores.softmax(-1) @ v
        """,
        fixed="""
        import torch
        def attention(q, k, v):
            b, h, n, d = q.shape
            scores = (q @ k.transpose(-2, -1)) / d ** 0.5
            return scores.softmax(-1) @ v
        """,
    ),
    # The sequence length, not the feature dimension.
    Invalid(
        """
        import math
        import torch
        def attention(q, k, v):
            b, h, n, d = q.shape
            scores = q @ k.transpose(-2, -1) / math.sqrt(n)
            return torch.softmax(scores, dim=-1) @ v
        """,
        fixed="""
        import math
        import torch
        def attention(q, k, v):
            b, h, n, d = q.shape
            scores = q @ k.transpose(-2, -1) / d ** 0.5
            return torch.softmax(scores, dim=-1) @ v
        """,
    ),
    # Learned queries against projected keys (attention pooling): the queries are a parameter
    # shared by the batch, and the scale comes after the softmax.
    Invalid(
        """
        import torch
        import torch.nn as nn


        class LatentPool(nn.Module):
            def __init__(self, width, n_latents=8):
                super().__init__()
                self.latent_queries = nn.Parameter(torch.randn(n_latents, width) * 0.02)
                self.to_k = nn.Linear(width, width)
                self.to_v = nn.Linear(width, width)
                self.width = width

            def forward(self, tokens):
                keys, values = self.to_k(tokens), self.to_v(tokens)
                sim = torch.einsum("ld,bnd->bln", self.latent_queries, keys)
                attn = sim.softmax(dim=-1) * self.width ** -0.5
                return torch.einsum("bln,bnd->bld", attn, values)
        """,
        fixed=None,
    ),
    # The scale after the softmax.
    Invalid(
        """
        import math
        import torch
        def attention(q, k, v):
            b, h, n, d_k = q.shape
            weights = torch.softmax(q @ k.transpose(-2, -1), dim=-1) / math.sqrt(d_k)
            return weights @ v
        """,
        fixed=None,
    ),
    # ViT with the model width in the scale attribute.
    Invalid(
        """
        import torch.nn as nn
        class Attention(nn.Module):
            def __init__(self, dim, heads=8):
                super().__init__()
                self.heads = heads
                self.dim_head = dim // heads
                self.scale = dim ** -0.5
                self.to_qkv = nn.Linear(dim, dim * 3, bias=False)
            def forward(self, x):
                b, n, _ = x.shape
                q, k, v = self.to_qkv(x).chunk(3, dim=-1)
                q = q.reshape(b, n, self.heads, self.dim_head).transpose(1, 2)
                k = k.reshape(b, n, self.heads, self.dim_head).transpose(1, 2)
                dots = (q @ k.transpose(-1, -2)) * self.scale
                return dots.softmax(dim=-1)
        """,
        fixed="""
        import torch.nn as nn
        class Attention(nn.Module):
            def __init__(self, dim, heads=8):
                super().__init__()
                self.heads = heads
                self.dim_head = dim // heads
                self.scale = self.dim_head ** -0.5
                self.to_qkv = nn.Linear(dim, dim * 3, bias=False)
            def forward(self, x):
                b, n, _ = x.shape
                q, k, v = self.to_qkv(x).chunk(3, dim=-1)
                q = q.reshape(b, n, self.heads, self.dim_head).transpose(1, 2)
                k = k.reshape(b, n, self.heads, self.dim_head).transpose(1, 2)
                dots = (q @ k.transpose(-1, -2)) * self.scale
                return dots.softmax(dim=-1)
        """,
        line=7,
    ),
    # einsum with the width.
    Invalid(
        """
        import torch
        def attend(self, x, heads):
            b, n, dim = x.shape
            q = self.to_q(x).view(b, n, heads, dim // heads).transpose(1, 2)
            k = self.to_k(x).view(b, n, heads, dim // heads).transpose(1, 2)
            sim = torch.einsum("bhid,bhjd->bhij", q, k) * dim ** -0.5
            return sim.softmax(dim=-1)
        """,
        fixed="""
        import torch
        def attend(self, x, heads):
            b, n, dim = x.shape
            q = self.to_q(x).view(b, n, heads, dim // heads).transpose(1, 2)
            k = self.to_k(x).view(b, n, heads, dim // heads).transpose(1, 2)
            sim = torch.einsum("bhid,bhjd->bhij", q, k) * q.shape[-1] ** -0.5
            return sim.softmax(dim=-1)
        """,
    ),
    # Root multiplied, with d from the key's shape.
    Invalid(
        """
        import torch
        def attention(q, k, v):
            b, h, n, d = k.shape
            scores = torch.matmul(q, k.transpose(-1, -2)) * d ** 0.5
            return torch.softmax(scores, dim=-1) @ v
        """,
        fixed="""
        import torch
        def attention(q, k, v):
            b, h, n, d = k.shape
            scores = torch.matmul(q, k.transpose(-1, -2)) * d ** -0.5
            return torch.softmax(scores, dim=-1) @ v
        """,
    ),
    # Course code: d_out used in multi-head attention.
    Invalid(
        """
        import torch
        import torch.nn as nn
        class MultiHeadAttention(nn.Module):
            def __init__(self, d_in, d_out, num_heads):
                super().__init__()
                self.d_out = d_out
                self.num_heads = num_heads
                self.head_dim = d_out // num_heads
                self.W_query = nn.Linear(d_in, d_out, bias=False)
                self.W_key = nn.Linear(d_in, d_out, bias=False)
            def forward(self, x):
                b, num_tokens, d_in = x.shape
                keys = self.W_key(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
                queries = self.W_query(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
                attn_scores = queries @ keys.transpose(2, 3)
                return torch.softmax(attn_scores / self.d_out ** 0.5, dim=-1)
        """,
        fixed="""
        import torch
        import torch.nn as nn
        class MultiHeadAttention(nn.Module):
            def __init__(self, d_in, d_out, num_heads):
                super().__init__()
                self.d_out = d_out
                self.num_heads = num_heads
                self.head_dim = d_out // num_heads
                self.W_query = nn.Linear(d_in, d_out, bias=False)
                self.W_key = nn.Linear(d_in, d_out, bias=False)
            def forward(self, x):
                b, num_tokens, d_in = x.shape
                keys = self.W_key(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
                queries = self.W_query(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
                attn_scores = queries @ keys.transpose(2, 3)
                return torch.softmax(attn_scores / self.head_dim ** 0.5, dim=-1)
        """,
    ),
    # Divided by the head dimension itself.
    Invalid(
        """
        import torch
        import torch.nn as nn
        class Attn(nn.Module):
            def __init__(self, dim, heads):
                super().__init__()
                self.heads = heads
                self.head_dim = dim // heads
                self.qkv = nn.Linear(dim, 3 * dim)
            def forward(self, x):
                B, N, C = x.shape
                qkv = self.qkv(x).reshape(B, N, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
                q, k, v = qkv[0], qkv[1], qkv[2]
                attn = (q @ k.transpose(-2, -1)) / self.head_dim
                return attn.softmax(dim=-1) @ v
        """,
        fixed="""
        import torch
        import torch.nn as nn
        class Attn(nn.Module):
            def __init__(self, dim, heads):
                super().__init__()
                self.heads = heads
                self.head_dim = dim // heads
                self.qkv = nn.Linear(dim, 3 * dim)
            def forward(self, x):
                B, N, C = x.shape
                qkv = self.qkv(x).reshape(B, N, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
                q, k, v = qkv[0], qkv[1], qkv[2]
                attn = (q @ k.transpose(-2, -1)) / self.head_dim ** 0.5
                return attn.softmax(dim=-1) @ v
        """,
    ),
    # The query length in a cross-attention helper.
    Invalid(
        """
        import math
        import torch
        def cross_attention(q, k, v):
            b, h, n_q, d = q.shape
            s = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(n_q)
            return s.softmax(-1) @ v
        """,
        fixed="""
        import math
        import torch
        def cross_attention(q, k, v):
            b, h, n_q, d = q.shape
            s = torch.matmul(q, k.transpose(-2, -1)) / d ** 0.5
            return s.softmax(-1) @ v
        """,
    ),
    # Weights multiplied by the scale after the softmax.
    Invalid(
        """
        import torch
        def attention(q, k, v):
            b, h, n, d = q.shape
            w = torch.softmax(q @ k.transpose(-2, -1), dim=-1)
            w = w * d ** -0.5
            return w @ v
        """,
        fixed=None,
    ),
    # bmm over flattened heads, scaled by the width.
    Invalid(
        """
        import math
        import torch
        def attend(self, x, heads):
            b, n, dim = x.shape
            q = self.wq(x).view(b, n, heads, dim // heads).transpose(1, 2).reshape(b * heads, n, dim // heads)
            k = self.wk(x).view(b, n, heads, dim // heads).transpose(1, 2).reshape(b * heads, n, dim // heads)
            s = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(dim)
            return s.softmax(-1)
        """,
        fixed="""
        import math
        import torch
        def attend(self, x, heads):
            b, n, dim = x.shape
            q = self.wq(x).view(b, n, heads, dim // heads).transpose(1, 2).reshape(b * heads, n, dim // heads)
            k = self.wk(x).view(b, n, heads, dim // heads).transpose(1, 2).reshape(b * heads, n, dim // heads)
            s = torch.bmm(q, k.transpose(1, 2)) / q.shape[-1] ** 0.5
            return s.softmax(-1)
        """,
    ),
    # Config dataclass: the width from the config.
    Invalid(
        """
        from dataclasses import dataclass
        import math
        import torch
        import torch.nn as nn
        @dataclass
        class Config:
            n_embd: int
            n_head: int
        class CausalSelfAttention(nn.Module):
            def __init__(self, config: Config):
                super().__init__()
                self.n_head = config.n_head
                self.n_embd = config.n_embd
                self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
            def forward(self, x):
                B, T, C = x.size()
                q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
                q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C))
                return torch.softmax(att, dim=-1)
        """,
        fixed="""
        from dataclasses import dataclass
        import math
        import torch
        import torch.nn as nn
        @dataclass
        class Config:
            n_embd: int
            n_head: int
        class CausalSelfAttention(nn.Module):
            def __init__(self, config: Config):
                super().__init__()
                self.n_head = config.n_head
                self.n_embd = config.n_embd
                self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
            def forward(self, x):
                B, T, C = x.size()
                q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
                q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                att = (q @ k.transpose(-2, -1)) * (q.shape[-1] ** -0.5)
                return torch.softmax(att, dim=-1)
        """,
    ),
    # Multiplied by the root of the head dimension named in the module.
    Invalid(
        """
        import math
        import torch
        def attention(q, k, v, head_dim):
            q = q.view(q.size(0), q.size(1), -1, head_dim)
            k = k.view(k.size(0), k.size(1), -1, head_dim)
            s = torch.einsum("bqhd,bkhd->bhqk", q, k) * math.sqrt(head_dim)
            return s.softmax(dim=-1)
        """,
        fixed="""
        import math
        import torch
        def attention(q, k, v, head_dim):
            q = q.view(q.size(0), q.size(1), -1, head_dim)
            k = k.view(k.size(0), k.size(1), -1, head_dim)
            s = torch.einsum("bqhd,bkhd->bhqk", q, k) * head_dim ** -0.5
            return s.softmax(dim=-1)
        """,
    ),
    # Hugging Face style with a table of attention functions chosen by a setting: the eager one is
    # called with the model width's scale; the heads' shape is `(*input_shape, -1, head_dim)`.
    Invalid(
        """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F


        def eager_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0):
            attn_weights = torch.matmul(query, key.transpose(2, 3)) * scaling
            if attention_mask is not None:
                attn_weights = attn_weights + attention_mask
            attn_weights = F.softmax(attn_weights, dim=-1)
            return torch.matmul(attn_weights, value), attn_weights


        def sdpa_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0):
            out = F.scaled_dot_product_attention(query, key, value, attn_mask=attention_mask, scale=scaling)
            return out, None


        ATTENTION_FUNCTIONS = {"eager": eager_attention_forward, "sdpa": sdpa_attention_forward}


        class Attention(nn.Module):
            def __init__(self, hidden_size, num_heads, attn_implementation="eager"):
                super().__init__()
                self.head_dim = hidden_size // num_heads
                self.scaling = hidden_size ** -0.5
                self.attn_implementation = attn_implementation
                self.q_proj = nn.Linear(hidden_size, hidden_size)
                self.k_proj = nn.Linear(hidden_size, hidden_size)
                self.v_proj = nn.Linear(hidden_size, hidden_size)

            def forward(self, hidden_states, attention_mask=None):
                input_shape = hidden_states.shape[:-1]
                hidden_shape = (*input_shape, -1, self.head_dim)
                q = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
                k = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
                v = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
                attention_interface = ATTENTION_FUNCTIONS[self.attn_implementation]
                out, _ = attention_interface(self, q, k, v, attention_mask, scaling=self.scaling)
                return out.transpose(1, 2).reshape(*input_shape, -1)


        class Model(nn.Module):
            def __init__(self, vocab_size=1000, hidden_size=256, num_heads=8):
                super().__init__()
                self.embed = nn.Embedding(vocab_size, hidden_size)
                self.attn = Attention(hidden_size, num_heads)

            def forward(self, input_ids):
                batch_size, seq_len = input_ids.shape
                return self.attn(self.embed(input_ids))
        """,
        fixed=None,
        line=26,
    ),
    # Hugging Face style: the caller passes the model width's scale to the shared attention
    # function; reported where its __init__ writes that scale.
    Invalid(
        """
        import torch
        from torch import nn
        def eager_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0):
            attn_weights = torch.matmul(query, key.transpose(-1, -2)) * scaling
            attn_weights = nn.functional.softmax(attn_weights, dim=-1)
            return torch.matmul(attn_weights, value)
        class Attention(nn.Module):
            def __init__(self, embed_dim, num_heads):
                super().__init__()
                self.embed_dim = embed_dim
                self.num_heads = num_heads
                self.head_dim = embed_dim // num_heads
                self.scale = self.embed_dim ** -0.5
                self.q_proj = nn.Linear(embed_dim, embed_dim)
                self.k_proj = nn.Linear(embed_dim, embed_dim)
                self.v_proj = nn.Linear(embed_dim, embed_dim)
            def forward(self, hidden_states):
                b, n, _ = hidden_states.shape
                q = self.q_proj(hidden_states).view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
                k = self.k_proj(hidden_states).view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
                v = self.v_proj(hidden_states).view(b, n, self.num_heads, self.head_dim).transpose(1, 2)
                return eager_attention_forward(self, q, k, v, None, scaling=self.scale)
        """,
        fixed=None,
        line=13,
    ),
    # The scale computed once in __init__ from the model width; the smoke test's numbers do not
    # make it right (the heads are 96 // 6 = 16 wide).
    Invalid(
        """
        import torch
        from torch import nn

        class TokenMixer(nn.Module):
            def __init__(self, width, n_heads=8):
                super().__init__()
                self.n_heads = n_heads
                self.scale = width ** -0.5
                self.to_qkv = nn.Linear(width, 3 * width)

            def forward(self, tokens):
                b, n, _ = tokens.shape
                q, k, v = self.to_qkv(tokens).chunk(3, dim=-1)
                q, k, v = (t.reshape(b, n, self.n_heads, -1).transpose(1, 2) for t in (q, k, v))
                attn = (q @ k.transpose(-1, -2) * self.scale).softmax(dim=-1)
                return (attn @ v).transpose(1, 2).reshape(b, n, -1)

        if __name__ == "__main__":
            print(TokenMixer(96, n_heads=6)(torch.randn(2, 10, 96)).shape)
        """,
        fixed="""
        import torch
        from torch import nn

        class TokenMixer(nn.Module):
            def __init__(self, width, n_heads=8):
                super().__init__()
                self.n_heads = n_heads
                self.scale = width ** -0.5
                self.to_qkv = nn.Linear(width, 3 * width)

            def forward(self, tokens):
                b, n, _ = tokens.shape
                q, k, v = self.to_qkv(tokens).chunk(3, dim=-1)
                q, k, v = (t.reshape(b, n, self.n_heads, -1).transpose(1, 2) for t in (q, k, v))
                attn = (q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5).softmax(dim=-1)
                return (attn @ v).transpose(1, 2).reshape(b, n, -1)

        if __name__ == "__main__":
            print(TokenMixer(96, n_heads=6)(torch.randn(2, 10, 96)).shape)
        """,
        line=8,
    ),
    # One head per module, sized by the container (EMBED // N_HEADS), scaled by the input's
    # width: every head's softmax is two times too flat.
    Invalid(
        """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F

        EMBED = 96
        N_HEADS = 4

        class OneHead(nn.Module):
            def __init__(self, size):
                super().__init__()
                self.query = nn.Linear(EMBED, size, bias=False)
                self.key = nn.Linear(EMBED, size, bias=False)
                self.value = nn.Linear(EMBED, size, bias=False)

            def forward(self, x):
                _, _, width = x.shape
                q, k = self.query(x), self.key(x)
                affinity = q @ k.transpose(-2, -1) * width ** -0.5
                return F.softmax(affinity, dim=-1) @ self.value(x)

        class ManyHeads(nn.Module):
            def __init__(self, count, size):
                super().__init__()
                self.heads = nn.ModuleList([OneHead(size) for _ in range(count)])

            def forward(self, x):
                return torch.cat([head(x) for head in self.heads], dim=-1)

        if __name__ == "__main__":
            print(ManyHeads(N_HEADS, EMBED // N_HEADS)(torch.randn(2, 5, EMBED)).shape)
        """,
        fixed="""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F

        EMBED = 96
        N_HEADS = 4

        class OneHead(nn.Module):
            def __init__(self, size):
                super().__init__()
                self.query = nn.Linear(EMBED, size, bias=False)
                self.key = nn.Linear(EMBED, size, bias=False)
                self.value = nn.Linear(EMBED, size, bias=False)

            def forward(self, x):
                _, _, width = x.shape
                q, k = self.query(x), self.key(x)
                affinity = q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5
                return F.softmax(affinity, dim=-1) @ self.value(x)

        class ManyHeads(nn.Module):
            def __init__(self, count, size):
                super().__init__()
                self.heads = nn.ModuleList([OneHead(size) for _ in range(count)])

            def forward(self, x):
                return torch.cat([head(x) for head in self.heads], dim=-1)

        if __name__ == "__main__":
            print(ManyHeads(N_HEADS, EMBED // N_HEADS)(torch.randn(2, 5, EMBED)).shape)
        """,
        line=18,
    ),
    # lucidrains-style heads projected from `dim` to `heads * dim_head`: `dim ** -0.5` is the
    # model width's root, not the per-head size's (early vit-pytorch had this).
    Invalid(
        """
        import torch
        from torch import nn
        from einops import rearrange


        class Attention(nn.Module):
            def __init__(self, dim, heads=8, dim_head=64, dropout=0.0):
                super().__init__()
                inner_dim = dim_head * heads
                self.heads = heads
                self.scale = dim ** -0.5
                self.attend = nn.Softmax(dim=-1)
                self.to_qkv = nn.Linear(dim, inner_dim * 3, bias=False)
                self.to_out = nn.Sequential(nn.Linear(inner_dim, dim), nn.Dropout(dropout))

            def forward(self, x):
                qkv = self.to_qkv(x).chunk(3, dim=-1)
                q, k, v = map(lambda t: rearrange(t, "b n (h d) -> b h n d", h=self.heads), qkv)
                dots = torch.matmul(q, k.transpose(-1, -2)) * self.scale
                attn = self.attend(dots)
                out = torch.matmul(attn, v)
                return self.to_out(rearrange(out, "b h n d -> b n (h d)"))
        """,
        fixed="""
        import torch
        from torch import nn
        from einops import rearrange


        class Attention(nn.Module):
            def __init__(self, dim, heads=8, dim_head=64, dropout=0.0):
                super().__init__()
                inner_dim = dim_head * heads
                self.heads = heads
                self.scale = dim_head ** -0.5
                self.attend = nn.Softmax(dim=-1)
                self.to_qkv = nn.Linear(dim, inner_dim * 3, bias=False)
                self.to_out = nn.Sequential(nn.Linear(inner_dim, dim), nn.Dropout(dropout))

            def forward(self, x):
                qkv = self.to_qkv(x).chunk(3, dim=-1)
                q, k, v = map(lambda t: rearrange(t, "b n (h d) -> b h n d", h=self.heads), qkv)
                dots = torch.matmul(q, k.transpose(-1, -2)) * self.scale
                attn = self.attend(dots)
                out = torch.matmul(attn, v)
                return self.to_out(rearrange(out, "b h n d -> b n (h d)"))
        """,
        line=11,
    ),
    # Cross-attention scaled by the query width; the heads come from `view(b, n, heads, -1)`.
    Invalid(
        """
        import math
        import torch
        import torch.nn as nn


        class CrossAttention(nn.Module):
            def __init__(self, query_dim, context_dim, n_heads, head_size):
                super().__init__()
                self.n_heads = n_heads
                self.query_dim = query_dim
                self.q_proj = nn.Linear(query_dim, n_heads * head_size)
                self.kv_proj = nn.Linear(context_dim, 2 * n_heads * head_size)

            def forward(self, x, context):
                b, n, _ = x.shape
                m = context.shape[1]
                q = self.q_proj(x).view(b, n, self.n_heads, -1).transpose(1, 2)
                k, v = self.kv_proj(context).chunk(2, dim=-1)
                k = k.view(b, m, self.n_heads, -1).transpose(1, 2)
                v = v.view(b, m, self.n_heads, -1).transpose(1, 2)
                logits = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.query_dim)
                weights = logits.softmax(dim=-1)
                return torch.matmul(weights, v).transpose(1, 2).reshape(b, n, -1)
        """,
        fixed="""
        import math
        import torch
        import torch.nn as nn


        class CrossAttention(nn.Module):
            def __init__(self, query_dim, context_dim, n_heads, head_size):
                super().__init__()
                self.n_heads = n_heads
                self.query_dim = query_dim
                self.q_proj = nn.Linear(query_dim, n_heads * head_size)
                self.kv_proj = nn.Linear(context_dim, 2 * n_heads * head_size)

            def forward(self, x, context):
                b, n, _ = x.shape
                m = context.shape[1]
                q = self.q_proj(x).view(b, n, self.n_heads, -1).transpose(1, 2)
                k, v = self.kv_proj(context).chunk(2, dim=-1)
                k = k.view(b, m, self.n_heads, -1).transpose(1, 2)
                v = v.view(b, m, self.n_heads, -1).transpose(1, 2)
                logits = torch.matmul(q, k.transpose(-2, -1)) / q.shape[-1] ** 0.5
                weights = logits.softmax(dim=-1)
                return torch.matmul(weights, v).transpose(1, 2).reshape(b, n, -1)
        """,
        line=21,
    ),
    # A helper whose width argument the caller fills with the model width: q and k arrive as
    # (batch, heads, tokens, d_model // n_heads). Reported at the argument.
    Invalid(
        """
        import math
        import torch
        import torch.nn as nn


        def dot_product_attention(query, key, value, width):
            logits = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(width)
            return torch.matmul(logits.softmax(dim=-1), value)


        class MultiHeadedAttention(nn.Module):
            def __init__(self, n_heads, d_model):
                super().__init__()
                self.n_heads = n_heads
                self.d_model = d_model
                self.d_k = d_model // n_heads
                self.projections = nn.ModuleList([nn.Linear(d_model, d_model) for _ in range(3)])
                self.out = nn.Linear(d_model, d_model)

            def forward(self, query, key, value):
                n_batch = query.size(0)
                query, key, value = [
                    proj(t).view(n_batch, -1, self.n_heads, self.d_k).transpose(1, 2)
                    for proj, t in zip(self.projections, (query, key, value))
                ]
                context = dot_product_attention(query, key, value, self.d_model)
                context = context.transpose(1, 2).contiguous().view(n_batch, -1, self.d_model)
                return self.out(context)
        """,
        line=26,
    ),
    # The heads split by a view whose rank is unknown (`x.size()[:-1] + (heads, head_size)`):
    # the last axis is still the head size, and the scale is the hidden size's root.
    Invalid(
        """
        import math
        import torch
        from torch import nn


        class EncoderSelfAttention(nn.Module):
            def __init__(self, hidden_size, num_heads):
                super().__init__()
                self.num_heads = num_heads
                self.head_size = hidden_size // num_heads
                self.hidden_size = hidden_size
                self.query = nn.Linear(hidden_size, hidden_size)
                self.key = nn.Linear(hidden_size, hidden_size)
                self.value = nn.Linear(hidden_size, hidden_size)

            def split_heads(self, x):
                x = x.view(x.size()[:-1] + (self.num_heads, self.head_size))
                return x.permute(0, 2, 1, 3)

            def forward(self, hidden_states, extended_mask=None):
                q = self.split_heads(self.query(hidden_states))
                k = self.split_heads(self.key(hidden_states))
                v = self.split_heads(self.value(hidden_states))
                scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.hidden_size)
                if extended_mask is not None:
                    scores = scores + extended_mask
                probs = nn.functional.softmax(scores, dim=-1)
                context = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
                return context.view(context.size()[:-2] + (self.hidden_size,))
        """,
        fixed="""
        import math
        import torch
        from torch import nn


        class EncoderSelfAttention(nn.Module):
            def __init__(self, hidden_size, num_heads):
                super().__init__()
                self.num_heads = num_heads
                self.head_size = hidden_size // num_heads
                self.hidden_size = hidden_size
                self.query = nn.Linear(hidden_size, hidden_size)
                self.key = nn.Linear(hidden_size, hidden_size)
                self.value = nn.Linear(hidden_size, hidden_size)

            def split_heads(self, x):
                x = x.view(x.size()[:-1] + (self.num_heads, self.head_size))
                return x.permute(0, 2, 1, 3)

            def forward(self, hidden_states, extended_mask=None):
                q = self.split_heads(self.query(hidden_states))
                k = self.split_heads(self.key(hidden_states))
                v = self.split_heads(self.value(hidden_states))
                scores = torch.matmul(q, k.transpose(-1, -2)) / self.head_size ** 0.5
                if extended_mask is not None:
                    scores = scores + extended_mask
                probs = nn.functional.softmax(scores, dim=-1)
                context = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
                return context.view(context.size()[:-2] + (self.hidden_size,))
        """,
        line=24,
    ),
    # Content and position scores summed (Transformer-XL, Conformer), then multiplied by the root.
    Invalid(
        """
        import math
        import torch
        import torch.nn as nn


        class RelativeSelfAttention(nn.Module):
            def __init__(self, d_model, n_head):
                super().__init__()
                self.n_head = n_head
                self.d_head = d_model // n_head
                self.root = math.sqrt(self.d_head)
                self.qkv = nn.Linear(d_model, 3 * d_model)
                self.pos = nn.Linear(d_model, d_model, bias=False)
                self.content_bias = nn.Parameter(torch.zeros(n_head, self.d_head))
                self.position_bias = nn.Parameter(torch.zeros(n_head, self.d_head))

            def forward(self, x, pos_emb):
                b, t, _ = x.shape
                q, k, v = self.qkv(x).chunk(3, dim=-1)
                q = q.view(b, t, self.n_head, self.d_head)
                k = k.view(b, t, self.n_head, self.d_head).transpose(1, 2)
                v = v.view(b, t, self.n_head, self.d_head).transpose(1, 2)
                p = self.pos(pos_emb).view(b, t, self.n_head, self.d_head).transpose(1, 2)
                ac = torch.matmul((q + self.content_bias).transpose(1, 2), k.transpose(-2, -1))
                bd = torch.matmul((q + self.position_bias).transpose(1, 2), p.transpose(-2, -1))
                logits = (ac + bd) * self.root
                return torch.matmul(logits.softmax(dim=-1), v)
        """,
        fixed="""
        import math
        import torch
        import torch.nn as nn


        class RelativeSelfAttention(nn.Module):
            def __init__(self, d_model, n_head):
                super().__init__()
                self.n_head = n_head
                self.d_head = d_model // n_head
                self.root = math.sqrt(self.d_head)
                self.qkv = nn.Linear(d_model, 3 * d_model)
                self.pos = nn.Linear(d_model, d_model, bias=False)
                self.content_bias = nn.Parameter(torch.zeros(n_head, self.d_head))
                self.position_bias = nn.Parameter(torch.zeros(n_head, self.d_head))

            def forward(self, x, pos_emb):
                b, t, _ = x.shape
                q, k, v = self.qkv(x).chunk(3, dim=-1)
                q = q.view(b, t, self.n_head, self.d_head)
                k = k.view(b, t, self.n_head, self.d_head).transpose(1, 2)
                v = v.view(b, t, self.n_head, self.d_head).transpose(1, 2)
                p = self.pos(pos_emb).view(b, t, self.n_head, self.d_head).transpose(1, 2)
                ac = torch.matmul((q + self.content_bias).transpose(1, 2), k.transpose(-2, -1))
                bd = torch.matmul((q + self.position_bias).transpose(1, 2), p.transpose(-2, -1))
                logits = (ac + bd) * self.d_head ** -0.5
                return torch.matmul(logits.softmax(dim=-1), v)
        """,
        line=26,
    ),
    # Heads folded into the batch by splitting the features and stacking the pieces along the
    # batch (Set Transformer style): each piece is `size` wide, but the scale is the full width's.
    Invalid(
        """
        import math
        import torch
        import torch.nn as nn


        class FoldedHeads(nn.Module):
            def __init__(self, width, heads):
                super().__init__()
                self.width, self.heads = width, heads
                self.q = nn.Linear(width, width)
                self.kv = nn.Linear(width, 2 * width)

            def forward(self, x, y):
                q = self.q(x)
                k, v = self.kv(y).chunk(2, dim=-1)
                size = self.width // self.heads
                # Heads folded into the batch: (heads * B, N, size).
                q, k, v = (torch.cat(t.split(size, 2), 0) for t in (q, k, v))
                logits = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(self.width)
                return torch.bmm(logits.softmax(dim=2), v)
        """,
        fixed="""
        import math
        import torch
        import torch.nn as nn


        class FoldedHeads(nn.Module):
            def __init__(self, width, heads):
                super().__init__()
                self.width, self.heads = width, heads
                self.q = nn.Linear(width, width)
                self.kv = nn.Linear(width, 2 * width)

            def forward(self, x, y):
                q = self.q(x)
                k, v = self.kv(y).chunk(2, dim=-1)
                size = self.width // self.heads
                # Heads folded into the batch: (heads * B, N, size).
                q, k, v = (torch.cat(t.split(size, 2), 0) for t in (q, k, v))
                logits = torch.bmm(q, k.transpose(1, 2)) / size ** 0.5
                return torch.bmm(logits.softmax(dim=2), v)
        """,
    ),
    Invalid(
        """
        import torch
        import torch.nn as nn


        class CrossAttention(nn.Module):
            def __init__(self, query_dim, heads=8, dim_head=64):
                super().__init__()
                self.scale = dim_head ** -0.5
                self.heads = heads
                self.to_q = nn.Linear(query_dim, heads * dim_head, bias=False)
                self.to_k = nn.Linear(query_dim, heads * dim_head, bias=False)

            def fold_heads(self, t):
                b, n, d = t.shape
                return t.view(b, n, self.heads, d // self.heads).transpose(1, 2).reshape(b * self.heads, n, d // self.heads)

            def forward(self, x):
                q = self.fold_heads(self.to_q(x) * self.scale)
                k = self.fold_heads(self.to_k(x))
                empty = torch.empty(q.shape[0], q.shape[1], k.shape[1], dtype=q.dtype)
                scores = torch.baddbmm(empty, q, k.transpose(1, 2), beta=0, alpha=self.scale)
                return scores.softmax(dim=-1)


        class UNetBlock(nn.Module):
            def __init__(self, channels, n_heads, d_head):
                super().__init__()
                self.attn = CrossAttention(channels, heads=n_heads, dim_head=d_head)

            def forward(self, x):
                return self.attn(x)
        """
    ),
    # fairseq's layout: queries scaled on the way in, the scores divided by sqrt(head_dim) again,
    # viewed per batch to mask the padding and back (the views keep the product's facts). No
    # fix: which of the two factors to drop is the author's choice.
    Invalid(
        """
        import math
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        class SelfAttention(nn.Module):
            def __init__(self, embed_dim, num_heads):
                super().__init__()
                self.num_heads = num_heads
                self.head_dim = embed_dim // num_heads
                self.scaling = self.head_dim ** -0.5
                self.q_proj = nn.Linear(embed_dim, embed_dim)
                self.k_proj = nn.Linear(embed_dim, embed_dim)
            def forward(self, query, key_padding_mask=None):
                tgt_len, bsz, embed_dim = query.size()
                q = self.q_proj(query) * self.scaling
                k = self.k_proj(query)
                q = q.contiguous().view(tgt_len, bsz * self.num_heads, self.head_dim).transpose(0, 1)
                k = k.contiguous().view(-1, bsz * self.num_heads, self.head_dim).transpose(0, 1)
                src_len = k.size(1)
                attn_weights = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(self.head_dim)
                if key_padding_mask is not None:
                    attn_weights = attn_weights.view(bsz, self.num_heads, tgt_len, src_len)
                    attn_weights = attn_weights.masked_fill(key_padding_mask[:, None, None, :], -1e9)
                    attn_weights = attn_weights.view(bsz * self.num_heads, tgt_len, src_len)
                return F.softmax(attn_weights, dim=-1)
        """,
        line=20,
    ),
    # The kernel module makes its scale from the sizes its constructor is handed, the layer's
    # own `d_model` and `n_heads` under the same names: 1/head_dim, with no root. The head
    # dimension is a local of `__init__`: the fix scales at the use, by q's last axis.
    Invalid(
        """
        import torch
        import torch.nn.functional as F
        from torch import nn
        class ScaledDotProductAttention(nn.Module):
            def __init__(self, d_model, n_heads):
                super().__init__()
                head_dim = d_model // n_heads
                self.scale = 1.0 / head_dim
            def forward(self, q, k, v):
                scores = torch.matmul(q, k) * self.scale
                return torch.matmul(F.softmax(scores, dim=-1), v)
        class MultiheadAttention(nn.Module):
            def __init__(self, d_model, n_heads):
                super().__init__()
                self.n_heads, self.d_k = n_heads, d_model // n_heads
                self.W_Q = nn.Linear(d_model, d_model)
                self.W_K = nn.Linear(d_model, d_model)
                self.W_V = nn.Linear(d_model, d_model)
                self.sdp = ScaledDotProductAttention(d_model, n_heads)
            def forward(self, x):
                bs = x.size(0)
                q = self.W_Q(x).view(bs, -1, self.n_heads, self.d_k).transpose(1, 2)
                k = self.W_K(x).view(bs, -1, self.n_heads, self.d_k).permute(0, 2, 3, 1)
                v = self.W_V(x).view(bs, -1, self.n_heads, self.d_k).transpose(1, 2)
                return self.sdp(q, k, v)
        """,
        fixed="""
        import torch
        import torch.nn.functional as F
        from torch import nn
        class ScaledDotProductAttention(nn.Module):
            def __init__(self, d_model, n_heads):
                super().__init__()
                head_dim = d_model // n_heads
                self.scale = 1.0 / head_dim
            def forward(self, q, k, v):
                scores = torch.matmul(q, k) * q.shape[-1] ** -0.5
                return torch.matmul(F.softmax(scores, dim=-1), v)
        class MultiheadAttention(nn.Module):
            def __init__(self, d_model, n_heads):
                super().__init__()
                self.n_heads, self.d_k = n_heads, d_model // n_heads
                self.W_Q = nn.Linear(d_model, d_model)
                self.W_K = nn.Linear(d_model, d_model)
                self.W_V = nn.Linear(d_model, d_model)
                self.sdp = ScaledDotProductAttention(d_model, n_heads)
            def forward(self, x):
                bs = x.size(0)
                q = self.W_Q(x).view(bs, -1, self.n_heads, self.d_k).transpose(1, 2)
                k = self.W_K(x).view(bs, -1, self.n_heads, self.d_k).permute(0, 2, 3, 1)
                v = self.W_V(x).view(bs, -1, self.n_heads, self.d_k).transpose(1, 2)
                return self.sdp(q, k, v)
        """,
        line=8,
    ),
    # A GPT tutorial's head: the config parameter is unannotated, but it reads only fields that
    # one dataclass of the module declares, whose defaults make the head a twelfth of the width;
    # the scores are divided by the root of the width the input is unpacked with.
    Invalid(
        """
        import math
        from dataclasses import dataclass
        import torch
        import torch.nn.functional as F
        from torch import nn
        @dataclass
        class GPTConfig:
            block_size: int = 512
            n_head: int = 12
            n_embd: int = 768
            head_size: int = n_embd // n_head
        class SingleHeadAttention(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.key = nn.Linear(config.n_embd, config.head_size)
                self.value = nn.Linear(config.n_embd, config.head_size)
                self.query = nn.Linear(config.n_embd, config.head_size)
            def forward(self, x):
                batch_size, seq_len, hidden_size = x.size()
                k, v, q = self.key(x), self.value(x), self.query(x)
                weight = q @ k.transpose(-2, -1) / math.sqrt(hidden_size)
                return F.softmax(weight, dim=-1) @ v
        """,
        fixed="""
        import math
        from dataclasses import dataclass
        import torch
        import torch.nn.functional as F
        from torch import nn
        @dataclass
        class GPTConfig:
            block_size: int = 512
            n_head: int = 12
            n_embd: int = 768
            head_size: int = n_embd // n_head
        class SingleHeadAttention(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.key = nn.Linear(config.n_embd, config.head_size)
                self.value = nn.Linear(config.n_embd, config.head_size)
                self.query = nn.Linear(config.n_embd, config.head_size)
            def forward(self, x):
                batch_size, seq_len, hidden_size = x.size()
                k, v, q = self.key(x), self.value(x), self.query(x)
                weight = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
                return F.softmax(weight, dim=-1) @ v
        """,
        line=21,
    ),
    # The product is divided by the head dimension itself and normalised by a softmax helper
    # other layers share: judged as the helper sees this caller's product.
    Invalid(
        """
        import math
        import torch
        from torch import nn
        def masked_softmax(X, valid_lens=None):
            if valid_lens is None:
                return nn.functional.softmax(X, dim=-1)
            X = X.masked_fill(torch.arange(X.size(-1))[None, None, :] >= valid_lens[:, None, None], -1e6)
            return nn.functional.softmax(X, dim=-1)
        class DotProductAttention(nn.Module):
            def forward(self, queries, keys, values, valid_lens=None):
                d = queries.shape[-1]
                scores = torch.bmm(queries, keys.transpose(1, 2)) / d
                return torch.bmm(masked_softmax(scores, valid_lens), values)
        class ScaledDotProductAttention(nn.Module):
            def forward(self, queries, keys, values, valid_lens=None):
                scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(queries.shape[-1])
                return torch.bmm(masked_softmax(scores, valid_lens), values)
        """,
        fixed="""
        import math
        import torch
        from torch import nn
        def masked_softmax(X, valid_lens=None):
            if valid_lens is None:
                return nn.functional.softmax(X, dim=-1)
            X = X.masked_fill(torch.arange(X.size(-1))[None, None, :] >= valid_lens[:, None, None], -1e6)
            return nn.functional.softmax(X, dim=-1)
        class DotProductAttention(nn.Module):
            def forward(self, queries, keys, values, valid_lens=None):
                d = queries.shape[-1]
                scores = torch.bmm(queries, keys.transpose(1, 2)) / d ** 0.5
                return torch.bmm(masked_softmax(scores, valid_lens), values)
        class ScaledDotProductAttention(nn.Module):
            def forward(self, queries, keys, values, valid_lens=None):
                scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(queries.shape[-1])
                return torch.bmm(masked_softmax(scores, valid_lens), values)
        """,
        line=12,
    ),
    # The head dimension is handed to the constructor, right; the kernel divides by it without
    # its root: reported where it is applied, not at the constructor call.
    Invalid(
        """
        import torch
        from torch import nn
        from einops import rearrange


        class Attention(nn.Module):
            def __init__(self, dim, heads, dim_head):
                super().__init__()
                self.heads, self.dim_head = heads, dim_head
                self.to_qkv = nn.Linear(dim, heads * dim_head * 3, bias=False)

            def _attend(self, q, k, v):
                scores = torch.einsum("bhid,bhjd->bhij", q, k) / self.dim_head
                return torch.einsum("bhij,bhjd->bhid", scores.softmax(dim=-1), v)

            def forward(self, x):
                q, k, v = self.to_qkv(x).chunk(3, dim=-1)
                q, k, v = map(lambda t: rearrange(t, "b n (h d) -> b h n d", h=self.heads), (q, k, v))
                return rearrange(self._attend(q, k, v), "b h n d -> b n (h d)")


        class Encoder(nn.Module):
            def __init__(self, dim=256, heads=4):
                super().__init__()
                self.attn = Attention(dim, heads, dim // heads)
        """,
        fixed="""
        import torch
        from torch import nn
        from einops import rearrange


        class Attention(nn.Module):
            def __init__(self, dim, heads, dim_head):
                super().__init__()
                self.heads, self.dim_head = heads, dim_head
                self.to_qkv = nn.Linear(dim, heads * dim_head * 3, bias=False)

            def _attend(self, q, k, v):
                scores = torch.einsum("bhid,bhjd->bhij", q, k) / self.dim_head ** 0.5
                return torch.einsum("bhij,bhjd->bhid", scores.softmax(dim=-1), v)

            def forward(self, x):
                q, k, v = self.to_qkv(x).chunk(3, dim=-1)
                q, k, v = map(lambda t: rearrange(t, "b n (h d) -> b h n d", h=self.heads), (q, k, v))
                return rearrange(self._attend(q, k, v), "b h n d -> b n (h d)")


        class Encoder(nn.Module):
            def __init__(self, dim=256, heads=4):
                super().__init__()
                self.attn = Attention(dim, heads, dim // heads)
        """,
        line=13,
    ),
    # Queries and keys each scaled by the fourth root of the model width on the way in: reported
    # where the first factor is applied.
    Invalid(
        """
        import torch
        from torch import nn


        class SelfAttention(nn.Module):
            def __init__(self, emb, heads=8):
                super().__init__()
                self.emb, self.heads = emb, heads
                self.tokeys = nn.Linear(emb, emb, bias=False)
                self.toqueries = nn.Linear(emb, emb, bias=False)
                self.tovalues = nn.Linear(emb, emb, bias=False)

            def forward(self, x):
                b, t, e = x.size()
                h = self.heads
                s = e // h
                keys = self.tokeys(x).view(b, t, h, s).transpose(1, 2).reshape(b * h, t, s)
                queries = self.toqueries(x).view(b, t, h, s).transpose(1, 2).reshape(b * h, t, s)
                values = self.tovalues(x).view(b, t, h, s).transpose(1, 2).reshape(b * h, t, s)
                queries = queries / (e ** (1 / 4))
                keys = keys / (e ** (1 / 4))
                dot = torch.softmax(torch.bmm(queries, keys.transpose(1, 2)), dim=2)
                out = torch.bmm(dot, values).view(b, h, t, s)
                return out.transpose(1, 2).reshape(b, t, h * s)
        """,
        line=20,
    ),
    # lucidrains style: rotary embeddings applied with `map(partial(...))`, the queries scaled,
    # and the similarity scaled again.
    Invalid(
        """
        import torch
        from torch import nn
        from functools import partial
        from einops import einsum
        from einops.layers.torch import Rearrange


        def rotate_half(x):
            x1, x2 = x.chunk(2, dim=-1)
            return torch.cat((-x2, x1), dim=-1)


        def apply_rotary_pos_emb(pos, t):
            return t * pos.cos() + rotate_half(t) * pos.sin()


        class Attention(nn.Module):
            def __init__(self, dim, dim_head=64, heads=8):
                super().__init__()
                self.scale = dim_head ** -0.5
                self.to_qkv = nn.Linear(dim, dim_head * heads * 3, bias=False)
                self.split_heads = Rearrange("b n (qkv h d) -> qkv b h n d", qkv=3, h=heads)

            def forward(self, x, rotary_pos_emb):
                q, k, v = self.split_heads(self.to_qkv(x))
                q, k = map(partial(apply_rotary_pos_emb, rotary_pos_emb), (q, k))
                q = q * self.scale
                sim = einsum(q, k, "b h i d, b h j d -> b h i j") * self.scale
                return einsum(sim.softmax(dim=-1), v, "b h i j, b h j d -> b h i d")
        """,
        line=28,
    ),
    # nanoGPT-lecture style with a config object handed down: C is x's width, config.n_embd,
    # the model width; each head is config.n_embd // config.n_head wide.
    Invalid(
        """
        import torch.nn as nn
        import torch.nn.functional as F


        class Head(nn.Module):
            def __init__(self, config, head_size):
                super().__init__()
                self.key = nn.Linear(config.n_embd, head_size, bias=False)
                self.query = nn.Linear(config.n_embd, head_size, bias=False)
                self.value = nn.Linear(config.n_embd, head_size, bias=False)

            def forward(self, x):
                B, T, C = x.shape
                k, q = self.key(x), self.query(x)
                wei = q @ k.transpose(-2, -1) * C**-0.5
                return F.softmax(wei, dim=-1) @ self.value(x)


        class MultiHeadAttention(nn.Module):
            def __init__(self, config):
                super().__init__()
                head_size = config.n_embd // config.n_head
                self.heads = nn.ModuleList([Head(config, head_size) for _ in range(config.n_head)])
        """,
        line=15,
        fixed="""
        import torch.nn as nn
        import torch.nn.functional as F


        class Head(nn.Module):
            def __init__(self, config, head_size):
                super().__init__()
                self.key = nn.Linear(config.n_embd, head_size, bias=False)
                self.query = nn.Linear(config.n_embd, head_size, bias=False)
                self.value = nn.Linear(config.n_embd, head_size, bias=False)

            def forward(self, x):
                B, T, C = x.shape
                k, q = self.key(x), self.query(x)
                wei = q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5
                return F.softmax(wei, dim=-1) @ self.value(x)


        class MultiHeadAttention(nn.Module):
            def __init__(self, config):
                super().__init__()
                head_size = config.n_embd // config.n_head
                self.heads = nn.ModuleList([Head(config, head_size) for _ in range(config.n_head)])
        """,
    ),
    # TransUNet's ViT: `dk` is the root of the head dimension, and the scores are multiplied by it.
    Invalid(
        """
        import torch
        import torch.nn as nn
        from einops import rearrange


        class MultiHeadAttention(nn.Module):
            def __init__(self, embedding_dim, head_num):
                super().__init__()
                self.head_num = head_num
                self.dk = (embedding_dim // head_num) ** (1 / 2)
                self.qkv_layer = nn.Linear(embedding_dim, embedding_dim * 3, bias=False)

            def forward(self, x):
                qkv = self.qkv_layer(x)
                query, key, value = tuple(rearrange(qkv, "b t (d k h) -> k b h t d", k=3, h=self.head_num))
                energy = torch.einsum("... i d , ... j d -> ... i j", query, key) * self.dk
                attention = torch.softmax(energy, dim=-1)
                return torch.einsum("... i j , ... j d -> ... i d", attention, value)
        """,
        line=16,
        fixed="""
        import torch
        import torch.nn as nn
        from einops import rearrange


        class MultiHeadAttention(nn.Module):
            def __init__(self, embedding_dim, head_num):
                super().__init__()
                self.head_num = head_num
                self.dk = (embedding_dim // head_num) ** (1 / 2)
                self.qkv_layer = nn.Linear(embedding_dim, embedding_dim * 3, bias=False)

            def forward(self, x):
                qkv = self.qkv_layer(x)
                query, key, value = tuple(rearrange(qkv, "b t (d k h) -> k b h t d", k=3, h=self.head_num))
                energy = torch.einsum("... i d , ... j d -> ... i j", query, key) * query.shape[-1] ** -0.5
                attention = torch.softmax(energy, dim=-1)
                return torch.einsum("... i j , ... j d -> ... i d", attention, value)
        """,
    ),
]
