"""Score products and scales: Q·Kᵀ in every spelling (`@`, matmul, bmm, einsum, baddbmm), the
layout and key axis it shows, the per-head dimension it contracts, and every factor multiplied
into q, k or the scores on the way to the softmax, as a symbolic value.

`scale_verdict` answers "is this scale 1/sqrt(head_dim)?" symbolically: correct, missing, the
root multiplied instead of divided, no root, the wrong quantity (the model width, a sequence
length), or unknown (a learned temperature, a parameter, anything the analysis cannot reduce).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import List, Optional, Tuple

import libcst as cst

from attnlint.analysis import handlers, masks, shapes
from attnlint.analysis.handlers import Call
from attnlint.analysis.symbolic import ONE, Sym
from attnlint.analysis.values import (
    ATTEND,
    FEATURE,
    HEADS,
    KEY,
    KEY_MAJOR,
    KEYS,
    QKV,
    QUERIES,
    QUERY,
    QUERY_MAJOR,
    SCORES,
    UNKNOWN,
    Axis,
    MaskFacts,
    ScaleStep,
    ScoreFacts,
    Value,
    any_true,
)


def _flow():
    from attnlint.analysis import flow

    return flow


# ------------------------------------------------------------------------------------------
# Arithmetic
# ------------------------------------------------------------------------------------------
def binary(ev, node: cst.BinaryOperation, left: Value, right: Value) -> Value:
    flow = _flow()
    op = node.operator
    if isinstance(op, cst.MatrixMultiply):
        return matmul(ev, left, right, node, node.left, node.right)
    sym = _sym_binary(op, left, right)
    if sym is not None and not (numberish(left) and numberish(right)):
        sym = None
    lengths = _lengths_arithmetic(op, left, right, node)
    if lengths is not None:
        return lengths
    if isinstance(op, cst.Multiply) and (left.kind == "tuple" or right.kind == "tuple"):
        from attnlint.analysis import losses

        return losses.repeated_list(ev, left if left.kind == "tuple" else right, node)
    weighted_by = None
    if isinstance(op, (cst.Multiply, cst.Divide)):
        if left.kind == "scalar" and right.kind == "scalar":
            return Value(kind="scalar", node=node, sym=sym)
        if isinstance(op, cst.Multiply) and left.mask is None and right.mask is None and masks.named_mask_along_both(node):
            # `msa_mask[..., :, None] * msa_mask[..., None, :]`: a mask (by its name) laid along
            # the queries and the keys, a product of 0/1 values: the row of every query the mask
            # drops is dropped whole.
            from attnlint.analysis.shapes import broadcast

            ranks = [r for r in (left.rank, right.rank) if r is not None]
            return Value(
                kind="tensor",
                rank=max(ranks) if len(ranks) == 2 else None,
                shape=broadcast(left.shape, right.shape),
                node=node,
                mask=MaskFacts(
                    origin="combined", convention=ATTEND, can_mask_whole_row=True, masks_padded_queries=True
                ),
            )
        if (
            isinstance(op, cst.Multiply)
            and left.mask is not None
            and right.mask is not None
            and not (left.mask.scaled or right.mask.scaled)
        ):
            # `valid[:, None, :] * causal`: a product of two 0/1 masks is a mask (an AND).
            from attnlint.analysis.shapes import broadcast

            ranks = [r for r in (left.rank, right.rank) if r is not None]
            product = masks.product(left.mask, right.mask)
            if product is not None and masks.masks_padded_queries(node, left.mask, right.mask, op):
                # `valid[:, None, :] * valid[:, :, None]`: the row of every padded query is empty.
                product = replace(product, can_mask_whole_row=True, masks_padded_queries=True)
            return Value(
                kind="tensor",
                rank=max(ranks) if len(ranks) == 2 else None,
                shape=broadcast(left.shape, right.shape),
                node=node,
                mask=product,
            )
        if isinstance(op, cst.Multiply):
            masked = masks.multiplied_by_mask(ev, node, left, right)
            if masked is not None:
                return masked
        if sym is not None:
            # `dim // heads`, `head_dim ** -0.5` of parameters: numbers, as far as anyone can tell.
            return Value(kind="unknown", node=node, sym=sym)
        tensor = left if flow.tensorish(left) or not flow.tensorish(right) else right
        if isinstance(op, cst.Divide) and tensor is right:
            return Value(kind="tensor", rank=right.rank, node=node)  # `1 / x`: not a scaled x
        other = right if tensor is left else left
        if isinstance(op, cst.Multiply) and _rotation_factor(node.right if tensor is left else node.left):
            # `t * cos + rotate_half(t) * sin`: rotary position embeddings rotate the features;
            # a cosine or sine factor is no temperature (it leaves the scale as it was).
            return tensor.with_(node=node, sym=None)
        written = _factor_of(other, isinstance(op, cst.Divide))
        factor = _resolved_factor(ev, written)
        if tensor.softmax is not None and other.softmax is None:
            if numberish(other):
                # `softmax(s) / sqrt(d)`: a factor after the softmax (it leaves the softmax unscaled).
                tensor.softmax.scaled_after.append((node, factor))
            elif isinstance(op, cst.Divide) and tensor.softmax is not None:
                tensor.softmax.renormalized = True  # `w / w.sum(...)`: normalised again
        if isinstance(op, cst.Multiply):
            for weights, values in ((left, right), (right, left)):
                if (
                    weights.weights_of is not None
                    # Softmax of a learned parameter: mixing coefficients (a scalar mix of
                    # layers), the same for every input, not attention over its positions.
                    and not weights.weights_of.input.is_parameter
                    and values.weights_of is None
                    and values.kind == "tensor"
                    and not values.is_parameter
                    and values.mask is None
                ):
                    if numberish(values):
                        # `h * w` of a parameter that may be a number: only a sum of the
                        # product (`(h * w).sum(1)`) says it weighs values.
                        weighted_by = weights.weights_of
                    else:
                        # `x * w` of activations and softmax weights (attentive pooling,
                        # `torch.sum(x * w, dim=2)`): the weights weigh the values, summed
                        # over the axis the sum says (see _weighted_sum).
                        weights.weights_of.uses.weigh_values = True
                        weighted_by = weights.weights_of
        if left.softmax is not None and right.softmax is not None:
            # `s.softmax(1) * s.softmax(2)`: a two-way (dual-softmax) normalisation.
            left.softmax.renormalized = right.softmax.renormalized = True
        # The product is not the operand: whatever size the operand stood for, it no longer does.
        factor_node = node.right if tensor is left else node.left
        divides = isinstance(op, cst.Divide)
        result = scaled(tensor, factor, node, written, factor_node, divides).with_(
            node=node, sym=None, weighted_by=weighted_by
        )
        if tensor.shape is not None and other.kind == "tensor" and other.shape is not None:
            # `hidden * encoder_outputs` of (1, B, H) and (S, B, H): the operand's size-1 axes
            # take the other's (shapes.broadcast_onto).
            shape = shapes.broadcast_onto(tensor.shape, other.shape)
            result = result.with_(shape=shape, rank=len(shape))
        if tensor.mask is not None:
            result = result.with_(mask=replace(tensor.mask, scaled=True))  # `mask * -1e9`: a bias now
        return result
    if isinstance(op, (cst.Add, cst.Subtract)):
        result = masks.add_terms(ev, left, right, node, node.left, node.right)
        if left.kind == "scalar" and right.kind == "scalar":
            return result.with_(sym=_sym_sum(op, left, right))
        if (
            result.scale is None
            and result.scores is None
            and result.mask is None
            and left.kind == right.kind == "tensor"
            and left.scale is not None
            and left.scale == right.scale
            and left.scores is None
            and right.scores is None
        ):
            # `t * cos + rotate_half(t) * sin`, `x + pos`: terms scaled alike are a sum scaled so.
            return result.with_(scale=left.scale, scaled=left.scaled)
        return result
    if isinstance(op, (cst.FloorDivide, cst.Modulo, cst.Power, cst.LeftShift, cst.RightShift)):
        if left.kind == "scalar" and right.kind == "scalar":
            return Value(kind="scalar", node=node, sym=sym, int_value=sym.int_value if sym is not None else None)
        if sym is not None:
            return Value(kind="unknown", node=node, sym=sym)
        return Value(kind="unknown", node=node)
    if isinstance(op, (cst.BitAnd, cst.BitOr, cst.BitXor)):
        rank = left.rank if left.rank is not None else right.rank
        mask = masks.combine(left.mask, right.mask, op) if not isinstance(op, cst.BitXor) else None
        if mask is not None and masks.masks_padded_queries(node, left.mask, right.mask, op):
            # `pad.unsqueeze(1) & pad.unsqueeze(2)`: the row of every padded query is empty.
            mask = replace(mask, can_mask_whole_row=True, masks_padded_queries=True)
        return Value(kind="tensor", rank=rank, node=node, mask=mask)
    return UNKNOWN


def _rotation_factor(node: cst.BaseExpression) -> bool:
    """A cosine or sine of positions: `pos.cos()`, `torch.sin(freqs)`, a rotary cache named so
    (`cos`, `sin_cached[:n]`, `freqs_cos`, `self.sin[None]`)."""
    from attnlint.analysis.names import words

    while isinstance(node, cst.Subscript) or (
        isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in _LAYOUT_METHODS
    ):
        node = node.value if isinstance(node, cst.Subscript) else node.func.value
    if isinstance(node, cst.Call):
        func = node.func
        name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", None)
        return name in ("cos", "sin")
    if isinstance(node, cst.Attribute):
        node = node.attr
    return isinstance(node, cst.Name) and bool({"cos", "sin"} & set(words(node.value)))


_LAYOUT_METHODS = frozenset({"unsqueeze", "to", "type_as", "view", "reshape", "expand", "expand_as", "float", "half"})


def _lengths_arithmetic(op, left: Value, right: Value, node) -> Optional[Value]:
    """Per-sequence lengths with a number added, taken, multiplied or divided in (a conv front
    end's `((lengths - 1) // 2 - 1) // 2`, `lengths * 2`): still one length per sequence, which
    a padding mask is made from. Positive only while nothing is taken away or divided."""
    if right.lengths and right.kind == "tensor" and isinstance(op, (cst.Add, cst.Multiply)):
        left, right = right, left  # `2 * lengths`, `1 + lengths`
    if not (left.lengths and left.kind == "tensor") or right.lengths or right.kind == "tensor":
        return None
    if right.sym is None or not right.sym.is_const or right.sym.coeff <= 0:
        return None  # only a positive number: `lengths - offsets` says nothing
    if not isinstance(op, (cst.Add, cst.Subtract, cst.Multiply, cst.FloorDivide, cst.Divide)):
        return None
    keeps_positive = isinstance(op, cst.Add) or (isinstance(op, cst.Multiply) and right.sym.coeff >= 1)
    return Value(
        kind="tensor",
        rank=left.rank,
        shape=left.shape,
        node=node,
        lengths=True,
        positive_lengths=left.positive_lengths and keeps_positive,
    )


def _sym_binary(op, left: Value, right: Value) -> Optional[Sym]:
    a, b = left.sym, right.sym
    if a is None or b is None:
        return None
    if isinstance(op, cst.Multiply):
        return a * b
    if isinstance(op, cst.Divide):
        return a / b
    if isinstance(op, cst.FloorDivide):
        return a.floordiv(b)
    if isinstance(op, cst.Power) and b.is_const:
        return a.power(b.coeff)
    return None


def _sym_sum(op, left: Value, right: Value) -> Optional[Sym]:
    a, b = left.sym, right.sym
    if a is None or b is None or not (a.is_const and b.is_const):
        return None
    return Sym.const(a.coeff + b.coeff if isinstance(op, cst.Add) else a.coeff - b.coeff)


def numberish(value: Value) -> bool:
    """A value that may be a plain number: it has a symbolic value and nothing says tensor."""
    return (
        value.sym is not None
        and value.rank in (None, 0)
        and not value.shape
        and value.role is None
        and value.scores is None
        and value.softmax is None
        and value.mask is None
        and value.kind != "module"
    )


def _factor_of(value: Value, divide: bool) -> Optional[Sym]:
    if not numberish(value):
        return None
    return value.sym.power(Fraction(-1)) if divide else value.sym


def _resolved_factor(ev, written: Optional[Sym]) -> Optional[Sym]:
    """A factor in the sizes the code showed equal to its names, or as written when those have
    no exact root (`C ** -0.5` with C = 48): the same quantity, named less far down."""
    resolved = ev.resolve(written)
    return written if resolved is None else resolved


def scaled(
    value: Value,
    factor: Optional[Sym],
    node=None,
    written: Optional[Sym] = None,
    factor_node: Optional[cst.BaseExpression] = None,
    divides: bool = False,
) -> Value:
    """`value` multiplied by `factor` (None: by something unknown). `written`: the factor before
    sizes shown equal to others were substituted (default: `factor` itself). `factor_node`: the
    expression that is the factor, and `divides` whether the code divides by it."""
    new_scale = value.scale * factor if value.scale is not None and factor is not None else None
    if value.scores is not None:
        step = ScaleStep(node, factor_node, divides)
        nodes = value.scores.scale_steps + ((step,) if node is not None else ())
        as_written = _times(value.scores.scale_as_written, written if written is not None else factor)
        scores = replace(
            value.scores,
            scaled=True,
            scale=_times(value.scores.scale, factor),
            scale_steps=nodes,
            scale_as_written=as_written,
        )
        return value.with_(scores=scores, scaled=True, scale=scores.scale)
    steps = value.scale_steps + ((ScaleStep(node, factor_node, divides),) if node is not None else ())
    return value.with_(scaled=True, scale=new_scale, scale_steps=steps)


def _times(a: Optional[Sym], b: Optional[Sym]) -> Optional[Sym]:
    return a * b if a is not None and b is not None else None


@handlers.function("torch.mul", "torch.div", "torch.true_divide", "torch.multiply", "torch.divide")
def _mul_function(ev, call: Call):
    if len(call.args) < 2:
        return None
    flow = _flow()
    a, b = ev.eval(call.args[0].value), ev.eval(call.args[1].value)
    tensor, other = (a, b) if flow.tensorish(a) else (b, a)
    divides = call.name.endswith(("div", "divide")) and tensor is a
    written = _factor_of(other, divides)
    factor_node = call.args[1 if tensor is a else 0].value
    result = scaled(tensor, _resolved_factor(ev, written), call.node, written, factor_node, divides)
    return result.with_(node=call.node)


@handlers.method("mul", "div", "mul_", "div_", "true_divide", "multiply", "divide")
def _mul_method(ev, call: Call):
    values = ev.args(call.node)
    divides = call.name.startswith(("div", "true_div"))
    written = _factor_of(values[0], divides) if values else None
    factor = _resolved_factor(ev, written)
    receiver = call.receiver
    if receiver.softmax is not None and receiver.scores is None:
        receiver.softmax.scaled_after.append((call.node, factor))
    factor_node = call.node.args[0].value if call.node.args else None
    result = scaled(receiver, factor, call.node, written, factor_node, divides).with_(node=call.node)
    if call.name.endswith("_"):
        ev.update_in_place(call.receiver_node, result)
    return result


# Math on sizes: `math.sqrt(d)`, `d ** 0.5`, `torch.rsqrt(torch.tensor(d))`, `np.sqrt(d)`.
_ROOTS = {"sqrt": Fraction(1, 2), "rsqrt": Fraction(-1, 2)}


@handlers.function(
    "math.sqrt", "numpy.sqrt", "torch.sqrt", "torch.rsqrt", "math.pow", "numpy.power", "torch.pow", "numpy.float32"
)
def _root(ev, call: Call):
    values = ev.args(call.node)
    if not values:
        return None
    short = call.name.rsplit(".", 1)[-1]
    base = values[0]
    kind = "scalar" if base.kind in ("scalar", "unknown") or base.rank in (None, 0) else "tensor"
    if base.rank not in (None, 0) or (base.kind == "tensor" and base.sym is None):
        return Value(kind="tensor", rank=base.rank, node=call.node) if kind == "tensor" else None
    sym = None
    if short in _ROOTS and base.sym is not None:
        sym = base.sym.power(_ROOTS[short])
    elif short in ("pow", "power") and len(values) >= 2 and base.sym is not None and values[1].sym is not None:
        if values[1].sym.is_const:
            sym = base.sym.power(values[1].sym.coeff)
    elif short == "float32":
        sym = base.sym
    return Value(kind="scalar", node=call.node, sym=sym)


# ------------------------------------------------------------------------------------------
# Products
# ------------------------------------------------------------------------------------------
def _matmul_rank(left: Optional[int], right: Optional[int]) -> Optional[int]:
    """The rank of `left @ right`: batch axes broadcast; a 1-D operand is a vector, whose axis the
    product contracts away (`query_2 @ keys.T`, one query's scores: 1-D)."""
    if left is None or right is None:
        return None
    if left == 1 or right == 1:
        return max(left, right) - 1
    return max(left, right)


def matmul(
    ev,
    left: Value,
    right: Value,
    node: cst.CSTNode,
    left_node: Optional[cst.BaseExpression],
    right_node: Optional[cst.BaseExpression],
    batched_3d: bool = False,
) -> Value:
    for operand_node in (left_node, right_node):
        site = ev.dot_t_by_node.get(id(operand_node))
        if site is not None:
            site.in_matmul = True
    # Weights contracted with values tell the key axis: `w @ v` sums over w's last axis. (A
    # product with a learned matrix mixes heads or experts: not values.)
    if left.softmax is not None and not right.is_parameter:
        left.softmax.contracted_axes.add(-1)
    if right.softmax is not None and not left.is_parameter:
        right.softmax.contracted_axes.add(-2)
    for operand in (left, right):
        if operand.softmax is not None:
            operand.softmax.guard_uses.append(operand.guarded)
    for operand, other in ((left, right), (right, left)):
        if operand.weights_of is not None and not other.is_parameter:
            operand.weights_of.uses.weigh_values = True
    if batched_3d:  # bmm/baddbmm take 3-D operands only
        left = left.with_(rank=3) if left.rank is None else left
        right = right.with_(rank=3) if right.rank is None else right
        for operand_node in (left_node, right_node):
            site = ev.dot_t_by_node.get(id(operand_node))
            if site is not None and site.receiver.rank is None:
                site.receiver = site.receiver.with_(rank=3)
    right = _resolve_pending_swap(right, left)
    rank = _matmul_rank(left.rank, right.rank)
    shape = _matmul_shape(left, right)
    if right.feature_transposed and right.base is not None:
        key = right.base
        scores = score_facts(ev, left, key, node, left_node, key_node=_transpose_receiver(right_node))
        if scores is not None:
            # Q and K share their batch axes; one known rank gives the other.
            known = [r for r in (left.rank, right.rank) if r is not None]
            rank = _matmul_rank(left.rank, right.rank) if len(known) == 2 else (known[0] if known else None)
            if shape is not None and len(shape) == rank:
                roles = (QUERIES, KEYS) if scores.layout == QUERY_MAJOR else (KEYS, QUERIES)
                shape = shape[:-2] + (replace(shape[-2], role=roles[0]), replace(shape[-1], role=roles[1]))
            else:
                shape = None
            return Value(
                kind="tensor",
                rank=rank,
                shape=shape,
                role=SCORES,
                scores=scores,
                feature_last=False,
                scaled=scores.scaled,
                scale=scores.scale,
                node=node,
            )
    if (
        right.is_parameter
        and right.role in (QUERY, KEY, "value", QKV)
        and not right.custom_init
        and not _initialised_with_a_number(ev, right_node)
    ):
        # `x @ self.W_q`: a projection of tokens (whose weight no number was folded into).
        return Value(
            kind="tensor", rank=left.rank, role=right.role, feature_last=True, scaled=False, scale=ONE, node=node
        )
    if _random_weight_with_a_literal_std(right) and not _random_weight_with_a_literal_std(left):
        # `x @ Wq` with `Wq = torch.randn(d, d) * 0.1`: the number is the weight's initial
        # spread, as it is in `nn.Parameter(torch.randn(d, d) * 0.02)` (and a literal is not a
        # scale folded in, see modules.sized_parameter_inits): the queries are the tokens' scale.
        return Value(
            kind="tensor",
            rank=left.rank,
            role=right.role,
            feature_last=True,
            scaled=left.scaled,
            scale=left.scale, scale_steps=left.scale_steps,
            node=node,
        )
    # A product carries the factors of both operands (`x @ W_q` with a plain weight tensor is
    # as unscaled as `x` and `W_q` are; `W_q / sqrt(d)` scales every query). A learned weight
    # may have the scale folded into its initialisation (`nn.init.normal_(w, std=d ** -0.5)`):
    # unknown.
    known = left.scale is not None and right.scale is not None and not (left.is_parameter or right.is_parameter)
    pairwise = bool(
        right.feature_transposed
        and right.base is not None
        and not (left.is_parameter or right.is_parameter or right.base.is_parameter)
        and left.softmax is None
        and right.softmax is None
        and left.mask is None
        and right.mask is None
    )
    # Two different sets of vectors, pair by pair (`F.normalize(x) @ F.normalize(evidence).mT`,
    # `a @ b.transpose(1, 2)`): one similarity per (row of a, row of b), as cosine_similarity and
    # cdist give. Of a tensor with itself the diagonal is each row's own match: no fact.
    roots = (_similarity_root(left_node), _similarity_root(_transpose_receiver(right_node)))
    similarity = pairwise and None not in roots and roots[0] != roots[1]
    # `x @ self.w_g` with a (d, 1) weight: one output feature per row, as `nn.Linear(d, 1)` gives
    # (SwiftFormer's additive attention scores each token so).
    width = None
    if right.is_parameter and right.shape is not None and len(right.shape) == 2 and right.shape[-1].size is not None:
        width = right.shape[-1].size
    shape = shape if shape is not None and len(shape) == rank else None
    if shape is not None and width is not None:
        shape = shape[:-1] + (replace(shape[-1], role=FEATURE),)
    return Value(
        kind="tensor",
        rank=rank,
        shape=shape,
        last_size=width if shape is None else None,
        feature_last=True if width is not None else None,
        node=node,
        pairwise=pairwise,
        similarity=similarity,
        scaled=any_true(left.scaled, right.scaled) if known else None,
        scale=_times(left.scale, right.scale) if known else None,
    )


_RANDOM_CONSTRUCTORS = frozenset({"torch.randn", "torch.rand", "torch.normal", "torch.randn_like", "torch.rand_like"})


def _random_weight_with_a_literal_std(value: Value) -> bool:
    """A 2-D random tensor named for a projection's role (`W_q = torch.randn(d, d) * 0.1`),
    multiplied by numbers only: a weight and its initial spread."""
    return bool(
        value.rank == 2
        and value.constructor is not None
        and value.constructor.function in _RANDOM_CONSTRUCTORS
        and value.role in (QUERY, KEY, "value", QKV)
        and value.scale is not None
        and value.scale.is_const
        and not value.is_parameter
        and value.scores is None
        and value.softmax is None
    )


def _matmul_shape(left: Value, right: Value):
    if left.shape is None or right.shape is None or len(left.shape) < 2 or len(right.shape) < 2:
        return None
    batch = left.shape[:-2] if len(left.shape) >= len(right.shape) else right.shape[:-2]
    return tuple(batch) + (replace(left.shape[-2], role=None), replace(right.shape[-1], role=None))


def _resolve_pending_swap(right: Value, left: Value) -> Value:
    """Decide whether `k.transpose(a, a + 1)` (rank unknown) swapped k's last two axes."""
    last = right.pending_swap
    if last is None or right.base is None:
        return right
    rank = right.base.rank if right.base.rank is not None else left.rank
    if rank is None:
        rank = last + 1  # the reading attention code means: `transpose(2, 3)` on 4-D
    if rank != last + 1:
        return right.with_(rank=rank)
    base = right.base.with_(rank=rank)
    return shapes.transposed_last_two(base, right.node).with_(rank=rank)


def score_facts(
    ev,
    query: Value,
    key: Value,
    product: cst.CSTNode,
    query_node: Optional[cst.BaseExpression],
    key_node: Optional[cst.BaseExpression],
    key_axis_by_layout: Tuple[int, int] = (-1, -2),
    feature_axis: int = -1,
    key_feature_axis: int = -1,
) -> Optional[ScoreFacts]:
    """Facts about `query · keyᵀ`, or None when this is not an attention product."""
    flow = _flow()
    rq, rk = query.role, key.role
    if key.is_parameter or (query.is_parameter and not _learned_queries(query, key)):
        return None  # `x @ W.T` is a linear layer, not attention
    if rq == KEY and rk == QUERY:
        layout = KEY_MAJOR
    elif rq == QUERY or rk == KEY:
        if rq not in (QUERY, None) or rk not in (KEY, None):
            return None
        layout = QUERY_MAJOR
    else:
        return None  # roles do not show attention: a similarity or a classifier
    key_axis = key_axis_by_layout[0] if layout == QUERY_MAJOR else key_axis_by_layout[1]
    feature_dim = None
    if flow.is_simple(query_node) and query.feature_last is not False:
        feature_dim = (query_node, feature_axis)
    elif flow.is_simple(key_node) and key.feature_last is not False:
        feature_dim = (key_node, key_feature_axis)
    params = tuple(p for p in (query.param, key.param) if p)
    head_dim = query.size_of(feature_axis) if query.feature_last is not False else None
    if head_dim is None and key.feature_last is not False:
        head_dim = key.size_of(key_feature_axis)
    if head_dim is None and query.feature_last is not False and query_node is not None:
        # Unknown rank: the size `q.size(-1)` reads (`d_k = q.size(-1)` names it).
        head_dim = ev.read_size(query, feature_axis, query_node if is_simple_node(query_node) else None)
    head_dim = ev.resolve(head_dim)
    aliases = []
    for value, axis, node in ((query, feature_axis, query_node), (key, key_feature_axis, key_node)):
        if value.feature_last is False:
            continue
        size = value.size_of(axis)
        if size is None and node is not None and is_simple_node(node):
            size = ev.read_size(value, axis, node)
        size = ev.resolve(size)
        if size is not None and size != head_dim and size not in aliases:
            aliases.append(size)
    if ev.project is not None:
        ev.project.scope_readings += 1
    return ScoreFacts(
        product=product,
        layout=layout,
        key_axis=key_axis,
        scaled=any_true(query.scaled, key.scaled),
        feature_dim=feature_dim,
        operand_params=params,
        # Padding harms only as keys: padded query rows attend to real keys, and their outputs
        # are dropped downstream (a padded query against image features is no bug).
        padded=bool(key.padded),
        scale=_times(query.scale, key.scale),
        operand_scale_steps=query.scale_steps + key.scale_steps,
        head_dim=head_dim,
        head_dim_aliases=tuple(aliases),
        size_atoms=tuple(sorted(_size_atoms(ev, query) | _size_atoms(ev, key), key=lambda a: a.key)),
        head_dim_names=ev.names_for(head_dim),
        # Factors applied to q or k before the product are known only as resolved.
        scale_as_written=ONE if query.scale == ONE and key.scale == ONE else None,
        scope_size_atoms=tuple(sorted(_scope_size_atoms(ev), key=lambda a: a.key)),
        size_examples=_numbers_of_sizes(ev),
        layer_input_atoms=tuple(sorted(_layer_input_atoms(ev), key=lambda a: a.key)),
        head_count=_head_count(ev, query, key),
    )


def _learned_queries(query: Value, key: Value) -> bool:
    """A learned tensor of queries against projected keys (attention pooling, Perceiver-style
    latents: `einsum("qd,bnd->bqn", self.queries, k)`): attention, not a linear layer. A linear
    layer applies a weight to the tokens' features; a weight named for the queries applied to
    activations that are keys is not one. Only when the key is an activation whose role is the
    keys (not raw tokens, not another weight)."""
    return query.role == QUERY and key.role == KEY and not key.is_parameter


def summed_scores(a: ScoreFacts, b: ScoreFacts) -> Optional[ScoreFacts]:
    """`content_score + pos_score` (Transformer-XL, Conformer): two products over the same
    queries and keys are one set of scores; a fact holds of the sum when it holds of both (a
    scale common to both, the same head dimension). None when their layouts disagree."""
    if a.layout != b.layout or a.key_axis != b.key_axis:
        return None
    same_scale = a.scale is not None and a.scale == b.scale
    return replace(
        a,
        scaled=any_true(a.scaled, b.scaled),
        scale=a.scale if same_scale else None,
        scale_as_written=a.scale_as_written if same_scale and a.scale_as_written == b.scale_as_written else None,
        head_dim=a.head_dim if a.head_dim == b.head_dim else None,
        head_dim_aliases=a.head_dim_aliases if a.head_dim == b.head_dim else (),
        head_dim_names=a.head_dim_names if a.head_dim == b.head_dim else (),
        padded=a.padded or b.padded,
        adds_bias=True,
    )


def is_simple_node(node) -> bool:
    return _flow().is_simple(node)


def _similarity_root(node: Optional[cst.BaseExpression]) -> Optional[str]:
    """The tensor a similarity operand reads (`x` of `F.normalize(x, dim=-1)`, of `x[:, None]`)."""
    from attnlint.analysis.masks import _root_name

    while (
        isinstance(node, cst.Call)
        and node.args
        and node.args[0].keyword is None
        and (
            (isinstance(node.func, cst.Attribute) and node.func.attr.value == "normalize")
            or (isinstance(node.func, cst.Name) and node.func.value == "normalize")
        )
    ):
        node = node.args[0].value
    return _root_name(node) if node is not None else None


def _transpose_receiver(node: Optional[cst.BaseExpression]) -> Optional[cst.BaseExpression]:
    """The key expression inside `k.transpose(-2, -1)`, `k.mT`, `k.T`, `k.permute(...)`."""
    if isinstance(node, cst.Attribute) and node.attr.value in ("T", "mT"):
        return node.value
    if (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value in ("transpose", "permute")
    ):
        return node.func.value
    return None


def through_view(ev, scores: Value, target) -> Optional[Value]:
    """Scores viewed to `target` (a shape) that keeps every axis from the key axis to the end
    (`(b, n_q, n_k).view(b * n_q, n_k)`): the axes keep their roles, and leading axes of batch,
    heads and queries merged into one are a batch of independent rows. The product's facts
    (scale, head dim) stay with the product: this is a tensor of rows over known keys, as
    additive attention makes. None when the view may move the keys (the sizes do not show it)."""
    from attnlint.analysis.values import BATCH, HEADS

    facts = scores.scores
    key = facts.key_axis if facts.key_axis is not None else (-1 if facts.layout == QUERY_MAJOR else None)
    if key != -1 or scores.shape is None or target is None or len(target) < 2 or len(scores.shape) < 2:
        return None
    if scores.shape[-1].role != KEYS:
        return None
    before, after = ev.resolve(scores.shape[-1].size), ev.resolve(target[-1].size)
    if before is None or after is None or before != after:
        return None
    leading = scores.shape[:-1]
    if len(target) == 2:
        # A matmul's axes before the query axis are its batch axes, whatever their names.
        batch_axes = not _is_einsum(facts.product)
        rows = leading[-1].role == QUERIES and all(
            axis.role in (BATCH, HEADS) or (axis.role is None and batch_axes) for axis in leading[:-1]
        )
        head = (Axis(target[0].size, BATCH if rows else None),)
    elif len(target) == len(scores.shape) and all(
        ev.resolve(a.size) is not None and ev.resolve(a.size) == ev.resolve(b.size) for a, b in zip(leading, target)
    ):
        head = tuple(replace(b, role=a.role) for a, b in zip(leading, target[:-1]))
    elif _regroups_batch_axes(ev, leading, target[:-1]):
        # fairseq's `(bsz * heads, tgt, src).view(bsz, heads, tgt, src)` to mask per batch, and
        # back: the axes before the queries are split or merged, the queries stay.
        head = tuple(replace(a, role=None) for a in target[:-2]) + (replace(target[-2], role=QUERIES),)
        # Still the product's scores, key axis last: what was applied to them (scale, fills,
        # guards) stays, and a mask or a scale applied now is applied to them.
        return scores.with_(rank=len(target), shape=head + (replace(target[-1], role=KEYS),), feature_last=False)
    else:
        return None
    return Value(
        kind="tensor",
        rank=len(target),
        shape=head + (replace(target[-1], role=KEYS),),
        role=scores.role,
        scaled=scores.scaled,
        scale=scores.scale, scale_steps=scores.scale_steps,
        feature_last=False,
        mask=scores.mask,
        **scores.data_facts(),
    )


def _regroups_batch_axes(ev, leading, target_leading) -> bool:
    """`leading` (the scores' axes before the keys, ending with the queries) and the target's
    end with the same query axis and hold the same number of elements before it: only batch
    axes are split or merged (both sides at least one of them)."""
    from attnlint.analysis.symbolic import product

    if len(leading) < 2 or len(target_leading) < 2 or leading[-1].role != QUERIES:
        return False
    sizes = [ev.resolve(a.size) for a in leading]
    targets = [ev.resolve(a.size) for a in target_leading]
    if None in sizes or None in targets or sizes[-1] != targets[-1]:
        return False
    before, after = product(sizes[:-1]), product(targets[:-1])
    return before is not None and before == after


def _is_einsum(node) -> bool:
    func = node.func if isinstance(node, cst.Call) else None
    name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", None)
    return name == "einsum"


@handlers.function("torch.matmul", "torch.bmm", "torch.mm")
def _matmul_function(ev, call: Call):
    args = call.args
    if len(args) < 2:
        return None
    left, right = ev.eval(args[0].value), ev.eval(args[1].value)
    return matmul(ev, left, right, call.node, args[0].value, args[1].value, batched_3d=call.name == "torch.bmm")


@handlers.method("matmul", "bmm", "mm")
def _matmul_method(ev, call: Call):
    if not call.args:
        return None
    other = ev.eval(call.args[0].value)
    return matmul(
        ev, call.receiver, other, call.node, call.receiver_node, call.args[0].value, batched_3d=call.name == "bmm"
    )


@handlers.function("torch.baddbmm")
def _baddbmm(ev, call: Call):
    flow = _flow()
    base = flow._arg(call.node, 0, "input")
    batch1, batch2 = flow._arg(call.node, 1, "batch1"), flow._arg(call.node, 2, "batch2")
    if base is None or batch1 is None or batch2 is None:
        return None
    ev.eval(base.value)
    return _baddbmm_product(ev, call, batch1, batch2)


@handlers.method("baddbmm")
def _baddbmm_method(ev, call: Call):
    """`alibi.baddbmm(batch1=q, batch2=k, beta=1.0, alpha=inv_norm)` (BLOOM): the bias is the
    receiver, the product is batch1 · batch2."""
    flow = _flow()
    batch1, batch2 = flow._arg(call.node, 0, "batch1"), flow._arg(call.node, 1, "batch2")
    if batch1 is None or batch2 is None:
        return None
    return _baddbmm_product(ev, call, batch1, batch2)


def _baddbmm_product(ev, call: Call, batch1: cst.Arg, batch2: cst.Arg):
    flow = _flow()
    left, right = ev.eval(batch1.value), ev.eval(batch2.value)
    product = matmul(ev, left, right, call.node, batch1.value, batch2.value, batched_3d=True)
    alpha = flow._arg(call.node, 99, "alpha")
    if alpha is not None and product.scores is not None:
        factor = ev.resolve(_factor_of(ev.eval(alpha.value), False))
        product = scaled(product, factor, call.node, factor_node=alpha.value)
    if product.scores is not None:
        product = product.with_(scores=replace(product.scores, adds_bias=True))
    return product


@handlers.function("torch.einsum")
def _einsum_function(ev, call: Call):
    if not call.args:
        return None
    first = call.args[0].value
    operands = [a.value for a in call.args[1:]]
    if len(operands) == 1 and isinstance(operands[0], (cst.List, cst.Tuple)):
        operands = [e.value for e in operands[0].elements]
    values = [ev.eval(o) for o in operands]
    if isinstance(first, cst.SimpleString) and isinstance(first.evaluated_value, str):
        return einsum(ev, call.node, first.evaluated_value, values, operands)
    return Value(kind="tensor", node=call.node)


def einsum(ev, call: cst.CSTNode, equation: str, operands: List[Value], operand_nodes, letter_names=None) -> Value:
    """`torch.einsum("bhid,bhjd->bhij", q, k)` and einops' space-separated form (`letter_names`
    maps the letters standing for its axis names back to them)."""
    letter_names = letter_names or {}
    parsed = shapes.parse_einsum(equation)
    if parsed is None:
        return Value(kind="tensor", node=call)
    rank = None if parsed.ellipsis else len(parsed.output)
    sizes = {}
    for index, operand in enumerate(operands):
        if index < len(parsed.inputs) and operand.shape is not None and len(operand.shape) == len(parsed.inputs[index]):
            for letter, axis in zip(parsed.inputs[index], operand.shape):
                if axis.size is not None:
                    sizes.setdefault(letter, axis.size)
    for index, operand in enumerate(operands):
        if operand.softmax is None or index >= len(parsed.inputs):
            continue
        operand.softmax.guard_uses.append(operand.guarded)
        if any(other.is_parameter for i, other in enumerate(operands) if i != index):
            continue  # `einsum("bhij,hg->bgij", attn, mix)`: talking heads, not values
        subs = parsed.inputs[index]
        contracted = [c for c in subs if c not in parsed.output]
        if len(contracted) == 1:
            operand.softmax.contracted_axes.add(shapes.Einsum.axis(subs, contracted[0]))
    shape = None
    if rank is not None:
        shape = tuple(
            Axis(sizes.get(letter), shapes.role_of_dim_name(letter_names.get(letter, letter)))
            for letter in parsed.output
        )
    if len(operands) == 2 and len(parsed.inputs) == 2:
        a_only, b_only, summed = parsed.only_in(0), parsed.only_in(1), parsed.contracted()
        a_only, b_only = _without_one_sided_batch(a_only, b_only, parsed.output)
        if len(a_only) == 1 and len(b_only) == 1 and summed:
            a_sub, b_sub = parsed.inputs
            feature = summed[-1]
            out = parsed.output
            scores = score_facts(
                ev,
                operands[0],
                operands[1],
                call,
                operand_nodes[0],
                operand_nodes[1],
                key_axis_by_layout=(shapes.Einsum.axis(out, b_only[0]), shapes.Einsum.axis(out, a_only[0])),
                feature_axis=shapes.Einsum.axis(a_sub, feature),
                key_feature_axis=shapes.Einsum.axis(b_sub, feature),
            )
            if scores is not None:
                if scores.head_dim is None and feature in sizes:
                    head_dim = ev.resolve(sizes[feature])
                    scores = replace(scores, head_dim=head_dim, head_dim_names=ev.names_for(head_dim))
                if shape is not None:
                    q_role, k_role = (QUERIES, KEYS) if scores.layout == QUERY_MAJOR else (KEYS, QUERIES)
                    shape = tuple(
                        replace(
                            axis, role=q_role if letter == a_only[0] else k_role if letter == b_only[0] else axis.role
                        )
                        for letter, axis in zip(out, shape)
                    )
                return Value(
                    kind="tensor",
                    rank=rank,
                    shape=shape,
                    role=SCORES,
                    scores=scores,
                    feature_last=False,
                    scaled=scores.scaled,
                    scale=scores.scale,
                    node=call,
                )
    params = [o for o in operands if o.is_parameter]
    if (
        len(operands) == 2
        and len(params) == 1
        and params[0].role in (QUERY, KEY, "value", QKV)
        and not params[0].custom_init
        and not _initialised_with_a_number(ev, operand_nodes[operands.index(params[0])])
    ):
        # `einsum("bsd,tdhk->tbhsk", x, self.w_qkv)`: a projection of tokens by a weight named
        # for its role, as `x @ self.W_q` is (see matmul).
        tokens = operands[1] if operands[0] is params[0] else operands[0]
        return Value(
            kind="tensor",
            rank=rank,
            shape=shape,
            role=params[0].role,
            feature_last=True,
            scaled=tokens.scaled if tokens.scale is not None else None,
            scale=tokens.scale, scale_steps=tokens.scale_steps,
            node=call,
        )
    return Value(kind="tensor", rank=rank, shape=shape, node=call)


def _without_one_sided_batch(a_only, b_only, output):
    """`einsum("qd,bnd->bqn", queries, k)`: queries shared by the batch, so the batch axis `b`
    is on one operand only. Leading the output, it is a batch axis, not that operand's tokens:
    the letters that are each operand's own are then `q` and `n`."""
    a_only, b_only = list(a_only), list(b_only)
    if output and len(a_only) + len(b_only) == 3:
        lead = output[0]
        if len(b_only) == 2 and len(a_only) == 1 and lead in b_only:
            b_only.remove(lead)
        elif len(a_only) == 2 and len(b_only) == 1 and lead in a_only:
            a_only.remove(lead)
    return a_only, b_only


def _initialised_with_a_number(ev, node) -> bool:
    """`self.W` is set in some method of the class with a number that is not a literal
    (`nn.init.normal_(self.W, std=d ** -0.5)` in `reset_parameters`): a scale may be folded in."""
    from attnlint.analysis.modules import self_attr, sized_parameter_inits

    attr = self_attr(node) if node is not None else None
    if attr is None or ev.cls is None:
        return attr is not None
    return attr in sized_parameter_inits(ev.cls.node)


@handlers.function("torch.linear")
def _linear(ev, call: Call):
    values = ev.args(call.node)
    if not values:
        return None
    return Value(kind="tensor", rank=values[0].rank, feature_last=True, scaled=False, scale=ONE, node=call.node)


# ------------------------------------------------------------------------------------------
# Scale verdicts
# ------------------------------------------------------------------------------------------
class ScaleKind(str, enum.Enum):
    CORRECT = "correct"  # 1/sqrt(head_dim)
    MISSING = "missing"  # no factor at all
    ROOT_MULTIPLIED = "root-multiplied"  # sqrt(head_dim): multiplied instead of divided
    NO_ROOT = "no-root"  # 1/head_dim
    # The same 1/sqrt(size) factor applied twice (`q * self.scale`, then `alpha=self.scale`):
    # 1/size in all, whatever the size is.
    SCALED_TWICE = "scaled-twice"
    WRONG_DIMENSION = "wrong-dimension"  # 1/sqrt(X), X not the head dimension (model width, length)
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class ScaleVerdict:
    kind: ScaleKind
    factor: Optional[Sym] = None  # the product of every factor applied
    head_dim: Optional[Sym] = None  # the contracted axis's size
    # For WRONG_DIMENSION: the quantity under the root, and whether it is a multiple of the head
    # dimension (the model width in multi-head code).
    used: Optional[Sym] = None
    model_width: bool = False


def scale_verdict(scores: ScoreFacts) -> ScaleVerdict:
    """Is the factor applied to these scores 1/sqrt(head_dim), symbolically?

    Only quantities that are sizes of the product's operands count as evidence: a factor with
    any other atom (a temperature, a `scale` parameter, a learned value) is UNKNOWN, and so is a
    constant when the head dimension is not a constant."""
    factor, head_dim = scores.scale, scores.head_dim
    if factor is None:
        return ScaleVerdict(ScaleKind.UNKNOWN)
    if factor == ONE:
        return ScaleVerdict(ScaleKind.MISSING, factor, head_dim)
    if head_dim is None:
        return ScaleVerdict(ScaleKind.UNKNOWN, factor)
    for exponent, kind in (
        (Fraction(-1, 2), ScaleKind.CORRECT),
        (Fraction(1, 2), ScaleKind.ROOT_MULTIPLIED),
        (Fraction(-1), ScaleKind.NO_ROOT),
    ):
        # `k.size(-1) ** -0.5` scales `q @ k.T` correctly: both operands' contracted sizes count.
        if any(_same(factor, size.power(exponent)) for size in (head_dim, *scores.head_dim_aliases)):
            return ScaleVerdict(kind, factor, head_dim)
    twice = _same_root_twice(scores, factor, head_dim)
    if twice is not None:
        return twice
    symbolic = _symbolic_verdict(scores, factor, head_dim)
    if symbolic.kind != ScaleKind.UNKNOWN:
        return symbolic
    by_numbers = _verdict_by_numbers(scores, factor, head_dim)
    if by_numbers is not None:
        return by_numbers
    by_width = _input_width_verdict(scores, factor, head_dim)
    return by_width if by_width is not None else symbolic


def _same_root_twice(scores: ScoreFacts, factor: Sym, head_dim: Sym) -> Optional[ScaleVerdict]:
    """Two scale steps that apply one factor, written the same (`self.scale` on the queries and
    again as baddbmm's `alpha`), the whole being 1/n for sizes n: each step is 1/sqrt(n). Right
    only if n were the root of the head dimension, which no size is named for; the rule needs
    no relation between n and the head dimension (they may come from different scopes). A
    factor of sizes only (a temperature is not one), and not the d**-0.25 that code applies to
    q and k on purpose (its whole is 1/sqrt(d))."""
    steps = scores.every_scale_step
    if len(steps) != 2 or steps[0].divides != steps[1].divides or not steps[0].factor.deep_equals(steps[1].factor):
        return None
    used = factor.power(Fraction(-1))
    if used is None or used.is_const or any(e <= 0 or e.denominator != 1 for _, e in used.factors):
        return None
    if not set(used.atoms()) <= set(head_dim.atoms()) | set(scores.size_atoms) | set(scores.scope_size_atoms):
        return None
    return ScaleVerdict(ScaleKind.SCALED_TWICE, factor, head_dim, used=used)


def _symbolic_verdict(scores: ScoreFacts, factor: Sym, head_dim: Sym) -> ScaleVerdict:
    if head_dim.is_const or factor.is_const:
        return ScaleVerdict(ScaleKind.UNKNOWN, factor, head_dim)  # a number: maybe the head dim
    used = factor.power(Fraction(-2))
    if used is None or any(e < 0 for _, e in used.factors):
        return ScaleVerdict(ScaleKind.UNKNOWN, factor, head_dim)
    ratio = used / head_dim
    known = set(head_dim.atoms()) | set(scores.size_atoms)
    # The width is the head dimension times sizes (the heads): a factor that is no size (a
    # temperature `tau` a softmax helper divides by) says nothing of the width.
    sizes = known | set(scores.scope_size_atoms)
    width = (
        ratio is not None
        and not ratio.is_const
        and all(e > 0 and e.denominator == 1 for _, e in ratio.factors)
        and set(ratio.atoms()) <= sizes
    )
    if not width and not set(used.atoms()) <= known:
        return ScaleVerdict(ScaleKind.UNKNOWN, factor, head_dim)  # a temperature, a parameter
    return ScaleVerdict(ScaleKind.WRONG_DIMENSION, factor, head_dim, used=used, model_width=width)


def _input_width_verdict(scores: ScoreFacts, factor: Sym, head_dim: Sym) -> Optional[ScaleVerdict]:
    """`dim ** -0.5` in multi-head code whose heads are projected from width `dim` to
    `heads * dim_head` (lucidrains' `inner_dim`): the scale is the root of the layer's input
    width, a quantity the per-head dimension is not made of. Only when the operands show a heads
    axis that is not a single head, and the width is not one of the head dimension's atoms (the
    numbers, when the callers give them, decided first: see _verdict_by_numbers)."""
    used = factor.power(Fraction(-2))
    if used is None or used.coeff != 1 or len(used.factors) != 1 or used.factors[0][1] != 1:
        return None
    width = used.factors[0][0]
    if width not in scores.layer_input_atoms or width in head_dim.atoms() or head_dim.is_const:
        return None
    heads = scores.head_count
    if heads is None or width in heads.atoms() or (heads.is_const and (heads.int_value or 0) < 2):
        return None
    return ScaleVerdict(ScaleKind.WRONG_DIMENSION, factor, head_dim, used=used, model_width=True)


def _verdict_by_numbers(scores: ScoreFacts, factor: Sym, head_dim: Sym) -> Optional[ScaleVerdict]:
    """The numbers decide when the names cannot: `C ** -0.5` with C the input width `n_embd = 64`,
    in a `Head(head_size)` its callers build with `n_embd // n_head` (16).

    Only a scale written as the root of sizes counts (`C ** -0.5`, `1 / sqrt(self.dim)`: every
    atom a size of a tensor or layer in scope); a literal (`/ 8`, `* 0.125`) or a temperature
    stays unknown. The number under the root must be a whole multiple (at least twice) of the
    head dimension's number: the width of several heads. Equal numbers are correct for this
    configuration (single-head code whose width is its head dim)."""
    written = scores.scale_as_written
    if written is None or written.is_const:
        return None
    if not set(written.atoms()) <= set(scores.scope_size_atoms):
        return None
    under_root = written.power(Fraction(-2))
    if under_root is None or any(e <= 0 or e.denominator != 1 for _, e in under_root.factors):
        return None  # not 1/sqrt of a product of sizes
    numbers = dict(scores.size_examples)
    factor_value, head_value = _number(factor, numbers), _number(head_dim, numbers)
    if factor_value is None or head_value is None or factor_value <= 0:
        return None
    used, head = round(factor_value**-2), round(head_value)
    if head < 1 or abs(used - factor_value**-2) > 1e-6 * used or abs(head - head_value) > 1e-9:
        return None  # not whole numbers: not sizes
    if used == head:
        return ScaleVerdict(ScaleKind.CORRECT, factor, head_dim)
    if used % head != 0 or used // head < 2:
        return None
    return ScaleVerdict(ScaleKind.WRONG_DIMENSION, factor, head_dim, used=under_root, model_width=True)


def _number(sym: Sym, numbers) -> Optional[float]:
    """The value of `sym` with each atom replaced by its number (None when one has none)."""
    value = float(sym.coeff)
    for atom, exponent in sym.factors:
        if atom.key not in numbers or not numbers[atom.key].is_const:
            return None
        value *= float(numbers[atom.key].coeff) ** float(exponent)
    return value


def same_factor(a: Optional[Sym], b: Optional[Sym]) -> bool:
    """Two scale factors are one, up to the rounding of a literal (see _same)."""
    return _same(a, b)


def _same(a: Optional[Sym], b: Optional[Sym]) -> bool:
    """Equal, up to the rounding of a literal (`0.125` for `64 ** -0.5`)."""
    if a is None or b is None or a.factors != b.factors:
        return False
    return abs(float(a.coeff) - float(b.coeff)) <= 1e-9 * max(abs(float(b.coeff)), 1e-30)


def _numbers_of_sizes(ev) -> Tuple[Tuple[str, Sym], ...]:
    """The numbers known for atoms: the callers' examples, and sizes the code showed equal to a
    number (`C` of x going into `nn.Linear(64, ...)`)."""
    numbers = {key: value for key, value in ev.equalities.items() if value.is_const}
    numbers.update(ev.size_examples)
    return tuple(sorted(numbers.items()))


def _scope_size_atoms(ev) -> set:
    """The atoms that name a size of some tensor or layer in scope, as the code names them
    (unresolved): `C` of `B, T, C = x.shape`, `dim` of `nn.Linear(dim, inner)`; and those of the
    callers' scopes, for the sizes they pass down."""
    values = list(ev.env.values()) + (list(ev.cls.attrs.values()) if ev.cls is not None else [])
    return size_atoms_of(values) | ev.caller_scope.size_atoms


def size_atoms_of(values) -> set:
    """The atoms of the sizes of these values' axes and layers."""
    out = set()
    for value in values:
        sizes = [axis.size for axis in value.shape] if value.shape is not None else []
        sizes += [value.last_size, *value.module_sizes]
        for size in sizes:
            if size is not None:
                out.update(size.atoms())
    return out


def _layer_input_atoms(ev) -> set:
    """The atoms that are, alone, the input width of a projection layer in scope (`dim` of
    `nn.Linear(dim, inner_dim * 3)`, also inside an `nn.ModuleList`), as the code names them;
    and those of the callers' scopes."""
    values = list(ev.env.values()) + (list(ev.cls.attrs.values()) if ev.cls is not None else [])
    return layer_input_atoms_of(values) | ev.caller_scope.layer_inputs


def layer_input_atoms_of(values) -> set:
    """The atoms that are, alone, the input width of one of these projection layers."""
    from attnlint.analysis.modules import PROJECTION_MODULES

    out = set()
    values = list(values)
    while values:
        value = values.pop()
        if value.kind == "tuple" or value.module_type in ("ModuleList", "Sequential"):
            values.extend(value.elements)
            if value.each is not None:
                values.append(value.each)
            continue
        if value.kind != "module" or value.module_type not in PROJECTION_MODULES or not value.module_sizes:
            continue
        width = value.module_sizes[0]
        if width is not None and width.coeff == 1 and len(width.factors) == 1 and width.factors[0][1] == 1:
            out.add(width.factors[0][0])
    return out


def _head_count(ev, query: Value, key: Value) -> Optional[Sym]:
    """The size of the heads axis of q or k (`h` of `b h n d`, `self.n_head` of a view),
    when an axis shows one (by the operation that made it or by its size's name)."""
    for value in (query, key):
        if value.shape is None:
            continue
        for index in range(len(value.shape)):
            if shapes.axis_role(value, index) == HEADS and value.shape[index].size is not None:
                return ev.resolve(value.shape[index].size)
    for value in (query, key):
        for axis in value.shape or ():
            if axis.folded_heads is not None:
                return ev.resolve(axis.folded_heads)  # `(b h) n d`: heads folded into the batch
    return None


def _size_atoms(ev, value: Optional[Value]) -> set:
    if value is None or value.shape is None:
        return set()
    out = set()
    for axis in value.shape:
        size = ev.resolve(axis.size)
        if size is not None:
            out.update(size.atoms())
    return out


def contracted_size(value: Value) -> Optional[Sym]:
    """The per-token feature size of a projection (its last axis), when known."""
    if value.feature_last is False:
        return None
    return value.size_of(-1)


__all__ = ["ScaleKind", "ScaleVerdict", "scale_verdict", "matmul", "einsum", "score_facts", "FEATURE"]


@handlers.method("sum")
def _weighted_sum(ev, call: Call):
    """`(h * w).sum(1)`: the sum of a product with softmax weights weighs values. The shape is
    that of any reduction (shapes.reduced)."""
    site = call.receiver.weighted_by if call.receiver is not None else None
    if site is not None and call.node.args:
        site.uses.weigh_values = True
        dim = _flow()._arg(call.node, 0, "dim")
        axis = _flow().int_literal(dim.value) if dim is not None else None
        rank = call.receiver.rank
        if axis is not None and rank is not None and rank == site.rank and -rank <= axis < rank:
            # `(w * feats).sum(0)`: the weights are contracted with the values along that axis.
            site.uses.contracted_axes.add(axis if axis < 0 else axis - rank)
    return shapes.reduced(ev, call, function_form=False)
