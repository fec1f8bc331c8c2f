"""Which side the checked code pads its batches on.

A padding mask under a causal mask empties a row only when the padding is on the left: a query
in the left padding sees only earlier keys, all padding. Right padding (what `pad_sequence`,
list padding `s + [pad] * k` and tokenizers give by default) keeps key 0 real in every row. So
the analysis claims such a row only where the file shows left padding:

- real values written at the end of a row: `out[i, n - len(s):] = s`, `ids[i, -len(s):] = s`;
- a tokenizer set to pad on the left: `padding_side="left"` (keyword or attribute);
- list padding in front: `[pad] * (n - len(s)) + s` (a run as long as what the row lacks);
- `F.pad(x, (n - len(x), 0), value=pad)`: padding before the first element of the last axis;
- a block as long as what the row lacks, then the row: `np.concatenate([np.zeros((K - tlen, d)),
  s])`, `torch.cat([torch.full((n - len(x),), pad), x])`;
- a row written from its last position backwards (`idx = maxlen - 1`, `seq[idx] = item`,
  `idx -= 1` in a loop: SASRec's sampler), so its unwritten positions are in front;
- a function that builds a padding mask from ids (`history > 0`, `ids != pad_id`) and reads the
  last position of a batch made from those ids as each sequence's state (`h[:, -1, :]`): the
  sequences of its padded batch all end at the last position, so their padding is in front (not
  a generation loop reading the last of the tokens it generated).

One walk of the module, made only when some mask needs the answer; then, if it shows none, of
the files of its directory that import it (a trainer left-padding what it hands the model).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import List, Optional

import libcst as cst
from attnlint.analysis.names import child_nodes, words


def shows_left_padding(module: cst.Module) -> bool:
    stack = [module]
    while stack:
        node = stack.pop()
        if _pads_left(node):
            return True
        stack.extend(child_nodes(node))
    return False


# A package's neighbours read for left padding: at most this many files of one directory.
_MOST_NEIGHBOURS = 40


def importers_showing_left_padding(path: Path) -> List[Path]:
    """The files of `path`'s directory that import its module and show left padding themselves
    (`decision_transformer/train.py` left-padding the trajectories it hands `model.py`). Only
    neighbours whose text imports the module by name are parsed, and only when a mask asks."""
    try:
        neighbours = sorted(p for p in path.parent.glob("*.py") if p != path)
    except OSError:
        return []
    if len(neighbours) > _MOST_NEIGHBOURS:
        return []
    stem = re.escape(path.stem)
    # `from .model import`, `from pkg.model import`, `from . import model`, `import model`.
    imports = re.compile(
        rf"^\s*(from\s+[.\w]*(?<!\w){stem}\s+import|from\s+[.\w]*\s+import\s+[^\n]*\b{stem}\b|import\s+{stem}\b)",
        re.M,
    )
    found = []
    for neighbour in neighbours:
        try:
            text = neighbour.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if not imports.search(text):
            continue
        try:
            if shows_left_padding(cst.parse_module(text)):
                found.append(neighbour)
        except cst.ParserSyntaxError:
            continue
    return found


def _pads_left(node: cst.CSTNode) -> bool:
    if isinstance(node, cst.FunctionDef):
        return _summarises_padded_batch_at_end(node) or _fills_from_the_end(node)
    if isinstance(node, cst.Assign):
        if any(_writes_row_end(t.target) for t in node.targets):
            return True
        return _is_left(node.value) and any(
            isinstance(t.target, cst.Attribute) and t.target.attr.value == "padding_side" for t in node.targets
        )
    if isinstance(node, cst.Arg) and node.keyword is not None and node.keyword.value == "padding_side":
        return _is_left(node.value)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
        return _padding_run(node.left) and not _repeated_list(node.right)
    if isinstance(node, cst.Call) and _called(node) == "pad" and len(node.args) >= 2:
        return _before_only(node.args[1].value)
    if isinstance(node, cst.Call) and _called(node) in ("concatenate", "cat", "concat") and node.args:
        return _padding_block_first(node.args[0].value)
    return False


def _padding_block_first(parts: cst.BaseExpression) -> bool:
    """`np.concatenate([np.zeros((K - tlen, d)), s])`, `torch.cat([torch.full((n - len(x),), pad),
    x])`: a block as long as what the row lacks, then the row (the Decision Transformer's
    trajectories)."""
    if not isinstance(parts, (cst.List, cst.Tuple)) or len(parts.elements) < 2:
        return False
    first = parts.elements[0].value
    if not (isinstance(first, cst.Call) and _called(first) in ("zeros", "ones", "full") and first.args):
        return False
    size = first.args[0].value
    if isinstance(size, (cst.Tuple, cst.List)) and size.elements:
        size = size.elements[0].value
    return isinstance(size, cst.BinaryOperation) and isinstance(size.operator, cst.Subtract)


def _writes_row_end(target: cst.BaseExpression) -> bool:
    """`out[i, n - len(s):]` / `ids[i, -len(s):]`: a slice from a length before the end, open at
    the end."""
    if not isinstance(target, cst.Subscript) or not target.slice:
        return False
    last = target.slice[-1].slice
    if not isinstance(last, cst.Slice) or last.upper is not None or last.lower is None:
        return False
    lower = last.lower
    if isinstance(lower, cst.UnaryOperation) and isinstance(lower.operator, cst.Minus):
        return _is_len(lower.expression)
    return isinstance(lower, cst.BinaryOperation) and isinstance(lower.operator, cst.Subtract) and _is_len(lower.right)


def _is_len(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "len":
        return True
    # `s.size(0)`, `s.shape[0]`: a length too.
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "size":
        return True
    return isinstance(node, cst.Subscript) and isinstance(node.value, cst.Attribute) and node.value.attr.value == "shape"


def _is_left(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.SimpleString) and node.evaluated_value == "left"


def _repeated_list(node: cst.BaseExpression) -> bool:
    """`[pad] * k` (either order)."""
    if not (isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply)):
        return False
    return isinstance(node.left, cst.List) or isinstance(node.right, cst.List)


def _padding_run(node: cst.BaseExpression) -> bool:
    """`[pad] * (n - len(s))` / `[pad] * pad_len`: a run as long as what a row lacks. A run as
    long as a part of the row (`[-100] * len(prompt) + response`: the prompt's labels ignored)
    pads nothing."""
    if not _repeated_list(node):
        return False
    count = node.right if isinstance(node.left, cst.List) else node.left
    if isinstance(count, cst.BinaryOperation) and isinstance(count.operator, cst.Subtract):
        return True
    return isinstance(count, cst.Name) and "pad" in [w.lower() for w in words(count.value)]


def _called(node: cst.Call) -> str:
    func = node.func
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return func.value if isinstance(func, cst.Name) else ""


def _before_only(pad: cst.BaseExpression) -> bool:
    """`(k, 0)`: F.pad's amounts for the last axis, all before it."""
    if not isinstance(pad, (cst.Tuple, cst.List)) or len(pad.elements) != 2:
        return False
    before, after = (e.value for e in pad.elements)
    zero = isinstance(after, cst.Integer) and after.evaluated_value == 0
    return zero and not (isinstance(before, cst.Integer) and before.evaluated_value == 0)


def _summarises_padded_batch_at_end(function: cst.FunctionDef) -> bool:
    """The function tests ids against padding and reads `x[:, -1]` (the last position of every
    sequence of a batch) of a tensor made from those ids (through its local assignments, the
    first argument of the calls that made it, their receivers and operands), outside nested
    functions. Not the last position of another sequence (a generation loop's `out[:, -1]` of
    the tokens it generated, next to a source padding mask)."""
    tested, reads = set(), []
    sources: dict = {}
    stack = [function.body]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if _pad_test(node):
            root = _root_name(node.left if isinstance(node, cst.Comparison) else node.func.value)
            if root is not None:
                tested.add(root)
        elif _last_position(node):
            reads.append(node.value)
        elif isinstance(node, cst.Assign):
            for target in node.targets:
                names = [target.target] if isinstance(target.target, cst.Name) else (
                    [e.value for e in target.target.elements] if isinstance(target.target, (cst.Tuple, cst.List)) else []
                )
                for name in names:
                    if isinstance(name, cst.Name):
                        sources.setdefault(name.value, []).append(node.value)
        stack.extend(child_nodes(node))
    return bool(tested) and any(_made_from(read, tested, sources, set()) for read in reads)


def _root_name(node: cst.BaseExpression) -> Optional[str]:
    """`ids` of `ids`, `batch.ids`, `ids[:, 1:]`."""
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        node = node.value
    return node.value if isinstance(node, cst.Name) and node.value != "self" else None


def _made_from(node: cst.BaseExpression, tested: set, sources: dict, seen: set) -> bool:
    if isinstance(node, cst.Name):
        if node.value in tested:
            return True
        if node.value in seen:
            return False
        seen.add(node.value)
        return any(_made_from(value, tested, sources, seen) for value in sources.get(node.value, ()))
    if isinstance(node, (cst.Attribute, cst.Subscript)):
        return _made_from(node.value, tested, sources, seen)
    if isinstance(node, cst.BinaryOperation):
        return _made_from(node.left, tested, sources, seen) or _made_from(node.right, tested, sources, seen)
    if isinstance(node, cst.Call):
        positional = [a.value for a in node.args if a.keyword is None and not a.star]
        func = node.func
        # A method's receiver (`x.chunk(3)`), not the object of a layer called on its argument
        # (`self.qkv(x)`).
        receiver = (
            func.value
            if isinstance(func, cst.Attribute) and not (isinstance(func.value, cst.Name) and func.value.value == "self")
            else None
        )
        return (bool(positional) and _made_from(positional[0], tested, sources, seen)) or (
            receiver is not None and _made_from(receiver, tested, sources, seen)
        )
    return False


def tests_for_padding(node: cst.BaseExpression) -> bool:
    """`ids > 0`, `tokens != pad_id`, `ids.ne(pad).float()`, `(seq == 0).unsqueeze(1)`: a test
    of ids against the pad id, whatever dtype or layout it is then given."""
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in _LAYOUT_AND_DTYPE:
        node = node.func.value
    return _pad_test(node)


_LAYOUT_AND_DTYPE = frozenset({"bool", "float", "long", "int", "to", "unsqueeze", "type", "byte", "half"})


def _pad_test(node: cst.CSTNode) -> bool:
    """`ids > 0`, `ids != 0`, `ids == 0`, `tokens != pad_id`, `ids.ne(self.pad_idx)`."""
    if isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
        target = node.comparisons[0]
        ops = (cst.GreaterThan, cst.NotEqual, cst.Equal)
        return isinstance(target.operator, ops) and _pad_value(target.comparator)
    if isinstance(node, cst.Call) and _called(node) in ("ne", "eq", "gt") and len(node.args) == 1:
        return isinstance(node.func, cst.Attribute) and _pad_value(node.args[0].value)
    return False


def _pad_value(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.Integer):
        return node.evaluated_value == 0
    name = node.attr.value if isinstance(node, cst.Attribute) else getattr(node, "value", None)
    return isinstance(name, str) and any(w in ("pad", "padding") for w in words(name))


def _last_position(node: cst.CSTNode) -> bool:
    """`x[:, -1]`, `x[:, -1, :]`: every row's last position."""
    if not isinstance(node, cst.Subscript) or len(node.slice) < 2:
        return False
    first, second = node.slice[0].slice, node.slice[1].slice
    whole = isinstance(first, cst.Slice) and first.lower is None and first.upper is None and first.step is None
    if not whole or not isinstance(second, cst.Index):
        return False
    index = second.value
    return (
        isinstance(index, cst.UnaryOperation)
        and isinstance(index.operator, cst.Minus)
        and isinstance(index.expression, cst.Integer)
        and index.expression.evaluated_value == 1
    )


def _fills_from_the_end(function: cst.FunctionDef) -> bool:
    """A position that starts one before a length (`idx = maxlen - 1`), is stepped back
    (`idx -= 1`) and is where the function stores (`seq[idx] = i`): rows written from the end,
    outside nested functions (the function defined inside one counts as its own)."""
    starts, steps_back, stores = set(), set(), set()
    stack = [function.body]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(node, cst.FunctionDef) and node is not function:
            if _fills_from_the_end(node):
                return True
            continue
        if isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            value = node.value
            if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Subtract):
                if isinstance(value.right, cst.Integer) and value.right.evaluated_value == 1:
                    starts.add(node.targets[0].target.value)
        if isinstance(node, cst.Assign):
            for target in node.targets:
                index = _single_name_index(target.target)
                if index is not None:
                    stores.add(index)
        if (
            isinstance(node, cst.AugAssign)
            and isinstance(node.operator, cst.SubtractAssign)
            and isinstance(node.target, cst.Name)
            and isinstance(node.value, cst.Integer)
            and node.value.evaluated_value == 1
        ):
            steps_back.add(node.target.value)
        stack.extend(child_nodes(node))
    return bool(starts & steps_back & stores)


def _single_name_index(target: cst.BaseExpression):
    """`seq[idx]`, `seq[b, idx]`: the index name of a store at one position of a row (the last
    axis's index)."""
    if isinstance(target, cst.Subscript) and target.slice:
        index = target.slice[-1].slice
        if isinstance(index, cst.Index) and isinstance(index.value, cst.Name):
            return index.value.value
    return None
