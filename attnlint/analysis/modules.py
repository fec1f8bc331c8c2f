"""Modules and user code: nn module constructors and calls (projections, dropout, norms,
registered buffers), `self.<attr>(...)` calls, calls of functions defined in the checked code,
and everything no other domain knows (unknown: tensor arguments escape)."""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from typing import Dict, List, Optional

import libcst as cst

from attnlint.analysis import dropout, handlers
from attnlint.analysis.names import child_nodes
from attnlint.analysis.handlers import Call
from attnlint.analysis.names import role_from_name
from attnlint.analysis.symbolic import ONE
from attnlint.analysis.values import FEATURE, KEY, QKV, QUERY, UNKNOWN, AttentionCallSite, Axis, Value, join

# nn modules that are the identity for our purposes.
IDENTITY_MODULES = ("Dropout", "Dropout1d", "Dropout2d", "AlphaDropout", "Identity")
PROJECTION_MODULES = ("Linear", "LazyLinear", "Conv1D", "NonDynamicallyQuantizableLinear")
PER_TOKEN_MODULES = PROJECTION_MODULES + ("Embedding",)
# Modules whose output has their input's shape (normalisations, element-wise activations).
SHAPE_PRESERVING_MODULES = (
    "LayerNorm", "RMSNorm", "GroupNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "InstanceNorm1d",
    "InstanceNorm2d", "GELU", "ReLU", "SiLU", "Tanh", "Sigmoid", "Mish", "LeakyReLU",
)
# Normalisations of each token's features (over the last axis), not of a batch or channels.
TOKEN_NORMS = ("LayerNorm", "RMSNorm")
# Functions known not to rescale their input (rotary embeddings rotate pairs of features).
ROTARY_WORDS = ("rotary", "rope", "rotate", "pos_emb", "apply_pos")


def _flow():
    from attnlint.analysis import flow

    return flow


# ------------------------------------------------------------------------------------------
# Calls of modules
# ------------------------------------------------------------------------------------------
def self_call(ev, node: cst.Call, attr: str) -> Value:
    """`self.<attr>(...)`: a registered buffer, a submodule, or a method of this class."""
    flow = _flow()
    name_arg = flow._arg(node, 0, "name")
    tensor_arg = flow._arg(node, 1, "tensor" if attr == "register_buffer" else "param")
    if attr in ("register_buffer", "register_parameter") and name_arg is not None and tensor_arg is not None:
        name_node = name_arg.value
        value = ev.eval(tensor_arg.value)
        if isinstance(name_node, cst.SimpleString) and isinstance(name_node.evaluated_value, str):
            buffer_name = name_node.evaluated_value
            if value.mask is not None:
                value = value.with_(mask=replace(value.mask, buffer_attr=buffer_name))
            if attr == "register_parameter":
                value = value.with_(is_parameter=True)
            ev.env["self." + buffer_name] = value
            if ev.record_attrs and ev.cls is not None:
                ev.cls.attrs[buffer_name] = value
        return Value(kind="scalar", node=node)
    module = ev.env.get("self." + attr)
    if module is None and ev.cls is not None:
        module = ev.cls.attrs.get(attr)
    if module is not None and module.kind == "module":
        return call_module_value(ev, node, module, attr)
    if module is not None and module.function is not None:
        # `self._attention_call = F.scaled_dot_product_attention` in __init__.
        return ev.call_function(node, module.function)
    if module is not None and module.closure is not None:
        # `self._attention_call = make_attention()`: a call of the closure (a call site, too).
        result = call_closure_value(ev, node, module)
        ev.facts.calls.append(_flow().CallSite(callee=attr, method=True, call=node, values=()))
        return result
    values = ev.args(node)
    role = role_from_name(attr)
    lowered = attr.lower()
    if module is None and values and "drop" in lowered:
        return values[0]
    if (
        module is None
        and values
        and role in (QUERY, KEY, "value", QKV)
        and (any(w in lowered for w in ("proj", "linear", "lin", "w_", "to_", "fc", "c_attn")) or len(lowered) <= 4)
    ):
        # `self.q_proj(x)`, `self.wq(x)` defined in an unseen __init__: a projection.
        return Value(
            kind="tensor", rank=values[0].rank, role=role, feature_last=True, scaled=False, scale=ONE, node=node
        )
    if module is None and values and any(w in lowered for w in ROTARY_WORDS):
        return user_function(ev, node, attr, method=True, values=values)
    if module is None:
        summary = _summary(ev, node, attr, values, method=True)
        ev.facts.calls.append(_flow().CallSite(callee=attr, method=True, call=node, values=tuple(values)))
        if summary is not None:
            return summary
    elif module.kind == "unknown":
        hand_off_masks(ev, node, values)
    _flow().escape(values)
    return Value(kind="unknown", node=node)


