"""The values masked scores are filled with, as numbers: `-1e9`, `float("-1e4")`,
`torch.finfo(torch.float32).min`, a named constant (`NEG_INF = -1e9`, `self.mask_value = -1e4`),
a config field's default (`mask_value: float = -1e9`, read as `self.cfg.mask_value`).

Used for two questions: does the fill survive half precision (fp16's range ends at 65504; float32's
`finfo.min` is beyond bf16's too), and does it mask anything at all (a fill of `-1e-9` does not).
A fill written in the scores' own dtype (`torch.finfo(scores.dtype).min`) is dtype-aware.
"""

from __future__ import annotations

import math

from dataclasses import dataclass
from typing import Dict, Iterator, Optional

import libcst as cst

from attnlint.analysis.calls import argument
from attnlint.analysis.names import child_nodes
from attnlint.analysis.names import canonical, qualify
from attnlint.analysis.values import FillSite

FLOAT32_MIN = -3.4028234663852886e38
# The largest finite magnitude of each half-precision dtype.
HALF_MAX = {"float16": 65504.0, "bfloat16": 3.3895313892515355e38}
_FLOAT32_NAMES = {"torch.float32", "torch.float", "numpy.float32"}


@dataclass(frozen=True)
class FillConstant:
    value: float  # the number, -inf for infinities
    node: cst.BaseExpression  # where it is written (the argument of the fill, or the constant)
    # How it was written: "literal", "float32-finfo" (`torch.finfo(torch.float32).min`).
    spelling: str = "literal"

    def overflows(self, dtype: str) -> bool:
        """Beyond the dtype's finite range (masked_fill raises; a cast gives -inf). The
        infinities themselves are values of every float dtype."""
        return not math.isinf(self.value) and abs(self.value) > HALF_MAX[dtype]


def fill_node(site: FillSite) -> Optional[cst.BaseExpression]:
    """The fill argument of a masked_fill / torch.masked_fill / torch.where site."""
    call = site.call
    if not isinstance(call, cst.Call):
        return None  # an additive mask: its fill was recorded where the mask was built
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value in ("masked_fill", "masked_fill_"):
        positional = [a for a in call.args if a.keyword is None]
        is_method = not (len(positional) >= 3)  # torch.masked_fill(input, mask, value)
        arg = argument(call, 1, "value") if is_method else argument(call, 2, "value")
        return arg.value if arg is not None else None
    if isinstance(func, cst.Attribute) and func.attr.value == "where" and len(call.args) == 3:
        return call.args[1].value if not site.keeps_where_true else call.args[2].value
    if isinstance(func, cst.Name) and func.value in ("masked_fill", "where"):
        return call.args[-1].value if call.args else None
    return None


def fill_constant(
    site: FillSite, aliases: Dict[str, str], function_node: Optional[cst.CSTNode], module: cst.Module
) -> Optional[FillConstant]:
    """The fill of `site` as a number, or None when it is not a constant the analysis can read
    (a parameter, `torch.finfo(scores.dtype).min`, anything computed)."""
    node = fill_node(site)
    if node is None:
        return None
    return constant_value(node, aliases, function_node, module, depth=0)


def constant_value(
    node: cst.BaseExpression,
    aliases: Dict[str, str],
    function_node: Optional[cst.CSTNode],
    module: cst.Module,
    depth: int = 0,
) -> Optional[FillConstant]:
    if depth > 3:
        return None
    if isinstance(node, (cst.Integer, cst.Float)):
        return FillConstant(float(node.evaluated_value), node)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = constant_value(node.expression, aliases, function_node, module, depth + 1)
        if inner is None:
            return None
        return FillConstant(-inner.value, node, inner.spelling)
    if isinstance(node, cst.Call):
        qualified = canonical(qualify(node.func, aliases))
        if isinstance(node.func, cst.Name) and node.func.value == "float" and node.args:
            arg = node.args[0].value
            if isinstance(arg, cst.SimpleString) and isinstance(arg.evaluated_value, str):
                try:
                    return FillConstant(float(arg.evaluated_value), node)
                except ValueError:
                    return None
        if qualified in ("torch.tensor", "torch.as_tensor") and node.args:
            return constant_value(node.args[0].value, aliases, function_node, module, depth + 1)
        return None
    if isinstance(node, cst.Attribute) and node.attr.value in ("min", "max"):
        finfo = node.value
        if isinstance(finfo, cst.Call) and qualify(finfo.func, aliases) in ("torch.finfo", "numpy.finfo"):
            dtype = finfo.args[0].value if finfo.args else None
            if dtype is not None and qualify(dtype, aliases) in _FLOAT32_NAMES:
                sign = -1.0 if node.attr.value == "min" else 1.0
                return FillConstant(sign * -FLOAT32_MIN, node, "float32-finfo")
        return None
    if isinstance(node, cst.Name):
        assigned = single_assignment(node.value, function_node) or single_assignment(node.value, _top_level(module))
        if assigned is None:
            assigned = _unpassed_default(node.value, function_node, module)
        if assigned is not None:
            found = constant_value(assigned, aliases, function_node, module, depth + 1)
            return None if found is None else FillConstant(found.value, node, found.spelling)
        return None
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
        assigned = single_assignment("self." + node.attr.value, module)
        if assigned is not None:
            found = constant_value(assigned, aliases, None, module, depth + 1)
            return None if found is None else FillConstant(found.value, node, found.spelling)
    if isinstance(node, cst.Attribute):
        default = _config_default(node.attr.value, module)
        if default is not None:
            found = constant_value(default, aliases, None, module, depth + 1)
            return None if found is None else FillConstant(found.value, node, found.spelling)
    return None


