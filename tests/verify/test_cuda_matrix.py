"""The GPU matrix: every SDPA backend x fp32 (TF32 off) / fp16 / bf16, forward and backward.

Run on a machine with a GPU as one command:

    pytest -m cuda tests/verify -rs -s

(``-s`` prints the fully-masked-row answer table to paste into attnlint/verify/sdpa_measured.py.)
Without CUDA every test here skips (CUDA is only queried inside the tests, never at import).

The bound is FlashAttention's: ``max|out - ref| <= 2 * max|out_pt - ref| + floor``, ``ref`` the
float64 naive kernel on the same low-precision inputs and ``out_pt`` the naive kernel in the test
dtype (:mod:`attnlint.verify.tolerance`); gradients the same way.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.cuda

BACKENDS = ("math", "flash", "efficient", "cudnn")
DTYPES = ("float32", "float16", "bfloat16")
ROOT = Path(__file__).resolve().parents[2]


def require_cuda():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device: torch.cuda.is_available() is False")


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("dtype_name", DTYPES)
@pytest.mark.parametrize("backend", BACKENDS)
def test_sdpa_backend_meets_flash_attention_rule(backend, dtype_name, causal):
    require_cuda()
    import torch.nn.functional as F
    from torch.nn.attention import sdpa_kernel

    from attnlint.verify.kernels import SDPA_BACKENDS, naive_attention
    from attnlint.verify.tolerance import exact_fp32_matmul, flash_rule

    dtype = getattr(torch, dtype_name)
    generator = torch.Generator().manual_seed(0)
    shape = (2, 4, 128, 64)
    leaves = [
        torch.randn(shape, generator=generator, dtype=torch.float64).to("cuda", dtype).requires_grad_(True)
        for _ in range(3)
    ]
    upstream = torch.randn(shape, generator=generator, dtype=torch.float64).to("cuda")
    with exact_fp32_matmul():
        try:
            with sdpa_kernel([SDPA_BACKENDS[backend]]):
                out = F.scaled_dot_product_attention(*leaves, is_causal=causal)
                grads = torch.autograd.grad(out, leaves, upstream.to(dtype))
        except RuntimeError as exc:
            pytest.skip(f"{backend} does not run {dtype_name} here: {str(exc)[:100]}")
        golden_leaves = [t.detach().double().requires_grad_(True) for t in leaves]
        golden = naive_attention(*golden_leaves, causal=causal)
        golden_grads = torch.autograd.grad(golden, golden_leaves, upstream)
        plain_leaves = [t.detach().clone().requires_grad_(True) for t in leaves]
        plain = naive_attention(*plain_leaves, causal=causal, compute_dtype=None)
        plain_grads = torch.autograd.grad(plain, plain_leaves, upstream.to(dtype))
    forward = flash_rule(out, golden, plain)
    print(f"{backend} {dtype_name} causal={causal}: out {forward.describe()}")
    assert forward.passed, forward.describe()
    for name, g, gr, gp in zip("qkv", grads, golden_grads, plain_grads):
        backward = flash_rule(g, gr, gp)
        print(f"{backend} {dtype_name} causal={causal}: d{name} {backward.describe()}")
        assert backward.passed, f"d{name}: {backward.describe()}"


def test_fully_masked_row_answer_table():
    """Per backend and dtype: does SDPA return 0 or NaN for a fully masked row on this GPU?"""
    require_cuda()
    from attnlint.verify.sdpa_measured import rows_for
    from attnlint.verify.sdpa_semantics import fully_masked_rows_are_zero, measure, render

    rows = measure("cuda")
    print("\n" + render(rows))
    print(
        json.dumps(
            [
                [r["device"], r["backend"], r["dtype"], r["mask"], r["answer"], r["grad_finite"]]
                for r in rows
                if r["answer"] != "unsupported"
            ]
        )
    )
    print(f"fully masked rows are 0 on CUDA: {fully_masked_rows_are_zero(rows)}")
    ran = [r for r in rows if r["answer"] != "unsupported"]
    assert any(r["backend"] == "math" for r in ran), "the math backend must run everywhere"
    committed = rows_for(torch.__version__, "cuda")
    if committed:  # once the rows are pasted into sdpa_measured.py, they must stay true
        measured = tuple((r["device"], r["backend"], r["dtype"], r["mask"], r["answer"], r["grad_finite"]) for r in ran)
        assert measured == committed


def test_verify_examples_on_cuda():
    """Every fixable finding on the examples verifies on CUDA in fp32 (TF32 off), fp16 and bf16."""
    require_cuda()
    proc = subprocess.run(
        [sys.executable, "-m", "attnlint", "verify", "examples/", "--device", "cuda", "--output-format", "json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    records = json.loads(proc.stdout)
    for record in records:
        print(
            record["code"],
            record["entry"],
            record["verdict"],
            [(r["dtype"], r["max_error"], r["bound"]) for r in record["runs"]],
        )
    assert all(record["verdict"] in ("verified", "equivalent") for record in records), proc.stdout
    assert {r["dtype"] for record in records for r in record["runs"]} == set(DTYPES)
