"""Names: the fallback source of roles, and import aliases.

Data flow comes first (what a value was computed from, where it flows); a variable's name is
only consulted when the data flow does not say what the value is.
"""

from __future__ import annotations

import dataclasses
from functools import lru_cache
import re
from typing import Dict, Optional

import libcst as cst

from attnlint.analysis.values import KEY, QKV, QUERY, VALUE

_QUERY_WORDS = {"q", "query", "queries", "xq", "wq", "qs", "qry", "quer"}
_KEY_WORDS = {"k", "key", "keys", "xk", "wk", "ks"}
_VALUE_WORDS = {"v", "value", "values", "xv", "wv", "vs", "val", "vals"}
_QKV_WORDS = {"qkv", "wqkv", "in_proj", "c_attn", "to_qkv", "query_key_value"}

_SPLIT = re.compile(r"[_\W]+|(?<=[a-z])(?=[A-Z])")


def words(name: str) -> list:
    """`query_states` -> [query, states]; `W_q` -> [w, q]; `keyProj` -> [key, proj]."""
    return list(_words(name))


@lru_cache(maxsize=65536)
def _words(name: str) -> tuple:
    return tuple(w.lower() for w in _SPLIT.split(name) if w)


_LITERALS: dict = {}


def literal(node: cst.BaseExpression):
    """`node.evaluated_value` of a number or string literal, remembered by its text: LibCST
    evaluates one by parsing it again with `ast.literal_eval`, and the analysis asks often."""
    kind = type(node)
    if kind is not cst.SimpleString and kind is not cst.Integer and kind is not cst.Float and kind is not cst.Imaginary:
        return node.evaluated_value
    key = (kind, node.value)
    if key not in _LITERALS:
        if len(_LITERALS) > 65536:
            _LITERALS.clear()
        _LITERALS[key] = node.evaluated_value
    return _LITERALS[key]


def role_from_name(name: str) -> Optional[str]:
    """A role suggested by a variable or attribute name, or None when the name is not telling."""
    lowered = name.lower()
    parts = words(name)
    # A size named after what it sizes (`qkv_dim`, `num_q`, `k_size`, `top_k`) is a number.
    sizes = len(parts) > 1 and any(p in _SIZE_WORDS for p in parts)
    if lowered in _QKV_WORDS or "qkv" in lowered:
        return None if sizes else QKV
    if not parts:
        return None
    # Single-letter conventions are strong only on their own (`q`, `Q`) or with a projection
    # word (`W_q`, `q_proj`, `to_q`, `q_states`); a `k` inside `top_k` is not a key.
    hits = set()
    for part in parts:
        if part in _QUERY_WORDS:
            hits.add(QUERY)
        elif part in _KEY_WORDS:
            hits.add(KEY)
        elif part in _VALUE_WORDS:
            hits.add(VALUE)
    if len(hits) != 1:
        return None
    role = hits.pop()
    return None if sizes else role


_SIZE_WORDS = frozenset({"top", "num", "n", "idx", "index", "size", "dim", "len", "d"})


# ------------------------------------------------------------------------------------------
# Imports
# ------------------------------------------------------------------------------------------
# Conventional aliases, assumed when a file (a snippet, a notebook cell) imports nothing.
DEFAULT_ALIASES: Dict[str, str] = {
    "torch": "torch",
    "F": "torch.nn.functional",
    "nn": "torch.nn",
    "math": "math",
    "np": "numpy",
}