def hand_off_masks(ev, node: cst.Call, values) -> None:
    """`self.self_attn(query=x, ..., attn_mask=bias)` on a layer of another library: masks passed
    under a mask keyword, filled here on their way (`m.masked_fill(m.bool(), -1e8)`), go to an
    attention the analysis cannot see (FunctionFacts.mask_handoffs)."""
    from attnlint.analysis.values import MaskUseSite

    for arg, value in zip(node.args, values):
        keyword = arg.keyword.value if arg.keyword is not None else None
        if keyword is None or not _flow().masks.is_mask_param(keyword) or value.additive_fill is None:
            continue
        ev.facts.mask_handoffs.append(
            MaskUseSite(call=node, api="unknown", keyword=keyword, expects="", mask_node=arg.value, mask=value)
        )


def call_module_value(ev, node: cst.Call, module: Value, attr: str) -> Value:
    kind = module.module_type or ""
    # A class of the checked code named like a torch module (`class TransformerEncoderLayer`)
    # is that class, not torch's: its forward, not torch's table, says what it does.
    handler = None if module.user_class else handlers.MODULES.get(kind)
    if handler is not None:
        result = handler(ev, Call(node=node, name=kind, receiver=module, attr=attr))
        if result is not None:
            return result
    values = ev.args(node)
    if module.user_class:
        return user_module_call(ev, node, kind, values)
    if not kind and module.module_choices:
        # One of several torch modules by path: whatever holds on every path's output.
        results = [
            _torch_module_call(ev, node, module.with_(module_type=t, module_choices=()), t, values, attr)
            for t in module.module_choices
        ]
        joined = results[0]
        for other in results[1:]:
            joined = join(joined, other)
        return joined.with_(node=node)
    return _torch_module_call(ev, node, module, kind, values, attr)


def run_lambda_arguments(ev, node: cst.Call, values: List[Value], target=None) -> None:
    """The bodies of lambdas handed to a layer or function of the checked code (the Annotated
    Transformer's `self.sublayer[0](x, lambda x: self.self_attn(x, x, x, mask))`), run here: the
    calls they make are this function's, with its own masks and layers. A parameter of the
    lambda is what the callee (`target`: owner, definition) passes it when that is one of the
    callee's own parameters, bare or through one of its layers (`sublayer(self.norm(x))`: a
    value of x's layout); otherwise unknown."""
    from attnlint.analysis.summaries import bind_arguments

    lambdas = [a.value for a in node.args if isinstance(a.value, cst.Lambda)]
    if not lambdas:
        return
    bound = None
    if target is not None:
        owner, definition = target
        bound = bind_arguments(definition, node, list(values), method=owner is not None)
    for body in lambdas:
        passed = _passed_to_lambda(target[1], bound, body) if bound is not None else None
        ev.run_lambda(body, [passed] if passed is not None else [])


def _passed_to_lambda(definition: cst.FunctionDef, bound: Dict[str, Value], body: cst.Lambda) -> Optional[Value]:
    """What the callee passes to the parameter bound to `body`, when every call of it in the
    callee passes one of its own parameters (`sublayer(x)`) or that parameter through one of its
    layers (`sublayer(self.norm(x))`: the layout kept, nothing else)."""
    from attnlint.analysis.flow import walk_nodes

    if len(body.params.params) != 1:
        return None
    holder = next((name for name, value in bound.items() if value.node is body), None)
    if holder is None:
        return None
    found: Optional[Value] = None
    for inner in walk_nodes(definition.body):
        if not (isinstance(inner, cst.Call) and isinstance(inner.func, cst.Name) and inner.func.value == holder):
            continue
        if len(inner.args) != 1 or inner.args[0].keyword is not None or inner.args[0].star:
            return None
        arg = inner.args[0].value
        through_layer = (
            isinstance(arg, cst.Call)
            and isinstance(arg.func, cst.Attribute)
            and isinstance(arg.func.value, cst.Name)
            and arg.func.value.value == "self"
            and len(arg.args) == 1
        )
        name = arg.args[0].value if through_layer else arg
        if not isinstance(name, cst.Name) or name.value not in bound:
            return None
        value = bound[name.value]
        if through_layer:
            value = Value(kind=value.kind, rank=value.rank, shape=value.shape, feature_last=value.feature_last, node=arg)
        if found is not None and found != value:
            return None
        found = value
    return found


