"""Facts of the attention APIs: which calls are SDPA (also through a name or an attribute that
holds it), and the truth of the `is_causal` flag they are given."""

from __future__ import annotations

import pytest
from helpers import analyse, env, function

from attnlint.analysis import attention

SDPA_IN_AN_ATTRIBUTE = """
import torch.nn as nn
import torch.nn.functional as F

class Attention(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.p = p
        self.kernel = F.scaled_dot_product_attention
        self.other = some_kernel

    def forward(self, q, k, v, mask):
        a = self.kernel(q, k, v, attn_mask=mask, dropout_p=self.p)
        b = self.other(q, k, v, attn_mask=mask, dropout_p=self.p)
        return a + b
"""


def test_a_call_through_an_attribute_holding_sdpa_is_an_sdpa_call_and_another_attribute_is_not():
    analysis, _ = analyse(SDPA_IN_AN_ATTRIBUTE)
    calls = function(analysis, "forward").attention_calls
    assert [c.api for c in calls] == ["sdpa"]
    assert calls[0].mask_keywords == ("attn_mask",)
    assert calls[0].call.func.attr.value == "kernel"


def test_a_local_name_bound_to_sdpa_is_sdpa_and_a_join_of_two_callables_is_not():
    analysis, _ = analyse(
        """
        import torch
        from torch.nn.functional import scaled_dot_product_attention

        def one(q, k, v):
            attend = scaled_dot_product_attention
            return attend(q, k, v)

        def two(q, k, v, fast):
            attend = torch.nn.functional.scaled_dot_product_attention if fast else slow_attention
            return attend(q, k, v)
        """
    )
    assert [c.api for c in function(analysis, "one").attention_calls] == ["sdpa"]
    assert function(analysis, "two").attention_calls == []


def _flag(source: str):
    analysis, _ = analyse(source)
    (call,) = function(analysis, "attend").attention_calls
    return call.causal_flag.truth if call.causal_flag is not None else None


@pytest.mark.parametrize(
    "flag, truth",
    [
        ("True", True),
        ("False", False),
        ("T > 1", True),
        ("1 < T", True),
        ("T >= 2", True),
        ("q.size(2) != 1", True),
        ("q.shape[-2] > 1", True),
        ("T == 1", None),
        ("T > 4", None),  # short sequences are ordinary too
        ("not T > 1", False),
        ("T > 1 and mask is None", None),
        ("mask is None", None),
        ("T > 1 and True", True),
        ("T > 1 and False", False),
        ("mask is None or T > 1", True),
        ("self.is_causal", None),
        ("heads > 1", None),  # a constant-sized parameter, not a size read from a tensor
    ],
)
def test_the_truth_of_a_causal_flag(flag, truth):
    source = f"""
    import torch.nn.functional as F

    def attend(q, k, v, mask, heads=8):
        B, H, T, D = q.shape
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal={flag})
    """
    assert _flag(source) is truth


def test_a_flag_cleared_on_one_path_has_no_truth_at_the_join():
    source = """
    import torch.nn.functional as F

    def attend(q, k, v, mask=None):
        causal = q.size(-2) > 1
        if mask is not None:
            causal = False
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)
    """
    assert _flag(source) is None


@pytest.mark.parametrize(
    "name, padding",
    [
        ("attention_mask", True),
        ("key_padding_mask", True),
        ("encoder_padding_mask", True),
        ("src_pad_mask", True),
        ("memory_key_padding_mask", True),
        ("mask", False),
        ("causal_mask", False),
        ("padding_mask_cache", False),
        ("_padding_mask", False),
    ],
)
def test_which_names_say_a_padding_mask(name, padding):
    from attnlint.analysis import masks

    assert masks.names_padding(name) is padding


@pytest.mark.parametrize(
    "name, per_sequence",
    [
        ("lengths", True),
        ("x_lens", True),
        ("src_lengths", True),
        ("seq_lens", True),
        ("frame_lens", True),
        ("max_len", False),  # one number for the batch
        ("seq_len", False),
        ("cu_seqlens", False),  # cumulative offsets of a packed batch
        ("max_lengths", False),
        ("num_lengths", False),
        ("LENGTHS", False),
    ],
)
def test_which_names_say_per_sequence_lengths(name, per_sequence):
    from attnlint.analysis import masks

    assert masks.names_sequence_lengths(name) is per_sequence


