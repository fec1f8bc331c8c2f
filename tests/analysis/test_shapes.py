"""Symbolic shapes: sizes named by the code, through views, transposes, splits, einsum and einops."""

from __future__ import annotations

from attnlint.analysis.values import BATCH, FEATURE, HEADS, KEYS, QUERIES

from helpers import analyse, dims_text, env, only_softmax

NANOGPT = """
import math
import torch
import torch.nn as nn

class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        return att.softmax(dim=-1)
"""


def test_sizes_from_unpacking_flow_through_split_view_and_transpose():
    analysis, _ = analyse(NANOGPT)
    q = env(analysis, "forward", "q")
    # `C` is the Linear's in_features (`n_embd`) from the moment x goes into it.
    assert dims_text(q) == ("B", "n_head", "T", "n_embd / n_head")
    assert q.rank == 4


def test_score_axes_and_head_dim():
    analysis, _ = analyse(NANOGPT)
    site = only_softmax(analysis)
    assert site.axis_names() == ("batch", "heads", "queries", "keys")
    assert site.input.scores.head_dim.text() == "n_embd / n_head"
    assert site.key_axis() == -1


def test_view_with_minus_one_is_inferred_from_the_input_sizes():
    analysis, _ = analyse(
        """
        def f(x, heads):
            b, n, d = x.shape
            return x.reshape(b, n, heads, -1)
        """
    )
    (view,) = analysis.view_sites
    assert [d.text() for d in view.target_dims] == ["b", "n", "heads", "d / heads"]
    assert not view.transposes_by_view


def test_einsum_letters_name_the_axes():
    analysis, _ = analyse(
        """
        import torch

        def f(q, k):
            s = torch.einsum("bqhd,bkhd->bqhk", q, k)
            return s.softmax(dim=1)
        """
    )
    site = only_softmax(analysis)
    # Axis 1 holds the queries here, not the heads.
    assert site.axis_names() == ("batch", "queries", "heads", "keys")
    assert site.key_axis() == -1
    roles = site.input.axis_roles()
    assert roles[1] == QUERIES and roles[3] == KEYS and roles[2] == HEADS and roles[0] == BATCH


def test_einops_rearrange_and_space_separated_einsum():
    analysis, _ = analyse(
        """
        import torch
        from torch import nn
        from einops import rearrange, einsum

        class Attention(nn.Module):
            def __init__(self, dim, heads=8, dim_head=64):
                super().__init__()
                self.heads = heads
                self.to_qkv = nn.Linear(dim, dim_head * heads * 3, bias=False)

            def forward(self, x):
                b, n, _ = x.shape
                q, k, v = self.to_qkv(x).chunk(3, dim=-1)
                q, k, v = map(lambda t: rearrange(t, "b n (h d) -> b h n d", h=self.heads), (q, k, v))
                sim = einsum(q, k, "b h i d, b h j d -> b h i j")
                return sim.softmax(dim=-1)
        """
    )
    q = env(analysis, "forward", "q")
    assert dims_text(q) == ("b", "heads", "n", "dim_head")
    site = only_softmax(analysis)
    assert site.input.scores.head_dim.text() == "dim_head"
    assert site.axis_names() == ("batch", "heads", "queries", "keys")


def test_chunk_and_unbind_of_a_fused_projection():
    analysis, _ = analyse(
        """
        import torch.nn as nn

        class Attention(nn.Module):
            def __init__(self, dim, num_heads):
                super().__init__()
                self.num_heads = num_heads
                self.head_dim = dim // num_heads
                self.qkv = nn.Linear(dim, dim * 3)

            def forward(self, x):
                B, N, C = x.shape
                qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
                q, k, v = qkv.unbind(0)
                return q
        """
    )
    q = env(analysis, "forward", "q")
    assert dims_text(q) == ("B", "num_heads", "N", "dim / num_heads")


def test_shape_comments_name_sizes_and_roles():
    analysis, _ = analyse(
        """
        def f(encoder_outputs):
            # encoder_outputs = [src len, batch size, hid dim]
            return encoder_outputs
        """
    )
    value = env(analysis, "f", "encoder_outputs")
    assert dims_text(value) == ("src_len", "batch_size", "hid_dim")
    assert value.axis_roles() == ("tokens", BATCH, FEATURE)


def test_unknown_shape_stays_unknown():
    analysis, _ = analyse(
        """
        def f(x, shape):
            return x.view(shape)
        """
    )
    assert analysis.view_sites == []


def test_view_as_transpose():
    analysis, _ = analyse(
        """
        import torch.nn as nn

        class SelfAttention(nn.Module):
            def __init__(self, n_embd, n_head):
                super().__init__()
                self.n_head = n_head
                self.query = nn.Linear(n_embd, n_embd)

            def forward(self, x):
                B, T, C = x.size()
                q = self.query(x)
                wrong = q.view(B, self.n_head, T, C // self.n_head)
                right = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                merged = right.transpose(1, 2).reshape(B, T, C)
                return wrong, right, merged

        def image_tokens(x):
            B, C, H, W = x.shape
            return x.view(B, H * W, C), x.flatten(2).transpose(1, 2)
        """
    )
    verdicts = [(view.transposes_by_view, [d.text() for d in view.target_dims]) for view in analysis.view_sites]
    assert (True, ["B", "n_head", "T", "n_embd / n_head"]) in verdicts
    assert (False, ["B", "T", "n_head", "n_embd / n_head"]) in verdicts
    assert (False, ["B", "T", "n_embd"]) in verdicts
    assert (True, ["B", "H * W", "C"]) in verdicts
    (swap,) = [v for v in analysis.view_sites if v.transposes_by_view and len(v.target_dims) == 4]
    assert swap.swapped_runs() == [((1, 3), (1, 4))]


