"""Mask conventions and pad values, from every idiom that builds them."""

from __future__ import annotations

import libcst as cst
import pytest

from attnlint.analysis.values import ATTEND, MASKED

from helpers import analyse, env, function


def test_triangular_masks_and_comparisons():
    analysis, _ = analyse(
        """
        import torch

        def f(T, lengths):
            future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
            keep = torch.tril(torch.ones(T, T)).bool()
            valid = torch.arange(T)[None, :] < lengths[:, None]
            padding = ~valid
            return future, keep, valid, padding
        """
    )
    assert env(analysis, "f", "future").mask.convention == MASKED
    assert env(analysis, "f", "keep").mask.convention == ATTEND
    assert env(analysis, "f", "valid").mask.convention == ATTEND
    assert env(analysis, "f", "padding").mask.convention == MASKED


def test_comparison_methods_and_functions_mean_their_operators():
    analysis, _ = analyse(
        """
        import torch

        def f(tokens, pad_id, lengths, T, mask):
            pad = tokens.eq(pad_id)
            real = torch.ne(tokens, pad_id)
            valid = torch.arange(T)[None, :].lt(lengths[:, None])
            beyond = torch.ge(torch.arange(T)[None, :], lengths[:, None])
            inverted = mask.eq(0)
            return pad, real, valid, beyond, inverted
        """
    )
    assert env(analysis, "f", "pad").mask.convention == MASKED
    assert env(analysis, "f", "real").mask.convention == ATTEND
    assert env(analysis, "f", "valid").mask.convention == ATTEND
    assert env(analysis, "f", "beyond").mask.convention == MASKED
    # A mask of unknown convention compared with 0 stays a mask of unknown convention.
    assert env(analysis, "f", "inverted").mask is not None
    assert env(analysis, "f", "inverted").mask.convention is None


def test_or_with_a_causal_mask_tells_an_unnamed_mask_its_convention():
    analysis, _ = analyse(
        """
        import torch

        def f(scores, pad_mask, T):
            causal = torch.ones(T, T, dtype=torch.bool).triu(1)
            blocked = causal[None, None] | pad_mask[:, None, None, :]
            return blocked
        """
    )
    blocked = env(analysis, "f", "blocked").mask
    assert blocked.convention == MASKED
    # A padding mask under a causal mask: rows are empty exactly where the padding is on the left.
    assert blocked.padding_under_causal and not blocked.can_mask_whole_row


def test_pad_values_from_pad_sequence_and_list_padding():
    analysis, _ = analyse(
        """
        import torch
        from torch.nn.utils.rnn import pad_sequence

        PAD = 3

        def collate(batch):
            return pad_sequence(batch, batch_first=True, padding_value=PAD)

        def pad_rows(seqs, n):
            return torch.tensor([s + [PAD] * (n - len(s)) for s in seqs])

        def pad_loop(seqs, n):
            rows = []
            for s in seqs:
                rows.append(s + [0] * (n - len(s)))
            return torch.tensor(rows)
        """
    )
    assert function(analysis, "collate").returns[0].padding.value == 3
    assert function(analysis, "pad_rows").returns[0].padding.value == 3
    assert function(analysis, "pad_loop").returns[0].padding.value == 0


def test_pad_value_from_a_dataclass_config_and_a_tokenizer_attribute():
    analysis, _ = analyse(
        """
        import torch
        from dataclasses import dataclass

        @dataclass
        class Config:
            pad_token_id: int = 5

        class Tokenizer:
            def __init__(self):
                self.pad_id = 7

            def encode(self, rows, n):
                return torch.tensor([r + [self.pad_id] * (n - len(r)) for r in rows])

        def pad(rows, n, config: Config):
            return torch.tensor([r + [config.pad_token_id] * (n - len(r)) for r in rows])
        """
    )
    assert function(analysis, "pad").returns[0].padding.value == 5
    assert function(analysis, "encode").returns[0].padding.value == 7


def test_hf_label_masking_rewrites_the_pad_value():
    analysis, _ = analyse(
        """
        from torch.nn.utils.rnn import pad_sequence

        def labels_of(batch, pad_id):
            labels = pad_sequence(batch, batch_first=True, padding_value=0)
            labels[labels == 0] = -100
            return labels
        """
    )
    assert env(analysis, "labels_of", "labels").padding.value == -100


