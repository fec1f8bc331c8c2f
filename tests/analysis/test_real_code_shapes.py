"""Shapes and facts of attention code as people write it: a layer's single output feature,
views of unknown rank, caller sizes, sums of score products, pairwise products, sizes named
by the statement that reads them."""

from __future__ import annotations

from helpers import analyse, dims_text


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


def test_a_size_named_twice_is_no_evidence_of_a_reread():
    # The caller's `num_heads * bsz` and this scope's `self.num_heads` are one size under two
    # names: the products meet only by cancelling. One side alone may add a name (a split).
    from attnlint.analysis.shapes import _renamed_sizes
    from attnlint.analysis.symbolic import Sym

    bsz, t, heads, own_heads, dim = (Sym.atom(n) for n in ("bsz", "t", "num_heads", "self.num_heads", "dim"))
    assert _renamed_sizes((heads * bsz, t, dim / heads), (bsz, own_heads, t, dim / own_heads))
    assert not _renamed_sizes((bsz, t, dim), (bsz, own_heads, t, dim / own_heads))
