"""Which functions the first reading analyses when the caller says which text can matter
(selection.FirstReading): what matches, what names it, what uses an attribute built from it,
what calls a model parameter; never what does none of these. Every __init__ is read. Names are
matched in the text, strings and comments included (a conservative reading): `describe` names
nothing that is read."""

from __future__ import annotations

import textwrap

import libcst as cst

from attnlint.analysis import analyze_module
from attnlint.analysis.selection import NOTHING, FirstReading, definitions_in

SOURCE = textwrap.dedent(
    """
    import torch
    import torch.nn as nn


    def attend(q, k):
        return torch.softmax(q @ k.transpose(-2, -1), dim=-1)


    def uses_attend(x):
        return attend(x, x)


    def unrelated(a, b):
        return a + b


    def train_step(model, batch):
        return model(batch)


    class Pool(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.normalize = nn.Softmax(dim=1)
            self.proj = nn.Linear(d, d)

        def forward(self, x):
            return self.normalize(self.proj(x))

        def describe(self):
            return "pooling layer"


    class Block(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.pool = Pool(d)

        def forward(self, x):
            return self.pool(x) + x

        def extra_repr(self):
            return "block"
    """
).lstrip("\\n")


def _wanted(text: str) -> bool:
    return "softmax" in text.lower()


def _read_names(wanted):
    module = cst.parse_module(SOURCE)
    reading = FirstReading(module, wanted, SOURCE)
    found = set()
    for node in definitions_in(module.body):
        if isinstance(node, cst.FunctionDef):
            members = [(None, node)]
        else:
            members = [(node.name.value, m) for m in definitions_in(node.body.body) if isinstance(m, cst.FunctionDef)]
        for owner, function in members:
            if reading.reads(function):
                found.add(f"{owner}.{function.name.value}" if owner else function.name.value)
    return found


def test_what_matches_names_it_or_uses_it_is_read_and_nothing_else():
    assert _read_names(_wanted) == {
        "attend",  # its text matches
        "uses_attend",  # it calls what is read
        "train_step",  # it calls a parameter named as a model
        "Pool.__init__",
        "Pool.forward",  # it uses an attribute built from wanted text (nn.Softmax)
        "Block.__init__",
        "Block.forward",  # it uses an attribute built from a class that is read
    }


def test_a_module_read_for_what_it_lends_reads_only_the_inits():
    assert _read_names(NOTHING) == {"Pool.__init__", "Block.__init__"}


def test_every_function_is_read_without_a_selection():
    assert "unrelated" in _read_names(None) and "Block.extra_repr" in _read_names(None)


def test_a_skipped_function_has_no_facts_and_a_read_one_has_its_sites():
    analysis = analyze_module(cst.parse_module(SOURCE), wanted=_wanted, source=SOURCE)
    names = {f.name for f in analysis.functions}
    assert "unrelated" not in names and "describe" not in names
    assert len(analysis.softmax_sites) >= 1
