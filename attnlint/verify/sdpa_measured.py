"""What SDPA returns for a fully masked row, as measured (torch-free; the linter may read it).

Produced by ``python -m attnlint.verify.sdpa_semantics --json`` (:mod:`attnlint.verify.sdpa_semantics`)
and checked on every test run for the CPU (``tests/verify/test_sdpa_semantics.py``); the CUDA rows
are added from ``pytest -m cuda`` on a GPU (that test prints the rows to paste here). Rows:
(device, backend, dtype, mask kind, answer, gradients finite); backends that refuse the inputs are
left out.

ATN203's SDPA exemption holds for a device only when every measured row there answers ``zero`` with
finite gradients (:func:`fully_masked_rows_are_zero`); a device with no rows is *unknown*.
"""

from __future__ import annotations

from typing import Dict, Optional, Sequence, Tuple

Row = Tuple[str, str, str, str, str, bool]

MEASURED: Dict[str, Tuple[Row, ...]] = {
    # torch version -> rows
    "2.13.0": (
        ("cpu", "math", "float64", "bool", "zero", True),
        ("cpu", "math", "float64", "-inf", "zero", True),
        ("cpu", "flash", "float64", "bool", "zero", True),
        ("cpu", "flash", "float64", "-inf", "zero", True),
        ("cpu", "math", "float32", "bool", "zero", True),
        ("cpu", "math", "float32", "-inf", "zero", True),
        ("cpu", "flash", "float32", "bool", "zero", True),
        ("cpu", "flash", "float32", "-inf", "zero", True),
        ("cpu", "math", "float16", "bool", "zero", True),
        ("cpu", "math", "float16", "-inf", "zero", True),
        ("cpu", "flash", "float16", "bool", "zero", True),
        ("cpu", "flash", "float16", "-inf", "zero", True),
        ("cpu", "math", "bfloat16", "bool", "zero", True),
        ("cpu", "math", "bfloat16", "-inf", "zero", True),
        ("cpu", "flash", "bfloat16", "bool", "zero", True),
        ("cpu", "flash", "bfloat16", "-inf", "zero", True),
    ),
}


def rows_for(torch_version: str, device: Optional[str] = None) -> Tuple[Row, ...]:
    rows = MEASURED.get(torch_version.split("+")[0], ())
    return tuple(r for r in rows if device is None or r[0] == device)


def fully_masked_rows_are_zero(torch_version: str, devices: Sequence[str] = ("cpu",)) -> Optional[bool]:
    """True when SDPA returned exactly 0 (finite gradients) for a fully masked row on every measured
    backend, dtype and mask kind of ``devices``; False when some row says otherwise (e.g. NaN in
    fp16 on CUDA); None when a device was never measured for this torch version."""
    verdict = True
    for device in devices:
        rows = rows_for(torch_version, device)
        if not rows:
            return None
        verdict &= all(answer == "zero" and grad_finite for *_, answer, grad_finite in rows)
    return verdict
