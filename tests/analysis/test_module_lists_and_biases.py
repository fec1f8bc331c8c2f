"""Modules appended to an `nn.ModuleList` in a loop, and additive -inf biases built in one function
and added to the scores in another."""

from __future__ import annotations

from helpers import analyse, env, function


def test_modules_appended_to_a_module_list_are_what_indexing_it_calls():
    analysis, _ = analyse(
        """
        import torch.nn as nn

        class Block(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.proj = nn.Linear(d, d)

        class Net(nn.Module):
            def __init__(self, d, n):
                super().__init__()
                self.blocks = nn.ModuleList()
                self.norms = nn.ModuleList()
                for _ in range(n):
                    self.blocks.append(Block(d))
                    self.norms.extend([nn.LayerNorm(d)])
        """
    )
    blocks = env(analysis, "__init__", "self.blocks", class_name="Net")
    norms = env(analysis, "__init__", "self.norms", class_name="Net")
    assert blocks.kind == "tuple" and blocks.each.kind == "module" and blocks.each.module_type == "Block"
    assert norms.kind == "tuple" and norms.each.module_type == "LayerNorm"


def test_zeros_filled_with_minus_infinity_by_a_mask_is_a_bias_of_that_mask_in_its_callees():
    analysis, _ = analyse(
        """
        import torch
        import torch.nn as nn

        def build_bias(ids):
            L = ids.size(1)
            causal = torch.triu(torch.ones(L, L, dtype=torch.bool), diagonal=1)
            blocked = causal[None, None] | ids.eq(0)[:, None, None, :]
            bias = torch.zeros(blocked.shape, device=ids.device)
            return bias.masked_fill(blocked, float("-inf"))

        class Attention(nn.Module):
            def forward(self, q, k, v, attn_bias):
                scores = q @ k.transpose(-2, -1) / q.size(-1) ** 0.5 + attn_bias
                return torch.softmax(scores, dim=-1) @ v

        class Model(nn.Module):
            def __init__(self, n, d):
                super().__init__()
                self.emb = nn.Embedding(n, d, padding_idx=0)
                self.attn = Attention()

            def forward(self, ids):
                x = self.emb(ids)
                bias = build_bias(ids)
                return self.attn(x, x, x, bias)
        """
    )
    bias = env(analysis, "forward", "bias", class_name="Model")
    assert bias.rank == 4  # zeros of `blocked.shape`: blocked's four axes
    assert bias.mask.scaled and bias.mask.bias_fill == "-inf" and bias.mask.padding_under_causal
    # The callee adds it to its scores: a -inf fill of that mask reaches its softmax.
    fills = [f for f in function(analysis, "forward", "Attention").fill_sites if f.additive]
    assert fills and fills[0].fill == "-inf" and fills[0].mask.mask.padding_under_causal


def test_a_closure_a_factory_returns_is_called_where_it_is_kept():
    analysis, _ = analyse(
        """
        import torch.nn as nn
        import torch.nn.functional as F

        def make_attention(scale):
            def attend(q, k, v, mask=None):
                return F.softmax(q @ k.transpose(-2, -1) * scale, dim=-1) @ v
            return attend

        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self._attend = make_attention(0.125)

            def forward(self, q, k, v):
                out = self._attend(q, k, v, mask=None)
                return out
        """
    )
    kept = env(analysis, "__init__", "self._attend", class_name="Block")
    assert kept.closure is not None and kept.closure[2].name.value == "attend"
    # The call runs the closure on this call's arguments: its result is the attention output.
    out = env(analysis, "forward", "out", class_name="Block")
    assert out.kind == "tensor"


def test_a_sequential_of_the_checked_codes_blocks_calls_each_blocks_forward():
    # `nn.Sequential(*[Block(d) for _ in range(n)])` (timm-style ViTs): the block's forward is
    # given what the container is given, so its attention knows the tokens' rank.
    analysis, _ = analyse(
        """
        import torch
        import torch.nn as nn

        class Block(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.qkv = nn.Linear(dim, 3 * dim)

            def forward(self, x):
                q, k, v = self.qkv(x).chunk(3, dim=-1)
                return torch.softmax(q @ k.transpose(-2, -1), dim=-1) @ v

        class ViT(nn.Module):
            def __init__(self, dim, depth):
                super().__init__()
                self.blocks = nn.Sequential(*[Block(dim) for _ in range(depth)])

            def forward(self, tokens):
                b, n, d = tokens.shape
                return self.blocks(tokens)
        """
    )
    assert env(analysis, "forward", "x", class_name="Block").rank == 3
    assert env(analysis, "forward", "tokens", class_name="ViT").rank == 3


def test_a_property_of_self_returning_a_buffer_is_that_buffer():
    analysis, _ = analyse(
        """
        import torch
        import torch.nn as nn

        class Attn(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.register_buffer("bias", torch.tril(torch.ones(n, n)))

            @property
            def causal_mask(self):
                return self.bias

            def forward(self, x):
                m = self.causal_mask
                return x
        """
    )
    mask = env(analysis, "forward", "m").mask
    assert mask is not None and mask.origin == "causal" and mask.buffer_attr == "bias"
