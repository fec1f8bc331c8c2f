"""Recipe for ATN201 cross-entropy-ignore-index: targets padded with a value the loss does not ignore.

``pad_sequence`` pads with 0 by default and ``nn.CrossEntropyLoss`` ignores -100 by default, so the
padding positions are trained as real targets of class 0: the loss is diluted by easy predictions
and gradients flow into the logits of padded positions. Nothing fails. The fix sets
``ignore_index`` to the padding value.

How the code under test is run. The entry is a function or an ``nn.Module`` class (method
``params["method"]``, default ``forward``); its arguments are supplied by name (or
``params["args"]``): ``logits`` (a float (batch, T, C) tensor, real values at the real positions and
garbage at the padded ones), ``targets`` / ``labels`` / ``tags`` / ``tgt`` (a list of 1-D long
tensors, the unpadded targets, never equal to the padding value), ``tokens`` / ``inputs`` / ``src``
/ ``seqs`` (1-D long tensors of the same lengths), ``model`` (a seeded embedding + linear language
model). While it runs, ``torch.nn.functional.cross_entropy`` (which ``nn.CrossEntropyLoss`` calls
too) is observed: the logits and targets that reach the loss, and its ``weight``, ``reduction`` and
``label_smoothing``, are recorded.

The reference: float64 ``F.cross_entropy`` with an explicit ``ignore_index`` = the padding value
(``params["padding_value"]``, default 0) and the loss's own other options, on the logits and targets
the *original* passed to its loss, and a hand-written float64 mean/sum of ``-log_softmax`` over the
non-padded positions (with label smoothing; not with class weights). ``out_pt`` is the same loss in
the test dtype. Witnesses: lengths {T, T-2, 1, 0} (T = 7, C = ``params["num_classes"]``, default 5;
garbage logits on the side ``params["padding_side"]`` says pad_sequence pads, default "right");
no padding (all T); every target ignored (all lengths 0: ``reduction='mean'`` is NaN, as the
reference, ``'sum'`` is 0). Evidence, per device and dtype:

1. ``witness_original_trains_padding`` -- the original's loss is outside FlashAttention's bound of
   the reference and its gradient reaches the logits of padded positions.
2. ``fixed_matches_float64_loss`` / ``fixed_matches_float64_naive_loss`` -- within the bound (the
   hand-written one is left out when the loss has class weights).
3. ``fixed_gradient_matches_float64_reference`` -- d loss / d logits (as the loss saw them).
4. ``fixed_padding_gets_no_gradient`` -- that gradient is exactly 0 at every padded position.
5. ``fixed_ignores_padding_garbage`` -- (``logits`` entries) two garbage draws in the padded logits
   give ``torch.equal`` losses and gradients.
6. ``no_padding_bit_identical`` -- with no padding the old loss was right: ``torch.equal``.
7. ``all_ignored_matches_reference`` -- NaN exactly where the reference is NaN, equal otherwise.

A wrong ``ignore_index`` (e.g. -1 with 0-padding) fails 1-5's fixed checks. Runs only inside the
verification child process.
"""

from __future__ import annotations

import contextlib
import inspect
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from attnlint.verify.recipes._masking import Context, Outcome, attempt, flash_rule, max_abs_diff, run_recipe

RULE_CODE = "ATN201"

ORIGINAL_TRAINS_PADDING = "witness_original_trains_padding"
FIXED_MATCHES_LOSS = "fixed_matches_float64_loss"
FIXED_MATCHES_NAIVE_LOSS = "fixed_matches_float64_naive_loss"
FIXED_GRADIENT_MATCHES = "fixed_gradient_matches_float64_reference"
FIXED_PADDING_NO_GRADIENT = "fixed_padding_gets_no_gradient"
FIXED_IGNORES_GARBAGE = "fixed_ignores_padding_garbage"
NO_PADDING_BIT_IDENTICAL = "no_padding_bit_identical"
ALL_IGNORED = "all_ignored_matches_reference"

TOKENS = 7
LENGTHS = (7, 5, 1, 0)
GARBAGE_SEEDS = (101, 202)
GARBAGE_SCALE = 10.0
CLASS_ARG_NAMES = ("num_classes", "num_tags", "n_classes", "n_tags", "num_labels", "vocab_size", "n_vocab")

