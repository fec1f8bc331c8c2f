"""Cut the code under test out of a user's file: the entry class plus the top-level things it uses.

Files that attention bugs live in are tutorials and notebooks: demo prints, plotting, model
downloads and ``if __name__ == "__main__"`` blocks sit next to the class. Running all of that in the
harness would be slow, flaky and beside the point, so we keep only the top-level statements the entry
reaches: the entry's own statement, and transitively every top-level import, class, function or
assignment whose name it reads (resolved with LibCST's scope analysis, so method locals and
attributes such as ``self.mask`` do not drag in an unrelated top-level ``mask = ...``).
``from __future__`` imports are always kept because they change how the rest compiles.

Runs in the parent process; needs LibCST, never torch.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Set

import libcst as cst
from libcst.metadata import GlobalScope, MetadataWrapper, ScopeProvider


class ExtractionError(ValueError):
    """The source cannot be parsed, or does not define the entry."""


def extract_entry(source: str, entry: str) -> str:
    """Return the statements of ``source`` that ``entry`` needs, in their original order."""
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        raise ExtractionError(f"cannot parse source: {exc.message} at {exc.raw_line}:{exc.raw_column}") from exc
    wrapper = MetadataWrapper(module)
    scopes = wrapper.resolve(ScopeProvider)
    module = wrapper.module
    body = list(module.body)

    bindings: List[Set[str]] = [_bound_names(stmt) for stmt in body]
    if not any(entry in names for names in bindings):
        raise ExtractionError(f"the source defines no top-level {entry!r}")

    global_reads = _global_reads_by_statement(module, scopes)

    def definition_of(name: str, before: int) -> Optional[int]:
        earlier = [i for i in range(before) if name in bindings[i]]
        if earlier:
            return earlier[-1]
        anywhere = [i for i, names in enumerate(bindings) if name in names]
        return anywhere[-1] if anywhere else None

    entry_index = definition_of(entry, len(body))
    assert entry_index is not None
    keep: Set[int] = {entry_index}
    todo = [entry_index]
    while todo:
        index = todo.pop()
        for name in sorted(global_reads.get(index, ())):
            found = definition_of(name, index)
            if found is not None and found not in keep:
                keep.add(found)
                todo.append(found)
    for index, stmt in enumerate(body):
        if _is_future_import(stmt):
            keep.add(index)
    kept = [stmt for index, stmt in enumerate(body) if index in keep]
    return module.with_changes(body=kept, header=[], footer=[]).code


# ---------------------------------------------------------------------------------------------
def _is_future_import(stmt: cst.CSTNode) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and any(
        isinstance(small, cst.ImportFrom) and isinstance(small.module, cst.Name) and small.module.value == "__future__"
        for small in stmt.body
    )


def _is_main_guard(stmt: cst.CSTNode) -> bool:
    if not isinstance(stmt, cst.If) or not isinstance(stmt.test, cst.Comparison):
        return False
    names = {n.value for n in _names_in(stmt.test)}
    return "__name__" in names


def _names_in(node: cst.CSTNode) -> List[cst.Name]:
    found: List[cst.Name] = []

    class Collector(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            found.append(name)

    node.visit(Collector())
    return found


def _target_names(target: cst.BaseExpression) -> Set[str]:
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        out: Set[str] = set()
        for element in target.elements:
            out |= _target_names(element.value)
        return out
    if isinstance(target, cst.StarredElement):
        return _target_names(target.value)
    return set()  # attribute / subscript targets bind no new top-level name


def _bound_names(stmt: cst.CSTNode) -> Set[str]:
    """Names a top-level statement binds (compound statements: everything bound in their bodies)."""
    if isinstance(stmt, (cst.ClassDef, cst.FunctionDef)):
        return {stmt.name.value}
    if _is_main_guard(stmt):
        return set()
    names: Set[str] = set()
    if isinstance(stmt, cst.SimpleStatementLine):
        for small in stmt.body:
            if isinstance(small, cst.Import):
                for alias in small.names:
                    if alias.asname is not None:
                        names |= _target_names(alias.asname.name)
                    else:
                        names.add(_dotted(alias.name).split(".")[0])
            elif isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
                for alias in small.names:
                    bound = alias.asname.name if alias.asname is not None else alias.name
                    names |= _target_names(bound) if isinstance(bound, cst.BaseExpression) else set()
            elif isinstance(small, cst.Assign):
                for target in small.targets:
                    names |= _target_names(target.target)
            elif isinstance(small, (cst.AnnAssign, cst.AugAssign)):
                names |= _target_names(small.target)
        return names
    # if / try / with / for / while at top level: a guarded import or a config block.
    for child in stmt.children:
        if isinstance(child, (cst.IndentedBlock, cst.SimpleStatementSuite)):
            for inner in child.body:
                names |= _bound_names(inner)
        elif isinstance(child, (cst.BaseSuite, cst.CSTNode)) and not isinstance(child, cst.BaseExpression):
            names |= _bound_names(child)
    return names


def _dotted(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return ""


def _global_reads_by_statement(module: cst.Module, scopes) -> Dict[int, Set[str]]:
    """For each top-level statement index: the top-level names read anywhere inside it."""
    owner: Dict[int, int] = {}  # id(node) -> index of its top-level statement

    class Owner(cst.CSTVisitor):
        def __init__(self, index: int) -> None:
            self.index = index

        def on_visit(self, node: cst.CSTNode) -> bool:
            owner[id(node)] = self.index
            return True

    for index, stmt in enumerate(module.body):
        stmt.visit(Owner(index))

    reads: Dict[int, Set[str]] = {}
    seen_scopes = {id(s): s for s in scopes.values() if s is not None}
    for scope in seen_scopes.values():
        for access in scope.accesses:
            index = owner.get(id(access.node))
            if index is None:
                continue
            name = _dotted(access.node) if isinstance(access.node, (cst.Name, cst.Attribute)) else ""
            root = name.split(".")[0]
            if not root:
                continue
            referents = list(access.referents)
            # Names that resolve to a method/class/comprehension local are not top-level reads.
            if referents and not any(isinstance(r.scope, GlobalScope) for r in referents):
                continue
            reads.setdefault(index, set()).add(root)
    return reads
