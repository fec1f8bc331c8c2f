"""Adding the 1/sqrt(d_k) scale to attention scores."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from attnlint.analysis.shapes import role_of_dim_name
from attnlint.analysis.values import FEATURE, ScoreFacts
from attnlint.diagnostics import Applicability
from attnlint.fixers import bare_code
from attnlint.edits import NodeFix, Replacement


def scale_scores(
    module: cst.Module, scores: ScoreFacts, parent: Optional[cst.CSTNode], factor: Optional[str] = None
) -> Optional[NodeFix]:
    """`q @ k.transpose(-2, -1)` -> `(q @ k.transpose(-2, -1)) * self.head_dim ** -0.5`.

    The dimension is the per-head dimension the code already names (`self.head_dim`, `d_k`),
    else read from an operand's contracted axis (`q.shape[-1]`), which is the per-head dimension
    by construction: scaling by the model width (`d_out`) in multi-head code is a wrong fix seen
    in public code, and neither form can make it. `factor` is a scale the function was handed
    and dropped (`scaling`): the scores are multiplied by it instead. `parent` is the product's parent node (where
    `x * s` may need parentheses). Unsafe: it changes every output.
    """
    product = scores.product
    if scores.adds_bias:
        # baddbmm(bias, q, kᵀ) adds the bias inside: multiplying the result would scale it too.
        return None
    if factor is None:
        dimension = _named_head_dim(scores)
        if dimension is None:
            if scores.feature_dim is None:
                return None
            operand, axis = scores.feature_dim
            dimension = f"{module.code_for_node(operand)}.shape[{axis}]"
        factor = f"{dimension} ** -0.5"
    code = bare_code(module, product)
    if isinstance(product, cst.BinaryOperation):
        code = f"({code})"
    text = f"{code} * {factor}"
    if not product.lpar and not _stands_alone(parent, product):
        # `torch.matmul(q, kT).softmax(-1)`: the product must stay one operand. (A product in
        # parentheses keeps them around the replacement.)
        text = f"({text})"
    new = cst.parse_expression(text)
    return NodeFix(
        message=f"Scale the scores by `{factor}`",
        applicability=Applicability.UNSAFE,
        changes=(Replacement(product, new),),
    )


def _named_head_dim(scores: ScoreFacts) -> Optional[str]:
    """The name the code gives the head dimension, preferring one that says so (`head_dim`)."""
    names = sorted(scores.head_dim_names, key=lambda n: (role_of_dim_name(n) != FEATURE, len(n)))
    return names[0] if names else None


def _stands_alone(parent: Optional[cst.CSTNode], node: cst.CSTNode) -> bool:
    """Is `node` a whole right-hand side, return value or call argument (where `x * s` needs no
    parentheses)?"""
    if isinstance(parent, (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Return)):
        return getattr(parent, "value", None) is node
    if isinstance(parent, cst.Arg):
        return parent.value is node
    if isinstance(parent, cst.BinaryOperation):
        # `a + P` or `P + a`: `*` binds tighter than `+`/`-`.
        return isinstance(parent.operator, (cst.Add, cst.Subtract))
    return False
