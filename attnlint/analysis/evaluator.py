"""The per-function data-flow pass.

Statements are evaluated in order over an environment of abstract values (:mod:`.values`).
Branches are evaluated on copies and joined, so a fact survives only if it holds on every path;
loops are evaluated once and joined with the state before them (they may not run). Whatever the
pass cannot evaluate becomes unknown, and unknown facts never produce findings.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Dict, List, Optional, Sequence, Tuple

import libcst as cst

from attnlint.analysis import dropout, mask_encoding, masks, shapes
from attnlint.analysis.dropout import DropoutSite
from attnlint.analysis.calls import argument as _arg
from attnlint.analysis.names import canonical, qualify, role_from_name
from attnlint.analysis.values import (
    ATTEND,
    MASKED,
    AttentionCallSite,
    FillSite,
    LossSite,
    MaskFacts,
    MaskUseSite,
    KEY,
    KEY_MAJOR,
    QKV,
    QUERY,
    QUERY_MAJOR,
    SCORES,
    UNKNOWN,
    WEIGHTS,
    ScoreFacts,
    SoftmaxSite,
    Value,
    any_true,
    join,
)

Env = Dict[str, Value]

# Tensor methods that keep the value as it is (shape, role and every attention fact).
_IDENTITY_METHODS = {
    "contiguous",
    "float",
    "half",
    "double",
    "bfloat16",
    "to",
    "type",
    "type_as",
    "clone",
    "detach",
    "cpu",
    "cuda",
    "requires_grad_",
    "retain_grad",
    "as_strided",
}
# nn modules that are the identity for our purposes.
_IDENTITY_MODULES = {"Dropout", "Dropout1d", "Dropout2d", "AlphaDropout", "Identity"}
_PROJECTION_MODULES = {"Linear", "LazyLinear", "Conv1D", "NonDynamicallyQuantizableLinear"}
_PER_TOKEN_MODULES = _PROJECTION_MODULES | {"Embedding", "LayerNorm", "RMSNorm", "GELU", "ReLU", "SiLU"}
_CONSTRUCTORS = {"torch.ones", "torch.zeros", "torch.randn", "torch.rand", "torch.empty", "torch.full"}
# Functions known not to rescale their input (rotary embeddings rotate pairs of features).
_ROTARY_WORDS = ("rotary", "rope", "rotate", "pos_emb", "apply_pos")


@dataclass
class DotTSite:
    """A `.T` attribute, what it was applied to, and whether it is a matmul operand."""

    node: cst.Attribute
    receiver: Value
    in_matmul: bool = False


@dataclass
class CallSite:
    """A call to a function (or `self.` method) that may be defined in this file."""

    callee: str
    method: bool
    call: cst.Call
    values: Tuple[Value, ...]

    def argument(self, position: int, name: str) -> Optional[Value]:
        """The value passed for parameter `name` at `position` (self not counted)."""
        arg = _arg(self.call, position, name)
        if arg is None:
            return None
        for a, value in zip(self.call.args, self.values):
            if a is arg:
                return value
        return None


# Signatures of PyTorch layers that containers call with masks.
_TORCH_LAYER_SIGNATURES = (
    ("src", "src_mask", "src_key_padding_mask"),
    ("tgt", "memory", "tgt_mask", "memory_mask", "tgt_key_padding_mask", "memory_key_padding_mask"),
)


@dataclass
class FunctionFacts:
    node: Optional[cst.CSTNode]  # FunctionDef, or the Module for top-level code
    name: str
    class_name: Optional[str]
    softmax_sites: List[SoftmaxSite] = field(default_factory=list)
    dot_t_sites: List[DotTSite] = field(default_factory=list)
    fill_sites: List[FillSite] = field(default_factory=list)
    mask_uses: List[MaskUseSite] = field(default_factory=list)
    attention_calls: List[AttentionCallSite] = field(default_factory=list)
    loss_sites: List[LossSite] = field(default_factory=list)
    returns: List[Value] = field(default_factory=list)
    params: Dict[str, Value] = field(default_factory=dict)
    param_nodes: Dict[str, cst.Param] = field(default_factory=dict)
    # Every name the body reads or writes (a parameter absent from it is never used).
    used_names: set = field(default_factory=set)
    # An `assert` on a tensor's size or shape: the code pins lengths itself.
    length_checked: bool = False
    calls: List["CallSite"] = field(default_factory=list)
    # Functional dropout calls (attnlint.analysis.dropout).
    dropout_sites: List[DropoutSite] = field(default_factory=list)

    def masks_into_attention(self) -> set:
        """The mask parameters that reach a fill or an attention API's mask argument here."""
        reached = set()
        for site in list(self.fill_sites) + list(self.mask_uses):
            facts = site.mask.mask
            if facts is not None and facts.param:
                reached.add(facts.param)
        for call in self.attention_calls:
            reached.update(k for k in call.mask_keywords if k in self.params and masks.is_mask_param(k))
        return reached

    def is_drop_in_layer(self) -> bool:
        """A forward with the parameters of an nn.Transformer*Layer: a drop-in replacement that
        containers call with masks its own use may never set."""
        params = list(self.params)
        return any(params[: len(sig)] == list(sig) for sig in _TORCH_LAYER_SIGNATURES)


@dataclass
class ClassFacts:
    name: str
    node: cst.ClassDef
    attrs: Env = field(default_factory=dict)
    forward_params: Tuple[str, ...] = ()
    bases: Tuple[str, ...] = ()  # base class names as written (last dotted part)


def _int_literal(node: Optional[cst.BaseExpression]) -> Optional[int]:
    if isinstance(node, cst.Integer):
        return int(node.evaluated_value)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = _int_literal(node.expression)
        return None if inner is None else -inner
    return None


def _is_simple(node: Optional[cst.CSTNode]) -> bool:
    """A name or attribute chain: safe to repeat in a fix."""
    if isinstance(node, cst.Name):
        return True
    if isinstance(node, cst.Attribute):
        return _is_simple(node.value)
    return False


