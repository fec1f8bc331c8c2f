"""Reference attention kernels the harness compares user code against.

Two references, because each catches what the other cannot:

* :func:`sdpa_reference` is PyTorch's own ``scaled_dot_product_attention`` -- the semantics users
  mean. It is always called with a *bool* mask (True = may attend) and never with ``attn_mask``
  together with ``is_causal``: the MATH backend raises on that pair and the CPU flash backend silently
  ANDs them, so we fold the causal mask into the bool mask ourselves and pin the backend.
* :func:`naive_attention` is ``softmax(q k^T * scale + mask) v`` written out, computed in float64 by
  default (the "golden" reference) or in the test dtype (FlashAttention's ``out_pt``, the bound for
  what a plain implementation in that dtype can reach; see :mod:`attnlint.verify.tolerance`).
  Fully masked rows are defined as 0, as SDPA 2.13 returns them, and the definition is
  backward-safe: ``masked_fill(-inf)`` then ``where`` (an additive ``-inf`` mask would leave NaN in
  the q/k gradients).

Imported only inside the verification child process (or tests): ``import attnlint`` never pulls in
torch.
"""

from __future__ import annotations

import math
from typing import Callable, List, Optional

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

GOLDEN_DTYPE = torch.float64

# SDPA backends by the name the harness reports them under.
SDPA_BACKENDS = {
    "math": SDPBackend.MATH,
    "flash": SDPBackend.FLASH_ATTENTION,
    "efficient": SDPBackend.EFFICIENT_ATTENTION,
    "cudnn": SDPBackend.CUDNN_ATTENTION,
}


def combined_bool_mask(
    n_queries: int,
    n_keys: int,
    *,
    attn_mask: Optional[torch.Tensor] = None,
    causal: bool = False,
    device: Optional[torch.device] = None,
) -> Optional[torch.Tensor]:
    """One bool mask (True = may attend) from an optional bool mask and a causal flag.

    The causal part is top-left aligned (query i sees keys 0..i), as SDPA's ``is_causal``.
    """
    if attn_mask is not None and attn_mask.dtype != torch.bool:
        raise TypeError("reference kernels take bool masks only (True = may attend)")
    mask = attn_mask
    if causal:
        tril = torch.ones(n_queries, n_keys, dtype=torch.bool, device=device).tril()
        mask = tril if mask is None else (mask & tril)
    return mask


def sdpa_reference(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    attn_mask: Optional[torch.Tensor] = None,
    causal: bool = False,
    scale: Optional[float] = None,
    backend: str = "math",
) -> torch.Tensor:
    """``F.scaled_dot_product_attention`` on one pinned backend, causal folded into a bool mask."""
    mask = combined_bool_mask(q.size(-2), k.size(-2), attn_mask=attn_mask, causal=causal, device=q.device)
    with sdpa_kernel([SDPA_BACKENDS[backend]]):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=0.0, is_causal=False, scale=scale)


# Called with the final weights of every naive_attention call while non-empty (the report's heat
# maps of the reference); empty, as always outside a picture, it costs nothing.
WEIGHT_OBSERVERS: List[Callable[[torch.Tensor], None]] = []


def _observe(weights: torch.Tensor) -> None:
    for observer in WEIGHT_OBSERVERS:
        observer(weights)


def naive_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    attn_mask: Optional[torch.Tensor] = None,
    causal: bool = False,
    scale: Optional[float] = None,
    compute_dtype: Optional[torch.dtype] = GOLDEN_DTYPE,
) -> torch.Tensor:
    """``softmax(q k^T * scale + mask) v`` in ``compute_dtype`` (None: the inputs' own dtype).

    The result stays in ``compute_dtype``. Scale defaults to ``1/sqrt(q.size(-1))`` like SDPA.
    """
    if compute_dtype is not None:
        q, k, v = q.to(compute_dtype), k.to(compute_dtype), v.to(compute_dtype)
    if scale is None:
        scale = 1.0 / math.sqrt(q.size(-1))
    scores = (q @ k.transpose(-2, -1)) * scale
    mask = combined_bool_mask(q.size(-2), k.size(-2), attn_mask=attn_mask, causal=causal, device=q.device)
    if mask is None:
        weights = torch.softmax(scores, dim=-1)
        _observe(weights)
        return weights @ v
    scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    fully_masked = ~mask.any(dim=-1, keepdim=True)
    weights = torch.where(fully_masked, torch.zeros((), dtype=weights.dtype, device=weights.device), weights)
    _observe(weights)
    return weights @ v
