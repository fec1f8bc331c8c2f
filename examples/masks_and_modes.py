"""Masks and modes: four ways attention code passes its tests in float32 training and breaks later.

- ATN206: a -1e9 fill in code written for any dtype: masked_fill raises on float16 scores
  (safe fix: torch.finfo(scores.dtype).min).
- ATN207: SDPA given a padding mask and is_causal=True while decoding with a KV cache: the
  causal part is aligned to the wrong corner (unsafe fix: fold a lower-right causal mask in).
- ATN208: Hugging Face's 0/1 attention_mask added to the scores: nothing is masked
  (unsafe fix: the additive form).
- ATN209: functional dropout on the weights with no training flag: on at evaluation too
  (safe fix: training=self.training).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


def attention(q, k, v, mask):
    scores = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
    scores = scores.masked_fill(mask == 0, -1e9)
    return scores.softmax(dim=-1).to(q.dtype) @ v


def decode_step(q, k, v, attn_mask):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=True)


def padded_attention(q, k, v, attention_mask):
    scores = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
    mask = attention_mask[:, None, None, :].to(scores.dtype)
    scores = scores + mask
    return scores.softmax(dim=-1) @ v


class SelfAttention(nn.Module):
    def __init__(self, d=32, p=0.3):
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d)
        self.p = p

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        w = torch.softmax(q @ k.transpose(-2, -1) / q.size(-1) ** 0.5, dim=-1)
        return F.dropout(w, self.p) @ v
