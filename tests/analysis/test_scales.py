"""Scale facts: what a scale expression evaluates to, symbolically, against the head dimension."""

from __future__ import annotations

import pytest

from attnlint.analysis.scores import ScaleKind

from helpers import analyse, dims_text, env, only_softmax

MODULE = """
import math
import torch
import torch.nn as nn

class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.scale = {init_scale}
        self.qkv = nn.Linear(dim, dim * 3)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.view(B, T, self.heads, self.head_dim).transpose(1, 2)
        k = k.view(B, T, self.heads, self.head_dim).transpose(1, 2)
        s = {scores}
        return s.softmax(-1) @ v
"""


def verdict(scores, init_scale="None"):
    analysis, _ = analyse(MODULE.format(scores=scores, init_scale=init_scale))
    return only_softmax(analysis).input.scores.scale_verdict()


@pytest.mark.parametrize(
    "scores,init_scale",
    [
        ("(q @ k.transpose(-2, -1)) / math.sqrt(self.head_dim)", "None"),
        ("(q @ k.transpose(-2, -1)) * self.scale", "self.head_dim ** -0.5"),
        ("(q @ k.transpose(-2, -1)) * self.scale", "1 / math.sqrt(dim // heads)"),
        ("(q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5", "None"),
        ("(q @ k.transpose(-2, -1)) * (C // self.heads) ** -0.5", "None"),
        ("(q * q.size(-1) ** -0.25) @ (k * k.size(-1) ** -0.25).transpose(-2, -1)", "None"),
    ],
)
def test_one_over_root_head_dim_in_every_spelling(scores, init_scale):
    assert verdict(scores, init_scale).kind == ScaleKind.CORRECT


def test_model_width_instead_of_head_dim():
    result = verdict("(q @ k.transpose(-2, -1)) / math.sqrt(C)")
    assert result.kind == ScaleKind.WRONG_DIMENSION
    assert result.model_width
    assert result.used.text() == "dim"
    assert result.head_dim.text() == "dim / heads"


def test_root_multiplied_instead_of_divided():
    assert verdict("(q @ k.transpose(-2, -1)) * math.sqrt(self.head_dim)").kind == ScaleKind.ROOT_MULTIPLIED


def test_no_root():
    assert verdict("(q @ k.transpose(-2, -1)) / self.head_dim").kind == ScaleKind.NO_ROOT


def test_sequence_length_is_a_wrong_dimension_but_not_the_model_width():
    result = verdict("(q @ k.transpose(-2, -1)) / math.sqrt(T)")
    assert result.kind == ScaleKind.WRONG_DIMENSION
    assert not result.model_width


def test_missing():
    assert verdict("q @ k.transpose(-2, -1)").kind == ScaleKind.MISSING


@pytest.mark.parametrize(
    "scores,init_scale",
    [
        ("(q @ k.transpose(-2, -1)) * self.scale", "nn.Parameter(torch.ones(1))"),  # learned
        ("(q @ k.transpose(-2, -1)) / self.temperature", "None"),  # configured elsewhere
        ("(q @ k.transpose(-2, -1)) * 0.125", "None"),  # a constant: the head dim is not one
    ],
)
def test_what_cannot_be_evaluated_is_unknown(scores, init_scale):
    assert verdict(scores, init_scale).kind == ScaleKind.UNKNOWN


def test_scale_applied_after_the_softmax_is_recorded_on_the_softmax():
    analysis, _ = analyse(
        """
        import math
        import torch

        def attend(q, k, v):
            w = torch.softmax(q @ k.transpose(-2, -1), dim=-1) / math.sqrt(q.size(-1))
            return w @ v
        """
    )
    site = only_softmax(analysis)
    assert site.input.scores.scale_verdict().kind == ScaleKind.MISSING
    ((node, factor),) = site.scaled_after
    assert factor.text() == "1 / q.shape[-1] ** 0.5"


def test_head_dim_names_in_scope_for_a_fix():
    analysis, _ = analyse(
        """
        import torch

        def attention(query, key):
            d_k = query.size(-1)
            return torch.softmax(torch.matmul(query, key.transpose(-2, -1)), dim=-1)
        """
    )
    assert only_softmax(analysis).input.scores.head_dim_names == ("d_k",)