def user_module_call(ev, node: cst.Call, kind: str, values: List[Value]) -> Value:
    """A call of an instance of a class defined here: its forward, for these arguments."""
    if ev.project is not None:
        run_lambda_arguments(ev, node, values, ev.project.definitions.method(kind, "forward"))
    ev.facts.calls.append(
        _flow().CallSite(callee="forward", method=True, call=node, values=tuple(values), callee_class=kind)
    )
    keywords = tuple(
        a.keyword.value for a in node.args if a.keyword is not None and _flow().masks.is_mask_param(a.keyword.value)
    )
    if any(a.keyword is None and v.mask is not None for a, v in zip(node.args, values)):
        keywords += ("<positional>",)  # `self.attn(x, mask)`
        # A mask parameter handed on positionally under its own name (`self.self(hidden_states,
        # attention_mask)`) reaches that attention (FunctionFacts.masks_into_attention).
        keywords += tuple(
            a.value.value
            for a, v in zip(node.args, values)
            if a.keyword is None and v.mask is not None and isinstance(a.value, cst.Name)
        )
    ev.facts.attention_calls.append(
        AttentionCallSite(
            call=node, api="submodule", inputs=tuple(values), mask_keywords=keywords, callee_class=kind
        )
    )
    if ev.project is not None:
        summary = ev.project.call(ev, node, "forward", values, True, class_name=kind)
        if summary is not None:
            return _own(summary, node)
    _flow().escape(values)
    return Value(kind="unknown", node=node)


def _features_last(value: Value) -> bool:
    """The last axis may hold the features (not a key moved to (.., d, n) for the product)."""
    return value.feature_last is not False and not value.feature_transposed


def _torch_module_call(ev, node: cst.Call, module: Value, kind: str, values: List[Value], attr: str) -> Value:
    if kind in IDENTITY_MODULES and values:
        return values[0].with_(node=node) if values[0].kind != "unknown" else values[0]
    if kind == "Embedding" and values:
        # One vector per id: an axis more, of the embedding's width; a padded batch of ids gives
        # a batch padded at the same places.
        source = values[0]
        rank = source.rank + 1 if source.rank is not None else None
        shape = None
        if source.shape is not None and len(module.module_sizes) >= 2 and module.module_sizes[1] is not None:
            shape = source.shape + (Axis(module.module_sizes[1], FEATURE),)
        return Value(kind="tensor", rank=rank, shape=shape, feature_last=True, node=node, padding=source.padding)
    if kind in TOKEN_NORMS and values and not (values[0].role in (QUERY, KEY) and _features_last(values[0])):
        from attnlint.analysis import shapes

        return shapes.elementwise(ev, values[0], node)
    if kind in TOKEN_NORMS and values:
        # QK-norm: each query and key vector normalised over its features. It is still the
        # query (key), laid out as before, and whatever scaled it before is normalised away:
        # the dot products grow with the head dimension again, as unscaled ones do.
        source = values[0]
        return Value(
            kind="tensor",
            rank=source.rank,
            shape=source.shape,
            role=source.role,
            feature_last=source.feature_last,
            feature_transposed=source.feature_transposed,
            scaled=False,
            scale=ONE,
            node=node,
            padding=source.padding,
        )
    if kind in SHAPE_PRESERVING_MODULES and values and (values[0].shape is not None or values[0].padded):
        # Per position: a normalised (or activated) padded batch is padded at the same places.
        return Value(kind="tensor", rank=values[0].rank, shape=values[0].shape, node=node, padding=values[0].padding)
    if kind in PROJECTION_MODULES and values:
        role = role_from_name(attr) if attr else None
        # Weights set by hand in __init__ may fold the scale in: unknown, not "unscaled".
        unscaled = not module.custom_init
        shape = None
        source = values[0]
        if source.shape is not None and module.module_sizes and kind != "Conv1D":
            ev.learn_equal(source.shape[-1].size, module.module_sizes[0])
        if source.shape is not None and len(module.module_sizes) >= 2 and kind != "Conv1D":
            # The last axis holds the layer's output features (`nn.Linear(d, 1)`: one score each).
            shape = source.shape[:-1] + (replace(source.shape[-1], size=module.module_sizes[1], role=FEATURE),)
        return Value(
            kind="tensor",
            rank=source.rank,
            shape=shape,
            last_size=module.module_sizes[1] if shape is None and len(module.module_sizes) >= 2 else None,
            role=role,
            feature_last=True,
            scaled=False if unscaled else None,
            scale=ONE if unscaled else None,
            node=node,
            padding=source.padding,
        )
    _flow().escape(values)
    return Value(kind="unknown", node=node)