def test_padded_batch_reaches_a_loss_in_another_function():
    analysis, _ = analyse(
        """
        import torch.nn.functional as F
        from torch.nn.utils.rnn import pad_sequence

        def loss_of(logits, targets):
            return F.cross_entropy(logits, targets)

        def step(model, batch):
            targets = pad_sequence(batch, batch_first=True, padding_value=1)
            return loss_of(model(targets), targets)
        """
    )
    (site,) = function(analysis, "loss_of").loss_sites
    assert site.targets.padding.value == 1
    assert site.ignore_index == -100


def test_padded_batch_from_a_data_loader_reaches_the_module_forward():
    analysis, _ = analyse(
        """
        import torch.nn as nn
        from torch.nn.utils.rnn import pad_sequence
        from torch.utils.data import DataLoader

        def collate(batch):
            return pad_sequence(batch, batch_first=True)

        class Encoder(nn.Module):
            def forward(self, tokens):
                return tokens

        def train(model, loader):
            for tokens in loader:
                model(tokens)

        if __name__ == "__main__":
            train(Encoder(), DataLoader([], collate_fn=collate))
        """
    )
    assert function(analysis, "forward", "Encoder").params["tokens"].padded


def test_a_parameter_with_no_informative_callers_keeps_what_its_name_says():
    analysis, _ = analyse(
        """
        def f(attention_mask):
            return attention_mask

        f(get_mask())
        """
    )
    assert function(analysis, "f").params["attention_mask"].mask.convention == ATTEND


def test_pad_id_and_collate_imported_from_another_module_of_the_project(tmp_path):
    from pathlib import Path

    import libcst as cst

    from attnlint.analysis import analyze_module
    from attnlint.analysis.project import Project

    package = tmp_path / "proj"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "data.py").write_text(
        "from torch.nn.utils.rnn import pad_sequence\n"
        "PAD_ID = 2\n"
        "def collate(batch):\n"
        "    return pad_sequence(batch, batch_first=True, padding_value=PAD_ID)\n"
    )
    train = package / "train.py"
    train.write_text(
        "import torch.nn.functional as F\n"
        "from .data import PAD_ID, collate\n"
        "def loss(model, rows):\n"
        "    batch = collate(rows)\n"
        "    return F.cross_entropy(model(batch), batch)\n"
    )
    project = Project([tmp_path])
    analysis = analyze_module(cst.parse_module(train.read_text()), project=project, path=Path(train))
    assert analysis.constants["PAD_ID"].int_value == 2
    (site,) = [s for f in analysis.functions for s in f.loss_sites]
    assert site.targets.padding.value == 2
    assert site.targets.padding.node is None  # facts from another file carry none of its nodes
    # Without the project the import is unknown, and unknown never fires.
    alone = analyze_module(cst.parse_module(train.read_text()))
    (site,) = [s for f in alone.functions for s in f.loss_sites]
    assert not site.targets.padded


LITERAL_MASK_ATTENTION = """
import torch

class PaddedAttention(torch.nn.Module):
    def forward(self, q, k, v, keep):
        s = q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5
        s = s.masked_fill({fill_mask}, float("-inf"))
        return s.softmax(dim=-1) @ v

if __name__ == "__main__":
    layer = PaddedAttention().eval()
    x = torch.randn(2, 3, 8)
    layer(x, x, x, torch.tensor({rows}))
"""


def _fill_mask_facts(fill_mask, rows):
    from helpers import analyse

    analysis, _ = analyse(LITERAL_MASK_ATTENTION.format(fill_mask=fill_mask, rows=rows))
    (site,) = [s for f in analysis.functions if f.name == "forward" for s in f.fill_sites]
    return site.mask.mask


def test_a_literal_mask_passed_by_a_smoke_test_tells_which_rows_the_fill_covers_whole():
    # `keep == 0` of a row of zeros is a row of True: masked_fill fills every key of it.
    assert 1.0 in _fill_mask_facts("keep == 0", "[[1, 1, 0], [0, 0, 0]]").uniform_rows
    # The same row through `keep.bool()` (True = kept) fills none of it.
    assert 1.0 not in _fill_mask_facts("keep.bool()", "[[1, 1, 0], [0, 0, 0]]").uniform_rows
    assert 1.0 in _fill_mask_facts("~keep.bool()", "[[1, 1, 0], [0, 0, 0]]").uniform_rows
    # No uniform row, or not a 0/1 matrix (token ids): nothing is claimed.
    for rows in ("[[1, 1, 0], [1, 0, 0]]", "[[3, 4, 0], [0, 0, 0]]"):
        facts = _fill_mask_facts("keep == 0", rows)
        assert facts is None or not facts.uniform_rows


