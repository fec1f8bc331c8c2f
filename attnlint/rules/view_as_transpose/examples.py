"""ATN106's examples: run as tests (tests/test_rule_examples.py); the flagged one is its page's."""

from attnlint.rules.base import Invalid, Valid

VALID = [
    # The Annotated Transformer as written: heads moved back next to d_k before the merge.
    Valid(
        """
        import math
        import torch
        import torch.nn as nn


        def attention(query, key, value, mask=None):
            scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(query.size(-1))
            if mask is not None:
                scores = scores.masked_fill(mask == 0, -1e9)
            p_attn = scores.softmax(dim=-1)
            return torch.matmul(p_attn, value), p_attn


        class MultiHeadedAttention(nn.Module):
            def __init__(self, h, d_model):
                super().__init__()
                self.d_k, self.h = d_model // h, h
                self.linears = nn.ModuleList([nn.Linear(d_model, d_model) for _ in range(4)])

            def forward(self, query, key, value, mask=None):
                nbatches = query.size(0)
                query, key, value = [
                    lin(x).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)
                    for lin, x in zip(self.linears, (query, key, value))
                ]
                x, self.attn = attention(query, key, value, mask=mask)
                x = x.transpose(1, 2).contiguous().view(nbatches, -1, self.h * self.d_k)
                return self.linears[-1](x)
        """
    ),
    # Head split then transpose (nanoGPT).
    Valid(
        """
        def forward(self, x):
            B, T, C = x.size()
            q = self.q(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            return q
        """
    ),
    # Merge heads after a transpose.
    Valid(
        """
        def merge(y):
            B, nh, T, hs = y.shape
            return y.transpose(1, 2).contiguous().view(B, T, nh * hs)
        """
    ),
    # Flatten pixels, then transpose.
    Valid(
        """
        def tokens(x):
            B, C, H, W = x.shape
            return x.view(B, C, H * W).transpose(1, 2)
        """
    ),
    # flatten(2).transpose(1, 2) (timm patch embedding).
    Valid(
        """
        def tokens(self, x):
            B, C, H, W = x.shape
            return x.flatten(2).transpose(1, 2)
        """
    ),
    # Merging adjacent axes in memory order.
    Valid(
        """
        def flat(x):
            T, h, d = x.shape
            return x.reshape(T * h, d)
        """
    ),
    # Splitting the last axis in memory order.
    Valid(
        """
        def split(x, heads):
            b, n, dim = x.shape
            return x.view(b, n, heads, dim // heads)
        """
    ),
    # Sizes we cannot evaluate.
    Valid(
        """
        def reshape(x, shape):
            return x.view(*shape)
        """
    ),
    # Permute then reshape to tokens.
    Valid(
        """
        def tokens(x):
            B, C, H, W = x.shape
            return x.permute(0, 2, 3, 1).reshape(B, H * W, C)
        """
    ),
    # A square matrix viewed as its own shape.
    Valid(
        """
        def same(x):
            n, m = x.shape
            return x.view(n, m)
        """
    ),
    # Batch and heads merged for bmm.
    Valid(
        """
        def for_bmm(q):
            b, h, n, d = q.shape
            return q.reshape(b * h, n, d)
        """
    ),
    # The qkv split of timm (3 leading after a reshape, then permute).
    Valid(
        """
        def qkv_split(self, x):
            B, N, C = x.shape
            qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
            return qkv.unbind(0)
        """
    ),
    # -1 inferred in a split.
    Valid(
        """
        def split(x, heads):
            b, n, dim = x.shape
            return x.view(b, n, heads, -1).transpose(1, 2)
        """
    ),
    # unflatten is a split in memory order.
    Valid(
        """
        def split(x, heads):
            b, n, dim = x.shape
            return x.unflatten(-1, (heads, dim // heads)).transpose(1, 2)
        """
    ),
    # Time-major to batch-major done right.
    Valid(
        """
        def batch_first(x):
            T, B, D = x.shape
            return x.transpose(0, 1).reshape(B, T, D)
        """
    ),
    # Flattening everything but the batch.
    Valid(
        """
        def flat(x):
            B, C, H, W = x.shape
            return x.reshape(B, -1)
        """
    ),
    # Channels split into groups in memory order (group norm, selective kernels).
    Valid(
        """
        def group_stats(x, groups):
            B, C, H, W = x.shape
            return x.reshape(B, groups, C // groups, H, W).var(dim=(2, 3, 4))
        """
    ),
    # A learned bias stored (head_dim, heads) and read as (heads, head_dim): its layout is learned.
    Valid(
        """
        import torch
        import torch.nn as nn
        class RelPosAttention(nn.Module):
            def __init__(self, embed_dim, num_heads):
                super().__init__()
                self.num_heads = num_heads
                self.head_dim = embed_dim // num_heads
                self.pos_bias_u = nn.Parameter(torch.empty(self.head_dim, self.num_heads))
            def forward(self, query):
                return query + self.pos_bias_u.view(1, 1, self.num_heads, self.head_dim)
        """
    ),
    # A token axis split into windows in place (Hiera's query pooling).
    Valid(
        """
        def pool(q, stride):
            B, heads, N, d = q.shape
            return q.view(B, heads, stride, N // stride, d).max(dim=2).values
        """
    ),
    # Transformer-XL's relative shift: memory reread on purpose, then read back.
    Valid(
        """
        import torch
        def relative_shift(positional_attn, shift):
            batch_size, n_head, seq_len, max_rel_len = positional_attn.shape
            positional_attn = torch.reshape(positional_attn, [batch_size, n_head, max_rel_len, seq_len])
            positional_attn = positional_attn[:, :, shift:, :]
            return torch.reshape(positional_attn, [batch_size, n_head, seq_len, max_rel_len - shift])
        """
    ),
    # numpy's full-permutation transpose between two reshapes (image tiling).
    Valid(
        """
        import numpy as np
        def split_to_tiles(image: np.ndarray, rows: int, cols: int) -> np.ndarray:
            num_channels, height, width = image.shape
            image = image.reshape(num_channels, rows, height // rows, cols, width // cols)
            image = image.transpose(1, 3, 0, 2, 4)
            return image.reshape(rows * cols, num_channels, height // rows, width // cols)
        """
    ),
    # Music Transformer's skew: pad one column, reread (rows, cols + 1) as (cols + 1, rows), drop
    # the first row. The reshape reinterprets memory on purpose.
    Valid(
        """
        import torch.nn.functional as F
        def skew(rel_logits):
            padded = F.pad(rel_logits, (1, 0))
            b, h, rows, cols = padded.shape
            shifted = padded.reshape(b, h, cols, rows)
            return shifted[:, :, 1:, :]
        """
    ),
    # Transformer-XL's shift with a concatenated zero column, sizes read from the padded tensor.
    Valid(
        """
        import torch
        def rel_shift(score):
            zeros = score.new_zeros(score.size(0), score.size(1), score.size(2), 1)
            padded = torch.cat([zeros, score], dim=-1)
            b, h, q, k1 = padded.shape
            padded = padded.view(b, h, k1, q).contiguous()
            return padded[:, :, 1:]
        """
    ),
    # Heads folded into the batch after the transpose, and back, with the sizes of a smoke test.
    Valid(
        """
        import torch
        import torch.nn as nn
        class FoldedHeads(nn.Module):
            def __init__(self, width, n_heads):
                super().__init__()
                self.n_heads = n_heads
                self.d_head = width // n_heads
                self.to_q = nn.Linear(width, width)
            def forward(self, x):
                bsz = x.size(0)
                q = self.to_q(x).view(bsz, -1, self.n_heads, self.d_head).transpose(1, 2)
                q = q.reshape(bsz * self.n_heads, -1, self.d_head)
                w = torch.bmm(q, q.transpose(1, 2)).softmax(-1)
                out = torch.bmm(w, q).view(bsz, self.n_heads, -1, self.d_head)
                return out.transpose(1, 2).contiguous().view(bsz, -1, self.n_heads * self.d_head)
        if __name__ == "__main__":
            FoldedHeads(96, 3)(torch.randn(2, 9, 96))
        """
    ),
    # A sequence cut into windows folded into the batch: the split is written (`n // 4`).
    Valid(
        """
        def windows(x):
            b, n, d = x.shape
            return x.view(b * 4, n // 4, d)
        """
    ),
    # A per-head bmm result unfolded from the batch in order, then merged after the transpose.
    Valid(
        """
        def unfold(out, b, h):
            bh, n, d = out.shape
            return out.view(b, h, n, d).transpose(1, 2).reshape(b, n, h * d)
        """
    ),
    # A random tensor in a demo: its axes mean nothing yet.
    Valid(
        """
        import torch
        x = torch.randn(2, 3, 4)
        print(x.view(2, 4, 3).shape)
        """
    ),
    # The head width defaults from the model width when not given (`if ... is None`).
    Valid(
        """
        import torch.nn as nn
        class Heads(nn.Module):
            def __init__(self, dim, heads=4, head_dim=None):
                super().__init__()
                if head_dim is None:
                    head_dim = dim // heads
                self.heads, self.head_dim = heads, head_dim
                self.proj = nn.Linear(dim, heads * head_dim)
            def forward(self, x):
                b, n, _ = x.shape
                return self.proj(x).view(b, n, self.heads, self.head_dim).transpose(1, 2)
        """
    ),
    # Tokens back to an image after the transpose (the token count is learned as H * W).
    Valid(
        """
        def to_image(x, H, W):
            B, N, C = x.shape
            return x.transpose(1, 2).reshape(B, C, H, W)
        """
    ),
    # Literal sizes that occur twice: which axis is which cannot be told.
    Valid(
        """
        import torch
        scores = torch.randn(2, 4, 4).softmax(-1)
        pairs = scores.mul(2).view(2, 4, 4)
        """
    ),
    # Batch-first pooled tokens handed to a batch-first attention: no reordering needed, and the
    # name bound again later holds another tensor.
    Valid(
        """
        import torch
        import torch.nn as nn
        pool = nn.Conv1d(3, 8, 1)
        attn = nn.MultiheadAttention(16, 2, batch_first=True)
        x = torch.rand(4, 3, 16)
        y = pool(x).flatten(2)
        y = y.view(4, 8, 16)
        y, _ = attn(y, y, y)
        y = y.reshape(4, 8 * 16)
        """
    ),
    # An unnamed width (`_`) split by `-1` in memory order.
    Valid(
        """
        def split(x, heads):
            b, n, _ = x.size()
            return x.view(b, n, heads, -1).transpose(1, 2)
        """
    ),
    # A (batch * heads) axis unfolded in order.
    Valid(
        """
        def unfold(x, heads):
            bh, seq, dim = x.shape
            return x.reshape(bh // heads, heads, seq, dim)
        """
    ),
    # The skew in a helper whose caller pads: the reread is cut down at once (a row dropped).
    Valid(
        """
        import torch.nn.functional as F
        class RelativeScores:
            def _skew(self, padded):
                b, h, rows, cols = padded.shape
                return padded.reshape(b, h, cols, rows)[:, :, 1:]
            def scores(self, q_rel):
                return self._skew(F.pad(q_rel, (1, 0)))
        """
    ),
    # An axis unpacked as `_` is often a broadcast axis of 1, which a view may move freely.
    Valid(
        """
        import torch.nn as nn

        class LatentKV(nn.Module):
            def __init__(self, rank, heads, d):
                super().__init__()
                self.up = nn.Linear(rank, heads * 2 * d)
                self.d = d

            def forward(self, latent):
                # latent: (batch, 1, seq, rank)
                batch, _, seq, _ = latent.shape
                return self.up(latent).view(batch, seq, -1, 2 * self.d).transpose(1, 2)
        """
    ),
    # A leading -1 takes what the other sizes leave, and that rests on sizes the code never
    # related (`channels` is the latents' 64 here): not shown.
    Valid(
        """
        import torch

        def tile_latents(latents, hidden):
            # latents: (256, 64); hidden: (batch, channels, h, w)
            batch, channels, height, width = hidden.shape
            return latents.unsqueeze(0).expand(batch, 256, 64).view(-1, 1, channels)
        """
    ),
    # The batch axis re-derived with -1 on one branch is still the batch (the view's element
    # count says so); merged back after a transpose.
    Valid(
        """
        import torch.nn as nn


        class WindowAttention(nn.Module):
            def __init__(self, dim, heads):
                super().__init__()
                self.heads = heads
                self.qkv = nn.Linear(dim, 3 * dim)

            def forward(self, x, window_mask=None):
                B, N, C = x.shape
                q, k, v = self.qkv(x).reshape(B, N, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
                attn = (q @ k.transpose(-2, -1)) * (C // self.heads) ** -0.5
                if window_mask is not None:
                    w = window_mask.shape[0]
                    attn = attn.view(B // w, w, self.heads, N, N) + window_mask[None, :, None]
                    attn = attn.view(-1, self.heads, N, N)
                out = attn.softmax(-1) @ v
                return out.transpose(1, 2).reshape(B, N, C)
        """
    ),
    # Heads written one by one into a new (heads, batch, n, d) tensor, permuted before merging.
    Valid(
        """
        import torch
        import torch.nn as nn


        class PerHeadAttention(nn.Module):
            def __init__(self, dim, n_heads):
                super().__init__()
                self.n_heads = n_heads
                self.d = dim // n_heads
                self.q = nn.ModuleList([nn.Linear(dim, self.d) for _ in range(n_heads)])
                self.k = nn.ModuleList([nn.Linear(dim, self.d) for _ in range(n_heads)])

            def forward(self, x):
                b, n, _ = x.shape
                outs = torch.zeros(self.n_heads, b, n, self.d)
                for i in range(self.n_heads):
                    q, k = self.q[i](x), self.k[i](x)
                    w = torch.softmax(q @ k.transpose(1, 2) / self.d ** 0.5, dim=-1)
                    outs[i] = w @ k
                return outs.permute(1, 2, 0, 3).reshape(b, n, -1)
        """
    ),
    # The relative-position skew in two views with a slice between them: index arithmetic on
    # padded memory at every step.
    Valid(
        """
        import torch.nn.functional as F


        def relative_shift(scores):
            batch, heads, n_q, n_rel = scores.size()
            shifted = F.pad(scores, (1, 0)).view(batch, heads, -1, n_q)
            return shifted[:, :, 1:].view(batch, heads, n_q, n_rel)
        """
    ),
    # Frames folded into the batch and unfolded after a pooling: `b_it` is `b * t`, unshown.
    Valid(
        """
        import torch
        import torch.nn as nn


        class PixelUnshuffleDown(nn.Module):
            def __init__(self, factor=2):
                super().__init__()
                self.factor = factor
                self.unshuffle = nn.PixelUnshuffle(factor)

            def forward(self, input):
                b, c, t, h, w = input.shape
                frames = input.permute(0, 2, 1, 3, 4).reshape(b * t, c, h, w)
                shuffled = self.unshuffle(frames)
                b_it, c_it, h_it, w_it = shuffled.shape
                grouped = shuffled.view(b_it, c_it // self.factor**2, self.factor**2, h_it, w_it)
                pooled = torch.mean(grouped, dim=2)
                return pooled.view(b, t, -1, h_it, w_it).permute(0, 2, 1, 3, 4)
        """
    ),
    # The same helper, heads moved back before they are merged.
    Valid(
        """
        import math
        import torch
        from torch import nn
        class MultiHeadAttention(nn.Module):
            def __init__(self, hidden_dim, num_heads):
                super().__init__()
                self.num_heads = num_heads
                self.qkv_dim = hidden_dim // num_heads
                self.qkv_proj = nn.Linear(hidden_dim, 3 * hidden_dim)
            def forward(self, x, pad_mask=None):
                batch_size, seq_len, hidden_dim = x.size()
                qkv = self.qkv_proj(x).reshape(batch_size, seq_len, self.num_heads, 3 * self.qkv_dim)
                q, k, v = qkv.permute(0, 2, 1, 3).chunk(3, dim=-1)
                values = self.attend(q, k, v, pad_mask)
                values = values.transpose(1, 2).reshape(batch_size, seq_len, hidden_dim)
                return values
            def attend(self, q, k, v, pad_mask):
                logits = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size(-1))
                if pad_mask is not None:
                    masked = logits.masked_fill(pad_mask[:, None, None, :] == 0, -1e9)
                else:
                    pass
                return torch.matmul(masked.softmax(dim=-1), v)
        """
    ),
]

