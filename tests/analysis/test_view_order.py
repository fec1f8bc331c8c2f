"""Views in memory order and views that mix axes: running products, quotients, padded inputs,
and the interprocedural facts the sizes come through (helpers' results, `super()`, None defaults)."""

from __future__ import annotations

from attnlint.analysis.symbolic import Sym
from attnlint.analysis.view_order import mixes_memory

from helpers import analyse, dims_text, env, function

b, n, h, d, c, N, L = (Sym.atom(name) for name in ("b", "n", "h", "d", "c", "N", "L"))


def k(value):
    return Sym.const(value)


def test_splits_and_merges_of_adjacent_axes_keep_memory_order():
    assert mixes_memory((b, n, h * d), (b, n, h, d)) is False
    assert mixes_memory((b, h, n, d), (b * h, n, d)) is False
    assert mixes_memory((b * h, n, d), (b, h, n, d)) is False
    assert mixes_memory((b, n, h, d), (b, n, h * d)) is False
    assert mixes_memory((b, k(1), n), (b, n, k(1))) is False  # a size of 1 goes anywhere


def test_an_axis_moved_across_another_mixes_memory():
    assert mixes_memory((b, n, h * d), (b, h, n, d)) is True
    assert mixes_memory((b, h, n, d), (b, n, h * d)) is True
    assert mixes_memory((b, n, d), (n, b, d)) is True


def test_a_factor_of_the_last_axis_merged_into_the_batch_mixes_memory():
    # (B, L, H*d) viewed as (B*H, L, d), with the sizes a smoke test gives: 300 = 5 * 60.
    assert mixes_memory((b, L, k(300)), (k(5) * b, L, k(60))) is True
    assert mixes_memory((k(5) * b, L, k(60)), (b, L, k(300))) is True
    # ... and symbolically, with the head width written as a quotient.
    assert mixes_memory((b * h, n, c / h), (b, n, c)) is True
    assert mixes_memory((b, n, c), (b * h, n, c / h)) is True


def test_a_written_division_splits_a_size():
    assert mixes_memory((b, n, c), (b, n, h, c / h)) is False
    assert mixes_memory((b, n, c), (b, h, n, c / h)) is True
    assert mixes_memory((b, N, c), (k(4) * b, N / k(4), c)) is False  # windows into the batch


def test_what_sizes_cannot_show_stays_unknown_or_in_order():
    # Literals factor many ways: 512 = 8 * 64, so (512, 8) -> (8, 512) could be a regrouping.
    assert mixes_memory((k(512), k(8), k(3)), (k(8), k(512), k(3))) is False
    # Which of b or N a quotient splits is not said.
    assert mixes_memory((b, N, c), (b * N / k(4), k(4), c)) is None
    assert mixes_memory((b, None, c), (b, c, None)) is None
    # A square matrix swapped with itself: nothing to see.
    assert mixes_memory((b, h, n, n), (b, h, n, n)) is False


def test_a_view_of_a_padded_tensor_is_marked_as_a_reread_on_purpose():
    analysis, _ = analyse(
        """
        import torch
        import torch.nn.functional as F

        def skew(x):
            padded = F.pad(x, (1, 0))
            b, h, r, s = padded.shape
            return padded.reshape(b, h, s, r)[:, :, 1:]

        def plain(x):
            b, h, r, s = x.shape
            return x.reshape(b, h, s, r)
        """
    )
    verdicts = {name: function(analysis, name) for name in ("skew", "plain")}
    (skewed,) = verdicts["skew"].view_sites
    (swapped,) = verdicts["plain"].view_sites
    assert skewed.transposes_by_view and skewed.rereads_on_purpose
    assert swapped.transposes_by_view and not swapped.rereads_on_purpose


