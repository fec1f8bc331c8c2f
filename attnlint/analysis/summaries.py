"""Interprocedural facts: what a call of a function of the checked code returns, and what its
callers pass it.

*Summaries.* A call of a function or method defined in the module is evaluated on demand for
the abstract values of its arguments: the callee's body runs in an evaluator of its own (its
sites are not recorded: the callee's own analysis reports them), and the join of its returns is
the call's value. Summaries are cached per callee and abstract arguments, bounded in depth, and a
recursive call is unknown (widening to unknown).

*Caller contexts.* After every function has been analysed once, a function whose callers in the
module all pass arguments with something to say (a rank, a shape, padding, a mask convention, a
module of a class defined here) is analysed again with its parameters bound to the join of what
the callers pass, so facts flow from callers to callees: a padded batch passed to a module's
`forward`, the class behind `self.attn(x, mask)`, the loss computed in another function.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Dict, List, Optional, Tuple

import libcst as cst

from attnlint.analysis.names import child_nodes, contains
from attnlint.analysis.symbolic import Sym
from attnlint.analysis.values import UNKNOWN, CallerScope, Value, join

if TYPE_CHECKING:  # pragma: no cover
    from attnlint.analysis import ModuleAnalysis
    from attnlint.analysis.symbolic import Sym
    from attnlint.analysis.flow import Evaluator

MAX_DEPTH = 3

# How many calls have been cut short so far (past MAX_DEPTH, or into a function being summarised):
# a summary computed while one was is only as good as the depth it was asked at (see call).
_cut_short = [0]


@dataclass
class Definitions:
    """The functions and classes of a module, indexed once."""

    functions: Dict[str, cst.FunctionDef] = field(default_factory=dict)
    classes: Dict[str, cst.ClassDef] = field(default_factory=dict)
    methods: Dict[Tuple[str, str], cst.FunctionDef] = field(default_factory=dict)
    bases: Dict[str, Tuple[str, ...]] = field(default_factory=dict)
    # Method name -> the classes defining it.
    method_owners: Dict[str, List[str]] = field(default_factory=dict)

    def target_of(self, call, caller_class: Optional[str]) -> Optional[Tuple[Optional[str], cst.FunctionDef]]:
        """(owning class or None, definition) a call site reaches: a method through its
        instance's class or `self.` (the caller's class), or a module function."""
        if call.callee_class is not None:
            return self.method(call.callee_class, call.callee)
        if call.method:
            return self.method(caller_class, call.callee)
        definition = self.functions.get(call.callee)
        return (None, definition) if definition is not None else None

    def method(self, class_name: Optional[str], name: str) -> Optional[Tuple[str, cst.FunctionDef]]:
        """`name` in `class_name` or its bases defined in this module."""
        seen = set()
        todo = [class_name] if class_name else []
        while todo:
            current = todo.pop(0)
            if current in seen or current not in self.classes:
                continue
            seen.add(current)
            found = self.methods.get((current, name))
            if found is not None:
                return current, found
            todo.extend(self.bases.get(current, ()))
        return None


def param_names(node: cst.FunctionDef, method: bool) -> List[str]:
    params = node.params
    names = [p.name.value for p in list(params.posonly_params) + list(params.params)]
    if method and names and names[0] in ("self", "cls"):
        names = names[1:]
    return names


def bind_arguments(
    node: cst.FunctionDef, call: cst.Call, values: List[Value], method: bool
) -> Optional[Dict[str, Value]]:
    """Parameter name -> argument value, as Python binds them; None when a `*` argument makes
    the binding unknowable. A `**kwargs` argument binds only names the call does not write
    (Python refuses a name twice): the written ones are known, every other is unknown."""
    if any(a.star == "*" for a in call.args):
        return None
    spread = any(a.star == "**" for a in call.args)
    if spread:
        kept = [(a, v) for a, v in zip(call.args, values) if a.star != "**"]
        call = call.with_changes(args=[a for a, _ in kept])
        values = [v for _, v in kept]
    names = param_names(node, method)
    kwonly = [p.name.value for p in node.params.kwonly_params]
    bound: Dict[str, Value] = {}
    position = 0
    star = node.params.star_arg
    extras: List[Value] = []
    for arg, value in zip(call.args, values):
        if arg.keyword is None:
            if position >= len(names):
                if star is None or isinstance(star, cst.ParamStar):
                    return None
                extras.append(value)  # `def forward(self, x, *qkv)`: the rest, in a tuple
                continue
            bound[names[position]] = value
            position += 1
        else:
            name = arg.keyword.value
            if name in names or name in kwonly:
                bound[name] = value
    if isinstance(star, cst.Param) and not spread:
        bound[star.name.value] = Value(kind="tuple", elements=tuple(extras))
    if spread:
        for name in names + kwonly:
            bound.setdefault(name, UNKNOWN)
        return bound
    for name in left_at_none(node):
        bound.setdefault(name, NONE)
    return bound


def _int_defaults(node: cst.FunctionDef) -> Dict[str, int]:
    """Parameters whose default is an integer literal (`ignore_index=-100`)."""
    from attnlint.analysis.flow import int_literal

    found = {}
    for param in list(node.params.params) + list(node.params.kwonly_params):
        number = int_literal(param.default) if param.default is not None else None
        if number is not None:
            found[param.name.value] = number
    return found


NONE = Value(kind="scalar", is_none=True)


def left_at_none(node: cst.FunctionDef) -> List[str]:
    """The parameters whose default is `None` (a call that omits one passes None)."""
    params = node.params
    every = list(params.posonly_params) + list(params.params) + list(params.kwonly_params)
    return [p.name.value for p in every if isinstance(p.default, cst.Name) and p.default.value == "None"]


def informative(value: Optional[Value]) -> bool:
    """Does an argument value say more than a parameter's name does?"""
    if value is None or (value.kind == "unknown" and value.rank is None and value.sym is None):
        return value is not None and value.names_dtype is not None  # `q.dtype`, cast to in a helper
    return bool(
        value.rank is not None
        or value.shape is not None
        or value.padded
        or value.token_ids
        or value.positive_lengths
        or (value.mask is not None and (value.mask.convention is not None or value.mask.buffer_attr is not None))
        # A mask whose values the caller shows, whatever they mean (`x == 0`, a bool cast): 0/1.
        or (value.mask is not None and (value.mask.dtype == "bool" or value.mask.origin not in (None, "argument", "name")))
        or value.kind in ("module", "tuple")
        or value.is_none
        or value.scaled is True
        or (value.kind == "scalar" and value.int_value is not None)
        or value.text is not None  # a token string (`lookup(stoi, "<pad>")`)
        or value.token_id
        or value.vocabulary is not None
        or bool(value.entries)
        or (value.rank is None and value.sym is not None and not _bare_atom(value.sym))
    )


