"""einops: `rearrange`, `repeat`, `reduce`, `einsum` (space-separated axis names), `pack`/
`unpack`, and the `Rearrange`/`Reduce` layers. A pattern names every axis, so it tells sizes,
roles (`b h n d`) and whether the feature axis stays last or moves to -2 (Kᵀ)."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Dict, List, Optional, Tuple

import libcst as cst

from attnlint.analysis import handlers, shapes
from attnlint.analysis.handlers import Call
from attnlint.analysis.symbolic import Sym, product
from attnlint.analysis.values import HEADS, UNKNOWN, Value

Group = Tuple[str, ...]
_TOKEN = re.compile(r"\(|\)|\.\.\.|[A-Za-z_]\w*|\d+")


def parse_side(text: str) -> Optional[List[Group]]:
    """`b n (h d)` -> [(b,), (n,), (h, d)]; None when the pattern is not one we read."""
    groups: List[Group] = []
    current: Optional[List[str]] = None
    for token in _TOKEN.findall(text):
        if token == "(":
            if current is not None:
                return None
            current = []
        elif token == ")":
            if current is None:
                return None
            groups.append(tuple(current))
            current = None
        elif current is not None:
            current.append(token)
        else:
            groups.append((token,))
    if current is not None:
        return None
    return groups


def parse_pattern(pattern: str) -> Optional[Tuple[List[Group], List[Group]]]:
    if "->" not in pattern:
        return None
    left, right = pattern.split("->", 1)
    lhs, rhs = parse_side(left), parse_side(right)
    if lhs is None or rhs is None:
        return None
    return lhs, rhs


def _flow():
    from attnlint.analysis import flow

    return flow


def _string(node: Optional[cst.BaseExpression]) -> Optional[str]:
    if isinstance(node, cst.SimpleString) and isinstance(node.evaluated_value, str):
        return node.evaluated_value
    return None


def apply_pattern(ev, tensor: Value, pattern: str, axes: Dict[str, Optional[Sym]], node, kind: str) -> Value:
    parsed = parse_pattern(pattern)
    if parsed is None:
        return Value(kind="tensor", node=node, role=tensor.role)
    lhs, rhs = parsed
    ellipsis = any("..." in g for g in lhs + rhs)
    sizes: Dict[str, Optional[Sym]] = dict(axes)
    known_axes = None
    if not ellipsis and tensor.shape is not None and len(tensor.shape) == len(lhs):
        known_axes = list(zip(lhs, tensor.shape))
    elif lhs and "..." not in lhs[-1] and tensor.size_of(-1) is not None:
        from attnlint.analysis.values import Axis

        known_axes = [(lhs[-1], Axis(tensor.size_of(-1)))]  # the rank is unknown, the width is not
    if known_axes is not None:
        for group, axis in known_axes:
            names = [n for n in group if not n.isdigit()]
            unknown = [n for n in names if sizes.get(n) is None]
            if len(group) == 1 and unknown:
                sizes[group[0]] = axis.size
            elif len(unknown) == 1 and axis.size is not None:
                known = product(sizes[n] for n in names if n != unknown[0])
                sizes[unknown[0]] = axis.size / known if known is not None else None
    rank = None if ellipsis else len(rhs)

    def size_of(group: Group) -> Optional[Sym]:
        return product(Sym.const(int(n)) if n.isdigit() else sizes.get(n) for n in group)

    shape = None
    if rank is not None:
        shape = shapes.make_shape(
            [size_of(g) for g in rhs], [shapes.role_of_dim_name(g[0]) if len(g) == 1 else None for g in rhs]
        )
        shape = tuple(replace(axis, folded_heads=_folded_heads(g, sizes)) for axis, g in zip(shape, rhs))
    # Where did the input's last (feature) axis go?
    feature_last = None
    transposed = False
    if lhs and rhs and "..." not in lhs[-1]:
        last = set(lhs[-1])
        if last & set(rhs[-1]):
            feature_last = tensor.feature_last
        elif len(rhs) >= 2 and last & set(rhs[-2]) and tensor.feature_last is not False:
            transposed = True
    if kind == "rearrange" and tensor.scores is not None and shape is not None:
        kept = _scores_rearranged(tensor, lhs, rhs, shape, node)
        if kept is not None:
            return kept
    mask = tensor.mask
    if mask is not None and kind == "rearrange" and _per_key_layout(lhs, rhs):
        # `rearrange(mask, "b j -> b 1 1 j")` lays a mask out as `mask[:, None, None, :]` does.
        mask = shapes.per_key_padding(mask, (None,) * len(rhs))
    result = Value(
        kind="tensor",
        rank=rank,
        shape=shape,
        role=tensor.role,
        scaled=tensor.scaled,
        scale=tensor.scale, scale_steps=tensor.scale_steps,
        feature_last=feature_last,
        mask=mask,
        node=node,
        **tensor.data_facts(),
    )
    if kind == "reduce":
        return result.with_(role=None, scaled=None, scale=None, feature_last=None)
    if transposed:
        base = result.with_(rank=rank, shape=shapes.swapped(shape, -2, -1) if shape else None, feature_last=True)
        return result.with_(feature_transposed=True, base=base, feature_last=None)
    return result


def _scores_rearranged(scores: Value, lhs: List[Group], rhs: List[Group], shape, node) -> Optional[Value]:
    """Scores whose batch axes are split or merged (`(b w) h i j -> b w h i j`, Swin's windows)
    with the query and key axes left last, each alone: the same rows over the same keys, so
    the product's facts (scale, head dimension, key axis) stay. None when the pattern moves or
    merges a query or key axis."""
    if scores.shape is None or len(scores.shape) != len(lhs) or len(lhs) < 2 or len(rhs) < 2:
        return None
    if any(len(g) != 1 for g in (lhs[-1], lhs[-2], rhs[-1], rhs[-2])):
        return None
    if lhs[-1] != rhs[-1] or lhs[-2] != rhs[-2] or lhs[-1] == lhs[-2]:
        return None
    letters = {n for g in lhs for n in g}
    if {n for g in rhs for n in g if not n.isdigit()} != {n for n in letters if not n.isdigit()}:
        return None  # an axis appears or disappears: not a rearrangement of rows
    kept = shape[:-2] + tuple(
        replace(old, size=new.size) for old, new in zip(scores.shape[-2:], shape[-2:])
    )
    return scores.with_(rank=len(rhs), shape=kept, node=node)


def _folded_heads(group: Group, sizes: Dict[str, Optional[Sym]]) -> Optional[Sym]:
    """`(b h)`: the size of the heads letter composed with others into one axis, when known."""
    if len(group) < 2:
        return None
    heads = [n for n in group if shapes.role_of_dim_name(n) == HEADS and sizes.get(n) is not None]
    return sizes[heads[0]] if len(heads) == 1 else None


def _per_key_layout(lhs: List[Group], rhs: List[Group]) -> bool:
    """`b j -> b 1 1 j`, `b n -> b () n`: two axes kept in order, new axes of size 1 between."""
    if len(lhs) != 2 or len(rhs) < 3 or any(len(g) != 1 or g == ("...",) for g in lhs):
        return False
    return rhs[0] == lhs[0] and rhs[-1] == lhs[-1] and all(g in ((), ("1",)) for g in rhs[1:-1])


def _axis_sizes(ev, node: cst.Call) -> Dict[str, Optional[Sym]]:
    out = {}
    for arg in node.args:
        if arg.keyword is not None:
            out[arg.keyword.value] = ev.eval(arg.value).sym
    return out


@handlers.function("einops.rearrange", "einops.repeat", "einops.reduce")
def _rearrange(ev, call: Call):
    node = call.node
    positional = [a for a in node.args if a.keyword is None]
    if len(positional) < 2:
        return None
    tensor = ev.eval(positional[0].value)
    pattern = _string(positional[1].value)
    axes = _axis_sizes(ev, node)
    for arg in positional[2:]:
        ev.eval(arg.value)
    if pattern is None:
        return Value(kind="tensor", node=node)
    if tensor.kind == "tuple":  # rearrange(list_of_tensors, "n b d -> b n d") stacks them
        return Value(kind="tensor", node=node)
    return apply_pattern(ev, tensor, pattern, axes, node, call.name.rsplit(".", 1)[-1])


@handlers.function("einops.einsum")
def _einsum(ev, call: Call):
    """`einsum(q, k, "b h i d, b h j d -> b h i j")`: operands first, names separated by spaces."""
    from attnlint.analysis import scores

    node = call.node
    positional = [a for a in node.args if a.keyword is None]
    if len(positional) < 2:
        return None
    pattern = _string(positional[-1].value)
    operand_nodes = [a.value for a in positional[:-1]]
    values = [ev.eval(o) for o in operand_nodes]
    if pattern is None or "->" not in pattern:
        return Value(kind="tensor", node=node)
    letters: Dict[str, str] = {}
    pool = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")

    def side(text: str) -> Optional[str]:
        out = []
        for token in text.split():
            if token == "...":
                out.append("...")
                continue
            if not re.match(r"^[A-Za-z_]\w*$", token):
                return None
            if token not in letters:
                letters[token] = next(pool)
            out.append(letters[token])
        return "".join(out)

    lhs, rhs = pattern.split("->", 1)
    inputs = [side(part) for part in lhs.split(",")]
    output = side(rhs)
    if output is None or any(i is None for i in inputs):
        return Value(kind="tensor", node=node)
    names = {v: k for k, v in letters.items()}
    return scores.einsum(ev, node, ",".join(inputs) + "->" + output, values, operand_nodes, letter_names=names)


@handlers.function("einops.pack")
def _pack(ev, call: Call):
    ev.args(call.node)
    return Value(kind="tuple", elements=(Value(kind="tensor", node=call.node), UNKNOWN), node=call.node)


@handlers.function("einops.unpack")
def _unpack(ev, call: Call):
    ev.args(call.node)
    return Value(kind="tuple", each=Value(kind="tensor"), node=call.node)


_LAYERS = ("einops.layers.torch.Rearrange", "einops.layers.torch.Reduce", "einops.layers.torch.Repeat")


@handlers.function(*_LAYERS)
def _layer(ev, call: Call):
    ev.args(call.node)
    short = call.name.rsplit(".", 1)[-1]
    return Value(kind="module", module_type=short, ctor=call.node, node=call.node)


@handlers.module("Rearrange", "Reduce", "Repeat")
def _layer_call(ev, call: Call):
    module = call.receiver
    values = ev.args(call.node)
    ctor = module.ctor
    if ctor is None or not values or not ctor.args:
        return None
    pattern = _string(ctor.args[0].value)
    if pattern is None:
        return Value(kind="tensor", node=call.node)
    axes = {a.keyword.value: ev.eval(a.value).sym for a in ctor.args if a.keyword is not None}
    return apply_pattern(ev, values[0], pattern, axes, call.node, module.module_type.lower())