def test_projection_width_is_known_when_the_rank_is_not():
    analysis, _ = analyse(
        """
        import torch.nn as nn
        from einops import rearrange

        class Attention(nn.Module):
            def __init__(self, dim, heads, dim_head):
                super().__init__()
                self.heads = heads
                self.to_q = nn.Linear(dim, heads * dim_head)

            def forward(self, x):
                return rearrange(self.to_q(x), "b n (h d) -> b h n d", h=self.heads)
        """
    )
    (result,) = [f for f in analysis.functions if f.name == "forward"][0].returns
    assert result.size_of(-1).text() == "dim_head"


def test_single_output_feature_of_a_layer_survives_elementwise_ops_not_squeeze():
    from attnlint.analysis.softmax import singleton_axis

    analysis, _ = analyse(
        """
        import torch
        import torch.nn as nn

        class Pool(nn.Module):
            def __init__(self, width):
                super().__init__()
                self.logit = nn.Linear(width, 1)

            def forward(self, x):
                a = torch.softmax(torch.tanh(self.logit(x)), dim=-1)
                b = torch.softmax(self.logit(x).squeeze(-1), dim=-1)
                B, T, C = x.shape
                c = torch.softmax(self.logit(x), dim=2)
                d = torch.softmax(self.logit(x), dim=1)
                return a, b, c, d
        """
    )
    found = [singleton_axis(site) for site in analysis.softmax_sites]
    assert found == [-1, None, -1, None]


def test_a_view_of_unknown_rank_knows_its_last_size_from_the_tail_of_its_target():
    analysis, _ = analyse(
        """
        import torch.nn as nn

        class Heads(nn.Module):
            def __init__(self, heads, head_size):
                super().__init__()
                self.heads = heads
                self.head_size = head_size

            def forward(self, x):
                a = x.view(x.size()[:-1] + (self.heads, self.head_size))
                shape = (*x.shape[:-1], -1, self.head_size)
                b = x.view(shape)
                c = x.reshape(*x.shape[:2], self.heads, self.head_size)
                d = x.view(*x.shape[:2], self.heads, -1)
                return a, b, c, d
        """
    )
    forward = [f for f in analysis.functions if f.name == "forward"][0]
    sizes = [forward.final_env[n].size_of(-1) for n in "abcd"]
    assert [s.text() if s is not None else None for s in sizes] == ["head_size"] * 3 + [None]


def test_a_product_of_activations_with_the_second_transposed_is_pairwise():
    analysis, _ = analyse(
        """
        import torch

        def f(a, b):
            s = torch.bmm(a, b.transpose(1, 2))
            t = s.transpose(1, 2)
            u = s.masked_fill(s > 0, 0.0)
            return s, t, u
        """
    )
    env = [f for f in analysis.functions if f.name == "f"][0].final_env
    assert env["s"].pairwise and env["u"].pairwise and not env["t"].pairwise


def test_cat_with_one_part_of_unknown_shape_keeps_the_rank_and_the_other_axes():
    analysis, _ = analyse(
        """
        import torch

        def f(hidden, enc):
            b, d = hidden.shape
            n = enc.shape[1]
            h = hidden.unsqueeze(1).repeat(1, n, 1)
            return torch.cat((h, enc), dim=2)
        """
    )
    (result,) = [f for f in analysis.functions if f.name == "f"][0].returns
    assert result.rank == 3
    assert dims_text(result)[:2] == ("b", "n") and dims_text(result)[2] is None


def test_a_view_that_swaps_the_last_two_sizes_is_read_as_the_transpose_it_means():
    analysis, _ = analyse(
        """
        import torch.nn as nn

        class A(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.key = nn.Linear(d, d)

            def forward(self, x):
                B, T, D = x.shape
                a = self.key(x).view(B, D, T)
                b = self.key(x).view(B, T, D)
                return a, b
        """
    )
    final = [f for f in analysis.functions if f.name == "forward"][0].final_env
    assert final["a"].feature_transposed and not final["b"].feature_transposed
    assert len([s for f in analysis.functions for s in f.view_sites]) >= 1  # ATN106 still sees it


def test_a_size_read_into_a_name_is_called_by_that_name():
    analysis, _ = analyse(
        """
        def f(x):
            src_len = x.shape[1]
            n = x.size(2)
            return src_len, n
        """
    )
    final = [f for f in analysis.functions if f.name == "f"][0].final_env
    assert final["src_len"].sym.text() == "src_len" and final["n"].sym.text() == "n"