def informative_binding(bindings: Dict[str, Value], name: str) -> bool:
    """Does the argument bound to `name` say more than the parameter's name does? A size the
    caller only names (`self.d_model`, its own attribute) does when it is a size of another
    argument of the same call (q passed as (b, h, n, d_model / h)), or a factor of another
    size argument (`n_embed // n_head`): bound, the callee relates the two (`/ math.sqrt(d_model)`
    next to q's last axis); unbound, they are unrelated names."""
    value = bindings.get(name)
    if informative(value):
        return True
    if value is None or value.sym is None or value.rank is not None or value.shape is not None:
        return False
    atoms = set(value.sym.atoms())
    for other_name, other in bindings.items():
        if other_name == name or other is None:
            continue
        if other.shape is not None:
            if any(axis.size is not None and atoms & set(axis.size.atoms()) for axis in other.shape):
                return True
        elif informative(other) and other.rank is None and other.sym is not None and atoms & set(other.sym.atoms()):
            # A size derived from it in the same call (`Head(n_embed // n_head, n_embed)`): bound
            # together, the callee sees `head_size` and `n_embed` in the caller's terms.
            return True
    return False


def same_quantity(name: str, value: Value) -> bool:
    """A constructor handed the caller's size of the same name (`Attention(d_model, n_heads)` in
    a layer built with `d_model`): one quantity. Bound, the attributes `__init__` makes of it
    (`self.scale = 1.0 / (d_model // n_heads)`) are in the caller's terms, as are the tensors
    its forward is given (q of `d_model / n_heads` wide)."""
    sym = value.sym if value.rank is None and value.shape is None else None
    if sym is None or sym.is_const or len(sym.factors) != 1 or sym.coeff != 1 or sym.factors[0][1] != 1:
        return False
    return sym.factors[0][0].name.split(".")[-1] == name


def _bare_atom(sym) -> bool:
    """A quantity the caller itself knows nothing about (its own parameter, a global)."""
    return (
        not sym.is_const
        and len(sym.factors) == 1
        and sym.factors[0][1] == 1
        and sym.coeff == 1
        and (
            sym.factors[0][0].key.startswith("global:")
            or ":" in sym.factors[0][0].key
            and "." not in sym.factors[0][0].name
            and "#" not in sym.factors[0][0].key  # a size read from a tensor (`n = x.shape[1]`)
        )
    )


