"""A name bound on some paths only holds, where it is read, what those paths bound; scores whose
batch axes a view splits or merges (fairseq's per-batch masking) stay the product's scores."""

from __future__ import annotations

from attnlint.analysis.scores import ScaleKind, scale_verdict
from attnlint.analysis.values import KEYS, QUERIES

from helpers import analyse, env, only_softmax

MASK_HELPER = """
import torch

def mask_logits(logits, pad_mask=None, future_mask=None):
    if pad_mask is not None:
        masked = logits.masked_fill(pad_mask[:, None, None, :] == 0, float("-inf"))
    if future_mask is not None:
        masked = logits.masked_fill(future_mask == 0, float("-inf"))
    return masked

def attend(x, pad_mask, future_mask):
    b, n, _ = x.shape
    q = x.view(b, n, 8, 64).transpose(1, 2)
    k = x.view(b, n, 8, 64).transpose(1, 2)
    s = torch.matmul(q, k.transpose(-2, -1)) / 8
    s = mask_logits(s, pad_mask, future_mask)
    w = s.softmax(dim=-1)
    out = w @ k
    return out
"""


def test_a_name_bound_on_every_branch_but_one_holds_what_the_branches_bound():
    analysis, _ = analyse(MASK_HELPER)
    out = env(analysis, "attend", "out")
    assert out.rank == 4
    assert [a.role for a in env(analysis, "attend", "s").shape][-2:] == [QUERIES, KEYS]
    assert len(only_softmax(analysis).input.fills) == 2  # either branch's fill may reach it


def test_a_name_bound_in_a_loop_holds_the_loop_value_after_it():
    analysis, _ = analyse(
        """
        import torch

        def f(x, layers):
            for layer in layers:
                h = x.view(2, 3, 4)
            return h
        """
    )
    assert env(analysis, "f", "h").rank == 3


FAIRSEQ = """
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

class SelfAttention(nn.Module):
    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.scaling = self.head_dim ** -0.5
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.k_proj = nn.Linear(embed_dim, embed_dim)

    def forward(self, query, key_padding_mask=None):
        tgt_len, bsz, embed_dim = query.size()
        q = self.q_proj(query){q_scale}
        k = self.k_proj(query)
        q = q.contiguous().view(tgt_len, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        k = k.contiguous().view(-1, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        src_len = k.size(1)
        attn_weights = torch.bmm(q, k.transpose(1, 2)){s_scale}
        if key_padding_mask is not None:
            attn_weights = attn_weights.view(bsz, self.num_heads, tgt_len, src_len)
            attn_weights = attn_weights.masked_fill(key_padding_mask[:, None, None, :], float("-inf"))
            attn_weights = attn_weights.view(bsz * self.num_heads, tgt_len, src_len)
        return F.softmax(attn_weights, dim=-1)
"""


def _verdict(q_scale, s_scale):
    analysis, _ = analyse(FAIRSEQ.format(q_scale=q_scale, s_scale=s_scale))
    site = only_softmax(analysis)
    assert site.input.scores is not None  # the views around the fill keep the product's facts
    assert len(site.input.fills) == 1
    return scale_verdict(site.input.scores).kind


def test_scores_viewed_per_batch_and_back_keep_their_scale():
    assert _verdict(" * self.scaling", "") == ScaleKind.CORRECT
    assert _verdict("", "") == ScaleKind.MISSING
    assert _verdict(" * self.scaling", " / math.sqrt(self.head_dim)") == ScaleKind.NO_ROOT


def test_a_view_that_moves_the_queries_is_not_a_regrouping():
    analysis, _ = analyse(
        """
        import torch

        def f(q, k):
            # q, k: (b, n, d)
            b, n, d = q.shape
            s = torch.bmm(q, k.transpose(1, 2))
            s = s.view(n, b, n)
            return s.softmax(-1)
        """
    )
    assert only_softmax(analysis).input.scores is None


