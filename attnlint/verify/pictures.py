"""The attention weights a reviewer looks at: original, fixed and reference, on one telling input.

Runs in the verification child after the recipe (``request["pictures"]``). The weights are not an
output of user code, so they are *recorded*: while the entry runs, every softmax (``torch.softmax``,
``Tensor.softmax``, and so ``F.softmax``/``nn.Softmax``) and every ``F.scaled_dot_product_attention``
call (weights recomputed from its q, k, mask, causal flag and scale, fully masked rows 0 as SDPA
returns them) is kept; the last one is the attention of the entry's last layer. The reference's
weights come from the float64 reference kernel itself (:data:`attnlint.verify.kernels.WEIGHT_OBSERVERS`).

The input is the rule family's witness: a padded batch (lengths T, 4 and 0, left padded) when the
entry takes a mask, else one sequence of 7 tokens; the batch element shown is the one where the
original's and the fixed weights differ most (a NaN counts as the largest difference), head 0.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any, Dict, Iterator, List, Mapping, Optional

import torch
import torch.nn.functional as F

from attnlint.verify import kernels
from attnlint.verify.recipes import _masking, _score_softmax
from attnlint.verify.recipes._harness import Trial, attempt, build_entries

TOKENS = 7
PADDED_LENGTHS = (TOKENS, 4, 0)


@contextlib.contextmanager
def recorded_weights() -> Iterator[List[torch.Tensor]]:
    """Every attention-weight tensor computed inside the block, in order."""
    seen: List[torch.Tensor] = []
    tensor_softmax, torch_softmax, sdpa = torch.Tensor.softmax, torch.softmax, F.scaled_dot_product_attention

    def keep(weights: torch.Tensor) -> torch.Tensor:
        if isinstance(weights, torch.Tensor) and weights.dim() >= 2:
            seen.append(weights.detach().to(torch.float64).cpu())
        return weights

    def tensor_softmax_recorded(self, *args, **kwargs):
        return keep(tensor_softmax(self, *args, **kwargs))

    def torch_softmax_recorded(*args, **kwargs):
        return keep(torch_softmax(*args, **kwargs))

    def sdpa_recorded(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, **kwargs):
        out = sdpa(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, scale=scale, **kwargs)
        with torch.no_grad():
            seen.append(_sdpa_weights(q, k, attn_mask, is_causal, scale))
        return out

    def used(weights: Any) -> None:
        # What multiplies the values is what the entry attends with: a softmax followed by
        # `masked_fill`/`nan_to_num`/`where` is drawn as it is used, not as the softmax returned it.
        if seen and isinstance(weights, torch.Tensor) and weights.shape == seen[-1].shape:
            seen[-1] = weights.detach().to(torch.float64).cpu()

    def matmul_recorded(self, other):
        used(self)
        return tensor_matmul(self, other)

    def torch_matmul_recorded(a, b, *args, **kwargs):
        used(a)
        return torch_matmul(a, b, *args, **kwargs)

    def einsum_recorded(equation, *operands, **kwargs):
        for operand in operands[0] if len(operands) == 1 and isinstance(operands[0], (list, tuple)) else operands:
            used(operand)
        return einsum(equation, *operands, **kwargs)

    tensor_matmul, torch_matmul, einsum = torch.Tensor.__matmul__, torch.matmul, torch.einsum
    patches = {
        (torch.Tensor, "softmax"): tensor_softmax_recorded,
        (torch, "softmax"): torch_softmax_recorded,
        (F, "scaled_dot_product_attention"): sdpa_recorded,
        (torch.Tensor, "__matmul__"): matmul_recorded,
        (torch, "matmul"): torch_matmul_recorded,
        (torch, "einsum"): einsum_recorded,
    }
    saved = {key: getattr(*key) for key in patches}
    for (owner, name), replacement in patches.items():
        setattr(owner, name, replacement)
    try:
        yield seen
    finally:
        for (owner, name), value in saved.items():
            setattr(owner, name, value)


def _sdpa_weights(q, k, attn_mask, is_causal, scale) -> torch.Tensor:
    q, k = q.detach().to(torch.float64), k.detach().to(torch.float64)
    scale = 1.0 / math.sqrt(q.size(-1)) if scale is None else scale
    scores = (q @ k.transpose(-2, -1)) * scale
    allowed = torch.ones(scores.shape[-2:], dtype=torch.bool, device=scores.device)
    if is_causal:
        allowed = allowed.tril()
    allowed = allowed.expand_as(scores)
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            allowed = allowed & attn_mask
        else:
            scores = scores + attn_mask.to(torch.float64)
    scores = scores.masked_fill(~allowed, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return torch.where(~allowed.any(dim=-1, keepdim=True), torch.zeros((), dtype=weights.dtype), weights).cpu()


def _matrix(weights: torch.Tensor, batch: int) -> torch.Tensor:
    """(n_q, n_k) of batch element ``batch``, head 0, whatever the rank."""
    while weights.dim() > 3:
        weights = weights[:, 0] if weights.dim() == 4 else weights[:, 0, ...]
    return weights[min(batch, weights.shape[0] - 1)] if weights.dim() == 3 else weights


def attention_pictures(request: Mapping[str, Any]) -> Dict[str, Any]:
    """``{"original": rows | None, "original_error": str | None, "fixed": ..., "reference": ...,
    "input": text, "batch_index": i}``, or ``{"unavailable": why}``."""
    params: Mapping[str, Any] = request.get("params") or {}
    seed = int(request.get("seed", 0))
    try:
        entries = build_entries(request, params, seed)
    except Exception as exc:  # noqa: BLE001
        return {"unavailable": str(exc)}
    dtype = torch.float64
    original, fixed = entries.original, entries.fixed
    if entries.is_module:
        original, fixed = original.to(dtype), fixed.to(dtype)
    trial = Trial(
        request.get("rule_code", ""), "cpu", "float64", dtype, seed, params, original, fixed, entries.is_module
    )
    try:
        protocol = _masking.find_protocol(original, params, needs_mask=False)
        if protocol.mask_arg is not None or protocol.call == "qkv":
            golden = _masking.make_golden(trial, protocol)
            lengths = PADDED_LENGTHS if protocol.mask_arg is not None else (TOKENS,)
            witness = _masking.make_witness(trial, protocol, golden, lengths, "left")
            inputs, keep = witness.inputs, (witness.keep if protocol.mask_arg is not None else None)
            described = f"{witness.name}, {protocol.describe()}" if keep is not None else f"q/k/v {witness.shape}"

            def run(entry):
                return protocol.invoke(entry, inputs, keep)

            def reference():
                return golden.run(inputs, keep, compute_dtype=dtype, kernel="naive")

        else:
            spec = _score_softmax.build_spec(original, params)
            x = _score_softmax.make_input((1, TOKENS, spec.d_in), seed, "cpu", dtype)
            described = f"one sequence {tuple(x.shape)}, {spec.describe()}"

            def run(entry):
                return entry(x)

            def reference():
                return _score_softmax.attention_from_params(original, x, spec, dtype)

    except Exception as exc:  # noqa: BLE001 - e.g. a loss function: no attention to draw
        return {
            "unavailable": f"no attention weights to draw: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
        }

    result: Dict[str, Any] = {"input": described}
    recorded: Dict[str, Optional[torch.Tensor]] = {}
    for name, entry in (("original", original), ("fixed", fixed)):
        with recorded_weights() as seen, torch.no_grad():
            outcome = attempt(lambda: run(entry))
        recorded[name] = seen[-1] if seen else None
        result[f"{name}_error"] = None if outcome.ok else outcome.describe_error()
        if outcome.ok and not seen:
            result[f"{name}_error"] = "ran, but no softmax or SDPA call was seen"
    observed: List[torch.Tensor] = []
    kernels.WEIGHT_OBSERVERS.append(lambda w: observed.append(w.detach().to(torch.float64).cpu()))
    try:
        with torch.no_grad():
            ref = attempt(reference)
    finally:
        kernels.WEIGHT_OBSERVERS.clear()
    recorded["reference"] = observed[-1] if observed else None
    result["reference_error"] = None if ref.ok else ref.describe_error()
    batch = _most_different_batch(recorded.get("original"), recorded.get("fixed"))
    result["batch_index"] = batch
    for name, weights in recorded.items():
        result[name] = None if weights is None else _matrix(weights, batch).tolist()
    return result


def _most_different_batch(a: Optional[torch.Tensor], b: Optional[torch.Tensor]) -> int:
    if a is None or b is None or a.dim() < 3 or a.shape != b.shape:
        return 1 if a is not None and a.dim() >= 3 and a.shape[0] > 1 else 0
    one_nan = torch.isnan(a) ^ torch.isnan(b)  # NaN in one of them is the largest difference there is
    diff = torch.where(one_nan, float("inf"), (a - b).abs().nan_to_num(nan=0.0))
    per_batch = diff.flatten(1).max(dim=1).values
    return int(per_batch.argmax())
