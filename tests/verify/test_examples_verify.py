"""Every finding on the bundled examples is fixed and the fix proven by running it (CPU).

This is what `attnlint verify CODE FILE --entry NAME` does for a user: other findings in the file
are fixed first, so the evidence is about this rule's fix alone; the analysis tells the recipe
what it knows (a causal mask, a q/k/v function).
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")

from attnlint.verify import verify_fix  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

CASES = [
    ("ATN101", "multihead_attention.py", "MultiHeadAttention"),
    ("ATN102", "causal_attention.py", "CausalAttention"),
    ("ATN103", "self_attention_v1.py", "SelfAttentionV1"),
    ("ATN201", "padded_batch.py", "sequence_loss"),
    ("ATN202", "padded_batch.py", "Encoder"),
    ("ATN203", "padded_batch.py", "attention"),
    ("ATN204", "causal_attention.py", "CausalAttention"),
    ("ATN205", "padded_batch.py", "causal_sdpa"),
]


@pytest.mark.parametrize("code,filename,entry", CASES, ids=[c[0] for c in CASES])
def test_example_fix_is_verified(code, filename, entry):
    source = (EXAMPLES / filename).read_text(encoding="utf-8")
    reports = verify_fix(code, source, entry=entry, devices=("cpu",))
    assert [(r.device, r.dtype) for r in reports] == [("cpu", "float64"), ("cpu", "float32")]
    for report in reports:
        assert report.ok, report.summary()
        # The evidence includes the bug: something must show the original wrong (or crashing).
        failing_original = [c for c in report.checks if "original" in c.name]
        assert failing_original, report.summary()


def test_every_rule_has_an_example_case():
    from attnlint.rules import registry

    from attnlint.verify.recipes import RECIPE_BY_RULE_CODE

    # ATN100 (unused-noqa) edits comments only: nothing to run, no recipe.
    assert sorted(c[0] for c in CASES) == [r.code for r in registry.all_rules() if r.code in RECIPE_BY_RULE_CODE]
