"""Sizes read from a config's fields keep the field's name, KV caches and repeated heads keep
what is written into them, a caller's sizes are in scope of the module it builds, and scores
rearranged by windows stay scores."""

from __future__ import annotations

from attnlint.analysis.scores import ScaleKind

from helpers import analyse, function, only_softmax

CONFIG_MODULE = """
import math
from dataclasses import dataclass
import torch
from torch import nn

@dataclass
class Settings:
    width: int = 512
    n_head: int = 8
    max_len: int = 256

class CachedAttention(nn.Module):
    def __init__(self, s: Settings):
        super().__init__()
        self.n_head, self.d = s.n_head, s.width // s.n_head
        self.width = s.width
        self.q = nn.Linear(s.width, s.width)
        self.k = nn.Linear(s.width, s.width)
        self.register_buffer("k_cache", torch.zeros(4, s.max_len, self.n_head, self.d))

    def forward(self, x, pos):
        b, t, _ = x.shape
        q = self.q(x).view(b, t, self.n_head, self.d)
        k = self.k(x).view(b, t, self.n_head, self.d)
        self.k_cache[:b, pos:pos + t] = k
        keys = self.k_cache[:b, :pos + t].repeat_interleave(1, dim=2)
        scores = q.transpose(1, 2) @ keys.transpose(1, 2).transpose(2, 3) / math.sqrt({root})
        return scores.softmax(dim=-1)
"""


def _verdict(root):
    analysis, _ = analyse(CONFIG_MODULE.format(root=root))
    return only_softmax(analysis).input.scores.scale_verdict()


def test_a_config_field_keeps_its_name_through_a_kv_cache_and_repeated_heads():
    verdict = _verdict("self.width")
    assert verdict.kind == ScaleKind.WRONG_DIMENSION and verdict.model_width
    assert verdict.used.text() == "s.width"
    assert verdict.head_dim.text() == "s.width / s.n_head"


def test_the_head_width_of_a_config_is_correct():
    assert _verdict("self.d").kind == ScaleKind.CORRECT


def test_repeat_interleave_multiplies_the_repeated_axis_only():
    analysis, _ = analyse(
        """
        import torch
        def f(k, n_rep):
            b, n, h, d = k.shape
            out = torch.repeat_interleave(k, n_rep, dim=2)
            flat = k.repeat_interleave(n_rep)
        """
    )
    env = [f for f in analysis.functions if f.name == "f"][0].final_env
    assert [a.size.text() for a in env["out"].shape] == ["b", "n", "h * n_rep", "d"]
    assert env["flat"].shape is None and env["flat"].rank is None


TEMPERATURE_MODULE = """
import torch
from torch import nn

class DotAttention(nn.Module):
    def __init__(self, temperature):
        super().__init__()
        self.temperature = temperature

    def forward(self, q, k):
        return torch.softmax(q @ k.transpose(-2, -1) / self.temperature, dim=-1)

class Heads(nn.Module):
    def __init__(self, d_model, n_head, d_head):
        super().__init__()
        self.n_head, self.d_head = n_head, d_head
        self.proj = nn.Linear(d_model, 2 * n_head * d_head)
        self.attend = DotAttention({temperature})

    def forward(self, x):
        b, n, _ = x.shape
        q, k = self.proj(x).view(b, n, 2, self.n_head, self.d_head).permute(2, 0, 3, 1, 4)
        return self.attend(q, k)
"""


def _temperature_verdict(temperature):
    analysis, _ = analyse(TEMPERATURE_MODULE.format(temperature=temperature))
    return only_softmax(analysis).input.scores.scale_verdict(), analysis


def test_a_temperature_built_from_the_callers_model_width_is_the_model_width():
    verdict, analysis = _temperature_verdict("d_model ** 0.5")
    assert verdict.kind == ScaleKind.WRONG_DIMENSION and verdict.model_width
    passed = analysis.scale_passed_to_constructor(only_softmax(analysis))
    assert analysis.module.code_for_node(passed) == "d_model ** 0.5"


