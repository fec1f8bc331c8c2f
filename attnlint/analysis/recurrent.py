"""Recurrent layers (`nn.RNN`, `nn.GRU`, `nn.LSTM`) and packed sequences: the layouts of
seq2seq encoders and decoders.

A recurrent layer reads `(seq, batch, features)` unless it is built with `batch_first=True`
(then `(batch, seq, features)`), and returns `(output, h_n)` (`(output, (h_n, c_n))` for an
LSTM): the output in the same layout with `hidden_size` features per direction, `h_n` as
`(layers * directions, batch, hidden_size)` whatever the layout. `pad_packed_sequence` returns
`(seq, batch, ...)` unless told `batch_first=True`. So time-major tensors of Bahdanau/Luong
tutorials are known as such: their energies `(src_len, batch)` have the keys on axis 0."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from attnlint.analysis import handlers
from attnlint.analysis.calls import argument
from attnlint.analysis.handlers import Call
from attnlint.analysis.symbolic import Sym
from attnlint.analysis.values import BATCH, FEATURE, TOKENS, UNKNOWN, Axis, Value

RECURRENT_MODULES = ("RNN", "GRU", "LSTM")


def _flag(call: Optional[cst.Call], name: str) -> Optional[bool]:
    """A boolean keyword as written: its default (False) when absent, None when it is not a
    literal."""
    if call is None:
        return None
    arg = argument(call, _KEYWORD_ONLY, name)
    if arg is None:
        return False
    value = arg.value
    return value.value == "True" if isinstance(value, cst.Name) and value.value in ("True", "False") else None


# Past every positional parameter: `argument` finds these flags by keyword only.
_KEYWORD_ONLY = 99


def _seq_batch(batch_first: bool, seq: Axis, batch: Axis, feature: Axis) -> tuple:
    seq, batch = Axis(seq.size, TOKENS), Axis(batch.size, BATCH)
    return (batch, seq, feature) if batch_first else (seq, batch, feature)


@handlers.module(*RECURRENT_MODULES)
def _recurrent_call(ev, call: Call) -> Optional[Value]:
    values = ev.args(call.node)
    module = call.receiver
    if not values or module.ctor is None:
        return None
    batch_first, bidirectional = _flag(module.ctor, "batch_first"), _flag(module.ctor, "bidirectional")
    if batch_first is None or bidirectional is None:
        return None
    source = values[0]
    hidden = module.module_sizes[1] if len(module.module_sizes) >= 2 else None
    width = hidden * Sym.const(2) if hidden is not None and bidirectional else hidden
    feature = Axis(width, FEATURE)
    if source.rank != 3:
        # Unbatched input (`(seq, features)`, whose output has no batch axis) or a packed
        # sequence: the output's layout is not this call's to say.
        outputs = Value(kind="tensor", node=call.node)
        state = Value(kind="tensor", node=call.node)
        if module.module_type == "LSTM":
            state = Value(kind="tuple", elements=(state, state), node=call.node)
        return Value(kind="tuple", elements=(outputs, state), node=call.node)
    if source.shape is not None:
        first, second = source.shape[0], source.shape[1]
        seq, batch = (second, first) if batch_first else (first, second)
    else:
        seq = batch = Axis()
    output = Value(
        kind="tensor", rank=3, shape=_seq_batch(batch_first, seq, batch, feature), feature_last=True, node=call.node
    )
    state = Value(kind="tensor", rank=3, shape=(Axis(), Axis(batch.size, BATCH), Axis(hidden, FEATURE)), node=call.node)
    if module.module_type == "LSTM":
        state = Value(kind="tuple", elements=(state, state), node=call.node)
    return Value(kind="tuple", elements=(output, state), node=call.node)


@handlers.function_named("pack_padded_sequence")
def _pack_padded(ev, call: Call) -> Optional[Value]:
    """`pack_padded_sequence(embedded, lengths)`: the same tensor as far as its layout goes (a
    recurrent layer reads it in its own layout)."""
    values = ev.args(call.node)
    return values[0].with_(node=call.node) if values and values[0].kind == "tensor" else None


@handlers.function_named("pad_packed_sequence")
def _pad_packed(ev, call: Call) -> Optional[Value]:
    """`outputs, lengths = pad_packed_sequence(packed)`: `(seq, batch, features)` unless
    `batch_first=True`, whatever layout the packed output had."""
    values = ev.args(call.node)
    batch_first = _flag(call.node, "batch_first")
    if not values or batch_first is None:
        return None
    source = values[0]
    known = source.rank == 3 and source.shape is not None
    roles = [axis.role for axis in source.shape[:2]] if known else []
    if roles == [BATCH, TOKENS]:
        batch, seq = source.shape[0], source.shape[1]
    elif roles == [TOKENS, BATCH]:
        seq, batch = source.shape[0], source.shape[1]
    else:
        seq = batch = Axis()
    shape = _seq_batch(batch_first, seq, batch, source.shape[2] if known else Axis(None, FEATURE))
    output = Value(kind="tensor", rank=3, shape=shape, feature_last=True, node=call.node)
    return Value(kind="tuple", elements=(output, UNKNOWN), node=call.node)