def test_lengths_shortened_by_a_front_end_are_still_lengths():
    analysis, _ = analyse(
        """
        import torch

        def front(x, lengths):
            return x[:, ::4], ((lengths - 1) // 2 - 1) // 2

        def encode(feats, feat_lens, offsets):
            x, lens = front(feats, feat_lens)
            valid = torch.arange(x.size(1))[None, :] < lens[:, None]
            longer = feat_lens + 1
            doubled = 2 * feat_lens
            moved = feat_lens - offsets
            return valid
        """
    )
    lens = env(analysis, "encode", "lens")
    assert lens.lengths and not lens.positive_lengths
    assert env(analysis, "encode", "valid").mask.convention == "attend"
    assert env(analysis, "encode", "longer").lengths and env(analysis, "encode", "doubled").lengths
    assert not env(analysis, "encode", "moved").lengths  # lengths minus a tensor: not lengths


def test_a_mask_handed_on_through_layers_is_reported_where_it_is_built():
    source = """
    import torch
    from torch import nn

    class Layer(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.attn = nn.MultiheadAttention(d, 4, batch_first=True)
        def forward(self, x, pad):
            return self.attn(x, x, x, key_padding_mask=pad)[0]

    class Block(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.layer = Layer(d)
        def forward(self, x, pad):
            return self.layer(x, pad)

    class Model(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.block = Block(d)
        def forward(self, x, lengths):
            keep = torch.arange(x.size(1))[None, :] < lengths[:, None]
            return self.block(x, keep)
    """
    analysis, module = analyse(source)
    (use,) = [u for f in analysis.functions for u in f.mask_uses]
    where = analysis.mask_passed_by_caller(use)
    assert module.code_for_node(where) == "torch.arange(x.size(1))[None, :] < lengths[:, None]"


def test_a_tensor_of_a_comprehension_of_numbers_has_one_axis():
    analysis, _ = analyse(
        """
        import torch

        chars = ["<pad>", "a", "b"]
        stoi = {c: i for i, c in enumerate(chars)}

        def encode(text):
            return torch.tensor([stoi[c] for c in text])

        ids = encode("ab")
        lengths = torch.tensor([len(s) for s in ["a", "bc"]])
        batch = torch.stack([ids, ids])
        """
    )
    assert env(analysis, "<module>", "ids").rank == 1
    assert env(analysis, "<module>", "lengths").rank == 1
    assert env(analysis, "<module>", "batch").rank == 2


def test_one_padding_mask_laid_along_queries_and_keys_masks_padded_query_rows():
    analysis, _ = analyse(
        """
        import torch

        from einops import rearrange

        def pair_mask(lengths, T):
            valid = torch.arange(T)[None, :] < lengths[:, None]
            both = valid.unsqueeze(1) & valid.unsqueeze(2)
            keys_only = valid.unsqueeze(1) & valid.unsqueeze(1)
            indexed = valid[:, None, :] & valid[:, :, None]
            product = valid[:, None, :].float() * valid[:, :, None].float()
            einops_style = rearrange(valid, "b j -> b 1 j") & rearrange(valid, "b i -> b i 1")
            return both
        """
    )
    assert env(analysis, "pair_mask", "both").mask.masks_padded_queries
    assert env(analysis, "pair_mask", "indexed").mask.masks_padded_queries
    assert env(analysis, "pair_mask", "product").mask.masks_padded_queries
    assert env(analysis, "pair_mask", "einops_style").mask.masks_padded_queries
    assert not env(analysis, "pair_mask", "keys_only").mask.masks_padded_queries


def test_a_parameter_read_only_for_one_config_class_fields_is_that_config():
    analysis, _ = analyse(
        """
        from dataclasses import dataclass
        from torch import nn

        @dataclass
        class GPTConfig:
            n_embd: int = 768
            n_head: int = 12
            head_size: int = 768 // 12

        @dataclass
        class TrainConfig:
            lr: float = 3e-4
            n_embd: int = 512

        class Head(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.key = nn.Linear(config.n_embd, config.head_size)
                self.width = config.n_embd

        class Other(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.width = config.n_embd  # one field: both classes declare it
        """
    )
    head = analysis.classes["Head"]
    assert head.attrs["width"].sym.text() == "config.n_embd"
    assert "GPTConfig.n_embd" in {a.key for a in head.attrs["width"].sym.atoms()}
    other = analysis.classes["Other"]
    assert "GPTConfig.n_embd" not in {a.key for a in other.attrs["width"].sym.atoms()}