def _module_constructor(ev, node: cst.Call, short: str) -> Value:
    values = ev.args(node)
    sizes = tuple(v.sym for v, a in zip(values, node.args) if a.keyword is None)
    keywords = {a.keyword.value: v.sym for v, a in zip(values, node.args) if a.keyword is not None}
    if short in PROJECTION_MODULES:
        names = ("in_features", "out_features")
        sizes = tuple(list(sizes) + [keywords.get(n) for n in names[len(sizes) :]])[:2]
    elif short == "MultiheadAttention":
        names = ("embed_dim", "num_heads")
        sizes = tuple(list(sizes) + [keywords.get(n) for n in names[len(sizes) :]])[:2]
    elif short in CONV_MODULES:
        names = ("in_channels", "out_channels")
        sizes = tuple(list(sizes) + [keywords.get(n) for n in names[len(sizes) :]])[:2]
    elif short in ("RNN", "GRU", "LSTM"):
        names = ("input_size", "hidden_size")
        sizes = tuple(list(sizes) + [keywords.get(n) for n in names[len(sizes) :]])[:2]
    elif short == "CrossEntropyLoss":
        # Its ignore_index is read here, in the scope that builds it (`cfg.ignore_index` of a
        # config parameter of __init__), not where the loss is later called.
        ignore = [v for v, a in zip(values, node.args) if a.keyword is not None and a.keyword.value == "ignore_index"]
        if not ignore:
            ignore = [v for v, a in zip(values, node.args) if a.keyword is None][2:3]
        if ignore and ignore[0].int_value is not None:
            return Value(kind="module", module_type=short, ctor=node, node=node, ignore_index=ignore[0].int_value)
    elif short == "Sequential" and all(a.keyword is None and not a.star for a in node.args):
        # The layers in order: calling the container calls each on the last one's output.
        layers = tuple(values)
        return Value(kind="module", module_type=short, ctor=node, node=node, elements=layers)
    elif short == "Sequential" and len(node.args) == 1 and node.args[0].star == "*" and values[0].kind == "tuple":
        # `nn.Sequential(*[Block(dim) for _ in range(depth)])`: the layers of a list; one of
        # a list of alike layers stands for all of them (each maps its input's shape to itself
        # as far as the container's output is concerned: what the first is given is what the
        # analysis can say the others are given too).
        spread = values[0]
        layers = spread.elements if spread.elements and not spread.known_tail else (
            (spread.each,) if spread.each is not None else ()
        )
        if layers:
            return Value(kind="module", module_type=short, ctor=node, node=node, elements=tuple(layers))
    return Value(kind="module", module_type=short, ctor=node, node=node, module_sizes=sizes)


# Convolutions over (batch, channels, *positions): the output has out_channels on axis 1.
CONV_MODULES = ("Conv1d", "Conv2d", "Conv3d")


@handlers.module(*CONV_MODULES)
def _conv_call(ev, call: Call):
    values = ev.args(call.node)
    if not values:
        return None
    result = conv_output(call.receiver, values[0], call.node)
    func = call.node.func
    attr = func.attr.value if isinstance(func, cst.Attribute) else None
    role = role_from_name(attr) if attr else None
    if call.receiver.module_type == "Conv1d" and role in (QUERY, KEY, "value") and result.rank in (None, 2, 3):
        # `self.q_conv(x)` of ([batch,] channels, points): queries or keys with their features
        # before the positions, as `k.transpose(1, 2)` lays them out for `bmm(q, k)` (point
        # cloud attention); `.permute(0, 2, 1)` puts them last again. Freshly projected: no scale
        # unless its weights are set by hand.
        unscaled = not call.receiver.custom_init
        tokens_first = Value(
            kind="tensor", rank=result.rank, role=role, feature_last=True,
            scaled=False if unscaled else None, scale=ONE if unscaled else None, node=call.node,
        )
        return result.with_(
            role=role, feature_last=True, feature_transposed=True, base=tokens_first,
            scaled=tokens_first.scaled, scale=tokens_first.scale,
        )
    return result


def conv_output(module: Value, source: Value, node) -> Value:
    """(batch, in_channels, *positions) -> (batch, out_channels, *positions of unknown size): the
    positions' sizes depend on kernel, stride and padding; the channel axis is the layer's
    output features."""
    from attnlint.analysis.values import FEATURE, Axis

    rank = source.rank
    out_channels = module.module_sizes[1] if len(module.module_sizes) >= 2 else None
    if rank is None or rank < 3 or out_channels is None:
        return Value(kind="tensor", rank=rank, node=node)
    batch = source.shape[0] if source.shape is not None else Axis()
    shape = (batch, Axis(out_channels, FEATURE)) + tuple(Axis() for _ in range(rank - 2))
    return Value(kind="tensor", rank=rank, shape=shape, node=node)


# Layers a container may apply in turn here: each maps one tensor to one tensor and records no
# site at the call (a softmax is recorded at the container's call).
_SEQUENTIAL_LAYERS = (
    CONV_MODULES
    + PROJECTION_MODULES
    + IDENTITY_MODULES
    + SHAPE_PRESERVING_MODULES
    + ("Softmax", "ELU", "Softplus", "InstanceNorm2d", "Rearrange", "Reduce")
)


