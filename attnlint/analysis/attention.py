"""PyTorch's attention APIs: `scaled_dot_product_attention`, `nn.MultiheadAttention` and the
`nn.Transformer*` modules. Each call is an attention site, and each mask it is given a mask use
with the convention that API reads."""

from __future__ import annotations

from typing import Dict, List, Optional

import libcst as cst

from attnlint.analysis import handlers, masks
from attnlint.analysis.names import child_nodes, names_in, words
from attnlint.analysis.padding_side import tests_for_padding
from attnlint.analysis.handlers import Call
from attnlint.analysis.values import ATTEND, MASKED, AttentionCallSite, MaskUseSite, Value


def _flow():
    from attnlint.analysis import flow

    return flow


@handlers.function("torch.scaled_dot_product_attention")
@handlers.function_named("scaled_dot_product_attention")
def sdpa(ev, call: Call):
    flow = _flow()
    # The sites name the call as written; its arguments are read with `**kwargs` spread out.
    written = call.node
    node = spread_keywords(written, ev.facts.node)
    values = [ev.eval(a.value) for a in node.args]
    mask_arg = flow._arg(node, 3, "attn_mask")
    passed = ()
    mask = ev.eval(mask_arg.value) if mask_arg is not None else None
    # In a summary read for one call, a name holding None (a parameter that call leaves out) is
    # no mask. (A function's own reading keeps its mask path, whatever its callers here pass.)
    if mask_arg is not None and not (isinstance(mask_arg.value, cst.Name) and mask_arg.value.value == "None") and not (
        ev.calling is not None and mask.is_none and mask.kind == "scalar"
    ):
        passed = ("attn_mask",)
        q_k = [v for v, a in zip(values, node.args) if a.keyword is None][:2]
        ev.facts.mask_uses.append(
            MaskUseSite(
                call=written,
                api="sdpa",
                keyword="attn_mask",
                expects=ATTEND,
                mask_node=mask_arg.value,
                mask=mask,
                lengths=masks.lengths_at(ev, q_k[0], q_k[1], -2, -2) if len(q_k) == 2 else None,
            )
        )
    causal_arg = flow._arg(node, 5, "is_causal")
    positional = [v for v, a in zip(values, node.args) if a.keyword is None]
    ev.facts.attention_calls.append(
        AttentionCallSite(
            call=written,
            api="sdpa",
            inputs=tuple(positional[:3]),
            mask_keywords=passed,
            is_causal=causal_arg is not None and not flow.is_false(causal_arg.value),
            causal_flag=_value_of(node, values, causal_arg),
            causal_flag_node=causal_arg.value if causal_arg is not None else None,
        )
    )
    query = positional[0] if positional else None
    value = positional[2] if len(positional) > 2 else None
    shape = None
    if query is not None and value is not None and query.shape is not None and value.shape is not None:
        shape = query.shape[:-1] + value.shape[-1:]
    return Value(kind="tensor", rank=query.rank if query else None, shape=shape, node=node)


def spread_keywords(node: cst.Call, scope: Optional[cst.CSTNode]) -> cst.Call:
    """`sdpa(q, k, v, **kwargs)` with `kwargs = dict(attn_mask=m, is_causal=True)` (or a
    `{"attn_mask": m}` literal) assigned once in the function: the call as if those keywords were
    written in it, their values the nodes written in the dict. Unchanged otherwise."""
    from attnlint.analysis.fill_values import single_assignment

    args, spread = [], False
    for arg in node.args:
        spread_name = arg.star == "**" and isinstance(arg.value, cst.Name)
        written = single_assignment(arg.value.value, scope) if spread_name else None
        keywords = _dict_keywords(written) if written is not None else None
        if keywords is None:
            args.append(arg)
            continue
        spread = True
        args.extend(cst.Arg(keyword=cst.Name(key), value=value) for key, value in keywords)
    return node.with_changes(args=args) if spread else node