def merge_into_param(param: Value, argument: Value) -> Value:
    """A parameter bound to what its callers pass; the name still tells what the value lacks.

    Sizes the callers pass as numbers (`torch.randn(2, 8, 64)` in a smoke test) are examples,
    not the function's contract: each becomes a size of its own, named by the parameter's axis,
    so that `B, T, C = x.size()` still names the sizes the body relates."""
    from attnlint.analysis.symbolic import Sym
    from attnlint.analysis.values import Axis

    shape = argument.shape
    if shape is not None and param.sym is not None:
        scope = param.sym.factors[0][0].key if param.sym.factors else str(param.param)
        shape = tuple(
            Axis(Sym.atom(f"{scope}.shape[{i}]", f"{param.param}.shape[{i}]"), axis.role)
            if axis.size is not None and axis.size.is_const and axis.size.int_value != 1
            else axis
            for i, axis in enumerate(shape)
        )
    return argument.with_(
        shape=shape,
        param=param.param,
        node=param.node,
        # Inside the function its own parameter names say what each input is: `attend(q, q, q)`
        # in a self-attention smoke test passes queries for `k` and `v`.
        role=param.role or argument.role,
        mask=_merged_mask(param.mask, argument.mask),
        lengths=argument.lengths or param.lengths,
        positive_lengths=argument.positive_lengths,
        sym=argument.sym if argument.sym is not None else param.sym,
        # The callee sees the caller's shapes, padding, masks and scales, not the caller's
        # products: a helper that normalises what it is given (`get_attn(scores, dim=-2)`)
        # chose its axis for every caller.
        softmax=None,
        scores=None,
        fills=(),
        additive_fill=None,
    )


def _caller_sizes(params: Dict[str, Value], bound: Dict[str, Value]) -> Dict[str, "Sym"]:
    """The sizes `merge_into_param` renamed (a caller's `60` became the callee's `V.shape[2]`),
    keyed by the callee's atom: what each is in the caller."""
    mapping: Dict[str, "Sym"] = {}
    for name, argument in bound.items():
        param = params.get(name)
        if param is None or param.shape is None or argument.shape is None or len(param.shape) != len(argument.shape):
            continue
        for inside, outside in zip(param.shape, argument.shape):
            size = inside.size
            if size is None or outside.size is None or size == outside.size:
                continue
            if len(size.factors) == 1 and size.coeff == 1 and size.factors[0][1] == 1:
                mapping[size.factors[0][0].key] = outside.size
    return mapping


def _in_caller_sizes(value: Value, mapping: Dict[str, "Sym"]) -> Value:
    """A helper's result in the caller's sizes: `scaled_dot_product(q, k, v)` returns
    (B, 8, T, 8) for q, k, v of that shape, not sizes named after its own parameters, so the
    caller can compare them with its own (a reshape of the result, a product with it)."""
    if not mapping:
        return value

    def size(sym):
        return None if sym is None else sym.substitute(mapping)

    changes = {}
    if value.shape is not None:
        changes["shape"] = tuple(replace(axis, size=size(axis.size)) for axis in value.shape)
    if value.last_size is not None:
        changes["last_size"] = size(value.last_size)
    if value.sym is not None:
        changes["sym"] = size(value.sym)
    if value.elements:
        changes["elements"] = tuple(_in_caller_sizes(e, mapping) for e in value.elements)
    if value.each is not None:
        changes["each"] = _in_caller_sizes(value.each, mapping)
    return value.with_(**changes) if changes else value


def _in_caller_params(value: Value, bound: Dict[str, Value]) -> Value:
    """A helper's result in the caller's terms: a value that is one of the helper's parameters
    handed back (`repeat_kv(x, n)` returning `x`) came from the caller's argument, so it is the
    caller's parameter if that was one (not a parameter named `x` of the caller), in the role
    the caller's argument has."""
    if value.param is not None and value.param in bound:
        # Its name inside the helper said its role there (`val` of `default(val, d)` reads as
        # a value tensor); back in the caller it is what the caller passed.
        passed = bound[value.param]
        value = value.with_(param=passed.param, role=passed.role)
    if value.elements and any(e.param is not None for e in value.elements):
        value = value.with_(elements=tuple(_in_caller_params(e, bound) for e in value.elements))
    return value


def _words(name: str):
    from attnlint.analysis.names import words

    return [w.lower() for w in words(name)]


