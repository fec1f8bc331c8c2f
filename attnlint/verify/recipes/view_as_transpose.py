"""Recipe for ATN106 view-as-transpose: a view/reshape that swaps axes in size, not in memory.

A module that splits its heads (or its tokens) by a view mixes positions with features: its
output fails the per-head float64 reference of :mod:`attnlint.verify.recipes._score_softmax`
(q/k/v from the module's own projections, split as ``view(b, n, h, d).transpose(1, 2)``). The
fixed module must satisfy it; a fix that keeps the view (or transposes the wrong axes) does not.
Runs only inside the verification child process.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping

from attnlint.verify.recipes._score_softmax import run_recipe

RULE_CODE = "ATN106"


def run(request: Mapping[str, Any]) -> List[Dict[str, Any]]:
    return run_recipe(request, RULE_CODE, invisible_on_single_token=True, loud_original_counts=True)