class FunctionEvaluator:
    def __init__(
        self,
        facts: FunctionFacts,
        aliases: Dict[str, str],
        class_facts: Optional[ClassFacts],
        record_attrs: bool = False,
        class_names: frozenset = frozenset(),
        constants: Optional[Env] = None,
    ) -> None:
        self.facts = facts
        self.aliases = aliases
        self.cls = class_facts
        self.class_names = class_names  # classes defined in this file (user modules)
        self.constants = constants or {}  # module-level constants (`PAD_IDX = 0`)
        self.record_attrs = record_attrs  # __init__: `self.x = ...` becomes a class fact
        self.env: Env = {}
        self.declared_ranks: Dict[str, int] = {}
        self._softmax_by_node: Dict[int, SoftmaxSite] = {}
        self._dot_t_by_node: Dict[int, DotTSite] = {}

    # ------------------------------------------------------------------ parameters
    def bind_params(self, params: cst.Parameters) -> None:
        every = list(params.posonly_params) + list(params.params) + list(params.kwonly_params)
        for param in every:
            name = param.name.value
            if name in ("self", "cls"):
                continue
            rank = None
            if param.annotation is not None:
                rank = shapes.annotation_rank(param.annotation.annotation)
            value = Value(
                kind="tensor",
                rank=rank,
                role=role_from_name(name),
                scaled=False,
                node=param.name,
                feature_last=None,
                mask=masks.from_param(name),
            )
            value = value.add_extra("param", name)
            if _names_lengths(name):
                value = value.add_extra("lengths", True)
            self.env[name] = value
            self.facts.params[name] = value
            self.facts.param_nodes[name] = param

    # ------------------------------------------------------------------ statements
    def run(self, body: Sequence[cst.CSTNode]) -> None:
        for stmt in body:
            self.statement(stmt)

    def statement(self, stmt: cst.CSTNode) -> None:
        for line in getattr(stmt, "leading_lines", ()):
            if line.comment is not None:
                self.shape_comment(line.comment.value)
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                self.small_statement(small)
            comment = stmt.trailing_whitespace.comment
            if comment is not None:
                self._trailing_shape_comment(stmt, comment.value)
        elif isinstance(stmt, cst.If):
            self._branches([block_statements(stmt.body), self._else_body(stmt.orelse)], test=stmt.test)
        elif isinstance(stmt, (cst.For, cst.While)):
            if isinstance(stmt, cst.For):
                self.eval(stmt.iter)
                self._bind(stmt.target, UNKNOWN)
            else:
                self.eval(stmt.test)
            before = dict(self.env)
            self.run(block_statements(stmt.body))
            self._merge([before, dict(self.env)])
            if stmt.orelse is not None:
                self.run(block_statements(stmt.orelse.body))
        elif isinstance(stmt, cst.With):
            for item in stmt.items:
                value = self.eval(item.item)
                if item.asname is not None:
                    self._bind(item.asname.name, value)
            self.run(block_statements(stmt.body))
        elif isinstance(stmt, (cst.Try, getattr(cst, "TryStar", cst.Try))):
            bodies = [block_statements(stmt.body)]
            bodies += [block_statements(h.body) for h in stmt.handlers]
            self._branches(bodies)
            if stmt.orelse is not None:
                self.run(block_statements(stmt.orelse.body))
            if stmt.finalbody is not None:
                self.run(block_statements(stmt.finalbody.body))
        elif isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            self.env[stmt.name.value] = UNKNOWN  # analysed on its own
        elif isinstance(stmt, cst.Match):
            self.eval(stmt.subject)
            # Each case is a path; a case may also not match at all.
            self._branches([block_statements(case.body) for case in stmt.cases] + [[]])
        else:  # anything newer: forget every name the statement may bind
            self._forget_bound_names(stmt)

    def _else_body(self, orelse) -> Sequence[cst.CSTNode]:
        if orelse is None:
            return []
        if isinstance(orelse, cst.If):
            return [orelse]
        return block_statements(orelse.body)

    def _forget_bound_names(self, stmt: cst.CSTNode) -> None:
        for node in _walk_nodes(stmt):
            if isinstance(node, cst.Name) and node.value in self.env:
                self.env[node.value] = UNKNOWN

    def _branches(self, bodies: List[Sequence[cst.CSTNode]], test: Optional[cst.BaseExpression] = None) -> None:
        if test is not None:
            self.eval(test)
        start = dict(self.env)
        ends = []
        for body in bodies:
            self.env = dict(start)
            self.run(body)
            ends.append(self.env)
        self._merge(ends)

    def _merge(self, envs: List[Env]) -> None:
        keys = set().union(*envs)
        merged: Env = {}
        for key in keys:
            value = envs[0].get(key)
            for other in envs[1:]:
                value = join(value, other.get(key)) if value is not other.get(key) else value
            merged[key] = value if value is not None else UNKNOWN
        self.env = merged

    def small_statement(self, small: cst.BaseSmallStatement) -> None:
        if isinstance(small, cst.Assign):
            value = self.eval(small.value)
            for target in small.targets:
                self._bind(target.target, value)
        elif isinstance(small, cst.AnnAssign):
            if small.value is not None:
                value = self.eval(small.value)
                rank = shapes.annotation_rank(small.annotation.annotation)
                if rank is not None and value.rank is None:
                    value = value.with_(rank=rank)
                self._bind(small.target, value)
        elif isinstance(small, cst.AugAssign):
            current = self.eval(small.target)
            operand = self.eval(small.value)
            op = small.operator
            if isinstance(op, (cst.MultiplyAssign, cst.DivideAssign)):
                self._bind(small.target, self._scaled(current), name_roles=False)
            elif isinstance(op, (cst.AddAssign, cst.SubtractAssign)):
                self._bind(
                    small.target, self._add(current, operand, small, small.target, small.value), name_roles=False
                )
            else:
                self._bind(small.target, UNKNOWN)
        elif isinstance(small, cst.Expr):
            self.eval(small.value)
            if self.record_attrs and self.cls is not None:
                self._note_custom_init(small.value)
        elif isinstance(small, cst.Assert):
            self.eval(small.test)
            if _mentions_size(small.test):
                self.facts.length_checked = True
        elif isinstance(small, cst.Return):
            if small.value is not None:
                self.facts.returns.append(self.eval(small.value))

    # ------------------------------------------------------------------ comments
    def shape_comment(self, comment: str) -> None:
        named = shapes.named_shape_comment(comment)
        if named is None:
            return
        names, rank = named
        for name in names:
            if name in self.env:
                if self.env[name].rank is None:
                    self.env[name] = self.env[name].with_(rank=rank)
            else:
                self.declared_ranks[name] = rank

    def _trailing_shape_comment(self, stmt: cst.SimpleStatementLine, comment: str) -> None:
        named = shapes.named_shape_comment(comment)
        if named is not None:
            self.shape_comment(comment)
            return
        rank = shapes.bare_shape_comment(comment)
        if rank is None or len(stmt.body) != 1 or not isinstance(stmt.body[0], cst.Assign):
            return
        targets = stmt.body[0].targets
        if len(targets) == 1 and isinstance(targets[0].target, cst.Name):
            name = targets[0].target.value
            if name in self.env and self.env[name].rank is None:
                self.env[name] = self.env[name].with_(rank=rank)

    # ------------------------------------------------------------------ binding
    def _bind(self, target: cst.BaseExpression, value: Value, name_roles: bool = True) -> None:
        if isinstance(target, cst.Name):
            name = target.value
            if name_roles and value.role is None and value.kind in ("tensor", "unknown"):
                role = role_from_name(name)
                if role is not None:
                    value = value.with_(role=role, kind="tensor")
            declared = self.declared_ranks.pop(name, None)  # a shape comment describes one binding
            if value.rank is None and declared is not None and value.kind in ("tensor", "unknown"):
                value = value.with_(rank=declared)
            if name_roles and value.mask is None and value.kind in ("tensor", "unknown") and value.scores is None:
                named = masks.from_param(name)  # `padding_mask = ...`: the name tells, when nothing else does
                if named is not None and (named.convention is not None or named.can_mask_whole_row):
                    value = value.with_(mask=replace(named, origin="name", param=None))
            self.env[name] = value
        elif isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self":
            attr = target.attr.value
            if name_roles and value.role is None and value.kind in ("tensor", "unknown"):
                role = role_from_name(attr)
                if role is not None:
                    value = value.with_(role=role)
            self.env["self." + attr] = value
            if self.record_attrs and self.cls is not None:
                self.cls.attrs[attr] = value
        elif isinstance(target, (cst.Tuple, cst.List)):
            elements = [e.value for e in target.elements]
            starred = any(isinstance(e, cst.StarredElement) for e in target.elements)
            if value.kind == "shape":
                self._bind_shape(value, len(elements), starred)
                for element in elements:
                    self._bind(element, Value(kind="scalar"))
                return
            parts: Tuple[Value, ...] = value.elements if value.kind == "tuple" else ()
            each = value.get_extra("each") if value.kind == "tuple" else None
            if value.kind == "tensor" and value.rank is not None and value.rank >= 2:
                # `q, k, v = qkv.permute(2, 0, 3, 1, 4)`: unpacking iterates over the first axis.
                each = Value(
                    kind="tensor",
                    rank=value.rank - 1,
                    scaled=value.scaled,
                    feature_last=value.feature_last,
                    extra=_kept_extras(value),
                )
            for index, element in enumerate(elements):
                if parts and len(parts) == len(elements) and not starred:
                    part = parts[index]
                elif each is not None and not starred:
                    part = each
                else:
                    part = UNKNOWN
                self._bind(element, part)
        elif isinstance(target, cst.Subscript):
            owner = _owner_name(target.value)
            stored = self.env.get(owner) if owner is not None else None
            if stored is not None and stored.softmax is not None:
                stored.softmax.guarded = True  # `w[torch.isnan(w)] = 0`
            if stored is not None and stored.mask is not None:
                # `key_padding_mask[:, 0] = False` makes some keys always visible (a row can no
                # longer be emptied for sure); `padding_mask[1] = True` only masks more.
                written = masks.number(value.node) if value.node is not None else None
                # Without a known convention, True is read as "masked" (as masked_fill reads it).
                masks_more = written is not None and (written != 0) == (stored.mask.convention != ATTEND)
                if not masks_more:
                    self.env[owner] = stored.with_(mask=replace(stored.mask, can_mask_whole_row=None))
            if owner is not None and owner in self.env and self.env[owner].get_extra("padded"):
                # `targets[targets == pad] = -100`: the padding value is rewritten.
                number = masks.number(value.node) if value.node is not None else None
                self.env[owner] = self.env[owner].add_extra("padding_value", number)
        # Other stores change part of a tensor: nothing we track changes.

    def _bind_shape(self, shape: Value, count: int, starred: bool) -> None:
        """`b, n, d = x.shape` tells that x has rank 3."""
        owner = shape.get_extra("shape_of_name")
        if starred or owner is None or owner not in self.env:
            return
        current = self.env[owner]
        if current.rank is None:
            self.env[owner] = current.with_(rank=count)

    # ------------------------------------------------------------------ expressions
    def eval(self, node: cst.BaseExpression) -> Value:
        method = getattr(self, "_eval_" + type(node).__name__, None)
        if method is None:
            return UNKNOWN
        return method(node)

    def _eval_Name(self, node: cst.Name) -> Value:
        if node.value in self.env:
            return self.env[node.value]
        if node.value in self.constants:
            return self.constants[node.value]
        if node.value in ("True", "False", "None"):
            return Value(kind="scalar", node=node)
        value = Value(kind="unknown", role=role_from_name(node.value), node=node, mask=masks.from_param(node.value))
        return value.add_extra("lengths", True) if _names_lengths(node.value) else value

    def _eval_Integer(self, node: cst.Integer) -> Value:
        return Value(kind="scalar", int_value=int(node.evaluated_value), node=node)

    def _eval_Float(self, node: cst.Float) -> Value:
        return Value(kind="scalar", node=node)

    def _eval_SimpleString(self, node) -> Value:
        return Value(kind="scalar", node=node)

    def _eval_Tuple(self, node: cst.Tuple) -> Value:
        return Value(kind="tuple", elements=tuple(self.eval(e.value) for e in node.elements), node=node)

    _eval_List = _eval_Tuple

    def _eval_IfExp(self, node: cst.IfExp) -> Value:
        self.eval(node.test)
        return join(self.eval(node.body), self.eval(node.orelse))

    def _eval_UnaryOperation(self, node: cst.UnaryOperation) -> Value:
        inner = self.eval(node.expression)
        if isinstance(node.operator, cst.Minus) and inner.kind == "scalar" and inner.int_value is not None:
            return inner.with_(int_value=-inner.int_value, node=node)
        if isinstance(node.operator, cst.BitInvert) and inner.kind in ("tensor", "unknown"):
            mask = masks.invert(inner.mask) if inner.mask is not None else None
            return inner.with_(kind="tensor", node=node, scores=None, softmax=None, mask=mask)
        if isinstance(node.operator, cst.Not):
            return Value(kind="scalar")
        # Negation keeps rank but is not a score any more (`softmax(-dist)` is not Q·Kᵀ).
        return Value(kind=inner.kind, rank=inner.rank, node=node)

    def _eval_Comparison(self, node: cst.Comparison) -> Value:
        left = self.eval(node.left)
        rights = [self.eval(comp.comparator) for comp in node.comparisons]
        mask = None
        if len(node.comparisons) == 1:
            comp = node.comparisons[0]
            literal = masks.number(comp.comparator)
            if literal is None and rights and rights[0].int_value is not None:
                literal = float(rights[0].int_value)  # a named constant (`PAD_IDX`)
            if left.mask is not None:
                mask = masks.compare(left.mask, comp.operator, literal)
            elif _names_pad(comp.comparator) and isinstance(comp.operator, (cst.Equal, cst.NotEqual)):
                # `tokens == pad_id`, `tokens != self.pad_token_id`: the constant's name says padding.
                convention = MASKED if isinstance(comp.operator, cst.Equal) else ATTEND
                mask = MaskFacts(origin="padding", convention=convention, dtype="bool", can_mask_whole_row=True)
            elif left.get_extra("padded"):
                # `tokens == pad_id` / `tokens != pad_id` on a padded batch.
                pad = left.get_extra("padding_value")
                if pad is not None and literal is not None and pad == literal:
                    convention = (
                        MASKED
                        if isinstance(comp.operator, cst.Equal)
                        else (ATTEND if isinstance(comp.operator, cst.NotEqual) else None)
                    )
                    if convention:
                        mask = MaskFacts(origin="padding", convention=convention, dtype="bool", can_mask_whole_row=True)
            elif _is_lengths(rights[0]) or _is_lengths(left):
                # `arange(T)[None, :] < lengths[:, None]`: True = a real token.
                op = comp.operator
                lengths_right = _is_lengths(rights[0])
                keeps = isinstance(op, cst.LessThan) if lengths_right else isinstance(op, cst.GreaterThan)
                drops = isinstance(op, cst.GreaterThanEqual) if lengths_right else isinstance(op, cst.LessThanEqual)
                if keeps or drops:
                    mask = MaskFacts(
                        origin="lengths", convention=ATTEND if keeps else MASKED, dtype="bool", can_mask_whole_row=True
                    )
        rank = left.rank if left.rank is not None else (rights[0].rank if rights else None)
        if left.kind in ("tensor", "unknown") or mask is not None:
            return Value(kind="tensor", rank=rank, node=node, mask=mask)
        return Value(kind="unknown", node=node)

    def _eval_BooleanOperation(self, node: cst.BooleanOperation) -> Value:
        self.eval(node.left)
        self.eval(node.right)
        return UNKNOWN

    def _eval_Lambda(self, node) -> Value:
        return UNKNOWN

    def _eval_NamedExpr(self, node: cst.NamedExpr) -> Value:
        value = self.eval(node.value)
        self._bind(node.target, value)
        return value

    def _eval_Attribute(self, node: cst.Attribute) -> Value:
        attr = node.attr.value
        if isinstance(node.value, cst.Name) and node.value.value == "self":
            key = "self." + attr
            if key in self.env:
                return self.env[key]
            if self.cls is not None and attr in self.cls.attrs:
                value = self.cls.attrs[attr]
                if value.mask is not None and value.mask.buffer_attr:
                    value = value.with_(mask=replace(value.mask, buffer_node=node))
                return value
            return Value(kind="unknown", role=role_from_name(attr), node=node).add_extra("attr", attr)
        if qualify(node, self.aliases) is not None and qualify(node.value, self.aliases) is not None:
            return Value(kind="unknown", node=node)  # torch.float32, math.pi, F.softmax ...
        receiver = self.eval(node.value)
        if attr == "T":
            site = DotTSite(node=node, receiver=receiver)
            self._dot_t_by_node[id(node)] = site
            self.facts.dot_t_sites.append(site)
            return self._transposed_last_two(receiver, node)
        if attr == "mT":
            return self._transposed_last_two(receiver, node)
        if attr == "shape":
            shape = Value(kind="shape", shape_of=receiver, node=node)
            owner = _owner_name(node.value)
            return shape.add_extra("shape_of_name", owner) if owner else shape
        if attr == "ndim":
            return Value(kind="scalar", int_value=receiver.rank, node=node).add_extra("rank_of", True)
        if attr in ("data", "real"):
            return receiver
        if attr == "weight" and receiver.kind == "module":
            return Value(kind="tensor", rank=2, is_parameter=True, node=node)
        return Value(kind="unknown", node=node)

    def _eval_Subscript(self, node: cst.Subscript) -> Value:
        base = self.eval(node.value)
        if base.kind == "shape":
            return Value(kind="scalar", node=node)
        if base.kind == "tuple":
            if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
                index = _int_literal(node.slice[0].slice.value)
                if index is not None and -len(base.elements) <= index < len(base.elements):
                    return base.elements[index]
            return UNKNOWN
        removed = added = 0
        rank_known = True
        for element in node.slice:
            inner = element.slice
            if isinstance(inner, cst.Slice):
                for part in (inner.lower, inner.upper, inner.step):
                    if part is not None:
                        self.eval(part)
                continue
            value = inner.value
            if isinstance(value, cst.Name) and value.value == "None":
                added += 1
            elif isinstance(value, cst.Ellipsis):
                continue
            else:
                index_value = self.eval(value)
                if index_value.kind == "scalar" or isinstance(value, cst.Integer):
                    removed += 1
                else:
                    rank_known = False
        rank = base.rank - removed + added if (base.rank is not None and rank_known) else None
        if not rank_known and base.get_extra("padded"):
            # `targets[keep]`: a selection by a tensor; the padding may well be gone.
            base = base.with_(extra=tuple((k, v) for k, v in base.extra if k not in _DATA_EXTRAS))
        mask = base.mask
        if mask is not None and _cuts_key_axis(node.slice, base.rank, removed, rank_known):
            mask = replace(mask, sliced=True)
        role = None if base.role == QKV else base.role  # `qkv[0]`: the target's name says which
        return base.with_(rank=rank, node=node, mask=mask, feature_transposed=False, role=role, softmax=None).add_extra(
            "sliced", True
        )

    def _eval_BinaryOperation(self, node: cst.BinaryOperation) -> Value:
        left = self.eval(node.left)
        right = self.eval(node.right)
        op = node.operator
        if isinstance(op, cst.MatrixMultiply):
            return self.matmul(left, right, node, node.left, node.right)
        if isinstance(op, (cst.Multiply, cst.Divide)):
            if left.kind == "scalar" and right.kind == "scalar":
                return Value(kind="scalar", node=node)
            tensor = left if _tensorish(left) or not _tensorish(right) else right
            if isinstance(op, cst.Divide) and tensor is right:
                return Value(kind="tensor", rank=right.rank, node=node)  # `1 / x`: not a scaled x
            if isinstance(op, cst.Divide) and tensor.softmax is not None:
                tensor.softmax.renormalized = True  # `w / w.sum(...)`: normalised again
            if left.softmax is not None and right.softmax is not None:
                # `s.softmax(1) * s.softmax(2)`: a two-way (dual-softmax) normalisation.
                left.softmax.renormalized = right.softmax.renormalized = True
            if tensor.mask is not None:
                # `mask * -1e9`: no longer 0/1 values but a bias (attnlint.analysis.mask_encoding).
                return mask_encoding.scaled_mask(self._scaled(tensor).with_(node=node))
            return self._scaled(tensor).with_(node=node)
        if isinstance(op, (cst.Add, cst.Subtract)):
            return self._add(left, right, node, node.left, node.right)
        if isinstance(op, (cst.FloorDivide, cst.Modulo, cst.Power, cst.LeftShift, cst.RightShift)):
            if left.kind == "scalar" and right.kind == "scalar":
                return Value(kind="scalar", node=node)
            return Value(kind="unknown", node=node)
        if isinstance(op, (cst.BitAnd, cst.BitOr, cst.BitXor)):
            rank = left.rank if left.rank is not None else right.rank
            mask = masks.combine(left.mask, right.mask, op) if not isinstance(op, cst.BitXor) else None
            return Value(kind="tensor", rank=rank, node=node, mask=mask)
        return UNKNOWN

    def _with_additive_fill(self, scores: Value, term: Value, node, scores_node=None, term_node=None) -> Value:
        """`scores + m` where m holds -inf at masked places: a fill, as masked_fill is."""
        fill = term.get_extra("additive_fill")
        if fill is None and term.mask is not None:
            # `scores + mask`: an additive mask whose fill value we cannot see.
            site = FillSite(
                call=node,
                mask_node=term_node if term_node is not None else term.node,
                mask=term,
                fill=None,
                in_place=False,
                additive=True,
                receiver_node=scores_node,
                on_scores=True,
            )
            self.facts.fill_sites.append(site)
            return scores.add_extra("fills", (scores.get_extra("fills") or ()) + (site,))
        if fill is None:
            return scores
        site = FillSite(
            call=node, mask_node=fill.mask_node, mask=fill.mask, fill=fill.fill, in_place=False, additive=True,
            on_scores=True,
        )
        self.facts.fill_sites.append(site)
        return scores.add_extra("fills", (scores.get_extra("fills") or ()) + (site,))

    def _scaled(self, value: Value) -> Value:
        if value.scores is not None:
            return value.with_(scores=replace(value.scores, scaled=True), scaled=True)
        return value.with_(scaled=True)

    def _add(self, left: Value, right: Value, node: cst.CSTNode, left_node=None, right_node=None) -> Value:
        """`scores + bias`, `scores - max`: additive terms keep the scores what they are."""
        if left.scores is not None and right.scores is None:
            return self._with_additive_fill(left.with_(node=node), right, node, left_node, right_node)
        if right.scores is not None and left.scores is None:
            return self._with_additive_fill(right.with_(node=node), left, node, right_node, left_node)
        if left.kind == "scalar" and right.kind == "scalar":
            return Value(kind="scalar", node=node)
        for weights, other in ((left, right), (right, left)):
            scalar_like = other.kind == "scalar" or (
                other.rank is None and other.role is None and other.mask is None and other.softmax is None
            )
            if weights.softmax is not None and scalar_like:
                return weights.with_(node=node)  # `softmax(s) + eps`: still those weights
        ranks = [r for r in (left.rank, right.rank) if r is not None]
        rank = max(ranks) if len(ranks) == 2 else None
        role = left.role if left.role == right.role else None
        return Value(kind="tensor", rank=rank, role=role, node=node)

    # ------------------------------------------------------------------ products
    def _transposed_last_two(self, value: Value, node: cst.CSTNode) -> Value:
        return value.with_(
            feature_transposed=value.feature_last is not False and not value.feature_transposed,
            base=value,
            node=node,
            scores=None,
            softmax=None,
            mask=masks.transposed(value.mask),
        )

    def matmul(
        self,
        left: Value,
        right: Value,
        node: cst.CSTNode,
        left_node: Optional[cst.BaseExpression],
        right_node: Optional[cst.BaseExpression],
        batched_3d: bool = False,
    ) -> Value:
        for operand_node in (left_node, right_node):
            site = self._dot_t_by_node.get(id(operand_node))
            if site is not None:
                site.in_matmul = True
        # Weights contracted with values tell the key axis: `w @ v` sums over w's last axis.
        if left.softmax is not None:
            left.softmax.contracted_axes.add(-1)
        if right.softmax is not None:
            right.softmax.contracted_axes.add(-2)
        if batched_3d:  # bmm/baddbmm take 3-D operands only
            left = left.with_(rank=3) if left.rank is None else left
            right = right.with_(rank=3) if right.rank is None else right
            for operand_node in (left_node, right_node):
                site = self._dot_t_by_node.get(id(operand_node))
                if site is not None and site.receiver.rank is None:
                    site.receiver = site.receiver.with_(rank=3)
        right = self._resolve_pending_swap(right, left)
        rank = max(left.rank, right.rank) if left.rank is not None and right.rank is not None else None
        if right.feature_transposed and right.base is not None:
            key = right.base
            scores = self._score_facts(left, key, node, left_node, key_node=_transpose_receiver(right_node))
            if scores is not None:
                # Q and K share their batch axes; one known rank gives the other.
                known = [r for r in (left.rank, right.rank) if r is not None]
                rank = max(known) if known else None
                return Value(
                    kind="tensor",
                    rank=rank,
                    role=SCORES,
                    scores=scores,
                    feature_last=False,
                    scaled=scores.scaled,
                    node=node,
                )
        if right.is_parameter and right.role in (QUERY, KEY, "value", QKV):
            # `x @ self.W_q`: a projection of tokens.
            return Value(kind="tensor", rank=left.rank, role=right.role, feature_last=True, scaled=False, node=node)
        return Value(kind="tensor", rank=rank, feature_last=None, node=node)

    def _resolve_pending_swap(self, right: Value, left: Value) -> Value:
        """Decide whether `k.transpose(a, a + 1)` (rank unknown) swapped k's last two axes."""
        last = right.get_extra("pending_swap")
        if last is None or right.base is None:
            return right
        rank = right.base.rank if right.base.rank is not None else left.rank
        if rank is None:
            rank = last + 1  # the reading attention code means: `transpose(2, 3)` on 4-D
        if rank != last + 1:
            return right.with_(rank=rank)
        base = right.base.with_(rank=rank)
        return self._transposed_last_two(base, right.node).with_(rank=rank)

    def _score_facts(
        self,
        query: Value,
        key: Value,
        product: cst.CSTNode,
        query_node: Optional[cst.BaseExpression],
        key_node: Optional[cst.BaseExpression],
        key_axis_by_layout: Tuple[int, int] = (-1, -2),
        feature_axis: int = -1,
    ) -> Optional[ScoreFacts]:
        """Facts about `query · keyᵀ`, or None when this is not an attention product."""
        if query.is_parameter or key.is_parameter:
            return None  # `x @ W.T` is a linear layer, not attention
        rq, rk = query.role, key.role
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
        if _is_simple(query_node) and query.feature_last is not False:
            feature_dim = (query_node, feature_axis)
        elif _is_simple(key_node) and key.feature_last is not False:
            feature_dim = (key_node, feature_axis)
        params = tuple(p for p in (query.get_extra("param"), key.get_extra("param")) if p)
        return ScoreFacts(
            product=product,
            layout=layout,
            key_axis=key_axis,
            scaled=any_true(query.scaled, key.scaled),
            feature_dim=feature_dim,
            operand_params=params,
            padded=bool(query.get_extra("padded") or key.get_extra("padded")),
        )

    def einsum(self, call: cst.Call, equation: str, operands: List[Value], operand_nodes) -> Value:
        parsed = shapes.parse_einsum(equation)
        if parsed is None:
            return Value(kind="tensor", node=call)
        rank = None if parsed.ellipsis else len(parsed.output)
        for index, operand in enumerate(operands):
            if operand.softmax is None or index >= len(parsed.inputs):
                continue
            subs = parsed.inputs[index]
            contracted = [c for c in subs if c not in parsed.output]
            if len(contracted) == 1:
                operand.softmax.contracted_axes.add(shapes.Einsum.axis(subs, contracted[0]))
        if len(operands) == 2 and len(parsed.inputs) == 2:
            a_only, b_only, summed = parsed.only_in(0), parsed.only_in(1), parsed.contracted()
            if len(a_only) == 1 and len(b_only) == 1 and summed:
                a_sub, b_sub = parsed.inputs
                feature = summed[-1]
                out = parsed.output
                scores = self._score_facts(
                    operands[0],
                    operands[1],
                    call,
                    operand_nodes[0],
                    operand_nodes[1],
                    key_axis_by_layout=(shapes.Einsum.axis(out, b_only[0]), shapes.Einsum.axis(out, a_only[0])),
                    feature_axis=shapes.Einsum.axis(a_sub, feature),
                )
                if scores is not None:
                    if scores.feature_dim is not None and scores.feature_dim[0] is operand_nodes[1]:
                        scores = replace(scores, feature_dim=(operand_nodes[1], shapes.Einsum.axis(b_sub, feature)))
                    return Value(
                        kind="tensor",
                        rank=rank,
                        role=SCORES,
                        scores=scores,
                        feature_last=False,
                        scaled=scores.scaled,
                        node=call,
                    )
        return Value(kind="tensor", rank=rank, node=call)

    # ------------------------------------------------------------------ calls
    def _eval_Call(self, node: cst.Call) -> Value:
        func = node.func
        qualified = canonical(qualify(func, self.aliases))
        if qualified is not None and "." in qualified:
            return self._function_call(node, qualified)
        if isinstance(func, cst.Attribute):
            if isinstance(func.value, cst.Name) and func.value.value == "self":
                return self._module_call(node, func.attr.value)
            receiver = self.eval(func.value)
            if receiver.kind == "module":
                return self._call_module_value(node, receiver, func.attr.value)
            return self._method_call(node, receiver, func.attr.value, func.value)
        if isinstance(func, cst.Name):
            target = self.env.get(func.value, self.constants.get(func.value))
            if target is not None and target.kind == "module":
                return self._call_module_value(node, target, func.value)
            if qualified is not None:  # `from torch.nn.functional import softmax`
                return self._function_call(node, qualified)
            if func.value in self.class_names:
                self._args(node)
                return Value(kind="module", module_type=func.value, ctor=node, node=node).add_extra("user_class", True)
            return self._user_function(node, func.value)
        if isinstance(func, cst.Call):  # nn.Softmax(dim=-1)(x)
            module = self.eval(func)
            if module.kind == "module":
                return self._call_module_value(node, module, "")
        for arg in node.args:
            self.eval(arg.value)
        return UNKNOWN

    def _args(self, node: cst.Call) -> List[Value]:
        return [self.eval(a.value) for a in node.args]

    def _user_function(self, node: cst.Call, name: str, method: bool = False) -> Value:
        values = self._args(node)
        self.facts.calls.append(CallSite(callee=name, method=method, call=node, values=tuple(values)))
        lowered = name.lower()
        if any(w in lowered for w in _ROTARY_WORDS):
            # Rotary embeddings rotate feature pairs: shape, role and scale status are kept.
            tensors = [v for v in values if v.kind in ("tensor", "unknown")]
            if len(tensors) >= 2 and tensors[0].role in (QUERY, KEY) and tensors[1].role in (QUERY, KEY):
                return Value(kind="tuple", elements=(tensors[0], tensors[1]), node=node)
            if tensors:
                return tensors[0].with_(node=node)
        _escape(values)
        return Value(kind="unknown", node=node)

    def _module_call(self, node: cst.Call, attr: str) -> Value:
        name_arg, tensor_arg = _arg(node, 0, "name"), _arg(node, 1, "tensor" if attr == "register_buffer" else "param")
        if attr in ("register_buffer", "register_parameter") and name_arg is not None and tensor_arg is not None:
            name_node = name_arg.value
            value = self.eval(tensor_arg.value)
            if isinstance(name_node, cst.SimpleString) and isinstance(name_node.evaluated_value, str):
                buffer_name = name_node.evaluated_value
                value = value.add_extra("buffer", buffer_name)
                if value.mask is not None:
                    value = value.with_(mask=replace(value.mask, buffer_attr=buffer_name))
                if attr == "register_parameter":
                    value = value.with_(is_parameter=True)
                self.env["self." + buffer_name] = value
                if self.record_attrs and self.cls is not None:
                    self.cls.attrs[buffer_name] = value
            return Value(kind="scalar", node=node)
        module = self.env.get("self." + attr)
        if module is None and self.cls is not None:
            module = self.cls.attrs.get(attr)
        if module is not None and module.kind == "module":
            return self._call_module_value(node, module, attr)
        values = self._args(node)
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
            return Value(kind="tensor", rank=values[0].rank, role=role, feature_last=True, scaled=False, node=node)
        if module is None and values and any(w in lowered for w in _ROTARY_WORDS):
            return self._user_function(node, attr, method=True)
        if module is None:
            self.facts.calls.append(CallSite(callee=attr, method=True, call=node, values=tuple(values)))
        _escape(values)
        return Value(kind="unknown", node=node)

    def _call_module_value(self, node: cst.Call, module: Value, attr: str) -> Value:
        kind = module.module_type or ""
        if kind == "Softmax":
            return self._softmax(node, node.args[0].value if node.args else None, module.ctor, form="module")
        values = self._args(node)
        if kind in masks.MASK_ARGUMENTS:
            return self._attention_module_call(node, kind, values, module)
        if kind == "CrossEntropyLoss" and len(values) >= 2:
            self._loss_site(node, values[1], node.args[1].value, module.ctor)
            return Value(kind="tensor", rank=0, node=node)
        if module.get_extra("user_class"):
            keywords = tuple(
                a.keyword.value for a in node.args if a.keyword is not None and masks.is_mask_param(a.keyword.value)
            )
            if any(a.keyword is None and v.mask is not None for a, v in zip(node.args, values)):
                keywords += ("<positional>",)  # `self.attn(x, mask)`
            self.facts.attention_calls.append(
                AttentionCallSite(
                    call=node, api="submodule", inputs=tuple(values), mask_keywords=keywords, callee_class=kind
                )
            )
            _escape(values)
            return Value(kind="unknown", node=node)
        if kind in _IDENTITY_MODULES and values:
            return values[0].with_(node=node) if values[0].kind != "unknown" else values[0]
        if kind in _PER_TOKEN_MODULES and values and values[0].get_extra("padded"):
            # An embedding or a per-token layer of a padded batch is still padded there.
            return Value(kind="tensor", node=node, extra=(("padded", True),))
        if kind in _PROJECTION_MODULES and values:
            role = role_from_name(attr) if attr else None
            # Weights set by hand in __init__ may fold the scale in: unknown, not "unscaled".
            scaled = None if module.get_extra("custom_init") else False
            padded = (("padded", True),) if values[0].get_extra("padded") else ()
            return Value(
                kind="tensor", rank=values[0].rank, role=role, feature_last=True, scaled=scaled, node=node, extra=padded
            )
        _escape(values)
        return Value(kind="unknown", node=node).add_extra("module_call", kind)

    def _function_call(self, node: cst.Call, qualified: str) -> Value:
        short = qualified.rsplit(".", 1)[-1]
        if qualified in ("torch.softmax",):
            return self._softmax(node, node.args[0].value if node.args else None, None, form="function")
        if short == "scaled_dot_product_attention":
            return self._sdpa(node)
        if qualified == "torch.masked_fill" and len(node.args) >= 3:
            receiver = self.eval(node.args[0].value)
            shifted = node.with_changes(args=node.args[1:])  # (input, mask, value) -> .masked_fill(mask, value)
            site_call = self._masked_fill(shifted, receiver, node.args[0].value, in_place=False)
            self._retarget_fill(shifted, node)
            return site_call
        if short == "generate_square_subsequent_mask" and node.args:
            self._args(node)
            size = _code(node.args[0].value)
            # -inf above the diagonal, 0 elsewhere: an additive causal mask.
            return Value(
                kind="tensor",
                rank=2,
                node=node,
                mask=MaskFacts(origin="causal", dtype="float", built_size=(size, size), can_mask_whole_row=False),
            )
        if short == "pad_sequence":
            values = self._args(node)
            pad_arg = _arg(node, 2, "padding_value")
            pad = masks.number(pad_arg.value) if pad_arg is not None else 0.0
            if pad_arg is not None and pad is None:
                pad = self.eval(pad_arg.value).int_value
            value = Value(kind="tensor", node=node).add_extra("padded", True).add_extra("padding_value", pad)
            if pad_arg is not None:
                value = value.add_extra("padding_node", pad_arg.value)
            return value
        if short == "cross_entropy" and len(node.args) >= 2:
            values = self._args(node)
            self._loss_site(node, values[1], node.args[1].value, node)
            return Value(kind="tensor", rank=0, node=node)
        if qualified in ("torch.nan_to_num", "torch.nan_to_num_") and node.args:
            values = self._args(node)
            if values[0].softmax is not None:
                values[0].softmax.guarded = True
            return values[0].with_(node=node)
        if qualified in ("torch.matmul", "torch.bmm", "torch.mm"):
            if len(node.args) >= 2:
                left, right = self.eval(node.args[0].value), self.eval(node.args[1].value)
                return self.matmul(
                    left, right, node, node.args[0].value, node.args[1].value, batched_3d=qualified == "torch.bmm"
                )
        if qualified == "torch.baddbmm" and len(node.args) >= 3:
            self.eval(node.args[0].value)
            left, right = self.eval(node.args[1].value), self.eval(node.args[2].value)
            product = self.matmul(left, right, node, node.args[1].value, node.args[2].value, batched_3d=True)
            if _arg(node, 99, "alpha") is not None and product.scores is not None:
                product = self._scaled(product)
            return product
        if qualified == "torch.einsum" and node.args:
            first = node.args[0].value
            operands = [a.value for a in node.args[1:]]
            if len(operands) == 1 and isinstance(operands[0], (cst.List, cst.Tuple)):
                operands = [e.value for e in operands[0].elements]
            values = [self.eval(o) for o in operands]
            if isinstance(first, cst.SimpleString) and isinstance(first.evaluated_value, str):
                return self.einsum(node, first.evaluated_value, values, operands)
            return Value(kind="tensor", node=node)
        if qualified == "torch.nn.Parameter" and node.args:
            inner = self.eval(node.args[0].value)
            return inner.with_(kind="tensor", is_parameter=True, node=node)
        if qualified in _CONSTRUCTORS or qualified == "torch.randint":
            self._args(node)
            sizes = [a for a in node.args if a.keyword is None]
            if qualified == "torch.randint":
                sizes = [a for a in node.args if a.keyword is None][-1:]
            if qualified == "torch.full":
                sizes = sizes[:1]
            if len(sizes) == 1 and isinstance(sizes[0].value, (cst.Tuple, cst.List)):
                rank = len(sizes[0].value.elements)
            elif any(a.star for a in sizes):
                rank = None
            else:
                rank = len(sizes)
            dtype_arg = _arg(node, 99, "dtype")
            dtype = _dtype_of(dtype_arg.value, self.aliases) if dtype_arg is not None else "float"
            size_texts = tuple(_code(a.value) for a in sizes)
            value = Value(kind="tensor", rank=rank, node=node).add_extra("constructor", (qualified, dtype, size_texts))
            return value
        if qualified in ("torch.tensor", "torch.as_tensor", "torch.Tensor") and node.args:
            rank = shapes.literal_rank(node.args[0].value)
            if not isinstance(node.args[0].value, (cst.List, cst.Tuple)):
                rank = self.eval(node.args[0].value).rank
            return Value(kind="tensor", rank=rank, node=node)
        if qualified in ("torch.tril", "torch.triu"):
            values = self._args(node)
            if not values:
                return UNKNOWN
            return self._triangular(short, values[0], _arg(node, 1, "diagonal"), node)
        if qualified == "torch.transpose" and len(node.args) >= 3:
            value = self.eval(node.args[0].value)
            return self._transpose(value, node.args[1].value, node.args[2].value, node)
        if qualified in ("torch.dropout", "torch.dropout_") and node.args:
            values = self._args(node)
            dropout.record(self, node, values)
            return values[0]
        if qualified == "torch.where" and len(node.args) == 3:
            cond = self.eval(node.args[0].value)
            a, b = self.eval(node.args[1].value), self.eval(node.args[2].value)
            for weights in (a, b):
                if weights.softmax is not None:
                    weights.softmax.guarded = True  # where(all_masked, 0, weights)
            if a.get_extra("padded") or b.get_extra("padded"):
                padded = a if a.get_extra("padded") else b
                return padded.add_extra("padding_value", None)  # rewritten somewhere
            for kept, other_node, keep_when_true in ((a, node.args[2].value, True), (b, node.args[1].value, False)):
                fill = masks.fill_kind(other_node, self.aliases)
                other = b if keep_when_true else a
                # The filled side is a constant we can read, or (`mask_value = finfo.min`) a
                # scalar-like value while the kept side holds the scores.
                fill_like = fill is not None or (
                    kept.scores is not None
                    and other.scores is None
                    and other.rank in (None, 0)
                    and cond.mask is not None
                )
                if not fill_like or kept.kind == "scalar":
                    continue
                mask = cond.mask
                if mask is not None and keep_when_true:
                    mask = masks.invert(mask)  # where(keep, scores, fill): filled where ~keep
                site = FillSite(
                    call=node,
                    mask_node=node.args[0].value,
                    mask=cond.with_(mask=mask),
                    fill=fill,
                    in_place=False,
                    keeps_where_true=keep_when_true,
                    receiver_node=node.args[1].value if keep_when_true else node.args[2].value,
                    on_scores=kept.scores is not None,
                )
                self.facts.fill_sites.append(site)
                return kept.with_(node=node).add_extra("fills", (kept.get_extra("fills") or ()) + (site,))
            # `where(rows_all_masked, zeros, scores)`: scores replaced at places we cannot read,
            # which may be exactly the rows a fill emptied; the earlier fills no longer tell.
            if a.scores is not None and b.scores is None:
                return a.with_(node=node).add_extra("fills", ())
            if b.scores is not None and a.scores is None:
                return b.with_(node=node).add_extra("fills", ())
            return Value(kind="tensor", rank=a.rank if a.rank is not None else b.rank, node=node)
        if qualified in ("torch.mul", "torch.div", "torch.true_divide") and len(node.args) >= 2:
            a, b = self.eval(node.args[0].value), self.eval(node.args[1].value)
            return self._scaled(a if _tensorish(a) else b).with_(node=node)
        if qualified in ("torch.linear",) and node.args:
            values = self._args(node)
            return Value(kind="tensor", rank=values[0].rank, feature_last=True, scaled=False, node=node)
        if qualified.startswith("torch.nn.") and short[:1].isupper():
            self._args(node)
            return Value(kind="module", module_type=short, ctor=node, node=node)
        if qualified.startswith("math.") or qualified.startswith("numpy."):
            self._args(node)
            return Value(kind="scalar", node=node)
        _escape(self._args(node))
        return Value(kind="unknown", node=node)

    def _method_call(self, node: cst.Call, receiver: Value, method: str, receiver_node) -> Value:
        args = node.args
        dtype = _DTYPE_METHODS.get(method)
        if method == "to" and args:
            dtype = _dtype_of(args[0].value, self.aliases)
        elif method == "type" and args:
            dtype = _dtype_of(args[0].value, self.aliases)
        if dtype is not None and receiver.kind != "unknown":
            self._args(node)
            mask = receiver.mask
            if mask is not None:
                mask = replace(mask, dtype=dtype)
            return receiver.with_(node=node, mask=mask)
        if method == "logical_not" and receiver.mask is not None:
            return receiver.with_(node=node, mask=masks.invert(receiver.mask), scores=None, softmax=None)
        if method in ("eq", "ne") and args and receiver.mask is not None:
            op = cst.Equal() if method == "eq" else cst.NotEqual()
            return Value(
                kind="tensor",
                rank=receiver.rank,
                node=node,
                mask=masks.compare(receiver.mask, op, masks.number(args[0].value)),
            )
        if method == "softmax":
            return self._softmax(node, receiver_node, None, form="method")
        if method in _IDENTITY_METHODS:
            self._args(node)
            return receiver.with_(node=node) if receiver.kind != "unknown" else receiver
        if method == "transpose" and len(args) >= 2:
            return self._transpose(receiver, args[0].value, args[1].value, node)
        if method == "permute":
            return self._permute(receiver, [a.value for a in args], node)
        if method in ("view", "reshape", "expand", "repeat", "view_as", "reshape_as", "expand_as", "tile"):
            values = self._args(node)
            if method in ("view_as", "reshape_as", "expand_as"):
                rank = values[0].rank if values else None
            elif len(args) == 1 and isinstance(args[0].value, (cst.Tuple, cst.List)):
                rank = len(args[0].value.elements)
            elif len(args) == 1 and values and values[0].kind == "shape":
                rank = values[0].shape_of.rank if values[0].shape_of is not None else None
            elif any(a.star for a in args) or (len(args) == 1 and values and values[0].kind != "scalar"):
                rank = None
            else:
                rank = len(args)
            if method in ("expand", "repeat") and rank is not None and receiver.rank is not None:
                rank = max(rank, receiver.rank)
            # A reshape keeps the last (feature) axis only when it is not merged or split.
            return Value(
                kind="tensor",
                rank=rank,
                role=receiver.role,
                scaled=receiver.scaled,
                feature_last=receiver.feature_last if method in ("expand", "repeat", "view", "reshape") else None,
                mask=receiver.mask,
                node=node,
                extra=_kept_extras(receiver),
            )
        if method == "unsqueeze":
            self._args(node)
            rank = receiver.rank + 1 if receiver.rank is not None else None
            return receiver.with_(rank=rank, node=node, feature_transposed=False, softmax=None)
        if method == "squeeze":
            self._args(node)
            rank = receiver.rank - 1 if (receiver.rank is not None and args) else None
            return receiver.with_(rank=rank, node=node, feature_transposed=False, softmax=None)
        if method in ("split", "chunk", "unbind", "tensor_split"):
            values = self._args(node)
            count = _split_count(method, args, values)
            rank = receiver.rank
            if method == "unbind" and rank is not None:
                rank -= 1
            feature_last = receiver.feature_last if method != "unbind" else None
            if method == "unbind":
                dim_arg = _arg(node, 0, "dim")
                dim = _int_literal(dim_arg.value) if dim_arg is not None else 0
                if dim is not None and (dim == -1 or (receiver.rank is not None and dim == receiver.rank - 1)):
                    # Unbinding the last axis removes the features: what is left is tokens.
                    feature_last = False
            element = Value(kind="tensor", rank=rank, scaled=receiver.scaled, feature_last=feature_last)
            if count is None:
                # The count depends on a size we do not know: every unpacked part looks alike.
                return Value(kind="tuple", node=node).add_extra("each", element)
            return Value(kind="tuple", elements=(element,) * count, node=node)
        if method in ("matmul", "bmm", "mm") and args:
            other = self.eval(args[0].value)
            return self.matmul(receiver, other, node, receiver_node, args[0].value, batched_3d=method == "bmm")
        if method in ("mul", "div", "mul_", "div_", "true_divide"):
            self._args(node)
            result = self._scaled(receiver).with_(node=node)
            if method.endswith("_"):
                self._update_in_place(receiver_node, result)
            return result
        if method in ("masked_fill", "masked_fill_"):
            return self._masked_fill(node, receiver, receiver_node, in_place=method.endswith("_"))
        if method in ("nan_to_num", "nan_to_num_") and receiver.softmax is not None:
            receiver.softmax.guarded = True
            self._args(node)
            return receiver.with_(node=node)
        if method in ("add", "sub", "add_", "sub_"):
            values = self._args(node)
            return self._add(
                receiver, values[0] if values else UNKNOWN, node, receiver_node, args[0].value if args else None
            )
        if method in ("size", "dim", "numel", "item", "__len__"):
            self._args(node)
            if method == "dim":
                return Value(kind="scalar", int_value=receiver.rank, node=node).add_extra("rank_of", True)
            if method == "size" and not args:
                shape = Value(kind="shape", shape_of=receiver, node=node)
                owner = _owner_name(receiver_node)
                return shape.add_extra("shape_of_name", owner) if owner else shape
            return Value(kind="scalar", node=node)
        if method in ("float", "bool", "long", "int", "byte"):
            return receiver.with_(node=node)
        if method in ("tril", "triu", "tril_", "triu_"):
            self._args(node)
            diagonal_arg = _arg(node, 0, "diagonal")
            return self._triangular(method.rstrip("_"), receiver, diagonal_arg, node)
        if method in ("flatten",):
            self._args(node)
            return Value(kind="tensor", node=node, role=receiver.role, extra=_kept_extras(receiver))
        _escape([receiver] + self._args(node))
        return Value(kind="unknown", node=node)

    def _triangular(self, kind: str, source: Value, diagonal_arg: Optional[cst.Arg], node) -> Value:
        """`triu`/`tril` of a ones tensor: a causal mask (anything else: just a tensor)."""
        ctor = source.get_extra("constructor")
        result = Value(kind="tensor", rank=source.rank, node=node)
        if ctor is None or ctor[0] not in ("torch.ones", "torch.full", "torch.ones_like"):
            return result
        diagonal = _int_literal(diagonal_arg.value) if diagonal_arg is not None else 0
        if diagonal is None:
            return result
        return result.with_(mask=masks.triangular(kind, diagonal, ctor[1], ctor[2]))

    def _masked_fill(self, node: cst.Call, receiver: Value, receiver_node, in_place: bool) -> Value:
        mask_arg, value_arg = _arg(node, 0, "mask"), _arg(node, 1, "value")
        mask = self.eval(mask_arg.value) if mask_arg is not None else UNKNOWN
        if value_arg is not None:
            self.eval(value_arg.value)
        fill = masks.fill_kind(value_arg.value, self.aliases) if value_arg is not None else None
        if receiver.softmax is not None:
            # Weights zeroed where masked, after the softmax: fully masked rows are handled.
            receiver.softmax.guarded = True
            return receiver.with_(node=node)
        if receiver.get_extra("padded") and value_arg is not None:
            # `targets.masked_fill(targets == pad, -100)`: the padding value is rewritten.
            result = receiver.add_extra("padding_value", masks.number(value_arg.value))
            if in_place:
                self._update_in_place(receiver_node, result)
            return result
        if mask_arg is None:
            return receiver.with_(node=node)
        site = FillSite(
            call=node, mask_node=mask_arg.value, mask=mask, fill=fill, in_place=in_place, receiver_node=receiver_node,
            on_scores=receiver.scores is not None,
        )
        self.facts.fill_sites.append(site)
        if receiver.scores is None:
            # `zeros.masked_fill(mask, -inf)`: an additive mask in the making.
            result = receiver.with_(node=node).add_extra("additive_fill", site)
        elif fill != "-inf" and receiver.get_extra("fills"):
            # A finite fill after a -inf one (`s.masked_fill(all_masked_rows, 0.0)`) may restore
            # exactly the emptied rows: a guard before the softmax.
            result = receiver.with_(node=node).add_extra("fills", (site,))
        else:
            result = receiver.with_(node=node).add_extra("fills", (receiver.get_extra("fills") or ()) + (site,))
        if in_place:
            self._update_in_place(receiver_node, result)
        return result

    def _attention_module_call(self, node: cst.Call, kind: str, values: List[Value], module: Value) -> Value:
        """nn.MultiheadAttention / nn.Transformer*: masks use True = masked."""
        positions = masks.MASK_ARGUMENTS[kind]
        passed = []
        for keyword, position in positions.items():
            arg = _arg(node, position, keyword)
            if arg is None or (isinstance(arg.value, cst.Name) and arg.value.value == "None"):
                continue
            passed.append(keyword)
            value = self.eval(arg.value)
            self.facts.mask_uses.append(
                MaskUseSite(call=node, api=kind, keyword=keyword, expects=MASKED, mask_node=arg.value, mask=value)
            )
        causal_arg = _arg(node, 99, "is_causal")
        self.facts.attention_calls.append(
            AttentionCallSite(
                call=node,
                api=kind,
                inputs=tuple(values[:3]),
                mask_keywords=tuple(passed),
                is_causal=causal_arg is not None and not _is_false(causal_arg.value),
            )
        )
        if kind == "MultiheadAttention":
            return Value(
                kind="tuple",
                elements=(Value(kind="tensor", rank=values[0].rank if values else None), Value(kind="tensor")),
                node=node,
            )
        return Value(kind="tensor", rank=values[0].rank if values else None, node=node)

    def _sdpa(self, node: cst.Call) -> Value:
        values = [self.eval(a.value) for a in node.args]
        mask_arg = _arg(node, 3, "attn_mask")
        passed = ()
        if mask_arg is not None and not (isinstance(mask_arg.value, cst.Name) and mask_arg.value.value == "None"):
            passed = ("attn_mask",)
            mask = self.eval(mask_arg.value)
            self.facts.mask_uses.append(
                MaskUseSite(
                    call=node, api="sdpa", keyword="attn_mask", expects=ATTEND, mask_node=mask_arg.value, mask=mask
                )
            )
        causal_arg = _arg(node, 5, "is_causal")
        positional = [v for v, a in zip(values, node.args) if a.keyword is None]
        self.facts.attention_calls.append(
            AttentionCallSite(
                call=node,
                api="sdpa",
                inputs=tuple(positional[:3]),
                mask_keywords=passed,
                is_causal=causal_arg is not None and not _is_false(causal_arg.value),
            )
        )
        rank = positional[0].rank if positional else None
        return Value(kind="tensor", rank=rank, node=node)

    def _loss_site(self, call: cst.Call, targets: Value, targets_node, configured_at: Optional[cst.Call]) -> None:
        # nn.CrossEntropyLoss(weight, size_average, ignore_index, ...) and
        # F.cross_entropy(input, target, weight, size_average, ignore_index, ...).
        where = configured_at if configured_at is not None else call
        functional = configured_at is None or configured_at is call
        ignore_position, weight_position = (4, 2) if functional else (2, 0)
        ignore_arg = _arg(where, ignore_position, "ignore_index")
        weight_arg = _arg(where, weight_position, "weight")
        weighted = weight_arg is not None and not _is_false(weight_arg.value)
        if any(a.star == "**" for a in where.args):
            ignore = None  # `**kwargs` may set it
        elif ignore_arg is None:
            ignore = -100  # PyTorch's default
        else:
            number = masks.number(ignore_arg.value)
            ignore = int(number) if number is not None else self.eval(ignore_arg.value).int_value
        reduction_arg = _arg(where, 99, "reduction")
        reduction: Optional[str] = "mean"
        if reduction_arg is not None:
            literal = reduction_arg.value
            reduction = literal.evaluated_value if isinstance(literal, cst.SimpleString) else None
        self.facts.loss_sites.append(
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

    def _retarget_fill(self, shifted: cst.Call, original: cst.Call) -> None:
        """Point a fill site recorded for a rewritten call back at the node in the tree."""
        for site in reversed(self.facts.fill_sites):
            if site.call is shifted:
                site.call = original
                break

    def _note_custom_init(self, expr: cst.BaseExpression) -> None:
        """`nn.init.normal_(self.q.weight, std=...)`, `self.q.weight.data.mul_(s)` in __init__: the
        projection's weights are set by hand, and may carry a folded-in scale (T5 does this)."""
        for attr in _self_weight_owners(expr):
            module = self.cls.attrs.get(attr)
            if module is not None:
                self.cls.attrs[attr] = module.add_extra("custom_init", True)

    def _update_in_place(self, receiver_node, value: Value) -> None:
        owner = _owner_name(receiver_node)
        if owner is not None and (owner in self.env or owner.startswith("self.")):
            self.env[owner] = value

    def _transpose(self, value: Value, a: cst.BaseExpression, b: cst.BaseExpression, node) -> Value:
        dims = {_int_literal(a), _int_literal(b)}
        if None in dims:
            self.eval(a)
            self.eval(b)
            return Value(kind="tensor", rank=value.rank, role=value.role, node=node, scaled=value.scaled)
        rank = value.rank
        last_two = {-1, -2}
        ordered = sorted(d for d in dims if d is not None)
        if rank is None and len(ordered) == 2 and ordered[0] >= 0 and ordered[1] == ordered[0] + 1:
            # `k.transpose(2, 3)` with k's rank unknown: the last two axes exactly when k has
            # rank 4; the product it feeds decides (see `matmul`).
            return Value(
                kind="tensor",
                role=value.role,
                node=node,
                scaled=value.scaled,
                base=value,
                feature_last=value.feature_last,
            ).add_extra("pending_swap", ordered[1])
        if rank is not None:
            normalized = {d + rank if d < 0 else d for d in dims}
            swaps_last_two = normalized == {rank - 1, rank - 2}
            touches_last = rank - 1 in normalized
        else:
            swaps_last_two = dims == last_two
            touches_last = -1 in dims or (not swaps_last_two and any(d is not None and d >= 0 for d in dims) and None)
        if swaps_last_two:
            return self._transposed_last_two(value, node)
        if touches_last is False:
            # Moving batch/head/token axes keeps the feature axis last: `k.transpose(1, 2)` on
            # (b, n, h, d) gives (b, h, n, d).
            return value.with_(node=node, feature_transposed=False, base=None, softmax=None)
        return Value(kind="tensor", rank=rank, role=value.role, node=node, scaled=value.scaled)

    def _permute(self, value: Value, dim_nodes: List[cst.BaseExpression], node) -> Value:
        if len(dim_nodes) == 1 and isinstance(dim_nodes[0], (cst.Tuple, cst.List)):
            dim_nodes = [e.value for e in dim_nodes[0].elements]
        dims = [_int_literal(d) for d in dim_nodes]
        rank = len(dims)
        if None in dims or (value.rank is not None and value.rank != rank):
            return Value(kind="tensor", rank=rank if None not in dims else None, role=value.role, node=node)
        dims = [d + rank if d < 0 else d for d in dims]
        last = rank - 1
        if value.feature_last is not False and dims[-2] == last and dims[-1] != last:
            # The feature axis moved to -2, a token axis to -1: Kᵀ in one step.
            return value.with_(
                rank=rank,
                feature_transposed=True,
                base=value.with_(rank=rank),
                node=node,
                scores=None,
                softmax=None,
                mask=masks.transposed(value.mask),
            )
        if dims[-1] == last:
            return value.with_(rank=rank, node=node, feature_transposed=False, base=None, softmax=None)
        return Value(kind="tensor", rank=rank, role=value.role, node=node, scaled=value.scaled)

    # ------------------------------------------------------------------ softmax
    def _softmax(self, call: cst.Call, input_node, ctor: Optional[cst.Call], form: str) -> Value:
        if input_node is None:
            return UNKNOWN
        if form == "method":
            value = self.eval(input_node)
            for arg in call.args:
                self.eval(arg.value)
            dim_arg = _arg(call, 0, "dim")
        elif form == "function":
            value = self.eval(input_node)
            for arg in call.args[1:]:
                self.eval(arg.value)
            dim_arg = _arg(call, 1, "dim")
        else:
            value = self.eval(input_node)
            dim_arg = _arg(ctor, 0, "dim") if ctor is not None else None
        dim, known = self._dim_value(dim_arg.value if dim_arg is not None else None, value)
        given = dim_arg is not None and not (isinstance(dim_arg.value, cst.Name) and dim_arg.value.value == "None")
        splatted = any(a.star for a in call.args) or (ctor is not None and any(a.star for a in ctor.args))
        if dim_arg is None and splatted:
            given, known = True, False  # `softmax(s, **kw)`: the dim may be in there
        if form == "module" and ctor is None:
            known = False
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
            function=self.facts.name,
        )
        if value.softmax is not None:
            value.softmax.renormalized = True  # a softmax of weights: alternating normalisation
        if id(call) not in self._softmax_by_node:
            self._softmax_by_node[id(call)] = site
            self.facts.softmax_sites.append(site)
        return Value(kind="tensor", rank=value.rank, role=WEIGHTS, softmax=site, feature_last=False, node=call)

    def _dim_value(self, node: Optional[cst.BaseExpression], value: Value) -> Tuple[Optional[int], bool]:
        if node is None:
            return None, True
        literal = _int_literal(node)
        if literal is not None:
            return literal, True
        # `x.dim() - 1`, `x.ndim - 1`, `len(x.shape) - 1`: the last axis, whatever the rank.
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Subtract):
            offset = _int_literal(node.right)
            if offset is not None and _is_rank_expr(node.left):
                return -offset, True
        return None, False


