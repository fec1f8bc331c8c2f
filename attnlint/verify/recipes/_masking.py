"""Shared machinery for the masking recipes (ATN201-ATN205).

Masking bugs only show on the right witnesses (docs/verify.md): padded batches
with sequences of lengths {T, T-2, 1, 0}, left *and* right padding, garbage in the padded slots,
fully masked rows (an empty sequence, or left padding under a causal mask), inputs shorter than a
mask buffer. This module builds those witnesses and the references the recipes compare against.

**Calling the code under test.** An entry is an ``nn.Module`` class (built from one seed, the fixed
copy loaded strictly with the original's weights, see :mod:`attnlint.verify.loading`) or a plain
function. Attention entries are called as ``forward(x, <mask>=mask)`` (``x``: (batch, tokens,
d_in)) or, with ``params["call"] == "qkv"``, as ``entry(q, k, v, <mask>=mask)`` with
(batch, heads, tokens, head_dim) tensors. The mask argument is found by name
(``key_padding_mask``, ``padding_mask``, ``src_key_padding_mask``, ``attention_mask``,
``attn_mask``, ...) or given as ``params["mask_arg"]``; its format follows the name's convention
or ``params["mask_format"]``:

* ``key_padding``: bool (batch, tokens), True = padding (``nn.MultiheadAttention``);
* ``attention_mask``: long (batch, tokens), 1 = real token (Hugging Face);
* ``keep``: bool (batch, tokens), True = real token;
* ``sdpa_keep``: bool (batch, 1, 1, tokens), True = may attend (SDPA's ``attn_mask``).

**References.** Always float64, from the *original* module's parameters, never from the code under
judgement, and always with a correct bool mask (True = may attend; causal folded into it, never
``attn_mask`` together with ``is_causal``). Fully masked rows are 0, as SDPA 2.13 returns them:

* a module holding ``nn.MultiheadAttention`` submodules: a float64 copy of the *original* module in
  which every ``nn.MultiheadAttention`` is replaced by a shim that computes the same projections
  from its ``in_proj``/``out_proj`` parameters and attends with the witness's true mask through the
  float64 naive kernel or float64 SDPA (MATH backend). The code around the attention (residuals,
  norms, feed-forward) is the original's, which the masking rules do not touch;
* a hand-written attention module: the per-head reference of
  :mod:`attnlint.verify.recipes._score_softmax` (q/k/v and output projections found by name),
  with the mask;
* q/k/v functions: the kernels of :mod:`attnlint.verify.kernels` on the same q/k/v.

Every comparison uses FlashAttention's rule (:mod:`attnlint.verify.tolerance`) with a same-dtype
naive kernel as ``out_pt``; where the old code was already right, ``torch.equal``.

Runs only inside the verification child process.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F
from torch import nn

from attnlint.verify.kernels import naive_attention, sdpa_reference
from attnlint.verify.recipes import _score_softmax as common
from attnlint.verify.recipes._mask_names import known_mask_names, mask_format_for_name  # noqa: F401
from attnlint.verify.recipes._harness import Outcome, References, Trial, attempt, run_trials  # noqa: F401
from attnlint.verify.tolerance import Comparison, flash_rule, max_abs_diff  # noqa: F401 - re-exported

# The padded-batch witness: T, T - 2, 1 and 0 real tokens, padded to T.
WITNESS_TOKENS = 7
WITNESS_LENGTHS = (7, 5, 1, 0)
SIDES = ("right", "left")
# Garbage in the padded slots: large, finite, and different between the two draws.
GARBAGE_SCALE = 10.0
GARBAGE_SEEDS = (101, 202)

MASK_FORMATS = ("key_padding", "attention_mask", "keep", "sdpa_keep")


# ---------------------------------------------------------------------------------------------
# The driver: the one harness. ``Context`` is its ``Trial`` (the name the masking recipes use).
# ---------------------------------------------------------------------------------------------
Context = Trial


def run_recipe(
    request: Mapping[str, Any], rule_code: str, verify_on: Callable[[Context], None]
) -> List[Dict[str, Any]]:
    """Load both sources, then run ``verify_on`` once per device and dtype; one report dict each."""
    return run_trials(request, rule_code, verify_on)


# ---------------------------------------------------------------------------------------------
# Running code that may raise
# ---------------------------------------------------------------------------------------------
def first_tensor(out: Any) -> Any:
    return out[0] if isinstance(out, (tuple, list)) and out else out


def generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(int(seed))


def randn(shape: Sequence[int], seed: int, device: str, dtype: torch.dtype, scale: float = 1.0) -> torch.Tensor:
    """Drawn in float64 on the CPU, then rounded: every dtype and device sees the same values."""
    t = torch.randn(tuple(shape), generator=generator(seed), dtype=torch.float64) * scale
    return t.to(device=device, dtype=dtype)


# ---------------------------------------------------------------------------------------------
# Padded-batch witnesses
# ---------------------------------------------------------------------------------------------
def keep_mask(lengths: Sequence[int], tokens: int, side: str, device: str) -> torch.Tensor:
    """(batch, tokens) bool, True = real token; right padding puts the tokens first, left last."""
    pos = torch.arange(tokens, device=device)[None, :]
    lens = torch.tensor(list(lengths), device=device)[:, None]
    return pos < lens if side == "right" else pos >= tokens - lens


def padded_values(
    lengths: Sequence[int],
    tokens: int,
    width_shape: Sequence[int],
    side: str,
    seed: int,
    garbage_seed: int,
    device: str,
    dtype: torch.dtype,
    token_dim: int = 1,
) -> torch.Tensor:
    """Real values at the real positions (the same sequences whatever the side), garbage elsewhere.

    The result has shape (batch, tokens, *width_shape) with the token axis moved to ``token_dim``.
    """
    batch = len(lengths)
    real = torch.randn((batch, tokens, *width_shape), generator=generator(seed), dtype=torch.float64)
    garbage = (
        torch.randn((batch, tokens, *width_shape), generator=generator(seed + garbage_seed), dtype=torch.float64)
        * GARBAGE_SCALE
    )
    out = garbage.clone()
    for i, n in enumerate(lengths):
        if n:
            start = 0 if side == "right" else tokens - n
            out[i, start : start + n] = real[i, :n]
    return out.movedim(1, token_dim).to(device=device, dtype=dtype)


def mask_in_format(keep: torch.Tensor, fmt: str) -> torch.Tensor:
    if fmt == "key_padding":
        return ~keep
    if fmt == "keep":
        return keep
    if fmt == "attention_mask":
        return keep.long()
    if fmt == "sdpa_keep":
        return keep[:, None, None, :]
    raise ValueError(f"unknown mask format {fmt!r}; known: {', '.join(MASK_FORMATS)}")


def _callable_of(entry: Any) -> Callable[..., Any]:
    return entry.forward if isinstance(entry, nn.Module) else entry


def positional_names(entry: Any) -> List[str]:
    signature = inspect.signature(_callable_of(entry))
    return [
        n
        for n, p in signature.parameters.items()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and n != "self"
    ]


@dataclass(frozen=True)
class Protocol:
    """How to call an attention entry on a padded batch."""

    call: str  # "x": entry(x, mask) ; "qkv": entry(q, k, v, mask)
    mask_arg: Optional[str]
    mask_format: Optional[str]

    def invoke(self, entry: Any, inputs: Sequence[torch.Tensor], keep: Optional[torch.Tensor]) -> Any:
        kwargs = {}
        if self.mask_arg is not None and keep is not None:
            kwargs[self.mask_arg] = mask_in_format(keep, self.mask_format or "key_padding")
        return first_tensor(entry(*inputs, **kwargs))

    def describe(self) -> str:
        inputs = "q, k, v" if self.call == "qkv" else "x"
        if self.mask_arg is None:
            return f"called as entry({inputs})"
        return f"called as entry({inputs}, {self.mask_arg}=<{self.mask_format}>)"


def find_protocol(entry: Any, params: Mapping[str, Any], needs_mask: bool) -> Protocol:
    call = str(params.get("call", "x"))
    if call not in ("x", "qkv"):
        raise ValueError(f"params['call'] must be 'x' or 'qkv', not {call!r}")
    names = positional_names(entry)
    mask_arg = params.get("mask_arg")
    if mask_arg is None:
        mask_arg = next((n for n in names if "mask" in n.lower()), None)
    if mask_arg is None:
        if needs_mask:
            raise LookupError(f"cannot find the mask argument among {names}; pass params['mask_arg']")
        return Protocol(call, None, None)
    fmt = params.get("mask_format")
    if isinstance(fmt, Mapping):  # {argument: format}, as the parent reads it from the analysis
        fmt = fmt.get(mask_arg)
    fmt = fmt or mask_format_for_name(mask_arg)
    if fmt is None:
        raise LookupError(
            f"neither the name {mask_arg!r} nor the analysis of the code tells the mask's convention; pass "
            f"params['mask_format'] (one of {', '.join(MASK_FORMATS)})"
        )
    if fmt not in MASK_FORMATS:
        raise ValueError(f"unknown mask format {fmt!r}; known: {', '.join(MASK_FORMATS)}")
    return Protocol(call, mask_arg, fmt)


# ---------------------------------------------------------------------------------------------
# Reference attention with a bool mask
# ---------------------------------------------------------------------------------------------
def masked_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    keep: Optional[torch.Tensor],
    causal: bool,
    scale: Optional[float],
    kernel: str,
    compute_dtype: Optional[torch.dtype],
    padded_queries: bool = False,
) -> torch.Tensor:
    """(b, h, n, hd) attention with a key mask ``keep`` (b, n_k) True = real, causal folded in.
    ``padded_queries``: the code masks padded queries too (``keep[:, :, None] & keep[:, None, :]``),
    so their rows are fully masked, 0 as SDPA returns them.

    ``kernel`` "naive": :func:`naive_attention` in ``compute_dtype`` (None: the inputs' dtype);
    "sdpa": :func:`sdpa_reference` on the MATH backend in the inputs' dtype (cast first).
    """
    if keep is None:
        mask = None
    elif padded_queries:
        mask = keep[:, None, :, None] & keep[:, None, None, :]
    else:
        mask = keep[:, None, None, :]
    if kernel == "sdpa":
        if compute_dtype is not None:
            q, k, v = q.to(compute_dtype), k.to(compute_dtype), v.to(compute_dtype)
        return sdpa_reference(q, k, v, attn_mask=mask, causal=causal, scale=scale, backend="math")
    return naive_attention(q, k, v, attn_mask=mask, causal=causal, scale=scale, compute_dtype=compute_dtype)


class _AttentionShim(nn.Module):
    """Stands in for an ``nn.MultiheadAttention``: its own parameters, the witness's true mask."""

    def __init__(self, mha: nn.MultiheadAttention, state: Dict[str, Any]) -> None:
        super().__init__()
        if mha.bias_k is not None or mha.add_zero_attn:
            raise LookupError("nn.MultiheadAttention with add_bias_kv/add_zero_attn is not supported")
        self.mha = mha
        self.state = state

    def forward(self, query, key, value, *args, **kwargs):  # noqa: ARG002 - the masks given are ignored
        mha = self.mha
        if not mha.batch_first:
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        if mha._qkv_same_embed_dim:
            wq, wk, wv = mha.in_proj_weight.chunk(3)
        else:
            wq, wk, wv = mha.q_proj_weight, mha.k_proj_weight, mha.v_proj_weight
        bq = bk = bv = None
        if mha.in_proj_bias is not None:
            bq, bk, bv = mha.in_proj_bias.chunk(3)
        heads = mha.num_heads
        q = common.split_heads(F.linear(query, wq, bq), heads)
        k = common.split_heads(F.linear(key, wk, bk), heads)
        v = common.split_heads(F.linear(value, wv, bv), heads)
        state = self.state
        o = masked_attention(
            q, k, v, state["keep"], state["causal"], None, state["kernel"], None, state["padded_queries"]
        )
        o = mha.out_proj(common.merge_heads(o))
        if not mha.batch_first:
            o = o.transpose(0, 1)
        return o, None


class Golden:
    """A float64 (or same-dtype ``plain``) reference for an attention entry on a masked batch."""

    describe: str = ""
    d_in: int = 0

    def run(
        self,
        x: Sequence[torch.Tensor],
        keep: Optional[torch.Tensor],
        *,
        compute_dtype: Optional[torch.dtype],
        kernel: str = "naive",
    ) -> torch.Tensor:
        raise NotImplementedError


class QKVGolden(Golden):
    """q/k/v entries: the kernels on the same q/k/v."""

    def __init__(self, params: Mapping[str, Any]) -> None:
        self.causal = bool(params.get("causal", False))
        self.padded_queries = bool(params.get("padded_queries", False))
        scale = params.get("scale")
        self.scale = None if scale is None else float(scale)
        self.describe = f"reference: masked attention on the given q/k/v, causal={self.causal}"

    def run(self, x, keep, *, compute_dtype, kernel="naive"):
        q, k, v = x
        return masked_attention(q, k, v, keep, self.causal, self.scale, kernel, compute_dtype, self.padded_queries)


class SpecGolden(Golden):
    """Hand-written attention modules: the per-head reference from the module's own projections."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.spec = common.build_spec(ctx.original, ctx.params)
        self.padded_queries = bool(ctx.params.get("padded_queries", False))
        self.d_in = self.spec.d_in
        self.describe = self.spec.describe()
        self._modules: Dict[torch.dtype, nn.Module] = {}

    def module(self, dtype: torch.dtype) -> nn.Module:
        if dtype not in self._modules:
            self._modules[dtype] = self.ctx.golden_copy(dtype)
        return self._modules[dtype]

    def projections(self, x: torch.Tensor, dtype: torch.dtype) -> Dict[str, torch.Tensor]:
        """The raw output of each distinct q/k/v projection (a fused one once)."""
        module = self.module(dtype)
        out: Dict[str, torch.Tensor] = {}
        for p in (self.spec.q, self.spec.k, self.spec.v):
            if p.attr not in out:
                out[p.attr] = common.Projection(p.attr, p.layout).apply(module, x, dtype)
        return out

    def from_projections(self, raw: Mapping[str, torch.Tensor], keep, dtype, kernel) -> torch.Tensor:
        spec = self.spec
        parts = []
        for p in (spec.q, spec.k, spec.v):
            y = raw[p.attr]
            parts.append(common.split_heads(y if p.part is None else y.chunk(3, dim=-1)[p.part], spec.heads))
        o = masked_attention(*parts, keep, spec.causal, spec.scale, kernel, dtype, self.padded_queries)
        o = common.merge_heads(o)
        return o if spec.out is None else spec.out.apply(self.module(dtype), o, dtype)

    def run(self, x, keep, *, compute_dtype, kernel="naive"):
        (inp,) = x
        dtype = inp.dtype if compute_dtype is None else compute_dtype
        return self.from_projections(self.projections(inp, dtype), keep, dtype, kernel)


class MHAGolden(Golden):
    """Modules built on ``nn.MultiheadAttention``: the original's code, the attention replaced."""

    def __init__(self, ctx: Context, protocol: Protocol) -> None:
        self.ctx = ctx
        self.protocol = protocol
        self.state: Dict[str, Any] = {
            "keep": None,
            "causal": bool(ctx.params.get("causal", False)),
            "padded_queries": bool(ctx.params.get("padded_queries", False)),
            "kernel": "naive",
        }
        self._copies: Dict[torch.dtype, nn.Module] = {}
        mhas = [name for name, m in ctx.original.named_modules() if isinstance(m, nn.MultiheadAttention)]
        if not mhas:
            raise LookupError("no nn.MultiheadAttention submodule")
        first = ctx.original.get_submodule(mhas[0])
        self.d_in = int(ctx.params.get("d_in", first.embed_dim))
        self.describe = (
            f"reference: the original module with {', '.join(mhas)} (nn.MultiheadAttention, "
            f"{first.num_heads} heads) attending through a bool mask, causal={self.state['causal']}"
        )

    def copy_in(self, dtype: torch.dtype) -> nn.Module:
        if dtype not in self._copies:
            module = self.ctx.golden_copy(dtype)
            for name, sub in list(module.named_modules()):
                if isinstance(sub, nn.MultiheadAttention):
                    parent_name, _, child = name.rpartition(".")
                    parent = module.get_submodule(parent_name) if parent_name else module
                    setattr(parent, child, _AttentionShim(sub, self.state))
            self._copies[dtype] = module
        return self._copies[dtype]

    def run(self, x, keep, *, compute_dtype, kernel="naive"):
        dtype = x[0].dtype if compute_dtype is None else compute_dtype
        module = self.copy_in(dtype)
        self.state["keep"], self.state["kernel"] = keep, kernel
        inputs = [t.to(dtype) for t in x]
        return self.protocol.invoke(module, inputs, keep)


def make_golden(ctx: Context, protocol: Protocol) -> Golden:
    if protocol.call == "qkv":
        return QKVGolden(ctx.params)
    if ctx.is_module and any(isinstance(m, nn.MultiheadAttention) for m in ctx.original.modules()):
        return MHAGolden(ctx, protocol)
    if not ctx.is_module:
        raise LookupError("a function entry needs params['call'] = 'qkv' (entry(q, k, v, mask))")
    return SpecGolden(ctx)


# ---------------------------------------------------------------------------------------------
# Padded witnesses for an attention entry
# ---------------------------------------------------------------------------------------------
@dataclass
class Witness:
    """One padded batch: the inputs (x, or q/k/v), the key mask, and where the real tokens are."""

    name: str
    inputs: List[torch.Tensor]
    keep: torch.Tensor  # (batch, tokens) True = real token
    lengths: Tuple[int, ...]
    side: str

    def real(self, out: torch.Tensor) -> torch.Tensor:
        """The output rows of real tokens (token axis = -2)."""
        return out.movedim(-2, 1)[self.keep]

    @property
    def shape(self) -> Tuple[int, ...]:
        return tuple(self.inputs[0].shape)


def make_witness(
    ctx: Context,
    protocol: Protocol,
    golden: Golden,
    lengths: Sequence[int],
    side: str,
    garbage: int = 0,
    tokens: int = WITNESS_TOKENS,
) -> Witness:
    seed = ctx.seed
    gseed = GARBAGE_SEEDS[garbage]
    if protocol.call == "qkv":
        heads = int(ctx.params.get("heads", 2))
        head_dim = int(ctx.params.get("head_dim", 8))
        # q, k, v: (batch, heads, tokens, head_dim), each its own draw.
        inputs = [
            padded_values(
                lengths, tokens, (heads, head_dim), side, seed + 7 * i, gseed, ctx.device, ctx.dtype, token_dim=2
            ).contiguous()
            for i in range(3)
        ]
    else:
        inputs = [padded_values(lengths, tokens, (golden.d_in,), side, seed, gseed, ctx.device, ctx.dtype)]
    keep = keep_mask(lengths, tokens, side, ctx.device)
    name = f"{side}-padded lengths {list(lengths)}"
    return Witness(name, inputs, keep, tuple(lengths), side)


def run_entry(protocol: Protocol, entry: Any, w: Witness, *, grad: bool = False) -> Outcome:
    """Forward (autograd on: nn.MultiheadAttention's inference fast path is another code path)."""

    def go():
        with torch.enable_grad():
            out = protocol.invoke(entry, w.inputs, w.keep)
        if not isinstance(out, torch.Tensor):
            raise TypeError(f"the entry returned {type(out).__name__}, not a tensor")
        return out if grad else out.detach()

    return attempt(go)


def references(golden: Golden, w: Witness) -> References:
    with torch.no_grad():
        return References(
            golden=golden.run(w.inputs, w.keep, compute_dtype=torch.float64, kernel="naive"),
            sdpa=golden.run(w.inputs, w.keep, compute_dtype=torch.float64, kernel="sdpa"),
            plain=golden.run(w.inputs, w.keep, compute_dtype=None, kernel="naive"),
        )


def rule_on(
    out: torch.Tensor, refs: References, select: Callable[[torch.Tensor], torch.Tensor]
) -> Tuple[Comparison, Comparison]:
    """FlashAttention's rule against the float64 naive kernel and float64 SDPA, on ``select``ed rows."""
    plain = select(refs.plain)
    return flash_rule(select(out), select(refs.golden), plain), flash_rule(select(out), select(refs.sdpa), plain)


def upstream(shape: Sequence[int], seed: int, device: str, keep: Optional[torch.Tensor] = None) -> torch.Tensor:
    """A float64 upstream gradient; with ``keep``, zero on the rows of padded tokens."""
    g = randn(shape, seed + 1, device, torch.float64)
    return g if keep is None else g * row_mask(keep, g)


def row_mask(keep: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """``keep`` (batch, tokens) shaped to broadcast over ``like`` (batch, ..., tokens, features)."""
    shape = (keep.shape[0],) + (1,) * (like.dim() - 3) + (keep.shape[1], 1)
    return keep.reshape(shape).to(like.dtype)


def select_real(t: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """The rows of real tokens of ``t`` (batch, ..., tokens, features): token axis is -2."""
    return t.movedim(-2, 1)[keep]


def entry_gradients(
    protocol: Protocol, entry: Any, w: Witness, g64: torch.Tensor, params_too: bool = False, hooks: Sequence[str] = ()
) -> Tuple[List[torch.Tensor], Dict[str, torch.Tensor], Dict[str, torch.Tensor]]:
    """Gradients of ``out . g`` for the code under test: w.r.t. each input, each parameter (by name,
    with ``params_too``), and each output of the submodules named in ``hooks`` (by name)."""
    captured: Dict[str, torch.Tensor] = {}
    handles = []
    if isinstance(entry, nn.Module):
        for name in hooks:

            def hook(_module, _args, output, name=name):
                captured[name] = output

            handles.append(entry.get_submodule(name).register_forward_hook(hook))
    try:
        with torch.enable_grad():
            leaves = [t.detach().clone().requires_grad_(True) for t in w.inputs]
            out = protocol.invoke(entry, leaves, w.keep)
            wrt: List[torch.Tensor] = list(leaves)
            names: List[str] = []
            if params_too and isinstance(entry, nn.Module):
                for name, p in entry.named_parameters():
                    if p.requires_grad:
                        wrt.append(p)
                        names.append(name)
            hooked = [n for n in hooks if n in captured]
            wrt.extend(captured[n] for n in hooked)
            grads = torch.autograd.grad(out, wrt, g64.to(out.dtype), allow_unused=True)
    finally:
        for handle in handles:
            handle.remove()
    grads = [g if g is not None else torch.zeros_like(t) for g, t in zip(grads, wrt)]
    n_in, n_par = len(leaves), len(names)
    return (grads[:n_in], dict(zip(names, grads[n_in : n_in + n_par])), dict(zip(hooked, grads[n_in + n_par :])))


def golden_gradients(
    golden: Golden, w: Witness, g64: torch.Tensor, compute_dtype: Optional[torch.dtype]
) -> List[torch.Tensor]:
    """Gradients of ``ref . g`` w.r.t. each input, the reference computed in ``compute_dtype``."""
    with torch.enable_grad():
        dtype = w.inputs[0].dtype if compute_dtype is None else compute_dtype
        leaves = [t.detach().to(dtype).requires_grad_(True) for t in w.inputs]
        out = golden.run(leaves, w.keep, compute_dtype=compute_dtype, kernel="naive")
        return list(torch.autograd.grad(out, leaves, g64.to(out.dtype)))


def finite(t: torch.Tensor) -> bool:
    return bool(torch.isfinite(t).all())


def nan_rows(out: torch.Tensor) -> int:
    """How many output rows (last axis = features) hold a NaN."""
    if out.dim() == 0:
        return int(torch.isnan(out))
    return int(torch.isnan(out).any(dim=-1).sum())


def describe_lengths(lengths: Sequence[int]) -> str:
    return "{" + ", ".join(str(n) for n in lengths) + "}"


def join(parts: Sequence[str]) -> str:
    return " | ".join(parts)


# ---------------------------------------------------------------------------------------------
# The padded-batch checks shared by ATN202 and ATN205
# ---------------------------------------------------------------------------------------------
ORIGINAL_WRONG = "witness_original_wrong"
FIXED_IGNORES_GARBAGE = "fixed_ignores_padding_garbage"
FIXED_MATCHES_NAIVE = "fixed_matches_float64_naive_kernel"
FIXED_MATCHES_SDPA = "fixed_matches_float64_sdpa"
FIXED_MATCHES_UNPADDED = "fixed_matches_unpadded_original"
FIXED_GRADIENT_MATCHES = "fixed_gradient_matches_float64_reference"
NO_PADDING_BIT_IDENTICAL = "no_padding_bit_identical"


def padded_attention_checks(ctx: Context, *, unpadded_reference: bool, no_padding_identical: bool) -> None:
    """Evidence for a fix that changes which keys a padded batch attends to.

    On each side (right, left) the witness has lengths {T, T-2, 1, 0}; the outputs of *real* tokens
    are judged (a padded query's output is nobody's business, and an empty sequence has none). Two
    draws of garbage in the padded slots must give the very same real outputs from the fixed code.
    """
    protocol = find_protocol(ctx.original, ctx.params, needs_mask=True)
    golden = make_golden(ctx, protocol)
    witnesses = {
        side: [make_witness(ctx, protocol, golden, WITNESS_LENGTHS, side, garbage=g) for g in (0, 1)] for side in SIDES
    }
    where = f"{protocol.describe()}; {golden.describe}"
    refs_by_side = {side: references(golden, ws[0]) for side, ws in witnesses.items()}

    # 1. The bug is visible: the original runs, and its real outputs are wrong.
    parts, visible, ran = [], False, True
    for side, (w0, w1) in witnesses.items():
        before, before_other = run_entry(protocol, ctx.original, w0), run_entry(protocol, ctx.original, w1)
        if not before.ok:
            ran = False
            parts.append(f"{side}: original raises {before.describe_error()}")
            continue
        naive, _ = rule_on(before.value, refs_by_side[side], w0.real)
        garbage_diff = (
            max_abs_diff(w0.real(before.value), w1.real(before_other.value)) if before_other.ok else float("inf")
        )
        ctx.measure(f"{side}_original_max_error", naive.max_error)
        ctx.measure(f"{side}_original_ratio", naive.ratio)
        ctx.measure(f"{side}_original_garbage_diff", garbage_diff)
        ctx.measure(f"{side}_original_nan_real_rows", nan_rows(w0.real(before.value)))
        visible |= not naive.passed
        parts.append(
            f"{side} {w0.shape}: {naive.describe()}; real outputs move by {garbage_diff:.3e} with the "
            f"garbage; {nan_rows(w0.real(before.value))} real rows NaN"
        )
    why = f"lengths {describe_lengths(WITNESS_LENGTHS)}, {where}: " + join(parts)
    ctx.add(ORIGINAL_WRONG, ran and visible, ("" if visible else "bug NOT visible: ") + why)

    # 2-3. The fixed code ignores the garbage and matches the references on the real tokens.
    garbage_parts, naive_parts, sdpa_parts = [], [], []
    garbage_ok = naive_ok = sdpa_ok = True
    outputs: Dict[str, torch.Tensor] = {}
    for side, (w0, w1) in witnesses.items():
        after, after_other = run_entry(protocol, ctx.fixed, w0), run_entry(protocol, ctx.fixed, w1)
        if not after.ok or not after_other.ok:
            text = f"{side}: fixed raises {(after if not after.ok else after_other).describe_error()}"
            garbage_parts.append(text), naive_parts.append(text), sdpa_parts.append(text)
            garbage_ok = naive_ok = sdpa_ok = False
            continue
        outputs[side] = after.value
        same = torch.equal(w0.real(after.value), w1.real(after_other.value))
        garbage_ok &= same
        ctx.measure(f"{side}_fixed_garbage_diff", max_abs_diff(w0.real(after.value), w1.real(after_other.value)))
        garbage_parts.append(f"{side}: real outputs {'torch.equal' if same else 'DIFFER'} across two garbage draws")
        naive, sdpa = rule_on(after.value, refs_by_side[side], w0.real)
        ctx.measure(f"{side}_fixed_max_error", naive.max_error)
        ctx.measure(f"{side}_fixed_bound", naive.bound)
        ctx.measure(f"{side}_plain_max_error", naive.plain_error)
        ctx.measure(f"{side}_fixed_sdpa_max_error", sdpa.max_error)
        ctx.measure(f"{side}_fixed_nan_rows", nan_rows(after.value))
        naive_ok &= naive.passed
        sdpa_ok &= sdpa.passed
        naive_parts.append(f"{side}: {naive.describe()}")
        sdpa_parts.append(f"{side}: {sdpa.describe()}")
    ctx.add(FIXED_IGNORES_GARBAGE, garbage_ok, join(garbage_parts))
    ctx.add(FIXED_MATCHES_NAIVE, naive_ok, f"real tokens, {where}: " + join(naive_parts))
    ctx.add(FIXED_MATCHES_SDPA, sdpa_ok, "real tokens: " + join(sdpa_parts))

    # 4. Padding invariance: each real sequence alone, unpadded, through the original code.
    if unpadded_reference:
        _check_unpadded(ctx, protocol, witnesses, outputs)

    # 5. Gradients of the real outputs w.r.t. the inputs, at the real tokens.
    grad_parts, grad_ok = [], True
    for side, (w0, _) in witnesses.items():
        if side not in outputs:
            grad_ok = False
            grad_parts.append(f"{side}: fixed raises")
            continue
        g64 = upstream(tuple(outputs[side].shape), ctx.seed, ctx.device, w0.keep)
        try:
            fixed_grads, _, _ = entry_gradients(protocol, ctx.fixed, w0, g64)
            ref_grads = golden_gradients(golden, w0, g64, torch.float64)
            plain_grads = golden_gradients(golden, w0, g64, None)
        except Exception as exc:  # noqa: BLE001
            grad_ok = False
            grad_parts.append(f"{side}: backward raises {type(exc).__name__}: {exc}")
            continue
        for i, (gf, gr, gp) in enumerate(zip(fixed_grads, ref_grads, plain_grads)):
            cmp = flash_rule(w0.real(gf), w0.real(gr), w0.real(gp))
            label = "dx" if protocol.call == "x" else "d" + "qkv"[i]
            ctx.measure(f"{side}_fixed_{label}_max_error", cmp.max_error)
            ctx.measure(f"{side}_{label}_bound", cmp.bound)
            grad_ok &= cmp.passed
            grad_parts.append(f"{side} {label}: {cmp.describe()}")
    ctx.add(FIXED_GRADIENT_MATCHES, grad_ok, "real tokens: " + join(grad_parts))

    # 6. Where the old code was already right: no padding at all, the very same bits.
    if no_padding_identical:
        w = make_witness(ctx, protocol, golden, (WITNESS_TOKENS,) * len(WITNESS_LENGTHS), "right")
        before, after = run_entry(protocol, ctx.original, w), run_entry(protocol, ctx.fixed, w)
        if not before.ok or not after.ok:
            what = before.describe_error() if not before.ok else after.describe_error()
            ctx.add(NO_PADDING_BIT_IDENTICAL, False, f"no padding {w.shape}: {what}")
        else:
            same = torch.equal(before.value, after.value)
            ctx.measure("no_padding_max_diff", max_abs_diff(before.value, after.value))
            with torch.no_grad():  # measured only: the inference fast path of nn.MultiheadAttention differs
                inference = attempt(
                    lambda: (
                        protocol.invoke(ctx.original, w.inputs, w.keep),
                        protocol.invoke(ctx.fixed, w.inputs, w.keep),
                    )
                )
            if inference.ok:
                ctx.measure("no_padding_inference_max_diff", max_abs_diff(*inference.value))
            detail = (
                f"no padding {w.shape}: original and fixed outputs "
                f"{'torch.equal' if same else 'differ by %.3e' % ctx.measurements['no_padding_max_diff']}"
            )
            ctx.add(NO_PADDING_BIT_IDENTICAL, same, detail)


def _check_unpadded(ctx: Context, protocol: Protocol, witnesses, outputs: Mapping[str, torch.Tensor]) -> None:
    golden64, plain = ctx.golden_copy(torch.float64), ctx.golden_copy(ctx.dtype)
    parts, ok = [], True
    for side, (w0, _) in witnesses.items():
        if side not in outputs:
            ok = False
            parts.append(f"{side}: fixed raises")
            continue
        got, ref, ref_plain = [], [], []
        for i, n in enumerate(w0.lengths):
            if n == 0:
                continue
            idx = w0.keep[i].nonzero().squeeze(-1)
            alone = [t[i : i + 1].index_select(-2, idx) for t in w0.inputs]
            keep = torch.ones(1, n, dtype=torch.bool, device=ctx.device)
            with torch.enable_grad():
                ref.append(protocol.invoke(golden64, [t.to(torch.float64) for t in alone], keep).detach())
                ref_plain.append(protocol.invoke(plain, alone, keep).detach())
            got.append(outputs[side][i : i + 1].index_select(-2, idx))
        flat = [torch.cat([t.movedim(-2, 1).flatten(0, 1) for t in ts]) for ts in (got, ref, ref_plain)]
        cmp = flash_rule(*flat)
        ctx.measure(f"{side}_fixed_vs_unpadded_max_error", cmp.max_error)
        ok &= cmp.passed
        parts.append(f"{side}: {cmp.describe()}")
    ctx.add(
        FIXED_MATCHES_UNPADDED,
        ok,
        "each non-empty sequence run alone (unpadded, float64) through the original: " + join(parts),
    )


def __getattr__(name: str) -> Any:
    # ``MASK_FORMAT_BY_NAME`` used to be a second, hand-kept table; it is computed from the linter's.
    if name == "MASK_FORMAT_BY_NAME":
        return known_mask_names()
    raise AttributeError(name)
