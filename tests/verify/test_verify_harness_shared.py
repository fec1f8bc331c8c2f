"""One harness, one mask-name table, one recipe list: the verifier keeps no copy of the linter's facts."""

from __future__ import annotations

import pytest


def test_mask_names_follow_the_linters_table():
    from attnlint.analysis import masks
    from attnlint.analysis.values import ATTEND, MASKED
    from attnlint.verify.recipes._mask_names import mask_format_for_name

    for name in list(masks._PARAM_MASKS) + ["mask", "attn_mask", "src_mask"]:
        facts = masks.from_param(name)
        fmt = mask_format_for_name(name)
        if facts.convention == MASKED:
            assert fmt == "key_padding", name
        elif facts.convention == ATTEND:
            assert fmt == "attention_mask", name
        else:
            assert fmt is None, name  # the linter says the name does not tell: neither may we
    assert mask_format_for_name("padding_mask") is None
    assert mask_format_for_name("key_padding_mask") == "key_padding"


def test_convention_of_a_convention_free_name_comes_from_the_code():
    from attnlint.verify.entry_facts import entry_facts

    source = """
import torch.nn as nn
import torch.nn.functional as F

class Encoder(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)

    def forward(self, x, padding_mask=None):
        return self.attn(x, x, x, key_padding_mask=padding_mask)[0]

def sdpa(q, k, v, attn_mask):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)

def unused(q, k, v, padding_mask):
    return q
"""
    assert entry_facts([source], "Encoder")["mask_format"] == {"padding_mask": "key_padding"}
    assert entry_facts([source], "sdpa")["mask_format"] == {"attn_mask": "sdpa_keep"}
    assert entry_facts([source], "unused")["mask_format"] == {}


def test_recipes_are_derived_from_the_registry():
    from attnlint.rules import registry
    from attnlint.verify.recipes import RECIPE_BY_RULE_CODE, recipe_for

    from pathlib import Path

    import attnlint.verify.recipes as package

    modules = {p.stem for p in Path(package.__file__).parent.glob("*.py") if not p.stem.startswith("_")}
    by_module = {r.name.replace("-", "_"): r.code for r in registry.all_rules()}
    assert modules <= set(by_module), f"recipe modules with no rule: {modules - set(by_module)}"
    for rule in registry.all_rules():
        module = rule.name.replace("-", "_")
        assert recipe_for(rule.code) == (module if module in modules else None)
    assert RECIPE_BY_RULE_CODE == {by_module[m]: m for m in modules}


def test_the_two_families_share_one_outcome_references_and_trial():
    pytest.importorskip("torch")
    from attnlint.verify.recipes import _harness, _masking, _score_softmax

    assert _masking.Outcome is _score_softmax.Outcome is _harness.Outcome
    assert _masking.References is _score_softmax.References is _harness.References
    assert _masking.Context is _score_softmax.Trial is _harness.Trial


def test_heatmap_draws_nan_in_magenta_and_weights_on_a_ramp():
    from attnlint.verify.html_report import NAN_COLOUR, heatmap_svg, weight_colour

    svg = heatmap_svg([[float("nan"), 1.0], [0.0, 0.5]], "original")
    assert svg.count(f'fill="{NAN_COLOUR}"') == 1
    assert weight_colour(0.0) == "#ffffff" and weight_colour(1.0) == "#08306b"
    assert weight_colour(0.25) != weight_colour(0.75)


def test_pictures_record_the_weights_as_used():
    torch = pytest.importorskip("torch")
    import torch.nn.functional as F

    from attnlint.verify.pictures import recorded_weights

    q = torch.randn(1, 1, 3, 4, dtype=torch.float64)
    s = (q @ q.transpose(-2, -1)).masked_fill(torch.ones(3, 3, dtype=torch.bool), float("-inf"))
    with recorded_weights() as seen:
        w = s.softmax(dim=-1)
        w = w.nan_to_num(0.0)  # what the fixed code attends with
        _ = w @ q
    assert torch.equal(seen[-1], torch.zeros(1, 1, 3, 3, dtype=torch.float64))
    with recorded_weights() as seen:
        F.scaled_dot_product_attention(q, q, q, is_causal=True)
    assert torch.allclose(seen[-1][0, 0].sum(-1), torch.ones(3, dtype=torch.float64))
    assert seen[-1][0, 0, 0, 1] == 0  # causal: query 0 sees key 0 only
    assert (
        torch.Tensor.softmax is not None and F.scaled_dot_product_attention.__name__ == "scaled_dot_product_attention"
    )


def test_findings_of_rules_without_a_recipe_are_not_asked_for(monkeypatch):
    from pathlib import Path

    from attnlint.config import Settings
    from attnlint.verify import recipes
    from attnlint.verify.session import fixable_findings

    source = (Path(__file__).resolve().parents[2] / "examples" / "causal_attention.py").read_text()
    everything = fixable_findings(source, "causal_attention.py", Settings(), None)
    assert sorted(f.code for f in everything) == ["ATN102", "ATN204"]
    assert {f.entry for f in everything} == {"CausalAttention"}
    real = recipes.recipe_for
    monkeypatch.setattr(recipes, "recipe_for", lambda code: None if code == "ATN204" else real(code))
    skipped: list = []
    kept = fixable_findings(source, "causal_attention.py", Settings(), None, skipped)
    assert [f.code for f in kept] == ["ATN102"] and skipped == ["ATN204"]


def test_a_mask_parameter_takes_its_format_from_how_its_callers_build_it_before_how_the_entry_reads_it():
    # The entry hands `pad_mask` to SDPA (True = attend) but its caller builds True at the
    # padding: the witness must be what the caller passes, or a convention bug cannot be shown.
    from attnlint.verify.entry_facts import entry_facts

    source = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def forward(self, q, k, v, pad_mask, keep):
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=pad_mask[:, None, None, :])
        return a + F.scaled_dot_product_attention(q, k, v, attn_mask=keep[:, None, None, :])


class Encoder(nn.Module):
    def __init__(self, pad_id=0):
        super().__init__()
        self.pad_id = pad_id
        self.attn = Attention()

    def forward(self, ids, x, keep):
        return self.attn(x, x, x, ids == self.pad_id, keep)
"""
    assert entry_facts([source], "Attention")["mask_format"] == {"pad_mask": "key_padding", "keep": "keep"}
