"""Which functions the first reading of a module analyses.

A function's own analysis matters for what its text holds (the sites rules read: a softmax, an
SDPA call, a mask parameter, a `view`) and for what it hands to the functions it calls (its
call sites refine them, see `_refine_by_callers`). A caller that says which text can matter
(the engine passes its rules' triggers, the text without which no rule can fire) lets the
reading skip the rest: a function is read when its text can matter, or when it names a
definition that is read (it constructs, calls or refers to it); a class is read whole when one
of its methods is. Every `__init__` is read whatever its text: what it stores is what calls into
its class see (a helper module's widths). Callees need no reading of their own here: a call is
summarised on demand, in its caller's context.

Modules read only for what they lend (another file of the project: its constants and its
functions' summaries) read no function but the `__init__`s.
"""

from __future__ import annotations

import re
from typing import Callable, Dict, Iterator, List, Optional, Set

import libcst as cst

from attnlint.analysis.flow import block_statements
from attnlint.analysis.names import Subtree

_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


def definitions_in(body) -> Iterator[cst.CSTNode]:
    """Functions and classes in a body, including those under `if`, `try`/`except`, `with`,
    `else` and `match` (a `try: import ... except ImportError: def fallback()`), but not inside
    other functions or classes (those are analysed by their owner)."""
    for stmt in body:
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            yield stmt
        elif not isinstance(stmt, cst.SimpleStatementLine):
            blocks = [
                getattr(stmt, "body", None),
                getattr(getattr(stmt, "orelse", None), "body", None),
                getattr(getattr(stmt, "finalbody", None), "body", None),
            ]
            if isinstance(getattr(stmt, "orelse", None), cst.If):
                blocks.append(None)
                yield from definitions_in([stmt.orelse])
            blocks += [h.body for h in getattr(stmt, "handlers", ())]
            blocks += [c.body for c in getattr(stmt, "cases", ())]
            for block in blocks:
                if isinstance(block, (cst.IndentedBlock, cst.SimpleStatementSuite)):
                    yield from definitions_in(block_statements(block))


_LITERALS = frozenset({cst.SimpleString, cst.Integer, cst.Float, cst.Imaginary})


def skeleton(subtree: Subtree, start: int = 0, end: Optional[int] = None) -> str:
    """The code tokens of `subtree.nodes[start:end]` that triggers are written against: names,
    `.attr` and `.attr(` / `name(` of calls, literals (`"-inf"`, `1e9`), keyword names; its
    punctuation, whitespace and comments left out. Several times cheaper than generating the
    code, and a trigger reads it as it reads the code (`\\.view\\(`, `\\binf\\b`, `softmax`)."""
    out: List[str] = []
    for node in subtree.nodes[start:end]:
        kind = type(node)
        if kind is cst.Name:
            out.append(node.value)
        elif kind is cst.Attribute:
            out.append("." + node.attr.value)
        elif kind is cst.Call:
            func = node.func
            if type(func) is cst.Attribute:
                out.append("." + func.attr.value + "(")
            elif type(func) is cst.Name:
                out.append(func.value + "(")
        elif kind in _LITERALS:
            out.append(node.value)
    return " ".join(out)


def _calls_a_model_parameter(function: cst.FunctionDef, body: Subtree, class_names: Set[str]) -> bool:
    """`model(batch)` with `model` a parameter that may hold a module of this file (see
    modules.names_a_model: what the analysis follows of a parameter called as a model)."""
    from attnlint.analysis.modules import names_a_model

    params = function.params
    given = {p.name.value for p in [*params.posonly_params, *params.params, *params.kwonly_params]}
    given = {n for n in given if any(names_a_model(n, c) for c in class_names)}
    if not given:
        return False
    return any(
        type(node) is cst.Call and type(node.func) is cst.Name and node.func.value in given for node in body.nodes
    )


