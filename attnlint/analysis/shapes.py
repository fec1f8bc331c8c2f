"""Shapes: each tensor's symbolic sizes, and what the shape operations do to them.

Sizes come from data flow (`b, n, d = x.shape`, `x.size(1)`, constructor and `view` arguments,
`nn.Linear` sizes, einsum and einops patterns) and, when the data flow has none, from text:
a comment like `# x: (batch, num_tokens, d_in)` or a trailing `# (b, n, d)`, jaxtyping
annotations. Each axis may also carry a role (batch, heads, queries, keys, feature) from an
einsum/einops letter or the name of its size.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from attnlint.analysis.calls import argument
from typing import List, Optional, Tuple

import libcst as cst

_DIM = r"[\w\s\*/+\-\.]+"
_TUPLE = rf"[\(\[]\s*({_DIM}(?:,\s*{_DIM})*),?\s*[\)\]]"
# `# x: (b, n, d)`, `# x shape: [b, n, d]`, `# x = (b, n, d)`, `# q, k, v: (b, h, n, d)`,
# `# key/value: (b, n, d)`; several in one comment, separated by `,` or `;`
# (`# query: (b, m, d), key/value: (b, n, d)`).
_NAMED_GROUP = re.compile(rf"(\w+(?:\s*[,/]\s*\w+)*)(?:\.shape|\s+shape)?\s*[:=]\s*{_TUPLE}")
_GROUP_SEPARATOR = re.compile(r"\s*[,;]\s*")
# A trailing comment that is only a shape: `# (b, n, d)`, `# shape: (b, n, d)`, `# -> [b, h, n, d]`
_BARE = re.compile(rf"^#+\s*(?:shape\s*[:=]?\s*|->\s*|=>\s*)?{_TUPLE}\s*$", re.I)


_IDENT = re.compile(r"^[A-Za-z_]\w*$")


def _dims_of(dims: str) -> Optional[Tuple[Optional[str], ...]]:
    """`b, n, d_model` -> (b, n, d_model); `src len` -> src_len; `1` -> 1; an item that is not
    a name or a number (`enc hid dim * 2`) -> None in its place."""
    items = [d.strip() for d in dims.split(",") if d.strip()]
    if not items or any("..." in d or d.startswith("*") for d in items):
        return None
    items = [re.sub(r"\s+", "_", d) for d in items]
    # A number is that size (`(1, B, H)`: one decoder step).
    return tuple(d if _IDENT.match(d) or d.isdigit() else None for d in items)


def named_shape_comments(comment: str) -> List[Tuple[Tuple[str, ...], Tuple[Optional[str], ...]]]:
    """`# q, k, v: (b, h, n, d)` -> [((q, k, v), (b, h, n, d))]; `# query: (b, m, d), key/value:
    (b, n, d)` -> [((query,), (b, m, d)), ((key, value), (b, n, d))]. Groups are read from the
    start of the comment, one after another; the first text that is not a group ends them."""
    text = comment.strip()
    start = re.match(r"^#+\s*", text)
    if start is None:
        return []
    found = []
    position = start.end()
    while True:
        match = _NAMED_GROUP.match(text, position)
        if not match:
            break
        dims = _dims_of(match.group(2))
        if dims is not None:
            found.append((tuple(n.strip() for n in re.split(r"[,/]", match.group(1))), dims))
        separator = _GROUP_SEPARATOR.match(text, match.end())
        if separator is None or separator.end() == match.end():
            break
        position = separator.end()
    return found


def bare_shape_comment(comment: str) -> Optional[Tuple[Optional[str], ...]]:
    match = _BARE.match(comment.strip())
    return None if not match else _dims_of(match.group(1))


def annotation_dims(annotation: cst.BaseExpression) -> Optional[Tuple[str, ...]]:
    """jaxtyping-style `Float[Tensor, "b n d"]` -> (b, n, d)."""
    if not isinstance(annotation, cst.Subscript) or len(annotation.slice) != 2:
        return None
    dims = annotation.slice[1].slice
    if not isinstance(dims, cst.Index) or not isinstance(dims.value, cst.SimpleString):
        return None
    text = dims.value.evaluated_value
    if not isinstance(text, str):
        return None
    parts = text.split()
    if not parts or any("..." in p or p.startswith("*") or not re.match(r"^\w+$", p) for p in parts):
        return None
    return tuple(parts)


def ranks_the_body_shows(function: cst.FunctionDef, params, subtree=None) -> Tuple[dict, dict]:
    """Name -> rank at entry (parameters) and name -> rank at its binding (names bound once),
    for the values whose rank the function's own
    straight-line code shows (`b, n, d = x.shape`, `assert x.dim() == 3`, `torch.bmm(a, h)`),
    wherever in the body that statement is.

    A parameter has one value for the whole call, and so has a local the body binds once, at
    its top level: a statement every normal completion of the call runs describes that value
    from where it is bound. `q @ k.T` computed before `b, n, d = x.shape` sees a 3-D x (with a
    2-D x the call raises). Only statements at the top level of the body count, up to the first
    statement that may leave the function (a `return`, `raise` or `yield` anywhere in it; a
    top-level `return x` itself counts, its value is computed on the way out): a branch, a loop, a `try` or an early return may skip them; inside a statement, only
    what always runs (not a branch of `a if c else b`, the right of `and`/`or`, a lambda or a
    comprehension). A name bound anywhere else (a nested function included) is left out.
    `subtree`: the nodes of `function.body`, already walked."""
    from attnlint.analysis.names import Subtree, binding_counts

    body = function.body
    statements = list(body.body) if isinstance(body, (cst.IndentedBlock, cst.SimpleStatementSuite)) else []
    subtree = subtree or Subtree(body)
    counts = binding_counts(body, subtree)
    for name in _reshaped_in_place(subtree):
        counts[name] = 2  # `h.unsqueeze_(0)`: a new rank for the same name
    leaving = _statements_that_may_leave(subtree, statements)
    # Batched products show their operands' rank; most bodies have none to look for.
    batched = any(
        type(n) is cst.Call and type(n.func) is cst.Attribute and n.func.attr.value in _BATCHED_PRODUCTS
        for n in subtree.nodes
    )
    entry = {p for p in params if p not in counts}
    bound = set()
    at_entry, at_binding = {}, {}
    for stmt in statements:
        leaves = id(stmt) in leaving
        # `return torch.bmm(w, v)` at the top level: what it computes runs before it leaves.
        returns = leaves and isinstance(stmt, cst.SimpleStatementLine) and all(
            isinstance(small, cst.Return) or not _may_leave(small) for small in stmt.body
        )
        if leaves and not returns:
            break
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            for name, rank in _ranks_shown(small, batched):
                if name in bound:
                    at_binding.setdefault(name, rank)
                elif name in entry:
                    at_entry.setdefault(name, rank)
        # Names bound here, once in the whole function: later statements describe that value.
        for small in stmt.body:
            if isinstance(small, (cst.Assign, cst.AnnAssign)):
                targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
                bound.update(name for name in _target_names(targets) if counts.get(name) == 1)
        if leaves:
            break
    return at_entry, at_binding


_RANK_CHANGING_IN_PLACE = frozenset({"unsqueeze_", "squeeze_", "resize_", "resize_as_", "as_strided_", "set_"})


def _reshaped_in_place(subtree) -> set:
    """Names whose rank an in-place method may change (`x.unsqueeze_(0)`)."""
    found = set()
    for call in subtree.nodes:
        if type(call) is not cst.Call:
            continue
        func = call.func
        if type(func) is cst.Attribute and func.attr.value in _RANK_CHANGING_IN_PLACE and type(func.value) is cst.Name:
            found.add(func.value.value)
    return found


_LEAVES = frozenset({cst.Return, cst.Raise, cst.Yield})


def _statements_that_may_leave(subtree, statements) -> set:
    """Ids of the statements of the walked body that hold a `return`, `raise` or `yield` (not
    in a function or class they define); see _may_leave."""
    wanted = {id(s) for s in statements if type(s) not in (cst.FunctionDef, cst.ClassDef)}
    leaving = set()
    nodes, ends, nested = subtree.nodes, subtree.ends, subtree.nested
    index = 0
    while index < len(nodes):
        node = nodes[index]
        if id(node) in wanted:
            end = ends[index]
            if any(type(nodes[i]) in _LEAVES and not nested[i] for i in range(index, end)):
                leaving.add(id(node))
            index = end
        else:
            index += 1
    return leaving


def _target_names(targets) -> List[str]:
    names = []
    while targets:
        target = targets.pop()
        if isinstance(target, cst.Name):
            names.append(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            targets = targets + [e.value for e in target.elements]
        elif isinstance(target, cst.StarredElement):
            targets = targets + [target.value]
    return names


def _always_run(node: cst.CSTNode):
    """The sub-expressions of `node` evaluated whenever it is (not a conditional branch, the right
    of `and`/`or`, a lambda's or a comprehension's body, a nested definition)."""
    yield node
    if isinstance(node, cst.IfExp):
        yield from _always_run(node.test)
        return
    if isinstance(node, cst.BooleanOperation):
        yield from _always_run(node.left)
        return
    if isinstance(node, (cst.Lambda, cst.GeneratorExp, cst.ListComp, cst.SetComp, cst.DictComp)):
        return
    if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
        return
    from attnlint.analysis.names import child_nodes

    for child in child_nodes(node):
        yield from _always_run(child)


_BATCHED_PRODUCTS = {"bmm": 2, "baddbmm": 3}


def _ranks_shown(small: cst.BaseSmallStatement, batched: bool = True) -> List[Tuple[str, int]]:
    """What `small` shows (see _rank_shown), and the 3-D operands of the batched products it
    always runs when `batched` says the body has some."""
    shown = _rank_shown(small)
    found = [shown] if shown is not None else []
    for node in _always_run(small) if batched else ():
        if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)):
            continue
        count = _BATCHED_PRODUCTS.get(node.func.attr.value)
        if count is None:
            continue
        # `torch.bmm(a, b)` (a module function: the operands are the arguments) or `a.bmm(b)`:
        # 3-D operands only, or the call raises.
        owner = node.func.value
        function_form = isinstance(owner, cst.Name) and owner.value in ("torch", "th")
        operands = [a.value for a in node.args if a.keyword is None][: count if function_form else count - 1]
        if not function_form:
            operands.insert(0, owner)
        if node.func.attr.value == "baddbmm":
            operands = operands[1:]  # the input is broadcast; the two products are 3-D
        found += [(o.value, 3) for o in operands if isinstance(o, cst.Name)]
    return found


def _may_leave(node: cst.CSTNode) -> bool:
    """A `return`, `raise` or `yield` in the statement (not in a function or class it defines)."""
    if isinstance(node, (cst.Return, cst.Raise, cst.Yield)):
        return True
    if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        return False
    from attnlint.analysis.names import child_nodes

    return any(_may_leave(child) for child in child_nodes(node))


def _shape_of_name(node: cst.BaseExpression) -> Optional[str]:
    """`x` of `x.shape` or `x.size()`."""
    if isinstance(node, cst.Call) and not node.args:
        node = node.func
        if not (isinstance(node, cst.Attribute) and node.attr.value == "size"):
            return None
    elif not (isinstance(node, cst.Attribute) and node.attr.value == "shape"):
        return None
    return node.value.value if isinstance(node.value, cst.Name) else None


def _rank_shown(small: cst.BaseSmallStatement) -> Optional[Tuple[str, int]]:
    """(x, n) for `a, b, c = x.shape` / `x.size()` (no starred target) and for `assert x.dim() ==
    n`, `assert x.ndim == n`, `assert len(x.shape) == n`."""
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        target = small.targets[0].target
        name = _shape_of_name(small.value)
        if (
            name is not None
            and isinstance(target, (cst.Tuple, cst.List))
            and target.elements
            and not any(isinstance(e, cst.StarredElement) for e in target.elements)
        ):
            return name, len(target.elements)
        return None
    if isinstance(small, cst.Assert) and isinstance(small.test, cst.Comparison):
        test = small.test
        if len(test.comparisons) != 1 or not isinstance(test.comparisons[0].operator, cst.Equal):
            return None
        left, right = test.left, test.comparisons[0].comparator
        if isinstance(left, cst.Integer):
            left, right = right, left
        if not isinstance(right, cst.Integer):
            return None
        name = rank_read(left)
        return (name, int(right.value)) if name is not None else None
    return None


def rank_read(node: cst.BaseExpression) -> Optional[str]:
    """The name whose rank an expression reads: `x.ndim`, `x.dim()`, `x.ndimension()`,
    `len(x.shape)`."""
    if isinstance(node, cst.Attribute) and node.attr.value == "ndim" and isinstance(node.value, cst.Name):
        return node.value.value
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and not node.args:
        if node.func.attr.value in ("dim", "ndimension") and isinstance(node.func.value, cst.Name):
            return node.func.value.value
        return None
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "len" and len(node.args) == 1:
        return _shape_of_name(node.args[0].value)
    return None


def literal_rank(node: cst.BaseExpression) -> Optional[int]:
    """Nesting depth of a list/tuple literal: `[[1, 2], [3, 4]]` -> 2."""
    rank = 0
    while isinstance(node, (cst.List, cst.Tuple)):
        rank += 1
        if not node.elements:
            return rank
        node = node.elements[0].value
    return rank


@dataclass(frozen=True)
class Einsum:
    inputs: Tuple[str, ...]
    output: str
    ellipsis: bool

    def contracted(self) -> List[str]:
        if len(self.inputs) != 2:
            return []
        a, b = self.inputs
        return [c for c in a if c in b and c not in self.output]

    def only_in(self, index: int) -> List[str]:
        """Letters of the output that come from operand `index` alone."""
        other = "".join(s for i, s in enumerate(self.inputs) if i != index)
        return [c for c in self.output if c in self.inputs[index] and c not in other]

    @staticmethod
    def axis(subscripts: str, letter: str) -> int:
        """Negative axis of `letter` (counted from the right, which survives a leading `...`)."""
        return subscripts.index(letter) - len(subscripts)


def parse_einsum(equation: str) -> Optional[Einsum]:
    eq = equation.replace(" ", "")
    if "->" not in eq:
        return None  # implicit output: letters sorted; too easy to misread, stay silent
    lhs, out = eq.split("->", 1)
    inputs = tuple(lhs.split(","))
    ellipsis = "..." in eq
    clean = tuple(s.replace("...", "") for s in inputs)
    out_clean = out.replace("...", "")
    if not all(s.isalpha() for s in clean if s) or (out_clean and not out_clean.isalpha()):
        return None
    return Einsum(clean, out_clean, ellipsis)


# ------------------------------------------------------------------------------------------
# Roles of axes, from the names of their sizes
# ------------------------------------------------------------------------------------------
_BATCH_WORDS = {"b", "bs", "bsz", "batch", "nbatches", "nb"}
_HEAD_WORDS = {"h", "heads", "head", "nh", "nhead", "nheads"}
_FEATURE_WORDS = {
    "d",
    "dim",
    "dk",
    "dv",
    "hd",
    "hs",
    "c",
    "e",
    "features",
    "hidden",
    "embed",
    "emb",
    "model",
    "channels",
}
_TOKEN_WORDS = {"n", "t", "l", "s", "seq", "len", "tokens", "time", "i", "j", "steps", "src", "tgt", "length", "m"}


def role_of_dim_name(name: Optional[str]) -> Optional[str]:
    """`batch_size` -> batch, `num_heads` -> heads, `head_dim` -> feature, `seq_len` -> tokens."""
    from attnlint.analysis.names import words
    from attnlint.analysis.values import BATCH, FEATURE, HEADS, TOKENS

    if not name:
        return None
    parts = [w for w in words(name.split(".")[-1]) if w not in ("num", "n", "size", "of", "self", "config")] or words(
        name
    )
    if not parts:
        return None
    if any(p in ("dim", "d", "features", "hd", "hs", "channels") for p in parts) or parts[-1] in _FEATURE_WORDS:
        return FEATURE
    if parts[0] in _BATCH_WORDS:
        return BATCH
    if parts[-1] in _HEAD_WORDS or parts[0] in _HEAD_WORDS:
        return HEADS
    if parts[-1] in _TOKEN_WORDS or parts[0] in _TOKEN_WORDS:
        return TOKENS
    return None


def role_of_size(size) -> Optional[str]:
    """The role a symbolic size's name suggests, when it is one named quantity."""
    if size is None or len(size.factors) != 1 or size.factors[0][1] != 1 or size.coeff != 1:
        return None
    return role_of_dim_name(size.factors[0][0].name)


