"""Verification recipes, one module per rule, named for the rule.

A recipe module runs inside the verification child process and exposes
``run(request: dict) -> list[dict]`` (report dicts, see :class:`attnlint.verify.report.VerificationReport`).
This package's ``__init__`` stays torch-free: the parent only needs the table below.
"""

from __future__ import annotations

from typing import Dict

# rule code -> recipe module in this package (named for the rule's kebab-case name).
RECIPE_BY_RULE_CODE: Dict[str, str] = {
    "ATN101": "missing_attention_scale",
    "ATN102": "softmax_wrong_axis",
    "ATN103": "batched_transpose",
    "ATN201": "cross_entropy_ignore_index",
    "ATN202": "unmasked_padding",
    "ATN203": "all_masked_row_nan",
    "ATN204": "unsliced_causal_mask",
    "ATN205": "inverted_mask_convention",
}

# The rules' kebab-case names are accepted too.
RULE_CODE_BY_NAME: Dict[str, str] = {
    "missing-attention-scale": "ATN101",
    "softmax-wrong-axis": "ATN102",
    "batched-transpose": "ATN103",
    "cross-entropy-ignore-index": "ATN201",
    "unmasked-padding": "ATN202",
    "all-masked-row-nan": "ATN203",
    "unsliced-causal-mask": "ATN204",
    "inverted-mask-convention": "ATN205",
}


def rule_code_for(rule: str) -> str:
    """Normalise a rule code or name to the code; ValueError when no recipe exists."""
    code = RULE_CODE_BY_NAME.get(rule, rule).upper()
    if code not in RECIPE_BY_RULE_CODE:
        known = ", ".join(f"{c} ({m.replace('_', '-')})" for c, m in sorted(RECIPE_BY_RULE_CODE.items()))
        raise ValueError(f"no verification recipe for rule {rule!r}; recipes exist for: {known}")
    return code
