"""The flow machinery: statements, branches, joins, binding, and the expressions every domain
shares (names, attributes, subscripts, arithmetic, comprehensions). Calls are looked up in the
tables of :mod:`.handlers`, which the domain modules fill.

Statements are evaluated in order over an environment of abstract values (:mod:`.values`).
Branches are evaluated on copies and joined, so a fact survives only if it holds on every path;
loops are evaluated once and joined with the state before them (they may not run). Whatever the
pass cannot evaluate becomes unknown, and unknown facts never produce findings.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Dict, List, Optional, Sequence, Tuple

import libcst as cst

from attnlint.analysis import attention_flags, handlers, masks, shapes
from attnlint.analysis.names import Subtree, child_nodes, literal
from attnlint.analysis.dropout import DropoutSite
from attnlint.analysis.calls import argument as _arg
from attnlint.analysis.handlers import Call
from attnlint.analysis.names import binds, canonical, qualify, role_from_name, words
from attnlint.analysis.symbolic import ONE, Sym, from_float
from attnlint.analysis.values import (
    CallerScope,
    UNKNOWN,
    AttentionCallSite,
    Axis,
    FillSite,
    LossSite,
    MaskUseSite,
    Padding,
    SoftmaxSite,
    Value,
    ViewSite,
    join,
)

Env = Dict[str, Value]


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
    # A method of another class defined here (`self.attn(x)` -> Attn.forward, `Trainer(...)` ->
    # Trainer.__init__); None: a function, or a method of the caller's own class.
    callee_class: Optional[str] = None

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
    # Fills of attention weights after their softmax (`attn.masked_fill(rows_without_keys, 0.0)`):
    # guards or masks of the weights, not of the scores, so kept apart from `fill_sites`.
    weight_fills: List[FillSite] = field(default_factory=list)
    mask_uses: List[MaskUseSite] = field(default_factory=list)
    # Masks handed under a mask keyword to a layer the analysis does not know (another library's
    # attention), with api "unknown" and no convention expected: kept apart from `mask_uses`.
    mask_handoffs: List[MaskUseSite] = field(default_factory=list)
    attention_calls: List[AttentionCallSite] = field(default_factory=list)
    loss_sites: List[LossSite] = field(default_factory=list)
    view_sites: List[ViewSite] = field(default_factory=list)
    returns: List[Value] = field(default_factory=list)
    params: Dict[str, Value] = field(default_factory=dict)
    param_nodes: Dict[str, cst.Param] = field(default_factory=dict)
    # Every name the body reads or writes (a parameter absent from it is never used).
    used_names: set = field(default_factory=set)
    # An `assert` on a tensor's size or shape: the code pins lengths itself.
    length_checked: bool = False
    calls: List["CallSite"] = field(default_factory=list)
    # The environment at the end of the body (names in scope and what they hold).
    final_env: Dict[str, Value] = field(default_factory=dict)
    # Functional dropout calls (attnlint.analysis.dropout).
    dropout_sites: List[DropoutSite] = field(default_factory=list)
    # Whether this reading described a score product: the only facts that read what the
    # callers have in scope (CallerScope), so the only readings a change of it can change.
    reads_caller_scope: bool = False

    def masks_into_attention(self) -> set:
        """The mask parameters that reach a fill or an attention API's mask argument here."""
        reached = set()
        for site in list(self.fill_sites) + list(self.mask_uses):
            facts = site.mask.mask
            if facts is not None and facts.param:
                reached.add(facts.param)
            if facts is not None:
                reached.update(facts.parts_from)  # `causal & attention_mask[:, None, None, :]`
            # What the code writes, whatever the callers analysed pass: a refined reading in
            # which no caller passes `mask` (bound to its default None) still fills with it.
            root = mask_root(site.mask_node)
            if root is not None and root in self.params and masks.is_mask_param(root):
                reached.add(root)
        for call in self.attention_calls:
            reached.update(k for k in call.mask_keywords if k in self.params and masks.is_mask_param(k))
        return reached

    def computes_attention(self) -> bool:
        """Hand-written attention here: a softmax of Q·Kᵀ scores, or of any scores whose weights
        are then summed against values (additive attention, `bmm(w.view(b, 1, n), memory)`)."""
        return any(s.input.scores is not None or s.weighs_values for s in self.softmax_sites)

    def is_drop_in_layer(self) -> bool:
        """A forward with the parameters of an nn.Transformer*Layer: a drop-in replacement that
        containers call with masks its own use may never set."""
        params = list(self.params)
        return any(params[: len(sig)] == list(sig) for sig in _TORCH_LAYER_SIGNATURES)


def _torch_module_class(node: Optional[cst.BaseExpression], aliases) -> Optional[str]:
    """`nn.LayerNorm` written as a default: the qualified torch.nn class, else None."""
    if not isinstance(node, (cst.Attribute, cst.Name)):
        return None
    built = canonical(qualify(node, aliases))
    if built is None or not built.startswith("torch.nn.") or not built.rsplit(".", 1)[-1][:1].isupper():
        return None
    return built


def mask_root(node: Optional[cst.CSTNode]) -> Optional[str]:
    """The name a mask expression starts from through `~`, `not`, indexing, attribute reads and
    method calls (`~mask[:, None, :].bool()` -> mask), if it is one name."""
    while node is not None:
        if isinstance(node, cst.Name):
            return node.value
        if isinstance(node, cst.UnaryOperation):
            node = node.expression
        elif isinstance(node, cst.Subscript):
            node = node.value
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            node = node.func.value
        else:
            return None
    return None


@dataclass
class ClassFacts:
    name: str
    node: cst.ClassDef
    attrs: Env = field(default_factory=dict)
    forward_params: Tuple[str, ...] = ()
    bases: Tuple[str, ...] = ()  # base class names as written (last dotted part)
    # The numbers callers pass to `__init__`'s size parameters (atom key -> value), seen by
    # every method (see Evaluator.size_examples).
    size_examples: Dict[str, Sym] = field(default_factory=dict)
    # What the callers of `__init__` know of the sizes they pass (see CallerScope), seen by
    # every method: `temperature=d_model ** 0.5` is a model width where the caller built it.
    caller_scope: CallerScope = field(default_factory=lambda: CallerScope())


# The key suffix of the size of an axis unpacked as `_` (`b, _, n, _ = x.shape`).
UNNAMED_SIZE = "#unnamed"


def _reads_one_size(node: cst.BaseExpression) -> bool:
    """`x.shape[1]`, `x.size(1)`, `x.size()[1]`: one axis's size read from a tensor."""
    if isinstance(node, cst.Subscript) and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
        inner = node.value
        if isinstance(inner, cst.Attribute) and inner.attr.value == "shape":
            return True
        if isinstance(inner, cst.Call) and isinstance(inner.func, cst.Attribute) and inner.func.attr.value == "size":
            return not inner.args
        return False
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "size":
        return len(node.args) == 1
    return False


def int_literal(node: Optional[cst.BaseExpression]) -> Optional[int]:
    if isinstance(node, cst.Integer):
        return int(literal(node))
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = int_literal(node.expression)
        return None if inner is None else -inner
    return None


def is_simple(node: Optional[cst.CSTNode]) -> bool:
    """A name or attribute chain: safe to repeat in a fix."""
    if isinstance(node, cst.Name):
        return True
    if isinstance(node, cst.Attribute):
        return is_simple(node.value)
    return False


_EMPTY_MODULE = cst.Module(body=[])


def code(node: cst.CSTNode) -> str:
    return _EMPTY_MODULE.code_for_node(node)


