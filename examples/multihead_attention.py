"""Multi-head attention (course notes, chapter 3.5) that forgot the 1/sqrt(d_k) scale.

ATN101 reports the product; its unsafe fix scales by the per-head dimension
(`queries.shape[-1]`), never by `d_out`.
"""

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout=0.0, n_heads=2):
        super().__init__()
        assert d_out % n_heads == 0, "d_out must be divisible by n_heads"
        self.d_out = d_out
        self.n_heads = n_heads
        self.head_dim = d_out // n_heads
        self.W_q = nn.Linear(d_in, d_out, bias=False)
        self.W_k = nn.Linear(d_in, d_out, bias=False)
        self.W_v = nn.Linear(d_in, d_out, bias=False)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)
        self.register_buffer("mask", mask.bool())

    def forward(self, x):
        b, num_tokens, d_in = x.shape
        queries = self.W_q(x).view(b, num_tokens, self.n_heads, self.head_dim).transpose(1, 2)
        keys = self.W_k(x).view(b, num_tokens, self.n_heads, self.head_dim).transpose(1, 2)
        values = self.W_v(x).view(b, num_tokens, self.n_heads, self.head_dim).transpose(1, 2)

        attn_scores = queries @ keys.transpose(-2, -1)
        mask = self.mask[:num_tokens, :num_tokens].unsqueeze(0).unsqueeze(0)
        attn_scores.masked_fill_(mask, -torch.inf)

        attn_weights = torch.softmax(attn_scores, dim=-1)
        attn_weights = self.dropout(attn_weights)

        context_vec = (attn_weights @ values).transpose(1, 2)
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)
        return self.out_proj(context_vec)
