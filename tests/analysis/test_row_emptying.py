"""Which masks can leave a query with no key at all (the facts ATN203 reads): what `&` and `|`
keep of a row that one operand can empty, and thresholds on query-key similarities."""

from __future__ import annotations

import pytest

from attnlint.analysis.values import ATTEND

from helpers import analyse, env, function


def test_and_with_a_mask_of_unknown_meaning_keeps_the_rows_a_keep_mask_can_empty():
    analysis, _ = analyse(
        """
        import torch

        def f(x, lengths, window):
            i = torch.arange(x.size(1))
            band = (i[:, None] - i[None, :]).abs() <= window
            real = i[None, :] < lengths[:, None]
            both = band[None] & real[:, None, :]
            either = band[None] | real[:, None, :]
            return both, either
        """
    )
    both, either = env(analysis, "f", "both"), env(analysis, "f", "either")
    # `&` attends only where `real` does: what `real` shows of its rows (nothing: only a length
    # of 0 would empty one) is all that is shown.
    assert both.mask.convention == ATTEND and both.mask.can_mask_whole_row is None
    # `|` with a keep mask may attend more than it: nothing is shown.
    assert not either.mask.can_mask_whole_row


def test_a_fixed_threshold_on_query_key_similarities_can_give_rows_of_either_truth():
    analysis, _ = analyse(
        """
        import torch
        import torch.nn.functional as F

        def f(q, keys, occupied, tau=0.5):
            sim = F.cosine_similarity(q[:, None], keys[None], dim=-1)
            close = sim > tau
            usable = occupied[None] & close
            anyway = occupied[None] | close
            return close, usable, anyway
        """
    )
    close, usable, anyway = (env(analysis, "f", n) for n in ("close", "usable", "anyway"))
    assert close.mask.can_mask_whole_row and close.mask.uniform_rows == {0.0, 1.0}
    # A row with no key above the threshold is all False whatever `occupied` holds, under `&`;
    # under `|` only a row all True survives.
    assert usable.mask.uniform_rows == {0.0}
    assert anyway.mask.uniform_rows == {1.0}


def test_similarities_of_a_tensor_with_itself_keep_the_diagonal():
    analysis, _ = analyse(
        """
        import torch
        import torch.nn.functional as F

        def f(x, self_keys, radius=0.3):
            near = torch.cdist(x, x) < radius
            alike = F.cosine_similarity(x.unsqueeze(1), x.unsqueeze(0), dim=-1) > radius
            return near, alike
        """
    )
    for name in ("near", "alike"):
        value = env(analysis, "f", name)
        assert not value.mask.can_mask_whole_row and not value.mask.uniform_rows


def test_a_threshold_read_from_a_config_attribute_is_independent_of_the_rows():
    analysis, _ = analyse(
        """
        import torch

        class Reader:
            def forward(self, q, keys):
                far = torch.cdist(q, keys) > self.cfg.max_distance
                return far
        """
    )
    far = env(analysis, "forward", "far")
    assert far.mask.can_mask_whole_row is True


def test_a_mask_parameter_laid_out_per_key_marks_padded_keys_unless_written_into():
    analysis, _ = analyse(
        """
        def f(mask, b, n):
            viewed = mask.view(b, 1, 1, n)
            indexed = mask[:, None, None, :]
            every_axis = mask.view(b, 2, n, n)
            return viewed, indexed, every_axis

        def g(mask):
            mask[:, 0] = True
            return mask[:, None, None, :]
        """
    )
    viewed, indexed, every_axis = (env(analysis, "f", n) for n in ("viewed", "indexed", "every_axis"))
    assert viewed.mask.marks_padding and indexed.mask.marks_padding
    # Padded keys alone empty no row of a real batch.
    assert viewed.mask.can_mask_whole_row is None and indexed.mask.can_mask_whole_row is None
    assert not every_axis.mask.marks_padding
    (returned,) = [f for f in analysis.functions if f.name == "g"][0].returns
    assert returned.mask.rows_edited and returned.mask.can_mask_whole_row is None



@pytest.mark.parametrize(
    "clamped, can_empty",
    [
        ("lengths.clamp(min=1)", False),
        ("lengths.clamp_min(2)", False),
        ("torch.clamp(lengths, min=1)", False),
        ("lengths.clip(1.0, 50)", False),
        # Not shown to be at least 1: only a length of 0 would empty a row, which nothing shows.
        ("lengths.clamp(min=0)", None),
        ("lengths.clamp(max=50)", None),
        ("lengths.clamp(min=floor)", None),
    ],
)
def test_lengths_clamped_from_below_by_at_least_one_keep_a_key_in_every_row(clamped, can_empty):
    analysis, _ = analyse(
        f"""
        import torch

        def padding(lengths, max_len):
            return torch.arange(max_len)[None, :] >= lengths[:, None]

        def f(x, lengths, floor):
            m = padding({clamped}, x.size(1))
            return m
        """
    )
    assert env(analysis, "f", "m").mask.can_mask_whole_row is can_empty