def test_lengths_parameters_a_function_never_reads():
    analysis, _ = analyse(
        """
        def pool(frames, lengths, other_lens):
            return frames.sum(1) / other_lens[:, None]
        """
    )
    assert attention.unused_lengths_parameters(function(analysis, "pool")) == ["lengths"]


def test_a_suffixed_padding_mask_parameter_reaching_a_fill_is_a_mask_into_attention():
    analysis, _ = analyse(
        """
        import torch
        import torch.nn as nn

        class SourceAttention(nn.Module):
            def forward(self, x, memory, encoder_padding_mask=None):
                s = torch.bmm(x, memory.transpose(1, 2))
                if encoder_padding_mask is not None:
                    s = s.masked_fill(encoder_padding_mask.unsqueeze(1), float("-inf"))
                return torch.bmm(torch.softmax(s, dim=-1), memory)
        """
    )
    assert analysis.forward_of("SourceAttention").masks_into_attention() == {"encoder_padding_mask"}


def test_unread_padding_masks_are_the_padding_masks_bound_and_never_read():
    from attnlint.analysis import attention

    analysis, _ = analyse(
        """
        def f(batch, tokens):
            encoder_padding_mask = batch["encoder_padding_mask"]
            memory, memory_pad_mask = batch["memory"]
            src_pad_mask = tokens.eq(0)
            key_padding_mask = None
            mask = tokens > 0
            return g(src_pad_mask, memory)

        def h(batch):
            pad_mask = batch["pad_mask"]
            return call(**locals())
        """
    )
    assert set(attention.unread_padding_masks(function(analysis, "f"))) == {"encoder_padding_mask", "memory_pad_mask"}
    assert attention.unread_padding_masks(function(analysis, "h")) == {}


def test_a_mask_that_is_none_on_one_path_is_the_other_paths_mask_and_a_combination_keeps_its_parts():
    analysis, _ = analyse(
        """
        import torch

        def forward(x, attention_mask=None):
            T = x.size(1)
            mask = None
            if attention_mask is not None:
                causal = torch.ones(T, T, dtype=torch.bool).tril()
                mask = causal & attention_mask.bool()[:, None, None, :]
            return mask
        """
    )
    mask = env(analysis, "forward", "mask").mask
    assert mask is not None and mask.origin == "combined"
    assert mask.parts_from == {"attention_mask"}


def test_a_slice_of_a_padded_list_is_padded():
    analysis, _ = analyse(
        """
        PAD = 0

        def f(ids, n):
            full = [PAD] * (n - len(ids)) + ids
            inputs = full[:-1]
            first = full[0]
            return inputs
        """
    )
    assert env(analysis, "f", "inputs").padding.value == 0.0
    assert env(analysis, "f", "first").padding is None


def test_the_rates_callers_pass_to_a_helper_that_hands_its_parameter_to_sdpa():
    from attnlint.analysis import dropout

    analysis, module = analyse(
        """
        import torch.nn as nn
        import torch.nn.functional as F

        def attend(q, k, v, p=0.0):
            return F.scaled_dot_product_attention(q, k, v, dropout_p=p)

        class Block(nn.Module):
            def forward(self, q, k, v):
                a = attend(q, k, v, self.p)
                b = attend(q, k, v, p=self.p if self.training else 0.0)
                c = attend(q, k, v)
                return self._inner(q, k, v, self.q)

            def _inner(self, q, k, v, p):
                return F.scaled_dot_product_attention(q, k, v, dropout_p=p)
        """
    )
    passed = dropout.rates_from_callers(analysis, function(analysis, "attend"), "p")
    assert [module.code_for_node(r.rate) for r in passed] == ["self.p", "self.p if self.training else 0.0"]
    assert {r.caller.name for r in passed} == {"forward"}
    inner = dropout.rates_from_callers(analysis, function(analysis, "_inner"), "p")
    assert [module.code_for_node(r.rate) for r in inner] == ["self.q"]


def test_an_encoder_decoder_call_needs_a_mask_for_each_padded_input():
    from attnlint.analysis.attention import padded_inputs_without_mask

    analysis, _ = analyse(
        """
        import torch.nn as nn
        from torch.nn.utils.rnn import pad_sequence

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.core = nn.Transformer(d_model=16, nhead=4, batch_first=True)
                self.emb = nn.Embedding(10, 16)

            def forward(self, xs, ys, causal, src_pad):
                src = self.emb(pad_sequence(xs, batch_first=True))
                tgt = self.emb(pad_sequence(ys, batch_first=True))
                a = self.core(src, tgt, tgt_mask=causal)
                b = self.core(src, tgt, tgt_mask=causal, src_key_padding_mask=src_pad)
                c = self.core(src, tgt, src_key_padding_mask=src_pad)
                return a, b, c
        """
    )
    a, b, c = function(analysis, "forward").attention_calls
    assert padded_inputs_without_mask(a) == ["src"]
    # Masked in the encoder only: the decoder's cross-attention still sees the source's padding.
    assert padded_inputs_without_mask(b) == ["memory"]
    assert padded_inputs_without_mask(c) == ["tgt", "memory"]


