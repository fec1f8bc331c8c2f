"""Symbolic shapes: sizes named by the code, through views, transposes, splits, einsum and einops."""

from __future__ import annotations

import pytest

from attnlint.analysis.values import BATCH, FEATURE, HEADS, KEYS, QUERIES

from helpers import analyse, dims_text, env, function, only_softmax

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


def test_one_comment_gives_the_shapes_of_several_tensors():
    # Groups separated by `,` or `;`; names joined by `/` share a shape.
    analysis, _ = analyse(
        """
        def attend(query, key, value, mask):
            # query: (B, Lq, d), key/value: (B, Lk, d); mask: (B, Lk)
            return query
        """
    )
    assert dims_text(env(analysis, "attend", "query")) == ("B", "Lq", "d")
    assert dims_text(env(analysis, "attend", "key")) == ("B", "Lk", "d")
    assert dims_text(env(analysis, "attend", "value")) == ("B", "Lk", "d")
    assert dims_text(env(analysis, "attend", "mask")) == ("B", "Lk")


def test_prose_after_a_shape_comment_names_nothing():
    # The first text that is not `names: (shape)` ends the groups: `key` is not described.
    analysis, _ = analyse(
        """
        def attend(query, key):
            # query: (B, Lq, d), and the key is whatever the caller has: (B, Lk, d)
            return query
        """
    )
    assert dims_text(env(analysis, "attend", "query")) == ("B", "Lq", "d")
    assert env(analysis, "attend", "key").rank is None


def test_a_later_straight_line_statement_gives_a_parameter_its_rank():
    # `b, n, d = x.shape` runs on every call that returns: x is 3-D from the first line.
    analysis, _ = analyse(
        """
        def f(x, y, z, w):
            first = x
            assert y.dim() == 4
            b, n, d = x.shape
            return first
        """
    )
    fn = function(analysis, "f")
    assert fn.params["x"].rank == 3
    assert fn.params["y"].rank == 4


def test_a_later_batched_product_gives_a_once_bound_local_its_rank():
    # `torch.bmm(attn, h)` needs 3-D operands: h (bound once) and attn are 3-D where bound.
    analysis, _ = analyse(
        """
        import torch

        def f(self, x):
            h, _ = self.rnn(x)
            g = h
            attn = self.score(h)
            return torch.bmm(attn, h)
        """
    )
    fn = function(analysis, "f")
    # A top-level `return` computes its value on the way out: it shows the rank too.
    assert fn.final_env["h"].rank == 3

    analysis, _ = analyse(
        """
        import torch

        def f(self, x):
            h, _ = self.rnn(x)
            attn = self.score(h)
            pooled = torch.bmm(attn, h)
            return pooled
        """
    )
    fn = function(analysis, "f")
    assert fn.final_env["h"].rank == 3
    assert fn.final_env["attn"].rank == 3


@pytest.mark.parametrize(
    "body",
    [
        # a product that runs on one branch of an expression only
        "h = x[0]\n    out = torch.bmm(h, h) if x.dim() == 4 else h\n    return out",
        # a name bound twice: the product describes the second value
        "h = x[0]\n    h = h[None]\n    out = torch.bmm(h, h)\n    return out",
        # a rank changed in place
        "h = x[0]\n    h.unsqueeze_(0)\n    out = torch.bmm(h, h)\n    return out",
    ],
)
def test_a_product_that_may_not_run_or_describes_another_value_gives_a_local_no_rank(body):
    analysis, _ = analyse(f"import torch\n\ndef f(x):\n    {body}\n")
    assert function(analysis, "f").final_env["h"].rank is None


@pytest.mark.parametrize(
    "body",
    [
        # after an early return
        "if x.dim() == 2:\n        return x\n    b, n, d = x.shape\n    return x",
        # inside a branch
        "if x.dim() == 3:\n        b, n, d = x.shape\n    return x",
        # after x is rebound
        "x = x[0]\n    b, n, d = x.shape\n    return x",
        # a starred unpack fixes no rank
        "b, *rest = x.shape\n    return x",
    ],
)
def test_a_statement_that_may_not_run_or_describes_another_value_gives_no_rank(body):
    analysis, _ = analyse(f"def f(x):\n    {body}\n")
    assert function(analysis, "f").params["x"].rank is None


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