def test_lengths_where_a_mask_meets_the_scores_and_the_names_holding_them():
    analysis, _ = analyse(
        """
        import torch
        import torch.nn.functional as F

        def self_attention(x, bias):
            B, T, C = x.size()
            att = x @ x.transpose(-2, -1)
            return att.masked_fill(bias == 0, float("-inf"))

        def cached(q, k_cache, causal):
            batch, heads, n_new, d = q.shape
            _, _, n_total, _ = k_cache.shape
            scores = q @ k_cache.transpose(-2, -1)
            return torch.where(causal, scores, float("-inf"))

        def fused(q, k, v, causal):
            b, h, t_q, d = q.shape
            b, h, t_k, d = k.shape
            return F.scaled_dot_product_attention(q, k, v, attn_mask=causal)

        def unknown(scores, causal):
            return scores.masked_fill(causal, float("-inf"))
        """
    )
    square = function(analysis, "self_attention").fill_sites[0].lengths
    assert square.square and square.query_names == ("T",) and square.key_names == ("T",)
    cached = function(analysis, "cached").fill_sites[0].lengths
    assert not cached.square
    assert (cached.queries.text(), cached.keys.text()) == ("n_new", "n_total")
    assert (cached.query_names, cached.key_names) == (("n_new",), ("n_total",))
    fused = function(analysis, "fused").mask_uses[0].lengths
    assert (fused.query_names, fused.key_names) == (("t_q",), ("t_k",))
    # Nothing is known of the scores' shape: no lengths, and a fix must read them itself.
    assert function(analysis, "unknown").fill_sites[0].lengths is None


def test_a_buffer_registered_on_one_branch_and_none_on_the_other_is_still_that_buffer():
    analysis, _ = analyse(
        """
        import torch
        import torch.nn as nn

        class Attention(nn.Module):
            def __init__(self, causal, n):
                super().__init__()
                if causal:
                    self.register_buffer("mask", torch.tril(torch.ones(n, n, dtype=torch.bool)))
                else:
                    self.mask = None
                if causal:
                    self.register_buffer("only_sometimes", torch.ones(n, n).triu(1).bool())

            def forward(self, x, extra=None):
                combined = self.mask if extra is None else extra & self.mask
                if self.mask is not None:
                    extra = self.mask if extra is None else extra & self.mask
                return combined, extra, self.only_sometimes
        """
    )
    cls = analysis.classes["Attention"]
    assert cls.attrs["mask"].mask.built_size == ("n", "n")  # not the `self.mask = None` of the else
    assert cls.attrs["only_sometimes"].mask.buffer_attr == "only_sometimes"
    combined = env(analysis, "forward", "combined").mask
    assert (combined.origin, combined.buffer_attr, combined.built_size) == ("causal", "mask", ("n", "n"))
    # The parameter on one path, the buffer on the other: where the buffer came from is kept,
    # what True means is not.
    extra = env(analysis, "forward", "extra").mask
    assert (extra.buffer_attr, extra.built_size, extra.sliced) == ("mask", ("n", "n"), False)
    assert extra.convention is None and extra.can_mask_whole_row is None


def test_a_mask_joined_with_none_is_that_mask():
    analysis, _ = analyse(
        """
        import torch

        def f(T, causal):
            mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1) if causal else None
            return mask
        """
    )
    assert env(analysis, "f", "mask").mask.convention == MASKED


def test_logical_functions_and_methods_mean_their_operators():
    analysis, _ = analyse(
        """
        import torch

        def f(T, lengths, pad_mask):
            keep = torch.arange(T)[None, :] < lengths[:, None]
            future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
            blocked = torch.logical_or(future[None], pad_mask[:, None, :])
            allowed = keep[:, None, :].logical_and(~future[None])
            dropped = torch.logical_not(keep)
            return blocked, allowed, dropped
        """
    )
    assert env(analysis, "f", "blocked").mask.convention == MASKED
    assert env(analysis, "f", "blocked").mask.padding_under_causal
    assert env(analysis, "f", "allowed").mask.convention == ATTEND
    assert env(analysis, "f", "dropped").mask.convention == MASKED