def test_a_module_moved_to_a_device_is_still_that_module():
    analysis, _ = analyse(
        """
        import torch.nn as nn

        class Net(nn.Module):
            def forward(self, x):
                return x

        def f():
            model = Net().to("cuda")
            half = Net().half()
            return model
        """
    )
    assert env(analysis, "f", "model").module_type == "Net"
    assert env(analysis, "f", "half").module_type == "Net"


def test_the_callers_that_give_a_dropout_helper_attention_weights():
    from attnlint.analysis.dropout import weights_from_callers

    analysis, _ = analyse(
        """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F

        def drop(x, p):
            return F.dropout(x, p)

        def attend(q, k, v, p):
            return drop(torch.softmax(q @ k.transpose(-2, -1) * 0.125, dim=-1), p) @ v

        class A(nn.Module):
            def forward(self, q, k, v, h):
                out = attend(q, k, v, self.p)
                if self.training:
                    out = attend(q, k, v, self.p)
                hidden = drop(h, self.p)
                return out, hidden, attend(q, k, v, self.p if self.training else 0.0)
        """
    )
    found = weights_from_callers(analysis, function(analysis, "drop"), "x")
    # Only the first call of `attend` (the one under the test and the one whose rate follows
    # the mode are not; `drop(h, ...)` drops hidden states).
    assert [(f.caller.name, f.mode) for f in found] == [("forward", "self.training")]


def test_keywords_spread_from_a_dict_built_in_the_function_reach_sdpa():
    analysis, module = analyse(
        """
        import torch
        import torch.nn.functional as F

        def f(q, k, v, n):
            kwargs = dict(attn_mask=torch.ones(n, n, dtype=torch.bool).tril(), is_causal=True)
            return F.scaled_dot_product_attention(q, k, v, **kwargs)
        """
    )
    facts = function(analysis, "f")
    (site,) = facts.attention_calls
    (use,) = facts.mask_uses
    assert use.call is site.call and use.mask.mask.origin == "causal"
    assert site.is_causal and module.code_for_node(site.causal_flag_node) == "True"


def test_masks_handed_to_a_layer_the_analysis_does_not_know_are_kept_apart():
    from helpers import analyse, function

    analysis, _ = analyse(
        """
        import torch.nn as nn
        from elsewhere import MultiheadAttention

        class Layer(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.attn = MultiheadAttention(d, 4)

            def forward(self, x, attn_mask, keep):
                attn_mask = attn_mask.masked_fill(attn_mask.bool(), -1e8)
                return self.attn(query=x, key=x, value=x, attn_mask=attn_mask, other=keep)
        """
    )
    facts = function(analysis, "forward", "Layer")
    (handoff,) = facts.mask_handoffs
    assert handoff.keyword == "attn_mask" and handoff.mask.additive_fill is not None
    assert not facts.mask_uses


def test_softmax_weights_summed_against_values_through_a_view_weigh_values():
    analysis, _ = analyse(
        """
        import torch
        import torch.nn.functional as F

        def additive(e, memory):
            alpha = F.softmax(e, dim=1)
            return torch.bmm(alpha.unsqueeze(1), memory)

        def learned(e, codes: torch.nn.Parameter):
            w = F.softmax(e, dim=-1)
            return w.unsqueeze(1) @ torch.nn.Parameter(codes)

        def returned(e):
            return F.softmax(e, dim=-1).unsqueeze(1)
        """
    )
    (additive,) = function(analysis, "additive").softmax_sites
    (learned,) = function(analysis, "learned").softmax_sites
    (returned,) = function(analysis, "returned").softmax_sites
    assert additive.weighs_values
    assert not learned.weighs_values  # a learned matrix: prototypes mixed, not positions
    assert not returned.weighs_values


@pytest.mark.parametrize(
    "name, attended",
    [
        ("ctx_mask", True),
        ("encoder_mask", True),
        ("src_mask", True),
        ("memory_mask", True),
        ("loss_mask", False),
        ("causal_mask", False),
        ("mask", False),
        ("ctx_masks", False),
    ],
)
def test_which_mask_names_say_the_sequence_attended(name, attended):
    from attnlint.analysis import masks

    assert masks.names_attended_mask(name) is attended