def test_a_norm_layer_default_builds_that_module_through_partials_and_callers():
    analysis, _ = analyse(
        """
        from functools import partial
        import torch
        from torch import nn

        class Attention(nn.Module):
            def __init__(self, dim, heads, qk_norm=False, norm_layer=nn.LayerNorm):
                super().__init__()
                self.q_norm = norm_layer(dim // heads) if qk_norm else nn.Identity()
                self.norm = norm_layer(dim)

        class Block(nn.Module):
            def __init__(self, dim, heads, norm_layer=nn.LayerNorm):
                super().__init__()
                self.attn = Attention(dim, heads, norm_layer=norm_layer)

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                norm_layer = partial(nn.LayerNorm, eps=1e-6)
                self.block = Block(64, 4, norm_layer)
        """
    )
    attrs = analysis.classes["Attention"].attrs
    assert attrs["norm"].kind == "module" and attrs["norm"].module_type == "LayerNorm"
    assert attrs["q_norm"].kind == "module"


def test_ones_written_per_sequence_into_a_block_of_zeros_mask_padded_queries():
    analysis, _ = analyse(
        """
        import torch

        def block(lengths_x, lengths_mem, B, X, M):
            mask = torch.zeros(B, X, M)
            for i in range(B):
                mask[i, :lengths_x[i], :lengths_mem[i]].fill_(1)
            keys_only = torch.zeros(B, M)
            for i in range(B):
                keys_only[i, :lengths_mem[i]] = 1
            return mask
        """
    )
    mask = env(analysis, "block", "mask").mask
    assert mask.masks_padded_queries and mask.convention == "attend"
    assert env(analysis, "block", "keys_only").mask is None  # what a 2-D store means is not shown


def test_self_loops_added_to_a_0_1_adjacency_keep_it_a_mask():
    analysis, _ = analyse(
        """
        import torch

        def bias_of(adj):
            n = adj.size(-1)
            eye = torch.eye(n, dtype=adj.dtype)
            loops = ((adj > 0).float() + eye).clamp(max=1)
            return loops
        """
    )
    eye = env(analysis, "bias_of", "eye")
    assert eye.rank == 2 and eye.constructor.function == "torch.eye"
    loops = env(analysis, "bias_of", "loops").mask
    assert loops is not None and loops.origin == "comparison" and loops.can_mask_whole_row is False


def test_a_shared_softmax_helper_sees_each_callers_product():
    analysis, module = analyse(
        """
        import torch

        def normalise(X, lens=None):
            return torch.softmax(X, dim=-1)

        def dot(q, k):
            scores = torch.bmm(q, k.transpose(1, 2))
            return normalise(scores)

        def scaled(q, k):
            scores = torch.bmm(q, k.transpose(1, 2)) / q.size(-1) ** 0.5
            return normalise(scores)
        """
    )
    seen = sorted(
        (analysis.function_of(s) is None, s.input.scores.scaled) for s in analysis.scores_through_helpers
    )
    # One site per caller's product, outside every function's own sites: unscaled in `dot`,
    # scaled in `scaled`.
    assert seen == [(True, False), (True, True)]
    # The helper's own reading, joined over both callers, knows no product.
    assert all(s.input.scores is None for s in analysis.softmax_sites)


def test_a_fixed_block_of_ones_is_an_image_mask_not_per_sequence_lengths():
    analysis, _ = analyse(
        """
        import torch

        def pixels():
            pixel_mask = torch.zeros(2, 800, 1066, dtype=torch.long)
            pixel_mask[1, :600, :800] = 1
            return pixel_mask
        """
    )
    assert env(analysis, "pixels", "pixel_mask").mask is None  # which axes it masks is not shown