@handlers.module("Sequential")
def _sequential_call(ev, call: Call):
    """`self.pool(x)` with `self.pool = nn.Sequential(nn.Conv1d(d, 1, 1), nn.Softmax(dim=1))`: each
    layer applied to the previous one's output; a softmax inside is a softmax at this call."""
    from attnlint.analysis import softmax

    layers = call.receiver.elements
    values = ev.args(call.node)
    if not layers or len(values) != 1 or not call.node.args:
        return None
    current = values[0]
    slot = "__sequential_input__"
    for layer in layers:
        if layer.kind == "module" and layer.user_class and layer.module_type:
            # A layer of the checked code: its forward, on the previous output (a call site of
            # that forward, with what it is given).
            current = user_module_call(ev, call.node, layer.module_type, [current]).with_(node=call.node)
            continue
        if layer.kind != "module" or layer.module_type not in _SEQUENTIAL_LAYERS:
            # A layer whose call records sites of its own (attention, a transformer layer) or that
            # we do not know: the container's output is unknown.
            _flow().escape([current])
            return Value(kind="unknown", node=call.node)
        if layer.module_type == "Softmax":
            current = softmax.softmax(
                ev, call.node, call.node.args[0].value, layer.ctor, form="module", receiver=current
            )
            continue
        # Each layer's own handler, on the previous output bound to a name of its own.
        ev.env[slot] = current
        try:
            fake = cst.Call(func=cst.Name("layer"), args=[cst.Arg(value=cst.Name(slot))])
            current = call_module_value(ev, fake, layer, "")
        finally:
            ev.env.pop(slot, None)
        current = current.with_(node=call.node)
    return current


# ------------------------------------------------------------------------------------------
# Functions
# ------------------------------------------------------------------------------------------
@handlers.function("torch.nn.Parameter")
def _parameter(ev, call: Call):
    if not call.args:
        return None
    inner = ev.eval(call.args[0].value)
    ev.args(call.node.with_changes(args=call.node.args[1:]))
    learned = {}
    if inner.constructor is not None:
        # A learned tensor initialised from a constructor: nothing was multiplied into it.
        learned = {"scaled": False, "scale": ONE}
    return inner.with_(kind="tensor", is_parameter=True, node=call.node, sym=None, **learned)


@handlers.function("copy.deepcopy", "copy.copy")
def _copy(ev, call: Call):
    """`copy.deepcopy(layer)` (the Annotated Transformer's `clones`): a copy is what it copies,
    a layer of the same class and sizes, a tensor with the same facts."""
    if len(call.args) != 1 or call.args[0].keyword is not None or call.args[0].star:
        return None
    return ev.eval(call.args[0].value)


@handlers.function("torch.dropout", "torch.dropout_")
def _dropout(ev, call: Call):
    values = ev.args(call.node)
    dropout.record(ev, call.node, values)  # the mode it runs in (attnlint.analysis.dropout)
    return values[0] if values else None


def holds_modules(value: Value) -> bool:
    """An `nn.ModuleList()` (empty, or of modules appended so far): appending to it is building it."""
    if value.kind == "module":
        return value.module_type == "ModuleList"
    return value.kind == "tuple" and not value.elements and value.each is not None and value.each.kind == "module"


def grow_module_list(ev, node: cst.Call, receiver: Value, func: cst.Attribute) -> Value:
    """`self.layers.append(Block(d))` / `.extend(Block(d) for _ in range(n))` in a loop: the list
    holds such modules, so `self.layers[i](x)` and `for layer in self.layers` call one of them
    (several kinds appended: what they agree on)."""
    values = ev.args(node)
    if len(values) != 1:
        return Value(kind="unknown", node=node)
    added = values[0] if func.attr.value == "append" else ev.element_of(values[0])
    if added.kind != "module":
        return Value(kind="unknown", node=node)
    each = added if receiver.kind == "module" else join(receiver.each, added)
    ev._bind(func.value, Value(kind="tuple", each=each, node=receiver.node), name_roles=False)
    return Value(kind="unknown", node=node)


def other_function(ev, node: cst.Call, qualified: str) -> Value:
    """A qualified callable no table has: nn module constructors, math and numpy helpers (numbers),
    and the rest (unknown)."""
    short = qualified.rsplit(".", 1)[-1]
    if short in ("ModuleList",) and qualified.startswith("torch.nn.") and len(node.args) == 1:
        modules = ev.eval(node.args[0].value)  # iterating or indexing it gives the modules
        if modules.kind == "tuple" and not modules.elements and modules.each is None:
            # `nn.ModuleList([])`: empty, as `nn.ModuleList()` is; appending to it builds it.
            return _module_constructor(ev, node.with_changes(args=[]), short)
        return modules if modules.kind == "tuple" else Value(kind="unknown", node=node)
    if qualified.startswith("torch.nn.") and short[:1].isupper():
        return _module_constructor(ev, node, short)
    if qualified.startswith("math.") or qualified.startswith("numpy."):
        ev.args(node)
        return Value(kind="scalar", node=node)
    _flow().escape(ev.args(node))
    return Value(kind="unknown", node=node)