def _dict_keywords(node: cst.BaseExpression):
    """(key, value) pairs of `dict(a=1, b=x)` or `{"a": 1, "b": x}`; None for anything else."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "dict":
        if all(a.keyword is not None and not a.star for a in node.args):
            return [(a.keyword.value, a.value) for a in node.args]
        return None
    if isinstance(node, cst.Dict):
        pairs = []
        for element in node.elements:
            if not isinstance(element, cst.DictElement) or not isinstance(element.key, cst.SimpleString):
                return None
            key = element.key.evaluated_value
            if not isinstance(key, str) or not key.isidentifier():
                return None
            pairs.append((key, element.value))
        return pairs
    return None


def _value_of(node: cst.Call, values: List[Value], arg: Optional[cst.Arg]) -> Optional[Value]:
    """The value evaluated for one argument of the call (`values` follows `node.args`)."""
    for a, value in zip(node.args, values):
        if a is arg:
            return value
    return None


def attention_module_call(ev, node: cst.Call, kind: str, values: List[Value], module: Value) -> Value:
    """nn.MultiheadAttention / nn.Transformer*: masks use True = masked."""
    flow = _flow()
    positions = masks.MASK_ARGUMENTS[kind]
    passed = []
    for keyword, position in positions.items():
        arg = flow._arg(node, position, keyword)
        if arg is None or (isinstance(arg.value, cst.Name) and arg.value.value == "None"):
            continue
        value = ev.eval(arg.value)
        if ev.calling is not None and value.is_none and value.kind == "scalar":
            continue  # None in a summary read for one call: a parameter that call leaves out
        passed.append(keyword)
        ev.facts.mask_uses.append(
            MaskUseSite(call=node, api=kind, keyword=keyword, expects=MASKED, mask_node=arg.value, mask=value)
        )
    causal_arg = flow._arg(node, 99, "is_causal")
    ev.facts.attention_calls.append(
        AttentionCallSite(
            call=node,
            api=kind,
            inputs=tuple(values[:3]),
            mask_keywords=tuple(passed),
            is_causal=causal_arg is not None and not flow.is_false(causal_arg.value),
            causal_flag=_value_of(node, values, causal_arg),
        )
    )
    first = values[0] if values else None
    output = Value(kind="tensor", rank=first.rank if first else None, shape=first.shape if first else None)
    if kind == "MultiheadAttention":
        return Value(kind="tuple", elements=(output, Value(kind="tensor")), node=node)
    return output.with_(node=node)


# Encoder-decoder modules: for each positional input, the masks that keep its padding out of
# the attention ("causal": a causal tgt_mask or is_causal, under which right padding is never
# attended by a real token). Any mask given covers the inputs of the other APIs.
_MASKS_FOR_INPUT = {
    "Transformer": (
        ("src", ("src_mask", "src_key_padding_mask", "memory_mask", "memory_key_padding_mask")),
        ("tgt", ("tgt_mask", "tgt_key_padding_mask", "causal")),
    ),
    "TransformerDecoder": (
        ("tgt", ("tgt_mask", "tgt_key_padding_mask", "causal")),
        ("memory", ("memory_mask", "memory_key_padding_mask")),
    ),
}
_MASKS_FOR_INPUT["TransformerDecoderLayer"] = _MASKS_FOR_INPUT["TransformerDecoder"]
# APIs whose positional inputs are (query, key, value).
_QUERY_FIRST = ("sdpa", "MultiheadAttention")


def padded_inputs_without_mask(site: AttentionCallSite) -> List[str]:
    """The inputs of an attention call that are padded batches and get no mask that covers them:
    ("src",) for `nn.Transformer(src, tgt, tgt_mask=causal)` with a padded src; ("input",) for
    any other API given a padded batch and no mask at all. Right padding under `is_causal=True`
    is covered."""
    table = _MASKS_FOR_INPUT.get(site.api)
    if table is None:
        # What is attended is the keys (and their values): a padded query against a sequence
        # that has no padding (cross-attention from text to image patches) attends to nothing
        # it should not.
        attended = site.inputs[1:] if site.api in _QUERY_FIRST and len(site.inputs) >= 2 else site.inputs
        if site.mask_keywords or site.is_causal or not any(v.padded for v in attended):
            return []
        return ["input"]
    given = set(site.mask_keywords) | ({"causal"} if site.is_causal else set())
    found = [
        name
        for (name, covering), value in zip(table, site.inputs)
        if value.padded and not given.intersection(covering)
    ]
    if site.api == "Transformer" and site.inputs and site.inputs[0].padded and "src" not in found:
        # The encoder's output is the decoder's memory: a padded source needs its mask in the
        # cross-attention too (`memory_key_padding_mask`), not only in the encoder.
        if not given.intersection(("memory_mask", "memory_key_padding_mask")):
            found.append("memory")
    return found


def unread_padding_masks(function) -> Dict[str, cst.Name]:
    """Locals whose name says a padding mask (`pad_mask = tokens.eq(pad)`, `encoder_padding_mask =
    encoder_out["encoder_padding_mask"]`), or a mask made by a test against the pad id, bound to something other than None and never read in
    the function: a mask the code obtained for its attention and then did not give it. Each name
    maps to its first binding. Nothing when the body reads `locals()` (every name is handed on)."""
    node = function.node
    if not isinstance(node, cst.FunctionDef):
        return {}
    bound: Dict[str, cst.Name] = {}
    targets = set()
    for stmt in _walk(node.body):
        if isinstance(stmt, cst.Assign) and not (isinstance(stmt.value, cst.Name) and stmt.value.value == "None"):
            for target in stmt.targets:
                for name in _target_names(target.target):
                    targets.add(id(name))
                    if masks.names_padding(name.value) or (
                        "mask" in words(name.value)
                        and len(words(name.value)) > 1
                        and isinstance(target.target, cst.Name)
                        and tests_for_padding(stmt.value)
                    ):
                        # By its name, or a mask of something (not a bare `mask`) made by testing
                        # ids against the pad id (`hist_mask = batch["hist_items"] > 0`).
                        bound.setdefault(name.value, name)
    if not bound:
        return {}
    for n in _walk(node.body):
        if isinstance(n, cst.Name) and id(n) not in targets:
            if n.value == "locals":
                return {}
            bound.pop(n.value, None)
    return bound


def unused_lengths_parameters(function) -> List[str]:
    """Parameters named as per-sequence lengths (`lengths`, `x_lens`; masks.names_sequence_lengths)
    that the function never reads: it was told where each sequence's padding starts and did not
    use it. (Whether its attention then goes unmasked is the caller's question.)"""
    return [n for n in function.params if masks.names_sequence_lengths(n) and n not in function.used_names]


def lengths_kept_from_attention(function) -> List[str]:
    """Parameters named as per-sequence lengths that the function reads, but never toward its
    attention: no argument of an attention call here is made from them (through the names the
    body binds from them), and nothing here builds or applies a mask at all. A conv front end's
    `out_lens = self.frontend.output_lengths(feat_lens)`, returned beside an encoder that got no
    `src_key_padding_mask`: the code knows where each sequence ends and the attention does not."""
    node = function.node
    if not isinstance(node, cst.FunctionDef):
        return []
    read = [n for n in function.params if masks.names_sequence_lengths(n) and n in function.used_names]
    if not read or function.fill_sites or function.mask_uses or function.mask_handoffs:
        return []
    statements = [n for n in _walk(node.body) if isinstance(n, (cst.Assign, cst.AugAssign, cst.AnnAssign))]
    kept = []
    for name in read:
        derived = {name}
        for _ in range(3):  # names bound from names bound from the lengths
            for stmt in statements:
                value = getattr(stmt, "value", None)
                if value is None or not (names_in(value) & derived):
                    continue
                targets = [t.target for t in stmt.targets] if isinstance(stmt, cst.Assign) else [stmt.target]
                for target in targets:
                    derived |= {n.value for n in _target_names(target)}
        if not any(names_in(arg.value) & derived for call in function.attention_calls for arg in call.call.args):
            kept.append(name)
    return kept


def _target_names(target: cst.BaseExpression):
    if isinstance(target, cst.Name):
        yield target
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _target_names(element.value)


def _walk(node: cst.CSTNode):
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(child_nodes(current))


def _module_handler(kind: str):
    def handle(ev, call: Call):
        values = ev.args(call.node)
        return attention_module_call(ev, call.node, kind, values, call.receiver)

    return handle


for _kind in masks.MASK_ARGUMENTS:
    if _kind != "sdpa":
        handlers.module(_kind)(_module_handler(_kind))


def prescaled_sdpa_operand(site: AttentionCallSite) -> Optional[Value]:
    """The query or key handed to `F.scaled_dot_product_attention` at its default scale (no
    `scale=`, which means 1/sqrt(E) of the query's last axis) that the code already scaled by
    1/sqrt of its own feature size: the scores then get 1/E. None when no operand shows it."""
    from fractions import Fraction

    from attnlint.analysis.scores import same_factor

    if site.api != "sdpa" or any(a.star for a in site.call.args):
        return None
    positional = [a for a in site.call.args if a.keyword is None]
    if len(positional) > 6 or any(a.keyword is not None and a.keyword.value == "scale" for a in site.call.args):
        return None
    for operand in site.inputs[:2]:
        size = operand.size_of(-1)
        if operand.scaled is True and operand.scale is not None and size is not None and not size.is_const:
            if same_factor(operand.scale, size.power(Fraction(-1, 2))):
                return operand
    return None


def only_queries_padded(forward, call: AttentionCallSite) -> bool:
    """Every padded argument goes to a parameter the submodule names as its queries (`Q`,
    `query`), and it also takes keys or values: what it attends to is not padded (the Set
    Transformer's `mab1(X, H)`, X attending to inducing points)."""
    from attnlint.analysis.names import role_from_name
    from attnlint.analysis.summaries import bind_arguments
    from attnlint.analysis.values import KEY, QUERY, VALUE

    if not isinstance(forward.node, cst.FunctionDef):
        return False
    bound = bind_arguments(forward.node, call.call, list(call.inputs), method=True) or {}
    roles = {name: role_from_name(name) for name in bound}
    if not any(role in (KEY, VALUE) for role in roles.values()):
        return False
    padded = [name for name, value in bound.items() if getattr(value, "padded", False)]
    return bool(padded) and all(roles[name] == QUERY for name in padded)


def padding_masks_kept_from_attention(function, callee_of) -> List[tuple]:
    """(attention call, the padding masks it could have had) for a function that holds a padding
    mask, uses it, but only away from its attention: to pool the attention's output (`(h *
    keep).sum(1)`), to zero padded inputs, in a convolution module beside it (`self.conv(x,
    pad_mask)`), while the attention over that same sequence, which takes a mask, gets none.

    Shown by the code, or nothing:
    - the masks: parameters named as padding masks, locals named so or made by testing ids
      against the pad id, and what is made of them (`(~m).unsqueeze(-1).float()`);
    - no use of them may reach an attention: not an argument of an attention call, not filled
      into scores here, not handed to a callee that computes or masks attention, nor to one
      the analysis cannot see (`callee_of(call)`: its FunctionFacts, None when not of this file);
    - the mask meets the attended sequence: it is combined (one call's arguments, an arithmetic
      operation, a method's receiver) with the attention's key input or with what is computed
      from it or from the attention's result in this function;
    - the attention is not causal (right padding under a causal mask hides nothing real)."""
    node = function.node
    if not isinstance(node, cst.FunctionDef) or function.mask_uses:
        return []
    if any(site.on_scores for site in function.fill_sites):
        return []  # scores masked here
    if any(s.input.fills for s in function.softmax_sites):
        return []
    calls = [
        c
        for c in function.attention_calls
        if not c.mask_keywords and not c.is_causal and not any(a.star for a in c.call.args)
    ]
    if not calls:
        return []
    body = list(_walk(node.body))
    assigns = [n for n in body if isinstance(n, cst.Assign) and len(n.targets) == 1]
    primary = {n for n in function.params if n in function.used_names and masks.names_padding(n)}
    for stmt in assigns:
        target = stmt.targets[0].target
        if isinstance(target, cst.Name) and (
            masks.names_padding(target.value)
            or ("mask" in words(target.value) and len(words(target.value)) > 1 and tests_for_padding(stmt.value))
        ):
            primary.add(target.value)
    if not primary:
        return []
    held = set(primary)
    # What is made of a mask is a mask: `keep = (~key_padding_mask).unsqueeze(-1).float()`, or
    # a helper's result known for a mask or named as one (`causal_mask = prepare_4d(attention_mask,
    # shape, hidden.dtype)`: that call builds a mask, it does not meet `hidden`).
    deriving = set()
    for stmt in assigns:
        target = stmt.targets[0].target
        if not isinstance(target, cst.Name):
            continue
        made = function.final_env.get(target.value)
        named = {w.lower() for w in words(target.value)} & {"mask", "bias"}
        if _mask_expression(stmt.value, held) or (
            names_in(stmt.value) & held and (named or made is not None and made.mask is not None)
        ):
            held.add(target.value)
            deriving.add(id(stmt.value))
    # Submodule calls are judged by what their forward does (a convolution module is one too).
    attention_nodes = {id(c.call) for c in function.attention_calls if c.api != "submodule"}
    sites = {id(c.call): c for c in function.calls}
    met: set = set()  # names combined with a mask
    for n in body:
        if isinstance(n, cst.Call):
            if id(n) in deriving:
                continue
            with_mask = [a for a in n.args if _mask_expression(a.value, held)]
            receiver = n.func.value if isinstance(n.func, cst.Attribute) else None
            receiver_is_mask = receiver is not None and _mask_expression(receiver, held)
            if not with_mask and not receiver_is_mask:
                continue
            if id(n) in attention_nodes:
                return []  # the mask is given to an attention
            if id(n) in sites:
                callee = callee_of(sites[id(n)])
                if callee is None or callee.computes_attention() or callee.attention_calls or callee.mask_uses:
                    return []  # it may reach an attention there
            elif not _tensor_operation(n):
                return []  # a call the analysis cannot follow
            if not receiver_is_mask:
                for a in n.args:
                    if a not in with_mask:
                        met |= names_in(a.value)
                if receiver is not None:
                    met |= names_in(receiver)
        elif isinstance(n, cst.BinaryOperation):
            for side, other in ((n.left, n.right), (n.right, n.left)):
                if _mask_expression(side, held) and not _mask_expression(other, held):
                    met |= names_in(other)
    met -= held | {"self", "torch", "F", "nn"}
    if not met:
        return []
    found = []
    for call in calls:
        args = [a.value for a in call.call.args if a.keyword is None]
        if not args:
            continue
        distinct = {tuple(sorted(names_in(a))) for a in args}
        # What is attended: the keys. One sequence attending to itself (`self.mhsa(x)`,
        # `self.encoder(x)`, `attn(x, x, x)`), or what follows the queries.
        attended = args if len(distinct) == 1 else args[1:]
        lineage = set().union(*(names_in(a) for a in attended)) - {"self"}
        for stmt in assigns:  # forward, in order: what is computed from it or from the result
            if names_in(stmt.value) & lineage or _contains(stmt.value, call.call):
                lineage |= {t.value for t in _target_names(stmt.targets[0].target)}
        if lineage & met:
            found.append((call, sorted(primary)))
    return found


def _mask_expression(node: cst.BaseExpression, held: set) -> bool:
    """A mask of `held`, maybe inverted, compared, reshaped or cast: `~m`, `m == 0`,
    `m.unsqueeze(-1).float()`, `m[:, None]`, `1 - m`."""
    if isinstance(node, cst.Name):
        return node.value in held
    if isinstance(node, cst.UnaryOperation):
        return _mask_expression(node.expression, held)
    if isinstance(node, cst.Comparison):
        return _mask_expression(node.left, held) and all(
            isinstance(c.comparator, (cst.Integer, cst.Float, cst.Name)) and not _mask_expression(c.comparator, set())
            for c in node.comparisons
        )
    if isinstance(node, cst.Subscript):
        return _mask_expression(node.value, held)
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        return node.func.attr.value in _MASK_RESHAPES and _mask_expression(node.func.value, held)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.left, (cst.Integer, cst.Float)):
        return isinstance(node.operator, cst.Subtract) and _mask_expression(node.right, held)
    return False


_MASK_RESHAPES = frozenset(
    ("unsqueeze", "float", "half", "to", "bool", "long", "int", "type", "type_as", "eq", "ne", "logical_not",
     "view", "reshape", "expand", "expand_as", "transpose", "detach", "clone", "contiguous")
)


def _tensor_operation(call: cst.Call) -> bool:
    """A tensor method (`x.masked_fill(...)`, `(h * m).sum(1)`) or a torch function: an
    operation on the mask, not a callee that may hand it to an attention."""
    func = call.func
    if isinstance(func, cst.Attribute):
        root = func.value
        while isinstance(root, cst.Attribute):
            root = root.value
        return not (isinstance(root, cst.Name) and root.value == "self")
    return isinstance(func, cst.Name) and func.value in ("len", "float", "int", "sum", "max", "min")


def _contains(node: cst.CSTNode, wanted: cst.CSTNode) -> bool:
    return any(n is wanted for n in _walk(node))
