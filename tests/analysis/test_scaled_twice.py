"""One 1/sqrt(size) factor applied to the queries and again at the product is SCALED_TWICE,
whatever the size is named in each scope; d**-0.25 on q and k, or one application, is not."""

from __future__ import annotations

from attnlint.analysis.scores import ScaleKind

from helpers import analyse, only_softmax

CROSS_ATTENTION = """
import torch
import torch.nn as nn


class CrossAttention(nn.Module):
    def __init__(self, query_dim, heads=8, dim_head=64):
        super().__init__()
        self.scale = dim_head ** -0.5
        self.heads = heads
        self.to_q = nn.Linear(query_dim, heads * dim_head, bias=False)
        self.to_k = nn.Linear(query_dim, heads * dim_head, bias=False)

    def fold_heads(self, t):
        b, n, d = t.shape
        return t.view(b, n, self.heads, d // self.heads).transpose(1, 2).reshape(b * self.heads, n, d // self.heads)

    def forward(self, x):
        q = self.fold_heads(self.to_q(x){query_scale})
        k = self.fold_heads(self.to_k(x))
        empty = torch.empty(q.shape[0], q.shape[1], k.shape[1], dtype=q.dtype)
        scores = torch.baddbmm(empty, q, k.transpose(1, 2), beta=0, alpha={alpha})
        return scores.softmax(dim=-1)


class UNetBlock(nn.Module):
    def __init__(self, channels, n_heads, d_head):
        super().__init__()
        self.attn = CrossAttention(channels, heads=n_heads, dim_head=d_head)

    def forward(self, x):
        return self.attn(x)
"""


def _verdict(query_scale: str, alpha: str):
    analysis, _ = analyse(CROSS_ATTENTION.format(query_scale=query_scale, alpha=alpha))
    scores = only_softmax(analysis).input.scores
    return scores, scores.scale_verdict()


def test_the_same_root_factor_on_the_queries_and_as_alpha_is_scaled_twice():
    scores, verdict = _verdict(" * self.scale", "self.scale")
    assert verdict.kind == ScaleKind.SCALED_TWICE
    assert len(scores.every_scale_step) == 2


def test_one_application_is_not_scaled_twice():
    for query_scale, alpha in ((" * self.scale", "1.0"), ("", "self.scale")):
        _, verdict = _verdict(query_scale, alpha)
        assert verdict.kind != ScaleKind.SCALED_TWICE, (query_scale, alpha)


def test_a_quarter_root_on_q_and_k_is_one_root_in_all():
    analysis, _ = analyse(
        """
        import torch

        def attend(q, k, v):
            ch = q.shape[-1]
            scale = ch ** -0.25
            weight = torch.einsum("bhtc,bhsc->bhts", q * scale, k * scale)
            return torch.einsum("bhts,bhsc->bhtc", weight.softmax(dim=-1), v)
        """
    )
    scores = only_softmax(analysis).input.scores
    assert len(scores.every_scale_step) == 2
    assert scores.scale_verdict().kind != ScaleKind.SCALED_TWICE


def test_a_query_scaled_by_the_root_of_its_width_before_sdpa_at_its_default_scale():
    from attnlint.analysis.attention import prescaled_sdpa_operand

    analysis, _ = analyse(
        """
        import torch.nn.functional as F

        def twice(q, k, v):
            b, h, n, d = q.shape
            q = q * d ** -0.5
            return F.scaled_dot_product_attention(q, k, v)

        def told(q, k, v):
            b, h, n, d = q.shape
            q = q * d ** -0.5
            return F.scaled_dot_product_attention(q, k, v, scale=1.0)

        def other_factor(q, k, v, tau):
            q = q * tau
            return F.scaled_dot_product_attention(q, k, v)
        """
    )
    found = {f.name: [prescaled_sdpa_operand(c) for c in f.attention_calls] for f in analysis.functions}
    assert found["twice"][0] is not None
    assert found["told"] == [None] and found["other_factor"] == [None]


ROTARY = """
import torch
import torch.nn as nn
from functools import partial
from einops import einsum
from einops.layers.torch import Rearrange


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(pos, t):
    return t * pos.cos() + rotate_half(t) * pos.sin()


class Attention(nn.Module):
    def __init__(self, dim, dim_head=64, heads=8):
        super().__init__()
        self.scale = dim_head ** -0.5
        self.to_qkv = nn.Linear(dim, dim_head * heads * 3, bias=False)
        self.split_heads = Rearrange("b n (qkv h d) -> qkv b h n d", qkv=3, h=heads)

    def forward(self, x, pos):
        q, k, v = self.split_heads(self.to_qkv(x))
        q, k = map(partial(apply_rotary_pos_emb, pos), (q, k))
        q = q * self.scale
        sim = einsum(q, k, "b h i d, b h j d -> b h i j"){again}
        return sim.softmax(dim=-1)
"""


def test_rotary_embeddings_leave_the_scale_and_a_second_factor_is_seen():
    # Cosines and sines rotate the features; the sum of the two rotated terms keeps q's scale,
    # and `map(partial(f, pos), (q, k))` is f applied to each.
    twice = only_softmax(analyse(ROTARY.format(again=" * self.scale"))[0]).input.scores
    assert twice.scale_verdict().kind == ScaleKind.SCALED_TWICE
    assert twice.scale.text() == "1 / dim_head"
    once = only_softmax(analyse(ROTARY.format(again=""))[0]).input.scores
    assert once.scale.text() == "1 / dim_head ** 0.5"
    assert once.scale_verdict().kind != ScaleKind.SCALED_TWICE