def _merged_mask(named, passed):
    """The callers' mask facts, except that an example written out in a smoke test
    (`torch.tensor([[True, False], ...])`) says less than the parameter's name (`pad_mask`):
    it adds only which of its rows are uniform; and what True means, when the callers' mask does
    not show it, is what the name says."""
    from dataclasses import replace as _replace

    if passed is not None and passed.origin == "literal" and named is not None:
        return _replace(named, uniform_rows=passed.uniform_rows)
    if (
        passed is not None
        and named is not None
        and passed.convention is None
        and named.convention is not None
        and named.param is not None
        and {"pad", "padding"} & set(_words(named.param))
    ):
        # The callers built a mask the code does not say the meaning of (`t >= valid_t` cat with
        # a prefix): a padding mask's name says it (`key_padding_mask`: True at the padding).
        # Not `attention_mask`, which Mask2Former-style code also uses for True = masked.
        return _replace(passed, convention=named.convention, marks_padding=passed.marks_padding or named.marks_padding)
    return passed or named


def _abstract(value: Value, by_name: bool = False):
    """A hashable description of an argument value, for the summary cache. `by_name`: sizes
    described by their atoms' names, not their keys (see refinement_signature)."""
    sym = _named(value.sym) if by_name else value.sym
    shape = value.shape
    if by_name and shape is not None:
        shape = tuple((_named(axis.size), axis.role, _named(axis.folded_heads)) for axis in shape)
    scale = _named(value.scale) if by_name and isinstance(value.scale, Sym) else value.scale
    return (
        value.kind,
        value.rank,
        value.role,
        shape,
        value.scaled,
        scale,
        value.mask,
        value.padding,
        value.module_type,
        value.feature_last,
        value.feature_transposed,
        sym,
        value.int_value,
        value.is_none,
        tuple(_abstract(element, by_name) for element in value.elements),
        id(value.ctor) if value.ctor is not None else None,
        # `lookup(stoi, "<pad>")` and `lookup(stoi, "<unk>")` are different calls.
        value.text,
        value.token_id,
        value.token_ids,
        value.names_dtype,
        value.vocabulary,
        tuple((key, _abstract(entry, by_name)) for key, entry in value.entries),
        # What iterating it gives: a DataLoader's batches.
        _abstract(value.each, by_name) if value.each is not None else None,
    )


def _named(sym: Optional[Sym]):
    """A size by the names of its atoms (`config` of whichever caller)."""
    if sym is None:
        return None
    return (sym.coeff, tuple((atom.name, exp) for atom, exp in sym.factors))


def refinement_signature(bindings: Dict[str, Value], scope: CallerScope) -> tuple:
    """What a caller context says, up to the names of the atoms its sizes are made of.

    A parameter passed down a chain of constructors (`config`, `dim`) is an atom of the
    outermost caller read so far, and each round of refinement reads one caller further up: the
    atom's key changes at every round, what it says does not. What it says is which sizes are
    the same, and which are the callers' (the scope), and names answer both: two readings that
    differ only in the keys of their atoms find the same facts."""
    return (
        tuple(sorted((name, _abstract(value, by_name=True)) for name, value in bindings.items())),
        (
            frozenset(atom.name for atom in scope.size_atoms),
            frozenset(atom.name for atom in scope.layer_inputs),
            frozenset((key.rsplit(":", 1)[-1], number) for key, number in scope.size_examples),
        ),
    )


class ImportedNames:
    """Functions (or classes) imported from other modules of the project, by local name: the
    module's summaries and the name there. A name deferred (imported by a module that is itself
    read for an importer) is looked up in its module when first asked for."""

    def __init__(self, classes: bool) -> None:
        self.classes = classes
        self._known: Dict[str, Tuple["Summaries", str]] = {}
        self._deferred: Dict[str, tuple] = {}

    def add(self, local: str, summaries: "Summaries", name: str) -> None:
        self._known[local] = (summaries, name)

    def defer(self, local: str, project, path, name: str, dependencies: Optional[list] = None) -> None:
        """`dependencies`: the importer's list of the files its results depend on, which the
        module's own dependencies join once it is read."""
        self._deferred[local] = (project, path, name, dependencies)

    def _settle(self, local: str) -> None:
        found = self._deferred.pop(local, None)
        if found is None:
            return
        project, path, name, dependencies = found
        other = project.analysis_of(path)
        if other is None or other.summaries is None:
            return
        if dependencies is not None:
            dependencies.extend(f for f in other.imported_files if f not in dependencies)
        if (name in other.classes) if self.classes else (name in other.summaries.definitions.functions):
            self._known[local] = (other.summaries, name)

    def __contains__(self, local: object) -> bool:
        if isinstance(local, str) and local in self._deferred:
            self._settle(local)
        return local in self._known

    def __getitem__(self, local: str) -> Tuple["Summaries", str]:
        self._settle(local)
        return self._known[local]

    def keys(self):
        return self._known.keys()


