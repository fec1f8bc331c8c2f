"""Measure what ``F.scaled_dot_product_attention`` returns for a fully masked row, per backend/dtype.

ATN203 (all-masked-row-nan) stays silent on SDPA because SDPA is believed to return 0 for a row
whose keys are all masked. That is a fact about a torch build, a device, a backend and a dtype, so it
is *measured*, never assumed:

    python -m attnlint.verify.sdpa_semantics            # prints the table for cpu (+ cuda if present)
    python -m attnlint.verify.sdpa_semantics --device cuda --json

Each row: device, backend (math, flash, efficient, cudnn), dtype, mask kind (``bool``: False =
masked; ``-inf``: an additive float mask), and the answer for the fully masked row: ``zero``,
``nan``, ``mean`` (uniform weights: the mean of V, what a finite fill gives), ``other``, or
``unsupported`` (the backend refuses these inputs), plus whether the gradients are finite. The
committed answers live in :mod:`attnlint.verify.sdpa_measured`; a test re-measures the CPU table on
every run, and ``pytest -m cuda`` the CUDA one.

Runs wherever torch is importable (the verifier runs it in a child when asked).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Dict, List, Optional, Sequence

DTYPES_BY_DEVICE = {"cpu": ("float64", "float32", "float16", "bfloat16"), "cuda": ("float32", "float16", "bfloat16")}
MASK_KINDS = ("bool", "-inf")


def measure(device: str, dtypes: Optional[Sequence[str]] = None) -> List[Dict[str, Any]]:
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import sdpa_kernel

    from attnlint.verify.kernels import SDPA_BACKENDS
    from attnlint.verify.tolerance import exact_fp32_matmul

    rows: List[Dict[str, Any]] = []
    generator = torch.Generator().manual_seed(0)
    # batch 2, heads 2, 8 queries/keys, head dim 16 (a size every fused kernel accepts); sequence
    # 1 of the batch is empty (every key masked), sequence 0 has 5 real keys.
    shape = (2, 2, 8, 16)
    base = [torch.randn(shape, generator=generator, dtype=torch.float64) for _ in range(3)]
    keep = torch.zeros(2, 8, dtype=torch.bool)
    keep[0, :5] = True
    for dtype_name in dtypes or DTYPES_BY_DEVICE.get(device.split(":")[0], ()):
        dtype = getattr(torch, dtype_name)
        for backend, sdp_backend in SDPA_BACKENDS.items():
            for kind in MASK_KINDS:
                row = {"device": device.split(":")[0], "backend": backend, "dtype": dtype_name, "mask": kind}
                q, k, v = (t.to(device=device, dtype=dtype).detach().requires_grad_(True) for t in base)
                mask = keep.to(device)[:, None, None, :].expand(2, 2, 8, 8)
                if kind == "-inf":
                    mask = torch.zeros(mask.shape, dtype=dtype, device=device).masked_fill(~mask, float("-inf"))
                try:
                    guard = exact_fp32_matmul() if device.startswith("cuda") else _null()
                    with guard, sdpa_kernel([sdp_backend]):
                        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
                        out.sum().backward()
                except Exception as exc:  # noqa: BLE001 - this backend refuses these inputs
                    row.update(answer="unsupported", grad_finite=None, why=f"{type(exc).__name__}: {str(exc)[:120]}")
                    rows.append(row)
                    continue
                empty = out[1].detach().double().cpu()
                mean_v = v[1].detach().double().cpu().mean(dim=-2, keepdim=True).expand_as(empty)
                if torch.isnan(empty).any():
                    answer = "nan"
                elif torch.equal(empty, torch.zeros_like(empty)):
                    answer = "zero"
                elif torch.allclose(empty, mean_v, atol=1e-2):
                    answer = "mean"
                else:
                    answer = "other"
                grads = [t.grad for t in (q, k, v)]
                row.update(
                    answer=answer, grad_finite=all(g is not None and bool(torch.isfinite(g).all()) for g in grads)
                )
                rows.append(row)
    return rows


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def fully_masked_rows_are_zero(rows: Sequence[Dict[str, Any]]) -> bool:
    """The condition for ATN203's SDPA exemption: every backend that runs returns 0 there, with
    finite gradients, for both mask kinds."""
    ran = [r for r in rows if r["answer"] != "unsupported"]
    return bool(ran) and all(r["answer"] == "zero" and r["grad_finite"] for r in ran)


def render(rows: Sequence[Dict[str, Any]]) -> str:
    lines = [f"{'device':6} {'backend':10} {'dtype':9} {'mask':5} {'answer':12} grad finite"]
    for r in rows:
        lines.append(
            f"{r['device']:6} {r['backend']:10} {r['dtype']:9} {r['mask']:5} {r['answer']:12} {r['grad_finite']}"
        )
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    import torch

    parser = argparse.ArgumentParser(
        prog="python -m attnlint.verify.sdpa_semantics", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--device", action="append", help="cpu, cuda (default: cpu, and cuda when present)")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args(argv)
    devices = args.device or (["cpu"] + (["cuda"] if torch.cuda.is_available() else []))
    rows = [row for device in devices for row in measure(device)]
    if args.json:
        print(json.dumps({"torch": torch.__version__, "rows": rows}, indent=1))
    else:
        print(f"torch {torch.__version__}")
        print(render(rows))
        print(f"fully masked rows are 0 everywhere measured: {fully_masked_rows_are_zero(rows)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
