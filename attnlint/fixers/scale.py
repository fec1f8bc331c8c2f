"""Adding the 1/sqrt(d_k) scale to attention scores."""

from __future__ import annotations

from typing import Optional, Tuple

import libcst as cst

from attnlint.diagnostics import Applicability
from attnlint.rules.base import NodeFix, Replacement


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
    code = module.code_for_node(product)
    if isinstance(product, cst.BinaryOperation) and not product.lpar:
        code = f"({code})"
    new = cst.parse_expression(f"{code} * {module.code_for_node(operand)}.shape[{axis}] ** -0.5")
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
