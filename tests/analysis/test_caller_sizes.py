"""Sizes callers pass as numbers are examples (the parameter keeps its name), numbers decide
only what names cannot, and scores flattened by a view keep their axis roles."""

from __future__ import annotations

from attnlint.analysis.scores import ScaleKind

from helpers import analyse, only_softmax

# A width-scaled multi-head module whose smoke test passes numbers: the names still say width.
WIDTH_MODULE = """
import torch
from torch import nn

class SelfAttention(nn.Module):
    def __init__(self, width, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.head_width = width // n_heads
        self.scale = {scale}
        self.qkv = nn.Linear(width, 3 * width)

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.view(b, n, self.n_heads, self.head_width).transpose(1, 2)
        k = k.view(b, n, self.n_heads, self.head_width).transpose(1, 2)
        return (q @ k.transpose(-2, -1) * self.scale).softmax(dim=-1)

if __name__ == "__main__":
    SelfAttention({width}, {heads})(torch.randn(2, 9, {width}))
"""


def _width_verdict(scale, width=384, heads=6):
    analysis, _ = analyse(WIDTH_MODULE.format(scale=scale, width=width, heads=heads))
    return only_softmax(analysis).input.scores.scale_verdict()


def test_numbers_passed_by_the_smoke_test_keep_the_parameter_names():
    result = _width_verdict("width ** -0.5")
    assert result.kind == ScaleKind.WRONG_DIMENSION
    assert result.model_width
    assert result.used.text() == "width"
    assert result.head_dim.text() == "width / n_heads"


def test_head_dim_scale_with_numbers_whose_root_is_irrational_is_correct():
    # 384 // 6 = 64, but 384 ** -0.5 has no rational value: names, not numbers, decide.
    assert _width_verdict("self.head_width ** -0.5").kind == ScaleKind.CORRECT
    assert _width_verdict("(width // n_heads) ** -0.5", width=390, heads=6).kind == ScaleKind.CORRECT


def test_the_number_a_caller_passes_is_kept_as_an_example():
    analysis, _ = analyse(WIDTH_MODULE.format(scale="width ** -0.5", width=384, heads=6))
    scores = only_softmax(analysis).input.scores
    examples = {key.split(":")[-1]: value.int_value for key, value in scores.size_examples}
    assert examples == {"width": 384, "n_heads": 6}


# One head as its own module, sized by the container that builds several (course style).
HEAD_MODULE = """
import torch
import torch.nn as nn
import torch.nn.functional as F

WIDTH = 48
HEADS = {heads}

class OneHead(nn.Module):
    def __init__(self, size{extra_param}):
        super().__init__()
        self.q = nn.Linear(WIDTH, size, bias=False)
        self.k = nn.Linear(WIDTH, size, bias=False)
        {extra_init}

    def forward(self, x):
        B, T, C = x.shape
        q, k = self.q(x), self.k(x)
        w = {scores}
        return F.softmax(w, dim=-1)

class Heads(nn.Module):
    def __init__(self, count, size):
        super().__init__()
        self.heads = nn.ModuleList([OneHead(size{extra_arg}) for _ in range(count)])

    def forward(self, x):
        return torch.cat([h(x) for h in self.heads], dim=-1)

if __name__ == "__main__":
    Heads(HEADS, WIDTH // HEADS)(torch.randn(2, 5, WIDTH))
"""


def _head_verdict(scores, heads=4, extra_param="", extra_init="", extra_arg=""):
    source = HEAD_MODULE.format(
        scores=scores, heads=heads, extra_param=extra_param, extra_init=extra_init, extra_arg=extra_arg
    )
    analysis, _ = analyse(source)
    return only_softmax(analysis).input.scores.scale_verdict()


def test_input_width_against_a_head_size_the_container_passes():
    result = _head_verdict("q @ k.transpose(-2, -1) * C ** -0.5")
    assert result.kind == ScaleKind.WRONG_DIMENSION
    assert result.model_width
    assert result.head_dim.text() == "size"


def test_one_head_whose_size_is_the_width_is_correct():
    assert _head_verdict("q @ k.transpose(-2, -1) * C ** -0.5", heads=1).kind == ScaleKind.CORRECT


def test_literals_and_temperatures_stay_unknown_against_example_numbers():
    # 1/sqrt(48) written as a number, and a temperature whose example happens to be sqrt(3 * 16).
    assert _head_verdict("q @ k.transpose(-2, -1) * 0.14433756729740643").kind == ScaleKind.UNKNOWN
    temperature = _head_verdict(
        "q @ k.transpose(-2, -1) / self.t",
        extra_param=", t",
        extra_init="self.t = t",
        extra_arg=", 48",
    )
    assert temperature.kind == ScaleKind.UNKNOWN


FLAT_SCORES = """
import torch
import torch.nn as nn

class Luong(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.Softmax(dim={dim})

    def forward(self, query, context):
        batch, out_len, d = query.size()
        _, in_len, _ = context.size()
        scores = torch.bmm(query, context.transpose(1, 2))
        flat = scores.{reshape}(batch * out_len, in_len)
        weights = self.norm(flat).view(batch, out_len, in_len)
        return torch.bmm(weights, context)
"""


def test_scores_flattened_to_rows_keep_their_key_axis():
    analysis, _ = analyse(FLAT_SCORES.format(dim=0, reshape="view"))
    site = only_softmax(analysis)
    assert site.axis_names() == ("batch", "keys")
    assert site.key_axis() == -1
    assert site.attention_without_product()