class Evaluator:
    def __init__(
        self,
        facts: FunctionFacts,
        aliases: Dict[str, str],
        class_facts: Optional[ClassFacts],
        record_attrs: bool = False,
        class_names: frozenset = frozenset(),
        constants: Optional[Env] = None,
        project=None,
        depth: int = 0,
        caller_scope: Optional[CallerScope] = None,
        function_names: frozenset = frozenset(),
        calling: Optional[cst.Call] = None,
    ) -> None:
        handlers.load_domains()
        # The module's functions, for an evaluation without summaries (the module's first
        # reading of its top level): a name of one refers to it.
        self.function_names = function_names
        self.facts = facts
        self.aliases = aliases
        self.cls = class_facts
        self.class_names = class_names  # classes defined in this file (user modules)
        self.constants = constants or {}  # module-level constants (`PAD_IDX = 0`)
        self.record_attrs = record_attrs  # __init__: `self.x = ...` becomes a class fact
        self.project = project  # interprocedural summaries (see summaries.Summaries), or None
        self.depth = depth  # how many summaries deep this evaluation is
        # For a summary: the call it is read for (what that call binds is this reading's own).
        self.calling = calling
        self.env: Env = {}
        self.declared_ranks: Dict[str, object] = {}
        # Locals bound once whose rank a later straight-line statement shows (shapes.ranks_the_body_shows).
        self.shown_ranks: Dict[str, int] = {}
        self.softmax_by_node: Dict[int, SoftmaxSite] = {}
        self.dot_t_by_node: Dict[int, DotTSite] = {}
        # Sizes read from tensors whose shape is not known (`x.shape[-1]`): one atom per tensor
        # value and axis, so two reads agree. The value is kept alive with its atom.
        self._read_sizes: Dict[Tuple[int, int], Tuple[Value, Sym]] = {}
        # Atoms the code shows equal to another size (keys: atom keys).
        self.equalities: Dict[str, Sym] = {}
        # Attributes read as numbers (`self.head_dim`, `config.hidden_size`) and their values.
        self.read_attributes: Dict[str, Sym] = {}
        # The name the statement being evaluated binds a single size read to (see read_size).
        self._size_name: Optional[str] = None
        # Numbers the callers pass for size parameters (`Attention(64, heads=8)`), by atom key.
        # The parameter keeps its name (an example is not the function's contract); the number
        # only decides what the names cannot (see scores.scale_verdict).
        self.size_examples: Dict[str, Sym] = dict(class_facts.size_examples) if class_facts is not None else {}
        self.caller_scope = caller_scope or CallerScope()
        if class_facts is not None:
            self.caller_scope = self.caller_scope | class_facts.caller_scope
        for key, example in self.caller_scope.size_examples:
            self.size_examples.setdefault(key, example)
        scope = facts.name if facts.class_name is None else f"{facts.class_name}.{facts.name}"
        self.scope = scope

    # ------------------------------------------------------------------ atoms
    def learn_equal(self, size: Optional[Sym], known: Optional[Sym]) -> None:
        """`x` of last size C goes into `nn.Linear(dim, ...)`: C is `dim` from here on."""
        if size is None or known is None or size == known or len(size.factors) != 1 or size.coeff != 1:
            return
        atom, exp = size.factors[0]
        if exp != 1 or atom.key in self.equalities:
            return
        resolved = self.resolve(known)
        if resolved is not None and atom not in resolved.atoms():
            self.equalities[atom.key] = resolved

    def resolve(self, sym: Optional[Sym]) -> Optional[Sym]:
        if sym is None or not self.equalities:
            return sym
        for _ in range(3):
            new = sym.substitute(self.equalities)
            if new is None or new == sym:
                return new
            sym = new
        return sym

    def names_for(self, size: Optional[Sym]) -> Tuple[str, ...]:
        """Expressions in scope that hold `size` (`self.head_dim`, `d_k`), to write in a fix."""
        if size is None or size.is_const:
            return ()
        target = self.resolve(size)
        found = []
        for name, value in self.env.items():
            if value.kind in ("scalar", "unknown", "tensor") and value.rank is None and value.sym is not None:
                if not value.role and not value.mask and self.resolve(value.sym) == target and name.isidentifier():
                    found.append(name)
        for text, sym in self.read_attributes.items():
            if self.resolve(sym) == target and text not in found:
                found.append(text)
        if self.cls is not None:
            for attr, value in self.cls.attrs.items():
                if (
                    value.sym is not None
                    and value.rank is None
                    and not value.role
                    and self.resolve(value.sym) == target
                ):
                    found.append("self." + attr)
        return tuple(found)

    # ------------------------------------------------------------------ atoms (reading)
    def atom(self, name: str) -> Sym:
        """A quantity of this scope the analysis cannot reduce (`dim` of `__init__`)."""
        return Sym.atom(f"{self.scope}:{name}", name)

    def read_size(self, value: Value, axis: int, owner_node=None) -> Optional[Sym]:
        """The size of `axis` of `value`: from its shape, else an atom for this tensor's axis."""
        size = value.size_of(axis)
        if size is not None:
            return size
        if value.kind == "unknown" and value.node is None:
            return None
        rank = value.rank
        if rank is not None and axis < 0:
            axis += rank
        key = (id(value), axis)
        if key not in self._read_sizes:
            text = f"{code(owner_node)}.shape[{axis}]" if owner_node is not None else f"size[{axis}]"
            # Named as the statement names it (`src_len = x.shape[1]`); the key stays the read's.
            name = self._size_name if self._size_name is not None else text
            self._read_sizes[key] = (value, Sym.atom(f"{self.scope}:{text}#{len(self._read_sizes)}", name))
        atom = self._read_sizes[key][1]
        # `seq_len = x.size(1)` names a size x's shape lacks: x carries it from here on.
        owner = owner_name(owner_node) if owner_node is not None else None
        current = self.env.get(owner) if owner is not None else None
        if current is not None and current.shape is not None and 0 <= axis < len(current.shape):
            if current.shape[axis].size is None:
                shape = tuple(replace(a, size=atom) if i == axis else a for i, a in enumerate(current.shape))
                self.env[owner] = current.with_(shape=shape)
        return atom

    # ------------------------------------------------------------------ parameters
    def bind_params(
        self,
        params: cst.Parameters,
        bindings: Optional[Dict[str, Value]] = None,
        caller_context: bool = False,
        one_call: bool = False,
    ) -> None:
        """Bind each parameter to what its name, annotation and default say, refined by what the
        callers pass (`bindings`, see summaries) when they say more.

        In a caller context (the function analysed again for what its callers pass, not a
        summary evaluated for one call), a size the callers pass as a number (`Attention(64, 8)`
        in a smoke test) is an example: the parameter keeps its name, so `dim ** -0.5` stays the
        model width and `dim // heads` the head dim, and the number is kept as an example.

        For `one_call` (a summary evaluated for one call), a parameter the call leaves out holds
        its default: `def collate(batch, pad_id=Config.pad_token_id)` called by a DataLoader
        with the batch alone pads with that number."""
        from attnlint.analysis.summaries import informative_binding, merge_into_param, same_quantity

        every = list(params.posonly_params) + list(params.params) + list(params.kwonly_params)
        embedded, padded, negated, shown, shown_at_binding = self._body_facts(every)
        for param in every:
            name = param.name.value
            if name in ("self", "cls"):
                continue
            annotation = param.annotation.annotation if param.annotation is not None else None
            if (
                one_call
                and name not in (bindings or {})
                and isinstance(param.default, cst.Name)
                and param.default.value == "None"
            ):
                # Left out by the call: None on this reading (`attend(q, k, v)` of `def attend(q,
                # k, v, scale=None)`: `if scale is not None` is decided).
                value = Value(kind="scalar", is_none=True, node=param.name, param=name)
                self.env[name] = value
                self.facts.params[name] = value
                self.facts.param_nodes[name] = param
                continue
            if isinstance(annotation, cst.Name) and annotation.value in self.class_names:
                # `config: ModelConfig`: an instance of a class defined here.
                value = Value(kind="module", module_type=annotation.value, user_class=True, node=param.name, param=name)
                if bindings and informative_binding(bindings, name):
                    value = merge_into_param(value, bindings[name])
                self.env[name] = value
                self.facts.params[name] = value
                self.facts.param_nodes[name] = param
                continue
            config_class = None if annotation is not None else self._config_class_of(name)
            if config_class is not None and not (bindings and name in bindings):
                # Unannotated, read only for fields of one configuration class of the module
                # (`config.n_embd`, `config.head_size` of the only class declaring both).
                value = Value(kind="module", module_type=config_class, user_class=True, node=param.name, param=name)
                self.env[name] = value
                self.facts.params[name] = value
                self.facts.param_nodes[name] = param
                continue
            shape = None
            rank = None
            if param.annotation is not None:
                letters = shapes.annotation_dims(param.annotation.annotation)
                if letters is not None:
                    shape = tuple(Axis(self.atom(letter), shapes.role_of_dim_name(letter)) for letter in letters)
                    rank = len(shape)
            default = self.eval(param.default) if param.default is not None else None
            value = Value(
                kind="tensor",
                rank=rank,
                shape=shape,
                role=role_from_name(name),
                scaled=False,
                scale=ONE,
                node=param.name,
                feature_last=None,
                mask=masks.from_param(name, negated=name in negated),
                param=name,
                lengths=_names_lengths(name),
                sym=self.atom(name),
                token_ids=name in embedded,
                padding=Padding(value=None) if name in padded else None,
                # `norm_layer=nn.LayerNorm` (timm's idiom): calling it builds that module, unless
                # the callers analysed pass another (their binding replaces this).
                function=_torch_module_class(param.default, self.aliases),
            )
            if value.mask is not None and value.mask.convention is None and isinstance(self.facts.node, cst.FunctionDef):
                # What the function's own docstring says True means for it (`True at padding`).
                documented = masks.documented_convention(self.facts.node, name)
                if documented is not None:
                    value = value.with_(mask=replace(value.mask, convention=documented, dtype="bool"))
            if (default is not None and default.kind == "scalar" and default.int_value is not None) or (
                isinstance(annotation, cst.Name) and annotation.value == "int"
            ):
                # An int parameter (`heads=8`, `hidden_dim: int`): a size, not a tensor.
                value = value.with_(kind="scalar", int_value=None)
                if (
                    default is not None
                    and default.int_value is not None
                    and one_call
                    and name not in (bindings or {})
                    and not _is_bool_literal(param.default)
                ):
                    # Left out by the call: the number itself (its name stays its size atom).
                    value = value.with_(int_value=default.int_value, token_id=default.token_id)
            if bindings and name in bindings and (
                informative_binding(bindings, name) or (caller_context and same_quantity(name, bindings[name]))
            ):
                merged = merge_into_param(value, bindings[name])
                if one_call and bindings[name].scores is not None:
                    # Evaluated for one call, the helper sees that caller's product as such (its
                    # scale: d2l's `masked_softmax(scores, valid_lens)`); a helper's own reading
                    # (every caller at once) does not.
                    merged = merged.with_(scores=bindings[name].scores)
                # The caller's number (`int_value` also travels with a caller's own size
                # parameter: `Head(head_size)` inside a module its callers build with 16).
                example = merged.int_value if caller_context and merged.kind == "scalar" else None
                if example is not None and example >= 2 and value.sym is not None:
                    # A size the caller names (its own `n_embed`, given 32 by a smoke test) stays
                    # the caller's name, so that it matches the other sizes the caller derives
                    # from it (`n_embed // n_head`); a number written in the call becomes an
                    # example of the parameter's own size.
                    named = merged.sym is not None and not merged.sym.is_const and len(merged.sym.factors) == 1
                    if not named:
                        merged = merged.with_(sym=value.sym)
                    key = (merged.sym if named else value.sym).factors[0][0].key
                    example = Sym.const(example)
                    self.size_examples[key] = example
                    if self.record_attrs and self.cls is not None:
                        self.cls.size_examples[key] = example
                value = merged
            elif (_losses().names_loader(name) or _losses().names_batch(name)) and param.default is None:
                # A loader handed in from outside yields the batches of the module's own collate
                # function, when it has exactly one (see losses.module_collate_batch); a batch
                # handed in is one of them.
                batch = _losses().module_collate_batch(self)
                if batch is not None and _losses().names_loader(name):
                    value = Value(kind="tuple", each=batch, node=param.name, param=name)
                elif batch is not None:
                    value = batch.with_(node=param.name, param=name)
            shown_rank = shown.pop(name, None)
            if value.rank is None and shown_rank is not None and value.kind in ("tensor", "unknown"):
                # Its sizes unknown yet: `n = x.size(1)` names one (see read_size).
                value = value.with_(rank=shown_rank, shape=tuple(Axis() for _ in range(shown_rank)))
            self.env[name] = value
            self.facts.params[name] = value
            self.facts.param_nodes[name] = param
        self.shown_ranks = shown_at_binding

    def _config_class_of(self, name: str) -> Optional[str]:
        """The configuration class a parameter is an instance of by the fields the function reads
        from it: two or more attributes (`config.n_embd`, `config.n_head`), each declared with an
        annotation in the body of exactly one class of the module (a dataclass-style config).
        Only the attributes read count; what else is done with it (passed on, indexed) does not."""
        node = self.facts.node
        summaries = self.project
        if not isinstance(node, cst.FunctionDef) or summaries is None or not summaries.declared_fields():
            return None
        read = summaries.attributes_read(node).get(name, frozenset())
        if len(read) < 2:
            return None
        owners = [
            cls
            for cls, declared in summaries.declared_fields().items()
            if read <= declared
        ]
        return owners[0] if len(owners) == 1 else None

    def _body_facts(self, every) -> tuple:
        """What the function's text alone shows of its parameters, read once per function and
        module however many calls are summarised (copies: the caller consumes them)."""
        node = self.facts.node
        cache = self.project.body_facts if self.project is not None else None
        cached = cache.get(id(node)) if cache is not None else None
        if cached is None or cached[0] is not node:
            # Parameters the body hands to an nn.Embedding hold integer ids (see masks.embedded_names).
            body = getattr(node, "body", None) if isinstance(node, cst.FunctionDef) else None
            # One walk of the body answers every question below.
            subtree = Subtree(body) if body is not None else None
            embedded = masks.embedded_names(body, self.cls, self.aliases, subtree) if body is not None else set()
            # Token ids the function embeds and itself tests against the pad id are a padded batch
            # (what their padding holds is the pad id, a number it does not show here).
            padded = embedded & masks.compared_with_pad(body) if embedded else set()
            negated = masks.negated_names(body, subtree) if body is not None else set()
            # Ranks the body's straight-line code shows (`b, n, d = x.shape` after the product).
            shown, shown_at_binding = (
                shapes.ranks_the_body_shows(node, [p.name.value for p in every], subtree)
                if isinstance(node, cst.FunctionDef)
                else ({}, {})
            )
            cached = (node, frozenset(embedded), frozenset(padded), frozenset(negated), shown, shown_at_binding)
            if cache is not None:
                cache[id(node)] = cached
        _, embedded, padded, negated, shown, shown_at_binding = cached
        return set(embedded), set(padded), set(negated), dict(shown), dict(shown_at_binding)

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
            if _is_main_guard(stmt.test) and stmt.orelse is None:
                # `if __name__ == "__main__":` runs when the file is a script: straight-line code.
                self.run(block_statements(stmt.body))
                return
            feasible = self._none_test(stmt.test, stmt)
            if feasible is None:
                feasible = self._rank_test(stmt.test)
            test = stmt.test
            if feasible is None and self.calling is not None and attention_flags.is_none_test(test):
                # A summary is one call: a parameter it leaves at None decides `if scale is not
                # None:` / `if exists(scale):` (the test is evaluated here, once).
                feasible, test = self.eval(test).truth, None
            self._branches([block_statements(stmt.body), self._else_body(stmt.orelse)], test=test, feasible=feasible)
        elif isinstance(stmt, (cst.For, cst.While)):
            if isinstance(stmt, cst.For):
                iterated = self.eval(stmt.iter)
                self._bind(stmt.target, self.element_of(iterated))
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
        elif isinstance(stmt, cst.FunctionDef) and isinstance(self.facts.node, cst.Module):
            # A module function: its name refers to it (`FUNCTIONS = {"eager": eager_forward}`).
            self.env.pop(stmt.name.value, None)
        elif isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            self.env[stmt.name.value] = UNKNOWN  # analysed on its own
        elif isinstance(stmt, cst.Match):
            self.eval(stmt.subject)
            # Each case is a path; a case may also not match at all.
            self._branches([block_statements(case.body) for case in stmt.cases] + [[]])
        else:  # anything newer: forget every name the statement may bind
            self._forget_bound_names(stmt)

    def _rank_test(self, test: cst.BaseExpression) -> Optional[bool]:
        """`x.ndim == 4`, `x.dim() != 3`, `len(x.shape) in (3, 4)` on a local of known rank:
        decided."""
        if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
            return None
        holder = shapes.rank_read(test.left)
        value = self.env.get(holder) if holder is not None else None
        if value is None or value.kind != "tensor" or value.rank is None:
            return None
        comparison = test.comparisons[0]
        operator, right = comparison.operator, comparison.comparator
        if isinstance(operator, (cst.In, cst.NotIn)) and isinstance(right, (cst.Tuple, cst.List)):
            numbers = [int_literal(e.value) for e in right.elements]
            if None in numbers:
                return None
            return (value.rank in numbers) == isinstance(operator, cst.In)
        number = int_literal(right)
        compare = {
            cst.Equal: lambda a, b: a == b,
            cst.NotEqual: lambda a, b: a != b,
            cst.LessThan: lambda a, b: a < b,
            cst.LessThanEqual: lambda a, b: a <= b,
            cst.GreaterThan: lambda a, b: a > b,
            cst.GreaterThanEqual: lambda a, b: a >= b,
        }.get(type(operator))
        if number is None or compare is None:
            return None
        return compare(value.rank, number)

    def _none_test(self, test: cst.BaseExpression, stmt: Optional[cst.If] = None) -> Optional[bool]:
        """`x is None` (True) / `x is not None` (False) when x is known to be None; else None.

        Only for the default-filling idiom, where the path taken when x is None binds x itself
        (`if head_dim is None: head_dim = dim // heads`): a parameter left at None by this file's
        calls is still an input other callers pass (`if attention_mask is not None: ...` must keep
        the path that uses the mask)."""
        if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
            return None
        target = test.comparisons[0]
        if not (isinstance(target.comparator, cst.Name) and target.comparator.value == "None"):
            return None
        if not isinstance(test.left, cst.Name):
            return None
        value = self.env.get(test.left.value, UNKNOWN)
        if not (value.is_none and value.param is not None):
            return None  # only a parameter's None: a local None may be reassigned in a loop
        if isinstance(target.operator, cst.Is):
            verdict = True
        elif isinstance(target.operator, cst.IsNot):
            verdict = False
        else:
            return None
        if stmt is not None:
            taken = block_statements(stmt.body) if verdict else self._else_body(stmt.orelse)
            if not any(binds(s, test.left.value) for s in taken):
                return None
        return verdict

    def _else_body(self, orelse) -> Sequence[cst.CSTNode]:
        if orelse is None:
            return []
        if isinstance(orelse, cst.If):
            return [orelse]
        return block_statements(orelse.body)

    def _forget_bound_names(self, stmt: cst.CSTNode) -> None:
        for node in walk_nodes(stmt):
            if isinstance(node, cst.Name) and node.value in self.env:
                self.env[node.value] = UNKNOWN

    def _branches(
        self,
        bodies: List[Sequence[cst.CSTNode]],
        test: Optional[cst.BaseExpression] = None,
        feasible: Optional[bool] = None,
    ) -> None:
        """Each body from the same state, then the join of their ends. `feasible` (an if/else
        whose test is known: True, the body runs; False, the else) keeps only that path's end;
        the other is still analysed, so that the function's own sites there are seen."""
        if test is not None:
            self.eval(test)
        if feasible is not None and len(bodies) == 2 and self.depth > 0:
            # A summary is one call: the path its arguments rule out does not run (a view on the
            # 3-D branch of `if beta.ndim == 4:` given a 4-D beta is no view of that call).
            self.run(bodies[0] if feasible else bodies[1])
            return
        start = dict(self.env)
        ends = []
        for body in bodies:
            self.env = dict(start)
            self.run(body)
            ends.append(self.env)
        if feasible is not None and len(ends) == 2:
            ends = [ends[0] if feasible else ends[1]]
        self._merge(ends)

    def _merge(self, envs: List[Env]) -> None:
        keys = set().union(*envs)
        merged: Env = {}
        for key in keys:
            # A name bound on some paths only is unbound on the others (a read there raises), and
            # an attribute set on some paths only does not exist on the others: wherever it is
            # read, it holds what those paths bound (`masked = logits.masked_fill(...)` under two
            # `if`s, then `return masked`; `if causal: self.register_buffer(...)`).
            present = [env for env in envs if key in env]
            value = present[0].get(key)
            for other in present[1:]:
                value = join(value, other.get(key)) if value is not other.get(key) else value
            merged[key] = value if value is not None else UNKNOWN
        self.env = merged

    def small_statement(self, small: cst.BaseSmallStatement) -> None:
        if isinstance(small, cst.Assign):
            targets = small.targets
            if len(targets) == 1 and isinstance(targets[0].target, cst.Name) and _reads_one_size(small.value):
                # `src_len = encoder_outputs.shape[1]`: a size read for the first time here is
                # called what the code calls it (its name says what the axis holds).
                self._size_name = targets[0].target.value
            try:
                value = self.eval(small.value)
            finally:
                self._size_name = None
            for target in small.targets:
                self._bind(target.target, value)
        elif isinstance(small, cst.AnnAssign):
            if small.value is not None:
                value = self.eval(small.value)
                letters = shapes.annotation_dims(small.annotation.annotation)
                if letters is not None and value.rank is None:
                    value = value.with_(rank=len(letters))
                self._bind(small.target, value)
        elif isinstance(small, cst.AugAssign):
            current = self.eval(small.target)
            operand = self.eval(small.value)
            op = small.operator
            if isinstance(op, (cst.MultiplyAssign, cst.DivideAssign)):
                from attnlint.analysis import scores

                divides = isinstance(op, cst.DivideAssign)
                factor = _factor(operand, divides)
                result = scores.scaled(current, factor, small, factor_node=small.value, divides=divides)
                self._bind(small.target, result, name_roles=False)
            elif isinstance(op, (cst.AddAssign, cst.SubtractAssign)):
                self._bind(
                    small.target,
                    masks.add_terms(self, current, operand, small, small.target, small.value),
                    name_roles=False,
                )
            else:
                self._bind(small.target, UNKNOWN)
        elif isinstance(small, cst.Expr):
            self.eval(small.value)
            for site in self.facts.fill_sites + self.facts.weight_fills:
                if site.call is small.value and not site.in_place:
                    # `scores.masked_fill(mask, -inf)` as a statement: the filled copy is thrown
                    # away and the scores stay unmasked. The tensor carries the lost fill to
                    # wherever it is used (a softmax over logits of any kind).
                    site.discarded = True
                    owner = owner_name(site.receiver_node)
                    if owner is not None and owner in self.env:
                        held = self.env[owner]
                        self.env[owner] = held.with_(dropped_fills=held.dropped_fills + (site,))
            if self.record_attrs and self.cls is not None:
                from attnlint.analysis import modules

                modules.note_custom_init(self, small.value)
        elif isinstance(small, cst.Assert):
            self.eval(small.test)
            if _mentions_size(small.test):
                self.facts.length_checked = True
        elif isinstance(small, cst.Return):
            if small.value is not None:
                value = self.eval(small.value)
                self.facts.returns.append(value)
                for part in (value,) + value.elements:
                    if part.softmax is not None:
                        part.softmax.guard_uses.append(part.guarded)

    # ------------------------------------------------------------------ comments
    def shape_comment(self, comment: str) -> None:
        for names, dims in shapes.named_shape_comments(comment):
            self._named_shape(names, dims)

    def _named_shape(self, names, dims) -> None:
        for name in names:
            if name in self.env:
                current = self.env[name]
                if current.rank is None or (current.rank == len(dims) and current.shape is None):
                    self.env[name] = current.with_(rank=len(dims), shape=self._comment_shape(dims))
                elif current.shape is not None and len(current.shape) == len(dims):
                    # Sizes from the data flow; what each axis holds from the comment.
                    commented = self._comment_shape(dims)
                    merged = tuple(
                        Axis(a.size if a.size is not None else c.size, a.role or c.role)
                        for a, c in zip(current.shape, commented)
                    )
                    self.env[name] = current.with_(shape=merged)
            else:
                self.declared_ranks[name] = dims

    def _comment_shape(self, dims):
        return tuple(
            Axis() if d is None else Axis(Sym.const(int(d))) if d.isdigit() else Axis(self.atom(d), shapes.role_of_dim_name(d))
            for d in dims
        )

    def _trailing_shape_comment(self, stmt: cst.SimpleStatementLine, comment: str) -> None:
        if shapes.named_shape_comments(comment):
            self.shape_comment(comment)
            return
        dims = shapes.bare_shape_comment(comment)
        if dims is None or len(stmt.body) != 1 or not isinstance(stmt.body[0], cst.Assign):
            return
        targets = stmt.body[0].targets
        if len(targets) == 1 and isinstance(targets[0].target, cst.Name):
            name = targets[0].target.value
            if name in self.env and self.env[name].rank is None:
                self.env[name] = self.env[name].with_(rank=len(dims), shape=self._comment_shape(dims))

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
                value = value.with_(rank=len(declared), shape=self._comment_shape(declared))
            shown = self.shown_ranks.get(name)
            if value.rank is None and shown is not None and value.kind in ("tensor", "unknown"):
                # Bound once; a later statement shows its rank (its sizes: see read_size).
                value = value.with_(rank=shown, shape=tuple(Axis() for _ in range(shown)))
            if (
                name_roles
                and value.mask is None
                and value.kind in ("tensor", "unknown")
                and value.scores is None
                # A -inf bias built by a fill (`attention_mask = zeros.masked_fill_(m, -inf)`) is
                # no 0/1 mask, whatever the name it is stored under says.
                and value.additive_fill is None
            ):
                named = masks.from_local_name(name)  # `padding_mask = ...`: the name tells, when nothing else does
                if named is not None and (named.convention is not None or named.can_mask_whole_row):
                    dtype = named.dtype or ("bool" if _makes_bool(value.node) else None)
                    value = value.with_(mask=replace(named, origin="name", param=None, dtype=dtype))
            if value.kind in ("unknown",) and value.sym is None and value.rank is None and value.scores is None:
                value = value.with_(sym=self.atom(name))  # a number computed somewhere we cannot see
            self.env[name] = value
        elif isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self":
            attr = target.attr.value
            if name_roles and value.role is None and value.kind in ("tensor", "unknown"):
                role = role_from_name(attr)
                if role is not None:
                    value = value.with_(role=role)
            if value.sym is None and value.kind == "unknown" and value.rank is None:
                value = value.with_(sym=Sym.atom(f"{self.cls.name if self.cls else ''}.self.{attr}", f"self.{attr}"))
            if self.record_attrs and value.mask is not None and value.mask.built_size and not value.mask.buffer_attr:
                # `self.mask = torch.tril(...)` or an `nn.Parameter(..., requires_grad=False)` in
                # __init__: a fixed-size mask kept on the module, as a registered buffer is.
                value = value.with_(mask=replace(value.mask, buffer_attr=attr))
            self.env["self." + attr] = value
            if self.record_attrs and self.cls is not None:
                self.cls.attrs[attr] = value
        elif isinstance(target, (cst.Tuple, cst.List)):
            elements = [e.value for e in target.elements]
            starred = any(isinstance(e, cst.StarredElement) for e in target.elements)
            if value.kind == "shape":
                self._bind_shape(value, elements, starred)
                return
            if value.kind == "tuple" and value.spread_shape is not None and not starred:
                head, tail = value.spread_head, value.known_tail
                count = len(elements) - len(head) - len(tail)
                if count >= 1:
                    for element, part in zip(elements[: len(head)], head):
                        self._bind(element, part)
                    self._bind_shape(value.spread_shape, elements[len(head) : len(head) + count], False)
                    for element, part in zip(elements[len(head) + count :], tail):
                        self._bind(element, part)
                    return
            parts: Tuple[Value, ...] = value.elements if value.kind == "tuple" else ()
            each = value.each if value.kind == "tuple" else None
            if value.kind == "tensor" and value.rank is not None and value.rank >= 2:
                # `q, k, v = qkv.permute(2, 0, 3, 1, 4)`: unpacking iterates over the first axis.
                each = self.element_of(value)
            for index, element in enumerate(elements):
                if parts and len(parts) == len(elements) and not starred:
                    part = parts[index]
                elif each is not None and not starred:
                    part = each
                else:
                    part = UNKNOWN
                self._bind(element, part)
        elif isinstance(target, cst.Subscript):
            if not self._store_into_entry(target, value):
                masks.store_into(self, target, value)
        # Other stores change part of a tensor: nothing we track changes.

    def _unpacked_size(self, tensor: Optional[Value], owner: Optional[str], axis: int, element) -> Optional[Sym]:
        """The size `b, n, d = x.shape` names; `_` (or a target that is no name) still stands for
        x's size there, read as `x.shape[2]` would be (a view's `-1` may need it)."""
        if isinstance(element, cst.Name) and element.value != "_":
            return self.atom(element.value)
        if tensor is None or owner is None or not owner.isidentifier():
            return None
        known = tensor.size_of(axis) if tensor.shape is not None else None
        if known is not None:
            return known
        # A size the code chose not to name: often a broadcast axis of 1 (see ViewSite).
        return Sym.atom(f"{self.scope}:{owner}.shape[{axis}]{UNNAMED_SIZE}", f"{owner}.shape[{axis}]")

    def _bind_shape(self, shape: Value, elements, starred: bool) -> None:
        """`b, n, d = x.shape` tells that x has rank 3, and names its sizes."""
        owner = shape.shape_owner
        tensor = shape.shape_of
        if starred:
            for element in elements:
                self._bind(element, Value(kind="scalar"))
            return
        count = len(elements)
        if tensor is not None and tensor.shape is not None and len(tensor.shape) == count:
            # A size the shape does not know takes the name the code gives it.
            sizes = [
                axis.size if axis.size is not None else self._unpacked_size(tensor, owner, i, e)
                for i, (axis, e) in enumerate(zip(tensor.shape, elements))
            ]
            if owner is not None and owner in self.env and any(a.size is None for a in tensor.shape):
                current = self.env[owner]
                if current.shape is not None and len(current.shape) == count:
                    new_shape = tuple(replace(a, size=s) if a.size is None else a for a, s in zip(current.shape, sizes))
                    self.env[owner] = current.with_(shape=new_shape)
        else:
            sizes = [self._unpacked_size(tensor, owner, i, e) for i, e in enumerate(elements)]
            if tensor is not None and tensor.last_size is not None and tensor.rank in (None, count) and count:
                # Rank unknown, width known (a projection's output): the last name is that width.
                sizes[-1] = tensor.last_size
            if owner is not None and owner in self.env:
                current = self.env[owner]
                if current.rank is None or current.rank == count:
                    new_shape = tuple(
                        Axis(s, shapes.role_of_dim_name(e.value) if isinstance(e, cst.Name) else None)
                        for s, e in zip(sizes, elements)
                    )
                    self.env[owner] = current.with_(rank=count, shape=new_shape)
        for element, size in zip(elements, sizes):
            self._bind(element, Value(kind="scalar", sym=size, int_value=size.int_value if size else None))

    def element_of(self, value: Value) -> Value:
        """What iterating over a value yields (a `for` target, a comprehension, unpacking)."""
        if value.kind == "tuple":
            if value.each is not None:
                return value.each
            elements = value.elements
            if elements and all(e is elements[0] for e in elements):
                return elements[0]
            if elements:
                joined = elements[0]
                for other in elements[1:]:
                    joined = join(joined, other)
                return joined
            return UNKNOWN
        if value.kind == "tensor" and value.rank is not None and value.rank >= 2:
            shape = value.shape[1:] if value.shape is not None else None
            return Value(
                kind="tensor",
                rank=value.rank - 1,
                shape=shape,
                scaled=value.scaled,
                scale=value.scale, scale_steps=value.scale_steps,
                feature_last=value.feature_last,
                **value.data_facts(),
            )
        return UNKNOWN

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
            return Value(
                kind="scalar",
                node=node,
                int_value=1 if node.value == "True" else 0 if node.value == "False" else None,
                truth=node.value == "True",
                is_none=node.value == "None",
            )
        if (
            node.value in self.project.definitions.functions
            if self.project is not None
            else node.value in self.function_names
        ):
            # `attention_interface = eager_attention_forward`: calling the name later calls it.
            return Value(kind="unknown", node=node, user_function=node.value)
        return _function_reference(node, self.aliases) or Value(
            kind="unknown",
            role=role_from_name(node.value),
            node=node,
            mask=masks.from_param(node.value),
            lengths=_names_lengths(node.value),
            sym=Sym.atom(f"global:{node.value}", node.value),
        )

    def _eval_Integer(self, node: cst.Integer) -> Value:
        value = int(literal(node))
        return Value(kind="scalar", int_value=value, node=node, sym=Sym.const(value))

    def _eval_Float(self, node: cst.Float) -> Value:
        return Value(kind="scalar", node=node, sym=from_float(float(literal(node))))

    def _eval_SimpleString(self, node) -> Value:
        from attnlint.analysis.losses import string_text

        # The text is kept for token strings (`stoi["<pad>"]`, see losses.token_lookup).
        return Value(kind="scalar", node=node, text=string_text(node))

    def _eval_ConcatenatedString(self, node: cst.ConcatenatedString) -> Value:
        for part in (node.left, node.right):
            if isinstance(part, cst.FormattedString):
                self._eval_FormattedString(part)
        return self._eval_SimpleString(node)

    def _eval_FormattedString(self, node: cst.FormattedString) -> Value:
        # What an f-string formats is evaluated: `print(f"val {evaluate(model, val_dl):.4f}")`
        # is a call like any other (what it is handed, its callee sees).
        for part in node.parts:
            if isinstance(part, cst.FormattedStringExpression):
                self.eval(part.expression)
        return Value(kind="scalar", node=node)

    def _eval_Dict(self, node: cst.Dict) -> Value:
        from attnlint.analysis import losses

        return losses.dict_literal(self, node)  # a vocabulary (`{"<pad>": 0, ...}`) or unknown

    def _eval_DictComp(self, node: cst.DictComp) -> Value:
        from attnlint.analysis import losses

        return losses.dict_comprehension(self, node)  # `{t: i for i, t in enumerate(itos)}`

    def _eval_Tuple(self, node: cst.Tuple) -> Value:
        values = []
        starred = 0
        head: Tuple[Value, ...] = ()
        spread = None
        for e in node.elements:
            inner = self.eval(e.value)
            if isinstance(e, cst.StarredElement) and inner.kind == "tuple" and inner.elements and not inner.known_tail:
                # `(self.to_q(x), *self.to_kv(ctx).chunk(2, dim=-1))`: a tuple of known length spreads
                # its elements in place.
                values.extend(inner.elements)
                continue
            if isinstance(e, cst.StarredElement):
                # `(*input_shape, -1, d)`: count unknown
                starred, head, values = starred + 1, tuple(values), []
                spread = inner if inner.kind == "shape" else None
                continue
            values.append(inner)
        if starred:
            if starred == 1 and spread is not None:
                # `b, n, _, h = *x.shape, self.heads`: the targets left for the shape count its axes.
                return Value(kind="tuple", node=node, known_tail=tuple(values), spread_shape=spread, spread_head=head)
            return Value(kind="tuple", node=node, known_tail=tuple(values))
        return Value(kind="tuple", elements=tuple(values), node=node)

    _eval_List = _eval_Tuple

    def _eval_IfExp(self, node: cst.IfExp) -> Value:
        test = self.eval(node.test)
        body, orelse = self.eval(node.body), self.eval(node.orelse)
        if test.truth is not None and attention_flags.is_none_test(node.test):
            # `val if val is not None else d` (lucidrains' `default`) on a value known to be None
            # or not: that branch.
            return body if test.truth else orelse
        return join(body, orelse)

    def _eval_UnaryOperation(self, node: cst.UnaryOperation) -> Value:
        inner = self.eval(node.expression)
        if isinstance(node.operator, cst.Minus) and inner.kind == "scalar":
            sym = inner.sym * Sym.const(-1) if inner.sym is not None else None
            return inner.with_(int_value=-inner.int_value if inner.int_value is not None else None, node=node, sym=sym)
        if isinstance(node.operator, cst.BitInvert) and inner.kind in ("tensor", "unknown"):
            # `~t` of a tensor whose mask facts are unknown: a bool mask all the same (attention
            # code inverts bool masks; `~` of a float tensor raises).
            mask = (
                masks.invert(inner.mask) if inner.mask is not None else masks.MaskFacts(origin="negation", dtype="bool")
            )
            return inner.with_(kind="tensor", node=node, scores=None, softmax=None, mask=mask, sym=None)
        if isinstance(node.operator, cst.Not):
            return Value(kind="scalar", truth=None if inner.truth is None else not inner.truth)
        # Negation keeps rank but is not a score any more (`softmax(-dist)` is not Q·Kᵀ).
        return Value(kind=inner.kind, rank=inner.rank, shape=inner.shape, node=node)

    def _eval_Comparison(self, node: cst.Comparison) -> Value:
        left = self.eval(node.left)
        rights = [self.eval(comp.comparator) for comp in node.comparisons]
        result = masks.comparison(self, node, left, rights)
        truth = attention_flags.comparison_truth(node, left, rights)
        if truth is None:
            truth = attention_flags.none_test_truth(node, left, rights)
        return result if truth is None else result.with_(truth=truth)

    def _eval_BooleanOperation(self, node: cst.BooleanOperation) -> Value:
        left = self.eval(node.left)
        right = self.eval(node.right)
        if isinstance(node.operator, cst.Or) and left.truth is None:
            # `self.scale or dim_head ** -0.5`: the default when the setting is None, the setting
            # when it is a number the code shows (a size's root, a constant).
            if left.is_none:
                return right
            if attention_flags.shown_number(left):
                return left
        truth = attention_flags.boolean_truth(node, left, right)
        return UNKNOWN if truth is None else Value(kind="scalar", node=node, truth=truth)

    def _eval_Lambda(self, node) -> Value:
        return Value(kind="unknown", node=node)

    def _bound_lambda(self, func: cst.BaseExpression) -> Optional[cst.Lambda]:
        """The lambda a local name is bound to (its value's node), if it is one."""
        if isinstance(func, cst.Name) and func.value in self.env:
            node = self.env[func.value].node
            if isinstance(node, cst.Lambda):
                return node
        return None

    def _eval_NamedExpr(self, node: cst.NamedExpr) -> Value:
        value = self.eval(node.value)
        self._bind(node.target, value)
        return value

    def _eval_Attribute(self, node: cst.Attribute) -> Value:
        from attnlint.analysis import losses

        attr = node.attr.value
        if isinstance(node.value, cst.Name) and node.value.value == "self":
            key = "self." + attr
            if key in self.env:
                value = self.env[key]
                if value.mask is not None and value.mask.buffer_attr == attr:
                    # Each read of a buffer is where it is read (`if self.mask is not None:` may
                    # have put it in the environment first).
                    value = value.with_(mask=replace(value.mask, buffer_node=node))
                return value
            if self.cls is not None and attr in self.cls.attrs:
                value = self.cls.attrs[attr]
                if value.mask is not None and value.mask.buffer_attr:
                    value = value.with_(mask=replace(value.mask, buffer_node=node))
                if (self.facts.name == "__post_init__" or _is_property(self.facts.node)) and value.kind == "scalar":
                    # A dataclass computing fields from the others (`self.head_dim = self.hidden //
                    # self.heads`): an instance's field, its default an example, as readers of
                    # instances see it (so the computed field is in the fields' terms).
                    return self._field_of_instance(self.cls.name, attr, value, node)
                return value
            computed = self._property_of(self.cls.name, attr, node, own=True) if self.cls is not None else None
            if computed is not None:
                return computed  # `self.head_dim` of `@property def head_dim(self)`
            sym = Sym.atom(f"{self.cls.name if self.cls else ''}.self.{attr}", f"self.{attr}")
            self.read_attributes.setdefault(key, sym)
            return Value(kind="unknown", role=role_from_name(attr), node=node, sym=sym)
        if qualify(node, self.aliases) is not None and qualify(node.value, self.aliases) is not None:
            # torch.float32, math.pi, F.softmax ... (a known callable is remembered as one)
            return _function_reference(node, self.aliases) or Value(kind="unknown", node=node)
        if (
            isinstance(node.value, cst.Name)
            and node.value.value in self.class_names
            and node.value.value not in self.env
            and self.project is not None
        ):
            # `ByteTokenizer.pad_id`: a class attribute of a class defined here.
            facts = self.project.analysis.classes.get(node.value.value)
            if facts is not None and attr in facts.attrs and facts.attrs[attr].kind == "scalar":
                return facts.attrs[attr]
        receiver = self.eval(node.value)
        field = losses.encoding_field(receiver, attr, node)  # `enc.input_ids` of a tokenizer
        if field is not None:
            return field
        if receiver.kind == "module" and receiver.module_type == losses.PARSED_ARGUMENTS:
            option = losses.option_value(self, attr, node)  # `args.pad_id` of `add_argument`
            if option is not None:
                return option
        if receiver.kind == "module" and receiver.user_class and self.project is not None:
            # `config.pad_token_id`, `self.tokenizer.pad_token_id`: what the class sets.
            facts = self.project.analysis.classes.get(receiver.module_type)
            if facts is not None and attr in facts.attrs:
                return self._field_of_instance(receiver.module_type, attr, facts.attrs[attr], node)
            computed = self._property_of(receiver.module_type, attr, node)
            if computed is not None:
                return computed  # `cfg.attn_scale` of a config's `@property`
        value = shapes.attribute(self, node, receiver, attr)
        if value.kind == "unknown" and losses.names_pad_id(attr):
            # `vocab.pad_index`, `config.pad_token_id` of an object we cannot see: whatever its
            # number, an index into a vocabulary (it stays one when passed to a helper).
            return value.with_(kind="scalar", token_id=True)
        return value

    def _property_of(self, class_name: str, attr: str, node: cst.Attribute, own: bool = False) -> Optional[Value]:
        """What `obj.attr` is when the class (or a base defined here) computes a number in a
        `@property` (`def head_dim(self): return self.d_model // self.n_heads`): its body's
        result, in the instance's fields. `own`: read on `self`, whose attributes are the ones
        the class's reading knows, so a tensor it returns counts too (`def causal_mask(self):
        return self.bias`)."""
        if self.project is None:
            return None
        found = self.project.definitions.method(class_name, attr)
        if found is None or not _is_property(found[1]):
            return None
        call = cst.Call(func=cst.Attribute(value=cst.Name("self"), attr=cst.Name(attr)), args=[])
        result = self.project.call(self, call, attr, [], True, class_name=found[0])
        # Numbers only: a tensor a property returns (`TriangularCausalMask.mask`) is what one
        # instance's constructor arguments made, which the class's attributes do not say.
        if result is None or not (result.kind == "scalar" or (own and result.kind == "tensor")):
            return None
        return result.with_(node=node)

    def _field_of_instance(self, class_name: str, attr: str, value: Value, node: cst.Attribute) -> Value:
        """`args.dim` of a config whose class sets `dim: int = 4096`: the number is the default,
        an example of the size, not the size (a config is built with other numbers); the size
        keeps the field's name, one atom wherever the class's instances are read, and the
        number decides only what the names cannot (see Evaluator.size_examples)."""
        if value.kind != "scalar" or value.int_value is None or value.int_value < 2 or value.token_id:
            return value
        if {"id", "idx", "index", "token"} & set(words(attr)):
            return value  # an id is its number (`pad_token_id + 1` is an id too), not a size
        if value.sym is None or not value.sym.is_const:
            return value
        key = f"{class_name}.{attr}"
        self.size_examples.setdefault(key, Sym.const(value.int_value))
        if self.record_attrs and self.cls is not None:
            self.cls.size_examples.setdefault(key, Sym.const(value.int_value))
        return value.with_(sym=Sym.atom(key, code(node)), node=node)

    def _eval_Subscript(self, node: cst.Subscript) -> Value:
        from attnlint.analysis import losses

        base = self.eval(node.value)
        token = losses.token_lookup(self, node, base)  # `vocab["<pad>"]`: a token id
        if token is not None:
            return token
        functions = _functions_by_key(base)
        if functions is not None and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
            # `ATTENTION_FUNCTIONS[impl]`: the function of the key written, else any of them.
            key = node.slice[0].slice.value
            self.eval(key)
            text = losses.string_text(key)
            if text is not None:
                chosen = functions.get(text)
                return Value(kind="unknown", node=node, user_function=chosen) if chosen else UNKNOWN
            return Value(kind="unknown", node=node, function_choices=tuple(dict.fromkeys(functions.values())))
        return shapes.subscript(self, node, base)

    def _eval_BinaryOperation(self, node: cst.BinaryOperation) -> Value:
        from attnlint.analysis import scores

        left = self.eval(node.left)
        right = self.eval(node.right)
        return scores.binary(self, node, left, right)

    # ---------------------------------------------------------------- comprehensions
    def _comprehension(self, node, element_node) -> Optional[Value]:
        """`[f(t) for t in (q, k, v)]`: evaluate the element for each item of a literal (or
        for the common value of an iterated tensor) in a scope of its own."""
        generators = node.for_in
        if generators.inner_for_in is not None or generators.ifs:
            self.eval(generators.iter)
            return None
        iterated = self.eval(generators.iter)
        saved = dict(self.env)
        items: List[Value]
        if iterated.kind == "tuple" and iterated.elements and iterated.each is None:
            items = list(iterated.elements)
        else:
            items = [self.element_of(iterated)]
        results = []
        for item in items:
            self.env = dict(saved)
            self._bind(generators.target, item)
            results.append(self.eval(element_node))
        self.env = saved
        if iterated.kind == "tuple" and iterated.elements and iterated.each is None:
            return Value(kind="tuple", elements=tuple(results), node=node)
        return Value(kind="tuple", each=results[0], node=node)

    def _eval_ListComp(self, node: cst.ListComp) -> Value:
        return self._comprehension(node, node.elt) or UNKNOWN

    _eval_GeneratorExp = _eval_ListComp
    _eval_SetComp = _eval_ListComp

    def run_lambda(self, func: cst.Lambda, arguments: Sequence[Value]) -> Value:
        """A lambda's body in this scope, its parameters bound in order to `arguments` (unknown
        past them); the scope is left as it was."""
        saved = dict(self.env)
        try:
            for i, param in enumerate(func.params.params):
                self._bind(param.name, arguments[i] if i < len(arguments) else UNKNOWN)
            return self.eval(func.body)
        finally:
            self.env = saved

    def apply_callable(self, func: cst.BaseExpression, argument: Value) -> Value:
        """The value of `func(argument)` for a callable expression (`map(f, xs)`, lambdas, a
        name bound to a lambda: `split_heads = lambda t: t.reshape(...)`)."""
        bound = self._bound_lambda(func)
        if bound is not None:
            func = bound
        if isinstance(func, cst.Lambda):
            if len(func.params.params) != 1:
                return UNKNOWN
            return self.run_lambda(func, [argument])
        from attnlint.analysis import modules

        return modules.call_with_values(self, func, [argument])

    # ------------------------------------------------------------------ calls
    def _eval_Call(self, node: cst.Call) -> Value:
        from attnlint.analysis import losses, modules

        func = node.func
        encoded = losses.tokenizer_call(self, node)  # `tokenizer(texts, padding=True)`
        if encoded is not None:
            return encoded
        qualified = canonical(qualify(func, self.aliases))
        if qualified is not None and "." in qualified:
            return self.call_function(node, qualified)
        if isinstance(func, cst.Attribute):
            if isinstance(func.value, cst.Name) and func.value.value == "self":
                return modules.self_call(self, node, func.attr.value)
            if modules.is_super(func.value) and self.cls is not None:
                return modules.super_call(self, node, func.attr.value)
            receiver = self.eval(func.value)
            if receiver.kind == "module" and func.attr.value in ("eval", "train"):
                # `model.eval()`, `model.train(False)`: the module itself, in another mode.
                self.args(node)
                return receiver.with_(node=node)
            if (
                receiver.kind == "module"
                and func.attr.value in _MODULE_METHODS_RETURNING_SELF
                and not (receiver.user_class and self._defines(receiver.module_type, func.attr.value))
            ):
                # `Model(...).to(device)`: nn.Module's `to`/`cuda`/`half` return the module itself.
                self.args(node)
                return receiver.with_(node=node)
            if func.attr.value in ("append", "extend") and modules.holds_modules(receiver):
                return modules.grow_module_list(self, node, receiver, func)
            if receiver.kind == "module" and receiver.user_class and func.attr.value not in ("forward", "__call__"):
                return modules.user_method(self, node, receiver, func.attr.value)
            if receiver.kind == "module":
                return modules.call_module_value(self, node, receiver, func.attr.value)
            return self.call_method(node, receiver, func.attr.value, func.value)
        if isinstance(func, cst.Name):
            if func.value in ("map",) and len(node.args) == 2:
                return self._map(node)
            if func.value in ("iter", "next") and len(node.args) == 1 and not node.args[0].star:
                # `next(iter(loader))`: one batch of the loader; `iter(x)` iterates as x does.
                iterated = self.eval(node.args[0].value)
                return iterated if func.value == "iter" else self.element_of(iterated).with_(node=node)
            if func.value == "enumerate" and len(node.args) in (1, 2) and not any(a.star for a in node.args):
                # `for step, batch in enumerate(loader)`: (a position, what iterating yields).
                iterated = self.eval(node.args[0].value)
                for extra in node.args[1:]:
                    self.eval(extra.value)
                return Value(kind="tuple", each=Value(kind="tuple", elements=(UNKNOWN, self.element_of(iterated))), node=node)
            if func.value == "zip" and node.args and not any(a.star for a in node.args):
                return self._zip([self.eval(a.value) for a in node.args], node)
            if func.value in ("tuple", "list") and len(node.args) == 1:
                inner = self.eval(node.args[0].value)
                if inner.kind == "tensor" and self.element_of(inner) is not UNKNOWN:
                    # `tuple(rearrange(qkv, "b t (d k h) -> k b h t d", k=3, h=h))`: the slices
                    # along the first axis.
                    return Value(kind="tuple", each=self.element_of(inner), node=node)
                return inner if inner.kind == "tuple" else UNKNOWN
            if func.value in ("int", "float") and len(node.args) == 1:
                inner = self.eval(node.args[0].value)
                return Value(kind="scalar", sym=inner.sym, int_value=inner.int_value, node=node)
            if func.value == "len" and len(node.args) == 1:
                self.eval(node.args[0].value)
                return Value(kind="scalar", node=node)
            target = self.env.get(func.value, self.constants.get(func.value))
            if self._bound_lambda(func) is not None and len(node.args) == 1 and not node.args[0].star:
                return self.apply_callable(func, self.eval(node.args[0].value))  # `split_heads(q)`
            if target is not None and target.kind == "module":
                return modules.call_module_value(self, node, target, func.value)
            if target is not None and target.function is not None:
                return self.call_function(node, target.function)  # `attend = F.sdpa; attend(q, k, v)`
            if target is not None and target.closure is not None and func.value in self.env:
                return modules.call_closure_value(self, node, target)  # `attend = make_attention()`
            if target is not None and target.bound_call is not None and func.value in self.env:
                return modules.bound_function_call(self, node, target, self.args(node))  # a partial
            if target is not None and target.user_function is not None and func.value in self.env:
                return modules.user_function(self, node, target.user_function)  # `attend = attention`
            if target is not None and target.function_choices and func.value in self.env:
                return self._call_each(node, target.function_choices)  # `attend = FUNCTIONS[impl]`
            if self.project is not None and func.value in self.project.external:
                return modules.user_function(self, node, func.value)  # a function of another file here
            if qualified is not None:  # `from torch.nn.functional import softmax`
                return self.call_function(node, qualified)
            if func.value in self.class_names:
                values = self.args(node)
                self.facts.calls.append(
                    CallSite(callee="__init__", method=True, call=node, values=tuple(values), callee_class=func.value)
                )
                return Value(kind="module", module_type=func.value, ctor=node, node=node, user_class=True)
            if self.project is not None and func.value in self.project.external_classes:
                # A class of another file of the project: its methods are summarised there.
                self.args(node)
                return Value(kind="module", module_type=func.value, ctor=node, node=node, user_class=True)
            return modules.user_function(self, node, func.value)
        if isinstance(func, (cst.Call, cst.Subscript)):  # nn.Softmax(dim=-1)(x), self.heads[i](x)
            module = self.eval(func)
            if module.function_choices:
                return self._call_each(node, module.function_choices)  # `FUNCTIONS[impl](q, k, v)`
            if module.user_function is not None and isinstance(func, cst.Subscript):
                return modules.user_function(self, node, module.user_function)  # `FUNCTIONS["eager"](...)`
            if module.kind == "module":
                attr = func.value.attr.value if isinstance(func, cst.Subscript) and isinstance(func.value, cst.Attribute) else ""
                return modules.call_module_value(self, node, module, attr)
        for arg in node.args:
            self.eval(arg.value)
        return UNKNOWN

    def _call_each(self, node: cst.Call, names: Tuple[str, ...]) -> Value:
        """A call of one of several functions of the checked code: each is called (a call site of
        each, with these arguments), and the result is what holds of all of theirs."""
        from attnlint.analysis import modules

        values = self.args(node)
        result: Optional[Value] = None
        for name in names:
            one = modules.user_function(self, node, name, values=values)
            result = one if result is None else join(result, one)
        return (result or UNKNOWN).with_(node=node)

    def _zip(self, values: List[Value], node) -> Value:
        """`zip(self.linears, (query, key, value))`: pairs, as many as the literal has."""
        counts = {len(v.elements) for v in values if v.kind == "tuple" and v.elements and v.each is None}
        if len(counts) != 1:
            return Value(kind="tuple", each=Value(kind="tuple", elements=tuple(self.element_of(v) for v in values)))
        count = counts.pop()
        rows = []
        for i in range(count):
            row = []
            for v in values:
                if v.kind == "tuple" and len(v.elements) == count and v.each is None:
                    row.append(v.elements[i])
                else:
                    row.append(self.element_of(v))
            rows.append(Value(kind="tuple", elements=tuple(row)))
        return Value(kind="tuple", elements=tuple(rows), node=node)

    def _map(self, node: cst.Call) -> Value:
        """`map(f, (q, k, v))`, `map(lambda t: rearrange(t, ...), qkv)`."""
        iterated = self.eval(node.args[1].value)
        func = node.args[0].value
        if iterated.kind == "tuple" and iterated.elements and iterated.each is None:
            return Value(
                kind="tuple", elements=tuple(self.apply_callable(func, e) for e in iterated.elements), node=node
            )
        item = self.element_of(iterated)
        if item is UNKNOWN:
            return UNKNOWN
        return Value(kind="tuple", each=self.apply_callable(func, item), node=node)

    def args(self, node: cst.Call) -> List[Value]:
        return [self.eval(a.value) for a in node.args]

    def call_function(self, node: cst.Call, qualified: str) -> Value:
        handler = handlers.FUNCTIONS.get(qualified)
        if handler is None:
            handler = handlers.FUNCTIONS_BY_NAME.get(qualified.rsplit(".", 1)[-1])
        if handler is not None:
            result = handler(self, Call(node=node, name=qualified))
            if result is not None:
                return result
        from attnlint.analysis import modules

        return modules.other_function(self, node, qualified)

    def call_method(self, node: cst.Call, receiver: Value, method: str, receiver_node) -> Value:
        handler = handlers.METHODS.get(method)
        if handler is not None:
            result = handler(self, Call(node=node, name=method, receiver=receiver, receiver_node=receiver_node))
            if result is not None:
                return result
        values = self.args(node)
        if method == "get" and values and values[0].text is not None and receiver.vocabulary is not None:
            known = receiver.vocabulary.id_of(values[0].text)
            if known is not None:  # `stoi.get("<pad>", unk)`: the key is there, the default unused
                return Value(kind="scalar", int_value=known, node=node, token_id=True)
        if receiver.entries:
            popped = receiver.entry(values[0].text) if method == "pop" and len(values) == 1 and values[0].text else None
            if popped is not None and owner_name(receiver_node) in self.env:
                # `labels = batch.pop("labels")`: the entry, which the dict no longer holds.
                key = values[0].text
                self.env[owner_name(receiver_node)] = receiver.with_(
                    entries=tuple((k, v) for k, v in receiver.entries if k != key)
                )
                return popped
            if method == "get" and values and values[0].text is not None and receiver.entry(values[0].text):
                return receiver.entry(values[0].text)  # `batch.get("labels")`
            if method not in ("get", "items", "keys", "values", "copy") and owner_name(receiver_node) in self.env:
                # `batch.update(...)`, `batch.pop("labels")`: entries we no longer know.
                self.env[owner_name(receiver_node)] = receiver.with_(entries=())
        if handler is None and self.project is not None and receiver.kind == "unknown":
            # `tokenizer.batch_encode(texts)`: the one class here with that method.
            target = self.project.unique_method(method)
            if target is not None:
                result = self.project.call(self, node, method, values, True, target=target)
                if result is not None:
                    return result
        if method not in READING_METHODS:
            escape([receiver] + values)
        return Value(kind="unknown", node=node)

    def _store_into_entry(self, target: cst.Subscript, value: Value) -> bool:
        """`batch["labels"] = labels` and `batch["labels"][mask] = -100` on a dict whose entries
        are known: the entry changes. True when the store was one of those."""
        from attnlint.analysis import losses

        def key_of(subscript: cst.Subscript) -> Optional[str]:
            if len(subscript.slice) != 1 or not isinstance(subscript.slice[0].slice, cst.Index):
                return None
            return losses.string_text(subscript.slice[0].slice.value)

        base = target.value
        owner = owner_name(base)
        held = self.env.get(owner) if owner is not None else None
        if held is not None and not held.entries and losses.is_encoding(held) and key_of(target) is not None:
            # `enc["labels"] = dec["input_ids"]` on a tokenizer's encoding: a field it now has.
            self.env[owner] = held.with_entry(key_of(target), value)
            return True
        if owner is not None and self.env.get(owner) is not None and self.env[owner].entries:
            key = key_of(target)
            if key is None:
                self.env[owner] = self.env[owner].with_(entries=())  # a key we cannot read
            else:
                self.env[owner] = self.env[owner].with_entry(key, value)
            return True
        if isinstance(base, cst.Subscript):
            owner = owner_name(base.value)
            holder = self.env.get(owner) if owner is not None else None
            if holder is None or not holder.entries:
                return False
            key = key_of(base)
            entry = holder.entry(key) if key is not None else None
            if entry is None:
                self.env[owner] = holder.with_(entries=())
                return True
            changed = losses.stored_into(entry, target, value)
            if changed is not None:
                self.env[owner] = holder.with_entry(key, changed)
            return True
        return False

    def _defines(self, class_name: Optional[str], method: str) -> bool:
        """Does a class of the checked code define `method` itself (or may it, unseen)?"""
        if self.project is None or class_name is None:
            return True
        return self.project.definitions.method(class_name, method) is not None

    def update_in_place(self, receiver_node, value: Value) -> None:
        owner = owner_name(receiver_node)
        if owner is not None and (owner in self.env or owner.startswith("self.")):
            self.env[owner] = value


