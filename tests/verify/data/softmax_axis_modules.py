# Attention modules with the ATN102 bug (the softmax normalises an axis other than the keys), written
# for the verification tests in the styles people use: key-major scores `k @ q^T` normalised over the
# query axis, an `nn.Softmax(dim=1)` built in __init__ and applied to (batch, queries, keys) scores,
# and nanoGPT-style multi-head code (fused c_attn, n_head) whose softmax runs over the heads axis.
# Demo code at the bottom must never run inside the harness.
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class KeyMajorAttention(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_q = nn.Linear(d_in, d_out, bias=False)
        self.W_k = nn.Linear(d_in, d_out, bias=False)
        self.W_v = nn.Linear(d_in, d_out, bias=False)

    def forward(self, x):
        b, n, _ = x.shape
        q = self.W_q(x)
        k = self.W_k(x)
        v = self.W_v(x)
        d = q.shape[-1]
        scores = k @ q.transpose(1, 2) / math.sqrt(d)  # (b, n_keys, n_queries)
        weights = torch.softmax(scores, dim=-1)
        return weights.transpose(1, 2) @ v


class SoftmaxModuleAttention(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.query = nn.Linear(d_in, d_out)
        self.key = nn.Linear(d_in, d_out)
        self.value = nn.Linear(d_in, d_out)
        self.softmax = nn.Softmax(dim=1)

    def forward(self, x):
        q = self.query(x)
        k = self.key(x)
        v = self.value(x)
        b, n, d = q.shape
        scores = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(d)
        return torch.bmm(self.softmax(scores), v)


class HeadsAxisSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        assert n_embd % n_head == 0
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.n_head = n_head
        self.n_embd = n_embd

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = F.softmax(att, dim=1)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


if __name__ == "__main__":
    print(KeyMajorAttention(8, 8)(torch.randn(2, 3, 8)).shape)

raise SystemExit("module-level demo code must not run inside the verification harness")
