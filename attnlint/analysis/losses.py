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


# ------------------------------------------------------------------------------------------
# Padding built by hand: list padding, torch.full, data loaders
# ------------------------------------------------------------------------------------------
def _number_of(value: Value) -> Optional[float]:
    if value.int_value is not None:
        return float(value.int_value)
    if value.sym is not None and value.sym.is_const:
        return float(value.sym.coeff)
    return None


def repeated_list(ev, items: Value, node) -> Value:
    """`[pad] * (n - len(ids))`: a run of padding."""
    if items.kind == "tuple" and len(items.elements) == 1:
        element = items.elements[0]
        number = _number_of(element)
        if number is not None or element.node is not None:
            return Value(kind="tuple", node=node, padding=Padding(value=number, node=element.node))
    return Value(kind="tuple", node=node)


def concatenated_lists(left: Value, right: Value, node) -> Value:
    """`ids + [pad] * (n - len(ids))`: a sequence padded at its end (or start)."""
    padding = right.padding if right.kind == "tuple" and right.padded else None
    if padding is None and left.kind == "tuple" and left.padded:
        padding = left.padding
    return Value(kind="tuple", node=node, padding=padding)


def padded_rows(value: Value) -> Optional[Padding]:
    """The padding of a list of padded rows (`[pad_row(s) for s in seqs]`, appended rows)."""
    if value.kind != "tuple":
        return value.padding
    if value.padded:
        return value.padding
    rows = list(value.elements) or ([value.each] if value.each is not None else [])
    paddings = {r.padding for r in rows}
    if rows and len(paddings) == 1 and None not in paddings:
        return paddings.pop()
    return None


@handlers.method("append")
def _append(ev, call: Call):
    """`rows.append(ids + [pad] * k)`: the list holds padded rows."""
    flow = _flow()
    receiver = call.receiver
    values = ev.args(call.node)
    if receiver.kind != "tuple" or not values:
        return None
    row = values[0]
    owner = flow.owner_name(call.receiver_node)
    if owner is not None and owner in ev.env:
        if row.padded or row.kind == "tuple" and padded_rows(row) is not None:
            padding = row.padding if row.padded else padded_rows(row)
            current = receiver.padding if receiver.padded else None
            if current is None and not receiver.elements and receiver.each is None:
                ev.env[owner] = receiver.with_(padding=padding)
            elif current != padding:
                ev.env[owner] = receiver.with_(padding=None)
        elif receiver.padded:
            ev.env[owner] = receiver.with_(padding=None)
    return Value(kind="scalar", node=call.node)


@handlers.function("torch.full")
def _full(ev, call: Call):
    """`torch.full((b, n), pad_id)`: every position holds the pad value until overwritten."""
    from attnlint.analysis import shapes

    result = shapes._constructor(ev, call)
    fill = _flow()._arg(call.node, 1, "fill_value")
    if fill is None:
        return result
    number = masks.number(fill.value)
    if number is None:
        number = _number_of(ev.eval(fill.value))
    if masks._names_pad(fill.value) or (isinstance(fill.value, cst.Name) and fill.value.value in ev.constants):
        return result.with_(padding=Padding(value=number, node=fill.value))
    return result


@handlers.function("torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader")
def _data_loader(ev, call: Call):
    """Iterating a DataLoader yields what its `collate_fn` returns."""
    from attnlint.analysis import modules

    ev.args(call.node)
    collate = _flow()._arg(call.node, 99, "collate_fn")
    if collate is None:
        return Value(kind="unknown", node=call.node)
    if isinstance(collate.value, cst.Lambda):
        batch = ev.apply_callable(collate.value, Value(kind="unknown"))
    else:
        batch = modules.call_with_values(ev, collate.value, [Value(kind="unknown")])
    if batch.kind == "unknown":
        return Value(kind="unknown", node=call.node)
    return Value(kind="tuple", each=batch, node=call.node)
