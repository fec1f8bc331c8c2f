"""Lists built by appends, empty ModuleLists grown in a loop, axes named by view arguments,
and weights contracted with values by a sum."""

from __future__ import annotations

from helpers import analyse, env

SELECTIVE_KERNEL = """
import torch
from torch import nn


class SelectiveKernel(nn.Module):
    def __init__(self, channel=64, kernels=(1, 3, 5), d=16):
        super().__init__()
        self.convs = nn.ModuleList([])
        for k in kernels:
            self.convs.append(nn.Conv2d(channel, channel, kernel_size=k, padding=k // 2))
        self.fc = nn.Linear(channel, d)
        self.fcs = nn.ModuleList([])
        for _ in kernels:
            self.fcs.append(nn.Linear(d, channel))
        self.softmax = nn.Softmax(dim={dim})

    def forward(self, x):
        bs, c, _, _ = x.size()
        outs = []
        for conv in self.convs:
            outs.append(conv(x))
        feats = torch.stack(outs, 0)
        z = self.fc(x.mean(-1).mean(-1))
        weights = []
        for fc in self.fcs:
            weights.append(fc(z).view(bs, c, 1, 1))
        w = self.softmax(torch.stack(weights, 0))
        return (w * feats).sum(0)
"""


def test_appended_lists_and_grown_module_lists_hold_what_was_appended():
    analysis, _ = analyse(SELECTIVE_KERNEL.format(dim=0))
    fcs = analysis.classes["SelectiveKernel"].attrs["fcs"]
    assert fcs.each is not None and fcs.each.module_type == "Linear"
    weights = env(analysis, "forward", "weights")
    assert weights.each is not None and weights.each.rank == 4
    # Axes given by names that say what they hold (`bs`) hold that, through the stack.
    stacked = analysis.softmax_sites[0].input
    assert stacked.rank == 5 and stacked.shape[1].role == "batch"


def test_weights_summed_with_values_over_an_axis_are_contracted_there():
    analysis, _ = analyse(SELECTIVE_KERNEL.format(dim=1))
    site = analysis.softmax_sites[0]
    assert site.contracted_axes == {-5}
    assert site.key_axis() == -5
    # Normalised over the batch and contracted along the branches: attention weights.
    assert site.attention_without_product()


def test_a_name_bound_to_a_lambda_is_applied_where_it_is_called_or_mapped():
    analysis, _ = analyse(
        """
        import torch.nn as nn

        class Attention(nn.Module):
            def __init__(self, dim, num_heads=3):
                super().__init__()
                self.num_heads, self.head_dim = num_heads, dim // num_heads
                self.qkv = nn.Linear(dim, dim * 3)

            def forward(self, x):
                B, N, C = x.shape
                q, k, v = self.qkv(x).chunk(3, dim=-1)
                split_heads = lambda t: t.reshape(B, N, self.num_heads, self.head_dim).transpose(1, 2)
                q, k, v = map(split_heads, (q, k, v))
                one = split_heads(v)
                return q, one
        """
    )
    for name in ("q", "one"):
        value = env(analysis, "forward", name, "Attention")
        assert value.rank == 4 and value.shape[1].size.text() == "num_heads", name


def test_tuple_of_a_tensor_is_its_slices_along_the_first_axis():
    analysis, _ = analyse(
        """
        import torch.nn as nn
        from einops import rearrange

        class Attention(nn.Module):
            def __init__(self, embedding_dim, head_num):
                super().__init__()
                self.head_num = head_num
                self.qkv_layer = nn.Linear(embedding_dim, embedding_dim * 3, bias=False)

            def forward(self, x):
                qkv = self.qkv_layer(x)
                query, key, value = tuple(rearrange(qkv, "b t (d k h) -> k b h t d", k=3, h=self.head_num))
                return query
        """
    )
    query = env(analysis, "forward", "query", "Attention")
    assert query.rank == 4 and query.shape[-1].size.text() == "embedding_dim / head_num"
