"""Reductions drop the reduced axis, `*` broadcasts size-1 axes, `.t()` swaps a 2-D tensor's
axes, and a number in a shape comment is that size: together, Luong's time-major dot score."""

from __future__ import annotations

from attnlint.analysis.symbolic import Sym

from helpers import analyse, function

LUONG = """
import torch


def score(hidden, encoder_outputs):
    # hidden: (1, B, H); encoder_outputs: (S, B, H)
    product = hidden * encoder_outputs
    by_function = torch.sum(product, dim=2)
    by_method = product.sum(2)
    kept = product.mean(-1, keepdim=True)
    largest = torch.amax(product, dim=0)
    unknown_dim = product.sum(dim=d)
    swapped = by_function.t()
    return swapped
"""


def _env():
    analysis, _ = analyse(LUONG)
    return function(analysis, "score").final_env


def _sizes(value):
    return [axis.size for axis in value.shape]


def _roles(value):
    return [axis.role for axis in value.shape]


def test_a_number_in_a_shape_comment_is_that_size():
    assert _sizes(_env()["hidden"])[0] == Sym.const(1)


def test_a_product_takes_the_other_operands_axes_where_its_own_are_one():
    product = _env()["product"]
    assert product.rank == 3
    assert _roles(product)[:2] == _roles(_env()["encoder_outputs"])[:2]
    assert _sizes(product)[0] == _sizes(_env()["encoder_outputs"])[0]


def test_reductions_drop_the_axis_or_keep_it_as_one():
    env = _env()
    for name in ("by_function", "by_method"):
        assert env[name].rank == 2 and _roles(env[name]) == _roles(env["encoder_outputs"])[:2], name
    assert env["kept"].rank == 3 and _sizes(env["kept"])[-1] == Sym.const(1)
    assert env["largest"].rank == 2 and _roles(env["largest"]) == _roles(env["encoder_outputs"])[1:]
    assert env["unknown_dim"].shape is None


def test_t_swaps_the_two_axes_of_a_matrix():
    env = _env()
    assert _roles(env["swapped"]) == list(reversed(_roles(env["by_function"])))
