"""ATN209's examples: run as tests (tests/test_rule_examples.py); the flagged one is its page's."""

from attnlint.rules.base import Invalid, Valid

VALID = [
    # A shared attention function takes its rate from its callers, and the one caller (through
    # a local that may also hold another backend) passes 0 outside training.
    Valid(
        """
        import torch
        from torch import nn

        BACKENDS = {}


        def eager_attend(module, q, k, v, mask, scale, drop=0.0):
            w = torch.matmul(q, k.transpose(-1, -2)) * scale
            if mask is not None:
                w = w + mask
            w = torch.softmax(w, dim=-1)
            w = nn.functional.dropout(w, p=drop)
            return torch.matmul(w, v)


        class SelfAttention(nn.Module):
            def __init__(self, dim, heads, p):
                super().__init__()
                self.heads, self.p, self.scale = heads, p, (dim // heads) ** -0.5
                self.qkv = nn.Linear(dim, 3 * dim)
                self.backend = None

            def forward(self, x, mask=None):
                b, n, _ = x.shape
                q, k, v = self.qkv(x).view(b, n, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
                attend = eager_attend
                if self.backend is not None:
                    attend = BACKENDS[self.backend]
                out = attend(self, q, k, v, mask, self.scale, drop=self.p if self.training else 0.0)
                return out.transpose(1, 2).reshape(b, n, -1)
        """
    ),
    # The mode is passed.
    Valid(
        """
        import torch.nn as nn
        import torch.nn.functional as F
        class Attention(nn.Module):
            def forward(self, q, k, v):
                w = (q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5).softmax(dim=-1)
                w = F.dropout(w, p=0.1, training=self.training)
                return w @ v
        """
    ),
    # Positional training argument.
    Valid(
        """
        import torch.nn as nn
        import torch.nn.functional as F
        class Attention(nn.Module):
            def forward(self, q, k, v):
                w = (q @ k.transpose(-2, -1) / 8.0).softmax(dim=-1)
                return F.dropout(w, self.p, self.training) @ v
        """
    ),
    # An nn.Dropout module follows model.eval().
    Valid(
        """
        import torch
        import torch.nn as nn
        class Attention(nn.Module):
            def __init__(self, p):
                super().__init__()
                self.attn_drop = nn.Dropout(p)
            def forward(self, q, k, v):
                w = torch.softmax(q @ k.transpose(-2, -1) * self.scale, dim=-1)
                return self.attn_drop(w) @ v
        """
    ),
    # Hugging Face eager attention: the module's flag.
    Valid(
        """
        from torch import nn
        import torch
        def eager_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0):
            attn_weights = torch.matmul(query, key.transpose(2, 3)) * scaling
            attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
            attn_weights = nn.functional.dropout(attn_weights, p=dropout, training=module.training)
            return torch.matmul(attn_weights, value), attn_weights
        """
    ),
    # Only while training.
    Valid(
        """
        import torch.nn as nn
        import torch.nn.functional as F
        class Attention(nn.Module):
            def forward(self, q, k, v):
                w = (q @ k.transpose(-2, -1) * self.scale).softmax(-1)
                if self.training:
                    w = F.dropout(w, p=self.p)
                return w @ v
        """
    ),
    # The rate itself depends on the mode.
    Valid(
        """
        import torch.nn as nn
        import torch.nn.functional as F
        class Attention(nn.Module):
            def forward(self, q, k, v):
                p = self.p if self.training else 0.0
                w = F.dropout((q @ k.transpose(-2, -1) * self.scale).softmax(-1), p)
                return w @ v
        """
    ),
    # A plain function with no way to know the mode: nothing to pass.
    Valid(
        """
        import torch
        import torch.nn.functional as F
        def attention(q, k, v, p=0.1):
            w = torch.softmax(q @ k.transpose(-2, -1) / q.size(-1) ** 0.5, dim=-1)
            return F.dropout(w, p) @ v
        """
    ),
    # SDPA with the rate tied to the mode (nanoGPT).
    Valid(
        """
        import torch.nn as nn
        import torch.nn.functional as F
        class CausalSelfAttention(nn.Module):
            def forward(self, q, k, v):
                return F.scaled_dot_product_attention(
                    q, k, v, dropout_p=self.dropout if self.training else 0, is_causal=True
                )
        """
    ),
    # SDPA with the rate from a parameter: the caller decides (HF's sdpa_attention_forward).
    Valid(
        """
        import torch
        def sdpa_attention_forward(module, query, key, value, attention_mask, dropout=0.0, scaling=None):
            return torch.nn.functional.scaled_dot_product_attention(
                query, key, value, attn_mask=attention_mask, dropout_p=dropout, scale=scaling
            )
        """
    ),
    # Dropout of hidden states, not of attention weights: another rule's business.
    Valid(
        """
        import torch.nn as nn
        import torch.nn.functional as F
        class MLP(nn.Module):
            def forward(self, x):
                return F.dropout(self.fc(x), p=0.1)
        """
    ),
    # A literal zero rate drops nothing.
    Valid(
        """
        import torch.nn as nn
        import torch.nn.functional as F
        class Attention(nn.Module):
            def forward(self, q, k, v):
                w = (q @ k.transpose(-2, -1) * self.scale).softmax(-1)
                return F.dropout(w, p=0.0) @ v
        """
    ),
    # A training parameter passed on.
    Valid(
        """
        import jax
        import torch
        import torch.nn.functional as F
        def attend(q, k, v, rate, training):
            w = torch.softmax(torch.einsum("bhid,bhjd->bhij", q, k) * q.shape[-1] ** -0.5, dim=-1)
            w = F.dropout(w, rate, training=training)
            return torch.einsum("bhij,bhjd->bhid", w, v)
        """
    ),
    # A class that is not an nn.Module (no `self.training` to pass).
    Valid(
        """
        import torch
        import torch.nn.functional as F
        class AttentionMath:
            def __call__(self, q, k, v):
                w = torch.softmax(q @ k.transpose(-2, -1) * self.scale, dim=-1)
                return F.dropout(w, self.p) @ v
        """
    ),
    # torch.dropout takes the mode as a required argument.
    Valid(
        """
        import torch
        import torch.nn as nn
        class Attention(nn.Module):
            def forward(self, q, k, v):
                w = torch.softmax(q @ k.transpose(-2, -1) * self.scale, dim=-1)
                return torch.dropout(w, self.p, self.training) @ v
        """
    ),
    # SDPA without dropout.
    Valid(
        """
        import torch.nn as nn
        import torch.nn.functional as F
        class Attention(nn.Module):
            def forward(self, q, k, v, mask):
                return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=0.0)
        """
    ),
    # The mode decided by an if/else around the whole attention.
    Valid(
        """
        import torch.nn as nn
        import torch.nn.functional as F
        class Attention(nn.Module):
            def forward(self, q, k, v):
                if not self.training:
                    return F.scaled_dot_product_attention(q, k, v)
                return F.scaled_dot_product_attention(q, k, v, dropout_p=self.attn_dropout)
        """
    ),
    # SDPA kept in an attribute and called through it, its rate tied to the mode.
    Valid(
        """
        import torch.nn as nn
        import torch.nn.functional as F
        class Attention(nn.Module):
            def __init__(self, p):
                super().__init__()
                self.p = p
                self.kernel = F.scaled_dot_product_attention
            def forward(self, q, k, v):
                return self.kernel(q, k, v, dropout_p=self.p if self.training else 0.0)
        """
    ),
    # An attribute holding some other callable: not SDPA, whatever its keywords.
    Valid(
        """
        import torch.nn as nn
        import torch.nn.functional as F
        class Attention(nn.Module):
            def __init__(self, p, kernel):
                super().__init__()
                self.p = p
                self.kernel = kernel
            def forward(self, q, k, v):
                return self.kernel(q, k, v, dropout_p=self.p)
        """
    ),
    # A helper handing its rate to SDPA, given a rate that follows the mode.
    Valid(
        """
        import torch.nn as nn
        import torch.nn.functional as F
        def fused_attention(q, k, v, p):
            return F.scaled_dot_product_attention(q, k, v, dropout_p=p)
        class Block(nn.Module):
            def __init__(self, p):
                super().__init__()
                self.p = p
            def forward(self, q, k, v):
                return fused_attention(q, k, v, self.p if self.training else 0.0)
        """
    ),
    # The same helper called at inference with no dropout, and from code with no mode.
    Valid(
        """
        import torch.nn.functional as F
        def fused_attention(q, k, v, p):
            return F.scaled_dot_product_attention(q, k, v, dropout_p=p)
        def generate(q, k, v):
            return fused_attention(q, k, v, 0.0)
        def train_step(q, k, v, rate):
            return fused_attention(q, k, v, rate)
        """
    ),
    # A helper without the mode, called only while training.
    Valid(
        """
        import torch
        from torch import nn
        from torch.nn import functional as F


        def drop_weights(w, rate):
            return F.dropout(w, rate)


        class Attention(nn.Module):
            def __init__(self, rate=0.1):
                super().__init__()
                self.rate = rate

            def forward(self, q, k, v):
                probs = (q @ k.transpose(-1, -2) / q.size(-1) ** 0.5).softmax(dim=-1)
                if self.training:
                    probs = drop_weights(probs, self.rate)
                return probs @ v
        """
    ),
    # A helper that drops hidden states (not attention weights), under the mode.
    Valid(
        """
        import torch
        from torch import nn
        from torch.nn import functional as F


        def drop(x, rate):
            return F.dropout(x, rate)


        class Block(nn.Module):
            def __init__(self, dim, rate=0.1):
                super().__init__()
                self.ff = nn.Linear(dim, dim)
                self.rate = rate

            def forward(self, x):
                hidden = self.ff(x)
                if self.training:
                    hidden = drop(hidden, self.rate)
                return hidden
        """
    ),
    # A helper given a rate computed from the mode, or a literal zero.
    Valid(
        """
        import torch
        from torch import nn
        from torch.nn import functional as F


        def attention(q, k, v, rate):
            probs = torch.softmax(q @ k.transpose(-1, -2) * q.size(-1) ** -0.5, dim=-1)
            return F.dropout(probs, rate) @ v


        class SelfAttention(nn.Module):
            def __init__(self, dim, rate=0.1):
                super().__init__()
                self.qkv = nn.Linear(dim, 3 * dim)
                self.rate = rate

            def forward(self, x):
                q, k, v = self.qkv(x).chunk(3, dim=-1)
                return attention(q, k, v, self.rate if self.training else 0.0)


        class Probe(nn.Module):
            def forward(self, q, k, v):
                return attention(q, k, v, 0.0)
        """
    ),
    # training=True written out, but only reached while training.
    Valid(
        """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F


        class Attention(nn.Module):
            def forward(self, q, k, v, p=0.1):
                w = torch.softmax(q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5, dim=-1)
                if self.training:
                    w = F.dropout(w, p, training=True)
                return w @ v
        """
    ),
    # PyTorch's functional multi-head attention: the caller zeroes the rate under a test of the
    # mode (`if not training: dropout_p = 0.0`) before the helper drops with it.
    Valid(
        """
        import math
        import torch
        import torch.nn.functional as F
        def _scaled_dot_product_attention(q, k, v, dropout_p=0.0):
            attn = torch.bmm(q / math.sqrt(q.size(-1)), k.transpose(-2, -1))
            attn = F.softmax(attn, dim=-1)
            if dropout_p > 0.0:
                attn = F.dropout(attn, p=dropout_p)
            return torch.bmm(attn, v), attn
        def multi_head_attention_forward(q, k, v, dropout_p, training=True):
            if not training:
                dropout_p = 0.0
            return _scaled_dot_product_attention(q, k, v, dropout_p)
        """
    ),
]