class Summaries:
    def __init__(self, analysis: "ModuleAnalysis", definitions: Definitions) -> None:
        self.analysis = analysis
        self.definitions = definitions
        self._cache: Dict[tuple, Tuple[Value, Optional[int]]] = {}
        self._active: set = set()
        # What each function's text shows of its parameters (Evaluator._body_facts), by node id.
        self.body_facts: Dict[int, tuple] = {}
        # Functions imported from other modules of the project: local name -> (their
        # summaries, their name there).
        self.external = ImportedNames(classes=False)
        # Classes imported from other modules of the project, the same way: their instances are
        # modules whose methods are summarised there (`from .decoder import Decoder`).
        self.external_classes = ImportedNames(classes=True)
        self._weight_uses: Dict[int, object] = {}
        # `.T` sites that a summary saw applied to a batched (3-D or more) tensor in a product:
        # on that call the code runs with batched input, whatever other callers pass (a smoke
        # test calling a module with a 2-D and a 3-D tensor). By node id.
        self.batched_dot_t: Dict[int, object] = {}
        # `view`/`reshape` sites a summary saw with both shapes known, where the function's own
        # reading (joined over its callers) may not know them: `x.reshape(b, -1, h * d_k)` of
        # (b, h, n, d_k) when a smoke test calls the layer on `torch.randn(2, 7, d_model)`.
        # By call node id.
        self.views_in_calls: Dict[int, object] = {}
        # Softmax sites of helpers evaluated for one call, whose scores are a product the caller
        # made: by the product's node id (see ModuleAnalysis.scores_through_helpers).
        self.helper_softmax: Dict[int, object] = {}
        # Softmax sites of a helper's own product, as one call reads them (`attend(q, k, v)` that
        # scales only `if exists(scale)` and is called without `scale`): by the call's node id.
        self.softmax_in_calls: Dict[int, object] = {}
        # Fills in a helper that add a mask the call hands it to the scores (`scores + bias` of
        # `scaled_dot_product(q, k, v, bias=attn_bias)`), as that call reads them: by call node id.
        self.added_masks_in_calls: Dict[int, object] = {}
        # SDPA calls of a helper given a mask and `is_causal` true, as one call binds them
        # (`self.self_attn(h, h, h, attn_mask=pad, causal=True)`): by call node id.
        self.causal_with_mask_in_calls: Dict[int, object] = {}
        self._declared_fields: Optional[Dict[str, frozenset]] = None
        self._attributes_read: Dict[int, tuple] = {}
        # The calls each reading of a function makes to the module's functions (bound_calls).
        self._bound_calls: Dict[int, tuple] = {}
        # How many score products any evaluation of this module has described: the only facts
        # that read the sizes callers have in scope (flow.CallerScope). A reading that described
        # none cannot change when only that scope does (see analysis._refine_by_callers).
        self.scope_readings = 0

    def forget_results(self) -> None:
        """Drop the summaries computed so far: a class's attributes changed (an `__init__` read
        again with its callers' context), and methods' results read them."""
        self._cache.clear()

    def weight_uses(self, call: cst.Call):
        """The uses of one softmax call's weights, shared by its sites in every evaluation
        (its function's, the summaries callers compute, the caller contexts)."""
        from attnlint.analysis.values import WeightUses

        if id(call) not in self._weight_uses:
            self._weight_uses[id(call)] = (call, WeightUses())
        return self._weight_uses[id(call)][1]

    # ------------------------------------------------------------------ resolution
    def resolve(self, ev: "Evaluator", name: str, method: bool, class_name: Optional[str] = None):
        """(owning class name or None, FunctionDef) of a call's target, or None."""
        if method:
            owner = class_name if class_name is not None else (ev.cls.name if ev.cls is not None else None)
            found = self.definitions.method(owner, name)
            if found is not None:
                return found
            return None
        node = self.definitions.functions.get(name)
        return (None, node) if node is not None else None

    def root_module(self) -> Optional[str]:
        """The one nn.Module class of the module that no class here builds (`Encoder` over its
        `Attention` layers): what a function handed `model` from outside most likely gets, as
        a method name defined by one class names that class (unique_method). None unless there
        is exactly one such class and it defines `forward`."""
        if not hasattr(self, "_root_module"):
            self._root_module = _root_module(self.definitions)
        return self._root_module

    def unique_method(self, name: str):
        """A method name defined by exactly one class of the module (duck typing: a receiver of
        unknown class that has this method is most likely that class)."""
        owners = self.definitions.method_owners.get(name, [])
        if len(owners) != 1 or name.startswith("__"):
            return None
        return owners[0], self.definitions.methods[(owners[0], name)]

    # ------------------------------------------------------------------ summaries
    def call(
        self,
        ev: "Evaluator",
        node: cst.Call,
        name: str,
        values: List[Value],
        method: bool,
        class_name: Optional[str] = None,
        target=None,
    ) -> Optional[Value]:
        if target is None and not method and name in self.external and name not in self.definitions.functions:
            from attnlint.analysis.project import foreign

            other, remote = self.external[name]
            result = other.call(ev, node, remote, values, False)
            self._adopt_call_records(other, node)
            return None if result is None else foreign(result, other)
        if target is None and method and class_name in self.external_classes and class_name not in self.definitions.classes:
            from attnlint.analysis.project import foreign

            other, remote = self.external_classes[class_name]
            result = other.call(ev, node, name, values, True, class_name=remote)
            self._adopt_call_records(other, node)
            return None if result is None else foreign(result, other)
        if target is None:
            target = self.resolve(ev, name, method, class_name)
        if target is None:
            return None
        owner, definition = target
        if ev.depth >= MAX_DEPTH or id(definition) in self._active:
            _cut_short[0] += 1
            return None
        bound = bind_arguments(definition, node, values, method=owner is not None)
        if bound is None:
            return None
        key = (id(definition), tuple(sorted((k, _abstract(v)) for k, v in bound.items())))
        cached = self._cache.get(key)
        # A summary some call inside was cut short in holds for calls at least as deep; one asked
        # for nearer the top is computed again (a helper's helper is within reach from there).
        if cached is not None and (cached[1] is None or ev.depth >= cached[1]):
            return _in_caller_params(cached[0], bound)
        before = _cut_short[0]
        self._active.add(id(definition))
        try:
            result = self._evaluate(ev, owner, definition, bound, calling=node)
        finally:
            self._active.discard(id(definition))
        self._cache[key] = (result, None if _cut_short[0] == before else ev.depth)
        return _in_caller_params(result, bound)

    def _adopt_call_records(self, other: "Summaries", node: cst.Call) -> None:
        """What another file's summary recorded for this call (its sites as this call reads
        them) belongs to this file's call."""
        for mine, theirs in (
            (self.softmax_in_calls, other.softmax_in_calls),
            (self.added_masks_in_calls, other.added_masks_in_calls),
            (self.causal_with_mask_in_calls, other.causal_with_mask_in_calls),
        ):
            if id(node) in theirs:
                mine[id(node)] = theirs[id(node)]

    def call_closure(
        self,
        ev: "Evaluator",
        factory_call: cst.Call,
        factory: cst.FunctionDef,
        closure: cst.FunctionDef,
        factory_values: List[Value],
        closure_values: List[Value],
        closure_call: Optional[cst.Call] = None,
    ) -> Value:
        """What a closure returns when called with `closure_values`, its free names holding what
        the factory bound them to for this call (`make_collate(cfg)` with `pad = cfg.pad_id`
        and `def collate(batch): ... torch.full(..., pad)`). Unknown past the depth limit."""
        if ev.depth + 1 >= MAX_DEPTH or id(factory) in self._active or id(closure) in self._active:
            return UNKNOWN
        outer = bind_arguments(factory, factory_call, factory_values, method=False)
        if outer is None:
            return UNKNOWN
        self._active.add(id(factory))
        try:
            scope = self._run_body(ev, None, factory, outer).env
            call = closure_call or cst.Call(
                func=cst.Name(closure.name.value), args=[cst.Arg(value=cst.Name("_"))] * len(closure_values)
            )
            bound = bind_arguments(closure, call, closure_values, method=False)
            if bound is None:
                return UNKNOWN
            self._active.add(id(closure))
            try:
                return self._evaluate(ev, None, closure, bound, free=scope)
            finally:
                self._active.discard(id(closure))
        finally:
            self._active.discard(id(factory))

    def _run_body(
        self, ev: "Evaluator", owner: Optional[str], definition: cst.FunctionDef, bound, free=None, calling=None
    ):
        """The evaluator after running `definition`'s body for one call (`free`: the names an
        enclosing function bound, for a closure; `calling`: that call)."""
        from attnlint.analysis.flow import Evaluator, FunctionFacts, block_statements

        facts = FunctionFacts(node=definition, name=definition.name.value, class_name=owner)
        cls = self.analysis.classes.get(owner) if owner is not None else None
        sub = Evaluator(
            facts,
            self.analysis.aliases,
            cls,
            class_names=self.analysis.class_names,
            constants=self.analysis.constants,
            project=self,
            depth=ev.depth + 1,
            calling=calling,
        )
        if free:
            sub.env.update(free)
        sub.bind_params(definition.params, bindings=bound, one_call=True)
        sub.run(block_statements(definition.body))
        return sub

    def _evaluate(
        self, ev: "Evaluator", owner: Optional[str], definition: cst.FunctionDef, bound, free=None, calling=None
    ) -> Value:
        # The callee runs in its own module's scope (its imports and constants).
        facts = self._run_body(ev, owner, definition, bound, free, calling).facts
        for site in facts.dot_t_sites:
            if site.in_matmul and site.receiver.rank is not None and site.receiver.rank >= 3:
                self.batched_dot_t.setdefault(id(site.node), site)
        for view in facts.view_sites:
            self.views_in_calls.setdefault(id(view.call), view)
        for site in facts.softmax_sites:
            scores = site.input.scores
            if scores is not None and not contains(definition, scores.product):
                # The caller's product reaches a helper's softmax (`masked_softmax(scores, lens)`):
                # what that softmax sees of this caller's scores, by the product.
                self.helper_softmax.setdefault(id(scores.product), site)
            elif scores is not None and calling is not None:
                # The latest reading of the call is the best informed (refined by its callers).
                self.softmax_in_calls[id(calling)] = (calling, site)
        if calling is not None:
            from attnlint.analysis.attention_flags import causal_flags_with_masks
            from attnlint.analysis.flow import mask_root

            for found in causal_flags_with_masks(facts):
                if not found.flag_is_literal and isinstance(found.flag, cst.Name) and found.flag.value in bound:
                    # The flag is the helper's parameter, true for this call.
                    self.causal_with_mask_in_calls[id(calling)] = (calling, found)

            reaching = {id(fill) for site in facts.softmax_sites for fill in site.input.fills}
            for fill in facts.fill_sites:
                param = mask_root(fill.mask_node)  # the helper's parameter the call binds
                if fill.adds_the_mask and id(fill) in reaching and param is not None and param in bound:
                    from attnlint.analysis.calls import argument

                    names = [p.name.value for p in definition.params.params]
                    position = names.index(param) - (owner is not None) if param in names else -1
                    arg = argument(calling, position, param) if position >= 0 else None
                    if arg is not None:
                        self.added_masks_in_calls[id(calling)] = (calling, fill, param, arg.value)
        if not facts.returns:
            return UNKNOWN
        result = facts.returns[0]
        for other in facts.returns[1:]:
            result = join(result, other)
        return _in_caller_sizes(result, _caller_sizes(facts.params, bound))

    # ------------------------------------------------------------------ caller contexts
    def attributes_read(self, function: cst.FunctionDef) -> Dict[str, frozenset]:
        """For each plain name in `function`'s body, the attributes read from it (`config.n_embd`
        -> {"n_embd"} under "config"). One walk per function, kept for every reading."""
        key = id(function)
        cached = self._attributes_read.get(key)
        if cached is None or cached[0] is not function:
            found: Dict[str, set] = {}
            stack: list = [function.body]
            while stack:
                node = stack.pop()
                if type(node) is cst.Attribute and type(node.value) is cst.Name:
                    found.setdefault(node.value.value, set()).add(node.attr.value)
                stack.extend(child_nodes(node))
            cached = (function, {name: frozenset(attrs) for name, attrs in found.items()})
            self._attributes_read[key] = cached
        return cached[1]

    def declared_fields(self) -> Dict[str, frozenset]:
        """For each class of the module, the names its body declares with an annotation
        (`n_embd: int = 768`): the fields of a dataclass-style configuration. Read once."""
        if self._declared_fields is None:
            found: Dict[str, frozenset] = {}
            for name, node in self.definitions.classes.items():
                fields = {
                    small.target.value
                    for stmt in getattr(node.body, "body", ())
                    if isinstance(stmt, cst.SimpleStatementLine)
                    for small in stmt.body
                    if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name)
                }
                if fields:
                    found[name] = frozenset(fields)
            self._declared_fields = found
        return self._declared_fields

    def caller_bindings(
        self, callers: Optional[list] = None, target: Optional[cst.FunctionDef] = None
    ) -> Dict[int, Tuple[Optional[str], cst.FunctionDef, Dict[str, Value], CallerScope]]:
        """For each function of the module called here: the parameters every call binds to a
        value with something to say, joined over the calls, and the sizes its callers have in
        scope (see flow.CallerScope). `callers`: the functions whose calls count (every function
        analysed when None); `target`: only that function's context."""
        per_target: Dict[int, list] = {}
        targets: Dict[int, tuple] = {}
        scopes: Dict[int, CallerScope] = {}
        for caller in self.analysis.functions if callers is None else callers:
            for key, found, bound in self.bound_calls(caller):
                if target is not None and key != id(target):
                    continue
                if bound is None:
                    per_target[key] = None  # one call we cannot bind: no context
                    continue
                targets[key] = found
                if per_target.get(key, []) is not None:
                    per_target.setdefault(key, []).append(bound)
                    scopes[key] = scopes.get(key, CallerScope()) | self._scope_of(caller)
        out = {}
        for key, calls in per_target.items():
            if not calls or key not in targets:
                continue
            owner, definition = targets[key]
            joined = _joined_arguments(owner, definition, calls)
            if joined:
                out[key] = (owner, definition, joined, scopes.get(key, CallerScope()))
        return out

    def bound_calls(self, caller) -> List[Tuple[int, tuple, Optional[Dict[str, Value]]]]:
        """(target's key, (owner, definition), the parameters the call binds or None) for each
        call `caller` makes to a function of the module; remembered per reading of the caller."""
        cached = self._bound_calls.get(id(caller))
        if cached is not None and cached[0] is caller:
            return cached[1]
        out = []
        for call in caller.calls:
            found = self.definitions.target_of(call, caller.class_name)
            if found is None:
                continue
            owner, definition = found
            out.append((id(definition), found, bind_arguments(definition, call.call, list(call.values), method=owner is not None)))
        self._bound_calls[id(caller)] = (caller, out)
        return out

    def _scope_of(self, caller) -> CallerScope:
        """The sizes in scope at the end of `caller` (its locals and its class's attributes)."""
        from attnlint.analysis.scores import layer_input_atoms_of, size_atoms_of

        cls = self.analysis.classes.get(caller.class_name) if caller.class_name else None
        values = list(caller.final_env.values()) + (list(cls.attrs.values()) if cls is not None else [])
        examples = tuple(sorted(cls.size_examples.items())) if cls is not None else ()
        own = CallerScope(frozenset(size_atoms_of(values)), frozenset(layer_input_atoms_of(values)), examples)
        return own | cls.caller_scope if cls is not None else own


