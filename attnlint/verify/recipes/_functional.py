"""Shared machinery for recipes whose bug sits in how attention is *called* (ATN206-ATN209):
a fill that overflows in half precision, a causal flag next to a mask, a 0/1 mask added, dropout
left on at evaluation.

**Calling the code under test.** An entry that takes q, k, v first (a function, or a module whose
forward does) is called with (batch, heads, tokens, head_dim) tensors; any other module is called
with one (batch, tokens, d_in) tensor, ``d_in`` the first ``nn.Linear``'s ``in_features`` (or
``params["d_in"]``). Further parameters are filled by name:

* ``attention_mask``: long (batch, keys), 1 = real token (Hugging Face);
* ``mask`` / ``attn_mask`` / ``keep`` and the like: bool (batch, 1, 1, keys) in the convention
  ``params["mask_format"]`` names: ``keep`` (True = attend, the default) or ``masked`` (True = masked);
* ``key_padding_mask`` / ``pad_mask``: bool (batch, keys), True = padding;
* ``lengths``: the real lengths; ``training``: the mode; ``module``: an object whose ``training``
  is the mode (the Hugging Face convention), with ``params["module_attrs"]`` as attributes;
* anything in ``params["values"]`` (by parameter name) is passed as given.

**References.** float64 :func:`attnlint.verify.kernels.naive_attention` on the same q/k/v with the
witness's true mask (bool, True = may attend; causal parts as the recipe says), 1/sqrt(head_dim)
scale; compared with FlashAttention's rule (:mod:`attnlint.verify.tolerance`).

Runs only inside the verification child process.
"""

from __future__ import annotations

import inspect
import types
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

import torch
from torch import nn

from attnlint.verify.kernels import naive_attention
from attnlint.verify.recipes._masking import attempt, first_tensor
from attnlint.verify.tolerance import flash_rule

BATCH, HEADS, HEAD_DIM = 2, 2, 8
QKV_NAMES = (("q", "query", "queries", "xq"), ("k", "key", "keys", "xk"), ("v", "value", "values", "xv"))
KEEP_NAMES = ("mask", "attn_mask", "keep", "pad_keep", "memory_mask", "causal_mask")
PADDING_NAMES = ("key_padding_mask", "pad_mask", "padding_mask")


@dataclass
class Witness:
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    lengths: torch.Tensor
    keep: torch.Tensor  # bool (batch, keys), True = real key

    def key_mask(self) -> torch.Tensor:
        return self.keep[:, None, None, :]


def make_witness(seed: int, device: str, dtype: torch.dtype, n_q: int, n_k: int, lengths: Sequence[int]) -> Witness:
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(BATCH, HEADS, n, HEAD_DIM, generator=g, dtype=torch.float64) for n in (n_q, n_k, n_k))
    lengths_t = torch.tensor(list(lengths))
    keep = torch.arange(n_k)[None, :] < lengths_t[:, None]
    return Witness(*(t.to(device=device, dtype=dtype) for t in (q, k, v)), lengths_t.to(device), keep.to(device))


def positional_names(entry: Any) -> List[str]:
    target = entry.forward if isinstance(entry, nn.Module) else entry
    names = [p.name for p in inspect.signature(target).parameters.values() if p.kind != p.VAR_KEYWORD]
    return [n for n in names if n not in ("self", "args")]


def takes_qkv(entry: Any) -> bool:
    names = positional_names(entry)
    names = [n for n in names if n != "module"]
    return len(names) >= 3 and all(names[i].lower() in QKV_NAMES[i] for i in range(3))


def call_entry(entry: Any, w: Witness, params: Mapping[str, Any], *, training: bool = False) -> Any:
    """Call the entry on the witness (see the module docstring); returns its first tensor."""
    names = positional_names(entry)
    kwargs: Dict[str, Any] = {}
    fmt = params.get("mask_format", "keep")
    x = None
    if not takes_qkv(entry):
        d_in = params.get("d_in") or next(m.in_features for m in entry.modules() if isinstance(m, nn.Linear))
        g = torch.Generator().manual_seed(7)
        x = torch.randn(BATCH, w.k.size(-2), d_in, generator=g, dtype=torch.float64).to(w.q)
    for name in names:
        lowered = name.lower()
        if name in (params.get("values") or {}):  # given by the caller: wins over the witness
            kwargs[name] = params["values"][name]
        elif name == "module":
            kwargs[name] = types.SimpleNamespace(training=training, **dict(params.get("module_attrs") or {}))
        elif any(lowered in group for group in QKV_NAMES):
            kwargs[name] = {0: w.q, 1: w.k, 2: w.v}[next(i for i, g in enumerate(QKV_NAMES) if lowered in g)]
        elif name == "attention_mask":
            kwargs[name] = w.keep.long()
        elif name in KEEP_NAMES:
            kwargs[name] = w.key_mask() if _means_keep(fmt, name) else ~w.key_mask()
        elif name in PADDING_NAMES:
            kwargs[name] = ~w.keep
        elif name == "lengths":
            kwargs[name] = w.lengths
        elif name in ("training", "is_training"):
            kwargs[name] = training
        elif name in ("x", "hidden_states", "inputs") and x is not None:
            kwargs[name] = x
    if isinstance(entry, nn.Module):
        entry.train(training)
    return first_tensor(entry(**kwargs))