def test_closures_of_a_function_and_weights_summed_through_a_view():
    analysis, _ = analyse(
        """
        import torch

        def decode(xs, memory, ctx_mask):
            def step(h):
                a = torch.softmax(torch.bmm(memory, h.unsqueeze(2)).squeeze(2), dim=1)
                return torch.bmm(a.view(a.size(0), 1, a.size(1)), memory)
            return [step(x) for x in xs]
        """
    )
    outer = function(analysis, "decode")
    (inner,) = analysis.nested_in(outer)
    assert inner.name == "step" and inner.computes_attention()
    assert not outer.computes_attention()


def test_only_attended_padding_needs_a_mask():
    """A padded query against keys that are not padded (text attending to image patches) attends
    to nothing it should not; padded keys do, in an API call and in hand-written scores."""
    from attnlint.analysis.attention import padded_inputs_without_mask

    analysis, _ = analyse(
        """
        import torch
        import torch.nn as nn
        from torch.nn.utils.rnn import pad_sequence

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.attn = nn.MultiheadAttention(16, 4, batch_first=True)
                self.emb = nn.Embedding(10, 16)
                self.to_q = nn.Linear(16, 16)
                self.to_k = nn.Linear(16, 16)

            def forward(self, token_lists, patches):
                text = self.emb(pad_sequence(token_lists, batch_first=True))
                to_patches = self.attn(text, patches, patches)
                to_text = self.attn(patches, text, text)
                q_text, k_text = self.to_q(text), self.to_k(text)
                q_patches, k_patches = self.to_q(patches), self.to_k(patches)
                by_hand = torch.softmax(q_text @ k_patches.transpose(1, 2), dim=-1)
                over_text = torch.softmax(q_patches @ k_text.transpose(1, 2), dim=-1)
                return to_patches, to_text, by_hand, over_text
        """
    )
    forward = function(analysis, "forward")
    to_patches, to_text = forward.attention_calls
    assert padded_inputs_without_mask(to_patches) == []
    assert padded_inputs_without_mask(to_text) == ["input"]
    by_hand, over_text = forward.softmax_sites
    assert not by_hand.input.scores.padded
    assert over_text.input.scores.padded


def test_a_padded_source_needs_its_mask_in_the_decoder_too():
    from attnlint.analysis.attention import padded_inputs_without_mask

    analysis, _ = analyse(
        """
        import torch.nn as nn
        from torch.nn.utils.rnn import pad_sequence

        model = nn.Transformer(d_model=8, nhead=2)

        def run(srcs, tgts, src_pad, tgt_pad, causal):
            src = pad_sequence(srcs)
            tgt = pad_sequence(tgts)
            a = model(src, tgt, tgt_mask=causal, src_key_padding_mask=src_pad, tgt_key_padding_mask=tgt_pad)
            b = model(src, tgt, tgt_mask=causal, src_key_padding_mask=src_pad, memory_key_padding_mask=src_pad)
            return a, b
        """
    )
    encoder_only, both = [c for f in analysis.functions for c in f.attention_calls]
    assert padded_inputs_without_mask(encoder_only) == ["memory"]
    assert padded_inputs_without_mask(both) == []


def test_a_call_that_leaves_the_mask_out_gives_the_helper_no_mask_on_its_reading():
    analysis, _ = analyse(
        """
        import torch.nn as nn
        import torch.nn.functional as F

        class MHA(nn.Module):
            def forward(self, q, k, v, attn_mask=None, causal=False):
                return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=causal)

        class Layer(nn.Module):
            def __init__(self):
                super().__init__()
                self.self_attn = MHA()
                self.src_attn = MHA()

            def forward(self, y, memory, tgt_pad, src_pad):
                y = self.self_attn(y, y, y, causal=True)
                z = self.self_attn(y, y, y, attn_mask=tgt_pad, causal=True)
                return self.src_attn(y, memory, memory, attn_mask=src_pad)
        """
    )
    # The helper's own reading keeps its mask path; only the call passing a mask and causal=True
    # makes SDPA get both.
    assert function(analysis, "forward", "MHA").mask_uses
    ((call, found),) = analysis.causal_flags_with_masks_by_calls()
    assert call.args[3].keyword.value == "attn_mask" and found.flag.value == "causal"