def test_a_merge_with_heads_from_the_config_and_from_a_shape_is_not_shown_to_move_axes():
    # BLOOM: the heads axis is read off the tensor (shape[2]), the merge uses the config's count;
    # equal at run time, but nothing shows it, so the carried query axis is not shown to move.
    analysis, _ = analyse(
        """
        import torch.nn as nn

        class Attention(nn.Module):
            def __init__(self, hidden_size, n_head):
                super().__init__()
                self.num_heads = n_head
                self.head_dim = hidden_size // n_head

            def forward(self, query_layer):
                batch_size, q_length, _, _ = query_layer.shape
                merged = query_layer.transpose(1, 2).reshape(batch_size * self.num_heads, q_length, self.head_dim)
                return merged
        """
    )
    (merged,) = [v for v in analysis.view_sites if len(v.target_dims) == 3 and v.target_dims[0].text() != "batch_size"]
    assert not merged.transposes_by_view

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


def test_a_size_named_after_qkv_is_a_number_and_unknown_factors_do_not_vanish():
    # `qkv_dim` is a size, not the fused projection; a product with an unknown factor is not
    # the known factor alone (it once made the heads axis 1 and the head dim the model width).
    analysis, _ = analyse(
        """
        import torch.nn as nn

        class Attention(nn.Module):
            def __init__(self, hidden_dim, num_heads=4):
                super().__init__()
                self.num_heads = num_heads
                self.qkv_dim = hidden_dim // num_heads
                self.qkv_proj = nn.Linear(hidden_dim, 3 * num_heads * self.qkv_dim)

            def split(self, x):
                b, t, _ = x.shape
                return self.qkv_proj(x).reshape(b, t, self.num_heads, 3 * self.qkv_dim)
        """
    )
    assert env(analysis, "__init__", "self.qkv_dim").role is None
    (result,) = function(analysis, "split").returns
    assert dims_text(result) == ("b", "t", "num_heads", "3 * hidden_dim / num_heads")


def test_a_rank_shown_later_comes_with_axes_whose_sizes_reads_name():
    # `n_mem = memory.size(1)` names axis 1 of a memory that a later bmm shows 3-D.
    analysis, _ = analyse(
        """
        import torch

        def f(weights, memory):
            n_mem = memory.size(1)
            return torch.bmm(weights, memory)
        """
    )
    memory = env(analysis, "f", "memory")
    assert memory.rank == 3
    assert dims_text(memory)[1] == "n_mem"


def test_a_spread_shape_in_a_tuple_display_names_the_axes_left_for_it():
    # `b, n, _, h = *x.shape, self.heads`: three targets are x's axes, h is the head count.
    analysis, _ = analyse(
        """
        def f(self, x):
            b, n, _, h = *x.shape, self.heads
            return x
        """
    )
    x = env(analysis, "f", "x")
    assert x.rank == 3
    assert dims_text(x)[:2] == ("b", "n")


def test_heads_folded_into_another_axis_keep_their_count():
    analysis, _ = analyse(
        """
        import torch
        from einops import rearrange

        def f(x, heads, num_heads):
            b, n, _ = x.shape
            folded = rearrange(x, "b n (h d) -> (b h) n d", h=heads)
            viewed = x.reshape(b * num_heads, n, -1)
            plain = x.reshape(b * n, -1)
            return folded, viewed, plain
        """
    )
    folded, viewed, plain = (env(analysis, "f", name) for name in ("folded", "viewed", "plain"))
    assert folded.shape[0].folded_heads.text() == "heads" and folded.shape[1].folded_heads is None
    assert viewed.shape[0].folded_heads.text() == "num_heads"
    assert plain.shape[0].folded_heads is None  # batch times tokens: no heads


