"""Recipe for ATN104 wrong-attention-scale: scores scaled, but not by 1/sqrt(head_dim).

The bug is silent (a softmax that is too flat or too sharp). The per-head float64 reference of
:mod:`attnlint.verify.recipes._score_softmax` uses ``head_dim ** -0.5`` with the module's own
parameters: the original (scaled by the model width, by ``sqrt(d)``, by ``1/d``) fails it on the
witness, the fixed module must satisfy it. A "fix" that scales by the model width again (the bug
this rule reports) is rejected by the same reference. Runs only inside the verification child.

With one head the model width *is* the head dimension and the bug cannot show, so a head count
the constructor needs (no default) and the user does not give is 2 here, not the usual 1.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping

from attnlint.verify.loading import HEAD_COUNT_NAMES
from attnlint.verify.recipes._score_softmax import run_recipe

RULE_CODE = "ATN104"


TWO_HEADS = {name: 2 for name in HEAD_COUNT_NAMES}


def run(request: Mapping[str, Any]) -> List[Dict[str, Any]]:
    return run_recipe(request, RULE_CODE, invisible_on_single_token=True, usual_values=TWO_HEADS)