def axis_role(value, axis: int) -> Optional[str]:
    """What `axis` of `value` holds: the role set by the operation that made it, else the
    role its size's name suggests."""
    if value.shape is None or not -len(value.shape) <= axis < len(value.shape):
        return None
    entry = value.shape[axis]
    return entry.role if entry.role is not None else role_of_size(entry.size)


_ROLE_WORDS = {"batch": "batch", "heads": "heads", "queries": "queries", "keys": "keys", "tokens": "tokens"}


def score_axis_names(value) -> Optional[Tuple[str, ...]]:
    """The names of a score tensor's axes (`batch`, `heads`, `queries`, `keys`, `axis 1`)."""
    from attnlint.analysis.values import FEATURE, KEY_MAJOR, KEYS, QUERIES

    rank = value.rank
    if rank is None or rank < 2:
        return None
    scores = value.scores
    layout = scores.layout if scores is not None else None
    names = [None] * rank
    if value.shape is not None:
        for axis in range(rank):
            role = axis_role(value, axis)
            if role is not None and role != FEATURE:
                names[axis] = _ROLE_WORDS.get(role)
    if scores is None:
        return tuple(n if n is not None else f"axis {i}" for i, n in enumerate(names))
    if QUERIES not in names and KEYS not in names:
        names[-2:] = ["keys", "queries"] if layout == KEY_MAJOR else ["queries", "keys"]
    if value.shape is None or all(n is None for n in names[:-2]):
        lead = {3: ["batch"], 4: ["batch", "heads"]}.get(rank, ["batch"] * (rank - 2))
        for axis, default in enumerate(lead):
            if names[axis] is None:
                names[axis] = default
    return tuple(n if n is not None else f"axis {i}" for i, n in enumerate(names))


# ------------------------------------------------------------------------------------------
# Shape arithmetic
# ------------------------------------------------------------------------------------------
def make_shape(sizes, roles=None):
    """A shape from symbolic sizes (and roles), or None when the count is unknown."""
    from attnlint.analysis.values import Axis

    if sizes is None:
        return None
    roles = roles or [None] * len(sizes)
    return tuple(Axis(size, role, folded_heads=folded_heads(size)) for size, role in zip(sizes, roles))


def folded_heads(size) -> Optional["Sym"]:
    """`bsz * self.num_heads`: a product of sizes one of which is named as the head count (and
    another is not) holds heads folded into another axis; that count, else None."""
    from attnlint.analysis.symbolic import Sym
    from attnlint.analysis.values import HEADS

    if size is None or len(size.factors) < 2 or any(e != 1 for _, e in size.factors):
        return None
    heads = [atom for atom, _ in size.factors if role_of_dim_name(atom.name) == HEADS]
    if len(heads) != 1:
        return None
    return Sym.atom(heads[0].key, heads[0].name)