INVALID = [
    # torchtune: the attention function is a closure a factory returns, kept on the module and
    # called with the module's rate, whatever its mode.
    Invalid(
        """
        import torch.nn as nn
        import torch.nn.functional as F


        def sdpa_or_flex():
            def _attention_call(q, k, v, mask, dropout_p, is_causal):
                return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p, is_causal=is_causal)

            return _attention_call


        class MultiHeadAttention(nn.Module):
            def __init__(self, attn_dropout=0.0):
                super().__init__()
                self.attn_dropout = attn_dropout
                self._attention_call = sdpa_or_flex()

            def forward(self, q, k, v, mask=None):
                return self._attention_call(q, k, v, mask=mask, dropout_p=self.attn_dropout, is_causal=mask is None)
        """,
        fixed="""
        import torch.nn as nn
        import torch.nn.functional as F


        def sdpa_or_flex():
            def _attention_call(q, k, v, mask, dropout_p, is_causal):
                return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p, is_causal=is_causal)

            return _attention_call


        class MultiHeadAttention(nn.Module):
            def __init__(self, attn_dropout=0.0):
                super().__init__()
                self.attn_dropout = attn_dropout
                self._attention_call = sdpa_or_flex()

            def forward(self, q, k, v, mask=None):
                return self._attention_call(q, k, v, mask=mask, dropout_p=self.attn_dropout if self.training else 0.0, is_causal=mask is None)
        """,
        line=19,
    ),
    # The same shared function, and its caller hands it the rate in every mode.
    Invalid(
        """
        import torch
        from torch import nn

        BACKENDS = {}


        def eager_attend(module, q, k, v, mask, scale, drop=0.0):
            w = torch.matmul(q, k.transpose(-1, -2)) * scale
            if mask is not None:
                w = w + mask
            w = torch.softmax(w, dim=-1)
            w = nn.functional.dropout(w, p=drop)
            return torch.matmul(w, v)


        class SelfAttention(nn.Module):
            def __init__(self, dim, heads, p):
                super().__init__()
                self.heads, self.p, self.scale = heads, p, (dim // heads) ** -0.5
                self.qkv = nn.Linear(dim, 3 * dim)
                self.backend = None

            def forward(self, x, mask=None):
                b, n, _ = x.shape
                q, k, v = self.qkv(x).view(b, n, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
                attend = eager_attend
                if self.backend is not None:
                    attend = BACKENDS[self.backend]
                out = attend(self, q, k, v, mask, self.scale, drop=self.p)
                return out.transpose(1, 2).reshape(b, n, -1)
        """,
        fixed="""
        import torch
        from torch import nn

        BACKENDS = {}


        def eager_attend(module, q, k, v, mask, scale, drop=0.0):
            w = torch.matmul(q, k.transpose(-1, -2)) * scale
            if mask is not None:
                w = w + mask
            w = torch.softmax(w, dim=-1)
            w = nn.functional.dropout(w, p=drop, training=module.training)
            return torch.matmul(w, v)


        class SelfAttention(nn.Module):
            def __init__(self, dim, heads, p):
                super().__init__()
                self.heads, self.p, self.scale = heads, p, (dim // heads) ** -0.5
                self.qkv = nn.Linear(dim, 3 * dim)
                self.backend = None

            def forward(self, x, mask=None):
                b, n, _ = x.shape
                q, k, v = self.qkv(x).view(b, n, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
                attend = eager_attend
                if self.backend is not None:
                    attend = BACKENDS[self.backend]
                out = attend(self, q, k, v, mask, self.scale, drop=self.p)
                return out.transpose(1, 2).reshape(b, n, -1)
        """,
        line=12,
    ),
    # A module's functional dropout with no training argument.
    Invalid(
        """
        import torch.nn as nn
        import torch.nn.functional as F
        class Attention(nn.Module):
            def forward(self, q, k, v):
                w = (q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5).softmax(dim=-1)
                w = F.dropout(w, p=0.1)
                return w @ v
        """,
        fixed="""
        import torch.nn as nn
        import torch.nn.functional as F
        class Attention(nn.Module):
            def forward(self, q, k, v):
                w = (q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5).softmax(dim=-1)
                w = F.dropout(w, p=0.1, training=self.training)
                return w @ v
        """,
        line=6,
        page=True,
    ),
    # Hugging Face eager attention without the module's flag.
    Invalid(
        """
        from torch import nn
        import torch
        def eager_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0):
            attn_weights = torch.matmul(query, key.transpose(2, 3)) * scaling
            if attention_mask is not None:
                attn_weights = attn_weights + attention_mask
            attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
            attn_weights = nn.functional.dropout(attn_weights, p=dropout)
            return torch.matmul(attn_weights, value), attn_weights
        """,
        fixed="""
        from torch import nn
        import torch
        def eager_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0):
            attn_weights = torch.matmul(query, key.transpose(2, 3)) * scaling
            if attention_mask is not None:
                attn_weights = attn_weights + attention_mask
            attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
            attn_weights = nn.functional.dropout(attn_weights, p=dropout, training=module.training)
            return torch.matmul(attn_weights, value), attn_weights
        """,
        line=8,
    ),
    # Positional rate.
    Invalid(
        """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        class SelfAttention(nn.Module):
            def __init__(self, d, p):
                super().__init__()
                self.qkv = nn.Linear(d, 3 * d)
                self.p = p
            def forward(self, x):
                q, k, v = self.qkv(x).chunk(3, dim=-1)
                w = torch.softmax(q @ k.transpose(-2, -1) / q.size(-1) ** 0.5, dim=-1)
                return F.dropout(w, self.p) @ v
        """,
        fixed="""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        class SelfAttention(nn.Module):
            def __init__(self, d, p):
                super().__init__()
                self.qkv = nn.Linear(d, 3 * d)
                self.p = p
            def forward(self, x):
                q, k, v = self.qkv(x).chunk(3, dim=-1)
                w = torch.softmax(q @ k.transpose(-2, -1) / q.size(-1) ** 0.5, dim=-1)
                return F.dropout(w, self.p, training=self.training) @ v
        """,
    ),
    # Imported by name.
    Invalid(
        """
        import torch
        from torch import nn
        from torch.nn.functional import dropout, softmax
        class Attn(nn.Module):
            def forward(self, q, k, v):
                attn = softmax(q @ k.transpose(-1, -2) * self.scale, dim=-1)
                attn = dropout(attn, self.attn_p)
                return attn @ v
        """,
        fixed="""
        import torch
        from torch import nn
        from torch.nn.functional import dropout, softmax
        class Attn(nn.Module):
            def forward(self, q, k, v):
                attn = softmax(q @ k.transpose(-1, -2) * self.scale, dim=-1)
                attn = dropout(attn, self.attn_p, training=self.training)
                return attn @ v
        """,
    ),
    # Config dataclass holding the rate.
    Invalid(
        """
        from dataclasses import dataclass
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        @dataclass
        class Config:
            n_embd: int = 64
            attn_pdrop: float = 0.1
        class Attention(nn.Module):
            def __init__(self, config: Config):
                super().__init__()
                self.config = config
            def forward(self, q, k, v):
                att = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / q.size(-1) ** 0.5)
                att = F.softmax(att, dim=-1)
                att = F.dropout(att, p=self.config.attn_pdrop)
                return att @ v
        """,
        fixed="""
        from dataclasses import dataclass
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        @dataclass
        class Config:
            n_embd: int = 64
            attn_pdrop: float = 0.1
        class Attention(nn.Module):
            def __init__(self, config: Config):
                super().__init__()
                self.config = config
            def forward(self, q, k, v):
                att = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / q.size(-1) ** 0.5)
                att = F.softmax(att, dim=-1)
                att = F.dropout(att, p=self.config.attn_pdrop, training=self.training)
                return att @ v
        """,
    ),
    # einsum attention in a module.
    Invalid(
        """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        class Attention(nn.Module):
            def forward(self, q, k, v):
                sim = torch.einsum("b h i d, b h j d -> b h i j", q, k) * self.scale
                attn = sim.softmax(dim=-1)
                attn = F.dropout(attn, p=self.dropout)
                return torch.einsum("b h i j, b h j d -> b h i d", attn, v)
        """,
        fixed="""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        class Attention(nn.Module):
            def forward(self, q, k, v):
                sim = torch.einsum("b h i d, b h j d -> b h i j", q, k) * self.scale
                attn = sim.softmax(dim=-1)
                attn = F.dropout(attn, p=self.dropout, training=self.training)
                return torch.einsum("b h i j, b h j d -> b h i d", attn, v)
        """,
    ),
    # A helper method of the module.
    Invalid(
        """
        import math
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        class MultiHeadAttention(nn.Module):
            def _attn(self, q, k, v):
                scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
                probs = F.softmax(scores, dim=-1)
                return F.dropout(probs, self.dropout_p) @ v
            def forward(self, x):
                return self._attn(self.q(x), self.k(x), self.v(x))
        """,
        fixed="""
        import math
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        class MultiHeadAttention(nn.Module):
            def _attn(self, q, k, v):
                scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
                probs = F.softmax(scores, dim=-1)
                return F.dropout(probs, self.dropout_p, training=self.training) @ v
            def forward(self, x):
                return self._attn(self.q(x), self.k(x), self.v(x))
        """,
    ),
    # A module-level helper that gets the training flag but does not use it.
    Invalid(
        """
        import torch
        import torch.nn.functional as F
        def attention(q, k, v, p, training=False):
            w = torch.softmax(q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5, dim=-1)
            return F.dropout(w, p) @ v
        """,
        fixed="""
        import torch
        import torch.nn.functional as F
        def attention(q, k, v, p, training=False):
            w = torch.softmax(q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5, dim=-1)
            return F.dropout(w, p, training=training) @ v
        """,
    ),
    # torch.dropout's required mode argument written as a literal True: dropped in every mode.
    Invalid(
        """
        import math
        import torch
        from torch import nn
        class SoftmaxAttention(nn.Module):
            def __init__(self, dim, p=0.1):
                super().__init__()
                self.dim, self.p = dim, p
            def forward(self, q, k, v):
                scores = torch.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(q.size(-1))
                probs = torch.dropout(scores.softmax(dim=-1), self.p, True)
                return torch.einsum("bhij,bhjd->bhid", probs, v)
        """,
        fixed="""
        import math
        import torch
        from torch import nn
        class SoftmaxAttention(nn.Module):
            def __init__(self, dim, p=0.1):
                super().__init__()
                self.dim, self.p = dim, p
            def forward(self, q, k, v):
                scores = torch.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(q.size(-1))
                probs = torch.dropout(scores.softmax(dim=-1), self.p, self.training)
                return torch.einsum("bhij,bhjd->bhid", probs, v)
        """,
    ),
    # SDPA with a configured rate and nothing tying it to the mode.
    Invalid(
        """
        import torch.nn as nn
        import torch.nn.functional as F
        class CausalSelfAttention(nn.Module):
            def __init__(self, dropout):
                super().__init__()
                self.dropout = dropout
            def forward(self, q, k, v):
                return F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout, is_causal=True)
        """,
        fixed="""
        import torch.nn as nn
        import torch.nn.functional as F
        class CausalSelfAttention(nn.Module):
            def __init__(self, dropout):
                super().__init__()
                self.dropout = dropout
            def forward(self, q, k, v):
                return F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout if self.training else 0.0, is_causal=True)
        """,
    ),
    # SDPA with a literal rate.
    Invalid(
        """
        import torch
        import torch.nn as nn
        class Block(nn.Module):
            def forward(self, q, k, v, mask):
                return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=0.1)
        """,
        fixed="""
        import torch
        import torch.nn as nn
        class Block(nn.Module):
            def forward(self, q, k, v, mask):
                return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=0.1 if self.training else 0.0)
        """,
    ),
    # SDPA inside a HF-style module-level function given the module.
    Invalid(
        """
        import torch.nn.functional as F
        def sdpa_attention(module, query, key, value, attention_mask=None):
            return F.scaled_dot_product_attention(
                query, key, value, attn_mask=attention_mask, dropout_p=module.attention_dropout
            )
        """,
        fixed="""
        import torch.nn.functional as F
        def sdpa_attention(module, query, key, value, attention_mask=None):
            return F.scaled_dot_product_attention(
                query, key, value, attn_mask=attention_mask, dropout_p=module.attention_dropout if module.training else 0.0
            )
        """,
    ),
    # Subclass of a local nn.Module base.
    Invalid(
        """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        class BaseAttention(nn.Module):
            pass
        class LocalAttention(BaseAttention):
            def forward(self, q, k, v):
                attn = (q @ k.transpose(-2, -1) * self.scale).softmax(dim=-1)
                attn = F.dropout(attn, p=self.p)
                return attn @ v
        """,
        fixed="""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        class BaseAttention(nn.Module):
            pass
        class LocalAttention(BaseAttention):
            def forward(self, q, k, v):
                attn = (q @ k.transpose(-2, -1) * self.scale).softmax(dim=-1)
                attn = F.dropout(attn, p=self.p, training=self.training)
                return attn @ v
        """,
    ),
    # Time-major attention in a seq2seq decoder (bmm).
    Invalid(
        """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        class DotAttention(nn.Module):
            def forward(self, query, keys, values):
                scores = torch.bmm(query, keys.transpose(1, 2)) / self.d ** 0.5
                weights = F.softmax(scores, dim=-1)
                weights = F.dropout(weights, p=self.p, inplace=False)
                return torch.bmm(weights, values)
        """,
        fixed="""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        class DotAttention(nn.Module):
            def forward(self, query, keys, values):
                scores = torch.bmm(query, keys.transpose(1, 2)) / self.d ** 0.5
                weights = F.softmax(scores, dim=-1)
                weights = F.dropout(weights, p=self.p, inplace=False, training=self.training)
                return torch.bmm(weights, values)
        """,
    ),
    # Weights cast back to the input dtype, then dropped.
    Invalid(
        """
        import torch
        import torch.nn as nn
        class Attention(nn.Module):
            def forward(self, q, k, v):
                w = torch.matmul(q, k.transpose(2, 3)) * self.scaling
                w = nn.functional.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
                w = nn.functional.dropout(w, p=self.attention_dropout)
                return torch.matmul(w, v)
        """,
        fixed="""
        import torch
        import torch.nn as nn
        class Attention(nn.Module):
            def forward(self, q, k, v):
                w = torch.matmul(q, k.transpose(2, 3)) * self.scaling
                w = nn.functional.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
                w = nn.functional.dropout(w, p=self.attention_dropout, training=self.training)
                return torch.matmul(w, v)
        """,
    ),
    # The weights named by role only (the analysis sees the softmax).
    Invalid(
        """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        class Head(nn.Module):
            def __init__(self, n_embd, head_size, dropout):
                super().__init__()
                self.key = nn.Linear(n_embd, head_size, bias=False)
                self.query = nn.Linear(n_embd, head_size, bias=False)
                self.value = nn.Linear(n_embd, head_size, bias=False)
                self.dropout = dropout
            def forward(self, x):
                k = self.key(x)
                q = self.query(x)
                wei = q @ k.transpose(-2, -1) * k.shape[-1] ** -0.5
                wei = F.softmax(wei, dim=-1)
                wei = F.dropout(wei, self.dropout)
                return wei @ self.value(x)
        """,
        fixed="""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        class Head(nn.Module):
            def __init__(self, n_embd, head_size, dropout):
                super().__init__()
                self.key = nn.Linear(n_embd, head_size, bias=False)
                self.query = nn.Linear(n_embd, head_size, bias=False)
                self.value = nn.Linear(n_embd, head_size, bias=False)
                self.dropout = dropout
            def forward(self, x):
                k = self.key(x)
                q = self.query(x)
                wei = q @ k.transpose(-2, -1) * k.shape[-1] ** -0.5
                wei = F.softmax(wei, dim=-1)
                wei = F.dropout(wei, self.dropout, training=self.training)
                return wei @ self.value(x)
        """,
    ),
    # A training guard elsewhere does not cover this call.
    Invalid(
        """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        class Attention(nn.Module):
            def forward(self, x, q, k, v):
                if self.training:
                    x = x + 0.01 * torch.randn_like(x)
                w = torch.softmax(q @ k.transpose(-2, -1) * self.scale, dim=-1)
                return F.dropout(w, self.p) @ v
        """,
        fixed="""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        class Attention(nn.Module):
            def forward(self, x, q, k, v):
                if self.training:
                    x = x + 0.01 * torch.randn_like(x)
                w = torch.softmax(q @ k.transpose(-2, -1) * self.scale, dim=-1)
                return F.dropout(w, self.p, training=self.training) @ v
        """,
    ),
    # SDPA kept in an attribute by __init__ and called through it.
    Invalid(
        """
        import torch.nn as nn
        import torch.nn.functional as F
        class Attention(nn.Module):
            def __init__(self, p):
                super().__init__()
                self.p = p
                self.kernel = F.scaled_dot_product_attention
            def forward(self, q, k, v):
                return self.kernel(q, k, v, dropout_p=self.p)
        """,
        fixed="""
        import torch.nn as nn
        import torch.nn.functional as F
        class Attention(nn.Module):
            def __init__(self, p):
                super().__init__()
                self.p = p
                self.kernel = F.scaled_dot_product_attention
            def forward(self, q, k, v):
                return self.kernel(q, k, v, dropout_p=self.p if self.training else 0.0)
        """,
        line=9,
    ),
    # SDPA imported by name and bound to a local before the call.
    Invalid(
        """
        from torch import nn
        from torch.nn.functional import scaled_dot_product_attention
        class Block(nn.Module):
            def forward(self, q, k, v):
                attend = scaled_dot_product_attention
                out = attend(q, k, v, None, self.attn_p)
                return out
        """,
        fixed="""
        from torch import nn
        from torch.nn.functional import scaled_dot_product_attention
        class Block(nn.Module):
            def forward(self, q, k, v):
                attend = scaled_dot_product_attention
                out = attend(q, k, v, None, self.attn_p if self.training else 0.0)
                return out
        """,
        line=6,
    ),
    # The rate reaches SDPA through a helper method; the caller knows its mode and ignores it.
    Invalid(
        """
        import torch.nn as nn
        import torch.nn.functional as F
        class CrossAttention(nn.Module):
            def __init__(self, cfg):
                super().__init__()
                self.cfg = cfg
            def _sdpa(self, q, k, v, drop):
                return F.scaled_dot_product_attention(q, k, v, dropout_p=drop)
            def forward(self, q, k, v):
                return self._sdpa(q, k, v, drop=self.cfg.attn_drop)
        """,
        fixed="""
        import torch.nn as nn
        import torch.nn.functional as F
        class CrossAttention(nn.Module):
            def __init__(self, cfg):
                super().__init__()
                self.cfg = cfg
            def _sdpa(self, q, k, v, drop):
                return F.scaled_dot_product_attention(q, k, v, dropout_p=drop)
            def forward(self, q, k, v):
                return self._sdpa(q, k, v, drop=self.cfg.attn_drop if self.training else 0.0)
        """,
        line=10,
    ),
    # training=True written out on attention-pooling weights.
    Invalid(
        """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F


        class PooledAttention(nn.Module):
            def __init__(self, dim, p=0.1):
                super().__init__()
                self.query = nn.Parameter(torch.randn(dim))
                self.p = p

            def forward(self, tokens):
                logits = tokens @ self.query / tokens.size(-1) ** 0.5
                alpha = torch.softmax(logits, dim=-1)
                alpha = F.dropout(alpha, self.p, training=True)
                return torch.einsum("bt,btd->bd", alpha, tokens)
        """,
        fixed="""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F


        class PooledAttention(nn.Module):
            def __init__(self, dim, p=0.1):
                super().__init__()
                self.query = nn.Parameter(torch.randn(dim))
                self.p = p

            def forward(self, tokens):
                logits = tokens @ self.query / tokens.size(-1) ** 0.5
                alpha = torch.softmax(logits, dim=-1)
                alpha = F.dropout(alpha, self.p, training=self.training)
                return torch.einsum("bt,btd->bd", alpha, tokens)
        """,
    ),
    # A dropout helper two calls below the module that knows its mode.
    Invalid(
        """
        import torch
        from torch import nn
        from torch.nn import functional as F


        def drop_weights(w, rate):
            return F.dropout(w, rate)


        def attend(q, k, v, rate):
            probs = torch.softmax(q @ k.transpose(-1, -2) * q.size(-1) ** -0.5, dim=-1)
            return drop_weights(probs, rate) @ v


        class SelfAttention(nn.Module):
            def __init__(self, dim, rate=0.1):
                super().__init__()
                self.qkv = nn.Linear(dim, 3 * dim)
                self.rate = rate

            def forward(self, x):
                q, k, v = self.qkv(x).chunk(3, dim=-1)
                return attend(q, k, v, self.rate)
        """,
    ),
]
