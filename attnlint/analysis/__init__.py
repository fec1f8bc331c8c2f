"""The shared analysis: an abstract interpreter over LibCST that every rule asks questions of.

For each function (and the module's top-level code, `if __name__ == "__main__":` blocks included)
the pass records the facts rules need: the role of each value (query, key, scores, weights,
mask), its symbolic shape (sizes and what each axis holds), the scale applied to Q·Kᵀ and how it
compares to 1/sqrt(head_dim), which axis holds the keys, where masks and padding come from, and
which guards reach each use. Unknown facts stay unknown, and unknown never fires.

Layout:
- :mod:`.flow`: statements, branches, joins, binding, comprehensions (the flow machinery);
- :mod:`.handlers`: the tables of known callables, which the domain modules fill:
  :mod:`.shapes`, :mod:`.scores`, :mod:`.softmax`, :mod:`.masks`, :mod:`.attention`,
  :mod:`.losses`, :mod:`.modules`, :mod:`.einops_calls`;
- :mod:`.values` (typed facts), :mod:`.symbolic` (symbolic sizes);
- :mod:`.summaries` (helpers' results; facts from callers), :mod:`.project` (other files).

Class bodies and `__init__` are read first, so what `__init__` builds (`nn.Softmax(dim=1)`,
registered buffers, `self.head_dim = dim // heads`) is known inside `forward`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Callable, Dict, List, Optional, Set, Tuple

import libcst as cst

from attnlint.analysis import masks
from attnlint.analysis.names import child_nodes
from attnlint.analysis.modules import self_attr
from attnlint.analysis.flow import ClassFacts, DotTSite, Evaluator, FunctionFacts, block_statements, mask_root, walk_nodes
from attnlint.analysis.calls import argument as call_argument
from attnlint.analysis.names import collect_aliases, contains, iter_statements, names_in, names_scale, plain_names_read
from attnlint.analysis.project import Project, foreign, imported_names
from attnlint.analysis.selection import CONTEXT_ROUNDS, NOTHING, FirstReading, definitions_in
from attnlint.analysis.summaries import Definitions, Summaries, param_names, refinement_signature
from attnlint.analysis.values import MASKED, CallerScope, SoftmaxSite, Value, ViewSite

__all__ = ["ModuleAnalysis", "analyze_module", "DotTSite", "SoftmaxSite", "FunctionFacts", "ViewSite"]


@dataclass
class ModuleAnalysis:
    module: cst.Module
    aliases: Dict[str, str]
    classes: Dict[str, ClassFacts] = field(default_factory=dict)
    functions: List[FunctionFacts] = field(default_factory=list)
    class_names: frozenset = frozenset()
    constants: Dict[str, object] = field(default_factory=dict)
    # Other files of the checked project whose facts this analysis used (`from .data import PAD_ID`):
    # a result that depends on them is only as fresh as they are.
    imported_files: List[Path] = field(default_factory=list)
    # Where the module lies, when it is a file of a checked project (for facts of its neighbours).
    path: Optional[Path] = field(default=None, repr=False)
    in_project: bool = field(default=False, repr=False)

    # Indexes built once, on first use (a query never scans every function of the module).
    _owner_of_site: Optional[Dict[int, FunctionFacts]] = field(default=None, repr=False)
    _calls_by_callee: Optional[Dict[tuple, list]] = field(default=None, repr=False)
    _forward_by_class: Optional[Dict[Optional[str], FunctionFacts]] = field(default=None, repr=False)
    _parents: Optional[Dict[int, cst.CSTNode]] = field(default=None, repr=False)
    summaries: Optional[Summaries] = field(default=None, repr=False)
    _pads_left: Optional[bool] = field(default=None, repr=False)
    _torch_name: Optional[tuple] = field(default=None, repr=False)

    @property
    def pads_left(self) -> bool:
        """The file pads some batch on the left (see analysis.padding_side), or a file of its
        package that imports it does (a trainer that left-pads what it hands the model); walked
        once. A neighbour that shows it is a file this analysis depends on."""
        if self._pads_left is None:
            from attnlint.analysis.padding_side import importers_showing_left_padding, shows_left_padding

            self._pads_left = shows_left_padding(self.module)
            if not self._pads_left and self.in_project and self.path is not None:
                shown = importers_showing_left_padding(Path(self.path))
                if shown:
                    self._pads_left = True
                    self.imported_files.extend(p for p in shown if p not in self.imported_files)
        return self._pads_left

    @property
    def torch_name(self) -> Optional[str]:
        """The name this file binds the `torch` module to (`import torch`), for a fix to write;
        None when it binds none (`import torch.nn as nn` alone binds `nn`). Read once."""
        if self._torch_name is None:
            from attnlint.analysis.names import collect_aliases

            bound = collect_aliases(self.module, defaults=False).items()
            self._torch_name = (next((local for local, full in bound if full == "torch"), None),)
        return self._torch_name[0]

    def can_empty_a_row(self, mask) -> bool:
        """Can this mask leave some query with no key at all (MaskFacts)?"""
        return bool(mask.can_mask_whole_row or (mask.padding_under_causal and self.pads_left))

    def reset_indexes(self) -> None:
        self._owner_of_site = self._calls_by_callee = self._forward_by_class = None

    def parent_of(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        """The node's parent in the module (an index built once, on the first question)."""
        if self._parents is None:
            self._parents = _parent_index(self.module)
        return self._parents.get(id(node))

    def sites(self, kind: str) -> list:
        """Every site of one kind (`fill_sites`, `mask_uses`, ...) over all functions."""
        return [site for f in self.functions for site in getattr(f, kind)]

    def function_of(self, site) -> Optional[FunctionFacts]:
        """The function a site (softmax, fill, mask use, attention call, view) was found in."""
        if self._owner_of_site is None:
            index: Dict[int, FunctionFacts] = {}
            for function in self.functions:
                for kind in _SITE_KINDS:
                    for s in getattr(function, kind):
                        index.setdefault(id(s), function)
            self._owner_of_site = index
        return self._owner_of_site.get(id(site))

    def arguments_for(self, function: FunctionFacts, param: str) -> List[Value]:
        """What callers in this file pass for `param` of `function` (a method: through `self.`)."""
        found = []
        for call, position in self._calls_binding(function, param):
            value = call.argument(position, param)
            if value is not None:
                found.append(value)
        return found

    def argument_nodes_for(self, function: FunctionFacts, param: str) -> List[cst.BaseExpression]:
        """The expressions callers in this file write for `param` of `function` (where a wrong
        value passed in is written), in the order of the calls."""
        found = []
        for call, position in self._calls_binding(function, param):
            arg = call_argument(call.call, position, param)
            if arg is not None:
                found.append(arg.value)
        return found

    def _calls_binding(self, function: FunctionFacts, param: str):
        """(call site, position of `param` with self not counted) for each call of `function`."""
        if function.node is None or not isinstance(function.node, cst.FunctionDef):
            return []
        names = [p.name.value for p in function.node.params.params]
        method = function.class_name is not None
        if method and names and names[0] in ("self", "cls"):
            names = names[1:]
        position = names.index(param) if param in names else 99
        if self._calls_by_callee is None:
            index: Dict[tuple, list] = {}
            for caller in self.functions:
                for call in caller.calls:
                    # A call through an instance names its class (`Attention(temperature=...)` is
                    # Attention's `__init__`, no other class's); a `self.` call may reach a base's.
                    index.setdefault((call.callee, call.method, call.callee_class), []).append(call)
            self._calls_by_callee = index
        calls = list(self._calls_by_callee.get((function.name, method, None), ()))
        if method:
            calls += self._calls_by_callee.get((function.name, method, function.class_name), ())
        return [(call, position) for call in calls]

    def mask_passed_by_caller(self, use) -> Optional[cst.BaseExpression]:
        """For a mask use whose mask is a parameter of its function, as it is (`src_padding_mask`
        handed to nn.Transformer), whose meaning its callers showed: the argument the first
        caller in this file writes for it, where that meaning is decided. None otherwise."""
        function = self.function_of(use)
        node = use.mask_node
        if function is None or not isinstance(node, cst.Name) or node.value not in function.params:
            return None
        bound = function.params[node.value]
        if bound.mask is None or bound.mask.convention is None or bound.mask.origin == "name":
            return None  # what the parameter means is not its callers' to say (or its name says)
        named = masks.from_local_name(node.value)
        if named is not None and named.convention == bound.mask.convention:
            # `valid` handed a True-for-real-frames mask: the function's own name for it says
            # what the callers pass; the use that reads it the other way is the mistake.
            return None
        if self._read_as_made_elsewhere(function, node.value):
            # The caller hands the same mask to another layer that fills with it as it was
            # made (`masked_fill(~frame_mask, -inf)` in the pooling): the mask is right, and
            # this use, which reads it the other way, is the mistake.
            return None
        return self._where_meaning_is_decided(function, node.value)

    def _read_as_made_elsewhere(self, function: FunctionFacts, param: str) -> bool:
        """Whether a caller passing a local for `param` of `function` passes that local to
        another function of this file too, which fills the scores where the mask says masked
        (its fill reads the parameter as the caller made it)."""
        for call, position in self._calls_binding(function, param):
            arg = call_argument(call.call, position, param)
            caller = self._caller_of(call)
            if arg is None or caller is None or not isinstance(arg.value, cst.Name):
                continue
            local = arg.value.value
            for other in caller.calls:
                if other is call:
                    continue
                receiver = self._callee_facts(other, caller)
                if receiver is None or receiver is function:
                    continue
                for name in receiver.params:
                    if not _passes(other, receiver, name, local):
                        continue
                    for site in receiver.fill_sites:
                        facts = site.mask.mask
                        if facts is not None and facts.convention == MASKED and mask_root(site.mask_node) == name:
                            return True
        return False

    def enclosing(self, node: cst.CSTNode, kind=cst.FunctionDef) -> Optional[cst.CSTNode]:
        """The nearest definition of `kind` (a function, a class) around `node` in this module."""
        parent = self.parent_of(node)
        while parent is not None and not isinstance(parent, kind):
            parent = self.parent_of(parent)
        return parent

    def in_property(self, node: cst.CSTNode) -> bool:
        """`node` is in the body of a `@property` method."""
        from attnlint.analysis.flow import _is_property

        return _is_property(self.enclosing(node))

    @staticmethod
    def takes_keyword(call: cst.Call, definition: Optional[cst.FunctionDef], name: str) -> bool:
        """`call` of `definition` can be given `name=` as a keyword: a parameter of that name the
        call passes neither by keyword, nor by position, nor through `*args`/`**kwargs`."""
        if not isinstance(definition, cst.FunctionDef) or any(a.star for a in call.args):
            return False
        params = [p.name.value for p in definition.params.params]
        if name not in params or any(a.keyword is not None and a.keyword.value == name for a in call.args):
            return False
        bound_first = 1 if params and params[0] in ("self", "cls") else 0
        return sum(1 for a in call.args if a.keyword is None) <= params.index(name) - bound_first

    def padding_masks_kept_from_attention(self, function: FunctionFacts) -> list:
        """(attention call, padding masks) where `function` uses a padding mask only away from
        an attention over the same sequence that gets none (see attention)."""
        from attnlint.analysis.attention import padding_masks_kept_from_attention

        return padding_masks_kept_from_attention(function, lambda site: self._callee_facts(site, function))

    def callee_facts(self, call, caller: FunctionFacts) -> Optional[FunctionFacts]:
        """The facts of the function of this file a call site (flow.CallSite) reaches, if any."""
        return self._callee_facts(call, caller)

    def _callee_facts(self, call, caller: FunctionFacts) -> Optional[FunctionFacts]:
        """The facts of the function of this file a call site reaches."""
        found = self.summaries.definitions.target_of(call, caller.class_name) if self.summaries is not None else None
        return next((f for f in self.functions if f.node is found[1]), None) if found is not None else None

    def _where_meaning_is_decided(self, function: FunctionFacts, param: str) -> Optional[cst.BaseExpression]:
        """The argument the first caller in this file writes for `param` of `function`, followed
        up through callers that only hand on a parameter of their own as it is (an encoder
        layer passing its `padding_mask` to its attention): the argument where the value is
        made or named anew. None when no caller passes it."""
        seen = set()
        found: Optional[cst.BaseExpression] = None
        while (id(function), param) not in seen and len(seen) < 2 * CONTEXT_ROUNDS:
            seen.add((id(function), param))
            calls = self._calls_binding(function, param)
            arg = call_argument(calls[0][0].call, calls[0][1], param) if calls else None
            if arg is None:
                return found
            found = arg.value
            caller = self._caller_of(calls[0][0])
            if caller is None or not isinstance(found, cst.Name):
                return found
            if found.value not in caller.params:
                # A local the caller builds once (`valid = arange(T) < lens[:, None]`): its
                # meaning is written where it is built.
                return _single_binding(caller.node, found.value) or found
            function, param = caller, found.value
        return found

    def _caller_of(self, call) -> Optional[FunctionFacts]:
        return next((f for f in self.functions if any(c is call for c in f.calls)), None)

    def scale_passed_by_caller(self, site: SoftmaxSite) -> Optional[cst.BaseExpression]:
        """For scores scaled by a factor made of one parameter of their function (`scores *
        scaling`, `/ math.sqrt(d_model)`): the argument the first caller in this file passes for
        it, where the value the scale uses is written. None when the factor is not a parameter."""
        scores = site.input.scores
        function = self.function_of(site)
        if scores is None or function is None or not scores.scale_steps:
            return None
        factor = scores.scale_steps[-1].factor
        if factor is None or not isinstance(function.node, cst.FunctionDef):
            return None
        # Plain names only: `self.scale` is no parameter, whatever its attribute is called.
        params = sorted(plain_names_read(factor) & set(function.params))
        if len(params) != 1:
            return None
        passed = self.argument_nodes_for(function, params[0])
        return passed[0] if passed else None

    def attribute_value_node(self, node: cst.BaseExpression) -> Optional[cst.BaseExpression]:
        """For `self.attr` read in a method (`scaling=self.scaling`): the expression its class's
        `__init__` sets it to (`self.scaling = config.hidden_size ** -0.5`), when it sets it
        exactly once and not to a parameter of its own."""
        if not isinstance(node, cst.Attribute) or self_attr(node) != node.attr.value:
            return None
        caller = next(
            (f for f in self.functions if isinstance(f.node, cst.FunctionDef) and f.class_name and contains(f.node, node)),
            None,
        )
        cls = self.classes.get(caller.class_name) if caller is not None else None
        init = _method_node(cls.node, "__init__") if cls is not None else None
        value = cls.attrs.get(node.attr.value) if cls is not None else None
        if init is None or value is None or value.node is None or not contains(init, value.node):
            return None
        if _assignments_of_self_attr(cls.node, node.attr.value) != 1 or _param_stored_in(init, node.attr.value):
            return None
        return value.node

    def scale_passed_to_constructor(self, site: SoftmaxSite) -> Optional[cst.BaseExpression]:
        """For scores scaled by one attribute (`q / self.temperature`) that `__init__` sets once to
        one of its parameters (`self.temperature = temperature`): the argument the constructor
        call in this file passes for it (`ScaledDotProductAttention(temperature=d_model ** 0.5)`),
        where the value the scale uses is written. None unless exactly one call passes it."""
        scores = site.input.scores
        function = self.function_of(site)
        steps = scores.every_scale_step if scores is not None else ()
        if function is None or len(steps) != 1 or function.class_name is None:
            return None
        factor = steps[0].factor
        if not isinstance(factor, cst.Attribute) or self_attr(factor) != factor.attr.value:
            return None
        cls = self.classes.get(function.class_name)
        init = _method_node(cls.node, "__init__") if cls is not None else None
        if init is None or _assignments_of_self_attr(cls.node, factor.attr.value) != 1:
            return None
        param = _param_stored_in(init, factor.attr.value)
        init_facts = next((f for f in self.functions if f.node is init), None)
        if param is None or init_facts is None:
            return None
        passed = self.argument_nodes_for(init_facts, param)
        return passed[0] if len(passed) == 1 else None

    def dropped_scale_parameters(self, function: FunctionFacts) -> List[str]:
        """Parameters named for a scale (`scaling`, `softmax_scale`) that `function` never reads,
        while some caller in this file passes one that is not a literal 1 (`scaling=self.scaling`):
        the function was handed its scale and dropped it (an `eager_attention_forward` that
        never multiplies by `scaling`)."""
        dropped = []
        for name in function.params:
            if not names_scale(name) or name in function.used_names:
                continue
            passed = self.argument_nodes_for(function, name)
            if any(not _is_unit_or_none(node) for node in passed):
                dropped.append(name)
        return dropped

    def nested_in(self, function: FunctionFacts) -> List[FunctionFacts]:
        """The functions defined inside `function`'s body (closures it calls: `def recurrence(...)`
        inside a decoder's forward), by position in the source."""
        outer = function.node
        if not isinstance(outer, cst.FunctionDef):
            return []
        inner = {id(n) for n in walk_nodes(outer.body) if isinstance(n, cst.FunctionDef)}
        return [f for f in self.functions if f is not function and id(f.node) in inner]

    def scale_definition(self, site: SoftmaxSite) -> Optional["ScaleDefinition"]:
        """For scores scaled by one attribute (`* self.scale`) that `__init__` sets once
        (`self.scale = dim ** -0.5`) and nothing else reads: where its value is written, which is
        where a scale of the wrong quantity is made and mended, and the expressions that hold
        the head dimension there."""
        scores = site.input.scores
        function = self.function_of(site)
        if scores is None or function is None or len(scores.scale_steps) != 1:
            return None
        factor = scores.scale_steps[0].factor
        if not isinstance(factor, cst.Attribute) or self_attr(factor) != factor.attr.value:
            return None  # `self.scale`, not `self.scale.data` or another object's attribute
        cls = self.classes.get(function.class_name) if function.class_name else None
        attr = factor.attr.value
        value = cls.attrs.get(attr) if cls is not None else None
        init = _method_node(cls.node, "__init__") if cls is not None else None
        if value is None or value.node is None or init is None or not contains(init, value.node):
            return None
        if _assignments_of_self_attr(cls.node, attr) != 1:
            return None  # set in several places: which one reaches the scores is not shown
        if _reads_of_self_attr(cls.node, attr) != 1:
            return None  # read elsewhere too (`self.head_dim` in views): its value is not the scale's alone
        head_dims = [d for d in (scores.head_dim, *scores.head_dim_aliases) if d is not None]
        right = value.sym is not None and any(
            value.sym == d.power(e) for d in head_dims for e in (Fraction(1), Fraction(1, 2), Fraction(-1, 2))
        )
        return ScaleDefinition(value.node, _head_dim_names_in_init(init, value.node, scores), right)

    def forward_of(self, class_name: Optional[str]) -> Optional[FunctionFacts]:
        if self._forward_by_class is None:
            self._forward_by_class = {}
            for function in self.functions:
                if function.name == "forward":
                    self._forward_by_class.setdefault(function.class_name, function)
        return self._forward_by_class.get(class_name)

    def interface_parameters(self) -> set:
        """(method name, mask parameter) pairs that form an interface several classes implement.

        `__call__` of attention processors, backends of one attention class (`LlamaSdpaAttention`
        subclassing `LlamaAttention`): one implementation may ignore what another needs. Plain
        `forward` methods of unrelated modules are not an interface.
        """
        owners: Dict[tuple, set] = {}
        signatures: Dict[tuple, set] = {}
        for function in self.functions:
            if function.class_name is None:
                continue
            for name in function.params:
                if masks.is_mask_param(name):
                    owners.setdefault((function.name, name), set()).add(function.class_name)
                    signatures.setdefault((function.name, name), set()).add(tuple(function.params))
        return {
            key
            for key, classes in owners.items()
            if len(classes) > 1
            and (key[0] != "forward" or self._related(classes) or _one_backend_signature(signatures[key]))
        }

    def drops_what_its_base_uses(self, function: FunctionFacts, param: str) -> bool:
        """`function` overrides a method of its class's base defined here that uses `param`, and
        adds parameters of its own: it extends that method (relative positions over plain
        attention), not a backend of one interface, and still owes `param` what the base does
        with it."""
        cls = self.classes.get(function.class_name) if function.class_name is not None else None
        if cls is None:
            return False
        for base in cls.bases:
            inherited = next((f for f in self.functions if f.class_name == base and f.name == function.name), None)
            if inherited is None or param not in inherited.used_names:
                continue
            if set(inherited.params) < set(function.params):
                return True
        return False

    def _related(self, classes: set) -> bool:
        """Do two of these classes share a base defined in this file (or subclass one another)?"""
        families: Dict[str, set] = {}
        for name in classes:
            facts = self.classes.get(name)
            local_bases = [b for b in facts.bases if b in self.classes] if facts else []
            families.setdefault(local_bases[0] if local_bases else name, set()).add(name)
        subclassing = any(b in classes for name in classes if name in self.classes for b in self.classes[name].bases)
        return subclassing or any(len(members) > 1 for members in families.values())

    @property
    def softmax_sites(self) -> List[SoftmaxSite]:
        return self.sites("softmax_sites")

    @property
    def scores_through_helpers(self) -> List[SoftmaxSite]:
        """Softmax sites of helpers the file's functions call with a product of their own
        (`scores = torch.bmm(q, k.transpose(1, 2)); masked_softmax(scores, valid_lens)`), as the
        helper sees that caller's scores: what is known of the product's scale there, which the
        helper's own reading (joined over every caller) cannot tell. Not those whose product some
        function's own softmax already normalises."""
        if self.summaries is None or not self.summaries.helper_softmax:
            return []
        own = {id(s.input.scores.product) for s in self.softmax_sites if s.input.scores is not None}
        return [s for key, s in self.summaries.helper_softmax.items() if key not in own]

    def unscaled_by_calls(self) -> List[Tuple[cst.Call, SoftmaxSite]]:
        """(call, the helper's softmax as that call reads it) for calls of this file whose
        helper scales its own Q·Kᵀ product only on some paths (`if scale is not None: sim = sim *
        scale`), and this call's arguments take the unscaled one: the helper's own reading
        cannot tell (its scale is unknown there), the call shows none."""
        if self.summaries is None or not self.summaries.softmax_in_calls:
            return []
        own = {id(s.input.scores.product): s for s in self.softmax_sites if s.input.scores is not None}
        found = []
        for call, site in self.summaries.softmax_in_calls.values():
            scores = site.input.scores
            mine = own.get(id(scores.product))
            if scores.scaled is False and mine is not None and mine.input.scores.scaled is None:
                if self.parent_of(call) is not None:
                    found.append((call, site))
        return found

    def causal_flags_with_masks_by_calls(self) -> list:
        """(call, CausalFlagWithMask) for calls of this file that hand a helper both a mask and
        a true value of the parameter it gives SDPA as `is_causal`, where the helper's own
        reading (every caller at once) cannot tell the flag."""
        if self.summaries is None:
            return []
        return [
            (call, found)
            for call, found in self.summaries.causal_with_mask_in_calls.values()
            if self.parent_of(call) is not None
        ]

    def masks_added_by_helpers_of_other_files(self) -> List[tuple]:
        """(call, fill, parameter, where the mask is made) for calls of this file handing a mask
        to a function of another file of the project that adds that parameter to its scores
        (`scores = scores + bias`): what the call hands it decides whether that masks anything,
        and the helper's own file cannot see it. Where the mask is made: the argument, or, for a
        parameter handed down unchanged, what the first caller here writes for it
        (`attn_bias = attention_mask[:, None, None, :].to(dtype)` in the encoder)."""
        if self.summaries is None or not self.summaries.added_masks_in_calls:
            return []
        found = []
        for call, fill, param, arg in self.summaries.added_masks_in_calls.values():
            if self.parent_of(call) is None or self.parent_of(fill.call) is not None:
                continue
            made = arg
            definition = self.enclosing(call)
            caller = next((f for f in self.functions if f.node is definition), None) if definition is not None else None
            if caller is not None and isinstance(arg, cst.Name) and arg.value in caller.params:
                made = self._where_meaning_is_decided(caller, arg.value) or arg
            found.append((call, fill, param, made))
        return found

    @property
    def dot_t_sites(self) -> List[DotTSite]:
        """Every `.T`, and once more each one some call in this file runs on a batched tensor
        (from the call's summary) when the function's own analysis cannot tell its rank."""
        own = self.sites("dot_t_sites")
        if self.summaries is None or not self.summaries.batched_dot_t:
            return own
        batched = {id(s.node) for s in own if s.receiver.rank is not None and s.receiver.rank >= 3}
        return own + [s for key, s in self.summaries.batched_dot_t.items() if key not in batched]

    def views_in_calls(self) -> List[Tuple[FunctionFacts, ViewSite]]:
        """(function, view) for the views of this module's functions that a call's summary saw
        with both shapes known while the function's own reading did not (see
        Summaries.views_in_calls)."""
        if self.summaries is None or not self.summaries.views_in_calls:
            return []
        own = {id(site.call) for site in self.view_sites}
        out = []
        for key, view in self.summaries.views_in_calls.items():
            if key in own:
                continue
            function = next(
                (f for f in self.functions if isinstance(f.node, cst.FunctionDef) and contains(f.node, view.call)), None
            )
            if function is not None:
                out.append((function, view))
        return out

    @property
    def view_sites(self) -> List[ViewSite]:
        """Every `view`/`reshape` whose input and target shapes are known symbolically."""
        return self.sites("view_sites")


