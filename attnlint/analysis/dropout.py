"""Dropout facts: functional dropout calls, SDPA's `dropout_p`, and how a function knows its mode.

`F.dropout(x, p)` defaults to `training=True`: unlike `nn.Dropout`, it drops at evaluation and
inference too unless the caller passes the mode. SDPA has no mode at all: `dropout_p` is applied
whenever it is non-zero. What the analysis answers:

- each functional dropout call, what it drops (attention weights or not) and its `training=`
  argument (:class:`DropoutSite`, recorded by the evaluator);
- the expression that tells this function whether it is training (:func:`mode_flag`):
  `self.training` in an `nn.Module`'s methods, `module.training` in the module-level attention
  functions Hugging Face passes the module to, a `training` parameter; None when nothing does;
- whether a call's dropout already depends on the mode (:func:`depends_on_mode`): under an
  `if self.training:` test, or a rate computed as `p if self.training else 0.0`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Dict, Iterator, List, Optional, Set

import libcst as cst

from attnlint.analysis.calls import argument
from attnlint.analysis.names import child_nodes
from attnlint.analysis.names import qualify
from attnlint.analysis.values import WEIGHTS, Value

if TYPE_CHECKING:  # pragma: no cover
    from attnlint.analysis import ModuleAnalysis
    from attnlint.analysis.evaluator import FunctionFacts

# Parameters that carry the mode into a function.
MODE_PARAMETERS = ("training", "is_training", "train")
# Parameters that carry the module (whose `.training` is the mode) into a module-level function.
MODULE_PARAMETERS = ("module", "self_attn", "attn_module")


@dataclass
class DropoutSite:
    """`F.dropout(x, p)` (or `torch.dropout(x, p, train)`)."""

    call: cst.Call
    input: Value
    # True for torch.nn.functional's dropout, whose `training` defaults to True; torch.dropout's
    # `train` is required.
    functional: bool
    training_node: Optional[cst.BaseExpression]
    p_node: Optional[cst.BaseExpression]

    @property
    def on_attention_weights(self) -> bool:
        return self.input.softmax is not None or self.input.role == WEIGHTS

    @property
    def training_given(self) -> bool:
        return self.training_node is not None

    @property
    def mode_keyword(self) -> str:
        """The name of the mode argument: `training` (F.dropout) or `train` (torch.dropout)."""
        return "training" if self.functional else "train"

    @property
    def training_always(self) -> bool:
        """`training=True` (`train=True`) written out: dropped in every mode."""
        node = self.training_node
        return isinstance(node, cst.Name) and node.value == "True"

    @property
    def rate_is_zero(self) -> bool:
        """A literal `p=0` / `p=0.0`: nothing is dropped in any mode."""
        return self.p_node is not None and is_literal_zero(self.p_node)


def is_literal_zero(node: cst.BaseExpression) -> bool:
    """A literal rate of `0` / `0.0`."""
    return isinstance(node, (cst.Integer, cst.Float)) and float(node.evaluated_value) == 0.0


def record(evaluator, call: cst.Call, values: List[Value]) -> None:
    """Called by the evaluator for `torch.dropout` and `torch.nn.functional.dropout`."""
    qualified = qualify(call.func, evaluator.aliases) or ""
    functional = "functional" in qualified or qualified.startswith("torch.nn.")
    keyword = "training" if functional else "train"
    training = argument(call, 2, keyword)
    p = argument(call, 1, "p")
    evaluator.facts.dropout_sites.append(
        DropoutSite(
            call=call,
            input=values[0] if values else Value(kind="unknown"),
            functional=functional,
            training_node=training.value if training is not None else None,
            p_node=p.value if p is not None else None,
        )
    )


def sdpa_dropout(call: cst.Call) -> Optional[cst.BaseExpression]:
    """SDPA's `dropout_p` as written, when it is given and is not a literal zero."""
    arg = argument(call, 4, "dropout_p")
    if arg is None:
        return None
    node = arg.value
    if isinstance(node, (cst.Integer, cst.Float)) and float(node.evaluated_value) == 0.0:
        return None
    return node


@dataclass
class RatePassedOn:
    """A call that gives a helper the rate it hands to SDPA (`self._attend(q, k, v, self.p)`)."""

    caller: "FunctionFacts"
    call: cst.Call
    rate: cst.BaseExpression  # the argument, as the caller writes it


