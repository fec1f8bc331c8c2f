"""Where scale facts come from: copies of layers, rows joined from a cache, a factor computed
elsewhere."""

from __future__ import annotations

from attnlint.analysis.scores import ScaleKind

from helpers import analyse, env, only_softmax


def test_a_deep_copy_of_a_layer_is_that_layer():
    analysis, _ = analyse(
        """
        import copy
        import torch.nn as nn

        def build(width):
            proj = copy.deepcopy(nn.Linear(width, 2 * width))
            return proj
        """
    )
    proj = env(analysis, "build", "proj")
    assert proj.kind == "module" and proj.module_type == "Linear"


def test_fresh_keys_joined_with_cached_rows_keep_their_scale():
    analysis, _ = analyse(
        """
        import torch
        import torch.nn as nn

        class Step(nn.Module):
            def __init__(self, width):
                super().__init__()
                self.k = nn.Linear(width, width)

            def forward(self, h, cache):
                k = torch.cat([cache["k"], self.k(h)], dim=1)
                wide = torch.cat([cache["k"], self.k(h)], dim=-1)
                called = torch.cat([self.squash(cache), self.k(h)], dim=1)
                return k
        """
    )
    assert env(analysis, "forward", "k").scaled is False
    assert env(analysis, "forward", "wide").scaled is None  # the feature axis: another vector
    assert env(analysis, "forward", "called").scaled is None  # an unknown call may scale


def test_a_mask_indexed_with_none_is_constant_along_that_axis():
    analysis, _ = analyse(
        """
        import torch

        def read(memory, slot_mask):
            logits = torch.randn(2, 5, 7)
            logits = logits.masked_fill(~slot_mask[:, None, :], float("-inf"))
            return torch.bmm(torch.softmax(logits, dim=1), memory)
        """
    )
    from attnlint.analysis.masks import broadcast_axes

    site = only_softmax(analysis)
    assert site.rank == 3
    (fill,) = site.input.fills
    assert broadcast_axes(fill, 3) == ({-2}, {-3, -1})
    assert site.contracted_axes == {-1}
    assert site.padding_marks_keys(-1, -2)


def test_a_mask_unsqueezed_from_the_end_is_constant_along_the_new_axis():
    analysis, _ = analyse(
        """
        import torch

        def read(memory, pad_mask):
            logits = torch.randn(2, 5, 7)
            logits = logits.masked_fill(pad_mask.unsqueeze(-2), -1e9)
            return torch.bmm(torch.softmax(logits, dim=-2), memory)
        """
    )
    from attnlint.analysis.masks import broadcast_axes

    site = only_softmax(analysis)
    (fill,) = site.input.fills
    assert broadcast_axes(fill, 3) == ({-2}, {-1})
    assert site.padding_marks_keys(-1, -2)


def test_pieces_of_a_split_stacked_along_the_batch_keep_their_width():
    analysis, _ = analyse(
        """
        import torch
        import torch.nn as nn

        class Fold(nn.Module):
            def __init__(self, width, heads):
                super().__init__()
                self.heads = heads
                self.q = nn.Linear(width, width)

            def forward(self, x):
                q = self.q(x)
                size = q.size(-1) // self.heads
                folded = torch.cat(q.split(size, 2), 0)
                moved = folded.transpose(1, 2)
                return folded, moved
        """
    )
    folded = env(analysis, "forward", "folded")
    assert folded.rank is None
    assert folded.size_of(2).text() == "width / heads"
    assert folded.with_(rank=3).size_of(-1).text() == "width / heads"
    # A value made from it by another expression does not inherit axis sizes it may have moved.
    assert env(analysis, "forward", "moved").size_of(2) is None


def test_a_setting_or_its_default_is_the_setting_the_callers_give():
    analysis, _ = analyse(
        """
        import torch
        import torch.nn as nn

        def exists(val):
            return val is not None

        def default(val, d):
            return val if exists(val) else d

        class Attend(nn.Module):
            def __init__(self, scale=None):
                super().__init__()
                self.scale = scale

            def forward(self, q, k):
                by_helper = default(self.scale, q.shape[-1] ** -0.5)
                by_or = self.scale or q.shape[-1] ** -0.5
                return by_helper, by_or

        class Attention(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.attend = Attend(scale=dim ** -0.5)
        """
    )
    # The one construction passes `dim ** -0.5`: not None, so both idioms give it (in the
    # caller's terms), not the default; the helper's `val` does not make it a value tensor.
    for name in ("by_helper", "by_or"):
        value = env(analysis, "forward", name, class_name="Attend")
        assert value.sym is not None and value.sym.text() == "1 / dim ** 0.5", name
        assert value.role is None


def test_an_attribute_of_an_object_handed_down_is_one_size_wherever_it_is_read():
    # `config.n_embd` read in Head (the width of its projections, hence of x) and in Block
    # (which sizes the heads `config.n_embd // config.n_head`) is one number: the scale by
    # C ** -0.5 is by the model width.
    analysis, _ = analyse(
        """
        import torch.nn as nn
        import torch.nn.functional as F

        class Head(nn.Module):
            def __init__(self, config, head_size):
                super().__init__()
                self.key = nn.Linear(config.n_embd, head_size, bias=False)
                self.query = nn.Linear(config.n_embd, head_size, bias=False)

            def forward(self, x):
                B, T, C = x.shape
                k, q = self.key(x), self.query(x)
                return F.softmax(q @ k.transpose(-2, -1) * C ** -0.5, dim=-1)

        class Block(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.heads = nn.ModuleList([Head(config, config.n_embd // config.n_head) for _ in range(config.n_head)])
        """
    )
    verdict = only_softmax(analysis).input.scores.scale_verdict()
    assert verdict.kind == ScaleKind.WRONG_DIMENSION and verdict.model_width


def test_an_attribute_holding_the_head_dimension_is_a_size_and_a_temperature_is_not():
    source = """
    import torch
    import torch.nn as nn

    class Attention(nn.Module):
        def __init__(self, dim, heads, {param}):
            super().__init__()
            self.heads, self.{param} = heads, {param}
            self.to_qk = nn.Linear(dim, heads * 64 * 2)

        def forward(self, x):
            q, k = self.to_qk(x).chunk(2, dim=-1)
            return torch.softmax(q @ k.transpose(-2, -1) / self.{param}, dim=-1)
    """
    sized = only_softmax(analyse(source.format(param="dim_head"))[0]).input.scores
    assert sized.scaled_by_a_size()
    temperature = only_softmax(analyse(source.format(param="temperature"))[0]).input.scores
    assert not temperature.scaled_by_a_size()