def _makes_bool(node) -> bool:
    """`x.bool()`, `x.to(torch.bool)`, `x > 0`: an expression whose result is a bool tensor."""
    if isinstance(node, cst.Comparison):
        return True
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        if node.func.attr.value == "bool" and not node.args:
            return True
        if node.func.attr.value == "to" and node.args:
            arg = node.args[0].value
            return isinstance(arg, cst.Attribute) and arg.attr.value == "bool"
    return False


def _factor(value: Value, divide: bool) -> Optional[Sym]:
    """The symbolic factor `* value` (or `/ value`) multiplies by."""
    if value.sym is None or value.rank not in (None, 0) or value.shape:
        return None
    if value.kind not in ("scalar", "unknown", "tensor"):
        return None
    return value.sym.power(Fraction(-1)) if divide else value.sym


_MODULE_METHODS_RETURNING_SELF = frozenset(
    {"to", "cuda", "cpu", "half", "float", "double", "bfloat16", "requires_grad_", "to_empty"}
)


def _is_bool_literal(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value in ("True", "False")


def _is_main_guard(test: cst.BaseExpression) -> bool:
    return (
        isinstance(test, cst.Comparison)
        and isinstance(test.left, cst.Name)
        and test.left.value == "__name__"
        and len(test.comparisons) == 1
        and isinstance(test.comparisons[0].operator, cst.Equal)
    )


def _names_lengths(name: str) -> bool:
    return any(w in ("len", "lens", "lengths", "length", "seqlens") for w in words(name)) and not name.isupper()


def _mentions_size(node: cst.CSTNode) -> bool:
    if isinstance(node, cst.Attribute) and node.attr.value in ("shape", "size"):
        return True
    return any(_mentions_size(child) for child in child_nodes(node))


def block_statements(block) -> List[cst.CSTNode]:
    """The statements of a block; a one-line body (`if x: y = 1`) as one simple statement line."""
    if isinstance(block, cst.SimpleStatementSuite):
        return [cst.SimpleStatementLine(body=block.body)]
    return list(block.body)


def _is_property(node) -> bool:
    """A method decorated `@property` (or `@functools.cached_property`)."""
    if not isinstance(node, cst.FunctionDef):
        return False
    for decorator in node.decorators:
        target = decorator.decorator
        name = target.attr.value if isinstance(target, cst.Attribute) else getattr(target, "value", None)
        if name in ("property", "cached_property"):
            return True
    return False


def _functions_by_key(value: Value) -> Optional[Dict[str, str]]:
    """`{"eager": eager_attention_forward, ...}`: key -> function of the checked code, when
    every entry the dict shows is one."""
    if not value.entries or not all(v.user_function is not None for _, v in value.entries):
        return None
    return {key: v.user_function for key, v in value.entries}


def walk_nodes(node: cst.CSTNode):
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(child_nodes(current)))