def test_a_temperature_of_the_callers_head_width_is_correct():
    assert _temperature_verdict("d_head ** 0.5")[0].kind == ScaleKind.CORRECT


def test_a_temperature_of_one_scales_nothing():
    assert _temperature_verdict("1.0")[0].kind == ScaleKind.MISSING


def test_a_learned_temperature_stays_unknown():
    assert _temperature_verdict("nn.Parameter(torch.ones(1))")[0].kind == ScaleKind.UNKNOWN


def test_scores_split_into_windows_and_merged_back_keep_their_scale_and_key_axis():
    analysis, _ = analyse(
        """
        import torch
        from einops import rearrange
        def windows(q, k, bias, heads):
            b, h, n, d = q.shape
            sim = torch.einsum("b h i d, b h j d -> b h i j", q, k) * d ** -0.5
            sim = rearrange(sim, "(b w) h i j -> b w h i j", w=bias.shape[0]) + bias[None, :, None]
            sim = rearrange(sim, "b w h i j -> (b w) h i j")
            return sim.softmax(dim=-1)
        """
    )
    scores = only_softmax(analysis).input.scores
    assert scores.scale_verdict().kind == ScaleKind.CORRECT
    assert scores.key_axis == -1


CHAIN_MODULE = """
import torch
from torch import nn

WIDTH = 96
HEADS = {heads}

class OneHead(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.q = nn.Linear(WIDTH, size, bias=False)
        self.k = nn.Linear(WIDTH, size, bias=False)

    def forward(self, x):
        B, T, C = x.shape
        return (self.q(x) @ self.k(x).transpose(-2, -1) * C ** -0.5).softmax(dim=-1)

class Heads(nn.Module):
    def __init__(self, count, size):
        super().__init__()
        self.heads = nn.ModuleList([OneHead(size) for _ in range(count)])

    def forward(self, x):
        return torch.cat([h(x) for h in self.heads], dim=-1)

class Layer(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.attn = Heads(heads, width // heads)

    def forward(self, x):
        return self.attn(x)

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(*[Layer(WIDTH, heads=HEADS) for _ in range(2)])

    def forward(self, x):
        return self.layers(x)
"""


def test_numbers_given_at_the_top_of_a_chain_of_constructors_size_the_head_at_its_bottom():
    analysis, _ = analyse(CHAIN_MODULE.format(heads=4))
    verdict = only_softmax(analysis).input.scores.scale_verdict()
    assert verdict.kind == ScaleKind.WRONG_DIMENSION and verdict.used.text() == "C"
    # One head as wide as the model: C is the head's width; a count of 1 is no example of a
    # size, so the names alone cannot tell, and the verdict stays unknown (silent).
    analysis, _ = analyse(CHAIN_MODULE.format(heads=1))
    assert only_softmax(analysis).input.scores.scale_verdict().kind == ScaleKind.UNKNOWN
    # The same width as a head of its own: correct by the numbers.
    analysis, _ = analyse(CHAIN_MODULE.format(heads=4).replace("Heads(heads, width // heads)", "Heads(heads, width)"))
    assert only_softmax(analysis).input.scores.scale_verdict().kind == ScaleKind.CORRECT


def test_reported_where_the_value_is_written_with_what_is_wrong():
    from attnlint.engine import check_source

    source = TEMPERATURE_MODULE.format(temperature="d_model ** 0.5")
    (finding,) = check_source(source).diagnostics
    assert finding.code == "ATN104"
    line = source.splitlines()[finding.start.line - 1]
    assert "DotAttention(d_model ** 0.5)" in line
    assert "1/sqrt(d_model), the model width" in finding.message and "d_head" in finding.message