def call_closure_value(ev, node: cst.Call, target: Value, values: Optional[List[Value]] = None) -> Value:
    """Calling a function a factory returned: its body, run in the factory call's scope, on
    this call's arguments (keywords included; `values`: theirs when already known)."""
    if values is None:
        values = ev.args(node)
    if ev.project is None:
        return Value(kind="unknown", node=node)
    factory_call, factory, closure, factory_values = target.closure
    if any(a.star for a in node.args):
        return Value(kind="unknown", node=node)
    result = ev.project.call_closure(ev, factory_call, factory, closure, list(factory_values), values, closure_call=node)
    return _own(result, node)


def user_function(ev, node: cst.Call, name: str, method: bool = False, values=None) -> Value:
    """A call of a name no table knows: maybe a function of the checked code."""
    if values is None:
        values = ev.args(node)
    if ev.project is not None and not method and name in ev.project.definitions.functions:
        run_lambda_arguments(ev, node, values, (None, ev.project.definitions.functions[name]))
    if not method and ev.project is not None and name not in ev.env:
        from attnlint.analysis.losses import returned_closure

        factory = ev.project.definitions.functions.get(name)
        closure = returned_closure(factory) if factory is not None else None
        if closure is not None:
            # `make_attention()`: the function it returns, to be called later.
            return Value(kind="unknown", node=node, closure=(node, factory, closure, tuple(values)))
    root = _model_handed_in(ev, name, method, values)
    if root is not None:
        return user_module_call(ev, node, root, values)
    ev.facts.calls.append(_flow().CallSite(callee=name, method=method, call=node, values=tuple(values)))
    lowered = name.lower()
    if any(w in lowered for w in ROTARY_WORDS):
        # Rotary embeddings rotate feature pairs: shape, role and scale status are kept.
        tensors = [v for v in values if v.kind in ("tensor", "unknown")]
        if len(tensors) >= 2 and tensors[0].role in (QUERY, KEY) and tensors[1].role in (QUERY, KEY):
            return Value(kind="tuple", elements=(tensors[0], tensors[1]), node=node)
        if tensors:
            return tensors[0].with_(node=node)
    summary = _summary(ev, node, name, values, method=method)
    if summary is not None:
        return summary
    if not (not method and name in _flow().READING_BUILTINS):
        _flow().escape(values)
    return Value(kind="unknown", node=node)


_MODEL_WORDS = ("model", "net", "network")


def _model_handed_in(ev, name: str, method: bool, values: List[Value]) -> Optional[str]:
    """`def encode(model, docs): model(collate(docs))`: a parameter named as the model, called on
    a padded batch, in a module with one root nn.Module class (Summaries.root_module) is most
    likely that class. Only padded batches and masks are followed this way: what the call says
    of the padding, or of what a mask means, reaches the model's forward; the rest of its
    arguments say nothing new."""
    from attnlint.analysis.names import words

    if method or ev.project is None or name not in ev.facts.param_nodes:
        return None
    param = ev.facts.param_nodes[name]
    bound = ev.env.get(name)
    if param.default is not None or bound is None or bound.kind not in ("tensor", "unknown") or bound.param != name:
        return None
    if not values or not (values[0].padded or any(v.mask is not None for v in values)):
        return None
    root = ev.project.root_module()
    if root is None:
        return None
    return root if names_a_model(name, root) else None


def names_a_model(name: str, class_name: str) -> bool:
    """`model`, `net`, `dalle` for `DALLE`: a name that may hold the module of `class_name`."""
    from attnlint.analysis.names import words

    return any(w in _MODEL_WORDS for w in words(name)) or _names_class(name, class_name)


@lru_cache(maxsize=65536)
def _names_class(name: str, class_name: str) -> bool:
    """`dalle` for `DALLE`, `encoder` for `TransformerEncoder`: a parameter named for the class
    (its name, or the last words of it). Remembered: every parameter of every function of a
    module is asked about every class of it."""
    from attnlint.analysis.names import words

    if name.replace("_", "").lower() == class_name.lower():
        return True
    mine, theirs = [w.lower() for w in words(name)], [w.lower() for w in words(class_name)]
    return bool(mine) and theirs[-len(mine):] == mine


@handlers.function("functools.partial")
def _partial(ev, call: Call):
    """`partial(collate, pad_id=pad)` of a function of the checked code: calling it later calls
    that function with these arguments first (see bound_function_call)."""
    values = ev.args(call.node)
    args = call.node.args
    built = _flow()._torch_module_class(args[0].value, ev.aliases) if args and args[0].keyword is None else None
    if built is not None:
        # `partial(nn.LayerNorm, eps=1e-6)`: calling it builds that module (its options bound).
        return Value(kind="unknown", node=call.node, function=built)
    if (
        not args
        or args[0].keyword is not None
        or args[0].star
        or not isinstance(args[0].value, cst.Name)
        or ev.project is None
        or (args[0].value.value not in ev.project.definitions.functions and args[0].value.value not in ev.project.external)
    ):
        _flow().escape(values)
        return Value(kind="unknown", node=call.node)
    return Value(kind="unknown", node=call.node, user_function=args[0].value.value, bound_call=(call.node, tuple(values[1:])))