_DTYPE_METHODS = {
    "bool": "bool",
    "float": "float",
    "half": "float",
    "double": "float",
    "bfloat16": "float",
    "long": "int",
    "int": "int",
    "byte": "int",
    "short": "int",
}
_EMPTY_MODULE = cst.Module(body=[])


def _code(node: cst.CSTNode) -> str:
    return _EMPTY_MODULE.code_for_node(node)


def _dtype_of(node: cst.BaseExpression, aliases: Dict[str, str]) -> Optional[str]:
    qualified = qualify(node, aliases)
    if qualified is None and isinstance(node, cst.Name) and node.value in ("bool", "float", "int"):
        return node.value
    if qualified is None:
        return None
    name = qualified.rsplit(".", 1)[-1]
    if name == "bool":
        return "bool"
    if name.startswith(("float", "bfloat", "half", "double")):
        return "float"
    if name.startswith(("int", "long", "uint", "short")):
        return "int"
    return None


# Facts about the data (not the layout) that survive a reshape.
_DATA_EXTRAS = ("padded", "padding_value", "padding_node", "lengths", "param", "buffer")


def _kept_extras(value: Value) -> tuple:
    return tuple((k, v) for k, v in value.extra if k in _DATA_EXTRAS)


def _is_false(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value in ("False", "None")


def _names_pad(node: cst.BaseExpression) -> bool:
    """`PAD`, `pad_id`, `self.pad_token_id`, `tokenizer.pad_token_id`, `padding_idx`."""
    from attnlint.analysis.names import words

    name = node.attr.value if isinstance(node, cst.Attribute) else getattr(node, "value", None)
    return isinstance(name, str) and any(w in ("pad", "padding") for w in words(name))


def _names_lengths(name: str) -> bool:
    from attnlint.analysis.names import words

    return any(w in ("len", "lens", "lengths", "length", "seqlens") for w in words(name)) and not name.isupper()


def _is_lengths(value: Value) -> bool:
    return value.get_extra("lengths") is True


def _self_weight_owners(node: cst.CSTNode) -> List[str]:
    """Attributes X of every `self.X.weight` (or `.bias`) inside an expression."""
    found = []
    if isinstance(node, cst.Attribute) and node.attr.value in ("weight", "bias"):
        owner = node.value
        if isinstance(owner, cst.Attribute) and isinstance(owner.value, cst.Name) and owner.value.value == "self":
            found.append(owner.attr.value)
    for child in node.children:
        found.extend(_self_weight_owners(child))
    return found


def _mentions_size(node: cst.CSTNode) -> bool:
    if isinstance(node, cst.Attribute) and node.attr.value in ("shape", "size"):
        return True
    return any(_mentions_size(child) for child in node.children)


def block_statements(block) -> List[cst.CSTNode]:
    """The statements of a block; a one-line body (`if x: y = 1`) as one simple statement line."""
    if isinstance(block, cst.SimpleStatementSuite):
        return [cst.SimpleStatementLine(body=block.body)]
    return list(block.body)


def _walk_nodes(node: cst.CSTNode):
    yield node
    for child in node.children:
        yield from _walk_nodes(child)


def _cuts_key_axis(elements, rank: Optional[int], removed: int, rank_known: bool) -> bool:
    """Does this subscript cut the mask down along its last (key) axis?

    `m[:T, :T]`, `m[..., :T, :T]`, `m[:, :, start:end, :end]` do; `m[:, :, :T]` on a 4-D buffer
    leaves the keys at full length and does not. An index by a tensor (`m[None, None, pos]`, a
    KV-cache gather) or by an integer counts as cut: the analysis cannot follow the shape.
    """
    if removed or not rank_known:
        return True

    def bounded(element) -> bool:
        inner = element.slice
        return isinstance(inner, cst.Slice) and (inner.lower is not None or inner.upper is not None)

    if rank is None:
        return any(bounded(e) for e in elements)
    items = [
        e
        for e in elements
        if not (
            isinstance(e.slice, cst.Index) and isinstance(e.slice.value, cst.Name) and e.slice.value.value == "None"
        )
    ]
    ellipsis = [
        i for i, e in enumerate(items) if isinstance(e.slice, cst.Index) and isinstance(e.slice.value, cst.Ellipsis)
    ]
    if ellipsis:
        after = items[ellipsis[0] + 1 :]
        return bool(after) and bounded(after[-1])
    if len(items) < rank:
        return False  # the trailing axes, the keys among them, are untouched
    return bounded(items[rank - 1])


def _escape(values: Sequence[Value]) -> None:
    """Weights handed to code we cannot see may be renormalised there: not plain attention."""
    for value in values:
        if value.softmax is not None:
            value.softmax.renormalized = True


def _is_rank_expr(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "dim":
        return not node.args
    if isinstance(node, cst.Attribute) and node.attr.value == "ndim":
        return True
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "len" and node.args:
        inner = node.args[0].value
        return isinstance(inner, cst.Attribute) and inner.attr.value == "shape"
    return False


def _tensorish(value: Value) -> bool:
    return value.kind == "tensor" or value.role is not None or value.scores is not None


def _owner_name(node) -> Optional[str]:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
        return "self." + node.attr.value
    return None


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


def _split_count(method: str, args, values: List[Value]) -> Optional[int]:
    if method == "unbind":
        return None  # count depends on the size of the axis: bound by the unpacking target
    if method == "chunk" and args:
        return _int_literal(args[0].value)
    if method in ("split", "tensor_split") and args and isinstance(args[0].value, (cst.List, cst.Tuple)):
        return len(args[0].value.elements)
    return None