PROJECTED_HEADS = """
import torch
import torch.nn as nn
from einops import rearrange

class Attention(nn.Module):
    def __init__(self, dim, heads, dim_head):
        super().__init__()
        self.heads = heads
        self.scale = {scale}
        self.to_qkv = nn.Linear(dim, dim_head * heads * 3)

    def forward(self, x):
        q, k, v = map(lambda t: rearrange(t, "b n (h d) -> b h n d", h={heads}), self.to_qkv(x).chunk(3, dim=-1))
        return (q @ k.transpose(-1, -2) * self.scale).softmax(dim=-1) @ v
"""


@pytest.mark.parametrize(
    "scale,heads,kind",
    [
        ("dim ** -0.5", "self.heads", ScaleKind.WRONG_DIMENSION),  # the projection's input width
        ("dim_head ** -0.5", "self.heads", ScaleKind.CORRECT),
        ("dim ** -0.5", "1", ScaleKind.UNKNOWN),  # one head: nothing says dim is not dim_head
    ],
)
def test_the_input_width_of_the_head_projection_is_not_the_head_dim(scale, heads, kind):
    analysis, _ = analyse(PROJECTED_HEADS.format(scale=scale, heads=heads))
    scores = only_softmax(analysis).input.scores
    assert scores.head_count.text() == ("heads" if heads != "1" else "1")
    result = scores.scale_verdict()
    assert result.kind == kind
    if kind == ScaleKind.WRONG_DIMENSION:
        assert result.model_width and result.used.text() == "dim" and result.head_dim.text() == "dim_head"


def test_summed_content_and_position_scores_keep_the_facts_both_share():
    analysis, _ = analyse(
        """
        import torch
        import torch.nn as nn

        class Rel(nn.Module):
            def __init__(self, dim, heads):
                super().__init__()
                self.heads = heads
                self.u = nn.Parameter(torch.zeros(heads, dim // heads))
                self.qkv = nn.Linear(dim, 3 * dim)

            def forward(self, x, p):
                b, t, _ = x.shape
                q, k, v = self.qkv(x).chunk(3, dim=-1)
                q = q.view(b, t, self.heads, -1).transpose(1, 2)
                k = k.view(b, t, self.heads, -1).transpose(1, 2)
                s = torch.matmul(q + self.u, k.transpose(-2, -1)) + torch.matmul(q, p.transpose(-2, -1))
                return s.softmax(dim=-1)
        """
    )
    scores = only_softmax(analysis).input.scores
    assert scores.head_dim.text() == "dim / heads"
    assert scores.scale_verdict().kind == ScaleKind.MISSING


EINSUM_PROJECTION = """
import torch
import torch.nn as nn

class Fused(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.w_qkv = nn.Parameter(torch.empty(3, width, heads, width // heads))
        {init}

    def forward(self, x):
        q, k, v = torch.einsum("bnd,tdhe->tbhne", x, self.w_qkv)
        return torch.einsum("bhie,bhje->bhij", q, k).softmax(dim=-1)
"""


@pytest.mark.parametrize(
    "init,kind",
    [
        ("nn.init.xavier_uniform_(self.w_qkv)", ScaleKind.MISSING),
        ("nn.init.normal_(self.w_qkv, std=0.02)", ScaleKind.MISSING),
        ("nn.init.normal_(self.w_qkv, std=width ** -0.5)", ScaleKind.UNKNOWN),  # maybe folded in
    ],
)
def test_an_einsum_projection_by_a_role_named_weight_carries_the_tokens_scale(init, kind):
    analysis, _ = analyse(EINSUM_PROJECTION.format(init=init))
    assert only_softmax(analysis).input.scores.scale_verdict().kind == kind


SCALE_FROM_A_PARAMETER = """
import math
import torch

def attend(q, k, v, d_model, temperature):
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_model)
    return torch.softmax(scores, dim=-1) @ v

def attend_by_attribute(self, q, k, v, scale):
    scores = (q @ k.transpose(-2, -1)) * self.scale
    return torch.softmax(scores, dim=-1) @ v

def run(q, k, v):
    return attend(q, k, v, 512, 1.0), attend(q, k, v, d_model=256, temperature=1.0)
"""


