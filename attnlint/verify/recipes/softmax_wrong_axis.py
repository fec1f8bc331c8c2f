"""Recipe for ATN102 softmax-wrong-axis: the softmax over attention scores normalises another axis.

The bug is silent: weights between 0 and 1 come out, but they sum to one over queries (``dim=1`` on
``(b, n_q, n_k)`` scores, or ``dim=-1`` on key-major ``k @ qᵀ`` scores), heads or batch elements
instead of over the keys, so every query mixes the values with the wrong weights. The fix sets the
softmax ``dim`` (or the ``nn.Softmax(dim=...)`` built in ``__init__``) to the key axis.

Where the bug cannot be seen: when the wrong axis has size 1. For the usual case, a token axis, that
is ``n_q = n_k = 1`` -- recorded on every run as ``single_token_bug_visible`` (0 there) and
``single_token_original_equals_fixed`` (1); not a pass/fail check, because a softmax over the heads
axis is wrong even for one token (``single_token_bug_visible`` is 1 then). A witness of one token
(``params["witness"] = {"tokens": 1}``) makes ``witness_original_silently_wrong`` fail: the tests use
that to show the witness matters.

Common checks and the reference: :mod:`attnlint.verify.recipes._score_softmax`.
Runs only inside the verification child process.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping

from attnlint.verify.recipes._score_softmax import run_recipe

RULE_CODE = "ATN102"


def run(request: Mapping[str, Any]) -> List[Dict[str, Any]]:
    return run_recipe(request, RULE_CODE)