def bound_function_call(ev, node: cst.Call, target: Value, values: List[Value]) -> Value:
    """`collate(batch)` where `collate = partial(collate_batch, pad_id=pad)`: the call of
    `collate_batch` with the partial's arguments, then the call's own (positional first)."""
    partial, bound = target.bound_call
    pairs = list(zip(partial.args[1:], bound)) + list(zip(node.args, values))
    if any(arg.star for arg, _ in pairs):
        return user_function(ev, node, target.user_function, values=values)
    ordered = [p for p in pairs if p[0].keyword is None] + [p for p in pairs if p[0].keyword is not None]
    merged = node.with_changes(func=cst.Name(target.user_function), args=[arg for arg, _ in ordered])
    if target.function_home is not None:
        # A function of another file of the project: its summary there.
        from attnlint.analysis.project import foreign

        home = target.function_home
        result = home.call(ev, merged, target.user_function, [value for _, value in ordered], False)
        return Value(kind="unknown", node=node) if result is None else _own(foreign(result, home), node)
    return user_function(ev, merged, target.user_function, values=[value for _, value in ordered])


def call_value(ev, function: Value, values: List[Value]) -> Value:
    """Calling a function value (a partial or a closure a factory returned) on `values`."""
    fake = cst.Call(func=cst.Name("_"), args=[cst.Arg(value=cst.Name("_")) for _ in values])
    if function.bound_call is not None:
        return bound_function_call(ev, fake, function, values)
    if function.closure is not None:
        return call_closure_value(ev, fake, function, values)
    return Value(kind="unknown")


def call_with_values(ev, func: cst.BaseExpression, values: List[Value]) -> Value:
    """`map(self._heads, qkv)`: the value of calling `func` on each element."""
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
        name, method = func.attr.value, True
    elif isinstance(func, cst.Name):
        name, method = func.value, False
        target = ev.env.get(name)
        if target is not None and (target.bound_call is not None or target.closure is not None):
            # `collate = make_collate_fn(pad_id)`: the partial or closure a factory returned.
            return call_value(ev, target, values)
    elif isinstance(func, cst.Call):
        # `map(partial(apply_rotary_pos_emb, freqs), (q, k))`: the function with those arguments.
        target = ev.eval(func)
        if target.bound_call is None:
            return UNKNOWN
        fake = cst.Call(func=cst.Name(target.user_function), args=[cst.Arg(value=cst.Name("_")) for _ in values])
        return bound_function_call(ev, fake, target, values)
    else:
        return UNKNOWN
    fake = cst.Call(func=func, args=[cst.Arg(value=cst.Name("_")) for _ in values])
    summary = _summary(ev, fake, name, values, method=method)
    return summary if summary is not None else UNKNOWN


def _summary(ev, node: cst.Call, name: str, values: List[Value], method: bool) -> Optional[Value]:
    """The result of calling a function of the checked code, from its summary (see
    :class:`attnlint.analysis.summaries.Summaries`), or None when there is none."""
    if ev.project is None:
        return None
    result = ev.project.call(ev, node, name, values, method)
    return None if result is None else _own(result, node)


def _own(value: Value, node: cst.Call) -> Value:
    """A summary's value as the value of this call (its weights were made elsewhere)."""
    if (
        value.kind == "unknown"
        and value.rank is None
        and value.sym is None
        and not value.entries
        and not value.padded
        and value.truth is None
        # A function handed back (`return partial(collate, pad_id=vocab.pad_id)`) is called later.
        and value.bound_call is None
        and value.closure is None
        and value.function is None
        and not value.function_choices
    ):
        return Value(kind="unknown", node=node)
    return value


def user_method(ev, node: cst.Call, receiver: Value, method: str) -> Value:
    """`self.tokenizer.batch_encode(texts)` on an instance of a class defined here."""
    values = ev.args(node)
    if ev.project is not None and receiver.module_type in ev.project.external_classes:
        result = ev.project.call(ev, node, method, values, True, class_name=receiver.module_type)
        if result is not None:
            return _own(result, node)
    elif ev.project is not None:
        target = ev.project.definitions.method(receiver.module_type, method)
        if target is not None:
            ev.facts.calls.append(
                _flow().CallSite(
                    callee=method, method=True, call=node, values=tuple(values), callee_class=receiver.module_type
                )
            )
            result = ev.project.call(ev, node, method, values, True, target=target)
            if result is not None:
                return _own(result, node)
    _flow().escape(values)
    return Value(kind="unknown", node=node)


def is_super(node: cst.BaseExpression) -> bool:
    """`super()` or `super(Cls, self)`."""
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "super"