def test_a_scale_made_of_one_parameter_is_traced_to_the_first_callers_argument():
    analysis, module = analyse(SCALE_FROM_A_PARAMETER)
    by_function = {analysis.function_of(s).name: s for s in analysis.softmax_sites}
    passed = analysis.scale_passed_by_caller(by_function["attend"])
    assert module.code_for_node(passed) == "512"
    # `self.scale` reads an attribute, not the parameter `scale`: nothing is traced to a caller.
    assert analysis.scale_passed_by_caller(by_function["attend_by_attribute"]) is None


@pytest.mark.parametrize(
    "scores,factor,divides",
    [
        ("(q @ k.transpose(-2, -1)) / math.sqrt(C)", "math.sqrt(C)", True),
        ("self.scale * (q @ k.transpose(-2, -1))", "self.scale", False),
        ("torch.mul(q @ k.transpose(-2, -1), C ** -0.5)", "C ** -0.5", False),
        ("(q @ k.transpose(-2, -1)).div(self.head_dim ** 0.5)", "self.head_dim ** 0.5", True),
        ("torch.baddbmm(q.new_zeros(1), q, k.transpose(-2, -1), alpha=1 / C)", "1 / C", False),
    ],
)
def test_each_scale_step_names_the_factor_a_fix_rewrites(scores, factor, divides):
    analysis, module = analyse(MODULE.format(scores=scores, init_scale="1.0"))
    steps = only_softmax(analysis).input.scores.scale_steps
    assert [(module.code_for_node(s.factor), s.divides) for s in steps] == [(factor, divides)]


def test_an_augmented_division_is_a_scale_step_of_its_right_side():
    source = MODULE.replace("        s = {scores}\n", "        s = q @ k.transpose(-2, -1)\n        s /= math.sqrt(C)\n")
    analysis, module = analyse(source.format(init_scale="None"))
    (step,) = only_softmax(analysis).input.scores.scale_steps
    assert module.code_for_node(step.factor) == "math.sqrt(C)" and step.divides


LEARNED_QUERIES = """
import torch
import torch.nn as nn

class Pool(nn.Module):
    def __init__(self, dim, n):
        super().__init__()
        self.queries = nn.Parameter(torch.randn(n, dim))
        self.k = nn.Linear(dim, dim)

    def forward(self, x):
        {keys} = {source}
        logits = torch.einsum("qd,bnd->bqn", self.queries, {keys})
        return logits.softmax(-1)
"""


def test_learned_queries_against_projected_keys_are_scores():
    # The batch axis `b` is the keys' alone (the queries are shared by it); the keys axis is n.
    analysis, _ = analyse(LEARNED_QUERIES.format(keys="k", source="self.k(x)"))
    scores = only_softmax(analysis).input.scores
    assert scores is not None
    assert scores.key_axis == -1
    assert scores.head_dim.text() == "dim"
    assert scores.scale_verdict().kind == ScaleKind.MISSING


def test_a_learned_tensor_against_raw_tokens_is_a_linear_map():
    # Nothing shows the other operand holds keys: a weight applied to features.
    analysis, _ = analyse(LEARNED_QUERIES.format(keys="feats", source="x"))
    assert only_softmax(analysis).input.scores is None


RANDOM_WEIGHTS = """
import math
import torch

def attend(x, Wq, Wk):
    q, k = x @ Wq, x @ Wk
    return torch.softmax(q @ k.transpose(-2, -1), dim=-1)

d = 32
Wq, Wk = (torch.randn(d, d) {init} for _ in range(2))
attend(torch.randn(2, 5, d), Wq, Wk)
"""


@pytest.mark.parametrize(
    "init,kind",
    [
        # A literal: the weights' initial spread, not a scale of the queries.
        ("* 0.1", ScaleKind.MISSING),
        # A size under a root may be a scale folded in: not read as missing.
        ("/ math.sqrt(d)", ScaleKind.UNKNOWN),
    ],
)
def test_a_random_weights_literal_spread_is_not_a_scale(init, kind):
    analysis, _ = analyse(RANDOM_WEIGHTS.format(init=init))
    found = [s.input.scores.scale_verdict().kind for s in analysis.softmax_sites if s.input.scores is not None]
    assert found == [kind]