def test_words_in_a_local_name_say_what_true_means():
    from attnlint.analysis.masks import convention_from_words

    assert convention_from_words("memory_valid") == ATTEND
    assert convention_from_words("keep_mask") == ATTEND
    assert convention_from_words("invalid_keys") == MASKED
    # Names that count or measure hold numbers, not masks.
    assert convention_from_words("valid_lens") is None
    assert convention_from_words("num_valid") is None
    assert convention_from_words("mask") is None


def test_fills_one_after_the_other_mask_the_union_of_their_masks():
    from attnlint.analysis import masks

    analysis, _ = analyse(
        """
        import torch
        import torch.nn as nn

        class Decoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = nn.Embedding(100, 16, padding_idx=0)

            def forward(self, ids, mask):
                h = self.embed(ids)
                n = ids.size(1)
                s = h @ h.transpose(1, 2)
                s = s.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
                padded = s.masked_fill((ids == 0)[:, None, :], float("-inf"))
                window = s.masked_fill(torch.ones(n, n, dtype=torch.bool).tril(-4), float("-inf"))
                unknown = s.masked_fill(mask, float("-inf"))
                return padded.softmax(-1), window.softmax(-1), unknown.softmax(-1)
        """
    )
    padded, window, unknown = (s.input.fills for s in function(analysis, "forward", "Decoder").softmax_sites)
    # Causal alone keeps the diagonal and ids alone need an all-padding row; together a
    # left-padded query sees only padding, so the union empties a row where the file pads left.
    assert [f.mask.mask.can_mask_whole_row for f in padded] == [False, None]
    together = masks.filled_together(padded)
    assert together.padding_under_causal and together.can_mask_whole_row is None
    # A band below the diagonal (`tril(-4)`) and a caller's mask: no convention the code shows,
    # so nothing to combine.
    assert masks.filled_together(window) is None
    assert masks.filled_together(unknown) is None


def test_a_triangle_of_minus_infinity_is_a_bias_whose_masked_entries_are_minus_infinity():
    analysis, _ = analyse(
        """
        import torch
        import torch.nn as nn

        def f(T):
            ahead = torch.full((T, T), float("-inf")).triu(1)
            finite = torch.full((T, T), torch.finfo(torch.float32).min).triu(1)
            square = nn.Transformer.generate_square_subsequent_mask(T)
            return ahead, finite, square
        """
    )
    ahead, finite, square = (env(analysis, "f", n).mask for n in ("ahead", "finite", "square"))
    assert ahead.scaled and ahead.bias_fill == "-inf" and ahead.convention == MASKED
    assert finite.scaled and finite.bias_fill is None
    assert square.scaled and square.bias_fill == "-inf" and square.convention == MASKED
    assert not square.can_mask_whole_row


def test_lengths_given_to_pack_padded_sequence_are_at_least_one_from_there_on():
    analysis, _ = analyse(
        """
        import torch
        from torch.nn.utils.rnn import pack_padded_sequence

        def f(x, lengths):
            before = torch.arange(x.size(1))[None, :] < lengths[:, None]
            packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True)
            after = torch.arange(x.size(1))[None, :] < lengths[:, None]
            return before, after
        """
    )
    before, after = (env(analysis, "f", n).mask for n in ("before", "after"))
    assert before.can_mask_whole_row is None  # only a length of 0 would empty its row: not shown
    assert after.can_mask_whole_row is False and env(analysis, "f", "lengths").positive_lengths


def test_an_empty_tensor_filled_with_minus_infinity_then_a_triangle_is_a_causal_bias():
    analysis, _ = analyse(
        """
        import torch

        def f(n, slopes, distance):
            whisper = torch.empty(n, n).fill_(-float("inf")).triu_(1)
            alibi = slopes[:, None, None] * distance + torch.full((n, n), float("-inf")).triu(1)
            return whisper, alibi
        """
    )
    whisper, alibi = (env(analysis, "f", n).mask for n in ("whisper", "alibi"))
    assert whisper.origin == "causal" and whisper.bias_fill == "-inf" and whisper.built_size == ("n", "n")
    # A bias plus a fixed-size -inf triangle masks what the triangle masks, at its size.
    assert alibi.origin == "causal" and alibi.scaled and alibi.built_size == ("(n, n)",)