def super_call(ev, node: cst.Call, method: str) -> Value:
    """`super().forward(x, x, x)`: the method of the first base class defined here that has it,
    called on this instance (a subclass that only fixes the arguments of its base's forward)."""
    values = ev.args(node)
    if ev.project is not None and method == "__init__" and ev.record_attrs and ev.cls is not None:
        _inherit_attributes(ev, node, values)
        return Value(kind="unknown", node=node)
    if ev.project is not None and method != "__init__":
        for base in ev.cls.bases:
            target = ev.project.definitions.method(base, method)
            if target is None:
                continue
            ev.facts.calls.append(
                _flow().CallSite(callee=method, method=True, call=node, values=tuple(values), callee_class=target[0])
            )
            result = ev.project.call(ev, node, method, values, True, target=target)
            if result is not None:
                return _own(result, node)
            break
    _flow().escape(values)
    return Value(kind="unknown", node=node)


def _inherit_attributes(ev, node: cst.Call, values: List[Value]) -> None:
    """`super().__init__(n_head, n_feat, dropout)` in a subclass's `__init__`: the base class
    (defined here) sets its attributes on this instance, made of what this call passes
    (`self.h = n_head`, `self.d_k = n_feat // n_head`), as if its body ran here."""
    from attnlint.analysis.summaries import bind_arguments

    project = ev.project
    for base in ev.cls.bases:
        target = project.definitions.method(base, "__init__")
        if target is None:
            continue
        owner, definition = target
        if id(definition) in project._active or ev.depth + 1 >= _MAX_INHERITED_DEPTH:
            return
        bound = bind_arguments(definition, node, values, method=True)
        if bound is None:
            return
        project._active.add(id(definition))
        try:
            base_reading = project._run_body(ev, owner, definition, bound)
        finally:
            project._active.discard(id(definition))
        for key, value in base_reading.env.items():
            if key.startswith("self.") and "." not in key[5:]:
                ev.env[key] = value
                ev.cls.attrs[key[5:]] = value
        return


# Base classes' `__init__`s read through `super().__init__` this deep at most.
_MAX_INHERITED_DEPTH = 4


def note_custom_init(ev, expr: cst.BaseExpression) -> None:
    """`nn.init.normal_(self.q.weight, std=...)`, `self.q.weight.data.mul_(s)` in __init__: the
    projection's weights are set by hand, and may carry a folded-in scale (T5 does this)."""
    for attr in _self_weight_owners(expr) + sized_parameter_inits(expr):
        module = ev.cls.attrs.get(attr)
        if module is not None:
            ev.cls.attrs[attr] = module.with_(custom_init=True)
            if "self." + attr in ev.env:  # the attribute as __init__ goes on to see it
                ev.env["self." + attr] = ev.env["self." + attr].with_(custom_init=True)


def sized_parameter_inits(node: cst.CSTNode) -> List[str]:
    """Attributes X of `nn.init.normal_(self.X, std=d ** -0.5)`, `self.X.data.mul_(s)`: a
    learned tensor initialised with a number that is not a literal may carry a folded-in scale
    (`nn.init.xavier_uniform_(self.X)` does not)."""
    found = []
    func = node.func if isinstance(node, cst.Call) else None
    name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
    # In-place initialisers and setters (`normal_`, `uniform_`, `mul_`, `copy_`), not uses.
    if isinstance(node, cst.Call) and isinstance(name, str) and name.endswith("_") and not name.endswith("__"):
        targets = [a.value for a in node.args]
        if isinstance(node.func, cst.Attribute):
            targets.append(node.func.value)
        owners = [self_attr(t) for t in targets]
        owners = [o for o in owners if o is not None]
        numbers = [a.value for a in node.args if self_attr(a.value) is None]
        if owners and any(not _literal_number(n) for n in numbers):
            found.extend(owners)
    for child in child_nodes(node):
        found.extend(sized_parameter_inits(child))
    return found


def self_attr(node: cst.CSTNode) -> Optional[str]:
    """X of `self.X` or `self.X.data`."""
    if isinstance(node, cst.Attribute) and node.attr.value == "data":
        node = node.value
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
        return node.attr.value
    return None


def _literal_number(node: cst.CSTNode) -> bool:
    if isinstance(node, cst.UnaryOperation):
        return _literal_number(node.expression)
    return isinstance(node, (cst.Integer, cst.Float))


def _self_weight_owners(node: cst.CSTNode) -> List[str]:
    """Attributes X of every `self.X.weight` (or `.bias`) inside an expression."""
    found = []
    if isinstance(node, cst.Attribute) and node.attr.value in ("weight", "bias"):
        owner = node.value
        if isinstance(owner, cst.Attribute) and isinstance(owner.value, cst.Name) and owner.value.value == "self":
            found.append(owner.attr.value)
    for child in child_nodes(node):
        found.extend(_self_weight_owners(child))
    return found