_REAL_CROSS_ENTROPY = F.cross_entropy
_SIGNATURE = inspect.signature(_REAL_CROSS_ENTROPY)


def run(request: Mapping[str, Any]) -> List[Dict[str, Any]]:
    return run_recipe(request, RULE_CODE, _verify_on)


# ---------------------------------------------------------------------------------------------
# Calling the entry
# ---------------------------------------------------------------------------------------------
def arg_kind(name: str) -> Optional[str]:
    lower = name.lower()
    if "logit" in lower or lower in ("scores", "outputs", "output", "preds", "pred", "predictions"):
        return "logits"
    if any(s in lower for s in ("target", "label", "tag", "tgt", "gold")) or lower in ("y", "ys"):
        return "targets"
    if "model" in lower or lower in ("net", "lm"):
        return "model"
    if any(s in lower for s in ("token", "input", "src", "seq", "word", "ids")) or lower in ("x", "xs"):
        return "tokens"
    return None


def entry_callable(ctx: Context, which: Any):
    if isinstance(which, nn.Module):
        return getattr(which, str(ctx.params.get("method", "forward")))
    return which


def arg_kinds(ctx: Context) -> List[str]:
    given = ctx.params.get("args")
    if given is not None:
        return [str(k) for k in given]
    fn = entry_callable(ctx, ctx.original)
    kinds = []
    for name, p in inspect.signature(fn).parameters.items():
        if name == "self" or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        kind = arg_kind(name)
        if kind is None:
            if p.default is not p.empty:
                break
            raise LookupError(
                f"cannot tell what to pass as {name!r}; pass params['args'] (a list of "
                "'logits', 'targets', 'tokens', 'model')"
            )
        kinds.append(kind)
    if "targets" not in kinds:
        if kinds.count("tokens") == 1:  # language modelling: the targets are the shifted tokens
            return kinds
        raise LookupError(f"no targets argument among {kinds}; pass params['args']")
    return kinds


class TinyLM(nn.Module):
    def __init__(self, vocab: int, classes: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, 8)
        self.head = nn.Linear(8, classes)

    def forward(self, tokens):
        return self.head(self.embed(tokens))


class Data:
    """One witness: unpadded target/token sequences and a padded logits tensor (garbage at pads)."""

    def __init__(
        self,
        ctx: Context,
        lengths: Sequence[int],
        garbage: int,
        classes: int,
        vocab: int,
        pad: int,
        side: str = "right",
    ) -> None:
        self.lengths = tuple(lengths)
        tokens = max(self.lengths) if self.lengths else 0
        gen = torch.Generator().manual_seed(ctx.seed)
        self.targets = []
        self.tokens = []
        for n in self.lengths:
            t = torch.randint(0, classes - 1, (n,), generator=gen)
            if 0 <= pad < classes:
                t = t + (t >= pad).long()  # never the padding value: every real target counts
            self.targets.append(t.to(ctx.device))
            self.tokens.append(torch.randint(1, vocab, (n,), generator=gen).to(ctx.device))
        real = torch.randn(
            (len(self.lengths), tokens, classes),
            generator=torch.Generator().manual_seed(ctx.seed + 1),
            dtype=torch.float64,
        )
        noise = (
            torch.randn(
                real.shape,
                generator=torch.Generator().manual_seed(ctx.seed + GARBAGE_SEEDS[garbage]),
                dtype=torch.float64,
            )
            * GARBAGE_SCALE
        )
        pos = torch.arange(tokens)[None, :]
        lens = torch.tensor(list(self.lengths) or [0])[:, None]
        keep = pos < lens if side == "right" else pos >= tokens - lens
        self.logits = torch.where(keep[..., None], real, noise).to(device=ctx.device, dtype=ctx.dtype)

    def describe(self) -> str:
        return f"lengths {list(self.lengths)}"


@contextlib.contextmanager
def observed_cross_entropy(records: List[Dict[str, Any]]) -> Iterator[None]:
    def observing(*args, **kwargs):
        bound = _SIGNATURE.bind(*args, **kwargs)
        bound.apply_defaults()
        records.append(dict(bound.arguments))
        return _REAL_CROSS_ENTROPY(*args, **kwargs)

    torch.nn.functional.cross_entropy = observing
    try:
        yield
    finally:
        torch.nn.functional.cross_entropy = _REAL_CROSS_ENTROPY


