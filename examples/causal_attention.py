"""Causal attention, as in the course notes (chapter 3.4), with two slips people make.

- The mask buffer is built for `context_length` and applied whole: any shorter input fails
  (ATN204; safe fix: slice it).
- The softmax normalises over dim=1, the query axis of (batch, queries, keys) scores
  (ATN102; unsafe fix: dim=-1).
"""

import torch
import torch.nn as nn


class CausalAttention(nn.Module):
    """Each token attends to itself and the tokens before it."""

    def __init__(self, d_in, d_out, context_length, dropout=0.0):
        super().__init__()
        self.W_q = nn.Linear(d_in, d_out, bias=False)
        self.W_k = nn.Linear(d_in, d_out, bias=False)
        self.W_v = nn.Linear(d_in, d_out, bias=False)
        self.dropout = nn.Dropout(dropout)
        # Upper triangle above the diagonal: the future (True = masked).
        mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)
        self.register_buffer("mask", mask.bool())

    def forward(self, x):
        b, num_tokens, d_in = x.shape
        queries = self.W_q(x)  # (b, n, d_out)
        keys = self.W_k(x)
        values = self.W_v(x)

        attn_scores = queries @ keys.transpose(1, 2)  # (b, n, n)
        attn_scores.masked_fill_(self.mask.bool(), -torch.inf)

        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=1)
        attn_weights = self.dropout(attn_weights)
        return attn_weights @ values