def iter_statements(body):
    """Every statement, nested ones too, without descending into expressions (cheap)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, cst.SimpleStatementLine):
            continue
        for attr in ("body", "orelse", "finalbody"):
            block = getattr(stmt, attr, None)
            if block is None:
                continue
            if isinstance(block, cst.If):  # elif chain
                yield from iter_statements([block])
                continue
            inner = getattr(block, "body", None)
            if isinstance(inner, (list, tuple)):
                yield from iter_statements(inner)
        for handler in getattr(stmt, "handlers", ()):
            yield from iter_statements(handler.body.body)
        for case in getattr(stmt, "cases", ()):
            yield from iter_statements(case.body.body)


def collect_aliases(module: cst.Module, defaults: bool = True) -> Dict[str, str]:
    """Local name -> dotted qualified name, from the module's imports (nested ones too). With
    `defaults`, the conventional names (`torch`, `F`, `nn`, `np`) a snippet uses unimported too:
    what code means; without, only what the file binds (what a fix may write)."""
    aliases: Dict[str, str] = {}
    for stmt in iter_statements(module.body):
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.Import):
                for alias in small.names:
                    dotted = _dotted(alias.name)
                    if dotted is None:
                        continue
                    if alias.asname is not None:
                        aliases[_asname(alias)] = dotted
                    else:
                        aliases[dotted.split(".")[0]] = dotted.split(".")[0]
            elif isinstance(small, cst.ImportFrom):
                if small.relative or small.module is None or isinstance(small.names, cst.ImportStar):
                    continue
                base = _dotted(small.module)
                if base is None:
                    continue
                for alias in small.names:
                    name = _dotted(alias.name)
                    if name is None:
                        continue
                    local = _asname(alias) if alias.asname is not None else name
                    aliases[local] = f"{base}.{name}"
    if not defaults:
        return aliases
    merged = dict(DEFAULT_ALIASES)
    merged.update(aliases)
    return merged


def _asname(alias: cst.ImportAlias) -> str:
    assert alias.asname is not None
    name = alias.asname.name
    return name.value if isinstance(name, cst.Name) else ""


def dotted(node: cst.BaseExpression) -> Optional[str]:
    """`a.b.c` for a name or attribute chain (else None). A loop, not recursion: a chain can be
    thousands of links long."""
    parts = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


_dotted = dotted


def qualify(node: cst.BaseExpression, aliases: Dict[str, str]) -> Optional[str]:
    """`F.softmax` -> `torch.nn.functional.softmax` given `import torch.nn.functional as F`."""
    dotted = _dotted(node)
    if dotted is None:
        return None
    head, _, rest = dotted.partition(".")
    if head in aliases:
        base = aliases[head]
        return f"{base}.{rest}" if rest else base
    return None


# Spellings of the same function in torch's namespaces.
def canonical(qualified: Optional[str]) -> Optional[str]:
    if qualified is None:
        return None
    for prefix in ("torch.nn.functional.", "torch.functional.", "torch.special.", "torch.linalg."):
        if qualified.startswith(prefix):
            return "torch." + qualified[len(prefix) :]
    if qualified.startswith("torch.nn.modules."):
        return "torch.nn." + qualified.rsplit(".", 1)[-1]
    return qualified


def binds(stmt: cst.CSTNode, name: str) -> bool:
    """The statement assigns `name`, alone or in a tuple target (`name = ...`, `a, name = ...`,
    `name += ...`, `name: T = ...`). A statement line counts when one of its statements does."""
    if isinstance(stmt, cst.SimpleStatementLine):
        return any(binds(small, name) for small in stmt.body)
    targets = []
    if isinstance(stmt, cst.Assign):
        targets = [t.target for t in stmt.targets]
    elif isinstance(stmt, (cst.AnnAssign, cst.AugAssign)):
        targets = [stmt.target]
    while targets:
        target = targets.pop()
        if isinstance(target, cst.Name) and target.value == name:
            return True
        if isinstance(target, (cst.Tuple, cst.List)):
            targets += [e.value for e in target.elements]
        elif isinstance(target, cst.StarredElement):
            targets.append(target.value)
    return False


def names_in(node: cst.CSTNode) -> set:
    """Every name `node` reads, writes or declares."""
    found = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if type(current) is cst.Name:
            found.add(current.value)
        else:
            stack.extend(child_nodes(current))
    return found


def names_scale(name: str) -> bool:
    """A name that says a scale of scores: `scale`, `scaling`, `softmax_scale`, `attn_scale`,
    `scale_factor`; not `rescale_grad` or `scale_by_keep` (a flag)."""
    words = name.lower().strip("_").split("_")
    return words[-1] in ("scale", "scaling") or words == ["scale", "factor"]


def names_size(name: str) -> bool:
    """A name that says a size (`dim_head`, `head_dim`, `d_k`, `key_size`, `hidden_dim`), not
    a scale or a temperature."""
    parts = words(name)
    if any(p in ("scale", "scaling", "temperature", "temp", "factor") for p in parts):
        return False
    return bool(set(parts) & {"dim", "dims", "size", "width"}) or name.lower() in ("d_k", "dk", "d_head", "dh", "d_model", "e", "emb")


def plain_names_read(node: cst.CSTNode) -> set:
    """The plain names an expression reads, not through an attribute: `d_model` of
    `math.sqrt(d_model)`, nothing of `self.scale` (an attribute is not the variable of its name)."""
    if isinstance(node, cst.Name):
        return {node.value}
    if isinstance(node, cst.Attribute):
        return set() if isinstance(node.value, cst.Name) else plain_names_read(node.value) - {node.attr.value}
    found = set()
    for child in child_nodes(node):
        found |= plain_names_read(child)
    return found


def contains(node: cst.CSTNode, inner: cst.CSTNode) -> bool:
    """Is `inner` (by identity) `node` or inside it?"""
    return node is inner or any(contains(child, inner) for child in child_nodes(node))


def rebound_names(node: cst.CSTNode) -> set:
    """Every name `node` binds anywhere, nested functions included (over-approximated on
    purpose): assignment, augmented and annotated targets, `for` and comprehension targets,
    `with ... as`, `:=`, `del`, `global`/`nonlocal`."""
    return set(binding_counts(node))


_BINDS_TARGET = frozenset({cst.AssignTarget, cst.AnnAssign, cst.AugAssign, cst.For, cst.CompFor, cst.NamedExpr, cst.Del})


def binding_counts(node: cst.CSTNode, subtree: Optional["Subtree"] = None) -> Dict[str, int]:
    """How many places in `node` bind each name (see rebound_names). `subtree`: `node`'s nodes,
    already walked."""
    found: Dict[str, int] = {}

    def targets(target: cst.CSTNode) -> None:
        if isinstance(target, cst.Name):
            found[target.value] = found.get(target.value, 0) + 1
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                targets(element.value)
        elif isinstance(target, cst.StarredElement):
            targets(target.value)

    for current in (subtree or Subtree(node)).nodes:
        kind = type(current)
        if kind in _BINDS_TARGET:
            targets(current.target)
        elif kind is cst.AsName:
            targets(current.name)
        elif kind is cst.Global or kind is cst.Nonlocal:
            for n in current.names:
                targets(n.name)
                targets(n.name)
    return found


_SCOPES = frozenset({cst.FunctionDef, cst.ClassDef, cst.Lambda})


class Subtree:
    """Every code node under `root` (itself included) in source order, walked once for all the
    questions a function's text answers (what it binds, embeds, negates, where it may leave).

    `ends[i]` is one past the last node of node i's subtree; `nested[i]` says node i is in a
    function, class or lambda defined under the root (its own nodes, not the definition)."""

    __slots__ = ("root", "nodes", "ends", "nested")

    def __init__(self, root: cst.CSTNode) -> None:
        self.root = root
        nodes: list = []
        ends: list = []
        nested: list = []
        # (node, inside a nested definition) to enter; (None, index) to close node index's subtree.
        stack: list = [(root, False)]
        is_node = _NODE_TYPES
        while stack:
            node, inside = stack.pop()
            if node is None:
                ends[inside] = len(nodes)
                continue
            index = len(nodes)
            nodes.append(node)
            nested.append(inside)
            ends.append(0)
            stack.append((None, index))
            kind = type(node)
            below = inside or (node is not root and kind in _SCOPES)
            # child_nodes, inlined: this walk visits every node of every function analysed.
            fields = _CHILD_FIELDS.get(kind)
            if fields is None:
                fields = _child_fields(node)
            children = []
            for name in fields:
                value = getattr(node, name)
                value_kind = type(value)
                if value_kind is tuple or value_kind is list:
                    for item in value:
                        known = is_node.get(type(item))
                        if known is None:
                            known = _is_node_type(type(item))
                        if known:
                            children.append(item)
                else:
                    known = is_node.get(value_kind)
                    if known is None:
                        known = _is_node_type(value_kind)
                    if known:
                        children.append(value)
            for child in reversed(children):
                stack.append((child, below))
        self.nodes, self.ends, self.nested = nodes, ends, nested

    def outside_definitions(self):
        """(index, node) of the nodes not in a definition under the root (nor the definitions)."""
        nested, root = self.nested, self.root
        for index, node in enumerate(self.nodes):
            if not nested[index] and (node is root or type(node) not in _SCOPES):
                yield index, node


_CHILD_FIELDS: dict = {}


# Fields that hold only whitespace, comments and punctuation: no search looks into them, and
# they are about half of a tree's nodes.
_LAYOUT_FIELDS = frozenset(
    {
        "lpar", "rpar", "leading_lines", "lines_after_decorators", "header", "footer", "trailing_whitespace",
        "comma", "semicolon", "dot", "colon", "equal", "empty_lines",
    }
)


def _child_fields(node: cst.CSTNode) -> tuple:
    names = _CHILD_FIELDS[type(node)] = tuple(
        f.name for f in dataclasses.fields(node) if f.name not in _LAYOUT_FIELDS and not f.name.startswith("whitespace")
    )
    return names


def child_nodes(node: cst.CSTNode) -> list:
    """The nodes held by `node`'s fields that are code: its children without their whitespace,
    comments and punctuation, read from the dataclass without the visitor that LibCST's
    `children` runs (several times faster), in field order (the source order)."""
    names = _CHILD_FIELDS.get(type(node))
    if names is None:
        names = _child_fields(node)
    out = []
    for name in names:
        value = getattr(node, name)
        kind = type(value)
        if kind is tuple or kind is list:
            out.extend(v for v in value if _is_node_type(type(v)))
        elif _is_node_type(kind):
            out.append(value)
    return out


_NODE_TYPES: dict = {}


def _is_node_type(kind: type) -> bool:
    """issubclass(kind, CSTNode), remembered per type: CSTNode is an ABC, whose isinstance is
    slow, and a walk asks it for every field of every node."""
    known = _NODE_TYPES.get(kind)
    if known is None:
        known = _NODE_TYPES[kind] = issubclass(kind, cst.CSTNode)
    return known