def rates_from_callers(analysis: "ModuleAnalysis", function: "FunctionFacts", param: str) -> List[RatePassedOn]:
    """The calls in this file of `function` (a function or a method) that pass `param`."""
    from attnlint.analysis.summaries import param_names

    definitions = analysis.summaries.definitions if analysis.summaries is not None else None
    if definitions is None or not isinstance(function.node, cst.FunctionDef):
        return []
    found = []
    for caller in analysis.functions:
        for site in caller.calls:
            target = _called_definition(analysis, definitions, caller, site)
            if target is None or target[1] is not function.node:
                continue
            names = param_names(function.node, target[0] is not None)
            arg = argument(site.call, names.index(param) if param in names else 99, param)
            # `**kwargs` after the rate given by name does not move it; `*args` before a
            # positional rate might.
            if arg is not None and (arg.keyword is not None or not any(a.star for a in site.call.args)):
                found.append(RatePassedOn(caller=caller, call=site.call, rate=arg.value))
    return found


def _called_definition(analysis: "ModuleAnalysis", definitions, caller: "FunctionFacts", site):
    """(class name or None, the definition) a call site calls: a method, a function of the
    module, or the closure a factory returned that a name or attribute holds
    (`self._call = make_attention()`); None when the module does not show it."""
    if site.callee_class is not None:
        return definitions.method(site.callee_class, site.callee)
    if site.method:
        target = definitions.method(caller.class_name, site.callee)
    else:
        definition = definitions.functions.get(site.callee)
        target = (None, definition) if definition is not None else None
    if target is not None:
        return target
    value = None
    if site.method:
        facts = analysis.classes.get(caller.class_name) if caller.class_name else None
        value = facts.attrs.get(site.callee) if facts is not None else None
    elif caller.final_env is not None:
        value = caller.final_env.get(site.callee)
    return (None, value.closure[2]) if value is not None and value.closure is not None else None


def callers_follow_mode(analysis: "ModuleAnalysis", function: "FunctionFacts", rate) -> bool:
    """The rate is a parameter of `function` (`p=dropout`), and every call of it in this file
    passes a literal zero or a rate computed from the caller's mode (`dropout=0.0 if not
    self.training else self.attention_dropout`, the Hugging Face convention): at evaluation the
    function is handed 0. False when no call is seen (the function's own mode then decides)."""
    if not isinstance(rate, cst.Name) or rate.value not in function.params:
        return False
    passed = rates_from_callers(analysis, function, rate.value)
    return bool(passed) and all(
        is_literal_zero(p.rate) or depends_on_mode(p.caller, p.call, p.rate)
        for p in passed
    )


def mode_flag(analysis: "ModuleAnalysis", function: "FunctionFacts") -> Optional[str]:
    """The expression that says whether `function` runs in training mode, or None."""
    for name in MODE_PARAMETERS:
        if name in function.params:
            return name
    node = function.node
    if function.class_name is not None and isinstance(node, cst.FunctionDef):
        params = node.params.params
        if params and params[0].name.value == "self" and _is_module_class(analysis, function.class_name, set()):
            return "self.training"
    for name in MODULE_PARAMETERS:
        if name in function.params:
            return f"{name}.training"
    return None


def _is_module_class(analysis: "ModuleAnalysis", name: str, seen: Set[str]) -> bool:
    """An nn.Module subclass as far as this file shows: a `*Module` base (nn.Module,
    PreTrainedModule-style bases), a local base that is one, or layers built in `__init__`."""
    facts = analysis.classes.get(name)
    if facts is None or name in seen:
        return False
    seen.add(name)
    for base in facts.bases:
        if not isinstance(base, str):
            continue  # `Generic[T]`-style bases
        if base.endswith("Module") or base.endswith("PreTrainedModel"):
            return True
        if base in analysis.classes and _is_module_class(analysis, base, seen):
            return True
    return any(value.kind == "module" for value in facts.attrs.values())


def depends_on_mode(function: "FunctionFacts", call: cst.Call, rate: Optional[cst.BaseExpression]) -> bool:
    """The call runs only in training (`if self.training:`, `... if self.training else ...`), or its
    rate is computed from the mode (`p = self.p if self.training else 0.0`)."""
    node = function.node
    if node is None:
        return False
    guarded = _guarded_calls(node)
    if id(call) in guarded:
        return True
    if rate is None:
        return False
    if _mentions_mode(rate):
        return True
    bound = _assignments_from_mode(node)
    return any(isinstance(n, cst.Name) and n.value in bound for n in _walk(rate))


def _mentions_mode(node: cst.CSTNode) -> bool:
    for n in _walk(node):
        if isinstance(n, cst.Name) and (n.value in MODE_PARAMETERS or "training" in n.value):
            return True
        if isinstance(n, cst.Attribute) and ("training" in n.attr.value or n.attr.value == "train"):
            return True
    return False