def _joined_arguments(owner: Optional[str], definition: cst.FunctionDef, calls: list) -> Dict[str, Value]:
    """The parameters of `definition` that every one of `calls` (their bound arguments) binds to
    something telling, joined over the calls."""
    star = definition.params.star_arg
    names = (
        param_names(definition, owner is not None)
        + ([star.name.value] if isinstance(star, cst.Param) else [])
        + [p.name.value for p in definition.params.kwonly_params]
    )
    joined: Dict[str, Value] = {}
    candidates: Dict[str, Value] = {}
    defaults = _int_defaults(definition)
    for name in names:
        passed = [c.get(name) for c in calls]
        if all(v is None for v in passed) and name in defaults:
            # Every call here relies on the default (`ignore_index=-100`): that number is the
            # parameter's value for them. Its size atom stays (shapes relate names, not one
            # caller's numbers).
            joined[name] = Value(kind="scalar", int_value=defaults[name])
            continue
        if any(v is None for v in passed):
            continue  # some caller relies on the default
        value = passed[0]
        for other in passed[1:]:
            value = join(value, other)
        candidates[name] = value
    joined.update(
        {
            name: v
            for name, v in candidates.items()
            if informative_binding(candidates, name)
            or (definition.name.value == "__init__" and same_quantity(name, v))
        }
    )
    return joined