def test_a_helpers_result_comes_back_in_the_callers_sizes():
    analysis, _ = analyse(
        """
        import torch

        def attend(q, k, v):
            return torch.softmax(q @ k.transpose(-2, -1), dim=-1) @ v

        def run(x):
            b, t, _ = x.shape
            q = x.view(b, t, 4, 8).transpose(1, 2)
            out = attend(q, q, q)
            return out

        if __name__ == "__main__":
            run(torch.randn(2, 6, 32))
        """
    )
    # The caller's own sizes (4 heads of 8), not the helper's `v.shape[3]`.
    assert dims_text(env(analysis, "run", "out"))[1:] == ("4", "x.shape[1]", "8")


def test_super_calls_reach_the_base_method_with_the_callers_arguments():
    analysis, _ = analyse(
        """
        import torch
        import torch.nn as nn

        class Base(nn.Module):
            def forward(self, q, k):
                return q

        class Self(Base):
            def forward(self, x):
                return super().forward(x, x)

        if __name__ == "__main__":
            Self()(torch.randn(2, 5, 8))
        """
    )
    assert function(analysis, "forward", "Base").params["q"].rank == 3
    (result,) = function(analysis, "forward", "Self").returns
    assert result.rank == 3


def test_a_parameter_no_call_passes_takes_its_none_branch():
    analysis, _ = analyse(
        """
        import torch.nn as nn

        class Attention(nn.Module):
            def __init__(self, dim, heads=4, head_dim=None):
                super().__init__()
                if head_dim is None:
                    head_dim = dim // heads
                else:
                    head_dim = head_dim * 1
                self.head_dim = head_dim

        def build(width):
            return Attention(width, heads=8)
        """
    )
    # dim // heads (heads = 8 is the caller's example, not a fact), not the join of that with the
    # `head_dim * 1` of the path no call takes.
    assert analysis.classes["Attention"].attrs["head_dim"].sym.text() == "dim / heads"


def test_distinct_literal_sizes_listed_in_another_order_name_their_axes():
    from attnlint.analysis.view_order import swaps_literal_sizes

    assert swaps_literal_sizes((k(512), k(8), k(3)), (k(8), k(512), k(3)))
    assert swaps_literal_sizes((b, k(49), k(256)), (b, k(256), k(49)))
    assert not swaps_literal_sizes((k(2), k(4), k(4)), (k(2), k(4), k(4)))  # nothing moves
    assert not swaps_literal_sizes((k(4), k(4), k(5)), (k(4), k(5), k(4)))  # 4 twice: which one?
    assert not swaps_literal_sizes((b, n, k(8)), (n, b, k(8)))  # named sizes: mixes_memory's job
    assert not swaps_literal_sizes((k(6), k(2)), (k(3), k(4)))


def test_flatten_merges_the_named_axes_and_a_convolution_sets_the_channels():
    analysis, _ = analyse(
        """
        import torch.nn as nn

        class Pool(nn.Module):
            def __init__(self, slots, channels):
                super().__init__()
                self.score = nn.Conv2d(channels, slots, 3, padding=1)

            def forward(self, img):
                B, C, H, W = img.shape
                pixels = img.flatten(2)
                middle = img.flatten(1, 2)
                scores = self.score(img)
                return pixels, middle, scores
        """
    )
    assert dims_text(env(analysis, "forward", "pixels")) == ("B", "C", "H * W")
    assert dims_text(env(analysis, "forward", "middle")) == ("B", "C * H", "W")
    assert dims_text(env(analysis, "forward", "scores")) == ("B", "slots", None, None)


def test_a_view_teaches_the_one_size_its_input_lacks():
    analysis, _ = analyse(
        """
        def to_image(x, H, W):
            B, N, C = x.shape
            grid = x.view(B, H, W, C)
            return grid
        """
    )
    (view,) = function(analysis, "to_image").view_sites
    # N is H * W from here on: the view splits the token axis in memory order.
    assert [d.text() for d in view.input_dims] == ["B", "H * W", "C"]
    assert not view.transposes_by_view


