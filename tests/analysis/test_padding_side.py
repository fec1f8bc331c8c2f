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
    "tokenizer.padding_side = 'left'",
    "enc = tokenizer(texts, padding=True, padding_side='left')",
    "x = F.pad(x, (n - x.size(-1), 0), value=pad)",
]
RIGHT = [
    "out[i, :len(s)] = torch.tensor(s)",
    "batch = [s + [pad] * (n - len(s)) for s in seqs]",
    "tokenizer.padding_side = 'right'",
    "x = F.pad(x, (0, n - x.size(-1)), value=pad)",
    "x = pad_sequence(seqs, batch_first=True)",
    "tail = h[-len(s):]",
]


@pytest.mark.parametrize("line", LEFT)
def test_left_padding_is_shown(line):
    assert shows_left_padding(cst.parse_module(textwrap.dedent(line) + "\n"))


@pytest.mark.parametrize("line", RIGHT)
def test_right_padding_and_reads_are_not_left_padding(line):
    assert not shows_left_padding(cst.parse_module(line + "\n"))