def test_a_scale_attribute_set_once_in_init_is_defined_there_with_the_names_valid_there():
    source = """
import torch
from torch import nn

class Attention(nn.Module):
    def __init__(self, dim, heads=8, dim_head=64):
        super().__init__()
        self.scale = dim ** -0.5
        self.head_dim = dim_head
        self.heads = heads
        self.to_q = nn.Linear(dim, heads * dim_head)
        self.to_k = nn.Linear(dim, heads * dim_head)

    def forward(self, x):
        b, n, _ = x.shape
        q = self.to_q(x).view(b, n, self.heads, self.head_dim).transpose(1, 2)
        k = self.to_k(x).view(b, n, self.heads, self.head_dim).transpose(1, 2)
        return (q @ k.transpose(-1, -2) * self.scale).softmax(-1)
"""
    analysis, module = analyse(source)
    definition = analysis.scale_definition(only_softmax(analysis))
    assert module.code_for_node(definition.node) == "dim ** -0.5"
    # `self.head_dim` is set after the scale: only the parameter can be written there.
    assert definition.head_dim_names == ("dim_head",)
    # Set again elsewhere: which value reaches the scores is not shown.
    twice = source.replace("        return (q @", "        self.scale = 1.0\n        return (q @")
    analysis, _ = analyse(twice)
    assert analysis.scale_definition(only_softmax(analysis)) is None
    # Read elsewhere too: mending its value there would change the other use.
    shared = source.replace("        return (q @", "        print(self.scale)\n        return (q @")
    analysis, _ = analyse(shared)
    assert analysis.scale_definition(only_softmax(analysis)) is None


def test_qk_norm_keeps_the_query_and_key_and_normalises_their_scale_away():
    """`nn.LayerNorm(d) if qk_norm else nn.Identity()`: either module by path. Each keeps the
    query a query; the norm undoes a scale applied before it, the identity keeps it."""
    analysis, _ = analyse(
        """
        import torch.nn as nn

        class Attention(nn.Module):
            def __init__(self, dim, heads, qk_norm=True):
                super().__init__()
                self.head_dim = dim // heads
                self.q_norm = nn.LayerNorm(self.head_dim) if qk_norm else nn.Identity()
                self.k_norm = nn.LayerNorm(self.head_dim)
                self.qkv = nn.Linear(dim, dim * 3)

            def forward(self, x):
                B, N, C = x.shape
                q, k, v = self.qkv(x).reshape(B, N, 3, -1, self.head_dim).permute(2, 0, 3, 1, 4).unbind(0)
                either = self.q_norm(q)
                normed = self.k_norm(k)
                prescaled = self.k_norm(k * self.head_dim ** -0.5)
                return either, normed, prescaled
        """
    )
    either, normed, prescaled = (env(analysis, "forward", n) for n in ("either", "normed", "prescaled"))
    assert (either.role, either.scaled, either.scale.text()) == ("query", False, "1")
    assert (normed.role, normed.scaled) == ("key", False)
    assert dims_text(normed)[-1] == "dim / heads"  # laid out as before the norm
    assert (prescaled.scaled, prescaled.scale.text()) == (False, "1")  # normalised away
    assert analysis.classes["Attention"].attrs["q_norm"].module_choices == ("LayerNorm", "Identity")


def test_baddbmm_as_a_method_with_keywords_is_a_scaled_product_plus_its_receiver():
    analysis, _ = analyse(
        """
        import math
        import torch

        def attend(q, k, v, alibi, head_dim):
            scores = alibi.baddbmm(batch1=q, batch2=k.transpose(1, 2), beta=1.0, alpha=1.0 / math.sqrt(head_dim))
            return torch.bmm(scores.softmax(dim=-1), v)
        """
    )
    scores = only_softmax(analysis).input.scores
    assert scores is not None and scores.scaled is True and scores.adds_bias