def broadcast(a, b):
    """The shape of `a + b` (NumPy broadcasting), axis by axis; None when a rank is unknown."""
    from attnlint.analysis.symbolic import ONE
    from attnlint.analysis.values import Axis

    if a is None or b is None:
        return None
    if len(a) < len(b):
        a, b = b, a
    b = (Axis(ONE),) * (len(a) - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        if x.size == y.size:
            out.append(
                Axis(x.size, x.role if x.role == y.role or y.role is None else x.role if y.size == ONE else None)
            )
        elif x.size == ONE:
            out.append(y)
        elif y.size == ONE:
            out.append(x)
        else:
            out.append(Axis(None, x.role if x.role == y.role else None))
    return tuple(out)


def broadcast_onto(base, other):
    """The shape of `base * other` where only what `other` certainly adds is taken from it: its
    leading axes beyond `base`'s rank, and its axes against a size-1 axis of `base`. Every other
    axis stays `base`'s (two names for one size stay the first's, unlike broadcast)."""
    from attnlint.analysis.symbolic import ONE

    extra = tuple(other[: len(other) - len(base)]) if len(other) > len(base) else ()
    aligned = other[len(other) - len(base) :] if len(other) >= len(base) else (None,) * (len(base) - len(other)) + tuple(other)
    out = [o if o is not None and b.size == ONE and o.size != ONE and o.size is not None else b for b, o in zip(base, aligned)]
    return extra + tuple(out)


def permuted(shape, order):
    if shape is None or len(order) != len(shape):
        return None
    return tuple(shape[i] for i in order)


def swapped(shape, a: int, b: int):
    if shape is None:
        return None
    rank = len(shape)
    a, b = a % rank if -rank <= a < rank else None, b % rank if -rank <= b < rank else None
    if a is None or b is None:
        return None
    items = list(shape)
    items[a], items[b] = items[b], items[a]
    return tuple(items)


def _leading_quotient(written, inferred) -> bool:
    """`x.view(-1, n, d)` whose `-1` comes out as a quotient (`16384 * B / channels`): a leading
    `-1` takes whatever the other sizes leave, and that it divides evenly rests on sizes the code
    never related (`channels` is 64 there). Which axes it regroups is not shown."""
    first = inferred[0] if inferred else None
    return (
        bool(written)
        and written[0] is not None
        and written[0].int_value == -1
        and first is not None
        and (first.coeff.denominator != 1 or any(e < 0 for _, e in first.factors))
    )


def infer_view(input_dims, target):
    """The target sizes of a view/reshape with a `-1` solved, when the input's sizes are known."""
    from attnlint.analysis.symbolic import Sym, product

    holes = [i for i, t in enumerate(target) if t is not None and t == Sym.const(-1)]
    if len(holes) > 1:
        return None
    if not holes:
        return tuple(target)
    total = product(input_dims) if input_dims is not None else None
    known = product(t for i, t in enumerate(target) if i != holes[0])
    out = list(target)
    out[holes[0]] = (total / known) if total is not None and known is not None else None
    return tuple(out)


def _solve_one_unknown(input_dims, target, where: int = 0):
    """A view runs only when both sides hold as many elements: one unknown input size is the
    target's product over the known ones (`(?, h, n, d) -> (b, n, h * d)`: ? = b), when that is
    a plain product of sizes (no quotient left, which would rest on a divisibility not shown)."""
    from attnlint.analysis.symbolic import Sym, product

    if input_dims is None or sum(d is None for d in input_dims) != 1:
        return input_dims
    holes = [t for t in target if t is not None and t == Sym.const(-1)]
    if len(holes) == 1 and all(t is not None for t in target):
        # `(b, h, ?, d) -> (b, -1, h * d)`: whatever the unknown size is, the `-1` takes it
        # (times what the known sizes leave over): a size of its own, named for this view.
        known_in = product(d for d in input_dims if d is not None)
        known_out = product(t for t in target if not (t == Sym.const(-1)))
        left = known_in / known_out
        if left.coeff != int(left.coeff) or left.coeff < 1 or any(e <= 0 for _, e in left.factors):
            return input_dims
        unknown = Sym.atom(f"view-axis:{where}", "n")
        return tuple(unknown if d is None else d for d in input_dims)
    if any(t is None or t == Sym.const(-1) for t in target):
        return input_dims
    known = product(d for d in input_dims if d is not None)
    solved = product(target) / known
    if solved.coeff != int(solved.coeff) or solved.coeff < 1 or any(e <= 0 for _, e in solved.factors):
        return input_dims
    return tuple(solved if d is None else d for d in input_dims)


def regroupings(input_dims, target_dims):
    """Runs of axes between the points where the running products of both shapes meet.

    A split (`(b, n, h*d) -> (b, n, h, d)`) or a merge keeps every boundary of one side among
    the other's; `(b, n, h*d) -> (b, h, n, d)` meets only at `b` and at the end, with several
    axes on both sides in between. None when a product is unknown.
    """
    from attnlint.analysis.symbolic import ONE

    if input_dims is None or target_dims is None or any(d is None for d in input_dims + target_dims):
        return None
    runs = []
    i = t = 0
    start_i = start_t = 0
    pi = pt = ONE
    while i < len(input_dims) or t < len(target_dims):
        if pi == pt and (i, t) != (start_i, start_t):
            runs.append(((start_i, i), (start_t, t)))
            start_i, start_t = i, t
            pi = pt = ONE
            continue
        if pi == pt:
            if i < len(input_dims):
                pi = pi * input_dims[i]
                i += 1
            if t < len(target_dims):
                pt = pt * target_dims[t]
                t += 1
            continue
        # Advance the side whose running product is a strict divisor of the other's; with no
        # order on symbols, advance the side with fewer atoms (exponent sum) first.
        if t < len(target_dims) and (i >= len(input_dims) or _weight(pt) < _weight(pi)):
            pt = pt * target_dims[t]
            t += 1
        elif i < len(input_dims):
            pi = pi * input_dims[i]
            i += 1
        else:
            return None
    if pi != pt:
        return None
    if (i, t) != (start_i, start_t):
        runs.append(((start_i, i), (start_t, t)))
    return tuple(runs)


def _weight(sym) -> float:
    import math

    return sum(float(e) for _, e in sym.factors) + (math.log(abs(float(sym.coeff)) + 1e-9) / 100.0)


# ------------------------------------------------------------------------------------------
# Shape operations: attributes, subscripts, methods and functions that move axes
# ------------------------------------------------------------------------------------------
from attnlint.analysis import handlers  # noqa: E402
from attnlint.analysis.handlers import Call  # noqa: E402
from attnlint.analysis.symbolic import ONE  # noqa: E402


def _flow():
    from attnlint.analysis import flow

    return flow


def transposed_last_two(value, node):
    """`k.transpose(-2, -1)`, `k.mT`: the feature axis moves to -2 (Kᵀ)."""
    from attnlint.analysis import masks

    return value.with_(
        feature_transposed=value.feature_last is not False and not value.feature_transposed,
        base=value,
        node=node,
        scores=None,
        softmax=None,
        mask=masks.transposed(value.mask),
        shape=swapped(value.shape, -2, -1) if value.shape is not None and len(value.shape) >= 2 else None,
        last_size=None,
        pairwise=False,
    )


def attribute(ev, node: cst.Attribute, receiver, attr: str):
    from attnlint.analysis.values import Value

    flow = _flow()
    if attr == "T":
        site = flow.DotTSite(node=node, receiver=receiver)
        ev.dot_t_by_node[id(node)] = site
        ev.facts.dot_t_sites.append(site)
        result = transposed_last_two(receiver, node)
        if receiver.shape is not None:
            result = result.with_(shape=tuple(reversed(receiver.shape)))
        return result
    if attr == "mT":
        return transposed_last_two(receiver, node)
    if attr == "shape":
        return Value(kind="shape", shape_of=receiver, node=node, shape_owner=flow.owner_name(node.value))
    if attr == "ndim":
        return Value(kind="scalar", int_value=receiver.rank, node=node, sym=_const(receiver.rank))
    if attr in ("data", "real"):
        return receiver
    if attr == "dtype" and _floating(receiver):
        return Value(kind="unknown", node=node, names_dtype="float")
    if attr == "weight" and receiver.kind == "module":
        return Value(kind="tensor", rank=2, is_parameter=True, node=node)
    if attr in ("in_features", "out_features", "embed_dim", "num_heads", "head_dim") and receiver.kind == "module":
        return Value(kind="scalar", node=node, sym=receiver_module_size(receiver, attr))
    return Value(kind="unknown", node=node, sym=_attribute_atom(ev, node))


def _lone_atom(sym):
    """The atom a size is, when it is one atom to the first power."""
    if sym is None or sym.coeff != 1 or len(sym.factors) != 1 or sym.factors[0][1] != 1:
        return None
    return sym.factors[0][0]


def _attribute_atom(ev, node: cst.Attribute):
    """`config.hidden_size`, `args.n_heads`: a number named by its expression in this scope."""
    from attnlint.analysis.symbolic import Sym

    from attnlint.analysis.names import dotted

    text = dotted(node)  # not LibCST's codegen: one per link of a chain adds up to n² work
    if text is None:
        return None
    key = f"{ev.scope}:{text}"
    root = node
    while isinstance(root, cst.Attribute):
        root = root.value
    holder = ev.env.get(root.value) if isinstance(root, cst.Name) and root.value != "self" else None
    atom = _lone_atom(holder.sym) if holder is not None else None
    if atom is not None and atom.key.endswith(":" + root.value):
        # `config.n_embd` where `config` is the caller's `config` handed down (`Head(config, ...)`
        # inside `Block`): the same number wherever the object is read, named by the object's
        # own atom (the caller's when a caller passed it, this scope's otherwise).
        key = atom.key + text[len(root.value):]
    sym = Sym.atom(key, text)
    ev.read_attributes.setdefault(text, sym)
    return sym


def receiver_module_size(module, attr: str):
    sizes = module.module_sizes
    index = {"in_features": 0, "out_features": 1, "embed_dim": 0, "num_heads": 1}.get(attr)
    if index is None or index >= len(sizes):
        return None
    return sizes[index]


def _const(value):
    from attnlint.analysis.symbolic import Sym

    return None if value is None else Sym.const(value)


def _sliced_axes(node: cst.Subscript, rank: Optional[int]) -> Optional[range]:
    """The axes `shape[lower:upper]` picks of a tensor of `rank`, when the bounds are written as
    integers (or left out)."""
    if rank is None or len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Slice):
        return None
    part = node.slice[0].slice
    bounds = []
    for bound in (part.lower, part.upper):
        if bound is None:
            bounds.append(None)
            continue
        from attnlint.analysis.masks import number

        value = number(bound)
        if value is None or value != int(value):
            return None
        bounds.append(int(value))
    if part.step is not None:
        return None
    return range(rank)[slice(bounds[0], bounds[1])]


def subscript(ev, node: cst.Subscript, base):
    from dataclasses import replace

    from attnlint.analysis.symbolic import Sym
    from attnlint.analysis.values import QKV, UNKNOWN, Value

    if base.kind == "shape":
        # `x.shape[-1]`, `x.size()[1]`
        index = int_index(node)
        tensor = base.shape_of
        if index is not None and tensor is not None:
            size = ev.read_size(
                _owner_value(ev, base), index, node.value.value if isinstance(node.value, cst.Attribute) else None
            )
            return Value(kind="scalar", node=node, sym=size, int_value=size.int_value if size else None)
        picked = _sliced_axes(node, tensor.rank if tensor is not None else None)
        if picked is not None:
            # `x.shape[:-1]`, `x.size()[:2]`: the sizes of those axes, as a tuple of them
            # (`(*input_shape, -1, head_dim)` spreads them in place).
            owner = node.value.value if isinstance(node.value, cst.Attribute) else None
            sizes = [ev.read_size(_owner_value(ev, base), i, owner) for i in picked]
            return Value(
                kind="tuple",
                node=node,
                elements=tuple(
                    Value(kind="scalar", node=node, sym=size, int_value=size.int_value if size else None)
                    for size in sizes
                ),
            )
        return Value(kind="scalar", node=node)
    if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
        key = node.slice[0].slice.value
        if isinstance(key, (cst.SimpleString, cst.ConcatenatedString)):
            return Value(kind="unknown", node=node)  # `config["hidden_size"]`: a lookup, not a tensor
    if base.kind == "tuple":
        index = int_index(node)
        if index is not None and -len(base.elements) <= index < len(base.elements):
            return base.elements[index]
        if base.each is not None and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
            # `self.heads[i]` of `nn.ModuleList([Head(d) for _ in range(n)])`: any element is one.
            return base.each
        if base.padded and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Slice):
            # `full[:-1]`, `ids[1:]` of a padded list (inputs and targets shifted by one): the
            # slice still holds the padding.
            return Value(kind="tuple", node=node, padding=base.padding)
        return UNKNOWN
    removed = added = 0
    rank_known = True
    new_shape = []
    shape_known = base.shape is not None
    axis = 0
    # Tensor indices that pick whole rows of the leading axis by integer position (`Y[ix]` with
    # `ix = torch.randint(...)`, `torch.randperm(n)[:b]`): a minibatch of rows, see below.
    row_gathers = 0
    for position, element in enumerate(node.slice):
        inner = element.slice
        if isinstance(inner, cst.Slice):
            for part in (inner.lower, inner.upper, inner.step):
                if part is not None:
                    ev.eval(part)
            if shape_known and axis < len(base.shape):
                whole = inner.lower is None and inner.upper is None and inner.step is None
                new_shape.append(base.shape[axis] if whole else replace(base.shape[axis], size=None))
            axis += 1
            continue
        value = inner.value
        if isinstance(value, cst.Name) and value.value == "None":
            added += 1
            new_shape.append(_axis_of(Sym.const(1)))
        elif isinstance(value, cst.Ellipsis):
            shape_known = False
            continue
        else:
            index_value = ev.eval(value)
            if index_value.kind == "scalar" or isinstance(value, cst.Integer):
                removed += 1
                axis += 1
            else:
                rank_known = False
                if position == 0 and integer_index(index_value):
                    row_gathers += 1
    rank = base.rank - removed + added if (base.rank is not None and rank_known) else None
    shape = None
    if shape_known and rank_known and base.shape is not None:
        shape = tuple(new_shape) + tuple(base.shape[axis:])
        if len(shape) != rank:
            shape = None
    whole_rows = row_gathers == 1 and all(
        isinstance(e.slice, cst.Slice) and e.slice.lower is None and e.slice.upper is None and e.slice.step is None
        for e in node.slice[1:]
    )
    if not rank_known and base.padded and not whole_rows:
        # `targets[keep]`: a selection by a tensor (a boolean one drops what it tests, the
        # padding among it); the padding may well be gone. Whole rows picked by integer
        # position (`Y[ix]`, `Y[perm[:b], :]`) are rows of the padded batch, padding and all.
        base = base.with_(padding=None, param=None, lengths=False)
    mask = base.mask
    if mask is not None and cuts_key_axis(node.slice, base.rank, removed, rank_known):
        mask = replace(mask, sliced=True)
    if mask is not None and _per_key_layout(node.slice):
        # `mask[:, None, None, :]`: (batch, 1, 1, keys).
        mask = per_key_padding(mask, (None,) * len(node.slice))
    role = None if base.role == QKV else base.role  # `qkv[0]`: the target's name says which
    return base.with_(
        rank=rank, node=node, mask=mask, feature_transposed=False, role=role, softmax=None, shape=shape, sym=None
    )