class Run:
    def __init__(self, loss: torch.Tensor, record: Dict[str, Any], logits: Optional[torch.Tensor], calls: int) -> None:
        self.loss, self.record, self.logits, self.calls = loss, record, logits, calls

    @property
    def loss_input(self) -> torch.Tensor:
        return self.record["input"]

    @property
    def target(self) -> torch.Tensor:
        return self.record["target"]


def call(ctx: Context, which: Any, kinds: Sequence[str], data: Data, model: Optional[nn.Module]) -> Outcome:
    def go() -> Run:
        records: List[Dict[str, Any]] = []
        logits = data.logits.detach().clone().requires_grad_(True)
        values = {"logits": logits, "targets": list(data.targets), "tokens": list(data.tokens), "model": model}
        args = [values[k] for k in kinds]
        with torch.enable_grad(), observed_cross_entropy(records):
            loss = entry_callable(ctx, which)(*args)
        if not records:
            raise LookupError(
                "the entry never called torch.nn.functional.cross_entropy (nn.CrossEntropyLoss calls "
                "it; a function imported by name cannot be observed)"
            )
        if not isinstance(loss, torch.Tensor) or loss.dim() != 0:
            raise TypeError(f"the entry returned {type(loss).__name__}, not a scalar loss")
        return Run(loss, records[-1], logits if "logits" in kinds else None, len(records))

    return attempt(go)


# ---------------------------------------------------------------------------------------------
# References
# ---------------------------------------------------------------------------------------------
def reference_loss(run: Run, pad: int, dtype: Optional[torch.dtype], leaf: bool = False):
    """F.cross_entropy with ignore_index=pad on the logits/targets ``run``'s loss saw (``dtype``: None = same)."""
    record = run.record
    x = record["input"].detach()
    x = (x if dtype is None else x.to(dtype)).requires_grad_(leaf)
    weight = record.get("weight")
    if weight is not None:
        weight = weight.detach().to(x.dtype)
    loss = _REAL_CROSS_ENTROPY(
        x,
        record["target"],
        weight=weight,
        ignore_index=pad,
        reduction=record.get("reduction", "mean"),
        label_smoothing=float(record.get("label_smoothing", 0.0)),
    )
    return loss, x


def naive_loss(run: Run, pad: int) -> Optional[torch.Tensor]:
    """Hand-written float64 cross-entropy over the non-padded positions (None with class weights)."""
    record = run.record
    if record.get("weight") is not None or record.get("reduction", "mean") not in ("mean", "sum"):
        return None
    x = record["input"].detach().to(torch.float64)
    classes = x.shape[1] if x.dim() > 1 else x.shape[0]
    logp = torch.log_softmax(x.movedim(1, -1).reshape(-1, classes) if x.dim() > 1 else x[None], dim=-1)
    t = record["target"].reshape(-1)
    valid = t != pad
    eps = float(record.get("label_smoothing", 0.0))
    nll = -logp[valid].gather(1, t[valid][:, None]).squeeze(1)
    per = (1 - eps) * nll + eps * (-logp[valid].mean(dim=1))
    total = per.sum()
    return total / valid.sum() if record.get("reduction", "mean") == "mean" else total


def padded_rows(run: Run, pad: int, grad: torch.Tensor) -> torch.Tensor:
    """The gradient rows (class axis 1 moved last) at positions whose target is the padding value."""
    g = grad.movedim(1, -1).reshape(-1, grad.shape[1]) if grad.dim() > 1 else grad[None]
    return g[run.target.reshape(-1) == pad]


def loss_grad(run: Run) -> torch.Tensor:
    return torch.autograd.grad(run.loss, run.loss_input, retain_graph=True)[0]


