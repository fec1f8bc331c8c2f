"""A padded batch: the masking and padding pitfalls from the attention-pitfalls article.

- ATN201: targets padded with 0 (pad_sequence's default) but CrossEntropyLoss ignores -100.
- ATN202: `key_padding_mask` is accepted and never passed to the attention.
- ATN203: the padding mask laid along the queries as well as the keys, filled with `-inf`:
  every padded query's row is all `-inf`, and its softmax NaN.
- ATN205: a `triu(diagonal=1)` mask (True = future) handed to SDPA, which reads True = attend.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence


def attention(q, k, v, key_padding_mask):
    scores = (q @ k.transpose(-2, -1)) * q.size(-1) ** -0.5
    padded = key_padding_mask[:, None, :, None] | key_padding_mask[:, None, None, :]
    scores = scores.masked_fill(padded, float("-inf"))
    weights = scores.softmax(dim=-1)
    return weights @ v


def causal_sdpa(q, k, v):
    T = q.size(-2)
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=future)


class Encoder(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)

    def forward(self, x, key_padding_mask=None):
        out, _ = self.attn(x, x, x)
        return out


def sequence_loss(logits, target_list):
    padded_targets = pad_sequence(target_list, batch_first=True)
    loss_fn = nn.CrossEntropyLoss()
    return loss_fn(logits.view(-1, logits.size(-1)), padded_targets.view(-1))
