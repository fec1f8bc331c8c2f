"""Multi-head attention with shapes gone wrong: it runs, and every head mixes what it should not.

- ATN104: the scores are scaled by 1/sqrt(d_model), the model width, not by the per-head
  1/sqrt(head_dim) (unsafe fix: the head dimension the module names).
- ATN106: the values are split into heads by `view` alone: (B, T, C) memory reread as
  (B, heads, T, head_size) mixes tokens with heads (safe fix: view, then transpose).
"""

import math

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model=64, num_heads=4):
        super().__init__()
        self.d_model = d_model
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out_proj = nn.Linear(d_model, d_model)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(self.d_model, dim=2)
        q = q.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        k = k.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        v = v.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(self.d_model)
        y = att.softmax(dim=-1) @ v
        return self.out_proj(y.transpose(1, 2).reshape(B, T, C))


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd=64, n_head=4):
        super().__init__()
        self.n_head = n_head
        self.query = nn.Linear(n_embd, n_embd)
        self.key = nn.Linear(n_embd, n_embd)
        self.value = nn.Linear(n_embd, n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        B, T, C = x.size()
        hs = C // self.n_head
        q = self.query(x).view(B, T, self.n_head, hs).transpose(1, 2)
        k = self.key(x).view(B, T, self.n_head, hs).transpose(1, 2)
        v = self.value(x).view(B, self.n_head, T, hs)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
        y = att.softmax(dim=-1) @ v
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


if __name__ == "__main__":
    x = torch.randn(2, 5, 64)
    print(MultiHeadAttention()(x).shape, CausalSelfAttention()(x).shape)