def _means_keep(fmt: Any, name: str) -> bool:
    """Does `name`'s True mean attend? `fmt` is one convention for every mask (`keep`/`masked`,
    given by hand) or, as the verifier passes what the analysis knows, a map from parameter name to
    its format (`sdpa_keep`, `keep`, `attention_mask`: True = attend; `key_padding`: True = masked)."""
    if isinstance(fmt, Mapping):
        fmt = fmt.get(name, "keep")
    return fmt in ("keep", "sdpa_keep", "attention_mask")


def run(entry: Any, w: Witness, params: Mapping[str, Any], *, training: bool = False, seed: Optional[int] = None):
    """`call_entry` as an Outcome (a crash is evidence), under a fixed RNG seed when given."""

    def go():
        if seed is not None:
            torch.manual_seed(seed)
        with torch.no_grad():
            return call_entry(entry, w, params, training=training)

    return attempt(go)


def reference(w: Witness, mask: Optional[torch.Tensor]) -> torch.Tensor:
    return naive_attention(w.q, w.k, w.v, attn_mask=mask)


def plain(w: Witness, mask: Optional[torch.Tensor]) -> torch.Tensor:
    return naive_attention(w.q, w.k, w.v, attn_mask=mask, compute_dtype=None)


def compare(trial, name: str, outcome, ref: torch.Tensor, out_plain: torch.Tensor, what: str) -> bool:
    """Add check `name`: the outcome ran and satisfies FlashAttention's rule against `ref`.

    The reference is attention over the witness's own q, k, v: it says something only of an entry
    that is given them. A module of x makes its own q, k, v with its projections, so its output
    and the reference share nothing; that is no evidence (a setup check: `not-run`), not a
    failed fix."""
    if not takes_qkv(trial.fixed):
        trial.add(
            "no_evidence",
            False,
            f"{what}: the entry takes no q, k, v (a module of x); verify the attention function or "
            "method it calls (FILE::Name) to compare against the reference",
        )
        return False
    if not outcome.ok:
        trial.add(name, False, f"{what}: {outcome.describe_error()}")
        return False
    out = outcome.value
    if not torch.isfinite(out).all():
        trial.add(name, False, f"{what}: non-finite output")
        return False
    result = flash_rule(out.to(ref.dtype) if out.dtype != ref.dtype else out, ref, out_plain.to(ref.dtype))
    trial.measure(f"{name}_max_error", result.max_error)
    trial.measure(f"{name}_bound", result.bound)
    trial.add(name, result.passed, f"{what}: max|out-ref|={result.max_error:.3e}, bound {result.bound:.3e}")
    return result.passed


def differs(trial, name: str, outcome, ref: torch.Tensor, out_plain: torch.Tensor, what: str) -> None:
    """Add check `name`: the original is wrong here (raises, non-finite, or off the reference).
    A module of x is always "off" a reference on other q, k, v: no evidence (see compare)."""
    if not takes_qkv(trial.original):
        trial.add("no_evidence", False, f"{what}: the entry takes no q, k, v (a module of x)")
        return
    if not outcome.ok:
        trial.add(name, True, f"{what}: the original raises ({outcome.describe_error()})")
        return
    out = outcome.value
    if not torch.isfinite(out).all():
        trial.add(name, True, f"{what}: the original gives non-finite values")
        return
    result = flash_rule(out.to(ref.dtype), ref, out_plain.to(ref.dtype))
    trial.measure(f"{name}_max_error", result.max_error)
    trial.add(
        name,
        not result.passed,
        f"{what}: the original is off the reference by {result.max_error:.3e} (bound {result.bound:.3e})",
    )


def bit_identical(trial, name: str, a, b, what: str) -> None:
    if not a.ok or not b.ok:
        bad = a if not a.ok else b
        trial.add(name, False, f"{what}: {bad.describe_error()}")
        return
    same = a.value.dtype == b.value.dtype and torch.equal(a.value, b.value)
    trial.add(name, same, f"{what}: {'torch.equal' if same else 'not torch.equal'}")


Verify = Callable[[Any], None]
