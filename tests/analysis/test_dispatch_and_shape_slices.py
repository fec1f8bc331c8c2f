"""A table of attention functions chosen by a setting (`ATTENTION_FUNCTIONS[impl](...)`) calls
each of them with the call's arguments; a slice of a shape (`x.shape[:-1]`) is the sizes of
those axes, which a starred tuple spreads in place (`(*input_shape, -1, head_dim)`)."""

from __future__ import annotations

from helpers import analyse, env, function

DISPATCH = """
    import torch
    import torch.nn.functional as F


    def eager(query, key, value, scaling):
        return F.softmax(query @ key.transpose(-1, -2) * scaling, dim=-1) @ value


    def fused(query, key, value, scaling):
        return F.scaled_dot_product_attention(query, key, value, scale=scaling)


    FUNCTIONS = {"eager": eager, "fused": fused}


    def attend(x, impl):
        b, n, d = x.shape
        q = x.view(b, n, 4, d // 4).transpose(1, 2)
        return FUNCTIONS[impl](q, q, q, scaling=(d // 4) ** -0.5)


    def attend_named(x, impl):
        b, n, d = x.shape
        q = x.view(b, n, 4, d // 4).transpose(1, 2)
        interface = FUNCTIONS[impl]
        return interface(q, q, q, scaling=(d // 4) ** -0.5)
"""


def test_a_table_of_module_functions_is_a_module_constant():
    analysis, _ = analyse(DISPATCH)
    table = analysis.constants["FUNCTIONS"]
    assert [(key, v.user_function) for key, v in table.entries] == [("eager", "eager"), ("fused", "fused")]


def test_a_function_chosen_by_an_unknown_key_is_each_of_them():
    analysis, _ = analyse(DISPATCH)
    assert env(analysis, "attend_named", "interface").function_choices == ("eager", "fused")
    # Each is called from both callers: its parameters are what they pass.
    assert env(analysis, "eager", "query").rank == 4
    assert env(analysis, "fused", "query").rank == 4


def test_a_slice_of_a_known_shape_is_the_sizes_of_its_axes():
    analysis, _ = analyse(
        """
        def f(x, head_dim):
            b, n, d = x.shape
            front = x.shape[:-1]
            shape = (*front, -1, head_dim)
            heads = x.view(shape)
            return heads
        """
    )
    front = env(analysis, "f", "front")
    assert [e.sym.text() for e in front.elements] == ["b", "n"]
    heads = env(analysis, "f", "heads")
    assert heads.rank == 4 and heads.size_of(-1).text() == "head_dim"


def test_a_slice_of_an_unknown_shape_stays_unknown():
    analysis, _ = analyse(
        """
        def f(x, head_dim):
            shape = (*x.shape[:-1], -1, head_dim)
            return x.view(shape)
        """
    )
    shape = env(analysis, "f", "shape")
    assert not shape.elements
    assert function(analysis, "f").final_env["shape"].known_tail
