"""Buggy masking code for the ATN201-ATN205 verification tests (attnlint's own test data).

Each entry is written in the style of its rule's INVALID examples and carries exactly the bug its
rule reports; the tests fix this file with the linter (one rule at a time) and verify the result.

* ATN201 cross-entropy-ignore-index: `lm_loss` (a loss function on padded targets, default
  ignore_index), `summed_lm_loss` (reduction="sum"), `TaggerTrainer.training_step` (a training
  step: pad_sequence on tokens and tags, a criterion with label smoothing built in __init__).
* ATN202 unmasked-padding: `EncoderBlock` (post-norm block whose nn.MultiheadAttention never gets
  the key_padding_mask it was given), `SdpaSelfAttention` (an SDPA wrapper that ignores attn_mask).
* ATN203 all-masked-row-nan: `PaddedSelfAttention` (the key_padding_mask laid along the queries and
  the keys + masked_fill(-inf): every padded query's row is empty), `CausalPaddedAttention`
  (causal | padding, in a file that pads on the left: `left_pad_prompts`), `padded_attention` (a
  q/k/v function), `additive_padded_attention` (an additive -inf bias: reported, not fixed).
* ATN204 unsliced-causal-mask: `CausalAttention` (a triu buffer at context_length used whole),
  `CausalSelfAttention` (a (1, 1, block_size, block_size) tril buffer, multi-head).
* ATN205 inverted-mask-convention: `CausalSdpaAttention` (SDPA given a triu(diagonal=1) mask, i.e.
  True = masked where SDPA reads True = may attend), `PaddedEncoder` (nn.MultiheadAttention given
  `attention_mask == 1`, True = real token, as its key_padding_mask).
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence


# ---------------------------------------------------------------------------------------------
# ATN201: targets padded with 0, loss ignoring -100
# ---------------------------------------------------------------------------------------------
def lm_loss(logits, target_seqs):
    targets = pad_sequence(target_seqs, batch_first=True)
    criterion = nn.CrossEntropyLoss()
    return criterion(logits.view(-1, logits.size(-1)), targets.view(-1))


def summed_lm_loss(logits, target_seqs):
    targets = pad_sequence(target_seqs, batch_first=True, padding_value=0)
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1), reduction="sum")


class TaggerTrainer(nn.Module):
    def __init__(self, vocab_size, d_model, num_tags):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.proj = nn.Linear(d_model, num_tags)
        self.criterion = nn.CrossEntropyLoss(label_smoothing=0.1)

    def training_step(self, token_seqs, tag_seqs):
        tokens = pad_sequence(token_seqs, batch_first=True)
        tags = pad_sequence(tag_seqs, batch_first=True)
        logits = self.proj(self.embed(tokens))
        return self.criterion(logits.view(-1, logits.size(-1)), tags.view(-1))


# ---------------------------------------------------------------------------------------------
# ATN202: a padding mask accepted and never used
# ---------------------------------------------------------------------------------------------
class EncoderBlock(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, num_heads, dropout=dropout, batch_first=True)
        self.norm1 = nn.LayerNorm(d_model)
        self.ff = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))
        self.norm2 = nn.LayerNorm(d_model)

    def forward(self, x, key_padding_mask=None):
        attn_out, _ = self.attn(x, x, x)
        x = self.norm1(x + attn_out)
        return self.norm2(x + self.ff(x))


class SdpaSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attn_mask=None):
        B, T, C = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.view(B, T, self.num_heads, C // self.num_heads).transpose(1, 2)
        k = k.view(B, T, self.num_heads, C // self.num_heads).transpose(1, 2)
        v = v.view(B, T, self.num_heads, C // self.num_heads).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v)
        return self.out_proj(y.transpose(1, 2).reshape(B, T, C))


# ---------------------------------------------------------------------------------------------
# ATN203: -inf fills that can cover a whole row
# ---------------------------------------------------------------------------------------------
class PaddedSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out_proj = nn.Linear(d_model, d_model)

    def forward(self, x, key_padding_mask):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
        padded = key_padding_mask[:, None, :, None] | key_padding_mask[:, None, None, :]
        scores = scores.masked_fill(padded, float("-inf"))
        attn = F.softmax(scores, dim=-1)
        return self.out_proj((attn @ v).transpose(1, 2).reshape(B, T, C))


class CausalPaddedAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.W_query = nn.Linear(d_model, d_model, bias=False)
        self.W_key = nn.Linear(d_model, d_model, bias=False)
        self.W_value = nn.Linear(d_model, d_model, bias=False)
        self.out_proj = nn.Linear(d_model, d_model)

    def forward(self, x, key_padding_mask):
        B, T, C = x.shape
        hd = C // self.num_heads
        q = self.W_query(x).view(B, T, self.num_heads, hd).transpose(1, 2)
        k = self.W_key(x).view(B, T, self.num_heads, hd).transpose(1, 2)
        v = self.W_value(x).view(B, T, self.num_heads, hd).transpose(1, 2)
        future = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=1)
        masked = future | key_padding_mask[:, None, None, :]
        scores = q @ k.transpose(-2, -1) * hd**-0.5
        scores = scores.masked_fill(masked, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        return self.out_proj((weights @ v).transpose(1, 2).reshape(B, T, C))


def left_pad_prompts(prompts, pad_id=0):
    n = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), n), pad_id)
    for i, p in enumerate(prompts):
        ids[i, n - len(p):] = torch.tensor(p)
    return ids, ids == pad_id


def padded_attention(q, k, v, key_padding_mask):
    s = q @ k.transpose(-2, -1) * q.size(-1) ** -0.5
    pad = key_padding_mask.unsqueeze(-1) | key_padding_mask.unsqueeze(-2)
    s = s.masked_fill(pad[:, None], float("-inf"))
    return s.softmax(dim=-1) @ v


def additive_padded_attention(q, k, v, key_padding_mask):
    pad = key_padding_mask[:, :, None] | key_padding_mask[:, None, :]
    bias = torch.zeros(pad.shape, dtype=q.dtype, device=q.device)
    bias = bias.masked_fill(pad, float("-inf"))
    s = q @ k.transpose(-2, -1) * q.size(-1) ** -0.5 + bias[:, None]
    return s.softmax(dim=-1) @ v


# ---------------------------------------------------------------------------------------------
# ATN204: a mask buffer built at context_length, used whole
# ---------------------------------------------------------------------------------------------
class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.transpose(1, 2)
        attn_scores.masked_fill_(self.mask.bool(), -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        return attn_weights @ values


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


# ---------------------------------------------------------------------------------------------
# ATN205: a mask in the opposite convention of the API it is given to
# ---------------------------------------------------------------------------------------------
class CausalSdpaAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        future = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=1)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=future)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


class PaddedEncoder(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.mha = nn.MultiheadAttention(d_model, num_heads, batch_first=True)

    def forward(self, x, attention_mask):
        return self.mha(x, x, x, key_padding_mask=attention_mask == 1, need_weights=False)[0]