def test_ones_scattered_into_zeros_at_index_pairs_are_an_adjacency_that_can_leave_a_row_empty():
    analysis, _ = analyse(
        """
        import torch

        def f(src, dst, labels, n):
            adj = torch.zeros(n, n)
            adj[src, dst] = 1.0
            adj[dst, src] = 1.0
            looped = torch.zeros(n, n)
            looped[src, dst] = 1.0
            looped.fill_diagonal_(1.0)
            onehot = torch.zeros(n, n)
            onehot[torch.arange(n), labels] = 1.0
            return adj == 0, looped == 0, onehot
        """
    )
    adj, looped, onehot = (env(analysis, "f", n) for n in ("adj", "looped", "onehot"))
    assert adj.mask.origin == "scattered" and adj.mask.convention == ATTEND and adj.mask.can_mask_whole_row
    assert looped.mask.can_mask_whole_row is None  # self loops keep every row's own entry
    assert onehot.mask is None  # an entry in every row


def test_a_name_whose_dtype_the_body_tests_is_not_shown_bool_by_its_inversion():
    import libcst as cst

    from attnlint.analysis.masks import negated_names

    body = cst.parse_module(
        "if m.dtype == torch.bool:\n    s = s.masked_fill(~m, x)\nelse:\n    s = s + m\nt = ~keep[:, None]\n"
    )
    assert negated_names(body) == {"keep"}


def test_a_causal_triangle_combined_to_mask_more_is_part_of_the_mask_and_one_that_masks_less_is_not():
    analysis, _ = analyse(
        """
        import torch

        def f(scores, attention_mask, pad_mask):
            T = scores.size(-1)
            causal = torch.ones(T, T, dtype=torch.bool).tril()
            keep = causal[None, None] & attention_mask[:, None, None, :].bool()
            loose = causal | attention_mask[:, None, None, :].bool()
            blocked = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1) | pad_mask[:, None, None, :]
            return keep, loose, blocked
        """
    )
    assert env(analysis, "f", "keep").mask.causal_part
    assert env(analysis, "f", "blocked").mask.causal_part
    # `|` of two keep-masks attends where either does: later keys can be seen again.
    loose = env(analysis, "f", "loose").mask
    assert loose is None or not loose.causal_part


@pytest.mark.parametrize(
    "doc, name, said",
    [
        ("pad_mask: (B, L) bool, True at padding positions.", "pad_mask", MASKED),
        ("mask: (B, T) bool, True for real tokens, False for padding", "mask", ATTEND),
        ("mask (Tensor): 1 for tokens that are not masked, 0 for masked", "mask", ATTEND),
        ("Args:\\n    mask: boolean mask where True indicates a padded position", "mask", MASKED),
        ("key_mask: non-padding positions are True", "key_mask", ATTEND),
        ("mask: padded positions are True", "mask", MASKED),
        # Nothing said of True, or said of another name: no convention.
        ("mask: optional mask", "mask", None),
        ("other_mask: True at padding; mask: the attention mask", "mask", None),
    ],
)
def test_a_docstring_line_that_names_a_mask_parameter_says_what_true_means(doc, name, said):
    from attnlint.analysis.masks import documented_convention

    module = cst.parse_module(f'def f(x, {name}):\n    """{doc}"""\n    return x\n')
    assert documented_convention(module.body[0], name) == said


def test_a_documented_convention_is_the_parameter_s_unless_callers_say_more():
    analysis, _ = analyse(
        '''
        import torch.nn.functional as F

        def attend(q, k, v, pad_mask):
            """pad_mask: (B, L) bool, True at padding positions."""
            return F.scaled_dot_product_attention(q, k, v, attn_mask=pad_mask[:, None, None, :])
        '''
    )
    mask = env(analysis, "attend", "pad_mask").mask
    assert mask.convention == MASKED and mask.dtype == "bool"


