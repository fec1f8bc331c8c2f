"""Flow-sensitive facts, module-level code, and the cost of pathological inputs (counted, not timed)."""

from __future__ import annotations

import libcst as cst
import pytest

from attnlint.analysis import analyze_module, flow
from attnlint.analysis.values import MASKED

from helpers import analyse, env, only_softmax

ATTENTION = """
import torch

def attend(q, k, v, key_padding_mask, flag):
    s = q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5
    s = s.masked_fill(key_padding_mask[:, None, None, :], float("-inf"))
    w = s.softmax(dim=-1)
{guard}
    return w @ v
"""


@pytest.mark.parametrize(
    "guard,guarded",
    [
        ("    w = w.nan_to_num(0.0)", True),
        ("    w = torch.where(torch.isnan(w), torch.zeros_like(w), w)", True),
        ("    w[torch.isnan(w)] = 0.0", True),
        ("    _ = w.nan_to_num(0.0)", False),  # the guarded value is thrown away
        ("    if flag:\n        w = w.nan_to_num(0.0)", False),  # guarded on one path only
        ("    if flag:\n        w = w.nan_to_num(0.0)\n    else:\n        w = torch.nan_to_num(w)", True),
        ("    pass", False),
    ],
)
def test_a_guard_is_a_fact_of_the_value_that_reaches_the_use(guard, guarded):
    analysis, _ = analyse(ATTENTION.format(guard=guard))
    assert only_softmax(analysis).guarded is guarded


def test_module_level_code_and_main_blocks_are_analysed_like_a_function():
    analysis, _ = analyse(
        """
        import torch

        if __name__ == "__main__":
            q = torch.randn(2, 4, 8, 16)
            k = torch.randn(2, 4, 8, 16)
            mask = torch.ones(8, 8, dtype=torch.bool).triu(1)
            w = torch.softmax(q @ k.transpose(-2, -1), dim=-1)
        """
    )
    site = only_softmax(analysis)
    assert site.rank == 4
    assert [d.text() for d in site.input.dims()] == ["2", "4", "8", "8"]
    top = analysis.functions[0]
    assert top.name == "<module>" and top.final_env["mask"].mask.convention == MASKED


def test_a_softmax_chain_evaluates_each_link_once(monkeypatch):
    # Evaluating the receiver of `.softmax()` twice per link cost 2**n evaluations.
    links = 40
    source = "def f(x):\n    return x" + ".softmax(-1)" * links + "\n"
    calls = {"n": 0}
    original = flow.Evaluator.eval

    def counting(self, node):
        calls["n"] += 1
        return original(self, node)

    monkeypatch.setattr(flow.Evaluator, "eval", counting)
    analyze_module(cst.parse_module(source))
    assert calls["n"] < 20 * links


class _NoScan(list):
    def __iter__(self):
        raise AssertionError("a query scanned every function of the module")


def test_queries_use_indexes_built_once():
    classes = "\n".join(
        f"class A{i}:\n    def forward(self, q, k):\n        return (q @ k.transpose(-2, -1)).softmax(-1)\n"
        for i in range(50)
    )
    analysis = analyze_module(cst.parse_module("import torch\n" + classes))
    sites = analysis.softmax_sites
    functions = [analysis.function_of(sites[0])]
    analysis.arguments_for(functions[0], "q")
    analysis.forward_of("A0")
    analysis.parent_of(sites[0].call)
    # From here on the indexes answer; the list of functions is never walked again.
    analysis.functions = _NoScan(analysis.functions)
    for site in sites:
        owner = analysis.function_of(site)
        assert owner is not None and owner.name == "forward"
        assert analysis.arguments_for(owner, "q") == []
        assert analysis.parent_of(site.call) is not None
    assert analysis.forward_of("A49").class_name == "A49"


def test_a_power_tower_is_not_computed():
    # `2 ** 2 ** 2 ** ...` has more digits than atoms in the universe: a size is never that.
    from fractions import Fraction

    from attnlint.analysis.symbolic import Sym

    assert Sym.const(2).power(Fraction(2**40)) is None
    assert Sym.const(2).power(Fraction(64)).int_value == 2**64
    analysis, _ = analyse("x = " + "2 ** " * 60 + "2\n")
    assert env(analysis, "<module>", "x").sym is None


def test_an_attribute_chain_is_read_without_regenerating_its_code(monkeypatch):
    # Rendering each prefix of `y.a.a...` with LibCST made a 1,000-link chain take minutes.
    from attnlint.analysis import flow

    calls = []
    real = flow.code
    monkeypatch.setattr(flow, "code", lambda node: calls.append(node) or real(node))
    analysis, _ = analyse("x = y" + ".a" * 300 + "\n")
    assert env(analysis, "<module>", "x").sym.text() == "y" + ".a" * 300
    assert len(calls) < 5


def test_a_tuple_of_known_length_spreads_its_elements_into_a_tuple_literal():
    analysis, _ = analyse(
        """
        import torch.nn as nn
        from einops import rearrange

        class Attention(nn.Module):
            def __init__(self, dim, heads, dim_head):
                super().__init__()
                self.heads = heads
                self.to_q = nn.Linear(dim, heads * dim_head)
                self.to_kv = nn.Linear(dim, heads * dim_head * 2)

            def forward(self, x, context):
                qkv = (self.to_q(x), *self.to_kv(context).chunk(2, dim=-1))
                q, k, v = map(lambda t: rearrange(t, "b n (h d) -> b h n d", h=self.heads), qkv)
                return q, k, v
        """
    )
    qkv = env(analysis, "forward", "qkv")
    assert len(qkv.elements) == 3
    assert [env(analysis, "forward", n).scaled for n in "qk"] == [False, False]
