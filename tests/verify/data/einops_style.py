"""Attention that uses einops (heads merged with `rearrange`, values mixed with `einsum`).

Missing 1/sqrt(d_k) scale (ATN101). The verifier must carry the `einops` import into the child.
Needs einops installed; the test skips without it.
"""

import torch
import torch.nn as nn
from einops import rearrange


class EinopsAttention(nn.Module):
    def __init__(self, dim, heads=2):
        super().__init__()
        self.heads = heads
        self.to_q = nn.Linear(dim, dim, bias=False)
        self.to_k = nn.Linear(dim, dim, bias=False)
        self.to_v = nn.Linear(dim, dim, bias=False)
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, _ = x.shape
        q = self.to_q(x).view(b, n, self.heads, -1).transpose(1, 2)
        k = self.to_k(x).view(b, n, self.heads, -1).transpose(1, 2)
        v = self.to_v(x).view(b, n, self.heads, -1).transpose(1, 2)
        attn = torch.softmax(q @ k.transpose(-2, -1), dim=-1)
        out = torch.einsum("bhij,bhjd->bhid", attn, v)
        return self.to_out(rearrange(out, "b h n d -> b n (h d)"))