def test_a_lower_triangle_after_a_kv_cache_offset_is_a_causal_keep_mask():
    analysis, _ = analyse(
        """
        import torch
        def build(attention_mask, q_len):
            total = attention_mask.size(1)
            past = total - q_len
            causal = torch.ones(q_len, total, dtype=torch.bool).tril(diagonal=past)
            return causal
        """
    )
    causal = function(analysis, "build").returns[0].mask
    assert causal.origin == "causal" and causal.convention == "attend"
    # Whether a row can be empty depends on the offset's sign, which the code does not show.
    assert causal.can_mask_whole_row is None


def test_a_mask_with_a_constant_column_appended_is_still_that_mask():
    analysis, _ = analyse(
        """
        import torch

        def f(ids, pad_idx):
            target = torch.ones_like(ids[:, :1], dtype=torch.bool)
            keep = torch.cat([ids.ne(pad_idx), target], dim=1)
            both = torch.cat([ids.ne(pad_idx), ids.eq(pad_idx)], dim=1)
            return keep, both
        """
    )
    keep = env(analysis, "f", "keep").mask
    assert keep is not None and keep.convention == ATTEND and keep.origin == "padding"
    assert env(analysis, "f", "both").mask.convention is None  # two masks of opposite conventions


def test_a_padding_mask_used_only_to_pool_is_kept_from_the_attention_over_that_sequence():
    analysis, _ = analyse(
        """
        import torch.nn as nn

        class Encoder(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.attn = nn.MultiheadAttention(d, 4, batch_first=True)
                self.image_attn = nn.MultiheadAttention(d, 4, batch_first=True)

            def forward(self, x, image, attention_mask):
                keep = attention_mask.unsqueeze(-1).float()
                h = self.attn(x, x, x)[0]
                pooled = (h * keep).sum(1) / keep.sum(1)
                seen = self.image_attn(image, image, image)[0]
                return pooled, seen

            def masked(self, x, attention_mask):
                h = self.attn(x, x, x, key_padding_mask=~attention_mask.bool())[0]
                return (h * attention_mask.unsqueeze(-1)).sum(1)
        """
    )
    kept = analysis.padding_masks_kept_from_attention(function(analysis, "forward"))
    # The self-attention whose result is pooled with the mask; not the image's.
    assert [(c.call.args[0].value.value, masks) for c, masks in kept] == [("x", ["attention_mask"])]
    assert analysis.padding_masks_kept_from_attention(function(analysis, "masked")) == []


def test_a_mask_parameter_its_docstring_says_is_not_used_is_unused_on_purpose():
    import libcst as cst

    from attnlint.analysis.masks import documented_as_unused

    module = cst.parse_module(
        'def forward(self, input_features, attention_mask=None, head_mask=None):\n'
        '    """\n'
        "    Args:\n"
        "        attention_mask (`torch.Tensor`, *optional*):\n"
        "            Whisper does not support masking of the `input_features`, this argument is preserved\n"
        "            for compatibility, but it is not used.\n"
        "        head_mask (`torch.Tensor`):\n"
        "            Mask to nullify selected heads.\n"
        '    """\n'
        "    return input_features\n"
    )
    function = module.body[0]
    assert documented_as_unused(function, "attention_mask")
    assert not documented_as_unused(function, "head_mask")  # another parameter's paragraph


def test_a_mask_parameters_name_says_what_true_means_when_its_callers_mask_does_not():
    from attnlint.analysis.summaries import _merged_mask
    from attnlint.analysis.values import MaskFacts

    named = MaskFacts(origin="argument", convention=MASKED, marks_padding=True, param="key_padding_mask")
    unknown = MaskFacts(origin="comparison", dtype="bool")
    merged = _merged_mask(named, unknown)
    assert merged.convention == MASKED and merged.origin == "comparison" and merged.marks_padding
    # A caller's mask that shows its meaning keeps it.
    shown = MaskFacts(origin="lengths", convention=ATTEND, dtype="bool")
    assert _merged_mask(named, shown).convention == ATTEND
    # `attention_mask` is no padding mask's name: Mask2Former passes `(mask.sigmoid() < 0.5)`,
    # True = masked, under it.
    hf = MaskFacts(origin="argument", convention=ATTEND, param="attention_mask")
    assert _merged_mask(hf, unknown).convention is None