def _unpassed_default(name: str, function_node: Optional[cst.CSTNode], module: cst.Module) -> Optional[cst.BaseExpression]:
    """`def forward(self, q, k, v, mask=None, e=1e-12)` with `-e` the fill: the parameter's default,
    when the function never rebinds it and no call in the module can pass it (no `e=` keyword,
    no `**kwargs`, no call with as many positional arguments as reach it)."""
    if not isinstance(function_node, cst.FunctionDef):
        return None
    params = list(function_node.params.params)
    found = [p for p in params if p.name.value == name]
    if len(found) != 1 or found[0].default is None:
        return None
    position = params.index(found[0])
    if params and params[0].name.value in ("self", "cls"):
        position -= 1
    for node in _walk(function_node.body):
        if isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            if any(isinstance(n, cst.Name) and n.value == name for t in targets for n in _walk(t)):
                return None
    others = _names_of_other_callables(module, function_node.name.value)
    for node in _walk(module):
        if not isinstance(node, cst.Call):
            continue
        root = node.func
        while isinstance(root, cst.Attribute):
            root = root.value
        if isinstance(root, cst.Name) and root.value in others:
            continue  # `train(model, it, opt, crit, clip)`, `torch.zeros(...)`: not this function
        if any(a.star for a in node.args):
            return None
        if any(a.keyword is not None and a.keyword.value == name for a in node.args):
            return None
        if sum(1 for a in node.args if a.keyword is None) > position:
            return None
    return found[0].default


def _names_of_other_callables(module: cst.Module, name: str) -> set:
    """Top-level names a call through which cannot reach the function `name`: the module's other
    functions and classes (called by name), and what it imports (`torch`, `nn`, `F`)."""
    found = set()
    for statement in module.body:
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)) and statement.name.value != name:
            found.add(statement.name.value)
        elif isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(small.names, cst.ImportStar):
                    for alias in small.names:
                        bound = alias.asname.name if alias.asname is not None else alias.name
                        while isinstance(bound, cst.Attribute):
                            bound = bound.value
                        if isinstance(bound, cst.Name):
                            found.add(bound.value)
    return found


def _config_default(field_name: str, module: cst.Module) -> Optional[cst.BaseExpression]:
    """`cfg.mask_value` with `mask_value: float = -1e9` a field of a config class of the module:
    the field's default, when one class alone declares it and nothing in the module sets it
    otherwise (no `x.mask_value = ...`, no `Config(mask_value=...)`)."""
    defaults = []
    for statement in module.body:
        if not isinstance(statement, cst.ClassDef):
            continue
        for line in statement.body.body:
            if not isinstance(line, cst.SimpleStatementLine):
                continue
            for small in line.body:
                if isinstance(small, cst.AnnAssign) and _target_text(small.target) == field_name and small.value:
                    defaults.append(small.value)
                elif isinstance(small, cst.Assign) and any(_target_text(t.target) == field_name for t in small.targets):
                    defaults.append(small.value)
    if len(defaults) != 1:
        return None
    for node in _walk(module):
        if isinstance(node, cst.Arg) and node.keyword is not None and node.keyword.value == field_name:
            return None
        if isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            copied = isinstance(node, cst.Assign) and _reads_field(node.value, field_name)
            if not copied and any(isinstance(t, cst.Attribute) and t.attr.value == field_name for t in targets):
                return None
    return defaults[0]


def _reads_field(value: Optional[cst.BaseExpression], field_name: str) -> bool:
    """`cfg.mask_value`: the field read from an object (`self.mask_value = cfg.mask_value`
    copies it, it sets nothing else)."""
    return isinstance(value, cst.Attribute) and value.attr.value == field_name


def single_assignment(target: str, scope: Optional[cst.CSTNode]) -> Optional[cst.BaseExpression]:
    """The value of the one assignment to `target` (a name, or `self.x`) in the scope; None when
    there is none or several (a value that changes is not a constant)."""
    if scope is None:
        return None
    values = []
    for node in _walk(scope):
        if isinstance(node, cst.Assign):
            for t in node.targets:
                if _target_text(t.target) == target:
                    values.append(node.value)
        elif isinstance(node, (cst.AnnAssign, cst.AugAssign)) and _target_text(node.target) == target:
            values.append(getattr(node, "value", None))
    return values[0] if len(values) == 1 and values[0] is not None else None


def _top_level(module: cst.Module) -> cst.Module:
    """Module constants: the top-level statements only (not assignments inside functions)."""
    return module.with_changes(body=[s for s in module.body if isinstance(s, cst.SimpleStatementLine)])


def _target_text(node: cst.BaseExpression) -> Optional[str]:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name):
        return f"{node.value.value}.{node.attr.value}"
    return None


def _walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    yield node
    for child in child_nodes(node):
        yield from _walk(child)