def test_a_product_of_two_different_sets_of_vectors_is_a_similarity_but_of_one_set_with_itself_is_not():
    analysis, _ = analyse(
        """
        import torch.nn.functional as F

        def f(h, memory):
            across = F.normalize(h, dim=-1) @ F.normalize(memory, dim=-1).transpose(-2, -1)
            unit = F.normalize(h, dim=-1)
            within = unit @ unit.transpose(-2, -1)
            return across, within
        """
    )
    assert env(analysis, "f", "across").similarity
    assert not env(analysis, "f", "within").similarity


def test_a_store_through_a_bool_index_is_a_fill_but_a_store_into_labels_at_their_padding_is_not():
    analysis, _ = analyse(
        """
        import torch

        def f(q, k, lengths, targets, pad):
            s = q @ k.transpose(-2, -1)
            keep = torch.arange(k.size(1))[None, None, :] < lengths[:, None, None]
            s[~keep] = float("-inf")
            targets[targets == pad] = -100
            return s.softmax(-1), targets
        """
    )
    f = function(analysis, "f")
    (site,) = f.fill_sites
    assert site.fill == "-inf" and site.in_place and site.mask.mask.origin == "lengths"
    assert [s.fill for s in env(analysis, "f", "s").fills] == ["-inf"]


def test_one_padding_mask_laid_along_queries_and_keys_of_four_axes_masks_padded_queries():
    analysis, _ = analyse(
        """
        def f(key_padding_mask):
            both = key_padding_mask[:, None, :, None] | key_padding_mask[:, None, None, :]
            keys_twice = key_padding_mask[:, None, None, :] | key_padding_mask[:, None, None, :]
            return both, keys_twice
        """
    )
    both, keys_twice = env(analysis, "f", "both"), env(analysis, "f", "keys_twice")
    assert both.mask.masks_padded_queries and both.mask.can_mask_whole_row is True
    assert not keys_twice.mask.masks_padded_queries and keys_twice.mask.can_mask_whole_row is None


def test_a_causal_mask_on_one_path_and_causal_and_padding_on_the_other_keep_the_padding():
    analysis, _ = analyse(
        """
        import torch

        def f(T, attention_mask=None):
            allowed = torch.ones(T, T, dtype=torch.bool).tril()
            if attention_mask is not None:
                allowed = allowed & attention_mask[:, None, None, :].bool()
            return allowed
        """
    )
    allowed = env(analysis, "f", "allowed").mask
    # On the path with the padding mask, left padding empties the first rows.
    assert allowed.padding_under_causal and allowed.causal_part and allowed.convention == ATTEND


def test_a_mask_named_so_multiplied_along_queries_and_keys_masks_padded_queries():
    analysis, _ = analyse(
        """
        def f(msa_mask, feats):
            pair_mask = msa_mask[..., :, None] * msa_mask[..., None, :]
            outer = feats[..., :, None] * feats[..., None, :]
            return pair_mask, outer
        """
    )
    pair_mask = env(analysis, "f", "pair_mask").mask
    assert pair_mask.masks_padded_queries and pair_mask.can_mask_whole_row is True
    # An outer product of features is no mask.
    assert env(analysis, "f", "outer").mask is None


MHA_MASKS = """
    import torch
    import torch.nn as nn

    class Block(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.emb = nn.Embedding(100, d, padding_idx=0)
            self.attn = nn.MultiheadAttention(d, 2, batch_first=True)

        def forward(self, ids):
            x = self.emb(ids)
            n = x.shape[1]
            pad = ids == 0
            causal = ~torch.tril(torch.ones((n, n), dtype=torch.bool))
            bias = torch.triu(torch.full((n, n), float("-inf")), diagonal=1)
            a, _ = self.attn(x, x, x, attn_mask=causal, key_padding_mask=pad)
            b, _ = self.attn(x, x, x, attn_mask=bias, key_padding_mask=pad)
            c, _ = self.attn(x, x, x, attn_mask=causal, key_padding_mask=pad, need_weights=False)
            d, _ = self.attn(x, x, x, key_padding_mask=pad)
            return a, b, c, d
"""


def test_masks_given_together_to_multihead_attention_are_their_union():
    from attnlint.analysis import masks

    analysis, _ = analyse(MHA_MASKS)
    together = masks.given_together(function(analysis, "forward", "Block").mask_uses)
    # a (bool causal) and b (a -inf causal bias): a causal mask over padding; d the padding mask
    # alone, which empties no row; not c (the fused path returns zeros for an empty row).
    assert [facts.padding_under_causal for _, facts in together] == [True, True, False]
    assert not together[2][1].can_mask_whole_row


def test_a_transformer_layers_masks_and_one_combined_mask_are_given_together():
    from attnlint.analysis import masks

    analysis, _ = analyse(
        """
        import torch
        import torch.nn as nn

        class Block(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.emb = nn.Embedding(100, d, padding_idx=0)
                self.layer = nn.TransformerEncoderLayer(d, 2, batch_first=True)
                self.attn = nn.MultiheadAttention(d, 2, batch_first=True)

            def forward(self, ids):
                x = self.emb(ids)
                n = x.shape[1]
                pad = ids == 0
                causal = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
                x = self.layer(x, src_mask=causal, src_key_padding_mask=pad)
                out, _ = self.attn(x, x, x, attn_mask=causal[None, :, :] | pad[:, None, :])
                return out
        """
    )
    together = masks.given_together(function(analysis, "forward", "Block").mask_uses)
    assert [facts.padding_under_causal for _, facts in together] == [True, True]
