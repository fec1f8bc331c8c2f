"""Which side a file pads its batches on (a padding mask under a causal one empties rows only
when padded on the left)."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from attnlint.analysis.padding_side import shows_left_padding

LEFT = [
    "out[i, n - len(s):] = torch.tensor(s)",
    "ids[i, -len(s):] = s",
    "batch = [[pad] * (n - len(s)) + s for s in seqs]",
    "row = [PAD] * pad_len + row",
    "tokenizer.padding_side = 'left'",
    "enc = tokenizer(texts, padding=True, padding_side='left')",
    "x = F.pad(x, (n - x.size(-1), 0), value=pad)",
    "s.append(np.concatenate([np.zeros((K - tlen, sd)), s_]))",
    "ids = torch.cat([torch.full((n - len(x),), pad), x])",
]
RIGHT = [
    "out[i, :len(s)] = torch.tensor(s)",
    "batch = [s + [pad] * (n - len(s)) for s in seqs]",
    "tokenizer.padding_side = 'right'",
    "x = F.pad(x, (0, n - x.size(-1)), value=pad)",
    "x = pad_sequence(seqs, batch_first=True)",
    "ids = torch.cat([x, torch.full((n - len(x),), pad)])",
    "tail = h[-len(s):]",
    # The prompt's labels ignored, then the response: a run as long as part of the row.
    'lab = [-100] * len(ex["prompt"]) + ex["response"] + [eot]',
]


@pytest.mark.parametrize("line", LEFT)
def test_left_padding_is_shown(line):
    assert shows_left_padding(cst.parse_module(textwrap.dedent(line) + "\n"))


@pytest.mark.parametrize("line", RIGHT)
def test_right_padding_and_reads_are_not_left_padding(line):
    assert not shows_left_padding(cst.parse_module(line + "\n"))


def _module(source: str) -> cst.Module:
    return cst.parse_module(textwrap.dedent(source).lstrip("\n"))


def test_a_function_that_masks_padding_and_reads_each_sequence_at_its_last_position_pads_left():
    # Its sequences all end at the last position: the padding is in front.
    assert shows_left_padding(
        _module(
            """
            def encode(self, history):
                valid = (history > 0).long()
                h = self.layers(self.embed(history), valid)
                return h[:, -1, :]
            """
        )
    )


@pytest.mark.parametrize(
    "source",
    [
        # The last position read, with no padding test in the function.
        "def step(logits):\n    return logits[:, -1, :].argmax(-1)\n",
        # A padding test, with the last *feature* read (`h[..., -1]`) or the sequence read whole.
        "def f(ids, h):\n    keep = ids != 0\n    return h[..., -1] * keep\n",
        # The two in different functions.
        "def g(ids):\n    return ids != 0\n\ndef h(x):\n    return x[:, -1]\n",
    ],
)
def test_no_left_padding_without_both_in_one_function(source):
    assert not shows_left_padding(_module(source))


def test_rows_written_from_their_last_position_backwards_are_left_padded():
    sampler = """
    def sample(history, maxlen):
        seq = np.zeros([maxlen], dtype=np.int64)
        idx = maxlen - 1
        for item in reversed(history):
            seq[idx] = item
            idx -= 1
            if idx == -1:
                break
        return seq
    """
    assert shows_left_padding(cst.parse_module(textwrap.dedent(sampler)))
    # Written forwards from position 0: the padding is at the end.
    forwards = sampler.replace("idx = maxlen - 1", "idx = 0").replace("idx -= 1", "idx += 1")
    assert not shows_left_padding(cst.parse_module(textwrap.dedent(forwards)))


def test_rows_of_a_batch_written_backwards_are_left_padded():
    # The batch array indexed by (row, position): the position is the last index.
    sampler = """
    def sample_batch(histories, maxlen):
        seq = np.zeros((len(histories), maxlen), dtype=np.int64)
        for b, items in enumerate(histories):
            idx = maxlen - 1
            for i in reversed(items):
                seq[b, idx] = i
                idx -= 1
                if idx == -1:
                    break
        return seq
    """
    assert shows_left_padding(cst.parse_module(textwrap.dedent(sampler)))
    # The row stepped back, the position forwards: the padding is at the end.
    rows_backwards = sampler.replace("seq[b, idx] = i", "seq[idx, b] = i")
    assert not shows_left_padding(cst.parse_module(textwrap.dedent(rows_backwards)))


def test_the_last_position_of_another_sequence_than_the_padded_one_says_nothing_of_padding():
    # A seq2seq generation loop: the source is tested for padding, the last position read is
    # the one of the tokens generated so far (`out[:, -1]` of the decoder), not of the source.
    module = cst.parse_module(
        textwrap.dedent(
            """
            import torch

            def generate(model, src_ids, pad_id, bos_id, max_len):
                src_pad = src_ids.eq(pad_id)
                memory = model.encoder(model.embed(src_ids), src_key_padding_mask=src_pad)
                ys = torch.full((src_ids.size(0), 1), bos_id)
                for _ in range(max_len):
                    out = model.decoder(model.embed(ys), memory, memory_key_padding_mask=src_pad)
                    nxt = model.head(out[:, -1]).argmax(-1)
                    ys = torch.cat([ys, nxt[:, None]], dim=1)
                return ys
            """
        )
    )
    assert not shows_left_padding(module)


def test_the_last_position_of_the_padded_batch_itself_shows_left_padding():
    module = cst.parse_module(
        textwrap.dedent(
            """
            def encode(model, history):
                mask = history != 0
                states = model.encoder(model.items(history), mask)
                return states[:, -1, :]
            """
        )
    )
    assert shows_left_padding(module)


def test_a_neighbour_that_imports_the_module_and_pads_left_shows_its_left_padding(tmp_path):
    from attnlint.analysis.padding_side import importers_showing_left_padding

    (tmp_path / "model.py").write_text("import torch\n", encoding="utf-8")
    (tmp_path / "train.py").write_text(
        "import numpy as np\n"
        "from .model import DecisionTransformer\n"
        "def batch(s_, K):\n"
        "    return np.concatenate([np.zeros((K - len(s_), 3)), s_])\n",
        encoding="utf-8",
    )
    # Padding on the left, but not importing the model: says nothing of its batches.
    (tmp_path / "other.py").write_text(
        "def pad(s, n, p):\n    return [p] * (n - len(s)) + s\n", encoding="utf-8"
    )
    assert importers_showing_left_padding(tmp_path / "model.py") == [tmp_path / "train.py"]
    assert importers_showing_left_padding(tmp_path / "other.py") == []
