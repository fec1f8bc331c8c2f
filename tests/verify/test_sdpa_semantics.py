"""SDPA on a fully masked row: the committed answer table is what this torch build really does.

ATN203's exemption for SDPA follows :mod:`attnlint.verify.sdpa_measured`; this test re-measures
the CPU rows on every run, so a torch upgrade that changes the answer fails here, not silently in
the linter. The CUDA rows are measured by ``pytest -m cuda`` (tests/verify/test_cuda_matrix.py).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")


def test_cpu_answers_match_the_committed_table():
    from attnlint.verify.sdpa_measured import fully_masked_rows_are_zero, rows_for
    from attnlint.verify.sdpa_semantics import measure

    committed = rows_for(torch.__version__, "cpu")
    if not committed:
        pytest.skip(f"no committed rows for torch {torch.__version__}: run python -m attnlint.verify.sdpa_semantics")
    measured = tuple(
        (r["device"], r["backend"], r["dtype"], r["mask"], r["answer"], r["grad_finite"])
        for r in measure("cpu")
        if r["answer"] != "unsupported"
    )
    assert measured == committed
    assert fully_masked_rows_are_zero(torch.__version__, ("cpu",)) is True
    assert fully_masked_rows_are_zero(torch.__version__, ("cpu", "cuda")) in (None, True, False)