def test_a_name_bound_again_is_not_a_reread_of_the_view():
    from attnlint.analysis.view_order import reread_later

    analysis, _ = analyse(
        """
        def f(y, attn):
            y = y.view(8, 512, 3)
            y, _ = attn(y, y, y)
            return y.view(512, 8, 3)

        def g(x):
            x = x.reshape(2, 4, 6, 5)
            x = x[:, :, 1:]
            return x.reshape(2, 4, 5, 5)

        def skew(padded):
            b, h, r, c = padded.shape
            return padded.reshape(b, h, c, r)[:, :, 1:]

        def swap(x):
            b, h, r, c = x.shape
            return x.reshape(b, h, c, r)[:, :, :]
        """
    )
    for name, expected in (("f", False), ("g", True), ("skew", True), ("swap", False)):
        facts = function(analysis, name)
        first = next(c for c in _calls(facts.node) if c.func.attr.value in ("view", "reshape"))
        assert reread_later(facts.node, first) is expected


def _calls(node):
    import libcst as cst

    found = []

    class Visitor(cst.CSTVisitor):
        def visit_Call(self, call):
            if isinstance(call.func, cst.Attribute):
                found.append(call)

    node.visit(Visitor())
    return found


def test_an_unnamed_size_is_still_a_size_of_its_tensor():
    analysis, _ = analyse(
        """
        def split(x, heads):
            b, n, _ = x.size()
            return x.view(b, n, heads, -1)
        """
    )
    (view,) = function(analysis, "split").view_sites
    assert [d.text() for d in view.input_dims] == ["b", "n", "x.shape[2]"]
    assert [d.text() for d in view.target_dims] == ["b", "n", "heads", "x.shape[2] / heads"]
    assert not view.transposes_by_view


def test_a_submodule_that_is_none_on_some_paths_is_the_module_where_it_is_called():
    analysis, _ = analyse(
        """
        import torch
        import torch.nn as nn

        class Attend(nn.Module):
            def __init__(self, p=0.0):
                super().__init__()
                self.drop = None
                if p > 0:
                    self.drop = nn.Dropout(p)

            def forward(self, w):
                w = w.softmax(-1)
                if self.drop is not None:
                    w = self.drop(w)
                return w

        def run(x):
            b, n, _ = x.shape
            return Attend(0.1)(x.view(b, n, n))
        """
    )
    assert analysis.classes["Attend"].attrs["drop"].module_type == "Dropout"


def test_a_size_unpacked_as_underscore_may_be_one_and_a_leading_quotient_is_not_read():
    from attnlint.analysis.shapes import _leading_quotient
    from attnlint.analysis.symbolic import Sym
    from attnlint.analysis.values import ViewSite
    from attnlint.analysis.shapes import regroupings

    b, n, d, h = (Sym.atom(f"t:{x}", x) for x in "bndh")
    unnamed = Sym.atom("t:x.shape[1]#unnamed", "x.shape[1]")
    named = Sym.atom("t:one", "one")

    def site(inp, out):
        return ViewSite(call=None, input_dims=inp, target_dims=out, regrouped=regroupings(inp, out))

    # (b, _, n, h*d) -> (b, n, h * _, d): a transpose unless `_` is 1, which it often is.
    assert not site((b, unnamed, n, h * d), (b, n, h * unnamed, d)).transposes_by_view
    assert site((b, named, n, h * d), (b, n, h * named, d)).transposes_by_view
    # A leading -1 solved as a quotient (16384 * b / channels) is not read; a product is.
    minus_one = Sym.const(-1)
    assert _leading_quotient((minus_one, Sym.const(1), h), (Sym.const(16384) * b / h, Sym.const(1), h))
    assert not _leading_quotient((minus_one, n, d), (b * h, n, d))
    assert not _leading_quotient((b, n, minus_one), (b, n, d / h))