def _attributes_built(body: Subtree, wanted, wanted_attributes: Set[str]) -> Dict[str, frozenset]:
    """`self.attn = Attention(cfg)` in `__init__` (walked as `body`): attribute -> the names its
    value mentions. Attributes whose value's text is wanted (`self.normalize =
    nn.Softmax(dim=1)`) go to `wanted_attributes`: what uses them is read."""
    built: Dict[str, Set[str]] = {}
    for index, node in enumerate(body.nodes):
        if type(node) is not cst.Assign:
            continue
        targets = [
            t.target.attr.value
            for t in node.targets
            if type(t.target) is cst.Attribute and type(t.target.value) is cst.Name and t.target.value.value == "self"
        ]
        if not targets:
            continue
        # The value's nodes are the last of the assignment's (its targets come first).
        value_start = body.nodes.index(node.value, index)
        value_nodes = body.nodes[value_start : body.ends[index]]
        mentioned = {n.value for n in value_nodes if type(n) is cst.Name}
        for attr in targets:
            built.setdefault(attr, set()).update(mentioned)
        if wanted(skeleton(body, value_start, body.ends[index])):
            wanted_attributes.update(targets)
    return {attr: frozenset(names) for attr, names in built.items()}


def _sub(tree: Subtree, index: int) -> Subtree:
    """The subtree of `tree.nodes[index]`, without walking it again."""
    end = tree.ends[index]
    part = Subtree.__new__(Subtree)
    part.root = tree.nodes[index]
    part.nodes = tree.nodes[index:end]
    part.ends = [e - index for e in tree.ends[index:end]]
    part.nested = tree.nested[index:end]
    return part


class FirstReading:
    """The functions (by node) that the first reading of `module` analyses; every one when
    `wanted` is None."""

    def __init__(self, module: cst.Module, wanted: Optional[Callable[[str], bool]]) -> None:
        self.everything = wanted is None
        self._read: Set[int] = set()
        # The bodies walked here, for what the analysis reads of them next (flow._body_facts).
        self.subtrees: Dict[int, Subtree] = {}
        if wanted is None:
            return
        classes: List[cst.ClassDef] = []
        functions: List[cst.FunctionDef] = []  # module functions and methods
        owner: Dict[int, cst.ClassDef] = {}
        pending = list(definitions_in(module.body))
        while pending:
            node = pending.pop()
            if isinstance(node, cst.FunctionDef):
                functions.append(node)
                continue
            classes.append(node)
            for member in definitions_in(block_statements(node.body)):
                if isinstance(member, cst.FunctionDef):
                    functions.append(member)
                    owner[id(member)] = node
                else:
                    pending.append(member)
        class_names = {c.name.value for c in classes}
        # What each definition's text can matter for, and the names it mentions.
        names: Dict[int, frozenset] = {}
        read: Set[int] = set()
        mentioned: Set[str] = set()
        built: Dict[int, Dict[str, frozenset]] = {}
        for function in functions:
            # The whole definition: its decorators, parameters (`mask=None`) and body.
            whole = Subtree(function)
            text = skeleton(whole)
            body = next((i for i, n in enumerate(whole.nodes) if n is function.body), None)
            body_tree = _sub(whole, body)
            self.subtrees[id(function.body)] = body_tree
            names[id(function)] = frozenset(_IDENTIFIER.findall(text))
            if wanted(text) or _calls_a_model_parameter(function, body_tree, class_names):
                read.add(id(function))
            if id(function) in owner and function.name.value == "__init__":
                built[id(function)] = _attributes_built(body_tree, wanted, mentioned)
        # Names of what is read (a function, a method, a class, an attribute holding one): what
        # mentions them is read too, until nothing changes.
        changed = True
        while changed:
            changed = False
            for function in functions:
                if id(function) not in read and not names[id(function)].isdisjoint(mentioned):
                    read.add(id(function))
            for function in functions:
                if id(function) not in read:
                    continue
                new = {function.name.value} if not function.name.value.startswith("__") else set()
                cls = owner.get(id(function))
                if cls is not None:
                    new.add(cls.name.value)
                new -= mentioned
                if new:
                    mentioned |= new
                    changed = True
            for attributes in built.values():
                for attr, value_names in attributes.items():
                    if attr not in mentioned and not value_names.isdisjoint(mentioned):
                        mentioned.add(attr)
                        changed = True
        self._read = read
        self._nodes = functions  # held so that the ids above stay theirs

    def reads(self, function: cst.FunctionDef) -> bool:
        """Whether the first reading analyses `function` (a module function or a method; an
        `__init__` always)."""
        return self.everything or id(function) in self._read or function.name.value == "__init__"