def _guarded_calls(function_node: cst.CSTNode) -> Set[int]:
    """ids of the calls inside a branch whose test reads the mode."""
    found: Set[int] = set()

    class Visitor(cst.CSTVisitor):
        def visit_If(self, node: cst.If) -> None:
            if _mentions_mode(node.test):
                found.update(id(n) for n in _walk(node) if isinstance(n, cst.Call))

        def visit_IfExp(self, node: cst.IfExp) -> None:
            if _mentions_mode(node.test):
                found.update(id(n) for n in _walk(node) if isinstance(n, cst.Call))

        def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
            # `if not self.training: return ...` guards everything after it in the block.
            for index, stmt in enumerate(node.body):
                if isinstance(stmt, cst.If) and _mentions_mode(stmt.test) and _leaves(stmt.body):
                    for later in node.body[index + 1 :]:
                        found.update(id(n) for n in _walk(later) if isinstance(n, cst.Call))
                    break

    function_node.visit(Visitor())
    return found


def _assignments_from_mode(function_node: cst.CSTNode) -> Set[str]:
    """Names assigned a value computed from the mode (`p = self.p if self.training else 0.0`),
    or assigned under a test of the mode (`if not training: dropout_p = 0.0`, PyTorch's own
    functional multi-head attention): their value differs between training and evaluation."""
    names: Dict[str, bool] = {}
    for n in _walk(function_node):
        assigns = []
        if isinstance(n, cst.Assign) and _mentions_mode(n.value):
            assigns = [n]
        elif isinstance(n, cst.If) and _mentions_mode(n.test):
            assigns = [a for a in _walk(n.body) if isinstance(a, cst.Assign)]
        for assign in assigns:
            for target in assign.targets:
                if isinstance(target.target, cst.Name):
                    names[target.target.value] = True
    return set(names)


def _walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    yield node
    for child in child_nodes(node):
        yield from _walk(child)


def _leaves(block: cst.BaseSuite) -> bool:
    """The block ends in `return` or `raise`."""
    body = getattr(block, "body", ())
    if not body:
        return False
    last = body[-1]
    if isinstance(last, cst.SimpleStatementLine):
        return any(isinstance(s, (cst.Return, cst.Raise)) for s in last.body)
    return isinstance(last, (cst.Return, cst.Raise))


@dataclass
class WeightsPassedOn:
    """A call, from a function that knows its mode, of a helper that drops out what it is given
    with no mode (`attn_dropout(w, self.p)` with `def attn_dropout(x, p): return F.dropout(x, p)`),
    the value handed over being attention weights."""

    caller: "FunctionFacts"
    call: cst.Call
    mode: str  # the caller's mode flag (`self.training`)


def weights_from_callers(
    analysis: "ModuleAnalysis", function: "FunctionFacts", param: Optional[str], depth: int = 0
) -> List[WeightsPassedOn]:
    """The calls that hand attention weights to `function` for its parameter `param` (None: the
    function computes the weights itself, so any call counts), made from a function that knows
    its mode outside any test of it. A caller without a mode that passes on its own parameter is
    followed to its callers (helpers of helpers), a few levels up."""
    from attnlint.analysis.summaries import param_names

    definitions = analysis.summaries.definitions if analysis.summaries is not None else None
    if definitions is None or not isinstance(function.node, cst.FunctionDef) or depth > 3:
        return []
    found: List[WeightsPassedOn] = []
    for caller in analysis.functions:
        if caller is function:
            continue
        for site in caller.calls:
            target = _called_definition(analysis, definitions, caller, site)
            if target is None or target[1] is not function.node or any(a.star for a in site.call.args):
                continue
            passed = None
            if param is not None:
                names = param_names(function.node, target[0] is not None)
                passed = site.argument(names.index(param) if param in names else 99, param)
                if passed is None:
                    continue
                if not (passed.softmax is not None or passed.role == WEIGHTS or passed.param in caller.params):
                    continue
            mode = mode_flag(analysis, caller)
            if mode is None:
                # A helper of a helper: its own callers decide, for the weights it computes
                # itself (any call) or for the parameter it passes on.
                if passed is None or passed.softmax is not None or passed.role == WEIGHTS:
                    found.extend(weights_from_callers(analysis, caller, None, depth + 1))
                elif passed.param in caller.params:
                    found.extend(weights_from_callers(analysis, caller, passed.param, depth + 1))
                continue
            if depends_on_mode(caller, site.call, None) or any(
                (a.keyword is not None and a.keyword.value in MODE_PARAMETERS) or depends_on_mode(caller, site.call, a.value)
                for a in site.call.args
            ):
                continue  # under `if self.training:`, or handed the mode or a rate computed from it
            if passed is not None and passed.softmax is None and passed.role != WEIGHTS:
                continue  # the caller's own parameter, in a function that knows its mode: not shown
            found.append(WeightsPassedOn(caller=caller, call=site.call, mode=mode))
    return found