_SITE_KINDS = ("softmax_sites", "fill_sites", "mask_uses", "attention_calls", "loss_sites", "view_sites", "dot_t_sites")


def _one_backend_signature(signatures: set) -> bool:
    """Several classes' forwards with one parameter list of queries, keys and values and more
    (`forward(self, queries, keys, values, attn_mask)` of AutoCorrelation and of the full
    attention it is swapped with): drop-in attention backends, an interface whatever their bases.
    Two-parameter forwards (`x, mask`) are too common to say so."""
    return len(signatures) == 1 and len(next(iter(signatures))) >= 4


def _passes(call, receiver: FunctionFacts, param: str, local: str) -> bool:
    """Whether `call` passes the local `local` as `param` of `receiver`."""
    if not isinstance(receiver.node, cst.FunctionDef):
        return False
    names = param_names(receiver.node, receiver.class_name is not None)
    arg = call_argument(call.call, names.index(param) if param in names else 99, param)
    return arg is not None and isinstance(arg.value, cst.Name) and arg.value.value == local


def _parent_index(module: cst.Module) -> Dict[int, cst.CSTNode]:
    parents: Dict[int, cst.CSTNode] = {}
    stack: List[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        for child in child_nodes(node):
            parents[id(child)] = node
            stack.append(child)
    return parents


def analyze_module(
    module: cst.Module,
    project: Optional[Project] = None,
    path=None,
    _late: Optional[Dict[str, Value]] = None,
    _body_facts: Optional[Dict[int, tuple]] = None,
    wanted: Optional[Callable[[str], bool]] = None,
    source: Optional[str] = None,
) -> ModuleAnalysis:
    """Analyse one module. `project` (with the module's `path`) lets its imports of other modules
    of the checked tree be read: their constants and the summaries of their functions.
    `wanted(text)`: whether a definition's text can matter to the caller (see selection); None:
    every definition is analysed. `source`: the module's text, if the caller has it."""
    analysis = ModuleAnalysis(module=module, aliases=collect_aliases(module), path=path, in_project=project is not None)
    analysis.class_names = frozenset(_class_names(module))
    definitions = _index_definitions(module.body)
    summaries = Summaries(analysis, definitions)
    if _body_facts is not None:
        summaries.body_facts = _body_facts  # what the text shows: the same in the second reading
    analysis.summaries = summaries
    reading = FirstReading(module, wanted, source)
    imported = (
        _imports_from_project(module, project, path, summaries, analysis, reading.names_read, lazy=wanted is NOTHING)
        if project is not None
        else {}
    )
    # Module-level integer constants (`PAD_IDX = 0`) and modules (`loss_fn = nn.CrossEntropyLoss()`)
    # are visible inside functions: read them first.
    top = FunctionFacts(node=module, name="<module>", class_name=None)
    evaluator = Evaluator(
        top,
        analysis.aliases,
        None,
        class_names=analysis.class_names,
        constants=imported,
        function_names=frozenset(definitions.functions),
    )
    evaluator.run(module.body)
    analysis.constants = dict(imported)
    for name, value in evaluator.env.items():
        constant = _constant(value)
        if constant is not None:
            analysis.constants[name] = constant
    # What the second reading found overrides the first (`vocab.pad_index` is only a token id
    # before the class `Vocab` is known, its number after).
    analysis.constants.update(_late or {})
    read_with_context = _first_reading(module.body, analysis, reading)
    # The top level again, now that the classes and functions it calls are known (course
    # notebooks and `if __name__ == "__main__":` blocks are analysed like a function body).
    top, evaluator = _read_top_level(module, analysis, summaries)
    if _late is None:
        # Numbers the module reads from instances of its own classes (`vocab = Vocab(...)`,
        # `PAD_IDX = vocab.pad_idx`) are known only once the classes are: analyse the module
        # again with them, so that the functions reading them see them.
        late = {}
        for name, value in evaluator.env.items():
            constant = _constant(value)
            known = analysis.constants.get(name)
            if (
                constant is not None
                and constant.kind == "scalar"
                and (known is None or known.int_value is None and constant.int_value is not None)
            ):
                late[name] = constant
        if late:
            # Only names some function or class reads change what they see.
            late = {name: v for name, v in late.items() if name in _names_read_in_definitions(module)}
        if late:
            return analyze_module(
                module,
                project=project,
                path=path,
                _late=late,
                _body_facts=summaries.body_facts,
                wanted=wanted,
                source=source,
            )
    analysis.functions.insert(0, top)
    _refine_by_callers(analysis, summaries, reading, read_with_context)
    return analysis


def _read_top_level(module: cst.Module, analysis: ModuleAnalysis, summaries: Summaries):
    """The module's top level read as a function body, with the classes and functions it calls
    as known so far: (its facts, the evaluator that read it)."""
    top = FunctionFacts(node=module, name="<module>", class_name=None)
    evaluator = Evaluator(
        top, analysis.aliases, None, class_names=analysis.class_names, constants=analysis.constants, project=summaries
    )
    evaluator.run(module.body)
    top.final_env = evaluator.env
    return top, evaluator


def _names_read_in_definitions(module: cst.Module) -> frozenset:
    """Every plain name used inside the module's functions and classes."""
    return frozenset().union(*(names_in(d) for d in definitions_in(module.body)))


def _constant(value: Value) -> Optional[Value]:
    """What a module-level binding contributes to the constants functions see: numbers (and pad
    token ids), modules, pad token strings and vocabularies (`stoi`, a list of specials)."""
    from attnlint.analysis.losses import pad_token_text, vocabulary_of

    if value.kind == "scalar" and (value.int_value is not None or value.token_id or pad_token_text(value.text)):
        return value
    if value.kind == "module":
        return value
    if value.entries and all(v.user_function is not None for _, v in value.entries):
        return value  # `ATTENTION_FUNCTIONS = {"eager": eager_attention_forward, ...}`
    ids = vocabulary_of(value)
    if ids is not None and any(pad_token_text(token) for token, _ in ids.ids):
        # A list of specials stays a list (`SPECIALS + sorted(words)` keeps its positions).
        return value if value.kind == "tuple" else Value(kind="unknown", node=value.node, vocabulary=ids)
    if ids is not None and value.vocabulary is not None:
        # A map of names to ids that holds no pad token is still read by name: a label map
        # (`LABEL2ID = {l: i for i, l in enumerate(LABELS)}`) gives `LABEL2ID["O"]` its class id.
        return Value(kind="unknown", node=value.node, vocabulary=ids)
    return None




def _imports_from_project(
    module: cst.Module,
    project: Project,
    path,
    summaries: Summaries,
    analysis: "ModuleAnalysis",
    names_read: Optional[frozenset] = None,
    lazy: bool = False,
) -> Dict[str, Value]:
    """Constants imported from other modules of the project; their functions go to `summaries`.
    `names_read`: the names the analysed code can use (None: any); another name's module is
    not read. `lazy`: no module is read now; its functions and classes are, when first called
    (no constants then)."""
    constants: Dict[str, Value] = {}
    for local, name, source, level in imported_names(module):
        if names_read is not None and local not in names_read:
            continue
        target = project.resolve(path, source, level)
        if target is not None and not lazy and _names_a_class(name):
            # A class (`from .configuration_bert import BertConfig`) lends no constant: its
            # module is read when the class is first called, not for an annotation or a
            # `config_class = BertConfig`.
            summaries.external.defer(local, project, target, name, analysis.imported_files)
            summaries.external_classes.defer(local, project, target, name, analysis.imported_files)
            if target not in analysis.imported_files:
                analysis.imported_files.append(target)
            continue
        if target is not None and lazy:
            # A module read for what it lends reads its own imports only when one of its
            # functions calls them (a helper's helper in the package's masking module).
            summaries.external.defer(local, project, target, name)
            summaries.external_classes.defer(local, project, target, name)
            if target not in analysis.imported_files:
                analysis.imported_files.append(target)  # what the importer's results may depend on
            continue
        other = project.analysis_of(target) if target is not None else None
        if other is None:
            continue
        for depended in [target, *other.imported_files]:
            if depended not in analysis.imported_files:
                analysis.imported_files.append(depended)
        if name in other.constants and (
            other.constants[name].kind == "scalar" or other.constants[name].vocabulary is not None
        ):
            constants[local] = foreign(other.constants[name])
        elif other.summaries is not None and name in other.summaries.definitions.functions:
            summaries.external.add(local, other.summaries, name)
        elif other.summaries is not None and name in other.classes:
            summaries.external_classes.add(local, other.summaries, name)
    return constants


def _names_a_class(name: str) -> bool:
    """`BertConfig`, `Vocab`: named as classes are (not `PAD_IDX`, not `pad_id`)."""
    return name[:1].isupper() and any(c.islower() for c in name)


def _refine_by_callers(
    analysis: ModuleAnalysis, summaries: Summaries, reading: FirstReading, read_with_context: Dict[int, tuple]
) -> None:
    """Analyse again the functions whose callers here pass something telling (see summaries).

    Each round reads the `__init__`s first, then every other function once: again when its
    callers pass something new, or when its class's `__init__` left other attributes. The sizes
    in the callers' scope (flow.CallerScope) matter only to a reading that described a score
    product (`FunctionFacts.reads_caller_scope`): a change of scope alone reads no other. A
    function read only for what it passes on (`reading.hops` calls above one whose text can
    matter) is refined only while what it passes can still reach that function in the rounds
    left. `read_with_context`: the refinement signatures of the callers' contexts the first
    reading read `__init__`s with (see _first_reading)."""
    done: Dict[int, tuple] = dict(read_with_context)

    def needs_reading(key: int, signature: tuple, function: FunctionFacts) -> bool:
        previous = done.get(key)
        if previous is None:
            return True
        return previous[0] != signature[0] or (previous[1] != signature[1] and function.reads_caller_scope)

    for round_ in range(CONTEXT_ROUNDS):
        rounds_left = CONTEXT_ROUNDS - 1 - round_
        contexts = summaries.caller_bindings()
        changed = False
        position = {id(f.node): i for i, f in enumerate(analysis.functions)}
        signatures = {
            key: refinement_signature(bindings, scope) for key, (_, _, bindings, scope) in contexts.items()
        }
        # What a class's methods see changed: its attributes, or only its callers' scope.
        new_attrs, new_scope = set(), set()
        for key in [k for k, signature in done.items() if signature is not None and k not in contexts]:
            # Read with a context the callers no longer give (the first reading's came from the
            # callers read before it; a later one makes a call that binds nothing): read again
            # without one.
            i = next((j for j, f in enumerate(analysis.functions) if id(f.node) == key), None)
            if i is None:
                continue
            function = analysis.functions[i]
            cls = analysis.classes.get(function.class_name) if function.class_name is not None else None
            if function.class_name is not None and cls is None:
                continue
            builder = function.name == "__init__"
            before = dict(cls.attrs) if cls is not None else None
            if builder and cls is not None:
                cls.caller_scope = CallerScope()
            analysis.functions[i] = _analyze_function(
                function.node, analysis, cls, record_attrs=builder, nested=False, append=False
            )
            done[key] = None
            changed = True
            if builder and cls is not None and before != cls.attrs:
                new_attrs.add(function.class_name)
        for key, (owner, definition, bindings, scope) in contexts.items():
            cls = analysis.classes.get(owner) if owner is not None else None
            if definition.name.value != "__init__" or cls is None or id(definition) not in position:
                continue
            current = analysis.functions[position[id(definition)]]
            previous = done.get(key)
            if previous == signatures[key]:
                continue
            if previous is not None and previous[0] == signatures[key][0] and not current.reads_caller_scope:
                # Only the scope changed, and __init__ does not read it: its methods do.
                done[key] = signatures[key]
                cls.caller_scope = scope
                new_scope.add(owner)
                changed = True
                continue
            done[key] = signatures[key]
            before = (dict(cls.attrs), cls.caller_scope)
            cls.caller_scope = scope  # what the attributes made of its parameters are
            analysis.functions[position[id(definition)]] = _analyze_function(
                definition, analysis, cls, record_attrs=True, bindings=bindings, nested=False, append=False, caller_scope=scope
            )
            changed = True
            if before[0] != cls.attrs:
                new_attrs.add(owner)
            elif before[1] != cls.caller_scope:
                new_scope.add(owner)
        if new_attrs:
            # Summaries of methods read the attributes their class had when they were computed.
            summaries.forget_results()
            top = analysis.functions[0] if analysis.functions else None
            if top is not None and top.node is analysis.module and top.calls:
                # The top level is a caller like any other: what it hands on (a DataLoader
                # whose `collate_fn=Collator(pad_id)` now pads with a known id) is what those
                # attributes make it.
                analysis.functions[0], _ = _read_top_level(analysis.module, analysis, summaries)
                changed = True
        for i, function in enumerate(analysis.functions):
            node = function.node
            if not isinstance(node, cst.FunctionDef) or node.name.value == "__init__":
                continue
            owner = function.class_name
            key = id(node)
            context = contexts.get(key)
            refresh = owner in new_attrs or (owner in new_scope and function.reads_caller_scope)
            if context is not None and context[1] is not node:
                context = None
            fresh = context is not None and needs_reading(key, signatures[key], function)
            if not (refresh or fresh) or reading.hops(node) > rounds_left:
                continue
            _, _, bindings, scope = context if context is not None else (None, None, None, None)
            if context is not None:
                done[key] = signatures[key]
            cls = analysis.classes.get(owner) if owner is not None else None
            if owner is not None and cls is None:
                continue
            analysis.functions[i] = _analyze_function(
                node, analysis, cls, bindings=bindings, nested=False, append=False, caller_scope=scope
            )
            changed = True
        if not changed:
            break
    analysis.reset_indexes()


def _index_definitions(body) -> Definitions:
    definitions = Definitions()
    for stmt in definitions_in(body):
        if isinstance(stmt, cst.FunctionDef):
            definitions.functions.setdefault(stmt.name.value, stmt)
        elif isinstance(stmt, cst.ClassDef):
            name = stmt.name.value
            definitions.classes.setdefault(name, stmt)
            definitions.bases[name] = _base_names(stmt)
            for member in definitions_in(block_statements(stmt.body)):
                if isinstance(member, cst.FunctionDef):
                    if (name, member.name.value) not in definitions.methods:
                        definitions.methods[(name, member.name.value)] = member
                        definitions.method_owners.setdefault(member.name.value, []).append(name)
    return definitions


def _base_names(node: cst.ClassDef) -> tuple:
    return tuple(
        b.value.attr.value if isinstance(b.value, cst.Attribute) else getattr(b.value, "value", "") for b in node.bases
    )


def _class_names(module: cst.Module):
    return [s.name.value for s in iter_statements(module.body) if isinstance(s, cst.ClassDef)]


def _first_reading(body, analysis: ModuleAnalysis, reading: FirstReading) -> Dict[int, tuple]:
    """Analyse the module's definitions that `reading` reads: every class's body and builders
    first, the `__init__`s of the classes that construct others before those others' (a
    model's before its layers', a layer's before its attention's), each with the context its
    callers read so far give it (what summaries.caller_bindings would give it once they are
    all read); then the other functions. Listed in source order, as _walk lists them. Returns
    the refinement signature of each context used, by function node id: a chain of
    constructors handing `config` down is read once, not once per round of refinement."""
    planned: list = []  # (node, class facts or None, is a builder) in _walk's order
    _plan_definitions(body, analysis, None, reading, planned)
    summaries = analysis.summaries
    done: Dict[int, tuple] = {}
    read: Dict[int, FunctionFacts] = {}
    callers: List[FunctionFacts] = []
    for node, cls in _constructors_first([(n, c) for n, c, builder in planned if builder], summaries.definitions):
        context = None
        if node.name.value == "__init__" and callers:
            context = summaries.caller_bindings(callers, target=node).get(id(node))
        if context is not None and context[1] is node:
            _, _, bindings, scope = context
            cls.caller_scope = scope
            facts = _analyze_function(
                node, analysis, cls, record_attrs=True, bindings=bindings, nested=False, append=False, caller_scope=scope
            )
            done[id(node)] = refinement_signature(bindings, scope)
        else:
            facts = _analyze_function(node, analysis, cls, record_attrs=True, nested=False, append=False)
        read[id(node)] = facts
        callers.append(facts)
    # Then the other functions, last defined first: callers usually come after what they call
    # (a model's forward after its layers', a layer's after its attention's and the helpers),
    # so each is read with the context its callers give it, once. A caller's reading does not
    # depend on its callees' (their summaries are computed from their text); one read before a
    # caller is read again by the refinement. (Ordering by a walk of every body for its calls
    # cost more than the few readings it saves.)
    callers_of: Dict[int, List[FunctionFacts]] = {}
    for facts in callers:
        for key, _, _ in summaries.bound_calls(facts):
            callers_of.setdefault(key, []).append(facts)
    for node, cls in reversed([(n, c) for n, c, builder in planned if not builder]):
        context = None
        if id(node) in callers_of:
            context = summaries.caller_bindings(callers_of[id(node)], target=node).get(id(node))
        if context is not None and context[1] is node:
            _, _, bindings, scope = context
            facts = _analyze_function(node, analysis, cls, bindings=bindings, nested=False, append=False, caller_scope=scope)
            done[id(node)] = refinement_signature(bindings, scope)
        else:
            facts = _analyze_function(node, analysis, cls, nested=False, append=False)
        read[id(node)] = facts
        for key, _, _ in summaries.bound_calls(facts):
            if not callers_of.get(key) or callers_of[key][-1] is not facts:
                callers_of.setdefault(key, []).append(facts)
    for node, cls, _ in planned:
        facts = read[id(node)]
        analysis.functions.append(facts)
        _walk(block_statements(node.body), analysis, cls)  # its nested functions and classes
    return done


def _plan_definitions(
    body, analysis: ModuleAnalysis, cls: Optional[ClassFacts], reading: FirstReading, planned: list
) -> None:
    """What _walk would analyse in `body`, in its order, without analysing the functions: each
    class's facts are made and its own statements read (in source order: a class's constants
    are there before any function runs)."""
    for stmt in definitions_in(body):
        if isinstance(stmt, cst.ClassDef):
            facts = _class_facts(stmt, analysis)
            for method in _methods_in_order(stmt):
                if reading.reads(method):
                    planned.append((method, facts, method.name.value in _BUILDERS))
            inner = [s for s in definitions_in(block_statements(stmt.body)) if isinstance(s, cst.ClassDef)]
            _plan_definitions(inner, analysis, None, reading, planned)
        elif reading.reads(stmt):
            planned.append((stmt, cls, False))


def _constructors_first(builders: list, definitions) -> list:
    """`builders` ((node, class facts)) with the builders of a class that constructs another
    (`self.attn = Attention(config)`, `super().__init__(...)` of a base) before that other's,
    otherwise in their order: a reverse post-order of the construction graph (cycles are cut
    where met)."""
    by_class: Dict[str, List[int]] = {}
    for i, (_, cls) in enumerate(builders):
        by_class.setdefault(cls.name, []).append(i)
    classes = list(by_class)
    constructs: Dict[str, List[str]] = {}
    for name in classes:
        made = []
        for i in by_class[name]:
            for inner in walk_nodes(builders[i][0]):
                if type(inner) is cst.Call:
                    func = inner.func
                    if type(func) is cst.Name and func.value in by_class and func.value != name:
                        made.append(func.value)
                    elif (
                        type(func) is cst.Attribute
                        and func.attr.value == "__init__"
                        and type(func.value) is cst.Call
                        and getattr(func.value.func, "value", None) == "super"
                    ):
                        made.extend(b for b in definitions.bases.get(name, ()) if b in by_class and b != name)
        constructs[name] = made
    seen: Set[str] = set()
    post: List[str] = []
    for root in classes:
        if root in seen:
            continue
        seen.add(root)
        stack = [(root, iter(constructs[root]))]
        while stack:
            name, pending = stack[-1]
            nxt = next((c for c in pending if c not in seen), None)
            if nxt is None:
                stack.pop()
                post.append(name)
            else:
                seen.add(nxt)
                stack.append((nxt, iter(constructs[nxt])))
    return [builders[i] for name in reversed(post) for i in by_class[name]]


def _walk(body, analysis: ModuleAnalysis, cls: Optional[ClassFacts]) -> None:
    """Analyse the definitions in `body` (nested in a function: all of them; the module's own
    are read by _first_reading)."""
    for stmt in definitions_in(body):
        if isinstance(stmt, cst.ClassDef):
            _analyze_class(stmt, analysis)
        else:
            _analyze_function(stmt, analysis, cls)


# Methods that build an instance's attributes, in the order Python runs them.
_BUILDERS = ("__init__", "__post_init__")


def _class_facts(node: cst.ClassDef, analysis: ModuleAnalysis) -> ClassFacts:
    """The facts of class `node`, registered, with what its own statements bind."""
    facts = ClassFacts(name=node.name.value, node=node, bases=_base_names(node))
    analysis.classes[facts.name] = facts
    # Class-level assignments (dataclass fields and their defaults, class constants).
    body = Evaluator(
        FunctionFacts(node=node, name="<class>", class_name=facts.name),
        analysis.aliases,
        None,
        class_names=analysis.class_names,
        constants=analysis.constants,
    )
    for stmt in block_statements(node.body):
        if isinstance(stmt, cst.SimpleStatementLine):
            body.statement(stmt)
    facts.attrs.update({k: v for k, v in body.env.items() if "." not in k})
    return facts


def _methods_in_order(node: cst.ClassDef) -> List[cst.FunctionDef]:
    """The methods of class `node`: __init__ first, then a dataclass's __post_init__ (fields
    computed from the others): what they build is what the other methods, and readers of the
    instances, use."""
    methods = [s for s in definitions_in(block_statements(node.body)) if isinstance(s, cst.FunctionDef)]
    methods.sort(key=lambda f: _BUILDERS.index(f.name.value) if f.name.value in _BUILDERS else len(_BUILDERS))
    return methods


def _analyze_class(node: cst.ClassDef, analysis: ModuleAnalysis) -> None:
    facts = _class_facts(node, analysis)
    for method in _methods_in_order(node):
        _analyze_function(method, analysis, facts, record_attrs=method.name.value in _BUILDERS)
    _walk([s for s in definitions_in(block_statements(node.body)) if isinstance(s, cst.ClassDef)], analysis, None)


def _analyze_function(
    node: cst.FunctionDef,
    analysis: ModuleAnalysis,
    cls: Optional[ClassFacts],
    record_attrs: bool = False,
    bindings: Optional[Dict[str, Value]] = None,
    nested: bool = True,
    append: bool = True,
    caller_scope: Optional[CallerScope] = None,
) -> FunctionFacts:
    facts = FunctionFacts(node=node, name=node.name.value, class_name=cls.name if cls else None)
    evaluator = Evaluator(
        facts,
        analysis.aliases,
        cls,
        record_attrs=record_attrs,
        class_names=analysis.class_names,
        constants=analysis.constants,
        project=analysis.summaries,
        caller_scope=caller_scope,
    )
    if cls is not None and node.name.value == "forward":
        params = node.params
        cls.forward_params = tuple(
            p.name.value for p in list(params.posonly_params) + list(params.params) + list(params.kwonly_params)
        )
    evaluator.bind_params(node.params, bindings=bindings, caller_context=bindings is not None)
    header = getattr(node.body, "header", None)
    if header is not None and header.comment is not None:
        # `def forward(self, x):  # x: (batch, tokens, d)`
        evaluator.shape_comment(header.comment.value)
    body = block_statements(node.body)
    readings = analysis.summaries.scope_readings if analysis.summaries is not None else 0
    evaluator.run(body)
    facts.final_env = evaluator.env
    facts.reads_caller_scope = analysis.summaries is not None and analysis.summaries.scope_readings != readings
    if record_attrs and cls is not None:
        # What __init__ leaves in each attribute, joined over its paths (a buffer registered on
        # one branch and `self.mask = None` on the other), not whichever assignment came last.
        for attr in list(cls.attrs):
            final = evaluator.env.get("self." + attr)
            if final is not None:
                cls.attrs[attr] = final
    if any(
        masks.is_mask_param(name) or masks.names_attended_mask(name) or masks.names_sequence_lengths(name)
        for name in facts.params
    ):
        # Only functions that take a mask (or the lengths one is made from) need to know which
        # names they use.
        used = set().union(*(names_in(stmt) for stmt in body))
        # `locals()` hands every parameter on by name.
        facts.used_names = used | set(facts.params) if "locals" in used else used
    if append:
        analysis.functions.append(facts)
    if nested:
        # Nested functions and classes are analysed on their own.
        _walk(body, analysis, cls)
    return facts


@dataclass(frozen=True)
class ScaleDefinition:
    """Where the attribute a scale reads is given its value, in `__init__`."""

    node: cst.BaseExpression  # `dim ** -0.5` of `self.scale = dim ** -0.5`
    # Expressions holding the head dimension that are defined there (an `__init__` parameter,
    # a `self.` attribute set before it), to write in a fix.
    head_dim_names: Tuple[str, ...] = ()
    # The attribute holds the head dimension or its root either way up (`self.head_dim`,
    # `self.scale = head_dim ** -0.5`): a right quantity, so what is wrong is how it is applied.
    holds_head_dim_or_root: bool = False


def _method_node(cls: cst.ClassDef, name: str) -> Optional[cst.FunctionDef]:
    for stmt in cls.body.body:
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value == name:
            return stmt
    return None


def _self_attrs_assigned(node: cst.CSTNode) -> List[str]:
    """`self.X` targets of the assignments in `node`, in order (tuple targets included)."""
    found: List[str] = []

    class Targets(cst.CSTVisitor):
        def visit_AssignTarget(self, target: cst.AssignTarget) -> None:
            stack = [target.target]
            while stack:
                t = stack.pop(0)
                if isinstance(t, (cst.Tuple, cst.List)):
                    stack[:0] = [e.value for e in t.elements]
                elif self_attr(t) is not None:
                    found.append(self_attr(t))

        def visit_AnnAssign(self, stmt: cst.AnnAssign) -> None:
            if self_attr(stmt.target) is not None:
                found.append(self_attr(stmt.target))

    node.visit(Targets())
    return found


def _param_stored_in(init: cst.FunctionDef, attr: str) -> Optional[str]:
    """The parameter of `init` that `self.<attr> = <param>` stores as it is, if any."""
    params = {p.name.value for p in list(init.params.params) + list(init.params.kwonly_params)}
    for node in walk_nodes(init.body):
        if isinstance(node, cst.Assign) and len(node.targets) == 1:
            target = node.targets[0].target
            if (
                isinstance(target, cst.Attribute)
                and self_attr(target) == attr
                and isinstance(node.value, cst.Name)
                and node.value.value in params
            ):
                return node.value.value
    return None


def _assignments_of_self_attr(cls: cst.ClassDef, attr: str) -> int:
    return _self_attrs_assigned(cls).count(attr)


def _reads_of_self_attr(cls: cst.ClassDef, attr: str) -> int:
    """How many times `self.<attr>` appears in the class other than as an assignment target."""
    total = 0

    class Reads(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> None:
            nonlocal total
            if node.attr.value == attr and self_attr(node) == attr:
                total += 1

    cls.visit(Reads())
    return total - _assignments_of_self_attr(cls, attr)


def _head_dim_names_in_init(init: cst.FunctionDef, definition: cst.CSTNode, scores) -> Tuple[str, ...]:
    """Names for the head dimension valid where `definition` is written in `__init__`: the
    `self.` attributes the forward scope names for it that are set by an earlier statement, and
    an `__init__` parameter that is the head dimension itself."""
    earlier: List[str] = []
    for stmt in init.body.body:
        if contains(stmt, definition):
            break
        earlier += _self_attrs_assigned(stmt)
    names = [n for n in scores.head_dim_names if n.startswith("self.") and n[len("self.") :] in earlier]
    head = scores.head_dim
    params = {p.name.value for p in init.params.params}
    if head is not None and head.coeff == 1 and len(head.factors) == 1 and head.factors[0][1] == 1:
        atom = head.factors[0][0]
        if atom.key.endswith(".__init__:" + atom.name) and atom.name in params:
            names.append(atom.name)
    return tuple(names)


def _single_binding(scope: Optional[cst.CSTNode], name: str) -> Optional[cst.BaseExpression]:
    """The value of the one plain assignment `name = value` in `scope`, not counting `name = None`
    (None when the name is bound more than once, or otherwise: a loop target, a tuple, an
    augmented assignment; a binding in a nested definition counts too, which only makes this say
    None more often)."""
    if not isinstance(scope, cst.FunctionDef):
        return None
    values: List[Optional[cst.BaseExpression]] = []
    for node in walk_nodes(scope.body):
        if isinstance(node, cst.Assign):
            for target in node.targets:
                if name in names_in(target.target):
                    values.append(node.value if isinstance(target.target, cst.Name) else None)
            continue
        if isinstance(node, cst.With):
            targets = [item.asname.name for item in node.items if item.asname is not None]
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr)):
            targets = [node.target]
        else:
            continue
        if any(name in names_in(t) for t in targets):
            values.append(None)
    # `mask = None` then `if given: mask = build(...)`: the None is no meaning of its own.
    made = [v for v in values if not (isinstance(v, cst.Name) and v.value == "None")]
    return made[0] if len(made) == 1 else None


def _is_unit_or_none(node: cst.BaseExpression) -> bool:
    """`1`, `1.0` or `None`: a scale that changes nothing."""
    if isinstance(node, cst.Name):
        return node.value == "None"
    return isinstance(node, (cst.Integer, cst.Float)) and float(node.evaluated_value) == 1.0
