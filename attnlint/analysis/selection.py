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

What a definition's text holds is read from the source with CPython's `ast` (its line span,
the names it mentions, the calls it makes): some twenty times cheaper than walking LibCST's
tree, which matters since every definition of a checked file is looked at. Definitions are
matched to LibCST's by their qualified name; one whose name several definitions share is read.

Modules read only for what they lend (another file of the project: its constants and its
functions' summaries) read no function but the `__init__`s (`wanted=NOTHING`).
"""

from __future__ import annotations

import ast
import re
from typing import Callable, Dict, Iterator, List, Optional, Set, Tuple

import libcst as cst

from attnlint.analysis.flow import block_statements

_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")

# How many rounds the analysis refines functions by what their callers pass (see
# analysis._refine_by_callers).
CONTEXT_ROUNDS = 4


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


def NOTHING(text: str) -> bool:
    """`wanted` for a module read only for what it lends: no text matters."""
    return False


_Key = Tuple[str, ...]  # enclosing classes' names, then the function's


def _libcst_functions(module: cst.Module) -> Dict[_Key, List[cst.FunctionDef]]:
    """Module functions and methods (of classes at any depth of classes), by qualified name."""
    found: Dict[_Key, List[cst.FunctionDef]] = {}
    pending = [((), node) for node in definitions_in(module.body)]
    while pending:
        prefix, node = pending.pop()
        key = prefix + (node.name.value,)
        if isinstance(node, cst.FunctionDef):
            found.setdefault(key, []).append(node)
        else:
            pending += [(key, member) for member in definitions_in(block_statements(node.body))]
    return found


def _ast_definitions(body, prefix: _Key, functions: Dict[_Key, list], classes: Dict[_Key, Set[str]]) -> None:
    """The same definitions in CPython's tree (see definitions_in), by qualified name; classes
    with the names of their bases."""
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions.setdefault(prefix + (stmt.name,), []).append(stmt)
        elif isinstance(stmt, ast.ClassDef):
            bases = {b.id if isinstance(b, ast.Name) else b.attr for b in stmt.bases if isinstance(b, (ast.Name, ast.Attribute))}
            classes.setdefault(prefix + (stmt.name,), set()).update(bases)
            _ast_definitions(stmt.body, prefix + (stmt.name,), functions, classes)
        else:
            for block in ("body", "orelse", "finalbody"):
                inner = getattr(stmt, block, None)
                if isinstance(inner, list):
                    _ast_definitions(inner, prefix, functions, classes)
            for part in [*getattr(stmt, "handlers", ()), *getattr(stmt, "cases", ())]:
                _ast_definitions(part.body, prefix, functions, classes)


def _imports(body) -> Iterator[ast.stmt]:
    """The import statements in a body, at any depth of statements."""
    for stmt in body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            yield stmt
            continue
        for block in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, block, None)
            if isinstance(inner, list):
                yield from _imports(inner)
        for part in [*getattr(stmt, "handlers", ()), *getattr(stmt, "cases", ())]:
            yield from _imports(part.body)


def _families(classes: Dict[_Key, Set[str]]) -> Dict[_Key, int]:
    """Classes joined by inheritance within the module (`super().forward(...)` in a subclass,
    `self.score(...)` in a base): class -> its family's number."""
    family = {key: i for i, key in enumerate(classes)}
    by_name: Dict[str, List[_Key]] = {}
    for key in classes:
        by_name.setdefault(key[-1], []).append(key)
    changed = True
    while changed:
        changed = False
        for key, bases in classes.items():
            for base in bases:
                for other in by_name.get(base, ()):
                    low = min(family[key], family[other])
                    if family[key] != low or family[other] != low:
                        family[key] = family[other] = low
                        changed = True
    return family


def _calls_a_model_parameter(function, text: str, class_names: Set[str]) -> bool:
    """`model(batch)` with `model` a parameter that may hold a module of this file (see
    modules.names_a_model: what the analysis follows of a parameter called as a model)."""
    from attnlint.analysis.modules import names_a_model

    args = function.args
    given = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
    given = [name for name in given if any(names_a_model(name, c) for c in class_names)]
    # Its text holds `model(`: the call, or something as telling (it is only read more).
    return bool(given) and re.search(r"(?<![\w.])(?:%s)\s*\(" % "|".join(map(re.escape, given)), text) is not None


def _attributes_built(init, lines: List[str], wanted, wanted_attributes: Set[str]) -> Dict[str, frozenset]:
    """`self.attn = Attention(cfg)` in `__init__`: attribute -> the names its value mentions.
    Attributes whose value's text is wanted (`self.normalize = nn.Softmax(dim=1)`) go to
    `wanted_attributes`: what uses them is read."""
    built: Dict[str, Set[str]] = {}
    for node in ast.walk(init):
        if not isinstance(node, ast.Assign):
            continue
        targets = [
            t.attr
            for t in node.targets
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
        ]
        if not targets:
            continue
        text = "".join(lines[node.value.lineno - 1 : node.value.end_lineno])
        mentioned = set(_IDENTIFIER.findall(text))
        for attr in targets:
            built.setdefault(attr, set()).update(mentioned)
        if wanted(text):
            wanted_attributes.update(targets)
    return {attr: frozenset(names) for attr, names in built.items()}


class FirstReading:
    """The functions (by node) that the first reading of `module` analyses; every one when
    `wanted` is None, none but the `__init__`s when it is NOTHING. `source`: the module's text
    (generated from `module` when not given)."""

    def __init__(
        self, module: cst.Module, wanted: Optional[Callable[[str], bool]], source: Optional[str] = None
    ) -> None:
        self.everything = wanted is None
        self._read: Set[int] = set()
        # How many calls separate a function read from one whose text can matter (0: its own
        # text can; absent: every function, when everything is read).
        self._hops: Dict[int, int] = {}
        # The names the code analysed can use: what the functions read, and what the module's
        # and classes' own statements mention (None: any name).
        self.names_read: Optional[frozenset] = None
        if wanted is None or wanted is NOTHING:
            return
        source = module.code if source is None else source
        ours = _libcst_functions(module)
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            self.everything = True  # LibCST reads what CPython does not (newer grammar): read all
            return
        theirs: Dict[_Key, list] = {}
        classes: Dict[_Key, Set[str]] = {}
        _ast_definitions(tree.body, (), theirs, classes)
        class_names = {key[-1] for key in classes}
        family = _families(classes)
        lines = source.splitlines(keepends=True)
        # What each definition's text can matter for, and the names it mentions.
        names: Dict[_Key, frozenset] = {}
        read: Set[_Key] = set()
        hop_of: Dict[_Key, int] = {}
        mentioned: Set[str] = set()
        built: List[Dict[str, frozenset]] = []
        for key, nodes in ours.items():
            found = theirs.get(key, ())
            if len(nodes) != 1 or len(found) != 1:
                read.add(key)  # not matched one to one: read, as without a selection
                hop_of[key] = 0
                names[key] = frozenset()
                continue
            function = found[0]
            first = min([function.lineno, *(d.lineno for d in function.decorator_list)])
            text = "".join(lines[first - 1 : function.end_lineno])
            names[key] = frozenset(_IDENTIFIER.findall(text))
            if wanted(text) or _calls_a_model_parameter(function, text, class_names):
                read.add(key)
                hop_of[key] = 0
            if len(key) > 1 and key[-1] == "__init__":
                built.append(_attributes_built(function, lines, wanted, mentioned))
        # Names of what is read, and what mentions them is read too, until nothing changes:
        # - a module function, by every function and method;
        # - a method, by the methods of its class and of the classes it inherits from or that
        #   inherit from it (`self.score(...)`, `super().forward(...)`);
        # - a class, by module functions (`build(cfg)` constructs it) and by the attributes an
        #   `__init__` builds from it (`self.block = SelfAttention(dim)`), whose users are read.
        #   A method that names a class (`isinstance(m, Module)`) is not read for that alone.
        # A caller more than CONTEXT_ROUNDS calls above what can matter cannot change it: the
        # analysis refines callees by their callers that many rounds.
        within: Dict[object, Set[str]] = {}  # class family -> names of its methods read
        read_classes: Set[str] = set()
        changed, hops = True, 0
        while changed and hops <= CONTEXT_ROUNDS:
            changed, hops = False, hops + 1
            for key in ours:
                if key in read:
                    continue
                seen = names[key]
                if len(key) == 1:
                    if not seen.isdisjoint(mentioned) or not seen.isdisjoint(read_classes):
                        read.add(key)
                        hop_of[key] = hops - 1
                elif not seen.isdisjoint(mentioned) or not seen.isdisjoint(within.get(family.get(key[:-1]), ())):
                    read.add(key)
                    hop_of[key] = hops - 1
            for key in read:
                name = key[-1] if not key[-1].startswith("__") else None  # `__call__` says nothing
                owner = key[:-1]
                if not owner:
                    if name is not None and name not in mentioned:
                        mentioned.add(name)
                        changed = True
                    continue
                group = family.get(owner)
                if name is not None and name not in within.get(group, ()):
                    within.setdefault(group, set()).add(name)
                    changed = True
                if owner[-1] not in read_classes:
                    read_classes.add(owner[-1])
                    changed = True
            for attributes in built:
                for attr, value_names in attributes.items():
                    if attr not in mentioned and not (value_names.isdisjoint(mentioned) and value_names.isdisjoint(read_classes)):
                        mentioned.add(attr)
                        changed = True
        self._read = {id(node) for key in read for node in ours[key]}
        self._hops = {id(node): hop_of.get(key, 0) for key in read for node in ours[key]}
        # Every line but those of the functions not read (their decorators included) and imports.
        skipped = bytearray(len(lines) + 1)
        for key, nodes in ours.items():
            found = theirs.get(key, ())
            if key in read or key[-1] == "__init__" or len(nodes) != 1 or len(found) != 1:
                continue
            function = found[0]
            first = min([function.lineno, *(d.lineno for d in function.decorator_list)])
            skipped[first - 1 : function.end_lineno] = b"\x01" * (function.end_lineno - first + 1)
        # An import names what it imports: that is not a use.
        for node in _imports(tree.body):
            skipped[node.lineno - 1 : node.end_lineno] = b"\x01" * (node.end_lineno - node.lineno + 1)
        kept = "".join(line for number, line in enumerate(lines) if not skipped[number])
        self.names_read = frozenset(_IDENTIFIER.findall(kept))
        self._nodes = ours  # held so that the ids above stay theirs

    def hops(self, function: cst.FunctionDef) -> int:
        """How many calls separate `function` from the nearest function whose text can matter
        (0 when its own text can, when everything is read, and for builders: what `__init__`
        stores is read by every method)."""
        if self.everything or function.name.value in ("__init__", "__post_init__"):
            return 0
        return self._hops.get(id(function), 0)

    def reads(self, function: cst.FunctionDef) -> bool:
        """Whether the first reading analyses `function` (a module function or a method; an
        `__init__` always)."""
        return self.everything or id(function) in self._read or function.name.value in ("__init__", "__post_init__")
