"""Softmax in every spelling (`F.softmax`, `torch.softmax`, `x.softmax`, `nn.Softmax` modules)
and the guards applied to its weights (`nan_to_num`, `where`, `masked_fill` after it)."""

from __future__ import annotations

from typing import Optional, Tuple

import libcst as cst

from attnlint.analysis import handlers
from attnlint.analysis.handlers import Call
from attnlint.analysis.values import UNKNOWN, WEIGHTS, SoftmaxSite, Value


def _flow():
    from attnlint.analysis import flow

    return flow


def softmax(ev, call: cst.Call, input_node, ctor: Optional[cst.Call], form: str, receiver: Optional[Value] = None):
    flow = _flow()
    if input_node is None:
        return UNKNOWN
    if form == "method":
        # The receiver was evaluated by the caller: evaluating it again would cost time
        # exponential in the length of a `.softmax(-1).softmax(-1)...` chain.
        value = receiver if receiver is not None else ev.eval(input_node)
        for arg in call.args:
            ev.eval(arg.value)
        dim_arg = flow._arg(call, 0, "dim")
    elif form == "function":
        value = ev.eval(input_node)
        for arg in call.args[1:]:
            ev.eval(arg.value)
        dim_arg = flow._arg(call, 1, "dim")
    else:
        # A softmax layer inside an nn.Sequential is given the previous layer's output.
        value = receiver if receiver is not None else ev.eval(input_node)
        dim_arg = flow._arg(ctor, 0, "dim") if ctor is not None else None
    dim, known = dim_value(dim_arg.value if dim_arg is not None else None)
    bound_by = None
    if not known and dim_arg is not None and ev.calling is not None:
        # `softmax(scores, dim=dim)` in a helper read for one call: the number that call binds
        # (the default it leaves out, or what it passes).
        bound = ev.env.get(dim_arg.value.value) if isinstance(dim_arg.value, cst.Name) else None
        if bound is not None and bound.kind == "scalar" and bound.int_value is not None and bound.param:
            dim, known, bound_by = bound.int_value, True, ev.calling
    given = dim_arg is not None and not (isinstance(dim_arg.value, cst.Name) and dim_arg.value.value == "None")
    splatted = any(a.star for a in call.args) or (ctor is not None and any(a.star for a in ctor.args))
    if dim_arg is None and splatted:
        given, known = True, False  # `softmax(s, **kw)`: the dim may be in there
    if form == "module" and ctor is None:
        known = False
    shared = ev.project.weight_uses(call) if ev.project is not None else None
    site = SoftmaxSite(
        call=call,
        input=value,
        input_node=input_node,
        dim=dim if given else None,
        dim_given=given,
        dim_known=known or not given,
        dim_node=dim_arg.value if dim_arg is not None else None,
        form=form,
        module_ctor=ctor,
        function=ev.facts.name,
        dim_bound_by=bound_by,
    )
    if shared is not None:
        site.uses = shared
    if value.softmax is not None:
        value.softmax.renormalized = True  # a softmax of weights: alternating normalisation
    if id(call) not in ev.softmax_by_node:
        ev.softmax_by_node[id(call)] = site
        ev.facts.softmax_sites.append(site)
    return Value(
        kind="tensor",
        rank=value.rank,
        shape=value.shape,
        role=WEIGHTS,
        softmax=site,
        weights_of=site,
        feature_last=False,
        node=call,
    )


def singleton_axis(site: SoftmaxSite) -> Optional[int]:
    """The axis a softmax normalises when it holds the output features of a layer that makes
    exactly one (`nn.Conv1d(d, out_channels=1)` scores over positions, softmax over channels):
    every weight is 1.0, whatever the input. None when that is not shown."""
    from attnlint.analysis.values import FEATURE

    axes = site.normalized_axes()
    shape = site.input.shape
    if not axes or len(axes) != 1:
        return None
    axis = next(iter(axes))
    if shape is None and axis == -1 and site.input.feature_last is True:
        # Rank unknown, but the last axis is a projection's width (`nn.Linear(d, 1)(x)`).
        width = site.input.last_size
        return -1 if width is not None and width.int_value == 1 else None
    if shape is None or site.rank is None:
        return None
    if not -len(shape) <= axis < 0:
        return None
    size = shape[axis].size
    if shape[axis].role == FEATURE and size is not None and size.int_value == 1:
        return axis
    return None


def dim_value(node: Optional[cst.BaseExpression]) -> Tuple[Optional[int], bool]:
    flow = _flow()
    if node is None:
        return None, True
    literal = flow.int_literal(node)
    if literal is not None:
        return literal, True
    # `x.dim() - 1`, `x.ndim - 1`, `len(x.shape) - 1`: the last axis, whatever the rank.
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Subtract):
        offset = flow.int_literal(node.right)
        if offset is not None and _is_rank_expr(node.left):
            return -offset, True
    return None, False


def _is_rank_expr(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "dim":
        return not node.args
    if isinstance(node, cst.Attribute) and node.attr.value == "ndim":
        return True
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "len" and node.args:
        inner = node.args[0].value
        return isinstance(inner, cst.Attribute) and inner.attr.value == "shape"
    return False


@handlers.function("torch.softmax")
def _softmax_function(ev, call: Call):
    return softmax(ev, call.node, call.args[0].value if call.args else None, None, form="function")


@handlers.method("softmax")
def _softmax_method(ev, call: Call):
    return softmax(ev, call.node, call.receiver_node, None, form="method", receiver=call.receiver)


@handlers.module("Softmax")
def _softmax_module(ev, call: Call):
    module = call.receiver
    return softmax(ev, call.node, call.args[0].value if call.args else None, module.ctor, form="module")


@handlers.function("torch.nan_to_num", "torch.nan_to_num_")
def _nan_to_num_function(ev, call: Call):
    values = ev.args(call.node)
    if not values:
        return None
    return guard(values[0], call.node)


@handlers.method("nan_to_num", "nan_to_num_")
def _nan_to_num_method(ev, call: Call):
    ev.args(call.node)
    receiver = call.receiver
    if receiver.softmax is None:
        return None
    result = guard(receiver, call.node)
    if call.name.endswith("_"):
        ev.update_in_place(call.receiver_node, result)
    return result


def guard(weights: Value, node) -> Value:
    """Weights whose fully masked rows are zeroed (NaN replaced)."""
    return weights.with_(node=node, guarded=weights.softmax is not None or weights.guarded)