# ---------------------------------------------------------------------------------------------
# The checks
# ---------------------------------------------------------------------------------------------
def _verify_on(ctx: Context) -> None:
    params = ctx.params
    init = params.get("init_kwargs") or {}
    classes = int(params.get("num_classes") or next((init[n] for n in CLASS_ARG_NAMES if n in init), 5))
    vocab = int(params.get("vocab_size") or init.get("vocab_size") or classes)
    pad = int(params.get("padding_value", 0))
    kinds = arg_kinds(ctx)
    model = None
    if "model" in kinds:
        torch.manual_seed(ctx.seed + 3)
        model = TinyLM(vocab, classes).to(device=ctx.device, dtype=ctx.dtype)
    ctx.measure("padding_value", pad)
    ctx.measure("num_classes", classes)

    side = str(params.get("padding_side", "right"))  # where pad_sequence puts the padding
    witness = [Data(ctx, LENGTHS, g, classes, vocab, pad, side) for g in (0, 1)]
    before = call(ctx, ctx.original, kinds, witness[0], model)
    after = call(ctx, ctx.fixed, kinds, witness[0], model)
    where = f"{witness[0].describe()}, padding value {pad}, args {list(kinds)}"

    # 1. The original trains the padding.
    if not before.ok:
        ctx.add(ORIGINAL_TRAINS_PADDING, False, f"original raises on {where}: {before.describe_error()}")
        return
    run0: Run = before.value
    golden, _ = reference_loss(run0, pad, torch.float64)
    plain, _ = reference_loss(run0, pad, None)
    cmp = flash_rule(run0.loss.detach(), golden, plain)
    pad_rows0 = padded_rows(run0, pad, loss_grad(run0))
    pad_grad = float(pad_rows0.abs().max()) if pad_rows0.numel() else 0.0
    n_pad = int((run0.target == pad).sum())
    ctx.measure("padded_positions", n_pad)
    ctx.measure("original_loss", float(run0.loss))
    ctx.measure("reference_loss", float(golden))
    ctx.measure("original_max_error", cmp.max_error)
    ctx.measure("original_ratio", cmp.ratio)
    ctx.measure("original_padded_grad_max", pad_grad)
    ctx.measure("loss_calls", run0.calls)
    ignore = run0.record.get("ignore_index")
    visible = not cmp.passed and pad_grad > 0
    ctx.add(
        ORIGINAL_TRAINS_PADDING,
        visible,
        ("" if visible else "bug NOT visible: ") + f"{where}: the loss saw ignore_index={ignore} and {n_pad} "
        f"targets equal to the padding value; loss {float(run0.loss):.6g} vs reference {float(golden):.6g}: "
        f"{cmp.describe()}; max|d loss/d logits| at padded positions {pad_grad:.3e}",
    )

    # 2-4. The fixed loss and its gradient.
    if not after.ok:
        text = f"fixed raises on {where}: {after.describe_error()}"
        for name in (FIXED_MATCHES_LOSS, FIXED_GRADIENT_MATCHES, FIXED_PADDING_NO_GRADIENT):
            ctx.add(name, False, text)
    else:
        run1: Run = after.value
        fixed = run1.loss.detach()
        cmp = flash_rule(fixed, golden, plain)
        ctx.measure("fixed_loss", float(fixed))
        ctx.measure("fixed_max_error", cmp.max_error)
        ctx.measure("fixed_bound", cmp.bound)
        seen = run1.record.get("ignore_index")
        ctx.add(
            FIXED_MATCHES_LOSS,
            cmp.passed,
            f"{where}; the loss saw ignore_index={seen}: "
            f"loss {float(fixed):.6g} vs float64 reference {float(golden):.6g}: {cmp.describe()}",
        )
        naive = naive_loss(run0, pad)
        if naive is not None:  # with class weights only the F.cross_entropy reference applies
            ncmp = flash_rule(fixed, naive, plain)
            ctx.measure("fixed_naive_max_error", ncmp.max_error)
            ctx.add(
                FIXED_MATCHES_NAIVE_LOSS,
                ncmp.passed,
                f"hand-written float64 loss over the non-padded positions {float(naive):.6g}: {ncmp.describe()}",
            )
        grad1 = loss_grad(run1)
        with torch.enable_grad():
            ref_loss, ref_x = reference_loss(run0, pad, torch.float64, leaf=True)
            ref_grad = torch.autograd.grad(ref_loss, ref_x)[0]
            plain_loss, plain_x = reference_loss(run0, pad, None, leaf=True)
            plain_grad = torch.autograd.grad(plain_loss, plain_x)[0]
        gcmp = flash_rule(grad1, ref_grad, plain_grad)
        ctx.measure("fixed_grad_max_error", gcmp.max_error)
        ctx.measure("fixed_grad_bound", gcmp.bound)
        ctx.add(FIXED_GRADIENT_MATCHES, gcmp.passed, f"d loss / d logits: {gcmp.describe()}")
        rows = padded_rows(run1, pad, grad1)
        fixed_pad_grad = float(rows.abs().max()) if rows.numel() else 0.0
        ctx.measure("fixed_padded_grad_max", fixed_pad_grad)
        ctx.add(
            FIXED_PADDING_NO_GRADIENT,
            rows.numel() > 0 and fixed_pad_grad == 0.0,
            f"{rows.shape[0]} padded positions: max|d loss/d logits| there = {fixed_pad_grad:.3e}",
        )

    # 5. Garbage in the padded logits.
    if "logits" in kinds:
        other_before = call(ctx, ctx.original, kinds, witness[1], model)
        other_after = call(ctx, ctx.fixed, kinds, witness[1], model)
        if not (after.ok and other_after.ok):
            what = after if not after.ok else other_after
            ctx.add(FIXED_IGNORES_GARBAGE, False, f"fixed raises: {what.describe_error()}")
        else:
            a, b = after.value, other_after.value
            ga = torch.autograd.grad(a.loss, a.logits, retain_graph=True)[0]
            gb = torch.autograd.grad(b.loss, b.logits, retain_graph=True)[0]
            same = torch.equal(a.loss, b.loss) and torch.equal(ga, gb)
            if other_before.ok:
                ctx.measure("original_garbage_diff", max_abs_diff(run0.loss, other_before.value.loss))
            ctx.measure("fixed_garbage_diff", max_abs_diff(a.loss, b.loss))
            ctx.add(
                FIXED_IGNORES_GARBAGE,
                same,
                f"two garbage draws in the padded logits: fixed loss and gradient "
                f"{'torch.equal' if same else 'DIFFER'} (original loss moves by "
                f"{ctx.measurements.get('original_garbage_diff', float('nan')):.3e})",
            )

    # 6. No padding: the old loss was right.
    full = Data(ctx, (TOKENS,) * len(LENGTHS), 0, classes, vocab, pad)
    b, a = call(ctx, ctx.original, kinds, full, model), call(ctx, ctx.fixed, kinds, full, model)
    if not (a.ok and b.ok):
        ctx.add(NO_PADDING_BIT_IDENTICAL, False, f"no padding: {(b if not b.ok else a).describe_error()}")
    else:
        same = torch.equal(a.value.loss, b.value.loss)
        ctx.measure("no_padding_max_diff", max_abs_diff(a.value.loss, b.value.loss))
        ctx.add(
            NO_PADDING_BIT_IDENTICAL,
            same,
            f"{full.describe()}: original and fixed losses "
            + ("torch.equal" if same else f"differ by {ctx.measurements['no_padding_max_diff']:.3e}"),
        )

    # 7. Every target ignored.
    empty = Data(ctx, (0, 0), 0, classes, vocab, pad)
    a = call(ctx, ctx.fixed, kinds, empty, model)
    if not a.ok:
        ctx.add(ALL_IGNORED, False, f"{empty.describe()}: fixed raises {a.describe_error()}")
        return
    ref, _ = reference_loss(a.value, pad, torch.float64)
    fixed = a.value.loss.detach()
    same_nan = bool(torch.isnan(fixed)) == bool(torch.isnan(ref))
    equal = same_nan and max_abs_diff(fixed, ref) == 0.0
    ctx.measure("all_ignored_fixed_is_nan", bool(torch.isnan(fixed)))
    ctx.measure("all_ignored_reference_is_nan", bool(torch.isnan(ref)))
    reduction = a.value.record.get("reduction", "mean")
    ctx.add(
        ALL_IGNORED,
        equal,
        f"{empty.describe()} (reduction={reduction!r}): fixed loss {float(fixed)} vs reference {float(ref)}",
    )