def test_a_target_written_with_another_tensors_sizes_is_not_read():
    from attnlint.analysis.shapes import regroupings
    from attnlint.analysis.symbolic import Sym
    from attnlint.analysis.values import ViewSite

    qb, qh, sq, sk = (Sym.atom(f"t:q.shape[{i}]#{i}", f"q.shape[{i}]") for i in range(4))
    vb, vh = (Sym.atom(f"t:v.shape[{i}]#{i + 4}", f"v.shape[{i}]") for i in range(2))
    inp, out = (qb, qh, sq, sk), (vb * vh, sq, qb * qh * sk / (vb * vh))
    # ChatGLM: probs (b, np, sq, sk) viewed as (v.size(1) * v.size(2), sq, -1); v's b and np are
    # q's at run time, which nothing here shows.
    assert not ViewSite(call=None, input_dims=inp, target_dims=out, regrouped=regroupings(inp, out)).transposes_by_view


def test_one_unknown_input_size_is_solved_from_the_element_count():
    from attnlint.analysis.shapes import _solve_one_unknown
    from attnlint.analysis.symbolic import Sym

    b, n, h, d = (Sym.atom(x, x) for x in "bnhd")
    solved = _solve_one_unknown((None, h, n, d), (b, n, h * d))
    assert solved == (b, h, n, d)
    # A quotient would rest on a divisibility the code does not show; a -1 leaves nothing to solve.
    assert _solve_one_unknown((None, h, n, d), (b, n, d)) == (None, h, n, d)
    assert _solve_one_unknown((None, h, n, d), (b, Sym.const(-1), h * d)) == (None, h, n, d)


def test_a_view_with_one_axis_of_unknown_size_is_read_with_that_axis_as_a_size_of_its_own():
    # Two callers: a layer passing a tensor of unknown rank and a smoke test passing (2, 7, 128).
    # The function's own reading does not know the tokens' number, but the `-1` takes it
    # whatever it is: (b, h, n, d_k) -> (b, n, h * d_k), heads before tokens in memory.
    analysis, _ = analyse(
        """
        import torch
        import torch.nn as nn

        class Heads(nn.Module):
            def __init__(self, h, d_model):
                super().__init__()
                self.h, self.d_k = h, d_model // h
                self.proj = nn.Linear(d_model, d_model)

            def forward(self, x):
                b = x.size(0)
                y = self.proj(x).view(b, -1, self.h, self.d_k).transpose(1, 2)
                return y.reshape(b, -1, self.h * self.d_k)

        class Layer(nn.Module):
            def __init__(self, h, d_model):
                super().__init__()
                self.heads = Heads(h, d_model)

            def forward(self, x):
                return self.heads(x)

        heads = Heads(4, 128)
        out = heads(torch.randn(2, 7, 128))
        """
    )
    (view,) = [v for v in analysis.view_sites if v.transposes_by_view]
    assert len(view.input_dims) == 4 and len(view.target_dims) == 3
    assert view.input_dims[2] == view.target_dims[1] and view.input_dims[2].text() == "n"
    # The smoke test's summary saw the same view: it is not reported twice.
    assert not [(f, v) for f, v in analysis.views_in_calls() if v.transposes_by_view]


def test_a_branch_on_the_rank_of_a_tensor_of_known_rank_is_decided():
    # `if beta.ndim == 4:` given a 4-D beta: the other path (a view for a 3-D beta) does not run
    # for this value (a summary, which is one call, does not analyse it at all).
    analysis, _ = analyse(
        """
        def f(q, beta):
            b, h, t, s = beta.shape
            if beta.ndim == 4:
                out = beta.unsqueeze(3)
            else:
                out = beta.view(b, h, t, 1, 1)
            if beta.dim() in (3, 5):
                other = beta.sum(-1)
            else:
                other = beta
            return out, other
        """
    )
    assert env(analysis, "f", "out").rank == 5
    assert env(analysis, "f", "other").rank == 4