def test_one_query_against_every_key_is_one_axis_of_scores():
    # A course notebook's first step: one token's query (an index of the embedded sentence, one
    # axis) against every key. The vector's axis is contracted away: the scores have one axis,
    # the keys, and a softmax over dim=0 normalises over them.
    analysis, _ = analyse(
        """
        import torch
        import torch.nn as nn

        sentence = "Life is short eat dessert first"
        dc = {s: i for i, s in enumerate(sorted(sentence.split()))}
        sentence_int = torch.tensor([dc[s] for s in sentence.split()])
        embedded = nn.Embedding(50_000, 3)(sentence_int).detach()
        W_query = nn.Parameter(torch.rand(3, 2))
        W_key = nn.Parameter(torch.rand(3, 2))
        x_2 = embedded[1]
        query_2 = x_2 @ W_query
        keys = embedded @ W_key
        omega_2 = query_2 @ keys.T
        """
    )
    top = function(analysis, "<module>")
    assert top.final_env["sentence_int"].rank == 1  # ids looked up in a vocabulary
    assert top.final_env["embedded"].rank == 2  # one vector per id
    assert top.final_env["x_2"].rank == 1
    assert top.final_env["query_2"].rank == 1 and top.final_env["keys"].rank == 2
    assert top.final_env["omega_2"].rank == 1


def test_a_conv1d_query_or_key_projection_lays_features_before_positions():
    analysis, _ = analyse(
        """
        import torch
        import torch.nn as nn

        class OffsetAttention(nn.Module):
            def __init__(self, c):
                super().__init__()
                self.q_conv = nn.Conv1d(c, c // 4, 1, bias=False)
                self.k_conv = nn.Conv1d(c, c // 4, 1, bias=False)
                self.trans_conv = nn.Conv1d(c, c, 1)

            def forward(self, x):
                x_q = self.q_conv(x).permute(0, 2, 1)
                x_k = self.k_conv(x)
                other = self.trans_conv(x)
                energy = torch.bmm(x_q, x_k)
                return energy, other
        """
    )
    x_q, x_k = env(analysis, "forward", "x_q"), env(analysis, "forward", "x_k")
    assert not x_q.feature_transposed and x_k.feature_transposed  # x_k is Kᵀ already
    assert env(analysis, "forward", "energy").scores is not None
    # A conv that no name marks as queries or keys is no projection of them.
    assert not env(analysis, "forward", "other").feature_transposed


def test_a_cat_keeps_what_either_part_shows_of_the_other_axes():
    analysis, _ = analyse(
        """
        import torch

        def f(hidden, encoder_outputs):
            # hidden = [batch size, dec hid dim]
            # encoder_outputs = [src len, batch size, enc hid dim * 2]
            src_len = encoder_outputs.shape[0]
            hidden = hidden.unsqueeze(0).repeat(src_len, 1, 1)
            both = torch.cat((hidden, encoder_outputs), dim=2)
            return both
        """
    )
    both = env(analysis, "f", "both")
    # The repeated decoder state says nothing of what its axes hold; the encoder outputs do, and
    # a cat needs them equal.
    assert [axis.role for axis in both.shape[:2]] == ["tokens", BATCH]


def test_torch_chunk_and_split_as_functions_are_the_methods_on_their_first_argument():
    analysis, _ = analyse(
        """
        import torch
        import torch.nn as nn

        class Heads(nn.Module):
            def __init__(self, d, h):
                super().__init__()
                self.h = h
                self.q = nn.Linear(d, d)

            def forward(self, x):
                b, n, d = x.shape
                parts = torch.chunk(self.q(x), self.h, dim=2)
                stacked = torch.cat(parts, dim=0)
                first, second = torch.split(x, d // 2, -1)
                return stacked, first
        """
    )
    parts = env(analysis, "forward", "parts")
    assert parts.kind == "tuple" and parts.each is not None and parts.each.rank == 3
    # The projection's scale state survives the split and the concatenation.
    assert env(analysis, "forward", "stacked").scaled is False
    assert env(analysis, "forward", "first").rank == 3