# Calls that read a tensor without handing it on to be changed: weights summed, printed or
# compared in a smoke test are the weights the model uses, not weights normalised again.
READING_METHODS = frozenset(
    {"sum", "mean", "max", "min", "argmax", "argmin", "item", "tolist", "numel", "dim", "allclose",
     "isnan", "isinf", "isfinite", "any", "all", "equal"}
)
READING_BUILTINS = frozenset({"print", "len", "isinstance", "repr", "str", "type", "id", "format", "hash"})


def escape(values: Sequence[Value]) -> None:
    """Weights handed to code we cannot see may be renormalised there: not plain attention."""
    for value in values:
        if value.softmax is not None:
            value.softmax.renormalized = True


def tensorish(value: Value) -> bool:
    return value.kind == "tensor" or value.role is not None or value.scores is not None


def owner_name(node) -> Optional[str]:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
        return "self." + node.attr.value
    return None


def _function_reference(node: cst.BaseExpression, aliases: Dict[str, str]) -> Optional[Value]:
    """`F.scaled_dot_product_attention` named without being called: a value that remembers which
    known callable it is, so that storing it (`self.attend = ...`) and calling it later is that call."""
    qualified = canonical(qualify(node, aliases))
    if not handlers.known_function(qualified):
        return None
    return Value(kind="unknown", node=node, function=qualified)


def is_false(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value in ("False", "None")


_DTYPE_NAMES = ("bool", "float", "int")


def dtype_of(node: cst.BaseExpression, aliases: Dict[str, str]) -> Optional[str]:
    qualified = qualify(node, aliases)
    if qualified is None and isinstance(node, cst.Name) and node.value in _DTYPE_NAMES:
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


def _losses():
    from attnlint.analysis import losses

    return losses
