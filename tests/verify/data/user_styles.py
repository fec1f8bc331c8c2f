"""Attention written in the styles real projects use, each with a missing 1/sqrt(d_k) scale (ATN101).

`attnlint verify` must find the entry, build it and prove the fix without being told anything,
except for `NeedsRotaryBase`, whose constructor needs a value no convention provides.
"""

from dataclasses import dataclass

import torch
import torch.nn as nn

DEFAULT_HEADS = 2  # a module-level constant the entry reads


@dataclass
class AttentionConfig:
    d_model: int
    n_heads: int = DEFAULT_HEADS
    dropout: float = 0.0


def attend(q, k, v):
    scores = q @ k.transpose(-2, -1)
    return torch.softmax(scores, dim=-1) @ v


class HelperAttention(nn.Module):
    """The bug sits in a helper function; the class is how the helper is used."""

    def __init__(self, d_model, n_heads=DEFAULT_HEADS):
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out_proj = nn.Linear(d_model, d_model)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.view(b, t, self.n_heads, c // self.n_heads).transpose(1, 2)
        k = k.view(b, t, self.n_heads, c // self.n_heads).transpose(1, 2)
        v = v.view(b, t, self.n_heads, c // self.n_heads).transpose(1, 2)
        y = attend(q, k, v)
        return self.out_proj(y.transpose(1, 2).reshape(b, t, c))


class ConfigAttention(nn.Module):
    """Built from a config dataclass."""

    def __init__(self, config: AttentionConfig):
        super().__init__()
        self.n_heads = config.n_heads
        self.W_query = nn.Linear(config.d_model, config.d_model)
        self.W_key = nn.Linear(config.d_model, config.d_model)
        self.W_value = nn.Linear(config.d_model, config.d_model)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        b, t, c = x.shape
        q = self.W_query(x).view(b, t, self.n_heads, -1).transpose(1, 2)
        k = self.W_key(x).view(b, t, self.n_heads, -1).transpose(1, 2)
        v = self.W_value(x).view(b, t, self.n_heads, -1).transpose(1, 2)
        w = self.dropout(torch.softmax(q @ k.transpose(-2, -1), dim=-1))
        return (w @ v).transpose(1, 2).reshape(b, t, c)


class DictConfigAttention(nn.Module):
    """Built from a dict config, as in the LLMs-from-scratch GPT code (`cfg["emb_dim"]`)."""

    def __init__(self, cfg):
        super().__init__()
        self.num_heads = cfg["n_heads"]
        self.W_query = nn.Linear(cfg["emb_dim"], cfg["emb_dim"], bias=cfg["qkv_bias"])
        self.W_key = nn.Linear(cfg["emb_dim"], cfg["emb_dim"], bias=cfg["qkv_bias"])
        self.W_value = nn.Linear(cfg["emb_dim"], cfg["emb_dim"], bias=cfg["qkv_bias"])

    def forward(self, x):
        b, t, c = x.shape
        q = self.W_query(x).view(b, t, self.num_heads, -1).transpose(1, 2)
        k = self.W_key(x).view(b, t, self.num_heads, -1).transpose(1, 2)
        v = self.W_value(x).view(b, t, self.num_heads, -1).transpose(1, 2)
        w = torch.softmax(q @ k.transpose(-2, -1), dim=-1)
        return (w @ v).transpose(1, 2).reshape(b, t, c)


class NeedsRotaryBase(nn.Module):
    """`rotary_base` has no default and no conventional value: the user must give it."""

    def __init__(self, d_model, rotary_base):
        super().__init__()
        self.rotary_base = rotary_base
        self.q = nn.Linear(d_model, d_model)
        self.k = nn.Linear(d_model, d_model)
        self.v = nn.Linear(d_model, d_model)

    def forward(self, x):
        q, k, v = self.q(x), self.k(x), self.v(x)
        w = torch.softmax(q @ k.transpose(-2, -1), dim=-1)
        return w @ v


if __name__ == "__main__":  # never run by the verifier: it only runs what the entry needs
    raise SystemExit("the demo block ran")
