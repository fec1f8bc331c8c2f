"""Adding the 1/sqrt(d_k) scale to attention scores."""

from __future__ import annotations

from typing import Optional, Tuple

import libcst as cst

from attnlint.diagnostics import Applicability
from attnlint.fixers import bare_code
from attnlint.edits import NodeFix, Replacement


def scale_scores(
    module: cst.Module, product: cst.BaseExpression, feature_dim: Optional[Tuple[cst.BaseExpression, int]]
) -> Optional[NodeFix]:
    """`q @ k.transpose(-2, -1)` -> `(q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5`.

    The dimension is read from an operand's contracted axis, which is the per-head dimension by
    construction: scaling by the model width (`d_out`) in multi-head code is a wrong fix seen in
    public code, and this form cannot make it. Unsafe: it changes every output.
    """
    if feature_dim is None or _is_baddbmm(product):
        # baddbmm(bias, q, kᵀ) adds the bias inside: multiplying the result would scale it too.
        return None
    operand, axis = feature_dim
    code = bare_code(module, product)
    if isinstance(product, cst.BinaryOperation):
        code = f"({code})"
    text = f"{code} * {module.code_for_node(operand)}.shape[{axis}] ** -0.5"
    if not product.lpar and not _stands_alone(module, product):
        # `torch.matmul(q, kT).softmax(-1)`: the product must stay one operand. (A product in
        # parentheses keeps them around the replacement.)
        text = f"({text})"
    new = cst.parse_expression(text)
    return NodeFix(
        message=f"Scale the scores by `{module.code_for_node(operand)}.shape[{axis}] ** -0.5`",
        applicability=Applicability.UNSAFE,
        changes=(Replacement(product, new),),
    )


def _is_baddbmm(node: cst.BaseExpression) -> bool:
    if not isinstance(node, cst.Call):
        return False
    func = node.func
    name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", None)
    return name == "baddbmm"


def _stands_alone(module: cst.Module, node: cst.CSTNode) -> bool:
    """Is `node` a whole right-hand side, return value or call argument (where `x * s` needs no
    parentheses)? Found by a search for its parent, paid only when a finding is fixed."""
    parent = _parent_of(module, node)
    if isinstance(parent, (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Return)):
        return getattr(parent, "value", None) is node
    if isinstance(parent, cst.Arg):
        return parent.value is node
    if isinstance(parent, cst.BinaryOperation):
        # `a + P` or `P + a`: `*` binds tighter than `+`/`-`.
        return isinstance(parent.operator, (cst.Add, cst.Subtract))
    return False


def _parent_of(root: cst.CSTNode, target: cst.CSTNode):
    stack = [root]
    while stack:
        node = stack.pop()
        for child in node.children:
            if child is target:
                return node
            stack.append(child)
    return None