INVALID = [
    # The Annotated Transformer's head merge without `transpose(1, 2)`: the tokens' number is
    # known nowhere, but the `-1` takes it, so (b, h, n, d_k) is read as (b, n, h * d_k).
    Invalid(
        """
        import math
        import torch
        import torch.nn as nn


        def attention(query, key, value, mask=None):
            scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(query.size(-1))
            if mask is not None:
                scores = scores.masked_fill(mask == 0, -1e9)
            p_attn = scores.softmax(dim=-1)
            return torch.matmul(p_attn, value), p_attn


        class MultiHeadedAttention(nn.Module):
            def __init__(self, h, d_model):
                super().__init__()
                self.d_k, self.h = d_model // h, h
                self.linears = nn.ModuleList([nn.Linear(d_model, d_model) for _ in range(4)])

            def forward(self, query, key, value, mask=None):
                nbatches = query.size(0)
                query, key, value = [
                    lin(x).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)
                    for lin, x in zip(self.linears, (query, key, value))
                ]
                x, self.attn = attention(query, key, value, mask=mask)
                x = x.contiguous().view(nbatches, -1, self.h * self.d_k)
                return self.linears[-1](x)
        """,
        line=27,
    ),
    # Heads merged back with a reshape and no transpose; the layer's callers in the model pass
    # tensors of unknown rank, but the notebook's smoke test calls it on (2, 7, 128): there, at
    # least, positions and heads are mixed.
    Invalid(
        """
        import math
        import torch
        import torch.nn as nn


        class MultiHeadAttention(nn.Module):
            def __init__(self, h, d_model):
                super().__init__()
                self.d_k = d_model // h
                self.h = h
                self.w_q = nn.Linear(d_model, d_model)
                self.w_k = nn.Linear(d_model, d_model)
                self.w_v = nn.Linear(d_model, d_model)

            def forward(self, query, key, value):
                b = query.size(0)
                q = self.w_q(query).view(b, -1, self.h, self.d_k).transpose(1, 2)
                k = self.w_k(key).view(b, -1, self.h, self.d_k).transpose(1, 2)
                v = self.w_v(value).view(b, -1, self.h, self.d_k).transpose(1, 2)
                p_attn = (q @ k.transpose(-2, -1) / math.sqrt(self.d_k)).softmax(dim=-1)
                x = p_attn @ v
                return x.reshape(b, -1, self.h * self.d_k)


        class EncoderLayer(nn.Module):
            def __init__(self, h, d_model):
                super().__init__()
                self.self_attn = MultiHeadAttention(h, d_model)
                self.norm = nn.LayerNorm(d_model)

            def forward(self, x):
                y = self.norm(x)
                return x + self.self_attn(y, y, y)


        mha = MultiHeadAttention(4, 128)
        x = torch.randn(2, 7, 128)
        print(mha(x, x, x).shape)
        """,
        fixed=None,
        line=22,
    ),
    # Heads by view: (B, T, C) memory reread as (B, nh, T, hs).
    Invalid(
        """
        def split_heads(x, n_head):
            B, T, C = x.shape
            return x.view(B, n_head, T, C // n_head)
        """,
        fixed="""
        def split_heads(x, n_head):
            B, T, C = x.shape
            return x.view(B, T, n_head, C // n_head).transpose(1, 2).contiguous()
        """,
        line=3,
        page=True,
    ),
    # Channels-first image tokens by view.
    Invalid(
        """
        def tokens(x):
            B, C, H, W = x.shape
            return x.view(B, H * W, C)
        """,
        fixed="""
        def tokens(x):
            B, C, H, W = x.shape
            return x.permute(0, 2, 3, 1).reshape(B, H * W, C)
        """,
    ),
    # torch.reshape's function form: reported, no fix.
    Invalid(
        """
        import torch
        def channels_last(x):
            B, C, L = x.shape
            return torch.reshape(x, (B, L, C))
        """,
        fixed=None,
    ),
    # A transpose by reshape.
    Invalid(
        """
        def time_major(x):
            B, T, D = x.shape
            return x.reshape(T, B, D)
        """,
        fixed="""
        def time_major(x):
            B, T, D = x.shape
            return x.transpose(0, 1).contiguous()
        """,
    ),
    # The last two axes swapped by view.
    Invalid(
        """
        import torch
        def scores(q, k):
            b, n, d = k.shape
            kt = k.view(b, d, n)
            return torch.bmm(q, kt)
        """,
        fixed="""
        import torch
        def scores(q, k):
            b, n, d = k.shape
            kt = k.transpose(1, 2).contiguous()
            return torch.bmm(q, kt)
        """,
    ),
    # In a module, with the sizes from the constructor.
    Invalid(
        """
        import torch.nn as nn
        class Attention(nn.Module):
            def __init__(self, dim, heads):
                super().__init__()
                self.heads = heads
                self.head_dim = dim // heads
                self.to_q = nn.Linear(dim, dim)
            def forward(self, x):
                b, n, _ = x.shape
                q = self.to_q(x).view(b, self.heads, n, self.head_dim)
                return q
        """,
        fixed="""
        import torch.nn as nn
        class Attention(nn.Module):
            def __init__(self, dim, heads):
                super().__init__()
                self.heads = heads
                self.head_dim = dim // heads
                self.to_q = nn.Linear(dim, dim)
            def forward(self, x):
                b, n, _ = x.shape
                q = self.to_q(x).view(b, n, self.heads, self.head_dim).transpose(1, 2).contiguous()
                return q
        """,
    ),
    # Merging heads by reshape without the transpose back.
    Invalid(
        """
        def merge(y):
            B, nh, T, hs = y.shape
            return y.reshape(B, T, nh * hs)
        """,
        fixed="""
        def merge(y):
            B, nh, T, hs = y.shape
            return y.transpose(1, 2).reshape(B, T, nh * hs)
        """,
    ),
    # Channels-last by view (conv features to a sequence).
    Invalid(
        """
        def channels_last(x):
            B, C, L = x.shape
            return x.view(B, L, C)
        """,
        fixed="""
        def channels_last(x):
            B, C, L = x.shape
            return x.transpose(1, 2).contiguous()
        """,
    ),
    # A helper with a tuple shape.
    Invalid(
        """
        def heads(t, h):
            b, n, hd = t.shape
            return t.reshape((b, h, n, hd // h))
        """,
        fixed="""
        def heads(t, h):
            b, n, hd = t.shape
            return t.reshape(b, n, h, hd // h).transpose(1, 2).contiguous()
        """,
    ),
    # Self-attention values by view (the keys and queries right).
    Invalid(
        """
        import torch
        def attention(x, heads, wq, wk, wv):
            B, T, C = x.shape
            q = wq(x).view(B, T, heads, C // heads).transpose(1, 2)
            k = wk(x).view(B, T, heads, C // heads).transpose(1, 2)
            v = x.view(B, heads, T, C // heads)
            w = (q @ k.transpose(-2, -1) * (C // heads) ** -0.5).softmax(-1)
            return w @ v
        """,
        fixed="""
        import torch
        def attention(x, heads, wq, wk, wv):
            B, T, C = x.shape
            q = wq(x).view(B, T, heads, C // heads).transpose(1, 2)
            k = wk(x).view(B, T, heads, C // heads).transpose(1, 2)
            v = x.view(B, T, heads, C // heads).transpose(1, 2).contiguous()
            w = (q @ k.transpose(-2, -1) * (C // heads) ** -0.5).softmax(-1)
            return w @ v
        """,
    ),
    # Video frames: (B, C, T, H, W) read as (B, T, C, H, W).
    Invalid(
        """
        def frames(x):
            B, C, T, H, W = x.shape
            return x.view(B, T, C, H, W)
        """,
        fixed="""
        def frames(x):
            B, C, T, H, W = x.shape
            return x.transpose(1, 2).contiguous()
        """,
    ),
    # The queries in a config-driven module.
    Invalid(
        """
        from dataclasses import dataclass
        import torch.nn as nn
        @dataclass
        class Config:
            d_model: int = 64
            n_heads: int = 4
        class Attention(nn.Module):
            def __init__(self, cfg: Config):
                super().__init__()
                self.n_heads = cfg.n_heads
                self.d_head = cfg.d_model // cfg.n_heads
                self.to_q = nn.Linear(cfg.d_model, cfg.d_model)
            def forward(self, x):
                B, T, _ = x.shape
                return self.to_q(x).view(B, self.n_heads, T, self.d_head)
        """,
        fixed="""
        from dataclasses import dataclass
        import torch.nn as nn
        @dataclass
        class Config:
            d_model: int = 64
            n_heads: int = 4
        class Attention(nn.Module):
            def __init__(self, cfg: Config):
                super().__init__()
                self.n_heads = cfg.n_heads
                self.d_head = cfg.d_model // cfg.n_heads
                self.to_q = nn.Linear(cfg.d_model, cfg.d_model)
            def forward(self, x):
                B, T, _ = x.shape
                return self.to_q(x).view(B, T, self.n_heads, self.d_head).transpose(1, 2).contiguous()
        """,
    ),
    # Pixels into tokens with the batch elsewhere.
    Invalid(
        """
        def to_tokens(x):
            B, C, H, W = x.shape
            return x.reshape(B, H, W, C)
        """,
        fixed="""
        def to_tokens(x):
            B, C, H, W = x.shape
            return x.permute(0, 2, 3, 1).contiguous()
        """,
    ),
    # A patch grid read as (B, num_patches, C) by view after a conv.
    Invalid(
        """
        import torch.nn as nn
        class PatchEmbed(nn.Module):
            def __init__(self, dim, patch):
                super().__init__()
                self.proj = nn.Conv2d(3, dim, patch, stride=patch)
            def forward(self, x):
                x = self.proj(x)
                B, C, H, W = x.shape
                return x.view(B, H * W, C)
        """,
        fixed="""
        import torch.nn as nn
        class PatchEmbed(nn.Module):
            def __init__(self, dim, patch):
                super().__init__()
                self.proj = nn.Conv2d(3, dim, patch, stride=patch)
            def forward(self, x):
                x = self.proj(x)
                B, C, H, W = x.shape
                return x.permute(0, 2, 3, 1).reshape(B, H * W, C)
        """,
    ),
    # Keys for a time-major RNN decoder read by view.
    Invalid(
        """
        import torch
        def attend(query, encoder_outputs):
            T, B, H = encoder_outputs.shape
            keys = encoder_outputs.view(B, T, H)
            return torch.bmm(keys, query.unsqueeze(2))
        """,
        fixed="""
        import torch
        def attend(query, encoder_outputs):
            T, B, H = encoder_outputs.shape
            keys = encoder_outputs.transpose(0, 1).contiguous()
            return torch.bmm(keys, query.unsqueeze(2))
        """,
    ),
    # Head split by reshape of the fused projection.
    Invalid(
        """
        def split(qkv, heads):
            b, n, three_d = qkv.shape
            return qkv.reshape(b, 3, heads, n, three_d // (3 * heads))
        """,
        fixed="""
        def split(qkv, heads):
            b, n, three_d = qkv.shape
            return qkv.reshape(b, n, 3, heads, three_d // (3 * heads)).permute(0, 2, 3, 1, 4).contiguous()
        """,
    ),
    # Heads folded into the batch by view (no transpose): the smoke test's sizes show it.
    Invalid(
        """
        import torch
        import torch.nn as nn
        class HeadsIntoBatch(nn.Module):
            def __init__(self, width, n_heads):
                super().__init__()
                self.n_heads = n_heads
                self.d_head = width // n_heads
                self.proj = nn.Linear(width, width)
            def forward(self, tokens):
                n_batch = tokens.size(0)
                q = self.proj(tokens)
                return q.view(n_batch * self.n_heads, -1, self.d_head)
        if __name__ == "__main__":
            HeadsIntoBatch(96, 3)(torch.randn(2, 9, 96))
        """,
        fixed=None,
        line=12,
    ),
    # bmm's per-head output merged back without moving the heads behind the tokens.
    Invalid(
        """
        import torch
        def heads_attention(x, heads):
            b, n, c = x.shape
            q = x.reshape(b, n, heads, c // heads).permute(0, 2, 1, 3).reshape(b * heads, n, c // heads)
            w = torch.softmax(torch.bmm(q, q.transpose(1, 2)) * (c // heads) ** -0.5, dim=-1)
            return torch.bmm(w, q).reshape(b, n, c)
        """,
        fixed=None,
    ),
    # A helper's (b, h, t, d) result reshaped to (b, t, h * d) without the transpose back.
    Invalid(
        """
        import torch
        import torch.nn as nn
        def attend(q, k, v):
            w = torch.softmax(q @ k.transpose(-2, -1) / q.size(-1) ** 0.5, dim=-1)
            return w @ v
        class Block(nn.Module):
            def __init__(self, d, h):
                super().__init__()
                self.h = h
                self.qkv = nn.Linear(d, 3 * d)
            def forward(self, x):
                b, t, d = x.size()
                q, k, v = self.qkv(x).split(d, dim=-1)
                q, k, v = [y.view(b, t, self.h, d // self.h).transpose(1, 2) for y in (q, k, v)]
                return attend(q, k, v).reshape(b, t, d)
        if __name__ == "__main__":
            Block(32, 4)(torch.randn(2, 6, 32))
        """,
        fixed="""
        import torch
        import torch.nn as nn
        def attend(q, k, v):
            w = torch.softmax(q @ k.transpose(-2, -1) / q.size(-1) ** 0.5, dim=-1)
            return w @ v
        class Block(nn.Module):
            def __init__(self, d, h):
                super().__init__()
                self.h = h
                self.qkv = nn.Linear(d, 3 * d)
            def forward(self, x):
                b, t, d = x.size()
                q, k, v = self.qkv(x).split(d, dim=-1)
                q, k, v = [y.view(b, t, self.h, d // self.h).transpose(1, 2) for y in (q, k, v)]
                return attend(q, k, v).transpose(1, 2).reshape(b, t, d)
        if __name__ == "__main__":
            Block(32, 4)(torch.randn(2, 6, 32))
        """,
    ),
    # A subclass calling its base's forward; the head width defaulted with `if ... is None`.
    Invalid(
        """
        import torch
        import torch.nn as nn
        class FieldAttention(nn.Module):
            def __init__(self, dim, heads=2, head_dim=None):
                super().__init__()
                if head_dim is None:
                    head_dim = dim // heads
                self.heads = heads
                self.head_dim = head_dim
                self.key = nn.Linear(dim, heads * head_dim)
            def forward(self, fields, other):
                bsz = fields.size(0)
                return self.key(other).view(bsz * self.heads, -1, self.head_dim)
        class SelfFieldAttention(FieldAttention):
            def forward(self, fields):
                return super().forward(fields, fields)
        if __name__ == "__main__":
            SelfFieldAttention(12, heads=3)(torch.randn(4, 5, 12))
        """,
        fixed=None,
        line=13,
    ),
    # Batch-first pooled tokens viewed as time-major for nn.MultiheadAttention, and back.
    Invalid(
        """
        import torch
        import torch.nn as nn
        class Pool(nn.Module):
            def __init__(self, slots, channels):
                super().__init__()
                self.score = nn.Conv2d(channels, slots, 1)
            def forward(self, img):
                w = self.score(img).flatten(2).softmax(-1)
                return torch.einsum("bsn,bcn->bsc", w, img.flatten(2))
        if __name__ == "__main__":
            attn = nn.MultiheadAttention(6, 2)
            pooled = Pool(4, 6)(torch.rand(16, 6, 8, 8))
            seq = pooled.view(4, 16, 6)
            out, _ = attn(seq, seq, seq)
        """,
        fixed="""
        import torch
        import torch.nn as nn
        class Pool(nn.Module):
            def __init__(self, slots, channels):
                super().__init__()
                self.score = nn.Conv2d(channels, slots, 1)
            def forward(self, img):
                w = self.score(img).flatten(2).softmax(-1)
                return torch.einsum("bsn,bcn->bsc", w, img.flatten(2))
        if __name__ == "__main__":
            attn = nn.MultiheadAttention(6, 2)
            pooled = Pool(4, 6)(torch.rand(16, 6, 8, 8))
            seq = pooled.transpose(0, 1).contiguous()
            out, _ = attn(seq, seq, seq)
        """,
        line=13,
    ),
    # Tokens read as a channels-first image by view (the token count is learned as H * W).
    Invalid(
        """
        def to_image(x, H, W):
            B, N, C = x.shape
            return x.view(B, C, H, W)
        """,
        fixed="""
        def to_image(x, H, W):
            B, N, C = x.shape
            return x.view(B, H, W, C).permute(0, 3, 1, 2).contiguous()
        """,
    ),
    # An unnamed width (`_`) split by `-1` into heads in front of the tokens.
    Invalid(
        """
        def split(x, heads):
            b, n, _ = x.size()
            return x.view(b, heads, n, -1)
        """,
        fixed=None,
    ),
    # A (batch * heads) axis folded back into the features without the transpose.
    Invalid(
        """
        def fold(x, heads):
            bh, seq, dim = x.shape
            return x.reshape(bh // heads, seq, heads * dim)
        """,
        fixed=None,
    ),
    # The same merged without the transpose: the -1 on one branch does not hide the swap.
    Invalid(
        """
        import torch.nn as nn


        class WindowAttention(nn.Module):
            def __init__(self, dim, heads):
                super().__init__()
                self.heads = heads
                self.qkv = nn.Linear(dim, 3 * dim)

            def forward(self, x, window_mask=None):
                B, N, C = x.shape
                q, k, v = self.qkv(x).reshape(B, N, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
                attn = (q @ k.transpose(-2, -1)) * (C // self.heads) ** -0.5
                if window_mask is not None:
                    w = window_mask.shape[0]
                    attn = attn.view(B // w, w, self.heads, N, N) + window_mask[None, :, None]
                    attn = attn.view(-1, self.heads, N, N)
                out = attn.softmax(-1) @ v
                return out.reshape(B, N, C)
        """,
        fixed="""
        import torch.nn as nn


        class WindowAttention(nn.Module):
            def __init__(self, dim, heads):
                super().__init__()
                self.heads = heads
                self.qkv = nn.Linear(dim, 3 * dim)

            def forward(self, x, window_mask=None):
                B, N, C = x.shape
                q, k, v = self.qkv(x).reshape(B, N, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
                attn = (q @ k.transpose(-2, -1)) * (C // self.heads) ** -0.5
                if window_mask is not None:
                    w = window_mask.shape[0]
                    attn = attn.view(B // w, w, self.heads, N, N) + window_mask[None, :, None]
                    attn = attn.view(-1, self.heads, N, N)
                out = attn.softmax(-1) @ v
                return out.transpose(1, 2).reshape(B, N, C)
        """,
    ),
    # The same merged by a view: the tensor made by torch.zeros holds the heads' results now.
    Invalid(
        """
        import torch
        import torch.nn as nn


        class PerHeadAttention(nn.Module):
            def __init__(self, dim, n_heads):
                super().__init__()
                self.n_heads = n_heads
                self.d = dim // n_heads
                self.q = nn.ModuleList([nn.Linear(dim, self.d) for _ in range(n_heads)])
                self.k = nn.ModuleList([nn.Linear(dim, self.d) for _ in range(n_heads)])

            def forward(self, x):
                b, n, _ = x.shape
                outs = torch.zeros(self.n_heads, b, n, self.d)
                for i in range(self.n_heads):
                    q, k = self.q[i](x), self.k[i](x)
                    w = torch.softmax(q @ k.transpose(1, 2) / self.d ** 0.5, dim=-1)
                    outs[i] = w @ k
                return outs.view(b, n, -1)
        """,
    ),
    # Heads merged by reshape after a helper that masks on one branch only (the masked scores
    # are what reaches the softmax: the other branch never returns).
    Invalid(
        """
        import math
        import torch
        from torch import nn
        class MultiHeadAttention(nn.Module):
            def __init__(self, hidden_dim, num_heads):
                super().__init__()
                self.num_heads = num_heads
                self.qkv_dim = hidden_dim // num_heads
                self.qkv_proj = nn.Linear(hidden_dim, 3 * hidden_dim)
            def forward(self, x, pad_mask=None):
                batch_size, seq_len, hidden_dim = x.size()
                qkv = self.qkv_proj(x).reshape(batch_size, seq_len, self.num_heads, 3 * self.qkv_dim)
                q, k, v = qkv.permute(0, 2, 1, 3).chunk(3, dim=-1)
                values = self.attend(q, k, v, pad_mask)
                values = values.reshape(batch_size, seq_len, hidden_dim)
                return values
            def attend(self, q, k, v, pad_mask):
                logits = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size(-1))
                if pad_mask is not None:
                    masked = logits.masked_fill(pad_mask[:, None, None, :] == 0, -1e9)
                else:
                    pass
                return torch.matmul(masked.softmax(dim=-1), v)
        """,
        fixed="""
        import math
        import torch
        from torch import nn
        class MultiHeadAttention(nn.Module):
            def __init__(self, hidden_dim, num_heads):
                super().__init__()
                self.num_heads = num_heads
                self.qkv_dim = hidden_dim // num_heads
                self.qkv_proj = nn.Linear(hidden_dim, 3 * hidden_dim)
            def forward(self, x, pad_mask=None):
                batch_size, seq_len, hidden_dim = x.size()
                qkv = self.qkv_proj(x).reshape(batch_size, seq_len, self.num_heads, 3 * self.qkv_dim)
                q, k, v = qkv.permute(0, 2, 1, 3).chunk(3, dim=-1)
                values = self.attend(q, k, v, pad_mask)
                values = values.transpose(1, 2).reshape(batch_size, seq_len, hidden_dim)
                return values
            def attend(self, q, k, v, pad_mask):
                logits = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size(-1))
                if pad_mask is not None:
                    masked = logits.masked_fill(pad_mask[:, None, None, :] == 0, -1e9)
                else:
                    pass
                return torch.matmul(masked.softmax(dim=-1), v)
        """,
        line=15,
    ),
    # A fused q/k/v projection viewed straight to (batch, heads, tokens, 3 * head): slicing the
    # features into q, k and v afterwards is no skew of the view's memory.
    Invalid(
        """
        from torch import nn
        class NeoXAttention(nn.Module):
            def __init__(self, hidden_size, num_heads):
                super().__init__()
                self.num_heads = num_heads
                self.head_size = hidden_size // num_heads
                self.query_key_value = nn.Linear(hidden_size, 3 * hidden_size)
            def split(self, hidden_states):
                bsz, seq_len, _ = hidden_states.shape
                qkv = self.query_key_value(hidden_states)
                qkv = qkv.view(bsz, self.num_heads, seq_len, 3 * self.head_size)
                query = qkv[..., : self.head_size]
                key = qkv[..., self.head_size : 2 * self.head_size]
                value = qkv[..., 2 * self.head_size :]
                return query, key, value
        """,
        fixed="""
        from torch import nn
        class NeoXAttention(nn.Module):
            def __init__(self, hidden_size, num_heads):
                super().__init__()
                self.num_heads = num_heads
                self.head_size = hidden_size // num_heads
                self.query_key_value = nn.Linear(hidden_size, 3 * hidden_size)
            def split(self, hidden_states):
                bsz, seq_len, _ = hidden_states.shape
                qkv = self.query_key_value(hidden_states)
                qkv = qkv.view(bsz, seq_len, self.num_heads, 3 * self.head_size).transpose(1, 2).contiguous()
                query = qkv[..., : self.head_size]
                key = qkv[..., self.head_size : 2 * self.head_size]
                value = qkv[..., 2 * self.head_size :]
                return query, key, value
        """,
        line=11,
    ),
    # timm's attention: q/k normalised by a layer built from the `norm_layer` default (or
    # Identity), then the heads merged by reshape with no transpose back.
    Invalid(
        """
        import torch.nn.functional as F
        from torch import nn
        class Attention(nn.Module):
            def __init__(self, dim, num_heads=8, qk_norm=False, norm_layer=nn.LayerNorm):
                super().__init__()
                self.num_heads = num_heads
                self.head_dim = dim // num_heads
                self.qkv = nn.Linear(dim, dim * 3)
                self.q_norm = norm_layer(self.head_dim) if qk_norm else nn.Identity()
                self.k_norm = norm_layer(self.head_dim) if qk_norm else nn.Identity()
            def forward(self, x):
                B, N, C = x.shape
                qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
                q, k, v = qkv.unbind(0)
                q, k = self.q_norm(q), self.k_norm(k)
                x = F.scaled_dot_product_attention(q, k, v)
                return x.reshape(B, N, C)
        """,
        fixed="""
        import torch.nn.functional as F
        from torch import nn
        class Attention(nn.Module):
            def __init__(self, dim, num_heads=8, qk_norm=False, norm_layer=nn.LayerNorm):
                super().__init__()
                self.num_heads = num_heads
                self.head_dim = dim // num_heads
                self.qkv = nn.Linear(dim, dim * 3)
                self.q_norm = norm_layer(self.head_dim) if qk_norm else nn.Identity()
                self.k_norm = norm_layer(self.head_dim) if qk_norm else nn.Identity()
            def forward(self, x):
                B, N, C = x.shape
                qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
                q, k, v = qkv.unbind(0)
                q, k = self.q_norm(q), self.k_norm(k)
                x = F.scaled_dot_product_attention(q, k, v)
                return x.transpose(1, 2).reshape(B, N, C)
        """,
        line=17,
    ),
    # FT-Transformer's head split, reshaped straight to (b, h, n, d) and then merged to
    # (b * h, n, d): the later reshape only merges adjacent axes, so it keeps the wrong order.
    Invalid(
        """
        from torch import nn
        class MultiheadAttention(nn.Module):
            def __init__(self, d_token, n_heads):
                super().__init__()
                self.n_heads = n_heads
                self.d_head = d_token // n_heads
                self.W_q = nn.Linear(d_token, d_token)
            def _split(self, x):
                b, n, _ = x.shape
                x = x.reshape(b, self.n_heads, n, self.d_head)
                return x.reshape(b * self.n_heads, n, self.d_head)
            def forward(self, x_q):
                return self._split(self.W_q(x_q))
        """,
        fixed="""
        from torch import nn
        class MultiheadAttention(nn.Module):
            def __init__(self, d_token, n_heads):
                super().__init__()
                self.n_heads = n_heads
                self.d_head = d_token // n_heads
                self.W_q = nn.Linear(d_token, d_token)
            def _split(self, x):
                b, n, _ = x.shape
                x = x.reshape(b, n, self.n_heads, self.d_head).transpose(1, 2).contiguous()
                return x.reshape(b * self.n_heads, n, self.d_head)
            def forward(self, x_q):
                return self._split(self.W_q(x_q))
        """,
        line=10,
    ),
]