def test_queries_scaled_and_scaled_again_by_the_kernel_are_scaled_twice():
    from attnlint.engine import check_source

    source = """
import torch
from torch import nn

def kernel(query, key, scaling, **kwargs):
    return torch.softmax(query @ key.transpose(-2, -1) * scaling, dim=-1)

class Attn(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.scaling = self.head_dim ** -0.5
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)

    def forward(self, x, **kwargs):
        b, n, _ = x.shape
        q = (self.q(x) * self.scaling).view(b, n, self.heads, self.head_dim).transpose(1, 2)
        k = self.k(x).view(b, n, self.heads, self.head_dim).transpose(1, 2)
        return kernel(q, k, scaling={scaling}, **kwargs)
"""
    analysis, _ = analyse(source.format(scaling="self.scaling"))
    scores = only_softmax(analysis).input.scores
    assert len(scores.every_scale_step) == 2
    assert scores.scale_verdict().kind == ScaleKind.NO_ROOT
    (finding,) = check_source(source.format(scaling="self.scaling")).diagnostics
    assert "scaled twice" in finding.message and "(passed by the caller)" in finding.message
    assert check_source(source.format(scaling="1.0")).diagnostics == []


def test_fields_a_dataclass_computes_in_post_init_are_in_its_fields_terms():
    analysis, _ = analyse(
        """
        from dataclasses import dataclass, field

        @dataclass
        class Config:
            hidden: int = 512
            heads: int = 8
            head_dim: int = field(init=False)
            attn_scale: float = field(init=False)

            def __post_init__(self):
                self.head_dim = self.hidden // self.heads
                self.attn_scale = 1.0 / self.head_dim
        """
    )
    attrs = analysis.classes["Config"].attrs
    # Not the numbers of the defaults (64, 1/64): the fields they are made of, so that a reader
    # can tell 1/head_dim from 1/sqrt(head_dim).
    assert attrs["head_dim"].sym.text() == "self.hidden / self.heads"
    assert attrs["attn_scale"].sym == attrs["head_dim"].sym.power(-1)


def test_a_configs_property_is_computed_from_its_fields():
    # `cfg.head_dim` and `cfg.attn_scale` are `@property`s of a dataclass config: their bodies,
    # in the instance's fields, so the scale is 1/head_dim in the head dimension's own terms.
    analysis, _ = analyse(
        """
        from dataclasses import dataclass
        import torch
        import torch.nn as nn

        @dataclass
        class Config:
            d_model: int = 384
            n_heads: int = 6

            @property
            def head_dim(self) -> int:
                return self.d_model // self.n_heads

            @property
            def attn_scale(self) -> float:
                return 1.0 / self.head_dim

        class SelfAttention(nn.Module):
            def __init__(self, cfg: Config):
                super().__init__()
                self.cfg = cfg
                self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)

            def forward(self, x):
                b, n, _ = x.shape
                h, hd = self.cfg.n_heads, self.cfg.head_dim
                q, k, v = self.qkv(x).reshape(b, n, 3, h, hd).unbind(dim=2)
                scores = torch.einsum("bihd,bjhd->bhij", q, k) * self.cfg.attn_scale
                return scores.softmax(dim=-1)
        """
    )
    scores = only_softmax(analysis).input.scores
    assert scores.head_dim is not None
    assert (scores.scale * scores.head_dim).text() == "1"


def test_a_property_returning_a_tensor_is_not_read_from_the_class():
    # Informer's TriangularCausalMask builds its mask for the (B, L) each instance is made with:
    # the class's attributes (in __init__'s parameters) are no instance's mask.
    analysis, _ = analyse(
        """
        import torch

        class TriangularCausalMask:
            def __init__(self, B, L):
                self._mask = torch.triu(torch.ones([B, 1, L, L], dtype=torch.bool), diagonal=1)

            @property
            def mask(self):
                return self._mask

        def f(scores, B, L):
            m = TriangularCausalMask(B, L)
            return m.mask
        """
    )
    assert function(analysis, "f").returns[0].mask is None