def integer_index(value) -> bool:
    """An index tensor shown to hold integer positions (`torch.randint(...)`, `torch.randperm(n)`,
    a constructor given an integer dtype), not a boolean selection."""
    ctor = value.constructor
    return value.kind == "tensor" and ctor is not None and ctor.dtype == "int" and value.mask is None


def _owner_value(ev, shape_value):
    return shape_value.shape_of


def _axis_of(size, role=None):
    from attnlint.analysis.values import Axis

    return Axis(size, role)


def int_index(node: cst.Subscript) -> Optional[int]:
    if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
        return _flow().int_literal(node.slice[0].slice.value)
    return None


def cuts_key_axis(elements, rank: Optional[int], removed: int, rank_known: bool) -> bool:
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


# Tensor methods that keep the value as it is (shape, role and every attention fact).
IDENTITY_METHODS = (
    "contiguous",
    "clone",
    "detach",
    "cpu",
    "cuda",
    "requires_grad_",
    "retain_grad",
    "as_strided",
    "type_as",
    # Random initialisers, in place: the same tensor (`torch.FloatTensor(d).uniform_(-0.1, 0.1)`).
    "uniform_",
    "normal_",
)
DTYPE_METHODS = {
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


@handlers.method(*IDENTITY_METHODS)
def _identity_method(ev, call: Call):
    receiver = call.receiver
    ev.args(call.node)
    if call.name == "type_as" and receiver.constructor is not None:
        # `torch.zeros(n, n).type_as(scores)`: in the scores' dtype, which may be half.
        receiver = receiver.with_(constructor=replace(receiver.constructor, half=None))
    if call.name == "type_as" and receiver.mask is not None and call.args and _is_activation(ev, call.args[0].value):
        # `mask.type_as(q)`: a mask cast to the queries' dtype, floating point (as `.to(q.dtype)`).
        receiver = receiver.with_(mask=replace(receiver.mask, dtype="float"))
    return receiver.with_(node=call.node) if receiver.kind != "unknown" else receiver


@handlers.method(*DTYPE_METHODS, "to", "type")
def _dtype_method(ev, call: Call):
    """`.float()`, `.bool()`, `.to(torch.bool)`: the same tensor; a mask changes its dtype."""
    from dataclasses import replace

    receiver, args, method = call.receiver, call.args, call.name
    dtype = DTYPE_METHODS.get(method)
    if method in ("to", "type") and args:
        dtype = _flow().dtype_of(args[0].value, ev.aliases) or _activation_dtype(ev, args[0])
        if dtype is None and isinstance(args[0].value, (cst.Name, cst.Attribute)) and (
            args[0].keyword is None or args[0].keyword.value == "dtype"
        ):
            # A dtype handed in (`.to(dtype)`), or the dtype of hidden states (`.to(x.dtype)`).
            dtype = ev.eval(args[0].value).names_dtype
    ev.args(call.node)
    mask = receiver.mask
    if mask is not None and dtype is not None:
        mask = replace(mask, dtype=dtype)
    if receiver.kind == "unknown":
        # A mask of unknown kind (what a caller's loader yields) is still cast: `.bool()` makes
        # its values True/False whatever they were.
        return receiver if mask is receiver.mask else receiver.with_(mask=mask)
    constructor = receiver.constructor
    if constructor is not None and (method not in ("to", "type") or any(_casts(a, ev.aliases) for a in args)):
        # A cast changes what precision a new tensor is in (`.to(q.dtype)`: unknown).
        half = {"half": True, "bfloat16": True, "float": False, "double": False}.get(method)
        constructor = replace(constructor, dtype=dtype or constructor.dtype, half=half)
    return receiver.with_(node=call.node, mask=mask, constructor=constructor)


def _activation_dtype(ev, arg: cst.Arg) -> Optional[str]:
    """`.to(q.dtype)`, `.to(dtype=scores.dtype)`: the dtype of queries, keys, values or scores,
    activations of the attention, which are floating point."""
    value = arg.value
    if arg.keyword is not None and arg.keyword.value != "dtype":
        return None
    if not (isinstance(value, cst.Attribute) and value.attr.value == "dtype"):
        return None
    return "float" if _is_activation(ev, value.value) else None


def _floating(value) -> bool:
    """The dtype a mask is cast to with `.to(x.dtype)`: that of the activations it is applied
    to (hidden states, queries, scores), floating point; not that of token ids, lengths or
    another mask (a cast to an integer dtype would make SDPA raise, no silent bug)."""
    if value.kind != "tensor" or value.token_ids or value.lengths or value.mask is not None:
        return False
    return not value.padded


def _is_activation(ev, node: cst.BaseExpression) -> bool:
    """Queries, keys, values or scores: the attention's activations, floating point."""
    from attnlint.analysis.values import KEY, QKV, QUERY, SCORES, VALUE

    source = ev.eval(node)
    return source.kind == "tensor" and (source.scores is not None or source.role in (QUERY, KEY, VALUE, QKV, SCORES))


def _casts(arg: cst.Arg, aliases) -> bool:
    """An argument of `.to(...)` that sets the dtype: `torch.float16`, `q.dtype`, `dtype=...`
    (not a device)."""
    if arg.keyword is not None:
        return arg.keyword.value == "dtype"
    value = arg.value
    return _flow().dtype_of(value, aliases) is not None or (
        isinstance(value, cst.Attribute) and value.attr.value == "dtype"
    )


def _moved(result, source):
    """Axes moved, data kept: a padded batch stays padded (`tokens.transpose(0, 1)` into a
    time-major nn.Transformer, `targets.permute(1, 0)`)."""
    if source.padded and result.kind == "tensor" and not result.padded:
        return result.with_(padding=source.padding)
    return result


@handlers.method("sort", "argsort", "topk", "msort")
def _ordering_method(ev, call: Call):
    ev.args(call.node)
    return _ordering(call.node, call.name, call.receiver)


@handlers.function("torch.sort", "torch.argsort", "torch.topk")
def _ordering_function(ev, call: Call):
    values = ev.args(call.node)
    return _ordering(call.node, call.name.rsplit(".", 1)[-1], values[0]) if values else None


def _ordering(node: cst.Call, name: str, receiver):
    """`lengths.sort(descending=True)`, `argsort`, `topk`: the indices are integer positions (a
    batch indexed by them, `captions[sort_ind]`, is its rows reordered: still padded); the
    sorted values are values of the receiver's kind, in another order."""
    from attnlint.analysis.values import Constructor, Value

    indices = Value(kind="tensor", rank=receiver.rank, node=node, constructor=Constructor("torch." + name, "int", ()))
    if name == "argsort":
        return indices
    values = Value(kind="tensor", rank=receiver.rank, node=node)
    return Value(kind="tuple", elements=(values, indices), node=node)


@handlers.method("transpose", "swapaxes", "swapdims")
def _transpose_method(ev, call: Call):
    if len(call.args) < 2:
        return None
    if len(call.args) > 2 and call.name == "transpose":
        # numpy's `a.transpose(1, 3, 0, 2, 4)`: a full permutation, not torch's swap of two axes.
        return _moved(permute(ev, call.receiver, [a.value for a in call.args], call.node), call.receiver)
    return _moved(transpose(ev, call.receiver, call.args[0].value, call.args[1].value, call.node), call.receiver)


@handlers.method("t")
def _t_method(ev, call: Call):
    """`energies.t()` of a 2-D tensor: its two axes swapped (what `.t()` of any other rank does
    is left to the caller)."""
    receiver = call.receiver
    if call.args or receiver is None or receiver.kind != "tensor" or receiver.rank not in (None, 2):
        return None
    if receiver.rank is None:
        from attnlint.analysis.values import Value

        # `.t()` accepts at most two axes: a known operation on a tensor of unknown layout (not
        # code the weights escape into), whose result the analysis does not follow.
        return Value(kind="tensor", node=call.node)
    return _moved(transpose(ev, receiver, cst.Integer("0"), cst.Integer("1"), call.node), receiver)


@handlers.function("torch.transpose", "torch.swapaxes")
def _transpose_function(ev, call: Call):
    args = call.args
    if len(args) < 3:
        return None
    value = ev.eval(args[0].value)
    return _moved(transpose(ev, value, args[1].value, args[2].value, call.node), value)


def transpose(ev, value, a: cst.BaseExpression, b: cst.BaseExpression, node):
    from attnlint.analysis import masks
    from attnlint.analysis.values import Value

    flow = _flow()
    dims = {flow.int_literal(a), flow.int_literal(b)}
    if None in dims:
        ev.eval(a)
        ev.eval(b)
        return Value(
            kind="tensor",
            rank=value.rank,
            role=value.role,
            node=node,
            scaled=value.scaled,
            scale=value.scale,
            scale_steps=value.scale_steps,
        )
    rank = value.rank
    last_two = {-1, -2}
    ordered = sorted(d for d in dims if d is not None)
    if rank is None and len(ordered) == 2 and ordered[0] >= 0 and ordered[1] == ordered[0] + 1:
        # `k.transpose(2, 3)` with k's rank unknown: the last two axes exactly when k has
        # rank 4; the product it feeds decides (see scores.matmul).
        return Value(
            kind="tensor",
            role=value.role,
            node=node,
            scaled=value.scaled,
            scale=value.scale, scale_steps=value.scale_steps,
            base=value,
            feature_last=value.feature_last,
            pending_swap=ordered[1],
            mask=masks.transposed(value.mask),
        )
    first, second = flow.int_literal(a), flow.int_literal(b)
    moved = swapped(value.shape, first, second) if len(dims) == 2 else value.shape
    if rank is not None:
        normalized = {d + rank if d < 0 else d for d in dims}
        swaps_last_two = normalized == {rank - 1, rank - 2}
        touches_last = rank - 1 in normalized
    else:
        swaps_last_two = dims == last_two
        touches_last = -1 in dims or (not swaps_last_two and any(d is not None and d >= 0 for d in dims) and None)
    if swaps_last_two:
        return transposed_last_two(value, node)
    if touches_last is False:
        # Moving batch/head/token axes keeps the feature axis last: `k.transpose(1, 2)` on
        # (b, n, h, d) gives (b, h, n, d).
        keeps_rows = -2 not in dims and (rank is None or rank - 2 not in {d + rank if d < 0 else d for d in dims})
        return value.with_(
            node=node,
            feature_transposed=False,
            base=None,
            softmax=None,
            shape=moved,
            pairwise=value.pairwise and keeps_rows,
        )
    return Value(
        kind="tensor",
        rank=rank,
        role=value.role,
        node=node,
        scaled=value.scaled,
        scale=value.scale, scale_steps=value.scale_steps,
        shape=moved,
        mask=masks.transposed(value.mask),
        weights_of=value.weights_of,
    )


@handlers.method("permute")
def _permute_method(ev, call: Call):
    return _moved(permute(ev, call.receiver, [a.value for a in call.args], call.node), call.receiver)


@handlers.function("torch.permute")
def _permute_function(ev, call: Call):
    if len(call.args) < 2:
        return None
    value = ev.eval(call.args[0].value)
    return _moved(permute(ev, value, [a.value for a in call.args[1:]], call.node), value)


def permute(ev, value, dim_nodes: List[cst.BaseExpression], node):
    from attnlint.analysis import masks
    from attnlint.analysis.values import Value

    flow = _flow()
    if len(dim_nodes) == 1 and isinstance(dim_nodes[0], (cst.Tuple, cst.List)):
        dim_nodes = [e.value for e in dim_nodes[0].elements]
    dims = [flow.int_literal(d) for d in dim_nodes]
    rank = len(dims)
    if None in dims or (value.rank is not None and value.rank != rank):
        return Value(kind="tensor", rank=rank if None not in dims else None, role=value.role, node=node)
    dims = [d + rank if d < 0 else d for d in dims]
    shape = permuted(value.shape, dims)
    last = rank - 1
    if value.feature_transposed and value.base is not None and dims[-2] == last and dims[-1] == last - 1:
        # Kᵀ (features at -2, `self.k_conv(x)` or `k.transpose(1, 2)`) with its last two axes
        # swapped back: the tokens-first layout again.
        return value.base.with_(rank=rank, shape=shape, node=node)
    if value.feature_last is not False and dims[-2] == last and dims[-1] != last:
        # The feature axis moved to -2, a token axis to -1: Kᵀ in one step.
        return value.with_(
            rank=rank,
            last_size=None,
            pairwise=False,
            feature_transposed=True,
            base=value.with_(rank=rank, shape=permuted(value.shape, dims[:-2] + [dims[-1], dims[-2]])),
            node=node,
            scores=None,
            softmax=None,
            mask=masks.transposed(value.mask),
            shape=shape,
        )
    if dims[-1] == last:
        return value.with_(
            rank=rank,
            node=node,
            feature_transposed=False,
            base=None,
            softmax=None,
            shape=shape,
            pairwise=value.pairwise and dims[-2] == last - 1,
        )
    return Value(
        kind="tensor", rank=rank, role=value.role, node=node, scaled=value.scaled, scale=value.scale, shape=shape
    )


def size_args(ev, args, values):
    """The symbolic sizes passed to view/reshape/expand/a constructor, or None when the count
    is unknown (`*shape`, a shape variable)."""
    if len(args) == 1 and values and values[0].kind == "tuple" and not values[0].each:
        elements = values[0].elements
        if not elements and values[0].node is not None and not isinstance(values[0].node, (cst.Tuple, cst.List)):
            return None
        written = values[0].node
        if (
            isinstance(written, (cst.Tuple, cst.List))
            and len(elements) != len(written.elements)
            # A starred tuple of known length spreads in place (`(*x.shape[:-1], -1, d)` of a
            # tensor of known rank); one of unknown length leaves no elements.
            and not (elements and any(isinstance(e, cst.StarredElement) for e in written.elements))
        ):
            return None
        return tuple(
            e.sym if e.kind in ("scalar", "unknown", "tensor") and e.rank in (None, 0) else None for e in elements
        )
    if len(args) == 1 and values and values[0].kind == "shape":
        tensor = values[0].shape_of
        if tensor is not None and tensor.shape is not None:
            return tuple(a.size for a in tensor.shape)
        if tensor is not None and tensor.rank is not None:
            return (None,) * tensor.rank
        return None
    if any(a.star for a in args):
        return None
    if len(args) == 1 and values and values[0].kind not in ("scalar",) and values[0].sym is None:
        return None
    return tuple(v.sym if v.rank in (None, 0) else None for v in values) if values else None


def _roles_named(positional, sizes):
    """`w.view(bs, c, 1, 1)`: an axis given by a name that says what it holds (`bs`,
    `batch_size`, `seq_len`) holds that, whatever size the name stands for; None per axis when
    the argument is no such name (or the arguments are not one per axis)."""
    if sizes is None or len(positional) != len(sizes) or any(a.star for a in positional):
        return None
    return [role_of_dim_name(a.value.value) if isinstance(a.value, cst.Name) else None for a in positional]


@handlers.method("view", "reshape", "expand", "repeat", "view_as", "reshape_as", "expand_as", "tile")
def _view_method(ev, call: Call):
    from attnlint.analysis import view_order
    from attnlint.analysis.symbolic import Sym
    from attnlint.analysis.values import Value, ViewSite

    receiver, args, method, node = call.receiver, call.args, call.name, call.node
    positional = [a for a in args if a.keyword is None]
    if method == "view" and len(positional) == 1 and _flow().dtype_of(positional[0].value, ev.aliases):
        ev.args(node)
        return Value(kind="tensor", rank=receiver.rank, node=node)  # `x.view(torch.int8)`: a dtype view
    values = ev.args(node)
    sizes = None
    if method in ("view_as", "reshape_as", "expand_as"):
        other = values[0] if values else None
        rank = other.rank if other is not None else None
        sizes = other.dims() if other is not None else None
    else:
        sizes = size_args(ev, positional, values[: len(positional)])
        rank = len(sizes) if sizes is not None else None
    if method in ("repeat", "tile"):
        sizes = _repeated(receiver, sizes)  # the arguments are multipliers, not sizes
        if rank is not None and receiver.rank is not None:
            rank = max(rank, receiver.rank)
    elif method == "expand" and rank is not None and receiver.rank is not None:
        rank = max(rank, receiver.rank)
        sizes = _expanded(receiver, sizes)
    if method in ("view", "reshape") and sizes is not None:
        input_dims = receiver.dims()
        if input_dims is not None:
            _learn_from_view(ev, tuple(ev.resolve(d) for d in input_dims), tuple(ev.resolve(d) for d in sizes))
            input_dims = tuple(ev.resolve(d) for d in input_dims)
        written = tuple(ev.resolve(d) for d in sizes)
        input_dims = _solve_one_unknown(input_dims, written, id(node))
        sizes = infer_view(input_dims, written)
        if (
            input_dims is not None
            and sizes is not None
            and all(d is not None for d in input_dims + sizes)
            and not _leading_quotient(written, sizes)
        ):
            # Sizes the code showed equal (`C` of x going into `nn.Linear(n_embd, ...)`) compare
            # equal; the result keeps the sizes as the code names them.
            compared_in = tuple(ev.resolve(d) for d in input_dims)
            compared_out = tuple(ev.resolve(d) for d in sizes)
            runs = regroupings(compared_in, compared_out) if None not in compared_in + compared_out else None
            if runs is not None and not _renamed_sizes(compared_in, compared_out):
                ev.facts.view_sites.append(
                    ViewSite(
                        call=node,
                        input_dims=compared_in,
                        target_dims=compared_out,
                        regrouped=runs,
                        input_node=call.receiver_node,
                        rereads_on_purpose=view_order.rereads_on_purpose(ev, receiver),
                    )
                )
    shape = make_shape(sizes, _roles_named(positional, sizes)) if sizes is not None and rank == len(sizes) else None
    if method in ("view", "reshape") and _swaps_last_two_sizes(ev, receiver, sizes) and receiver.scores is None:
        # `k.view(B, D, T)` of a (B, T, D) key: meant as kᵀ (ATN106 reports the view); its
        # product with q is read as the Q·Kᵀ the code means.
        return transposed_last_two(receiver, node).with_(rank=len(sizes))
    last_size = None
    if sizes is None and method in ("view", "reshape"):
        # `x.view(*x.shape[:-1], heads, head_dim)`, `x.view(x.size()[:-1] + (heads, head_dim))`:
        # the rank is unknown, the last axis is not.
        tail = _size_tail(positional, values[: len(positional)])
        if tail and tail[-1] is not None and tail[-1] != Sym.const(-1):
            last_size = tail[-1]
    mask = receiver.mask
    if mask is not None and mask.uniform_rows and method in ("view", "reshape"):
        # Rows of a literal mask stay rows while the last axis keeps its length.
        before = receiver.size_of(-1) if receiver.shape is not None else None
        after = sizes[-1] if sizes else None
        if before is None or after is None or ev.resolve(before) != ev.resolve(after):
            if not (before is None and after is not None and not after.is_const):
                mask = replace(mask, uniform_rows=frozenset())
    if method in ("view", "reshape"):
        mask = per_key_padding(mask, sizes)
    if receiver.scores is not None and method in ("view", "reshape"):
        # Scores flattened to `(batch * queries, keys)` are still scores over the same keys.
        from attnlint.analysis.scores import through_view

        kept = through_view(ev, receiver, shape)
        if kept is not None:
            return kept.with_(node=node)
    # A reshape keeps the last (feature) axis only when it is not merged or split.
    return Value(
        kind="tensor",
        rank=rank,
        shape=shape,
        role=receiver.role,
        scaled=receiver.scaled,
        scale=receiver.scale, scale_steps=receiver.scale_steps,
        feature_last=receiver.feature_last if method in ("expand", "repeat", "view", "reshape") else None,
        mask=mask,
        node=node,
        reread_memory=method in ("view", "reshape") and view_order.rereads_on_purpose(ev, receiver),
        last_size=last_size,
        weights_of=receiver.weights_of,  # the same weights, laid out anew
        **receiver.data_facts(),
    )


def _swaps_last_two_sizes(ev, receiver, sizes) -> bool:
    """The target is the input's shape with its last two sizes swapped, and they differ."""
    dims = receiver.dims()
    if dims is None or sizes is None or len(dims) != len(sizes) or len(dims) < 2 or None in dims + tuple(sizes):
        return False
    before = tuple(ev.resolve(d) for d in dims)
    after = tuple(ev.resolve(d) for d in sizes)
    if None in before + after:
        return False
    swapped_last = before[-1] == after[-2] and before[-2] == after[-1]
    return before[:-2] == after[:-2] and swapped_last and before[-1] != before[-2]


def _renamed_sizes(input_dims, target_dims) -> bool:
    """Each side names a quantity the other does not (`num_heads * bsz` from a caller,
    `self.num_heads` here): most likely one size under two names, which the products meet only
    by cancelling; where each element goes is unknown. (One side alone may add a name: a split
    of C into `n_head` and `C // n_head`.)"""
    before = {atom for dim in input_dims for atom in dim.atoms()}
    after = {atom for dim in target_dims for atom in dim.atoms()}
    return bool(before - after) and bool(after - before)


def _size_tail(args, values):
    """The sizes known to end a view target whose count is unknown: the arguments after the
    last starred one, or the known tail of a single tuple argument."""

    def size(value):
        return value.sym if value.kind in ("scalar", "unknown", "tensor") and value.rank in (None, 0) else None

    if len(args) == 1 and values and values[0].kind == "tuple":
        return tuple(size(v) for v in values[0].known_tail)
    starred = [i for i, a in enumerate(args) if a.star]
    if starred and len(values) == len(args):
        return tuple(size(v) for v in values[starred[-1] + 1 :])
    return ()


def _learn_from_view(ev, input_dims, target) -> None:
    """A view keeps the number of elements: when the two products differ by one size the code
    does not know (`(512, S, 3).view(8, 512, 3)`: S is 8; `(B, N, C).view(B, H, W, C)`: N is
    H * W), that size is learned, as `nn.Linear(dim, ...)` teaches its input's width."""
    from attnlint.analysis.symbolic import Sym, product

    if any(d is None for d in input_dims + target) or Sym.const(-1) in target:
        return
    total, written = product(input_dims), product(target)
    ratio = total / written if total is not None and written is not None else None
    if ratio is None or ratio == ONE:
        return
    for sign in (1, -1):
        single = [a for a, e in ratio.factors if e == sign]
        others_opposite = all(e * sign < 0 for a, e in ratio.factors if e != sign)
        if len(single) == 1 and others_opposite:
            atom = Sym.atom(single[0].key, single[0].name)
            value = atom / ratio if sign == 1 else atom * ratio
            if value is not None and value.coeff > 0 and value.coeff.denominator == 1:
                ev.learn_equal(atom, value)
            return


def _repeated(receiver, multipliers):
    """`x.repeat(n, 1, 1)`: each size times its multiplier (known only when x's sizes are)."""
    dims = receiver.dims()
    if multipliers is None or dims is None or len(dims) != len(multipliers):
        return None
    out = []
    for size, times in zip(dims, multipliers):
        out.append(size * times if size is not None and times is not None else None)
    return tuple(out)


def _expanded(receiver, sizes):
    """`x.expand(b, -1, -1)`: -1 keeps the input's size."""
    from attnlint.analysis.symbolic import Sym

    dims = receiver.dims()
    if sizes is None or dims is None or len(dims) != len(sizes):
        return None
    return tuple(d if s == Sym.const(-1) else s for s, d in zip(sizes, dims))


@handlers.function("torch.reshape")
def _reshape_function(ev, call: Call):
    if len(call.args) < 2:
        return None
    receiver = ev.eval(call.args[0].value)
    shifted = call.node.with_changes(args=call.node.args[1:])
    return _view_method(ev, Call(node=shifted, name="reshape", receiver=receiver, receiver_node=call.args[0].value))


@handlers.method("unsqueeze")
def _unsqueeze(ev, call: Call):
    from attnlint.analysis.symbolic import Sym

    receiver = call.receiver
    ev.args(call.node)
    rank = receiver.rank + 1 if receiver.rank is not None else None
    shape = None
    dim = _flow().int_literal(call.args[0].value) if call.args else None
    if receiver.shape is not None and dim is not None:
        position = dim if dim >= 0 else dim + len(receiver.shape) + 1
        if 0 <= position <= len(receiver.shape):
            items = list(receiver.shape)
            items.insert(position, _axis_of(Sym.const(1)))
            shape = tuple(items)
    return receiver.with_(
        rank=rank, node=call.node, feature_transposed=False, softmax=None, shape=shape, last_size=None
    )


def _repeated_along(ev, receiver, repeats_node, dim_node, node):
    """`x.repeat_interleave(n, dim=d)` (GQA's keys and values repeated per query head): each slice
    along `d` repeated `n` times. Every other axis, the role and the scale stay; the size along
    `d` is multiplied. Without a `dim` the tensor is flattened."""
    from attnlint.analysis.symbolic import Sym

    dim = _flow().int_literal(dim_node) if dim_node is not None else None
    if dim is None or receiver.rank is None or not -receiver.rank <= dim < receiver.rank:
        return None
    position = dim % receiver.rank
    shape = receiver.shape
    if shape is not None:
        repeats = ev.eval(repeats_node).sym if repeats_node is not None else None
        size = shape[position].size
        grown = size * repeats if size is not None and repeats is not None else None
        shape = shape[:position] + (replace(shape[position], size=grown),) + shape[position + 1 :]
    last = position == receiver.rank - 1
    return receiver.with_(
        node=node,
        shape=shape,
        softmax=None,
        feature_last=None if last else receiver.feature_last,
        last_size=None if last else receiver.last_size,
    )


@handlers.method("repeat_interleave")
def _repeat_interleave(ev, call: Call):
    ev.args(call.node)
    repeats = argument(call.node, 0, "repeats")
    dim = argument(call.node, 1, "dim")
    return _repeated_along(
        ev, call.receiver, repeats.value if repeats else None, dim.value if dim else None, call.node
    )


@handlers.function("torch.repeat_interleave")
def _repeat_interleave_function(ev, call: Call):
    values = ev.args(call.node)
    repeats = argument(call.node, 1, "repeats")
    dim = argument(call.node, 2, "dim")
    if not values:
        return None
    return _repeated_along(ev, values[0], repeats.value if repeats else None, dim.value if dim else None, call.node)


@handlers.method("squeeze")
def _squeeze(ev, call: Call):
    receiver, args = call.receiver, call.args
    ev.args(call.node)
    rank = receiver.rank - 1 if (receiver.rank is not None and args) else None
    shape = None
    dim = _flow().int_literal(args[0].value) if args else None
    if receiver.shape is not None and dim is not None and -len(receiver.shape) <= dim < len(receiver.shape):
        items = list(receiver.shape)
        del items[dim]
        shape = tuple(items)
    return receiver.with_(
        rank=rank, node=call.node, feature_transposed=False, softmax=None, shape=shape, last_size=None
    )


_REDUCTIONS = ("sum", "mean", "amax", "amin", "prod", "nansum", "nanmean")


def reduced(ev, call: Call, function_form: bool) -> Optional["Value"]:
    """`x.sum(2)`, `torch.sum(x, dim=2)`, `x.mean(-1, keepdim=True)`: the tensor without that
    axis (or with it of size 1), the other axes' sizes and roles kept (Luong's dot score,
    `torch.sum(hidden * encoder_outputs, dim=2)`, is `(src_len, batch)`). One literal `dim` and a
    literal or absent `keepdim` only; None (nothing evaluated) for any other form. What the call
    hands on is treated as before: a function's arguments escape, a method other than `sum` and
    `mean` lets its receiver escape (see flow.READING_METHODS)."""
    from attnlint.analysis.symbolic import Sym
    from attnlint.analysis.values import Value

    args = list(call.args)
    if function_form:
        if not args or args[0].keyword is not None or args[0].star:
            return None
        args = args[1:]
    if any(a.star for a in args):
        return None
    positional = [a for a in args if a.keyword is None]
    keywords = {a.keyword.value: a.value for a in args if a.keyword is not None}
    if len(positional) > 1 or set(keywords) - {"dim", "keepdim", "dtype"}:
        return None
    dim_node = positional[0].value if positional else keywords.get("dim")
    dim = _flow().int_literal(dim_node) if dim_node is not None else None
    keep = keywords.get("keepdim")
    if dim is None or (keep is not None and not (isinstance(keep, cst.Name) and keep.value in ("True", "False"))):
        return None
    values = ev.args(call.node)
    receiver = values[0] if function_form else call.receiver
    if function_form:
        _flow().escape(values)
    elif call.name not in _flow().READING_METHODS:
        _flow().escape([receiver] + values)
    rank = len(receiver.shape) if receiver is not None and receiver.kind == "tensor" and receiver.shape else 0
    if not rank or not -rank <= dim < rank:
        return Value(kind="unknown", node=call.node)
    items = list(receiver.shape)
    if keep is not None and keep.value == "True":
        items[dim] = _axis_of(Sym.const(1))
    else:
        del items[dim]
    return Value(kind="tensor", node=call.node, rank=len(items), shape=tuple(items))


@handlers.function(*("torch." + name for name in _REDUCTIONS))
def _reduction_function(ev, call: Call):
    return reduced(ev, call, function_form=True)


@handlers.method(*(name for name in _REDUCTIONS if name != "sum"))  # `sum`: see scores
def _reduction_method(ev, call: Call):
    return reduced(ev, call, function_form=False)


@handlers.method("flatten")
def _flatten(ev, call: Call):
    from attnlint.analysis.values import Value

    receiver = call.receiver
    ev.args(call.node)
    shape = _flattened(receiver.shape, call.node)
    return Value(
        kind="tensor",
        node=call.node,
        role=receiver.role,
        rank=len(shape) if shape is not None else None,
        shape=shape,
        **receiver.data_facts(),
    )


def _flattened(shape, node: cst.Call):
    """`x.flatten(2)` of (B, C, H, W): (B, C, H * W); the merged axis is unknown when one of its
    sizes is. None when the shape or the axes are not known."""
    from attnlint.analysis.symbolic import product

    if shape is None:
        return None
    flow = _flow()
    start_arg, end_arg = flow._arg(node, 0, "start_dim"), flow._arg(node, 1, "end_dim")
    start = flow.int_literal(start_arg.value) if start_arg is not None else 0
    end = flow.int_literal(end_arg.value) if end_arg is not None else -1
    rank = len(shape)
    if start is None or end is None or not (-rank <= start < rank and -rank <= end < rank):
        return None
    start, end = start % rank, end % rank
    if start > end:
        return None
    merged = _axis_of(product(a.size for a in shape[start : end + 1]))
    return tuple(shape[:start]) + (merged,) + tuple(shape[end + 1 :])


# nn.Conv1d/2d/3d outputs: modules.conv_output (out_channels on axis 1).


@handlers.function("torch.split", "torch.chunk", "torch.unbind", "torch.tensor_split")
def _split_function(ev, call: Call):
    """`torch.chunk(x, heads, dim=2)`: the method on its first argument."""
    args = call.args
    if not args or args[0].keyword is not None or args[0].star:
        return None
    method = call.name.rsplit(".", 1)[-1]
    receiver_node = args[0].value
    as_method = cst.Call(func=cst.Attribute(value=receiver_node, attr=cst.Name(method)), args=list(args[1:]))
    return _split(ev, Call(node=as_method, name=method, receiver=ev.eval(receiver_node), receiver_node=receiver_node))


@handlers.method("split", "chunk", "unbind", "tensor_split")
def _split(ev, call: Call):
    from attnlint.analysis.symbolic import Sym
    from attnlint.analysis.values import Value

    flow = _flow()
    receiver, args, method, node = call.receiver, call.args, call.name, call.node
    values = ev.args(node)
    count = _split_count(method, args)
    rank = receiver.rank
    dim_arg = flow._arg(node, 0 if method == "unbind" else 1, "dim")
    dim = flow.int_literal(dim_arg.value) if dim_arg is not None else 0
    if method == "unbind" and rank is not None:
        rank -= 1
    feature_last = receiver.feature_last if method != "unbind" else None
    if (
        method == "unbind"
        and dim is not None
        and (dim == -1 or (receiver.rank is not None and dim == receiver.rank - 1))
    ):
        # Unbinding the last axis removes the features: what is left is tokens.
        feature_last = False
    shape = None
    last_size = None
    if receiver.shape is None and receiver.last_size is not None and dim == -1 and method in ("chunk", "split"):
        if method == "chunk" and count:
            last_size = receiver.last_size / Sym.const(count)
        elif method == "split" and values and values[0].kind != "tuple" and values[0].sym is not None:
            last_size = values[0].sym
            ratio = receiver.last_size / values[0].sym
            count = count or (ratio.int_value if ratio is not None else None)
    if receiver.shape is not None and dim is not None and -len(receiver.shape) <= dim < len(receiver.shape):
        items = list(receiver.shape)
        if method == "unbind":
            count = count or items[dim].size.int_value if items[dim].size is not None else count
            del items[dim]
            shape = tuple(items)
        elif method == "chunk" and count:
            size = items[dim].size
            items[dim] = _axis_of(size / Sym.const(count) if size is not None else None, items[dim].role)
            shape = tuple(items)
        elif method == "split" and values and values[0].kind != "tuple" and values[0].sym is not None:
            size = items[dim].size
            items[dim] = _axis_of(values[0].sym, items[dim].role)
            shape = tuple(items)
            if size is not None and count is None:
                ratio = size / values[0].sym
                count = ratio.int_value if ratio is not None else None
    front_sizes = None
    if (
        receiver.shape is None
        and method == "split"
        and dim is not None
        and dim >= 0
        and values
        and values[0].kind != "tuple"
        and values[0].sym is not None
    ):
        # `q.split(d, 2)` of a tensor whose rank is not known: each piece holds d along axis 2
        # (for the tuple this call makes; see _concatenate).
        front_sizes = (id(node), ((dim, values[0].sym),))
    element = Value(
        kind="tensor",
        rank=rank,
        shape=shape,
        last_size=last_size,
        front_sizes=front_sizes,
        scaled=receiver.scaled,
        scale=receiver.scale, scale_steps=receiver.scale_steps,
        feature_last=feature_last,
        **receiver.data_facts(),
    )
    if count is None:
        # The count depends on a size we do not know: every unpacked part looks alike.
        return Value(kind="tuple", node=node, each=element)
    return Value(kind="tuple", elements=(element,) * count, node=node)


def _split_count(method: str, args) -> Optional[int]:
    flow = _flow()
    if method == "unbind":
        return None  # count depends on the size of the axis: bound by the unpacking target
    if method == "chunk" and args:
        return flow.int_literal(args[0].value)
    if method in ("split", "tensor_split") and args and isinstance(args[0].value, (cst.List, cst.Tuple)):
        return len(args[0].value.elements)
    return None


@handlers.method("size", "dim", "numel", "item", "__len__", "ndimension")
def _size(ev, call: Call):
    from attnlint.analysis.values import Value

    receiver, args, method, node = call.receiver, call.args, call.name, call.node
    ev.args(node)
    if method in ("dim", "ndimension"):
        return Value(kind="scalar", int_value=receiver.rank, node=node, sym=_const(receiver.rank))
    if method == "size" and not args:
        return Value(kind="shape", shape_of=receiver, node=node, shape_owner=_flow().owner_name(call.receiver_node))
    if method == "size" and len(args) == 1:
        axis = _flow().int_literal(args[0].value)
        if axis is not None:
            size = ev.read_size(receiver, axis, call.receiver_node)
            return Value(kind="scalar", node=node, sym=size, int_value=size.int_value if size else None)
    return Value(kind="scalar", node=node)


CONSTRUCTORS = ("torch.ones", "torch.zeros", "torch.randn", "torch.rand", "torch.empty", "torch.randint", "torch.randperm")


@handlers.function("torch.FloatTensor", "torch.DoubleTensor")
def _legacy_constructor(ev, call: Call):
    """`torch.FloatTensor(hidden_size)`: an uninitialised tensor of those sizes; not one of a
    list's data (`torch.FloatTensor([0.5, 0.5])`)."""
    return _constructor(ev, call) if _sizes_only(ev, call) else None


def _sizes_only(ev, call: Call) -> bool:
    """The legacy constructors take sizes (`torch.Tensor(d)`) or data (a list, an array):
    sizes when every argument is a number or a size, positional."""
    args = call.node.args
    if not args or any(a.keyword is not None or a.star for a in args):
        return False
    if any(isinstance(a.value, (cst.List, cst.Tuple, cst.ListComp, cst.GeneratorExp)) for a in args):
        return False
    def size(node) -> bool:
        return isinstance(node, cst.Integer) or ev.eval(node).kind == "scalar" or _names_one_size(node)

    return all(size(a.value) for a in args)


def _names_one_size(node: cst.BaseExpression) -> bool:
    """`hidden_size`, `self.d_model`: a name that says it is one size, not a shape."""
    from attnlint.analysis.names import names_size

    name = node.attr.value if isinstance(node, cst.Attribute) else node.value if isinstance(node, cst.Name) else None
    return name is not None and "shape" not in name and names_size(name)


@handlers.function(*CONSTRUCTORS)
def _constructor(ev, call: Call):
    from attnlint.analysis.values import Constructor, Value

    flow = _flow()
    node, qualified = call.node, call.name
    values = ev.args(node)
    positional = [(a, v) for a, v in zip(node.args, values) if a.keyword is None]
    if qualified == "torch.randint":
        positional = positional[-1:]
    if qualified == "torch.full":
        positional = positional[:1]
    size_kw = [(a, v) for a, v in zip(node.args, values) if a.keyword is not None and a.keyword.value == "size"]
    if not positional and size_kw:
        positional = size_kw  # `torch.empty(size=(n, d))`
    sizes = size_args(ev, [a for a, _ in positional], [v for _, v in positional])
    if len(positional) == 1 and isinstance(positional[0][0].value, (cst.Tuple, cst.List)):
        rank = len(positional[0][0].value.elements)
    elif any(a.star for a, _ in positional):
        rank = None
    elif len(positional) == 1 and positional[0][1].kind != "scalar" and not _names_one_size(positional[0][0].value):
        # One size argument that is no number: a whole shape (`torch.zeros(mask.shape)`,
        # `torch.zeros(x.size())`, a tuple of sizes): as many axes as it holds.
        rank = _shape_argument_rank(ev, positional[0][0].value, positional[0][1])
    else:
        rank = len(positional)
    dtype_arg = flow._arg(node, 99, "dtype")
    default = "int" if qualified in ("torch.randint", "torch.randperm") else "float"
    dtype = flow.dtype_of(dtype_arg.value, ev.aliases) if dtype_arg is not None else default
    size_texts = tuple(flow.code(a.value) for a, _ in positional)
    shape = make_shape(sizes) if sizes is not None and len(sizes) == rank else None
    # A new tensor has had no factor multiplied into it (`torch.randn(d, d) / d ** 0.5` has).
    # `torch.randint(low, high, (b, n))`: a batch of random ids.
    return Value(
        token_ids=qualified == "torch.randint" and rank is not None and rank >= 2,
        kind="tensor",
        rank=rank,
        shape=shape,
        node=node,
        constructor=Constructor(qualified, dtype, size_texts, half=_half_dtype(dtype_arg, ev.aliases, dtype)),
        scaled=False,
        scale=ONE,
    )


def _shape_argument_rank(ev, node: cst.BaseExpression, value) -> Optional[int]:
    """How many sizes a shape passed whole holds: a tuple's elements, or the rank of the tensor
    whose `.shape` / `.size()` it is; None when the code does not show it."""
    if value.kind == "tuple" and value.elements:
        return len(value.elements)
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "size":
        if node.args:
            return None
        node = node.func
    elif not (isinstance(node, cst.Attribute) and node.attr.value == "shape"):
        return None
    if not isinstance(node.value, (cst.Name, cst.Attribute)):
        return None  # read again, a call would record its sites twice
    return ev.eval(node.value).rank


@handlers.function("torch.eye")
def _eye(ev, call: Call):
    """`torch.eye(n)`, `torch.eye(n, m)`: an identity matrix (self loops added to an adjacency)."""
    from attnlint.analysis.values import Constructor, Value

    flow = _flow()
    node = call.node
    values = ev.args(node)
    positional = [(a, v) for a, v in zip(node.args, values) if a.keyword is None][:2]
    if not positional:
        return None
    sizes = [v.sym for _, v in positional]
    if len(sizes) == 1:
        sizes = sizes * 2
    dtype_arg = flow._arg(node, 99, "dtype")
    dtype = flow.dtype_of(dtype_arg.value, ev.aliases) if dtype_arg is not None else "float"
    texts = tuple(flow.code(a.value) for a, _ in positional)
    return Value(
        kind="tensor",
        rank=2,
        shape=make_shape(sizes) if None not in sizes else None,
        node=node,
        constructor=Constructor("torch.eye", dtype, texts, half=_half_dtype(dtype_arg, ev.aliases, dtype)),
        scaled=False,
        scale=ONE,
    )


def _half_dtype(dtype_arg, aliases, dtype) -> Optional[bool]:
    """Is a new tensor half precision: `dtype=torch.float16` yes, no dtype (float32) or
    `torch.float32` no, `dtype=q.dtype` unknown (see Constructor.half)."""
    if dtype != "float":
        return None
    if dtype_arg is None:
        return False
    from attnlint.analysis.names import qualify

    name = (qualify(dtype_arg.value, aliases) or "").rsplit(".", 1)[-1]
    if name in ("float16", "half", "bfloat16"):
        return True
    if name in ("float32", "float", "float64", "double"):
        return False
    return None


@handlers.function(
    "torch.ones_like", "torch.zeros_like", "torch.full_like", "torch.empty_like", "torch.rand_like", "torch.randn_like"
)
def _like(ev, call: Call):
    """`torch.ones_like(e)`: a new tensor of e's shape."""
    from attnlint.analysis.values import Constructor, Value

    values = ev.args(call.node)
    if not values:
        return None
    flow = _flow()
    dtype_arg = flow._arg(call.node, 99, "dtype")
    dtype = flow.dtype_of(dtype_arg.value, ev.aliases) if dtype_arg is not None else None
    source = values[0]
    return Value(
        kind="tensor",
        rank=source.rank,
        shape=source.shape,
        node=call.node,
        constructor=Constructor(call.name, dtype, ()),
    )


@handlers.function("torch.tensor", "torch.as_tensor", "torch.Tensor", "torch.LongTensor")
def _tensor(ev, call: Call):
    from attnlint.analysis.losses import padded_rows
    from attnlint.analysis.values import Value

    if not call.args:
        return None
    if call.name in ("torch.Tensor", "torch.LongTensor") and _sizes_only(ev, call):
        return _constructor(ev, call)  # `torch.Tensor(hidden_size)`: sizes, not data
    first = call.args[0].value
    inner = ev.eval(first)
    padding = padded_rows(inner) if inner.kind == "tuple" else None
    if padding is not None:
        for arg in call.args[1:]:
            ev.eval(arg.value)
        return Value(kind="tensor", rank=2, node=call.node, padding=padding)
    for arg in call.args[1:]:
        ev.eval(arg.value)
    if isinstance(first, (cst.ListComp, cst.GeneratorExp)) and inner.kind == "tuple":
        # `torch.tensor([vocab[w] for w in sentence])`: one axis more than each element has.
        parts = list(inner.elements) or ([inner.each] if inner.each is not None else [])
        if parts and all(p.kind == "scalar" for p in parts):
            return Value(kind="tensor", rank=1, node=call.node)
    if not isinstance(first, (cst.List, cst.Tuple)):
        # `torch.tensor(d_k)`: a 0-d tensor holding that number.
        return Value(kind="tensor", rank=inner.rank, node=call.node, sym=inner.sym if inner.rank in (None, 0) else None)
    from attnlint.analysis.masks import integer_batch, literal_mask

    return Value(
        kind="tensor",
        rank=literal_rank(first),
        node=call.node,
        mask=literal_mask(first),
        token_ids=integer_batch(first) or call.name == "torch.LongTensor" and literal_rank(first) == 2,
    )


def _constant_bool(value) -> bool:
    """A new bool tensor of one value (`torch.ones_like(x, dtype=torch.bool)`, `torch.zeros(b, 1,
    dtype=torch.bool)`): no mask of its own."""
    ctor = value.constructor
    return (
        ctor is not None
        and ctor.dtype == "bool"
        and ctor.function in ("torch.ones", "torch.zeros", "torch.ones_like", "torch.zeros_like", "torch.full", "torch.full_like")
    )


@handlers.function("torch.cat", "torch.concat", "torch.concatenate", "torch.stack")
def _concatenate(ev, call: Call):
    """`torch.cat((null_k, k), dim=-2)`: the parts' common facts; the shape along other axes."""
    from attnlint.analysis.symbolic import Sym
    from attnlint.analysis.values import Value, join

    flow = _flow()
    if not call.args:
        return None
    parts = ev.eval(call.args[0].value)
    for arg in call.args[1:]:
        ev.eval(arg.value)
    if parts.kind != "tuple":
        return Value(kind="tensor", node=call.node)
    elements = list(parts.elements) or ([parts.each] if parts.each is not None else [])
    if not elements:
        return Value(kind="tensor", node=call.node)
    joined = elements[0]
    for other in elements[1:]:
        joined = join(joined, other)
    if joined.mask is None and call.name != "torch.stack":
        # `torch.cat([ids.ne(pad), torch.ones_like(ids[:, :1], dtype=torch.bool)], dim=1)`: a
        # padding mask with a column of a constant appended (a target or class token always
        # real): still that mask, its convention what its informative part says.
        informative = [e.mask for e in elements if e.mask is not None]
        constant = [e for e in elements if e.mask is None]
        if len(informative) == 1 and constant and all(_constant_bool(e) for e in constant):
            joined = joined.with_(mask=replace(informative[0], can_mask_whole_row=None, built_size=()))
    paddings = {e.padding for e in elements if e.padded}
    if not joined.padded and len(paddings) == 1:
        # `torch.cat((text[:, 1:], image_tokens), dim=1)`: the padded part's pad positions are
        # in the result, holding its pad value.
        joined = joined.with_(padding=paddings.pop())
    dim_arg = flow._arg(call.node, 1, "dim")
    dim = flow.int_literal(dim_arg.value) if dim_arg is not None else 0
    stack = call.name == "torch.stack"
    rank = joined.rank
    ranks = {e.rank for e in elements if e.rank is not None}
    if rank is None and len(ranks) == 1:
        rank = ranks.pop()  # the parts of a cat or a stack all have one rank
    if stack and rank is not None:
        rank += 1
    shape = None
    shaped = [e for e in elements if e.shape is not None]
    if not stack and dim is not None and shaped and len(shaped) < len(elements) and rank is not None:
        # `torch.cat((hidden, encoder_outputs), dim=2)` with one part's shape unknown: every other
        # axis has the size the known parts agree on; the joined axis is unknown.
        first = shaped[0].shape
        if len(first) == rank and all(len(e.shape) == rank for e in shaped) and -rank <= dim < rank:
            shape = tuple(
                _axis_of(None)
                if i == dim % rank
                else _axis_of(axis.size if all(e.shape[i].size == axis.size for e in shaped) else None)
                for i, axis in enumerate(first)
            )
    if dim is not None and all(e.shape is not None and len(e.shape) == len(elements[0].shape) for e in elements):
        first = elements[0].shape
        if stack:
            position = dim if dim >= 0 else dim + len(first) + 1
            if 0 <= position <= len(first):
                # A list built by appends in a loop holds some number of them.
                count = Sym.const(len(parts.elements)) if parts.elements else None
                items = [
                    _axis_of(
                        first[i].size if all(e.shape[i].size == first[i].size for e in elements) else None,
                        first[i].role if all(e.shape[i].role == first[i].role for e in elements) else None,
                    )
                    for i in range(len(first))
                ]
                items.insert(position, _axis_of(count))
                shape = tuple(items)
        elif -len(first) <= dim < len(first):
            items = []
            for i, axis in enumerate(first):
                if i == dim % len(first):
                    total = None
                    if parts.elements:
                        from attnlint.analysis.symbolic import product as _product

                        sizes = [e.shape[i].size for e in elements]
                        total = None if any(s is None for s in sizes) else _sum_sizes(sizes)
                        del _product
                    items.append(_axis_of(total, axis.role))
                else:
                    # A cat needs every other axis equal: what the parts show of it (a size, a
                    # role) holds for all, when they do not contradict one another.
                    sizes = {e.shape[i].size for e in elements if e.shape[i].size is not None}
                    roles = {e.shape[i].role for e in elements if e.shape[i].role is not None}
                    items.append(
                        _axis_of(sizes.pop() if len(sizes) == 1 else None, roles.pop() if len(roles) == 1 else None)
                    )
            shape = tuple(items)
    if stack and joined.shape is None and joined.rank is None:
        rank = None
    if not stack:
        joined = _cached_rows_scale(joined, elements, dim, rank)
    front_sizes = None
    if not stack and shape is None and dim is not None and dim >= 0:
        # `torch.cat(q.split(d, 2), 0)` (heads folded into the batch): the pieces' sizes along
        # the other axes are the result's.
        made = {e.front_sizes for e in elements}
        if len(made) == 1 and None not in made:
            tag, sizes = made.pop()
            if tag == id(parts.node):
                kept = tuple((axis, size) for axis, size in sizes if axis != dim)
                front_sizes = (id(call.node), kept) if kept else None
    return joined.with_(
        front_sizes=front_sizes,
        kind="tensor",
        rank=rank,
        shape=shape if shape is not None and len(shape) == rank else None,
        node=call.node,
        scores=None,
        softmax=None,
        base=None,
        feature_transposed=False,
        feature_last=joined.feature_last if not stack else None,
    )


def _cached_rows_scale(joined, elements, dim, rank):
    """`torch.cat([cache["k"], k], dim=1)`: keys (or queries) computed here joined, along the
    tokens, with rows stored elsewhere (a cache entry, a memory passed in) whose facts are not
    known. The stored rows are earlier outputs of the same projection: a scale they carry and
    the fresh rows lack would itself be wrong, so the result is as scaled as the fresh rows are.
    Not along the feature axis (that builds a different vector), and only when every stored part
    is a plain read (a subscript, an attribute, a name), never the result of a call we do not know."""
    from attnlint.analysis.values import KEY, QUERY

    if joined.scaled is not None or dim is None or dim == -1 or (rank is not None and dim == rank - 1):
        return joined
    fresh = [e for e in elements if e.scaled is not None]
    stored = [e for e in elements if e.scaled is None]
    if not fresh or not stored or any(e.scaled is not False for e in fresh):
        return joined
    if not all(e.role in (KEY, QUERY) for e in fresh) or len({e.role for e in fresh}) != 1:
        return joined
    for e in stored:
        plain_read = isinstance(e.node, (cst.Subscript, cst.Attribute, cst.Name))
        if e.role not in (None, fresh[0].role) or e.scores is not None or not (e.kind == "unknown" and plain_read):
            return joined
    scales = {e.scale for e in fresh}
    return joined.with_(scaled=False, scale=scales.pop() if len(scales) == 1 else None, role=fresh[0].role)


def _sum_sizes(sizes):
    """n + m of sizes: a constant when both are; otherwise a size of its own (unknown)."""
    from attnlint.analysis.symbolic import Sym

    if all(s.is_const for s in sizes):
        return Sym.const(sum(s.coeff for s in sizes))
    return None


# Elementwise functions: the shape (and the data facts) are kept; roles and scores are not.
ELEMENTWISE = (
    "tanh",
    "sigmoid",
    "relu",
    "gelu",
    "silu",
    "elu",
    "leaky_relu",
    "exp",
    "abs",
    "neg",
    "sign",
    "sin",
    "cos",
    "log",
    "flip",
    "roll",
    "square",
)


def elementwise(ev, value, node):
    """What an element-wise function or layer makes of `value`: its layout and data facts."""
    from attnlint.analysis.values import Value

    return Value(
        kind="tensor" if value.kind != "unknown" else "unknown",
        rank=value.rank,
        shape=value.shape,
        # `torch.tanh(self.score(x))`: still one value per output feature of the layer.
        last_size=value.last_size,
        feature_last=value.feature_last if value.last_size is not None else None,
        node=node,
        **value.data_facts(),
    )


@handlers.function(*("torch." + name for name in ELEMENTWISE))
def _elementwise_function(ev, call: Call):
    values = ev.args(call.node)
    return elementwise(ev, values[0], call.node) if values else None


@handlers.method(*ELEMENTWISE)
def _elementwise_method(ev, call: Call):
    ev.args(call.node)
    return elementwise(ev, call.receiver, call.node)


@handlers.module(
    "Tanh",
    "ReLU",
    "LeakyReLU",
    "GELU",
    "SiLU",
    "ELU",
    "Sigmoid",
    "Softplus",
    "Mish",
    "GroupNorm",
    "BatchNorm1d",
    "BatchNorm2d",
    "InstanceNorm2d",
)
def _elementwise_module(ev, call: Call):
    values = ev.args(call.node)
    return elementwise(ev, values[0], call.node) if values else None


def per_key_padding(mask, sizes):
    """A mask parameter of no known kind laid out as `(batch, 1, ..., 1, keys)` (`mask.view(bs, 1,
    1, k_len)`, `mask[:, None, None, :]`): one value per sequence and key, the same for every
    query, so a key-padding mask, and one that masks every key of a sequence (an empty one)
    empties its rows, as a padding-mask parameter does (`attention_mask`, `key_padding_mask`)."""
    if mask is None or mask.origin != "argument" or mask.scaled or mask.rows_edited:
        return mask
    if sizes is None or len(sizes) < 3:
        return mask
    if not all(size is None for size in sizes):  # all None: the layout was read from an index
        if not all(size is not None and size == ONE for size in sizes[1:-1]):
            return mask
        if any(size is None or size == ONE for size in (sizes[0], sizes[-1])):
            return mask
    # Laid out per key with no arithmetic on the way: still the parameter's raw values (see
    # mask_encoding.zero_one_reason), wherever the function it reaches adds it.
    return replace(mask, marks_padding=True, laid_out_per_key=True)


def _per_key_layout(elements) -> bool:
    """`[:, None, None, :]`, `[:, None, :]`: two whole axes, new axes of size 1 between them."""
    if len(elements) < 3:
        return False
    first, *middle, last = (e.slice for e in elements)

    def whole(inner) -> bool:
        return isinstance(inner, cst.Slice) and inner.lower is None and inner.upper is None and inner.step is None

    return (
        whole(first)
        and whole(last)
        and all(isinstance(m, cst.Index) and isinstance(m.value, cst.Name) and m.value.value == "None" for m in middle)
    )
