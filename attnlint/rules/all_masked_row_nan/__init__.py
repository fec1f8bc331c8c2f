"""ATN203 all-masked-row-nan."""

from __future__ import annotations

import libcst as cst

from attnlint.analysis import masks
from attnlint.diagnostics import Applicability
from attnlint.fixers.masking import zero_fully_masked_rows
from attnlint.rules.base import FixAvailability, Invalid, Rule, RuleContext, Valid


class AllMaskedRowNan(Rule):
    """
    ## What it does
    Checks for scores filled with `-inf` (`masked_fill(mask, float("-inf"))`, `-torch.inf`,
    `-math.inf`, `-np.inf`, an additive `-inf` mask, `torch.where(keep, scores, -inf)`, a store
    through a bool index, `scores[~keep] = float("-inf")`) from a mask that the code shows can
    mask a whole row, followed by a softmax with nothing that handles fully masked rows.
    A padding mask (a key-padding or attention-mask parameter, ids compared with the pad id,
    lengths, `arange(T) < lengths[:, None]`, or a mask parameter of no known kind laid out one
    value per sequence and key, `mask[:, None, None, :]`) masks padded *keys*: alone it empties a
    row only for a sequence that is all padding, which a batch of real data does not hold, so it
    is not reported on its own. It is reported where it empties rows in every padded batch:
    one padding mask laid along the keys and along the queries (`valid.unsqueeze(1) &
    valid.unsqueeze(2)`, `pad[:, None, :] | pad[:, :, None]`, `valid[:, None, :] * valid[:, :,
    None]`, `rearrange(valid, "b j -> b 1 j") & rearrange(valid, "b i -> b i 1")`), or a zero
    mask given ones per sequence in the block of its real queries and keys (`mask[i, :len_x[i], :len_mem[i]] = 1`):
    the row of every padded query is masked whole; and a padding mask under a causal mask in a
    file that pads on the left (see below).
    So do adjacency matrices built by scattering ones into zeros at edge pairs
    (`adj[src, dst] = 1`, then `adj == 0` as the mask): a node no edge reaches has an empty row,
    unless self loops are added (`fill_diagonal_`, `+ torch.eye(n)`, `adj[i, i] = 1`).
    Scores compared with a threshold that does not come from their own row (a number, a module
    attribute such as a learned cutoff or `self.cfg.min_similarity`, a parameter) also count:
    every key of a row can fall on the masked side. So do query-key similarities
    (`cosine_similarity(q[:, None], keys[None], dim=-1)`, `cdist(q, keys)`, or the product of two
    different sets of vectors, `F.normalize(h) @ F.normalize(memory).mT`) against such a
    threshold; of a tensor with itself the diagonal always passes and nothing is reported. A
    threshold from the row itself (its `topk`) keeps keys and is not reported.
    A mask that can empty a row still does after `&` with any other mask (`band & keep`, when
    `keep` reads True = attend): the result attends only where it does. `|` with a True = masked
    mask likewise.
    Fills of the same scores one after the other count together: a causal fill
    and then a fill of the pad positions mask what `causal | pad` masks (see below for when
    that empties a row). So do the masks given to `nn.MultiheadAttention` (`attn_mask` and
    `key_padding_mask`) and to `nn.Transformer*` (`src_mask`/`mask`, `tgt_mask`, `memory_mask`
    with their key-padding masks), which the module fills with -inf where they are True (a bool
    mask, or a bias of -inf): SASRec's causal mask with the padding mask of left-padded
    histories. Not an `nn.MultiheadAttention` call with `need_weights=False`, whose fused path
    returns zeros for such rows.

    ## Why is this bad?
    The softmax of a row that is all `-inf` is `0/0 = NaN`. Such rows appear with an empty
    sequence in the batch, or with left padding plus a causal mask (the first real token's
    predecessors are all padding). The NaN spreads through the values, the loss and every
    gradient: one bad batch can destroy a run. `F.scaled_dot_product_attention` defines these
    rows as 0 instead. A key-padding mask alone empties a row only for an empty sequence; the
    rows this rule reports are empty in ordinary padded batches.

    A padding mask (a parameter, or built from token ids or a pad id) under a causal mask is
    reported when the file pads on the left (`out[i, n - len(s):] = s`, `[pad] * (n - len(s)) + s`,
    `padding_side="left"`, `F.pad(x, (k, 0))`, `np.concatenate([np.zeros(K - n), ...])`, or a
    function that tests ids for padding and reads each sequence at its last position, `h[:, -1,
    :]`), or a file of its directory that imports it does (a trainer left-padding the batches it
    hands the model): the first queries of a short sequence then see only padding.
    Causal triangles count in NumPy too (`torch.from_numpy(np.tril(np.ones((T, T))))`).

    Not reported: a parameter named as a keep mask (`attention_mask`, 1 = attend) that the code
    fills with -inf where it is True: the code reads it as a prepared mask of its own kind, whose
    rows are its callers' (Hugging Face's DETR family converting a bool mask to a bias). Nor
    a key-padding mask on its own (a parameter, ids compared with the pad id, lengths: only a
    sequence that is all padding would empty a row, which the code does not show) or under a
    causal mask in a file that does not pad on the left (right padding keeps key 0 real in every
    row), pure causal masks that keep the diagonal (no row can be empty), finite fills
    (`-1e9`, `torch.finfo(dtype).min`), a guard after the softmax (`torch.where`, `masked_fill`,
    `nan_to_num`) on the weights that every use sees, and SDPA. A guard on one branch only, or
    one whose result is thrown away (`_ = w.nan_to_num(0.0)`), does not count.

    With the option `empty-sequences = true` (under `[tool.attnlint.all-masked-row-nan]`), for
    code whose batches can hold a sequence with no real token (an empty utterance, a document with
    no passage kept), a padding mask on its own is reported too: such a sequence's rows are empty.

    ## Fix safety
    The fix is unsafe: rows that were NaN become 0 (all other rows are bit-identical). It zeroes
    the rows whose every score is -inf after the softmax with `masked_fill`, which covers every
    fill at once and keeps the q and k gradients finite.
    `nan_to_num` after an *additive* `-inf` mask fixes the forward pass only (the gradients stay
    NaN), so for additive masks no fix is offered: use `masked_fill` or a finite fill instead.
    """

    code = "ATN203"
    name = "all-masked-row-nan"
    summary = "a -inf mask that can empty a whole row makes softmax return NaN"
    fix_availability = FixAvailability.SOMETIMES
    fix_applicability = Applicability.UNSAFE
    # -inf fills; nn.MultiheadAttention fills where its bool masks say (no -inf written).
    triggers = (r"\binf\b", "key_padding_mask")
    recipe = "all_masked_row_nan"
    default_options = {"empty-sequences": False}

    def _can_empty_a_row(self, ctx: RuleContext, facts) -> bool:
        """What the code shows, or (told the data can hold one) an all-padding sequence."""
        if ctx.analysis.can_empty_a_row(facts):
            return True
        return bool(self.options["empty-sequences"]) and masks.masks_empty_sequences(facts)

    def check(self, ctx: RuleContext) -> None:
        reported = set()
        for site in ctx.analysis.softmax_sites:
            if site.guarded:
                continue
            # A fill on only some paths (`if mask is not None: ...`): the mask may be None on the
            # others, so a fix that reads it is not offered.
            partial = site.input.fills_partial
            for fill in site.input.fills:
                facts = fill.mask.mask
                if fill.fill != "-inf" or facts is None:
                    continue
                if not (self._can_empty_a_row(ctx, facts) or _fills_a_whole_row(fill)):
                    continue
                if id(fill.call) in reported:
                    continue
                reported.add(id(fill.call))
                if facts.param:
                    source = f"`{facts.param}`"
                elif isinstance(fill.mask_node, (cst.Name, cst.Attribute)):
                    source = f"`{ctx.code(fill.mask_node)}`"
                elif facts.origin in ("comparison", "scattered") and len(ctx.code(fill.mask_node)) <= 40:
                    source = f"`{ctx.code(fill.mask_node)}`"
                else:
                    source = "this padding mask" if facts.origin != "comparison" else "this mask"
                why = {
                    "comparison": "a threshold on the scores, can leave a row with no key on the kept side",
                    "scattered": "can mask every key of a row (a node no edge reaches, with no self loop)",
                }.get(
                    facts.origin,
                    "can mask every key of a row (a left-padded query under the causal mask sees only padding)"
                    if facts.padding_under_causal and ctx.analysis.pads_left
                    else "can mask every key of a row"
                    if ctx.analysis.can_empty_a_row(facts)
                    else "masks every key of a sequence that is all padding (`empty-sequences = true`)",
                )
                if facts.masks_padded_queries:
                    why = "masks padded queries as well as padded keys: the row of every padded query is empty"
                ctx.report(
                    fill.call,
                    f"-inf fill from {source}{',' if facts.origin == 'comparison' else ''} {why}; softmax then "
                    "returns NaN for that row",
                    fix=zero_fully_masked_rows(ctx.module, site.call, site.input_node, fill, partial),
                )
            together = masks.filled_together(site.input.fills)
            if together is None or not self._can_empty_a_row(ctx, together):
                continue
            # Each fill alone leaves a key per row (a causal mask, padding of ids), but one after
            # the other they mask the union: a left-padded query sees only padding before it.
            last = [f for f in site.input.fills if f.fill == "-inf"][-1]
            if any(id(f.call) in reported for f in site.input.fills) or id(last.call) in reported:
                continue
            reported.add(id(last.call))
            ctx.report(
                last.call,
                "-inf fills of a causal and a padding mask, one after the other, can mask every key of "
                "a row (a left-padded query sees only padding before it); softmax then returns NaN "
                "for that row",
                fix=zero_fully_masked_rows(ctx.module, site.call, site.input_node, last, partial),
            )

        for function in ctx.analysis.functions:
            for call, together in masks.given_together(function.mask_uses):
                if together is None or not self._can_empty_a_row(ctx, together):
                    continue
                why = (
                    "a left-padded query under the causal mask sees only padding before it"
                    if together.padding_under_causal and ctx.analysis.pads_left
                    else "a padded query's row is masked whole"
                    if together.masks_padded_queries
                    else "some row has no key left"
                )
                ctx.report(
                    call,
                    f"the masks given to this attention can mask every key of a row ({why}); the "
                    "module then returns NaN for that row",
                )

    VALID = [
        # nanoGPT fine-tuned on right-padded prompt/response pairs: the prompt's labels are
        # ignored (`[-100] * len(prompt)`, a run as long as part of the row, not padding), and
        # every padded query still sees key 0 under the causal mask.
        Valid(
            """
            import torch
            import torch.nn.functional as F


            def sft_collate(examples, eot=50256):
                seqs = [ex["prompt"] + ex["response"] + [eot] for ex in examples]
                labels = [[-100] * len(ex["prompt"]) + ex["response"] + [eot] for ex in examples]
                T = max(len(s) for s in seqs)
                ids = torch.full((len(seqs), T), eot, dtype=torch.long)
                mask = torch.zeros((len(seqs), T), dtype=torch.long)
                for i, s in enumerate(seqs):
                    ids[i, : len(s)] = torch.tensor(s)
                    mask[i, : len(s)] = 1
                return ids, mask, labels


            class CausalSelfAttention(torch.nn.Module):
                def __init__(self, n_embd, n_head, block_size):
                    super().__init__()
                    self.n_head = n_head
                    self.c_attn = torch.nn.Linear(n_embd, 3 * n_embd)
                    self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size))

                def forward(self, x, attention_mask=None):
                    B, T, C = x.size()
                    q, k, v = self.c_attn(x).split(C, dim=2)
                    q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
                    att = (q @ k.transpose(-2, -1)) / (k.size(-1) ** 0.5)
                    att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
                    if attention_mask is not None:
                        att = att.masked_fill(attention_mask[:, None, None, :] == 0, float("-inf"))
                    return F.softmax(att, dim=-1) @ v
            """
        ),
        # nn.MultiheadAttention given a causal mask and a key-padding mask over right-padded
        # histories: key 0 is real in every row.
        Valid(
            """
            import numpy as np
            import torch
            import torch.nn as nn


            def right_padded(history, maxlen):
                seq = np.zeros([maxlen], dtype=np.int64)
                history = history[-maxlen:]
                seq[: len(history)] = history
                return seq


            class SASRec(nn.Module):
                def __init__(self, item_num, hidden, heads):
                    super().__init__()
                    self.item_emb = nn.Embedding(item_num + 1, hidden, padding_idx=0)
                    self.attn = nn.MultiheadAttention(hidden, heads, batch_first=True)

                def forward(self, log_seqs):
                    seqs = self.item_emb(log_seqs)
                    timeline_mask = log_seqs == 0
                    n = seqs.shape[1]
                    causal = ~torch.tril(torch.ones((n, n), dtype=torch.bool, device=seqs.device))
                    out, _ = self.attn(seqs, seqs, seqs, attn_mask=causal, key_padding_mask=timeline_mask)
                    return out
            """
        ),
        # Left padding, but `need_weights=False`: the fused path returns zeros for an empty row.
        Valid(
            """
            import numpy as np
            import torch
            import torch.nn as nn


            def left_padded(history, maxlen):
                seq = np.zeros([maxlen], dtype=np.int64)
                idx = maxlen - 1
                for item in reversed(history):
                    seq[idx] = item
                    idx -= 1
                    if idx == -1:
                        break
                return seq


            class SASRec(nn.Module):
                def __init__(self, item_num, hidden, heads):
                    super().__init__()
                    self.item_emb = nn.Embedding(item_num + 1, hidden, padding_idx=0)
                    self.attn = nn.MultiheadAttention(hidden, heads, batch_first=True)

                def forward(self, log_seqs):
                    seqs = self.item_emb(log_seqs)
                    timeline_mask = log_seqs == 0
                    n = seqs.shape[1]
                    causal = ~torch.tril(torch.ones((n, n), dtype=torch.bool, device=seqs.device))
                    out, _ = self.attn(seqs, seqs, seqs, attn_mask=causal, key_padding_mask=timeline_mask, need_weights=False)
                    return out
            """
        ),
        # A key-padding mask alone: every real sequence keeps a real key in every row (only an
        # all-padding sequence would empty one, which the code does not show).
        Valid(
            """
            import torch
            def attention(q, k, v, key_padding_mask):
                s = (q @ k.transpose(-2, -1)) * q.size(-1) ** -0.5
                s = s.masked_fill(key_padding_mask[:, None, None, :], float("-inf"))
                w = s.softmax(dim=-1)
                return w @ v
            """
        ),
        # Hugging Face's attention_mask (1 = attend), inverted and laid out per key.
        Valid(
            """
            import math
            import torch
            def attention(q, k, v, attention_mask):
                scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.size(-1))
                scores = scores.masked_fill(attention_mask[:, None, None, :] == 0, -math.inf)
                return torch.matmul(torch.softmax(scores, dim=-1), v)
            """
        ),
        # Lengths give a key-padding mask: lengths of real clips are at least 1.
        Valid(
            """
            import torch
            def attention(q, k, v, lengths):
                pad = torch.arange(k.size(-2), device=k.device)[None, :] >= lengths[:, None]
                s = q @ k.transpose(-2, -1) / q.size(-1) ** 0.5
                s = s.masked_fill(pad[:, None, None, :], float("-inf"))
                return s.softmax(-1) @ v
            """
        ),
        # A causal mask with right padding (the default): key 0 is real in every row.
        Valid(
            """
            import torch
            def attention(q, k, v, key_padding_mask):
                T = q.size(-2)
                future = torch.triu(torch.ones(T, T, dtype=torch.bool, device=q.device), diagonal=1)
                s = q @ k.transpose(-2, -1) * q.size(-1) ** -0.5
                s = s.masked_fill(future | key_padding_mask[:, None, None, :], float("-inf"))
                return s.softmax(-1) @ v
            """
        ),
        # A pair mask laid out for the heads (`b i j -> b 1 i j`): no key-padding layout.
        Valid(
            """
            import torch
            from einops import rearrange


            def attend(q, k, v, mask):
                sim = torch.einsum("b h i d, b h j d -> b h i j", q, k) * q.shape[-1] ** -0.5
                # One value per query and key pair (b i j -> b 1 i j): no padding layout, of no known kind.
                sim = sim.masked_fill(~rearrange(mask, "b i j -> b 1 i j"), float("-inf"))
                return sim.softmax(dim=-1) @ v
            """
        ),
        # Stores over the future only: every row keeps its diagonal.
        Valid(
            """
            import torch


            def causal_attention(q, k, v):
                t = q.size(-2)
                scores = q @ k.transpose(-2, -1) / q.size(-1) ** 0.5
                future = torch.ones(t, t, dtype=torch.bool, device=q.device).triu(1)
                # Only the future is stored over: every row keeps its diagonal.
                scores[..., future] = float("-inf")
                scores[future.expand_as(scores)] = float("-inf")
                return scores.softmax(dim=-1) @ v
            """
        ),
        # The same store with a finite fill.
        Valid(
            """
            import torch


            def utterance_attention(q, k, v, frame_lens):
                scores = q @ k.transpose(-2, -1) / q.size(-1) ** 0.5
                frame_ok = torch.arange(k.size(1), device=k.device)[None, None, :] < frame_lens[:, None, None]
                # The same store with a finite fill: an empty clip gets uniform weights, not NaN.
                scores[~frame_ok.expand_as(scores)] = -1e4
                return scores.softmax(dim=-1) @ v
            """
        ),
        # The same product of unit vectors with themselves: the diagonal is 1, so a row always keeps its own key.
        Valid(
            """
            import torch
            import torch.nn.functional as F


            def self_grounded_read(h, min_cos=0.3):
                # Unit vectors against themselves: the diagonal is 1, so every row keeps its own position.
                unit = F.normalize(h, dim=-1)
                cos = unit @ unit.transpose(-2, -1)
                logits = torch.einsum("bqd,bkd->bqk", h, h) / h.size(-1) ** 0.5
                logits = logits.masked_fill(cos < min_cos, float("-inf"))
                return logits.softmax(dim=-1) @ h
            """
        ),
        # Lengths clamped to at least 1 by the caller before a helper builds the mask from them:
        # every row keeps its first key.
        Valid(
            """
            import torch
            from torch import nn


            class FrameAttention(nn.Module):
                def __init__(self, width):
                    super().__init__()
                    self.q = nn.Linear(width, width)
                    self.k = nn.Linear(width, width)

                def key_padding(self, lens, n):
                    return torch.arange(n, device=lens.device)[None, :] >= lens[:, None]

                def forward(self, frames, frame_lens):
                    is_pad = self.key_padding(frame_lens.clamp_min(1), frames.shape[1])
                    q, k = self.q(frames), self.k(frames)
                    scores = q @ k.transpose(1, 2) / q.shape[-1] ** 0.5
                    scores = scores.masked_fill(is_pad[:, None, :], float("-inf"))
                    return scores.softmax(dim=-1) @ frames
            """
        ),
        # The only caller passes a keep-mask in which every sequence keeps a token.
        Valid(
            """
            import torch
            from torch import nn


            class MaskedSelfAttention(nn.Module):
                def __init__(self, width=16):
                    super().__init__()
                    self.qkv = nn.Linear(width, 3 * width)

                def forward(self, tokens, keep):
                    q, k, v = self.qkv(tokens).chunk(3, dim=-1)
                    logits = torch.einsum("bqd,bkd->bqk", q, k) / q.shape[-1] ** 0.5
                    logits = logits.masked_fill(~keep.bool()[:, None, :], float("-inf"))
                    return torch.einsum("bqk,bkd->bqd", logits.softmax(dim=-1), v)


            if __name__ == "__main__":
                layer = MaskedSelfAttention().eval()
                keep = torch.tensor([[1, 1, 1, 0], [1, 0, 0, 0]])
                layer(torch.randn(2, 4, 16), keep)
            """
        ),
        # The first key (CLS) is never masked: no row can be emptied.
        Valid(
            """
            def f(q, k, key_padding_mask):
                s = q @ k.transpose(-2, -1) * q.size(-1) ** -0.5
                key_padding_mask[:, 0] = False
                s = s.masked_fill(key_padding_mask[:, None, None, :], float('-inf'))
                return s.softmax(-1)
            """
        ),
        # A guard before the softmax.
        Valid(
            """
            import torch


            def f(q, k, key_padding_mask):
                s = q @ k.transpose(-2, -1) * q.size(-1) ** -0.5
                s = s.masked_fill(key_padding_mask[:, None, None, :], float('-inf'))
                s = torch.where(torch.isinf(s).all(-1, keepdim=True), torch.zeros_like(s), s)
                return s.softmax(-1)
            """
        ),
        # A guard by subscript assignment.
        Valid(
            """
            import torch


            def f(q, k, key_padding_mask):
                s = q @ k.transpose(-2, -1) * q.size(-1) ** -0.5
                s = s.masked_fill(key_padding_mask[:, None, None, :], float('-inf'))
                w = s.softmax(-1)
                w[torch.isnan(w)] = 0.0
                return w
            """
        ),
        # In-place nan_to_num_ guard.
        Valid(
            """
            def f(q, k, key_padding_mask):
                s = q @ k.transpose(-2, -1) * q.size(-1) ** -0.5
                s = s.masked_fill(key_padding_mask[:, None, None, :], float('-inf'))
                w = s.softmax(-1)
                w.nan_to_num_(0.0)
                return w
            """
        ),
        # Pure causal mask keeping the diagonal (the course notes).
        Valid(
            """
            import torch
            import torch.nn as nn
            class CausalAttention(nn.Module):
                def __init__(self, context_length):
                    super().__init__()
                    self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))
                def forward(self, q, k, v):
                    b, n, d = q.shape
                    s = q @ k.transpose(1, 2)
                    s.masked_fill_(self.mask.bool()[:n, :n], -torch.inf)
                    return torch.softmax(s / d ** 0.5, dim=-1) @ v
            """
        ),
        # Finite fill.
        Valid(
            """
            import torch
            def attention(q, k, v, attention_mask):
                s = q @ k.transpose(-2, -1) / q.size(-1) ** 0.5
                s = s.masked_fill(attention_mask == 0, -1e9)
                return s.softmax(-1) @ v
            """
        ),
        Valid(
            """
            import torch
            def attention(q, k, v, attention_mask):
                s = q @ k.transpose(-2, -1) / q.size(-1) ** 0.5
                s = s.masked_fill(attention_mask == 0, torch.finfo(s.dtype).min)
                return s.softmax(-1) @ v
            """
        ),
        # Guarded after the softmax.
        Valid(
            """
            import torch
            def attention(q, k, v, key_padding_mask):
                s = (q @ k.transpose(-2, -1)) * q.size(-1) ** -0.5
                m = key_padding_mask[:, None, None, :]
                s = s.masked_fill(m, float("-inf"))
                w = s.softmax(dim=-1)
                w = w.masked_fill(m.all(dim=-1, keepdim=True), 0.0)
                return w @ v
            """
        ),
        Valid(
            """
            import torch
            def attention(q, k, v, padding_mask):
                s = (q @ k.transpose(-2, -1)) * q.size(-1) ** -0.5
                s = s.masked_fill(padding_mask, float("-inf"))
                w = torch.nan_to_num(torch.softmax(s, dim=-1))
                return w @ v
            """
        ),
        # SDPA handles fully masked rows.
        Valid(
            """
            import torch.nn.functional as F
            def attention(q, k, v, attention_mask):
                return F.scaled_dot_product_attention(q, k, v, attn_mask=attention_mask.bool())
            """
        ),
        # A generic `mask` argument: what it can mask is unknown.
        Valid(
            """
            import torch
            def attention(q, k, v, mask):
                s = (q @ k.transpose(-2, -1)) * q.size(-1) ** -0.5
                s = s.masked_fill(mask == 0, float("-inf"))
                return s.softmax(-1) @ v
            """
        ),
        # tril causal mask used with where.
        Valid(
            """
            import torch
            def attention(q, k, v):
                T = q.size(-2)
                keep = torch.tril(torch.ones(T, T, dtype=torch.bool))
                s = torch.where(keep, (q @ k.transpose(-2, -1)) * q.size(-1) ** -0.5, float("-inf"))
                return s.softmax(-1) @ v
            """
        ),
        # A pure causal additive -inf mask keeps the diagonal.
        Valid(
            """
            import torch
            def attention(q, k, v):
                T = q.size(-2)
                mask = torch.full((T, T), float("-inf"), device=q.device).triu(diagonal=1)
                s = q @ k.transpose(-2, -1) * q.size(-1) ** -0.5
                s = s + mask
                return s.softmax(-1) @ v
            """
        ),
        # nanoGPT: `bias[:, :, :T, :T] == 0` keeps the diagonal.
        Valid(
            """
            import math
            import torch
            import torch.nn as nn
            import torch.nn.functional as F
            class CausalSelfAttention(nn.Module):
                def __init__(self, config):
                    super().__init__()
                    self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
                    self.n_head = config.n_head
                    self.register_buffer("bias", torch.tril(torch.ones(config.block_size, config.block_size))
                                                .view(1, 1, config.block_size, config.block_size))
                def forward(self, x):
                    B, T, C = x.size()
                    q, k, v = self.c_attn(x).split(C, dim=2)
                    q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                    k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                    v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
                    att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
                    att = F.softmax(att, dim=-1)
                    return (att @ v).transpose(1, 2).contiguous().view(B, T, C)
            """
        ),
        # x-transformers: `-torch.finfo(dtype).max` fill.
        Valid(
            """
            import torch
            from torch import einsum
            def attend(q, k, v, mask):
                dots = einsum("b h i d, b h j d -> b h i j", q, k) * q.shape[-1] ** -0.5
                dots = dots.masked_fill(~mask[:, None, None, :], -torch.finfo(dots.dtype).max)
                attn = dots.softmax(dim=-1)
                return einsum("b h i j, b h j d -> b h i d", attn, v)
            """
        ),
        # nn.Transformer.generate_square_subsequent_mask: pure causal.
        Valid(
            """
            import torch
            import torch.nn as nn
            def causal_attention(q, k, v):
                T = q.size(-2)
                mask = nn.Transformer.generate_square_subsequent_mask(T)
                s = q @ k.transpose(-2, -1) * q.size(-1) ** -0.5
                return (s + mask).softmax(dim=-1) @ v
            """
        ),
        # Guard with torch.where after the softmax.
        Valid(
            """
            import torch
            def attention(q, k, v, key_padding_mask):
                m = key_padding_mask[:, None, None, :]
                s = q @ k.transpose(-2, -1) * q.size(-1) ** -0.5
                s = s.masked_fill(m, float("-inf"))
                attn = s.softmax(dim=-1)
                attn = torch.where(m.all(dim=-1, keepdim=True), torch.zeros_like(attn), attn)
                return attn @ v
            """
        ),
        # Guard with .nan_to_num() after the softmax.
        Valid(
            """
            import torch
            def attention(q, k, v, attention_mask):
                s = q @ k.transpose(-2, -1) * q.size(-1) ** -0.5
                s = s.masked_fill(attention_mask[:, None, None, :] == 0, float("-inf"))
                attn = s.softmax(dim=-1).nan_to_num(0.0)
                return attn @ v
            """
        ),
        # SDPA with an additive -inf bias: SDPA's business.
        Valid(
            """
            import torch
            import torch.nn.functional as F
            def attention(q, k, v, key_padding_mask):
                bias = torch.zeros(key_padding_mask.shape, dtype=q.dtype).masked_fill(key_padding_mask, float("-inf"))
                return F.scaled_dot_product_attention(q, k, v, attn_mask=bias[:, None, None, :])
            """
        ),
        # Finite -1e4 fill (fp16-friendly).
        Valid(
            """
            import torch
            def attention(q, k, v, attention_mask):
                s = q @ k.transpose(-2, -1) * q.size(-1) ** -0.5
                s = s.masked_fill(attention_mask[:, None, None, :] == 0, -1e4)
                return s.softmax(-1) @ v
            """
        ),
        # `~tril(...)`: pure causal.
        Valid(
            """
            import torch
            def causal(q, k, v):
                T = q.size(-2)
                future = ~torch.tril(torch.ones(T, T, dtype=torch.bool, device=q.device))
                s = q @ k.transpose(-2, -1) * q.size(-1) ** -0.5
                s = s.masked_fill(future, float("-inf"))
                return s.softmax(-1) @ v
            """
        ),
        # `ones(T, T).triu(1).bool()` in place: pure causal.
        Valid(
            """
            import torch
            def causal(q, k, v):
                T = q.size(-2)
                future = torch.ones(T, T, device=q.device).triu(1).bool()
                s = q @ k.transpose(-2, -1) * q.size(-1) ** -0.5
                s.masked_fill_(future, -torch.inf)
                return torch.softmax(s, dim=-1) @ v
            """
        ),
        # HF eager: torch.where with finfo.min.
        Valid(
            """
            import torch
            import torch.nn.functional as F
            def attention(q, k, v, attention_mask):
                dtype = q.dtype
                min_value = torch.finfo(dtype).min
                s = torch.matmul(q, k.transpose(2, 3)) * q.size(-1) ** -0.5
                s = torch.where(attention_mask[:, None, None, :].bool(), s, torch.tensor(min_value, dtype=dtype))
                return torch.matmul(F.softmax(s, dim=-1, dtype=torch.float32).to(dtype), v)
            """
        ),
        # A tril buffer sliced, used with torch.where.
        Valid(
            """
            import torch
            import torch.nn as nn
            class Causal(nn.Module):
                def __init__(self, n):
                    super().__init__()
                    self.register_buffer("causal", torch.tril(torch.ones(n, n, dtype=torch.bool)))
                def forward(self, q, k, v):
                    T = q.size(-2)
                    s = q @ k.transpose(-2, -1) * q.size(-1) ** -0.5
                    s = torch.where(self.causal[:T, :T], s, float("-inf"))
                    return s.softmax(-1) @ v
            """
        ),
        # Guard on the batch axis: empty sequences zeroed after the softmax.
        Valid(
            """
            import torch
            def attention(q, k, v, key_padding_mask):
                s = q @ k.transpose(-2, -1) * q.size(-1) ** -0.5
                s = s.masked_fill(key_padding_mask[:, None, None, :], float("-inf"))
                attn = s.softmax(dim=-1)
                empty = key_padding_mask.all(dim=-1)
                attn = attn.masked_fill(empty[:, None, None, None], 0.0)
                return attn @ v
            """
        ),
        # HF Llama eager attention: additive finfo.min mask.
        Valid(
            """
            import torch
            import torch.nn as nn
            class LlamaAttention(nn.Module):
                def forward(self, hidden_states, attention_mask=None):
                    q, k, v = self.q_proj(hidden_states), self.k_proj(hidden_states), self.v_proj(hidden_states)
                    attn_weights = torch.matmul(q, k.transpose(2, 3)) * self.scaling
                    if attention_mask is not None:
                        causal_mask = attention_mask[:, :, :, : k.shape[-2]]
                        attn_weights = attn_weights + causal_mask
                    attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(q.dtype)
                    return torch.matmul(attn_weights, v)
            """
        ),
        # Guarded on every path.
        Valid(
            """
            import torch


            def attend(q, k, v, key_padding_mask, training: bool):
                s = q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5
                s = s.masked_fill(key_padding_mask[:, None, None, :], float("-inf"))
                w = s.softmax(dim=-1)
                if training:
                    w = w.nan_to_num(0.0)
                else:
                    w = torch.nan_to_num(w, nan=0.0)
                return w @ v
            """
        ),
        # Ids compared with the pad id, guarded after the softmax.
        Valid(
            """
            import torch
            import torch.nn as nn


            class SequenceEncoder(nn.Module):
                def __init__(self, n_items, d=32):
                    super().__init__()
                    self.items = nn.Embedding(n_items, d, padding_idx=0)
                    self.qk = nn.Linear(d, 2 * d)

                def forward(self, item_seq):
                    h = self.items(item_seq)
                    q, k = self.qk(h).chunk(2, dim=-1)
                    s = q @ k.transpose(1, 2) / h.size(-1) ** 0.5
                    s = s.masked_fill((item_seq == 0)[:, None, :], float("-inf"))
                    w = torch.softmax(s, dim=-1).nan_to_num(0.0)
                    return w @ h
            """
        ),
        # Ids compared with the pad id 0 as a key-padding mask alone: a row is emptied only by a
        # sequence that is all padding, which nothing shows (a batch of sentences has none).
        Valid(
            """
            import torch
            import torch.nn as nn


            class SentenceEncoder(nn.Module):
                def __init__(self, vocab, d=32):
                    super().__init__()
                    self.tokens = nn.Embedding(vocab, d, padding_idx=0)
                    self.qk = nn.Linear(d, 2 * d)

                def forward(self, ids):
                    h = self.tokens(ids)
                    q, k = self.qk(h).chunk(2, dim=-1)
                    s = q @ k.transpose(1, 2) / h.size(-1) ** 0.5
                    s = s.masked_fill((ids == 0)[:, None, :], float("-inf"))
                    return torch.softmax(s, dim=-1) @ h
            """
        ),
        # A tensor compared with 0 that nothing shows holds ids: unknown.
        Valid(
            """
            import torch
            import torch.nn as nn


            class SequenceEncoder(nn.Module):
                def __init__(self, n_items, d=32):
                    super().__init__()
                    self.items = nn.Embedding(n_items, d, padding_idx=0)
                    self.qk = nn.Linear(d, 2 * d)

                def forward(self, item_seq, features):
                    h = self.items(item_seq)
                    q, k = self.qk(h).chunk(2, dim=-1)
                    s = q @ k.transpose(1, 2) / h.size(-1) ** 0.5
                    s = s.masked_fill((features == 0)[:, None, :], float("-inf"))
                    return torch.softmax(s, dim=-1) @ h
            """
        ),
        # Ids padded on the right (pad_sequence) under a causal -inf mask: key 0 is a real
        # token in every row, so no row is empty.
        Valid(
            """
            import torch
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence

            PAD = 0


            def batchify(sequences):
                return pad_sequence(sequences, batch_first=True, padding_value=PAD)


            class TinyLM(nn.Module):
                def __init__(self, vocab, d):
                    super().__init__()
                    self.embed = nn.Embedding(vocab, d, padding_idx=PAD)

                def forward(self, tokens):
                    T = tokens.size(1)
                    x = self.embed(tokens)
                    s = x @ x.transpose(-2, -1) / x.size(-1) ** 0.5
                    future = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=1)
                    blocked = future[None] | (tokens == PAD)[:, None, :]
                    return s.masked_fill(blocked, float("-inf")).softmax(-1) @ x
            """
        ),
        # A causal fill and a local window: both keep the diagonal, so no row is emptied.
        Valid(
            """
            import torch


            def windowed(q, k, v, window=4):
                n = q.size(-2)
                s = q @ k.transpose(-2, -1) * q.size(-1) ** -0.5
                i = torch.arange(n, device=q.device)
                s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
                s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).tril(-window), float("-inf"))
                return s.softmax(-1) @ v
            """
        ),
        # A causal fill and a pad fill, guarded after the softmax.
        Valid(
            """
            import torch
            import torch.nn as nn


            class GuardedDecoder(nn.Module):
                def __init__(self, vocab, width):
                    super().__init__()
                    self.embed = nn.Embedding(vocab, width, padding_idx=0)
                    self.qk = nn.Linear(width, 2 * width)

                def forward(self, ids):
                    h = self.embed(ids)
                    q, k = self.qk(h).chunk(2, dim=-1)
                    n = ids.size(1)
                    s = q @ k.transpose(1, 2) / q.size(-1) ** 0.5
                    s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=ids.device).triu(1), float("-inf"))
                    s = s.masked_fill((ids == 0)[:, None, :], float("-inf"))
                    return torch.nan_to_num(s.softmax(dim=-1), nan=0.0) @ h
            """
        ),
        # A causal fill and a caller's mask whose convention nothing shows.
        Valid(
            """
            import torch


            def attend(q, k, v, mask):
                n = q.size(-2)
                s = q @ k.transpose(-2, -1) * q.size(-1) ** -0.5
                s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
                s = s.masked_fill(mask, float("-inf"))
                return s.softmax(-1) @ v
            """
        ),
        # An additive -inf triangle alone (nn.Transformer's causal mask): the diagonal stays.
        Valid(
            """
            import torch
            import torch.nn as nn


            def causal_scores(q, k, v):
                n = q.size(1)
                s = q @ k.transpose(1, 2) / q.size(-1) ** 0.5
                s = s + nn.Transformer.generate_square_subsequent_mask(n).to(q.device)
                s = s + torch.full((n, n), float("-inf"), device=q.device).triu(1)
                return s.softmax(dim=-1) @ v
            """
        ),
        # Lengths that the caller packs (pack_padded_sequence rejects a length of 0): every row
        # keeps its first key.
        Valid(
            """
            import torch
            import torch.nn as nn
            from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


            class Pool(nn.Module):
                def __init__(self, width):
                    super().__init__()
                    self.score = nn.Linear(width, 1)

                def forward(self, states, lengths):
                    e = self.score(states).squeeze(-1)
                    steps = torch.arange(states.size(1), device=states.device)
                    e = e.masked_fill(steps[None, :] >= lengths[:, None], float("-inf"))
                    return (e.softmax(dim=1).unsqueeze(-1) * states).sum(1)


            class Reader(nn.Module):
                def __init__(self, vocab, width=64):
                    super().__init__()
                    self.embed = nn.Embedding(vocab, width)
                    self.rnn = nn.GRU(width, width, batch_first=True)
                    self.pool = Pool(width)

                def forward(self, ids, lengths):
                    packed = pack_padded_sequence(self.embed(ids), lengths.cpu(), batch_first=True, enforce_sorted=False)
                    out, _ = pad_packed_sequence(self.rnn(packed)[0], batch_first=True, total_length=ids.size(1))
                    return self.pool(out, lengths)
            """
        ),
        # Top-k sparse attention: the threshold is each row's k-th score, so k keys stay.
        Valid(
            """
            import torch


            def topk_attention(q, k, v, top=8):
                s = q @ k.transpose(-2, -1) * q.size(-1) ** -0.5
                kth = s.topk(top, dim=-1).values[..., -1:]
                s = s.masked_fill(s < kth, float("-inf"))
                return s.softmax(dim=-1) @ v
            """
        ),
        # A radius on distances, not on the scores: what the points are is not shown.
        Valid(
            """
            import torch


            def local_attention(q, k, v, pos, radius=2.0):
                s = q @ k.transpose(-2, -1) * q.size(-1) ** -0.5
                s = s.masked_fill(torch.cdist(pos, pos) > radius, float("-inf"))
                return s.softmax(dim=-1) @ v
            """
        ),
        # Edges scattered into an adjacency, then self loops: every node attends to itself.
        Valid(
            """
            import torch


            def graph_attention(h, scores_fn, edges, n):
                adj = torch.zeros(n, n)
                adj[edges[0], edges[1]] = 1.0
                adj.fill_diagonal_(1.0)
                e = scores_fn(h)
                e = e.masked_fill(adj == 0, float("-inf"))
                return torch.softmax(e, dim=-1) @ h
            """
        ),
        # One entry in every row (`arange` rows), and an identity added to the edges.
        Valid(
            """
            import torch


            def attend(logits, targets, src, dst, n):
                allowed = torch.zeros(n, n)
                allowed[torch.arange(n), targets] = 1.0
                logits = logits.masked_fill(allowed == 0, float("-inf"))
                adj = torch.zeros(n, n)
                adj[src, dst] = 1.0
                adj = adj + torch.eye(n)
                graph = (logits @ logits.T).masked_fill(adj == 0, float("-inf"))
                return logits.softmax(-1), graph.softmax(-1)
            """
        ),
        # Cosine similarities of a tensor with itself: the diagonal is 1, so every row keeps itself.
        Valid(
            """
            import torch
            import torch.nn.functional as F


            def neighbourhood_attention(x, threshold=0.5):
                # Similarities of x with itself: the diagonal is 1, above any threshold below 1.
                sim = F.cosine_similarity(x[:, None, :], x[None, :, :], dim=-1)
                logits = x @ x.t() / x.size(-1) ** 0.5
                logits = logits.masked_fill(sim < threshold, float("-inf"))
                return logits.softmax(dim=-1) @ x
            """
        ),
        # Distances of points to themselves: 0 on the diagonal, inside any radius.
        Valid(
            """
            import torch


            def radius_attention(points, feats, radius=0.1):
                # Distances of the points to themselves: each point is at 0 from itself.
                far = torch.cdist(points, points) > radius
                logits = feats @ feats.transpose(-2, -1) / feats.size(-1) ** 0.5
                logits = logits.masked_fill(far, float("-inf"))
                return logits.softmax(dim=-1) @ feats
            """
        ),
        # A cutoff from each row's own k-th best match keeps k keys in every row.
        Valid(
            """
            import torch


            def top_matches(q, bank, k=4):
                # The cutoff is each row's own k-th best similarity: k keys always stay.
                sim = torch.cdist(q, bank)
                cutoff = sim.topk(k, dim=-1, largest=False).values[..., -1:]
                logits = -sim
                logits = logits.masked_fill(sim > cutoff, float("-inf"))
                return logits.softmax(dim=-1) @ bank
            """
        ),
        # The lengths keep-mask combined with chunks, with the emptied rows zeroed after the softmax.
        Valid(
            """
            import torch
            import torch.nn as nn


            class ChunkedSelfAttention(nn.Module):
                def __init__(self, width, chunk=8):
                    super().__init__()
                    self.qkv = nn.Linear(width, 3 * width)
                    self.chunk = chunk

                def forward(self, frames, lengths):
                    q, k, v = self.qkv(frames).chunk(3, dim=-1)
                    steps = torch.arange(frames.size(1), device=frames.device)
                    same_chunk = (steps[:, None] // self.chunk) == (steps[None, :] // self.chunk)
                    real = steps[None, :] < lengths[:, None]
                    allowed = same_chunk[None] & real[:, None, :]
                    logits = q @ k.transpose(1, 2) / q.size(-1) ** 0.5
                    logits = logits.masked_fill(~allowed, float("-inf"))
                    weights = logits.softmax(dim=-1)
                    # Rows with no allowed key are zeroed.
                    weights = weights.masked_fill(~allowed.any(dim=-1, keepdim=True), 0.0)
                    return weights @ v
            """
        ),
        # The same masks, with every position's output kept: nothing shows left padding.
        Valid(
            """
            import numpy as np
            import torch
            import torch.nn as nn


            class ItemEncoder(nn.Module):
                def __init__(self, n_items, width):
                    super().__init__()
                    self.items = nn.Embedding(n_items, width)
                    self.qkv = nn.Linear(width, 3 * width)

                def forward(self, history):
                    n = history.size(1)
                    real = (history != 0).long()
                    allowed = torch.from_numpy(np.tril(np.ones((n, n), dtype=np.int64)))[None] * real[:, None, :]
                    q, k, v = self.qkv(self.items(history)).chunk(3, dim=-1)
                    s = q @ k.transpose(1, 2) / q.size(-1) ** 0.5
                    s = s.masked_fill(allowed == 0, float("-inf"))
                    # Every position's output is kept: nothing shows the padding is in front, and padding
                    # at the end keeps key 0 real in every row.
                    return s.softmax(dim=-1) @ v
            """
        ),
        # A NumPy triangle of ones alone keeps the diagonal.
        Valid(
            """
            import numpy as np
            import torch


            def causal_attention(q, k, v):
                n = q.size(-2)
                # A NumPy triangle of ones keeps the diagonal: no row is empty.
                keep = torch.from_numpy(np.tril(np.ones((n, n), dtype=bool)))
                s = q @ k.transpose(-2, -1) / q.size(-1) ** 0.5
                s = s.masked_fill(~keep, float("-inf"))
                return s.softmax(dim=-1) @ v
            """
        ),
        # A per-key mask whose first key is set before use: no row is shown empty.
        Valid(
            """
            import torch


            def attend(q, k, v, mask):
                # The first key (a summary token) is always kept: no sequence is empty.
                mask = mask.clone()
                mask[:, 0] = True
                s = q @ k.transpose(-2, -1) / q.size(-1) ** 0.5
                s = s.masked_fill(~mask[:, None, None, :], float("-inf"))
                return s.softmax(dim=-1) @ v
            """
        ),
        # A mask of no known kind laid out over every axis: nothing says it is per key.
        Valid(
            """
            import torch


            def attend(q, k, v, mask):
                # A full (batch, heads, queries, keys) mask of no known kind: which rows it can empty is not
                # shown.
                s = q @ k.transpose(-2, -1) / q.size(-1) ** 0.5
                s = s.masked_fill(mask.view(q.size(0), q.size(1), q.size(2), k.size(2)) == 0, float("-inf"))
                return s.softmax(dim=-1) @ v
            """
        ),
        # A kernel that takes a prepared mask of either kind (Hugging Face's DETR family): a
        # bool one is filled with -inf where True, so the code reads `attention_mask` as True =
        # masked, not as the 1 = keep padding mask its name would say; its rows are the caller's.
        Valid(
            """
            import torch
            from torch import nn


            def attend(attn_weights, attention_mask, batch_size, num_heads, tgt_len, src_len):
                if attention_mask is not None:
                    if attention_mask.dtype == torch.bool:
                        attention_mask = torch.zeros_like(attention_mask, dtype=attn_weights.dtype).masked_fill_(
                            attention_mask, -torch.inf
                        )
                    attn_weights = attn_weights.view(batch_size, num_heads, tgt_len, src_len) + attention_mask
                    attn_weights = attn_weights.view(batch_size * num_heads, tgt_len, src_len)
                return nn.functional.softmax(attn_weights, dim=-1)
            """
        ),
    ]

    INVALID = [
        # The same histories through nn.TransformerEncoderLayer (a causal src_mask and the
        # padding mask) and nn.MultiheadAttention given one mask that already combines them.
        Invalid(
            """
            import numpy as np
            import torch
            import torch.nn as nn


            def left_padded(history, maxlen):
                seq = np.zeros([maxlen], dtype=np.int64)
                idx = maxlen - 1
                for item in reversed(history):
                    seq[idx] = item
                    idx -= 1
                    if idx == -1:
                        break
                return seq


            class Recommender(nn.Module):
                def __init__(self, item_num, hidden, heads):
                    super().__init__()
                    self.item_emb = nn.Embedding(item_num + 1, hidden, padding_idx=0)
                    self.layer = nn.TransformerEncoderLayer(hidden, heads, batch_first=True)
                    self.attn = nn.MultiheadAttention(hidden, heads, batch_first=True)

                def forward(self, log_seqs):
                    x = self.item_emb(log_seqs)
                    pad = log_seqs == 0
                    n = x.shape[1]
                    causal = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
                    x = self.layer(x, src_mask=causal, src_key_padding_mask=pad)
                    both = causal[None, :, :] | pad[:, None, :]
                    out, _ = self.attn(x, x, x, attn_mask=both.repeat_interleave(self.attn.num_heads, 0))
                    return out
            """,
            fixed=None,
            line=29,
        ),
        # SASRec: histories written from the last position backwards (left padding), then a
        # causal mask and the padding mask given to nn.MultiheadAttention together.
        Invalid(
            """
            import numpy as np
            import torch
            import torch.nn as nn


            def left_padded(history, maxlen):
                seq = np.zeros([maxlen], dtype=np.int64)
                idx = maxlen - 1
                for item in reversed(history):
                    seq[idx] = item
                    idx -= 1
                    if idx == -1:
                        break
                return seq


            class SASRec(nn.Module):
                def __init__(self, item_num, hidden, heads):
                    super().__init__()
                    self.item_emb = nn.Embedding(item_num + 1, hidden, padding_idx=0)
                    self.attn = nn.MultiheadAttention(hidden, heads, batch_first=True)

                def forward(self, log_seqs):
                    seqs = self.item_emb(log_seqs)
                    timeline_mask = log_seqs == 0
                    n = seqs.shape[1]
                    causal = ~torch.tril(torch.ones((n, n), dtype=torch.bool, device=seqs.device))
                    out, _ = self.attn(seqs, seqs, seqs, attn_mask=causal, key_padding_mask=timeline_mask)
                    return out
            """,
            fixed=None,
            line=28,
        ),
        # Generation with left-padded prompts: the causal mask after a KV cache (diagonal=past)
        # combined with the 0/1 padding mask; a pad query sees only pad keys.
        Invalid(
            """
            import torch


            def left_pad(batch, pad_id):
                width = max(map(len, batch))
                ids = torch.tensor([[pad_id] * (width - len(s)) + s for s in batch])
                mask = torch.tensor([[0] * (width - len(s)) + [1] * len(s) for s in batch])
                return ids, mask


            def build_attention_mask(attention_mask, q_len):
                total = attention_mask.size(1)
                past = total - q_len
                causal = torch.ones(q_len, total, dtype=torch.bool).tril(diagonal=past)
                return causal[None, None] & attention_mask.bool()[:, None, None, :]


            def attend(q, k, v, attention_mask):
                keep = build_attention_mask(attention_mask, q.size(2))
                scores = (q @ k.transpose(-2, -1)) * q.size(-1) ** -0.5
                scores = scores.masked_fill(~keep, float("-inf"))
                return scores.softmax(dim=-1) @ v
            """,
            line=21,
            fixed="""
            import torch


            def left_pad(batch, pad_id):
                width = max(map(len, batch))
                ids = torch.tensor([[pad_id] * (width - len(s)) + s for s in batch])
                mask = torch.tensor([[0] * (width - len(s)) + [1] * len(s) for s in batch])
                return ids, mask


            def build_attention_mask(attention_mask, q_len):
                total = attention_mask.size(1)
                past = total - q_len
                causal = torch.ones(q_len, total, dtype=torch.bool).tril(diagonal=past)
                return causal[None, None] & attention_mask.bool()[:, None, None, :]


            def attend(q, k, v, attention_mask):
                keep = build_attention_mask(attention_mask, q.size(2))
                scores = (q @ k.transpose(-2, -1)) * q.size(-1) ** -0.5
                scores = scores.masked_fill(~keep, float("-inf"))
                return scores.softmax(dim=-1).masked_fill(scores.isneginf().all(dim=-1, keepdim=True), 0.0) @ v
            """,
        ),
        # Lengths laid along the keys and along the queries: every padded query's row is all -inf.
        Invalid(
            """
            import torch


            def self_attention(x, lengths):
                T = x.size(1)
                valid = torch.arange(T, device=x.device)[None, :] < lengths[:, None]
                pair = valid[:, :, None] & valid[:, None, :]
                scores = x @ x.transpose(1, 2) / x.size(-1) ** 0.5
                scores = scores.masked_fill(~pair, float("-inf"))
                return scores.softmax(dim=-1) @ x
            """,
            fixed="""
            import torch


            def self_attention(x, lengths):
                T = x.size(1)
                valid = torch.arange(T, device=x.device)[None, :] < lengths[:, None]
                pair = valid[:, :, None] & valid[:, None, :]
                scores = x @ x.transpose(1, 2) / x.size(-1) ** 0.5
                scores = scores.masked_fill(~pair, float("-inf"))
                return scores.softmax(dim=-1).masked_fill(scores.isneginf().all(dim=-1, keepdim=True), 0.0) @ x
            """,
            line=9,
            column=13,
            page=True,
        ),
        # Cosine similarities written by hand (unit vectors of two different sets, multiplied) against a threshold: every key of a row can fall below it.
        Invalid(
            """
            import torch
            import torch.nn.functional as F


            def grounded_read(h, memory, min_cos=0.3):
                # Unit vectors of two different sets: the product is their cosine similarity, pair by pair.
                cos = F.normalize(h, dim=-1) @ F.normalize(memory, dim=-1).transpose(-2, -1)
                logits = torch.einsum("bqd,bkd->bqk", h, memory) / h.size(-1) ** 0.5
                logits = logits.masked_fill(cos < min_cos, float("-inf"))
                return logits.softmax(dim=-1) @ memory
            """,
            fixed="""
            import torch
            import torch.nn.functional as F


            def grounded_read(h, memory, min_cos=0.3):
                # Unit vectors of two different sets: the product is their cosine similarity, pair by pair.
                cos = F.normalize(h, dim=-1) @ F.normalize(memory, dim=-1).transpose(-2, -1)
                logits = torch.einsum("bqd,bkd->bqk", h, memory) / h.size(-1) ** 0.5
                logits = logits.masked_fill(cos < min_cos, float("-inf"))
                return logits.softmax(dim=-1).masked_fill(logits.isneginf().all(dim=-1, keepdim=True), 0.0) @ memory
            """,
        ),
        # A mask named for nothing, but its caller writes one out with an empty sequence.
        Invalid(
            """
            import torch
            from torch import nn


            class MaskedSelfAttention(nn.Module):
                def __init__(self, width=16):
                    super().__init__()
                    self.qkv = nn.Linear(width, 3 * width)

                def forward(self, tokens, keep):
                    q, k, v = self.qkv(tokens).chunk(3, dim=-1)
                    logits = torch.einsum("bqd,bkd->bqk", q, k) / q.shape[-1] ** 0.5
                    logits = logits.masked_fill(~keep.bool()[:, None, :], float("-inf"))
                    return torch.einsum("bqk,bkd->bqd", logits.softmax(dim=-1), v)


            if __name__ == "__main__":
                layer = MaskedSelfAttention().eval()
                keep = torch.tensor([[1, 1, 1, 0], [0, 0, 0, 0]])
                layer(torch.randn(2, 4, 16), keep)
            """,
            fixed="""
            import torch
            from torch import nn


            class MaskedSelfAttention(nn.Module):
                def __init__(self, width=16):
                    super().__init__()
                    self.qkv = nn.Linear(width, 3 * width)

                def forward(self, tokens, keep):
                    q, k, v = self.qkv(tokens).chunk(3, dim=-1)
                    logits = torch.einsum("bqd,bkd->bqk", q, k) / q.shape[-1] ** 0.5
                    logits = logits.masked_fill(~keep.bool()[:, None, :], float("-inf"))
                    return torch.einsum("bqk,bkd->bqd", logits.softmax(dim=-1).masked_fill(logits.isneginf().all(dim=-1, keepdim=True), 0.0), v)


            if __name__ == "__main__":
                layer = MaskedSelfAttention().eval()
                keep = torch.tensor([[1, 1, 1, 0], [0, 0, 0, 0]])
                layer(torch.randn(2, 4, 16), keep)
            """,
        ),
        # A nan_to_num guard whose result is thrown away does not guard the weights.
        Invalid(
            """
            import torch


            def attend(q, k, v, key_padding_mask):
                s = q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5
                pad = key_padding_mask[:, None, :, None] | key_padding_mask[:, None, None, :]
                s = s.masked_fill(pad, float("-inf"))
                w = s.softmax(dim=-1)
                _ = w.nan_to_num(0.0)
                return w @ v
            """,
            fixed="""
            import torch


            def attend(q, k, v, key_padding_mask):
                s = q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5
                pad = key_padding_mask[:, None, :, None] | key_padding_mask[:, None, None, :]
                s = s.masked_fill(pad, float("-inf"))
                w = s.softmax(dim=-1).masked_fill(s.isneginf().all(dim=-1, keepdim=True), 0.0)
                _ = w.nan_to_num(0.0)
                return w @ v
            """,
        ),
        # A guard on one branch only: the other path still returns NaN rows.
        Invalid(
            """
            import torch


            def attend(q, k, v, key_padding_mask, training: bool):
                s = q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5
                pad = key_padding_mask[:, None, :, None] | key_padding_mask[:, None, None, :]
                s = s.masked_fill(pad, float("-inf"))
                w = s.softmax(dim=-1)
                if training:
                    w = w.nan_to_num(0.0)
                return w @ v
            """,
            fixed="""
            import torch


            def attend(q, k, v, key_padding_mask, training: bool):
                s = q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5
                pad = key_padding_mask[:, None, :, None] | key_padding_mask[:, None, None, :]
                s = s.masked_fill(pad, float("-inf"))
                w = s.softmax(dim=-1).masked_fill(s.isneginf().all(dim=-1, keepdim=True), 0.0)
                if training:
                    w = w.nan_to_num(0.0)
                return w @ v
            """,
        ),
        # Told that a batch can hold an empty sequence, a key-padding mask on its own empties
        # that sequence's rows.
        Invalid(
            """
            import torch
            def attention(q, k, v, key_padding_mask):
                s = (q @ k.transpose(-2, -1)) * q.size(-1) ** -0.5
                s = s.masked_fill(key_padding_mask[:, None, None, :], float("-inf"))
                return s.softmax(dim=-1) @ v
            """,
            fixed="""
            import torch
            def attention(q, k, v, key_padding_mask):
                s = (q @ k.transpose(-2, -1)) * q.size(-1) ** -0.5
                s = s.masked_fill(key_padding_mask[:, None, None, :], float("-inf"))
                return s.softmax(dim=-1).masked_fill(s.isneginf().all(dim=-1, keepdim=True), 0.0) @ v
            """,
            line=4,
            options={"empty-sequences": True},
        ),
        # The causal triangle on one path, it & the padding mask on the other (`if attention_mask
        # is not None`), in a file that pads on the left: that path's leading pads see no key.
        Invalid(
            """
            import torch
            import torch.nn.functional as F


            def left_pad(prompts, pad_id):
                n = max(len(p) for p in prompts)
                ids = torch.full((len(prompts), n), pad_id)
                for i, p in enumerate(prompts):
                    ids[i, n - len(p):] = torch.tensor(p)
                return ids, ids != pad_id


            def attend(q, k, v, attention_mask=None):
                T = q.size(-2)
                allowed = torch.ones(T, T, dtype=torch.bool).tril()
                if attention_mask is not None:
                    allowed = allowed & attention_mask[:, None, None, :].bool()
                att = (q @ k.transpose(-2, -1)) * q.size(-1) ** -0.5
                att = att.masked_fill(~allowed, float("-inf"))
                return F.softmax(att, dim=-1) @ v
            """,
            fixed="""
            import torch
            import torch.nn.functional as F


            def left_pad(prompts, pad_id):
                n = max(len(p) for p in prompts)
                ids = torch.full((len(prompts), n), pad_id)
                for i, p in enumerate(prompts):
                    ids[i, n - len(p):] = torch.tensor(p)
                return ids, ids != pad_id


            def attend(q, k, v, attention_mask=None):
                T = q.size(-2)
                allowed = torch.ones(T, T, dtype=torch.bool).tril()
                if attention_mask is not None:
                    allowed = allowed & attention_mask[:, None, None, :].bool()
                att = (q @ k.transpose(-2, -1)) * q.size(-1) ** -0.5
                att = att.masked_fill(~allowed, float("-inf"))
                return F.softmax(att, dim=-1).masked_fill(att.isneginf().all(dim=-1, keepdim=True), 0.0) @ v
            """,
            line=19,
        ),
        # A residue mask (by its name) laid along queries and keys and multiplied (MSA row
        # attention): every padded residue's row is filled whole.
        Invalid(
            """
            import torch


            def row_attention(q, k, v, msa_mask):
                logits = torch.einsum("bsihc,bsjhc->bshij", q, k) * q.size(-1) ** -0.5
                pair_mask = msa_mask[..., :, None] * msa_mask[..., None, :]
                logits = logits.masked_fill(pair_mask.unsqueeze(2) == 0, float("-inf"))
                weights = torch.softmax(logits, dim=-1)
                return torch.einsum("bshij,bsjhc->bsihc", weights, v)
            """,
            fixed="""
            import torch


            def row_attention(q, k, v, msa_mask):
                logits = torch.einsum("bsihc,bsjhc->bshij", q, k) * q.size(-1) ** -0.5
                pair_mask = msa_mask[..., :, None] * msa_mask[..., None, :]
                logits = logits.masked_fill(pair_mask.unsqueeze(2) == 0, float("-inf"))
                weights = torch.softmax(logits, dim=-1).masked_fill(logits.isneginf().all(dim=-1, keepdim=True), 0.0)
                return torch.einsum("bshij,bsjhc->bsihc", weights, v)
            """,
            line=7,
        ),
        # SASRec: histories written from their last position backwards (left padding), a helper
        # that builds a -inf bias of causal | padding, added in each layer of a ModuleList.
        Invalid(
            """
            import numpy as np
            import torch
            import torch.nn as nn


            def sample(history, maxlen):
                seq = np.zeros([maxlen], dtype=np.int64)
                idx = maxlen - 1
                for item in reversed(history):
                    seq[idx] = item
                    idx -= 1
                    if idx == -1:
                        break
                return seq


            def attention_bias(log_seqs):
                L = log_seqs.size(1)
                causal = torch.triu(torch.ones(L, L, dtype=torch.bool), diagonal=1)
                blocked = causal[None, None] | log_seqs.eq(0)[:, None, None, :]
                return torch.zeros(blocked.shape).masked_fill(blocked, float("-inf"))


            class Attention(nn.Module):
                def forward(self, q, k, v, bias):
                    scores = q @ k.transpose(-2, -1) / q.size(-1) ** 0.5 + bias
                    return torch.softmax(scores, dim=-1) @ v


            class SASRec(nn.Module):
                def __init__(self, n_items, d, blocks):
                    super().__init__()
                    self.item_emb = nn.Embedding(n_items + 1, d, padding_idx=0)
                    self.layers = nn.ModuleList()
                    for _ in range(blocks):
                        self.layers.append(Attention())

                def forward(self, log_seqs):
                    x = self.item_emb(log_seqs)[:, None]
                    bias = attention_bias(log_seqs)
                    for layer in self.layers:
                        x = x + layer(x, x, x, bias)
                    return x
            """,
            line=26,
        ),
        # Left padding (real tokens written at the end of each row) combined with a causal mask:
        # the first queries of a short row see only padding.
        Invalid(
            """
            import torch


            def left_pad(seqs, pad_id):
                n = max(len(s) for s in seqs)
                ids = torch.full((len(seqs), n), pad_id)
                for i, s in enumerate(seqs):
                    ids[i, n - len(s):] = torch.tensor(s)
                return ids, ids == pad_id


            def attend(q, k, v, pad_mask):
                T = q.size(-2)
                s = q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5
                causal = torch.ones(T, T, dtype=torch.bool).triu(1)
                blocked = causal[None, None] | pad_mask[:, None, None, :]
                s = s.masked_fill(blocked, float("-inf"))
                return s.softmax(dim=-1) @ v
            """,
            fixed="""
            import torch


            def left_pad(seqs, pad_id):
                n = max(len(s) for s in seqs)
                ids = torch.full((len(seqs), n), pad_id)
                for i, s in enumerate(seqs):
                    ids[i, n - len(s):] = torch.tensor(s)
                return ids, ids == pad_id


            def attend(q, k, v, pad_mask):
                T = q.size(-2)
                s = q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5
                causal = torch.ones(T, T, dtype=torch.bool).triu(1)
                blocked = causal[None, None] | pad_mask[:, None, None, :]
                s = s.masked_fill(blocked, float("-inf"))
                return s.softmax(dim=-1).masked_fill(s.isneginf().all(dim=-1, keepdim=True), 0.0) @ v
            """,
        ),
        # Histories padded on the left (real items written at the end of each row) under a
        # causal mask: the first queries of a short history see only padding.
        Invalid(
            """
            import torch
            import torch.nn as nn


            def batch_histories(histories, n):
                items = torch.zeros(len(histories), n, dtype=torch.long)
                for row, history in enumerate(histories):
                    items[row, n - len(history):] = torch.tensor(history[-n:])
                return items


            class NextItem(nn.Module):
                def __init__(self, n_items, d=32):
                    super().__init__()
                    self.items = nn.Embedding(n_items, d, padding_idx=0)

                def forward(self, items):
                    T = items.size(1)
                    h = self.items(items)
                    s = h @ h.transpose(1, 2) / h.size(-1) ** 0.5
                    keep = (items != 0)[:, None, :] & torch.ones(T, T, dtype=torch.bool).tril()
                    s = s.masked_fill(~keep, float("-inf"))
                    return torch.softmax(s, dim=-1) @ h
            """,
            fixed="""
            import torch
            import torch.nn as nn


            def batch_histories(histories, n):
                items = torch.zeros(len(histories), n, dtype=torch.long)
                for row, history in enumerate(histories):
                    items[row, n - len(history):] = torch.tensor(history[-n:])
                return items


            class NextItem(nn.Module):
                def __init__(self, n_items, d=32):
                    super().__init__()
                    self.items = nn.Embedding(n_items, d, padding_idx=0)

                def forward(self, items):
                    T = items.size(1)
                    h = self.items(items)
                    s = h @ h.transpose(1, 2) / h.size(-1) ** 0.5
                    keep = (items != 0)[:, None, :] & torch.ones(T, T, dtype=torch.bool).tril()
                    s = s.masked_fill(~keep, float("-inf"))
                    return torch.softmax(s, dim=-1).masked_fill(s.isneginf().all(dim=-1, keepdim=True), 0.0) @ h
            """,
            line=22,
        ),
        # The same with list padding in front of each prompt and an OR of True = masked masks.
        Invalid(
            """
            import torch
            import torch.nn.functional as F

            PAD = 0


            def left_pad(prompts):
                n = max(len(p) for p in prompts)
                return torch.tensor([[PAD] * (n - len(p)) + p for p in prompts])


            def causal_attention(x, tokens):
                T = x.size(1)
                scores = x @ x.transpose(-2, -1) * x.size(-1) ** -0.5
                future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
                blocked = future[None] | (tokens == PAD)[:, None, :]
                weights = F.softmax(scores.masked_fill(blocked, float("-inf")), dim=-1)
                return weights @ x
            """,
            fixed="""
            import torch
            import torch.nn.functional as F

            PAD = 0


            def left_pad(prompts):
                n = max(len(p) for p in prompts)
                return torch.tensor([[PAD] * (n - len(p)) + p for p in prompts])


            def causal_attention(x, tokens):
                T = x.size(1)
                scores = x @ x.transpose(-2, -1) * x.size(-1) ** -0.5
                future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
                blocked = future[None] | (tokens == PAD)[:, None, :]
                weights = F.softmax(scores.masked_fill(blocked, float("-inf")), dim=-1).masked_fill(blocked.all(dim=-1, keepdim=True), 0.0)
                return weights @ x
            """,
            line=17,
        ),
        # A causal fill, then a fill of the pad positions: left padding empties the first rows.
        Invalid(
            """
            import torch
            import torch.nn as nn

            def left_pad(prompts, pad_id=0):
                n = max(len(p) for p in prompts)
                return torch.tensor([[pad_id] * (n - len(p)) + p for p in prompts])



            class PromptDecoder(nn.Module):
                def __init__(self, vocab, width, pad_id=0):
                    super().__init__()
                    self.embed = nn.Embedding(vocab, width, padding_idx=pad_id)
                    self.pad_id = pad_id
                    self.qkv = nn.Linear(width, 3 * width)

                def forward(self, ids):
                    h = self.embed(ids)
                    n = ids.size(1)
                    q, k, v = self.qkv(h).chunk(3, dim=-1)
                    att = q @ k.transpose(1, 2) / q.size(-1) ** 0.5
                    ahead = torch.triu(torch.ones(n, n, dtype=torch.bool, device=ids.device), diagonal=1)
                    att = att.masked_fill(ahead, float("-inf"))
                    att = att.masked_fill((ids == self.pad_id).unsqueeze(1), float("-inf"))
                    return att.softmax(dim=-1) @ v
            """,
            fixed="""
            import torch
            import torch.nn as nn

            def left_pad(prompts, pad_id=0):
                n = max(len(p) for p in prompts)
                return torch.tensor([[pad_id] * (n - len(p)) + p for p in prompts])



            class PromptDecoder(nn.Module):
                def __init__(self, vocab, width, pad_id=0):
                    super().__init__()
                    self.embed = nn.Embedding(vocab, width, padding_idx=pad_id)
                    self.pad_id = pad_id
                    self.qkv = nn.Linear(width, 3 * width)

                def forward(self, ids):
                    h = self.embed(ids)
                    n = ids.size(1)
                    q, k, v = self.qkv(h).chunk(3, dim=-1)
                    att = q @ k.transpose(1, 2) / q.size(-1) ** 0.5
                    ahead = torch.triu(torch.ones(n, n, dtype=torch.bool, device=ids.device), diagonal=1)
                    att = att.masked_fill(ahead, float("-inf"))
                    att = att.masked_fill((ids == self.pad_id).unsqueeze(1), float("-inf"))
                    return att.softmax(dim=-1).masked_fill(att.isneginf().all(dim=-1, keepdim=True), 0.0) @ v
            """,
            line=24,
        ),
        # Recsys histories (left-padded with item 0): kept items through torch.where, then the
        # future.
        Invalid(
            """
            import torch
            import torch.nn as nn

            def histories_to_batch(histories, maxlen):
                batch = torch.zeros(len(histories), maxlen, dtype=torch.long)
                for row, items in enumerate(histories):
                    batch[row, maxlen - len(items):] = torch.tensor(items)
                return batch



            class NextItem(nn.Module):
                def __init__(self, n_items, d=64):
                    super().__init__()
                    self.items = nn.Embedding(n_items + 1, d, padding_idx=0)
                    self.wq = nn.Linear(d, d)
                    self.wk = nn.Linear(d, d)

                def forward(self, item_seq):
                    h = self.items(item_seq)
                    L = item_seq.shape[1]
                    scores = torch.matmul(self.wq(h), self.wk(h).transpose(-1, -2)) / h.shape[-1] ** 0.5
                    scores = torch.where((item_seq > 0)[:, None, :], scores, float("-inf"))
                    future = torch.ones(L, L, dtype=torch.bool, device=h.device).triu(diagonal=1)
                    scores = scores.masked_fill(future, float("-inf"))
                    return torch.softmax(scores, dim=-1) @ h
            """,
            fixed="""
            import torch
            import torch.nn as nn

            def histories_to_batch(histories, maxlen):
                batch = torch.zeros(len(histories), maxlen, dtype=torch.long)
                for row, items in enumerate(histories):
                    batch[row, maxlen - len(items):] = torch.tensor(items)
                return batch



            class NextItem(nn.Module):
                def __init__(self, n_items, d=64):
                    super().__init__()
                    self.items = nn.Embedding(n_items + 1, d, padding_idx=0)
                    self.wq = nn.Linear(d, d)
                    self.wk = nn.Linear(d, d)

                def forward(self, item_seq):
                    h = self.items(item_seq)
                    L = item_seq.shape[1]
                    scores = torch.matmul(self.wq(h), self.wk(h).transpose(-1, -2)) / h.shape[-1] ** 0.5
                    scores = torch.where((item_seq > 0)[:, None, :], scores, float("-inf"))
                    future = torch.ones(L, L, dtype=torch.bool, device=h.device).triu(diagonal=1)
                    scores = scores.masked_fill(future, float("-inf"))
                    return torch.softmax(scores, dim=-1).masked_fill(scores.isneginf().all(dim=-1, keepdim=True), 0.0) @ h
            """,
            line=25,
        ),
        # An additive -inf triangle for the future, then the pad positions filled.
        Invalid(
            """
            import torch
            import torch.nn.functional as F

            def encode(tokenizer, prompts):
                tokenizer.padding_side = "left"
                return tokenizer(prompts, padding=True, return_tensors="pt").input_ids



            def decoder_scores(tokens, q, k, v, pad_idx=1):
                T = tokens.shape[-1]
                s = q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5
                s = s + torch.full((T, T), float("-inf"), device=q.device).triu(1)
                s = s.masked_fill((tokens == pad_idx).unsqueeze(1), float("-inf"))
                return F.softmax(s, dim=-1) @ v
            """,
            fixed="""
            import torch
            import torch.nn.functional as F

            def encode(tokenizer, prompts):
                tokenizer.padding_side = "left"
                return tokenizer(prompts, padding=True, return_tensors="pt").input_ids



            def decoder_scores(tokens, q, k, v, pad_idx=1):
                T = tokens.shape[-1]
                s = q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5
                s = s + torch.full((T, T), float("-inf"), device=q.device).triu(1)
                s = s.masked_fill((tokens == pad_idx).unsqueeze(1), float("-inf"))
                return F.softmax(s, dim=-1).masked_fill(s.isneginf().all(dim=-1, keepdim=True), 0.0) @ v
            """,
            line=14,
        ),
        # Scores pruned below a learned threshold: a row can lose every key.
        Invalid(
            """
            import torch
            import torch.nn as nn


            class PrunedAttention(nn.Module):
                def __init__(self, width):
                    super().__init__()
                    self.qk = nn.Linear(width, 2 * width)
                    self.cutoff = nn.Parameter(torch.zeros(()))

                def forward(self, x):
                    q, k = self.qk(x).chunk(2, dim=-1)
                    logits = torch.einsum("bid,bjd->bij", q, k) / q.shape[-1] ** 0.5
                    logits = logits.masked_fill(logits < self.cutoff, float("-inf"))
                    return logits.softmax(dim=-1) @ x
            """,
            fixed="""
            import torch
            import torch.nn as nn


            class PrunedAttention(nn.Module):
                def __init__(self, width):
                    super().__init__()
                    self.qk = nn.Linear(width, 2 * width)
                    self.cutoff = nn.Parameter(torch.zeros(()))

                def forward(self, x):
                    q, k = self.qk(x).chunk(2, dim=-1)
                    logits = torch.einsum("bid,bjd->bij", q, k) / q.shape[-1] ** 0.5
                    logits = logits.masked_fill(logits < self.cutoff, float("-inf"))
                    return logits.softmax(dim=-1).masked_fill(logits.isneginf().all(dim=-1, keepdim=True), 0.0) @ x
            """,
            line=14,
        ),
        # A fixed threshold on the scores, through torch.where.
        Invalid(
            """
            import torch


            def confident_attention(q, k, v, min_score=0.5):
                s = (q @ k.transpose(-2, -1)) * q.size(-1) ** -0.5
                s = torch.where(s > min_score, s, float("-inf"))
                return torch.softmax(s, dim=-1) @ v
            """,
            fixed="""
            import torch


            def confident_attention(q, k, v, min_score=0.5):
                s = (q @ k.transpose(-2, -1)) * q.size(-1) ** -0.5
                s = torch.where(s > min_score, s, float("-inf"))
                return torch.softmax(s, dim=-1).masked_fill(s.isneginf().all(dim=-1, keepdim=True), 0.0) @ v
            """,
            line=6,
        ),
        # A dense GAT over an adjacency scattered from random edges: an isolated node's row is
        # all -inf.
        Invalid(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F


            class DenseGAT(nn.Module):
                def __init__(self, d):
                    super().__init__()
                    self.w = nn.Linear(d, d, bias=False)
                    self.a = nn.Linear(2 * d, 1, bias=False)

                def forward(self, x, adj):
                    h = self.w(x)
                    n = h.size(0)
                    pairs = torch.cat([h.unsqueeze(1).expand(n, n, -1), h.unsqueeze(0).expand(n, n, -1)], dim=-1)
                    e = F.leaky_relu(self.a(pairs).squeeze(-1), 0.2)
                    e = e.masked_fill(adj == 0, float("-inf"))
                    return F.softmax(e, dim=1) @ h


            def adjacency(edge_index, n):
                adj = torch.zeros(n, n)
                adj[edge_index[0], edge_index[1]] = 1.0
                return adj


            if __name__ == "__main__":
                edges = torch.randint(0, 20, (2, 30))
                DenseGAT(16)(torch.randn(20, 16), adjacency(edges, 20))
            """,
            fixed="""
            import torch
            import torch.nn as nn
            import torch.nn.functional as F


            class DenseGAT(nn.Module):
                def __init__(self, d):
                    super().__init__()
                    self.w = nn.Linear(d, d, bias=False)
                    self.a = nn.Linear(2 * d, 1, bias=False)

                def forward(self, x, adj):
                    h = self.w(x)
                    n = h.size(0)
                    pairs = torch.cat([h.unsqueeze(1).expand(n, n, -1), h.unsqueeze(0).expand(n, n, -1)], dim=-1)
                    e = F.leaky_relu(self.a(pairs).squeeze(-1), 0.2)
                    e = e.masked_fill(adj == 0, float("-inf"))
                    return F.softmax(e, dim=1).masked_fill(e.isneginf().all(dim=-1, keepdim=True), 0.0) @ h


            def adjacency(edge_index, n):
                adj = torch.zeros(n, n)
                adj[edge_index[0], edge_index[1]] = 1.0
                return adj


            if __name__ == "__main__":
                edges = torch.randint(0, 20, (2, 30))
                DenseGAT(16)(torch.randn(20, 16), adjacency(edges, 20))
            """,
            line=17,
        ),
        # Query-key cosine similarities against a fixed cutoff: a query far from every prototype keeps none.
        Invalid(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F


            class PrototypeReadout(nn.Module):
                def __init__(self, width, n_protos=64, tau=0.2):
                    super().__init__()
                    self.protos = nn.Parameter(torch.randn(n_protos, width))
                    self.tau = tau

                def forward(self, h):
                    sim = F.cosine_similarity(h[:, None, :], self.protos[None, :, :], dim=-1)
                    logits = h @ self.protos.t() / h.size(-1) ** 0.5
                    logits = logits.masked_fill(sim < self.tau, float("-inf"))
                    return logits.softmax(dim=-1) @ self.protos
            """,
            fixed="""
            import torch
            import torch.nn as nn
            import torch.nn.functional as F


            class PrototypeReadout(nn.Module):
                def __init__(self, width, n_protos=64, tau=0.2):
                    super().__init__()
                    self.protos = nn.Parameter(torch.randn(n_protos, width))
                    self.tau = tau

                def forward(self, h):
                    sim = F.cosine_similarity(h[:, None, :], self.protos[None, :, :], dim=-1)
                    logits = h @ self.protos.t() / h.size(-1) ** 0.5
                    logits = logits.masked_fill(sim < self.tau, float("-inf"))
                    return logits.softmax(dim=-1).masked_fill(logits.isneginf().all(dim=-1, keepdim=True), 0.0) @ self.protos
            """,
            line=15,
        ),
        # A distance cutoff `&` an occupancy buffer of no known meaning: a row with no slot in reach stays empty under `&`.
        Invalid(
            """
            import torch
            import torch.nn as nn


            class SlotCache(nn.Module):
                def __init__(self, n_slots, width, radius=1.5):
                    super().__init__()
                    self.register_buffer("slots", torch.zeros(n_slots, width))
                    self.register_buffer("used", torch.zeros(n_slots, dtype=torch.bool))
                    self.radius = radius

                def read(self, x):
                    near = torch.cdist(x, self.slots) <= self.radius
                    usable = self.used[None, :] & near
                    logits = x @ self.slots.t()
                    logits = logits.masked_fill(~usable, float("-inf"))
                    return torch.softmax(logits, dim=-1) @ self.slots
            """,
            fixed="""
            import torch
            import torch.nn as nn


            class SlotCache(nn.Module):
                def __init__(self, n_slots, width, radius=1.5):
                    super().__init__()
                    self.register_buffer("slots", torch.zeros(n_slots, width))
                    self.register_buffer("used", torch.zeros(n_slots, dtype=torch.bool))
                    self.radius = radius

                def read(self, x):
                    near = torch.cdist(x, self.slots) <= self.radius
                    usable = self.used[None, :] & near
                    logits = x @ self.slots.t()
                    logits = logits.masked_fill(~usable, float("-inf"))
                    return torch.softmax(logits, dim=-1).masked_fill(logits.isneginf().all(dim=-1, keepdim=True), 0.0) @ self.slots
            """,
            line=16,
        ),
        # A NumPy causal triangle times a padding mask of item ids, in a file that reads each history at its last position (so pads in front): the first queries of a short history see only padding.
        Invalid(
            """
            import numpy as np
            import torch
            import torch.nn as nn


            class NextItemEncoder(nn.Module):
                def __init__(self, n_items, width):
                    super().__init__()
                    self.items = nn.Embedding(n_items, width)
                    self.qkv = nn.Linear(width, 3 * width)

                def forward(self, history):
                    n = history.size(1)
                    real = (history != 0).long()
                    allowed = torch.from_numpy(np.tril(np.ones((n, n), dtype=np.int64)))[None] * real[:, None, :]
                    q, k, v = self.qkv(self.items(history)).chunk(3, dim=-1)
                    s = q @ k.transpose(1, 2) / q.size(-1) ** 0.5
                    s = s.masked_fill(allowed == 0, float("-inf"))
                    out = s.softmax(dim=-1) @ v
                    # Each history's state is read at the last position: histories end there, padded in front.
                    return out[:, -1, :]
            """,
            fixed="""
            import numpy as np
            import torch
            import torch.nn as nn


            class NextItemEncoder(nn.Module):
                def __init__(self, n_items, width):
                    super().__init__()
                    self.items = nn.Embedding(n_items, width)
                    self.qkv = nn.Linear(width, 3 * width)

                def forward(self, history):
                    n = history.size(1)
                    real = (history != 0).long()
                    allowed = torch.from_numpy(np.tril(np.ones((n, n), dtype=np.int64)))[None] * real[:, None, :]
                    q, k, v = self.qkv(self.items(history)).chunk(3, dim=-1)
                    s = q @ k.transpose(1, 2) / q.size(-1) ** 0.5
                    s = s.masked_fill(allowed == 0, float("-inf"))
                    out = s.softmax(dim=-1).masked_fill(s.isneginf().all(dim=-1, keepdim=True), 0.0) @ v
                    # Each history's state is read at the last position: histories end there, padded in front.
                    return out[:, -1, :]
            """,
            line=18,
        ),
        # One padding mask laid along the keys and along the queries (ESPnet's (B, T, T) mask):
        # every padded query's row is all -inf in any padded batch, even with no empty sequence
        # (the lengths are at least 1).
        Invalid(
            """
            import torch


            def attend(q, k, v, lengths):
                T = q.size(-2)
                valid = torch.arange(T, device=q.device)[None, :] < lengths.clamp(min=1)[:, None]
                pair = valid.unsqueeze(1) & valid.unsqueeze(2)
                scores = q @ k.transpose(-2, -1) / q.size(-1) ** 0.5
                scores = scores.masked_fill(~pair, float("-inf"))
                return torch.softmax(scores, dim=-1) @ v
            """,
            fixed="""
            import torch


            def attend(q, k, v, lengths):
                T = q.size(-2)
                valid = torch.arange(T, device=q.device)[None, :] < lengths.clamp(min=1)[:, None]
                pair = valid.unsqueeze(1) & valid.unsqueeze(2)
                scores = q @ k.transpose(-2, -1) / q.size(-1) ** 0.5
                scores = scores.masked_fill(~pair, float("-inf"))
                return torch.softmax(scores, dim=-1).masked_fill(scores.isneginf().all(dim=-1, keepdim=True), 0.0) @ v
            """,
            line=9,
        ),
        # DGL's set transformer: per sequence, ones in the block of its real queries and keys
        # of a zero mask; every padded query's row stays all -inf.
        Invalid(
            """
            import torch


            def attend(queries, keys, values, lengths_x, lengths_mem):
                batch_size, max_len_x, max_len_mem = queries.size(0), queries.size(1), keys.size(1)
                e = torch.einsum("bxd,byd->bxy", queries, keys) / queries.size(-1) ** 0.5
                mask = torch.zeros(batch_size, max_len_x, max_len_mem)
                for i in range(batch_size):
                    mask[i, :lengths_x[i], :lengths_mem[i]].fill_(1)
                e.masked_fill_(mask == 0, -float("inf"))
                alpha = torch.softmax(e, dim=-1)
                return torch.einsum("bxy,byd->bxd", alpha, values)
            """,
            fixed="""
            import torch


            def attend(queries, keys, values, lengths_x, lengths_mem):
                batch_size, max_len_x, max_len_mem = queries.size(0), queries.size(1), keys.size(1)
                e = torch.einsum("bxd,byd->bxy", queries, keys) / queries.size(-1) ** 0.5
                mask = torch.zeros(batch_size, max_len_x, max_len_mem)
                for i in range(batch_size):
                    mask[i, :lengths_x[i], :lengths_mem[i]].fill_(1)
                e.masked_fill_(mask == 0, -float("inf"))
                alpha = torch.softmax(e, dim=-1).masked_fill(e.isneginf().all(dim=-1, keepdim=True), 0.0)
                return torch.einsum("bxy,byd->bxd", alpha, values)
            """,
            line=10,
        ),
    ]


def _fills_a_whole_row(fill) -> bool:
    """The mask has (a literal) or can have (a threshold, and `&`/`|` of one) a row that is all
    True where the fill goes."""
    filled = 0.0 if fill.keeps_where_true else 1.0
    return filled in fill.mask.mask.uniform_rows