def test_a_view_that_moves_the_keys_drops_the_roles():
    source = FLAT_SCORES.format(dim=0, reshape="reshape").replace(
        "scores.reshape(batch * out_len, in_len)", "scores.reshape(batch, out_len * in_len)"
    )
    analysis, _ = analyse(source)
    assert only_softmax(analysis).key_axis() is None


POOL = """
import torch
import torch.nn as nn

class Pool(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.attend = nn.Sequential(nn.Conv1d(d, {channels}, kernel_size=1), nn.Tanh(), nn.Softmax(dim={dim}))

    def forward(self, x):
        # x: (batch, d, time)
        return self.attend(x)

if __name__ == "__main__":
    Pool(8)(torch.randn(2, 8, 5))
"""


def test_sequential_layers_apply_in_order_and_the_conv_channel_axis_is_its_features():
    from attnlint.analysis.softmax import singleton_axis

    analysis, _ = analyse(POOL.format(channels=1, dim=1))
    site = only_softmax(analysis)
    assert site.rank == 3
    assert site.input.shape[1].size.int_value == 1
    assert singleton_axis(site) == -2


def test_softmax_over_positions_or_over_several_channels_is_not_a_singleton():
    from attnlint.analysis.softmax import singleton_axis

    for channels, dim in ((1, 2), (1, -1), (4, 1)):
        analysis, _ = analyse(POOL.format(channels=channels, dim=dim))
        assert singleton_axis(only_softmax(analysis)) is None


DOT_T = """
import torch
import torch.nn as nn

class Attend(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.k = nn.Linear(d, d)

    def forward(self, x):
        keys = self.k(x)
        return torch.softmax(x @ keys.T, dim=-1)

if __name__ == "__main__":
    layer = Attend(4)
    layer(torch.rand(6, 4))
    layer({second})
"""


def test_a_call_with_a_batch_shows_a_batched_transpose_the_joined_callers_hide():
    analysis, module = analyse(DOT_T.format(second="torch.rand(2, 6, 4)"))
    batched = [s for s in analysis.dot_t_sites if s.receiver.rank is not None and s.receiver.rank >= 3]
    assert [module.code_for_node(s.node) for s in batched] == ["keys.T"]
    assert all(s.in_matmul for s in batched)


def test_unbatched_calls_only_show_no_batched_transpose():
    analysis, _ = analyse(DOT_T.format(second="torch.rand(9, 4)"))
    assert all(s.receiver.rank in (None, 2) for s in analysis.dot_t_sites)


HELPER_GIVEN_A_SIZE = """
import math
import torch
import torch.nn as nn

def attend(q, k, width):
    return (q @ k.transpose(-2, -1) / math.sqrt(width)).softmax(dim=-1)

class Heads(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.d_model = d_model
        self.n_heads = n_heads
        self.d_k = d_model // n_heads
        self.q = nn.Linear(d_model, d_model)
        self.k = nn.Linear(d_model, d_model)

    def forward(self, x):
        b, n, _ = x.shape
        q = self.q(x).view(b, n, self.n_heads, self.d_k).transpose(1, 2)
        k = self.k(x).view(b, n, self.n_heads, self.d_k).transpose(1, 2)
        return attend(q, k, {passed})
"""


def test_a_size_the_caller_only_names_is_bound_when_another_argument_has_it():
    # `self.d_model` is a bare name in the caller, but q's last axis is d_model / n_heads: bound
    # to the parameter, the helper's scale is the model width's root.
    analysis, _ = analyse(HELPER_GIVEN_A_SIZE.format(passed="self.d_model"))
    verdict = only_softmax(analysis).input.scores.scale_verdict()
    assert verdict.kind == ScaleKind.WRONG_DIMENSION and verdict.model_width
    analysis, _ = analyse(HELPER_GIVEN_A_SIZE.format(passed="self.d_k"))
    assert only_softmax(analysis).input.scores.scale_verdict().kind == ScaleKind.CORRECT
    # A number of the caller's own that no argument's shape holds stays the helper's name.
    analysis, _ = analyse(HELPER_GIVEN_A_SIZE.format(passed="self.temperature"))
    assert only_softmax(analysis).input.scores.scale_verdict().kind == ScaleKind.UNKNOWN


def test_a_size_the_caller_names_stays_the_callers_beside_the_sizes_it_derives_from_it():
    # `Head(n_embed // n_head, n_embed)`: the head sees both in the caller's names, so the
    # root of `n_embed` (x's width, through the Linear) is the width of n_head heads.
    analysis, _ = analyse(
        """
        import math
        import torch
        import torch.nn as nn
        import torch.nn.functional as F

        class Head(nn.Module):
            def __init__(self, head_size: int, n_embed: int):
                super().__init__()
                self.key = nn.Linear(n_embed, head_size, bias=False)
                self.query = nn.Linear(n_embed, head_size, bias=False)

            def forward(self, x):
                B, T, C = x.shape
                k, q = self.key(x), self.query(x)
                return F.softmax(q @ k.transpose(-2, -1) * (1 / math.sqrt(C)), dim=-1)

        class MultiHeadAttention(nn.Module):
            def __init__(self, n_head: int, n_embed: int):
                super().__init__()
                self.heads = nn.ModuleList([Head(n_embed // n_head, n_embed) for _ in range(n_head)])

            def forward(self, x):
                return torch.cat([h(x) for h in self.heads], dim=-1)

        if __name__ == "__main__":
            MultiHeadAttention(n_head=4, n_embed=32)(torch.randn(2, 5, 32))
        """
    )
    verdict = only_softmax(analysis).input.scores.scale_verdict()
    assert verdict.kind == ScaleKind.WRONG_DIMENSION and verdict.model_width
    assert verdict.used.text() == "n_embed" and verdict.head_dim.text() == "n_embed / n_head"