def _root_module(definitions: Definitions) -> Optional[str]:
    from attnlint.analysis.flow import walk_nodes

    def is_module(name: str, seen=()) -> bool:
        bases = definitions.bases.get(name, ())
        return "Module" in bases or any(b in definitions.classes and b not in seen and is_module(b, seen + (name,)) for b in bases)

    modules = [name for name in definitions.classes if is_module(name)]
    built = set()
    for name in modules:
        for node in walk_nodes(definitions.classes[name]):
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value != name:
                built.add(node.func.value)
    roots = [name for name in modules if name not in built and not _is_loss_module(name, definitions.classes[name])]
    if len(roots) != 1 or definitions.method(roots[0], "forward") is None:
        return None
    return roots[0]


_LOSS_WORDS = ("loss", "criterion")


def _is_loss_module(name: str, node: cst.ClassDef) -> bool:
    """A criterion written as an nn.Module (`class Seq2SeqCriterion`, or one whose only layers are
    losses: `self.loss = nn.CrossEntropyLoss(...)`): handed labels, not the batch a model gets."""
    from attnlint.analysis.flow import walk_nodes
    from attnlint.analysis.names import words

    if any(w in _LOSS_WORDS for w in words(name)):
        return True
    layers = []
    for inner in walk_nodes(node):
        if isinstance(inner, cst.Call):
            func = inner.func
            callee = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
            if isinstance(callee, str) and callee[:1].isupper():
                layers.append(callee)
    return bool(layers) and all(layer.endswith("Loss") for layer in layers)
