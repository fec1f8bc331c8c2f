"""ATN106's examples: run as tests (tests/test_rule_examples.py); the flagged one is its page's."""

from attnlint.rules.base import Invalid, Valid

VALID = [
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
]

INVALID = [
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
            return t.view(b, n, h, hd // h).transpose(1, 2).contiguous()
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
            return qkv.view(b, n, 3, heads, three_d // (3 * heads)).permute(0, 2, 3, 1, 4).contiguous()
        """,
    ),
]
