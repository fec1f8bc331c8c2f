"""Losses and padding: cross-entropy calls and the targets they get, padded batches
(`pad_sequence`, and the value their padding holds), and rewrites of that value
(`targets[targets == pad] = -100`, `masked_fill(..., -100)`)."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from attnlint.analysis import handlers, masks
from attnlint.analysis.handlers import Call
from attnlint.analysis.values import LossSite, Padding, Value


def _flow():
    from attnlint.analysis import flow

    return flow


def repadded(value: Value, pad: Optional[float]) -> Value:
    """A padded tensor whose padding positions now hold `pad` (None: a value we cannot read)."""
    return value.with_(padding=Padding(value=None if pad is None else float(pad), node=None))


@handlers.function_named("pad_sequence")
def pad_sequence(ev, call: Call):
    flow = _flow()
    node = call.node
    ev.args(node)
    pad_arg = flow._arg(node, 2, "padding_value")
    pad = masks.number(pad_arg.value) if pad_arg is not None else 0.0
    if pad_arg is not None and pad is None:
        pad = ev.eval(pad_arg.value).int_value
    return Value(
        kind="tensor", node=node, padding=Padding(value=pad, node=pad_arg.value if pad_arg is not None else None)
    )


@handlers.function_named("cross_entropy")
def cross_entropy(ev, call: Call):
    node = call.node
    if len(node.args) < 2:
        return None
    values = ev.args(node)
    loss_site(ev, node, values[1], node.args[1].value, node)
    return Value(kind="tensor", rank=0, node=node)


@handlers.module("CrossEntropyLoss")
def cross_entropy_module(ev, call: Call):
    values = ev.args(call.node)
    if len(values) < 2:
        return Value(kind="unknown", node=call.node)
    loss_site(ev, call.node, values[1], call.args[1].value, call.receiver.ctor)
    return Value(kind="tensor", rank=0, node=call.node)


def loss_site(ev, call: cst.Call, targets: Value, targets_node, configured_at: Optional[cst.Call]) -> None:
    flow = _flow()
    # nn.CrossEntropyLoss(weight, size_average, ignore_index, ...) and
    # F.cross_entropy(input, target, weight, size_average, ignore_index, ...).
    where = configured_at if configured_at is not None else call
    functional = configured_at is None or configured_at is call
    ignore_position, weight_position = (4, 2) if functional else (2, 0)
    ignore_arg = flow._arg(where, ignore_position, "ignore_index")
    weight_arg = flow._arg(where, weight_position, "weight")
    weighted = weight_arg is not None and not flow.is_false(weight_arg.value)
    if any(a.star == "**" for a in where.args):
        ignore = None  # `**kwargs` may set it
    elif ignore_arg is None:
        ignore = -100  # PyTorch's default
    else:
        number = masks.number(ignore_arg.value)
        ignore = int(number) if number is not None else ev.eval(ignore_arg.value).int_value
    reduction_arg = flow._arg(where, 99, "reduction")
    reduction: Optional[str] = "mean"
    if reduction_arg is not None:
        literal = reduction_arg.value
        reduction = literal.evaluated_value if isinstance(literal, cst.SimpleString) else None
    ev.facts.loss_sites.append(
        LossSite(
            call=call,
            targets=targets,
            targets_node=targets_node,
            ignore_index=ignore,
            ignore_index_node=ignore_arg.value if ignore_arg is not None else None,
            configured_at=configured_at,
            reduction=reduction,
            weighted=weighted,
        )
    )
