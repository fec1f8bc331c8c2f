"""ATN102 softmax-wrong-axis."""

from __future__ import annotations

from typing import Optional

from attnlint.analysis.softmax import singleton_axis
from attnlint.analysis.values import SoftmaxSite
from attnlint.diagnostics import Applicability
from attnlint.fixers.softmax_dim import set_softmax_dim
from attnlint.fixers.keyword import set_keyword
from attnlint.rules.base import FixAvailability, Invalid, Rule, RuleContext, Valid

# Token axes a softmax over scores may legitimately normalise: keys are on one of the last two.
_TOKEN_AXES = {-1, -2}


class SoftmaxWrongAxis(Rule):
    """
    ## What it does
    Checks for a softmax over attention scores whose `dim` is not the key axis: `dim=1` on
    `(batch, queries, keys)` scores, `dim=1` or `dim=2` on `(batch, heads, queries, keys)`
    scores, a softmax with no `dim` on 3-D or 4-D scores, `scores.softmax(1)`, and
    `nn.Softmax(dim=...)` built in `__init__` and applied to scores in `forward`. Scores whose
    operands no name marks as queries and keys (`bmm(dec, W(enc).transpose(1, 2))`, Luong's
    general score) are checked when the weights are contracted over the product's last axis.
    Attention written without a Q·Kᵀ product is checked too when the code shows its key axis: graph
    attention over a square (node × node) matrix contracted with the values, and additive
    (Bahdanau) attention over time-major `(src_len, batch)` logits normalised over the batch
    (time-major as a comment says, or as `nn.GRU`/`nn.LSTM` and `pad_packed_sequence` make them
    unless told `batch_first=True`),
    and Luong's dot or general scores (`torch.sum(hidden * encoder_outputs, dim=2).t()`, whose
    shapes a `# hidden: (1, B, H); encoder_outputs: (S, B, H)` comment gives) normalised over
    the batch.
    A softmax over the single output channel of a layer (`nn.Conv1d(d, 1, ...)` scoring each
    position, then `nn.Softmax(dim=1)`, in an `nn.Sequential` or not; `nn.Linear(d, 1)` scoring
    each frame of attentive pooling, then a softmax over the last axis, whatever the rank) is
    reported too: over an axis of size 1 every weight is 1.0.
    A softmax helper whose `dim` is its own parameter (`def masked_softmax(scores, mask,
    dim=1)`, written for `(batch, length)` pooling scores) is checked for each call that hands it
    attention scores: the dim that call binds, its default included, must be their key axis. That
    is reported at the call, where the fix passes `dim=`.

    ## Why is this bad?
    Each query's attention weights must sum to one over the keys. A softmax over another axis
    still returns numbers between 0 and 1, so training runs, but every query then mixes values
    with weights normalised across queries, batch elements or heads. Without `dim`, PyTorch
    picks one implicitly (dim 0 for 3-D input, dim 1 for 4-D): never the key axis.

    The key axis comes from the code: the layout of the product (`q @ kᵀ` puts keys last,
    `k @ qᵀ` puts them second to last; einsum output subscripts say it exactly) and the axis later
    contracted with the values (`weights @ v` sums over the last axis). When these disagree, or
    the code does not show them, nothing is reported.

    Not reported: key-major layouts normalised over their key axis, 2-D scores with `dim=1`,
    `dim=scores.dim() - 1`, classifier logits, alternating (Sinkhorn-style) normalisation (also
    when a caller renormalises the weights a helper returns), mixtures of softmaxes, weights
    mixed across heads by a learned matrix (talking heads), and contrastive batch-by-batch logits.

    ## Fix safety
    The fix is unsafe: it changes which axis sums to one, and so every attention weight. When the
    dim comes from an `nn.Softmax` built in `__init__`, the fix edits that constructor; check that
    the module is not shared with non-attention code.
    """

    code = "ATN102"
    name = "softmax-wrong-axis"
    summary = "softmax over attention scores normalises an axis other than the keys"
    fix_availability = FixAvailability.SOMETIMES
    fix_applicability = Applicability.UNSAFE
    triggers = ("softmax", "Softmax")
    recipe = "softmax_wrong_axis"

    def check(self, ctx: RuleContext) -> None:
        for site in ctx.analysis.softmax_sites:
            single = singleton_axis(site)
            if single is not None:
                where = f"axis {single + site.rank}" if site.rank is not None else "the last axis"
                ctx.report(
                    site.call,
                    f"softmax over {where} of size 1 (the single output channel of "
                    "the layer before it) returns 1.0 for every weight: normalise over the positions",
                )
                continue
            if site.renormalized or (site.input.scores is None and not site.attention_without_product()):
                continue
            axes = site.normalized_axes()
            if not axes:
                continue
            key_axis = site.key_axis()
            if key_axis is not None:
                wrong = key_axis not in axes
            else:
                wrong = not (axes & _TOKEN_AXES)
            if not wrong:
                continue
            fix = set_softmax_dim(site, key_axis) if key_axis is not None else None
            ctx.report(site.call, _message(site, axes, key_axis), fix=fix)
        for site in ctx.analysis.scores_through_helpers:
            self._helper_dim(ctx, site)

    def _helper_dim(self, ctx: RuleContext, site: SoftmaxSite) -> None:
        """A helper's softmax whose `dim` is its parameter (`def masked_softmax(scores, mask,
        dim=1)`), given a caller's scores: the axis that call binds (its default, left out)
        must be the keys of those scores. Reported at the call, where the fix passes `dim`."""
        call = site.dim_bound_by
        if call is None or site.renormalized or ctx.analysis.parent_of(call) is None:
            return
        axes = site.normalized_axes()
        key_axis = site.key_axis()
        if not axes or key_axis is None or key_axis in axes:
            return
        names = site.axis_names()
        axis = next(iter(axes)) if len(axes) == 1 else None
        named = names is not None and axis is not None and -len(names) <= axis < 0 and not names[axis].startswith("axis ")
        over = f"the {names[axis]} axis" if named else f"dim={site.dim}"
        layout = f"({', '.join(names)}) " if names is not None else ""
        passed = any(a.keyword is not None and a.keyword.value == "dim" for a in call.args)
        how = f"dim={site.dim}" if passed else f"its default dim={site.dim}"
        ctx.report(
            call,
            f"`{ctx.code(call.func)}` with {how} normalises these {layout}scores over {over}: attention "
            f"weights must sum to 1 over the keys; pass dim={key_axis}",
            fix=set_keyword(call, "dim", str(key_axis), f"Pass `dim={key_axis}`") if _takes_dim_keyword(ctx, site) else None,
        )

    VALID = [
        # The same helper, given the keys' axis by the attention that reuses it.
        Valid(
            """
            import math
            import torch
            import torch.nn as nn


            def masked_softmax(scores, mask, dim=1):
                scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
                return torch.softmax(scores, dim=dim)


            class AttentionPooling(nn.Module):
                def __init__(self, hidden):
                    super().__init__()
                    self.score = nn.Linear(hidden, 1)

                def forward(self, h, valid):
                    w = masked_softmax(self.score(h).squeeze(-1), valid)
                    return torch.einsum("bl,blh->bh", w, h)


            class SelfAttention(nn.Module):
                def __init__(self, hidden, heads):
                    super().__init__()
                    self.h, self.d_k = heads, hidden // heads
                    self.qkv = nn.Linear(hidden, 3 * hidden)

                def forward(self, x, valid):
                    B, L, _ = x.shape
                    q, k, v = self.qkv(x).view(B, L, 3, self.h, self.d_k).permute(2, 0, 3, 1, 4)
                    scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
                    attn = masked_softmax(scores, valid[:, None, None, :], dim=-1)
                    return (attn @ v).transpose(1, 2).reshape(B, L, self.h * self.d_k)
            """
        ),
        # Selective-kernel attention: branch weights stacked as (k, bs, channel, 1, 1),
        # normalised over the branches they are summed over.
        Valid(
            """
            import torch
            from torch import nn


            class SKAttention(nn.Module):
                def __init__(self, channel=512, kernels=(1, 3, 5, 7), d=32):
                    super().__init__()
                    self.convs = nn.ModuleList([])
                    for k in kernels:
                        self.convs.append(nn.Conv2d(channel, channel, kernel_size=k, padding=k // 2))
                    self.fc = nn.Linear(channel, d)
                    self.fcs = nn.ModuleList([])
                    for _ in kernels:
                        self.fcs.append(nn.Linear(d, channel))
                    self.softmax = nn.Softmax(dim=0)

                def forward(self, x):
                    bs, c, _, _ = x.size()
                    conv_outs = []
                    for conv in self.convs:
                        conv_outs.append(conv(x))
                    feats = torch.stack(conv_outs, 0)  # k, bs, channel, h, w
                    z = self.fc(sum(conv_outs).mean(-1).mean(-1))
                    weights = []
                    for fc in self.fcs:
                        weights.append(fc(z).view(bs, c, 1, 1))
                    attention_weights = self.softmax(torch.stack(weights, 0))  # k, bs, channel, 1, 1
                    return (attention_weights * feats).sum(0)
            """
        ),
        # One query's scores against every key (an index of the embedded sentence, one axis,
        # times the keys): one axis, the keys; dim=0 normalises over them.
        Valid(
            """
            import torch
            import torch.nn as nn

            sentence = "Life is short eat dessert first"
            dc = {s: i for i, s in enumerate(sorted(sentence.split()))}
            sentence_int = torch.tensor([dc[s] for s in sentence.split()])
            embedded = nn.Embedding(50_000, 3)(sentence_int).detach()
            W_query = nn.Parameter(torch.rand(3, 2))
            W_key = nn.Parameter(torch.rand(3, 2))
            query_2 = embedded[1] @ W_query
            keys = embedded @ W_key
            omega_2 = query_2 @ keys.T
            attention_weights_2 = torch.softmax(omega_2 / 2 ** 0.5, dim=0)
            """
        ),
        # Additive scores over (steps, slots), masked along the slots and normalised over them,
        # then read with bmm over the slots: right.
        Valid(
            """
            import torch
            import torch.nn as nn


            class SlotReader(nn.Module):
                # Each step reads a memory of slots; `slot_mask` (B, M) marks the filled slots.

                def __init__(self, width):
                    super().__init__()
                    self.score = nn.Sequential(nn.Linear(2 * width, width), nn.Tanh(), nn.Linear(width, 1))

                def forward(self, steps, memory, slot_mask):
                    T, M = steps.size(1), memory.size(1)
                    pairs = torch.cat(
                        [steps.unsqueeze(2).expand(-1, -1, M, -1), memory.unsqueeze(1).expand(-1, T, -1, -1)], dim=-1
                    )
                    logits = self.score(pairs).squeeze(-1)  # (B, T, M)
                    logits = logits.masked_fill(~slot_mask[:, None, :], float("-inf"))
                    weights = torch.softmax(logits, dim=-1)
                    return torch.bmm(weights, memory)
            """
        ),
        # The other direction: normalised over the steps, masked along the steps, and the
        # weights are transposed so bmm sums over the steps. The axes agree.
        Valid(
            """
            import torch
            import torch.nn as nn


            class StepSummary(nn.Module):
                def __init__(self, width):
                    super().__init__()
                    self.score = nn.Linear(2 * width, 1)

                def forward(self, steps, memory, step_mask):
                    T, M = steps.size(1), memory.size(1)
                    pairs = torch.cat(
                        [steps.unsqueeze(2).expand(-1, -1, M, -1), memory.unsqueeze(1).expand(-1, T, -1, -1)], dim=-1
                    )
                    logits = self.score(pairs).squeeze(-1)  # (B, T, M)
                    logits = logits.masked_fill(~step_mask[:, :, None], -1e9)
                    weights = torch.softmax(logits, dim=1)
                    return torch.bmm(weights.transpose(1, 2), steps)
            """
        ),
        # The same logits normalised over the steps.
        Valid(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F


            class AdditiveAttention(nn.Module):
                def __init__(self, enc_dim, dec_dim, attn_dim):
                    super().__init__()
                    self.W = nn.Linear(enc_dim + dec_dim, attn_dim)
                    self.v = nn.Linear(attn_dim, 1, bias=False)

                def forward(self, dec_hidden, enc_out):
                    # dec_hidden: (batch, dec_dim)
                    steps = enc_out.size(1)
                    query = dec_hidden.unsqueeze(1).repeat(1, steps, 1)
                    energy = torch.tanh(self.W(torch.cat([query, enc_out], dim=2)))
                    scores = self.v(energy).squeeze(2)
                    return F.softmax(scores, dim=1)
            """
        ),
        # The same general score normalised over the source positions.
        Valid(
            """
            import torch
            import torch.nn as nn


            class GeneralAttention(nn.Module):
                def __init__(self, hidden):
                    super().__init__()
                    self.proj = nn.Linear(hidden, hidden, bias=False)

                def forward(self, dec_states, enc_states, src_keep):
                    logits = torch.bmm(dec_states, self.proj(enc_states).transpose(1, 2))
                    logits = logits.masked_fill(src_keep.unsqueeze(1) == 0, float("-inf"))
                    align = torch.softmax(logits, dim=2)
                    return torch.bmm(align, enc_states), align
            """
        ),
        # Co-attention: normalised over the document axis and contracted over it too.
        Valid(
            """
            import torch


            def coattention(doc, question):
                affinity = torch.bmm(doc, question.transpose(1, 2))
                over_doc = torch.softmax(affinity, dim=1)
                return torch.bmm(over_doc.transpose(1, 2), doc)
            """
        ),
        # The per-frame logit squeezed to (batch, time) first: the last axis is time.
        Valid(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F


            class SelfAttentionPooling(nn.Module):
                def __init__(self, width):
                    super().__init__()
                    self.W = nn.Linear(width, 1)

                def forward(self, batch_rep, att_mask=None):
                    att_logits = self.W(batch_rep).squeeze(-1)
                    if att_mask is not None:
                        att_logits = att_mask + att_logits
                    att_w = F.softmax(att_logits, dim=-1).unsqueeze(-1)
                    return torch.sum(batch_rep * att_w, dim=1)
            """
        ),
        # (batch, time, 1) logits normalised over time.
        Valid(
            """
            import torch
            import torch.nn as nn


            class AttentivePooling(nn.Module):
                def __init__(self, hidden):
                    super().__init__()
                    self.att = nn.Linear(hidden, 1)

                def forward(self, x):
                    batch, steps, hidden = x.shape
                    w = torch.softmax(self.att(x), dim=1)
                    return (w * x).sum(dim=1)
            """
        ),
        # Attention pooling: one score per position from a 1-channel convolution, normalised over
        # the positions.
        Valid(
            """
            import torch
            import torch.nn as nn


            class AttentionPool(nn.Module):
                def __init__(self, channels):
                    super().__init__()
                    self.score = nn.Sequential(nn.Conv1d(channels, 1, kernel_size=1), nn.Softmax(dim=-1))

                def forward(self, series):
                    # series: (batch, channels, time)
                    weights = self.score(series)
                    return (weights * series).sum(dim=-1)


            if __name__ == "__main__":
                print(AttentionPool(16)(torch.randn(4, 16, 30)).shape)
            """
        ),
        # Scores flattened to (batch * queries, keys) rows and normalised over each row.
        Valid(
            """
            import torch


            def pointer_weights(query_states, memory):
                n_batch, n_steps, width = query_states.size()
                _, n_slots, _ = memory.size()
                logits = torch.bmm(query_states, memory.transpose(1, 2)) / width ** 0.5
                rows = logits.reshape(n_batch * n_steps, n_slots)
                probs = torch.softmax(rows, dim=1)
                return torch.bmm(probs.reshape(n_batch, n_steps, n_slots), memory)
            """
        ),
        # The module's own softmax with its dim given; the smoke test passes one tensor as q, k and v.
        Valid(
            """
            import torch
            from torch import nn


            class DotAttention(nn.Module):
                def __init__(self, scale):
                    super().__init__()
                    self.scale = scale
                    self.normalize = nn.Softmax(dim=2)

                def forward(self, query, key, value):
                    energy = torch.bmm(query, key.permute(0, 2, 1)) / self.scale
                    weights = self.normalize(energy)
                    return torch.bmm(weights, value), weights


            if __name__ == "__main__":
                layer = DotAttention(scale=8.0)
                tokens = torch.randn(3, 7, 64)
                context, weights = layer(tokens, tokens, tokens)
                print(weights.sum(dim=-1))
            """
        ),
        # Dual softmax (LoFTR-style matching): both axes on purpose.
        Valid(
            """
            import torch


            def f(q, k):
                s = torch.bmm(q, k.transpose(1, 2)) * q.shape[-1] ** -0.5
                return s.softmax(dim=1) * s.softmax(dim=2)
            """
        ),
        # Slot attention: softmax over the slots, plus eps, then renormalised over the inputs.
        Valid(
            """
            import torch


            def f(q, k, v):
                s = torch.bmm(q, k.transpose(1, 2)) * q.shape[-1] ** -0.5
                a = s.softmax(dim=1) + 1e-8
                a = a / a.sum(dim=-1, keepdim=True)
                return torch.bmm(a, v)
            """
        ),
        Valid(
            """
            import torch
            def forward(self, x):
                queries = self.W_q(x)
                keys = self.W_k(x)
                s = queries @ keys.transpose(1, 2)
                return torch.softmax(s / keys.shape[-1] ** 0.5, dim=-1)
            """
        ),
        # Key-major layout normalised over its key axis.
        Valid(
            """
            def forward(self, q, k, v):
                b, h, n, d = q.shape
                s = (k @ q.transpose(-2, -1)) * d ** -0.5
                w = s.softmax(dim=-2)
                return w.transpose(-2, -1) @ v
            """
        ),
        Valid(
            """
            import torch
            def forward(self, q, k):
                b, n, d = q.shape
                s = torch.bmm(k, q.transpose(1, 2)) / d ** 0.5
                return torch.softmax(s, dim=1)
            """
        ),
        # 2-D unbatched scores, dim=1 is the key axis.
        Valid(
            """
            import torch
            def attend(query, key, value):
                n, d = query.shape
                scores = query @ key.T / d ** 0.5
                return torch.softmax(scores, dim=1) @ value
            """
        ),
        # dim written as "last axis".
        Valid(
            """
            import torch
            def attend(q, k):
                scores = q @ k.transpose(-2, -1) * self.scale
                return torch.softmax(scores, dim=scores.dim() - 1)
            """
        ),
        # 1-D scores of one query against all keys.
        Valid(
            """
            import torch
            def attend(query, keys):
                n, d = keys.shape
                scores = keys @ query / d ** 0.5
                return torch.softmax(scores, dim=0)
            """
        ),
        # Classifier logits are not scores.
        Valid(
            """
            import torch.nn.functional as F
            def classify(self, features):
                logits = self.head(features)
                return F.softmax(logits, dim=1)
            """
        ),
        # Sinkhorn-style alternating normalisation.
        Valid(
            """
            def sinkhorn(self, q, k):
                b, n, d = q.shape
                s = q @ k.transpose(-2, -1) * d ** -0.5
                p = s.softmax(dim=-2)
                p = p / p.sum(dim=-1, keepdim=True)
                return p
            """
        ),
        # einsum with keys on axis -1, correct.
        Valid(
            """
            import torch
            def forward(self, q, k, v):
                sim = torch.einsum("b h i d, b h j d -> b h i j", q, k) * self.scale
                attn = sim.softmax(dim=-1)
                return torch.einsum("b h i j, b h j d -> b h i d", attn, v)
            """
        ),
        # einsum producing key-major scores, softmax over its key axis.
        Valid(
            """
            import torch
            def forward(self, q, k, v):
                sim = torch.einsum("bid,bjd->bji", q, k) * self.scale
                attn = sim.softmax(dim=1)
                return torch.einsum("bji,bjd->bid", attn, v)
            """
        ),
        # nn.Softmax(dim=-1) in __init__.
        Valid(
            """
            import torch
            import torch.nn as nn
            class Attn(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.softmax = nn.Softmax(dim=-1)
                def forward(self, q, k, v):
                    b, h, n, d = q.shape
                    return self.softmax(torch.matmul(q, k.transpose(2, 3)) / d ** 0.5) @ v
            """
        ),
        # dim=3 on 4-D scores is the key axis.
        Valid(
            """
            import torch
            def forward(self, x):
                B, T, C = x.shape
                q = self.q_proj(x).view(B, T, self.h, -1).transpose(1, 2)
                k = self.k_proj(x).view(B, T, self.h, -1).transpose(1, 2)
                att = (q @ k.transpose(-2, -1)) * self.scale
                return torch.softmax(att, dim=3)
            """
        ),
        # Unknown rank and a positive dim that is right for 2-D scores: silent.
        Valid(
            """
            import torch
            def attend(query, key):
                scores = query @ key.transpose(-2, -1) * self.scale
                return torch.softmax(scores, dim=1)
            """
        ),
        # Dim from a variable we cannot evaluate.
        Valid(
            """
            import torch
            def attend(query, key, axis):
                b, n, d = query.shape
                scores = query @ key.transpose(-2, -1) * self.scale
                return torch.softmax(scores, dim=axis)
            """
        ),
        # Not attention scores: additive (Bahdanau) energies from the seed article.
        Valid(
            """
            import torch
            def forward(self, encoder_outputs, decoder_hidden):
                energy = torch.tanh(encoder_outputs @ self.W_a.T + decoder_hidden.unsqueeze(1) @ self.U_a.T)
                attention_weights = torch.softmax(self.v_a @ energy.permute(2, 0, 1), dim=1)
                return attention_weights
            """
        ),
        # The same attention normalised over the source positions.
        Valid(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F


            class Attention(nn.Module):
                def __init__(self, enc_hid_dim, dec_hid_dim):
                    super().__init__()
                    self.attn = nn.Linear(enc_hid_dim + dec_hid_dim, dec_hid_dim)
                    self.v = nn.Linear(dec_hid_dim, 1, bias=False)

                def forward(self, hidden, encoder_outputs):
                    # encoder_outputs = [src len, batch size, enc hid dim]
                    src_len = encoder_outputs.shape[0]
                    hidden = hidden.unsqueeze(0).repeat(src_len, 1, 1)
                    # hidden = [src len, batch size, dec hid dim]
                    energy = torch.tanh(self.attn(torch.cat((hidden, encoder_outputs), dim=2)))
                    attention = self.v(energy).squeeze(2)
                    return F.softmax(attention, dim=0)
            """
        ),
        # Graph attention normalised over each node's neighbours.
        Valid(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F


            class GraphAttention(nn.Module):
                def __init__(self, in_features, out_features):
                    super().__init__()
                    self.W = nn.Parameter(torch.empty(size=(in_features, out_features)))
                    self.a = nn.Parameter(torch.empty(size=(2 * out_features, 1)))
                    self.out_features = out_features

                def forward(self, h, adj):
                    Wh = torch.mm(h, self.W)  # (N, out_features)
                    e = torch.matmul(Wh, self.a[: self.out_features, :]) + torch.matmul(Wh, self.a[self.out_features :, :]).T
                    e = F.leaky_relu(e, 0.2)
                    attention = torch.where(adj > 0, e, -9e15 * torch.ones_like(e))
                    attention = F.softmax(attention, dim=1)
                    return torch.matmul(attention, Wh)
            """
        ),
        # A mixture of softmaxes: probabilities over the vocabulary, mixed over components.
        Valid(
            """
            import torch


            def mixture(logits, weights):
                prob = logits.softmax(dim=-1)
                return torch.einsum("bkd,bk->bd", prob, weights)
            """
        ),
        # Talking heads: weights mixed across heads by a learned matrix, then applied to the values.
        Valid(
            """
            import torch
            from torch import nn


            class TalkingHeads(nn.Module):
                def __init__(self, heads):
                    super().__init__()
                    self.mix = nn.Parameter(torch.randn(heads, heads))

                def forward(self, q, k, v):
                    dots = torch.einsum("bhid,bhjd->bhij", q, k) * q.shape[-1] ** -0.5
                    attn = dots.softmax(dim=-1)
                    attn = torch.einsum("bhij,hg->bgij", attn, self.mix)
                    return torch.einsum("bhij,bhjd->bhid", attn, v)
            """
        ),
        # Contrastive logits between two batches: both axes are the batch, nothing to say.
        Valid(
            """
            import torch
            import torch.nn.functional as F


            def clip_probs(image_features, text_features):
                # image_features: (batch, dim)
                logits = image_features @ text_features.T * 100.0
                return logits.softmax(dim=0), logits.softmax(dim=1)
            """
        ),
        # Time-major additive attention normalised over the source positions, written with dim=0.
        Valid(
            """
            import torch
            import torch.nn.functional as F


            def attend(energy):
                # energy = [src len, batch size]
                return F.softmax(energy, dim=0)
            """
        ),
        # The same rows over the memory slots, normalised over the slots.
        Valid(
            """
            import torch
            import torch.nn as nn


            class GeneralAttention(nn.Module):
                def __init__(self, width):
                    super().__init__()
                    self.proj = nn.Linear(width, width, bias=False)
                    self.normalise = nn.Softmax(dim=1)

                def forward(self, query, memory):
                    batch, n_out, width = query.size()
                    n_mem = memory.size(1)
                    q = self.proj(query)
                    scores = torch.bmm(q, memory.transpose(1, 2))
                    rows = scores.view(batch * n_out, n_mem)
                    weights = self.normalise(rows).view(batch, n_out, n_mem)
                    return torch.bmm(weights, memory), weights
            """
        ),
        # Luong dot/general scores over time-major outputs, transposed to (batch, src_len).
        Valid(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F


            class LuongAttention(nn.Module):
                def __init__(self, hidden_size):
                    super().__init__()
                    self.attn = nn.Linear(hidden_size, hidden_size)

                def general_score(self, hidden, encoder_output):
                    return torch.sum(hidden * self.attn(encoder_output), dim=2)

                def forward(self, hidden, encoder_outputs):
                    # hidden: (1, B, H); encoder_outputs: (S, B, H)
                    energies = self.general_score(hidden, encoder_outputs).t()
                    return F.softmax(energies, dim=1).unsqueeze(1)
            """
        ),
    ]

    INVALID = [
        # A masked-softmax helper written for (batch, length) pooling scores, dim=1 by default,
        # reused on (batch, heads, queries, keys) attention scores without a dim.
        Invalid(
            """
            import math
            import torch
            import torch.nn as nn


            def masked_softmax(scores, mask, dim=1):
                scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
                return torch.softmax(scores, dim=dim)


            class AttentionPooling(nn.Module):
                def __init__(self, hidden):
                    super().__init__()
                    self.score = nn.Linear(hidden, 1)

                def forward(self, h, valid):
                    w = masked_softmax(self.score(h).squeeze(-1), valid)
                    return torch.einsum("bl,blh->bh", w, h)


            class SelfAttention(nn.Module):
                def __init__(self, hidden, heads):
                    super().__init__()
                    self.h, self.d_k = heads, hidden // heads
                    self.qkv = nn.Linear(hidden, 3 * hidden)

                def forward(self, x, valid):
                    B, L, _ = x.shape
                    q, k, v = self.qkv(x).view(B, L, 3, self.h, self.d_k).permute(2, 0, 3, 1, 4)
                    scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
                    attn = masked_softmax(scores, valid[:, None, None, :])
                    return (attn @ v).transpose(1, 2).reshape(B, L, self.h * self.d_k)
            """,
            fixed="""
            import math
            import torch
            import torch.nn as nn


            def masked_softmax(scores, mask, dim=1):
                scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
                return torch.softmax(scores, dim=dim)


            class AttentionPooling(nn.Module):
                def __init__(self, hidden):
                    super().__init__()
                    self.score = nn.Linear(hidden, 1)

                def forward(self, h, valid):
                    w = masked_softmax(self.score(h).squeeze(-1), valid)
                    return torch.einsum("bl,blh->bh", w, h)


            class SelfAttention(nn.Module):
                def __init__(self, hidden, heads):
                    super().__init__()
                    self.h, self.d_k = heads, hidden // heads
                    self.qkv = nn.Linear(hidden, 3 * hidden)

                def forward(self, x, valid):
                    B, L, _ = x.shape
                    q, k, v = self.qkv(x).view(B, L, 3, self.h, self.d_k).permute(2, 0, 3, 1, 4)
                    scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
                    attn = masked_softmax(scores, valid[:, None, None, :], dim=-1)
                    return (attn @ v).transpose(1, 2).reshape(B, L, self.h * self.d_k)
            """,
        ),
        # The same weights normalised over the batch (dim=1): each sample's weights depend on
        # the other samples of the batch.
        Invalid(
            """
            import torch
            from torch import nn


            class SKAttention(nn.Module):
                def __init__(self, channel=512, kernels=(1, 3, 5, 7), d=32):
                    super().__init__()
                    self.convs = nn.ModuleList([])
                    for k in kernels:
                        self.convs.append(nn.Conv2d(channel, channel, kernel_size=k, padding=k // 2))
                    self.fc = nn.Linear(channel, d)
                    self.fcs = nn.ModuleList([])
                    for _ in kernels:
                        self.fcs.append(nn.Linear(d, channel))
                    self.softmax = nn.Softmax(dim=1)

                def forward(self, x):
                    bs, c, _, _ = x.size()
                    conv_outs = []
                    for conv in self.convs:
                        conv_outs.append(conv(x))
                    feats = torch.stack(conv_outs, 0)  # k, bs, channel, h, w
                    z = self.fc(sum(conv_outs).mean(-1).mean(-1))
                    weights = []
                    for fc in self.fcs:
                        weights.append(fc(z).view(bs, c, 1, 1))
                    attention_weights = self.softmax(torch.stack(weights, 0))  # k, bs, channel, 1, 1
                    return (attention_weights * feats).sum(0)
            """,
            line=27,
            fixed="""
            import torch
            from torch import nn


            class SKAttention(nn.Module):
                def __init__(self, channel=512, kernels=(1, 3, 5, 7), d=32):
                    super().__init__()
                    self.convs = nn.ModuleList([])
                    for k in kernels:
                        self.convs.append(nn.Conv2d(channel, channel, kernel_size=k, padding=k // 2))
                    self.fc = nn.Linear(channel, d)
                    self.fcs = nn.ModuleList([])
                    for _ in kernels:
                        self.fcs.append(nn.Linear(d, channel))
                    self.softmax = nn.Softmax(dim=-5)

                def forward(self, x):
                    bs, c, _, _ = x.size()
                    conv_outs = []
                    for conv in self.convs:
                        conv_outs.append(conv(x))
                    feats = torch.stack(conv_outs, 0)  # k, bs, channel, h, w
                    z = self.fc(sum(conv_outs).mean(-1).mean(-1))
                    weights = []
                    for fc in self.fcs:
                        weights.append(fc(z).view(bs, c, 1, 1))
                    attention_weights = self.softmax(torch.stack(weights, 0))  # k, bs, channel, 1, 1
                    return (attention_weights * feats).sum(0)
            """,
        ),
        # A seq2seq tutorial's time-major additive attention: the decoder state repeated over
        # the source and concatenated with the encoder outputs, whose comment says what each
        # axis holds; the logits are (src len, batch) and dim=1 is the batch.
        Invalid(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F


            class Attention(nn.Module):
                def __init__(self, enc_hid_dim, dec_hid_dim):
                    super().__init__()
                    self.attn = nn.Linear((enc_hid_dim * 2) + dec_hid_dim, dec_hid_dim)
                    self.v = nn.Linear(dec_hid_dim, 1, bias=False)

                def forward(self, hidden, encoder_outputs):
                    # hidden = [batch size, dec hid dim]
                    # encoder_outputs = [src len, batch size, enc hid dim * 2]
                    src_len = encoder_outputs.shape[0]
                    hidden = hidden.unsqueeze(0).repeat(src_len, 1, 1)
                    energy = torch.tanh(self.attn(torch.cat((hidden, encoder_outputs), dim=2)))
                    attention = self.v(energy).squeeze(2)  # [src len, batch size]
                    return F.softmax(attention, dim=1)
            """,
            fixed="""
            import torch
            import torch.nn as nn
            import torch.nn.functional as F


            class Attention(nn.Module):
                def __init__(self, enc_hid_dim, dec_hid_dim):
                    super().__init__()
                    self.attn = nn.Linear((enc_hid_dim * 2) + dec_hid_dim, dec_hid_dim)
                    self.v = nn.Linear(dec_hid_dim, 1, bias=False)

                def forward(self, hidden, encoder_outputs):
                    # hidden = [batch size, dec hid dim]
                    # encoder_outputs = [src len, batch size, enc hid dim * 2]
                    src_len = encoder_outputs.shape[0]
                    hidden = hidden.unsqueeze(0).repeat(src_len, 1, 1)
                    energy = torch.tanh(self.attn(torch.cat((hidden, encoder_outputs), dim=2)))
                    attention = self.v(energy).squeeze(2)  # [src len, batch size]
                    return F.softmax(attention, dim=-2)
            """,
            line=19,
        ),
        # SwiftFormer's additive attention: each token scored by a learned (d, 1) weight, then a
        # softmax over that single score instead of over the tokens.
        Invalid(
            """
            import torch
            import torch.nn as nn


            class EfficientAdditiveAttention(nn.Module):
                def __init__(self, in_dims=512, token_dim=256):
                    super().__init__()
                    self.to_query = nn.Linear(in_dims, token_dim)
                    self.w_g = nn.Parameter(torch.randn(token_dim, 1))
                    self.scale_factor = token_dim ** -0.5

                def forward(self, x):
                    query = torch.nn.functional.normalize(self.to_query(x), dim=-1)
                    A = (query @ self.w_g) * self.scale_factor
                    A = A.softmax(dim=-1)
                    return torch.sum(A * query, dim=1)
            """,
            line=15,
        ),
        # Additive scores over (steps, slots): the padding mask varies along the slots and the
        # weights are summed over the slots (bmm with the memory), but the softmax runs over the
        # steps. Each padded slot's column of fills gets normalised instead.
        Invalid(
            """
            import torch
            import torch.nn as nn


            class SlotReader(nn.Module):
                # Each step reads a memory of slots; `slot_mask` (B, M) marks the filled slots.

                def __init__(self, width):
                    super().__init__()
                    self.score = nn.Sequential(nn.Linear(2 * width, width), nn.Tanh(), nn.Linear(width, 1))

                def forward(self, steps, memory, slot_mask):
                    T, M = steps.size(1), memory.size(1)
                    pairs = torch.cat(
                        [steps.unsqueeze(2).expand(-1, -1, M, -1), memory.unsqueeze(1).expand(-1, T, -1, -1)], dim=-1
                    )
                    logits = self.score(pairs).squeeze(-1)  # (B, T, M)
                    logits = logits.masked_fill(~slot_mask[:, None, :], float("-inf"))
                    weights = torch.softmax(logits, dim=1)
                    return torch.bmm(weights, memory)
            """,
            fixed="""
            import torch
            import torch.nn as nn


            class SlotReader(nn.Module):
                # Each step reads a memory of slots; `slot_mask` (B, M) marks the filled slots.

                def __init__(self, width):
                    super().__init__()
                    self.score = nn.Sequential(nn.Linear(2 * width, width), nn.Tanh(), nn.Linear(width, 1))

                def forward(self, steps, memory, slot_mask):
                    T, M = steps.size(1), memory.size(1)
                    pairs = torch.cat(
                        [steps.unsqueeze(2).expand(-1, -1, M, -1), memory.unsqueeze(1).expand(-1, T, -1, -1)], dim=-1
                    )
                    logits = self.score(pairs).squeeze(-1)  # (B, T, M)
                    logits = logits.masked_fill(~slot_mask[:, None, :], float("-inf"))
                    weights = torch.softmax(logits, dim=-1)
                    return torch.bmm(weights, memory)
            """,
        ),
        # Batch-first additive attention: the logits are (batch, steps), the steps named by the
        # size read into `steps`; dim=0 normalises over the batch.
        Invalid(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F


            class AdditiveAttention(nn.Module):
                def __init__(self, enc_dim, dec_dim, attn_dim):
                    super().__init__()
                    self.W = nn.Linear(enc_dim + dec_dim, attn_dim)
                    self.v = nn.Linear(attn_dim, 1, bias=False)

                def forward(self, dec_hidden, enc_out):
                    # dec_hidden: (batch, dec_dim)
                    steps = enc_out.size(1)
                    query = dec_hidden.unsqueeze(1).repeat(1, steps, 1)
                    energy = torch.tanh(self.W(torch.cat([query, enc_out], dim=2)))
                    scores = self.v(energy).squeeze(2)
                    return F.softmax(scores, dim=0)
            """,
            fixed="""
            import torch
            import torch.nn as nn
            import torch.nn.functional as F


            class AdditiveAttention(nn.Module):
                def __init__(self, enc_dim, dec_dim, attn_dim):
                    super().__init__()
                    self.W = nn.Linear(enc_dim + dec_dim, attn_dim)
                    self.v = nn.Linear(attn_dim, 1, bias=False)

                def forward(self, dec_hidden, enc_out):
                    # dec_hidden: (batch, dec_dim)
                    steps = enc_out.size(1)
                    query = dec_hidden.unsqueeze(1).repeat(1, steps, 1)
                    energy = torch.tanh(self.W(torch.cat([query, enc_out], dim=2)))
                    scores = self.v(energy).squeeze(2)
                    return F.softmax(scores, dim=-1)
            """,
            line=18,
        ),
        # Luong's general score: (batch, decoder steps, source) logits from a product of two
        # activations whose roles no name tells; the weights are then contracted over the last
        # axis (the source), so the softmax over the decoder steps is the wrong one.
        Invalid(
            """
            import torch
            import torch.nn as nn


            class GeneralAttention(nn.Module):
                def __init__(self, hidden):
                    super().__init__()
                    self.proj = nn.Linear(hidden, hidden, bias=False)

                def forward(self, dec_states, enc_states, src_keep):
                    logits = torch.bmm(dec_states, self.proj(enc_states).transpose(1, 2))
                    logits = logits.masked_fill(src_keep.unsqueeze(1) == 0, float("-inf"))
                    align = torch.softmax(logits, dim=1)
                    return torch.bmm(align, enc_states), align
            """,
            fixed="""
            import torch
            import torch.nn as nn


            class GeneralAttention(nn.Module):
                def __init__(self, hidden):
                    super().__init__()
                    self.proj = nn.Linear(hidden, hidden, bias=False)

                def forward(self, dec_states, enc_states, src_keep):
                    logits = torch.bmm(dec_states, self.proj(enc_states).transpose(1, 2))
                    logits = logits.masked_fill(src_keep.unsqueeze(1) == 0, float("-inf"))
                    align = torch.softmax(logits, dim=-1)
                    return torch.bmm(align, enc_states), align
            """,
            line=13,
        ),
        # Attentive statistics pooling: the scorer makes one logit per frame, (batch, time, 1);
        # a softmax over that last axis gives every frame weight 1.0 (the rank is never shown).
        Invalid(
            """
            import torch
            import torch.nn as nn


            class AttentiveStatsPool(nn.Module):
                def __init__(self, channels, bottleneck=128):
                    super().__init__()
                    self.hidden = nn.Linear(channels, bottleneck)
                    self.logit = nn.Linear(bottleneck, 1)

                def forward(self, frames):
                    energy = torch.tanh(self.hidden(frames))
                    alpha = torch.softmax(self.logit(energy), dim=-1)
                    mean = torch.sum(alpha * frames, dim=1)
                    std = torch.sqrt((torch.sum(alpha * frames**2, dim=1) - mean**2).clamp(min=1e-5))
                    return torch.cat([mean, std], dim=-1)
            """,
            line=13,
        ),
        # The same pooling written with the method form and a mask fill on the (B, T, 1) logits.
        Invalid(
            """
            import torch.nn as nn


            class MaskedPool(nn.Module):
                def __init__(self, width):
                    super().__init__()
                    self.score = nn.Linear(width, 1)

                def forward(self, states, keep):
                    logits = self.score(states)
                    logits = logits.masked_fill(keep.unsqueeze(-1) == 0, float("-inf"))
                    weights = logits.softmax(-1)
                    return (weights * states).sum(1)
            """,
            line=12,
        ),
        # The score convolution has one output channel: softmax over it gives 1.0 everywhere.
        Invalid(
            """
            import torch
            import torch.nn as nn


            class AttentionPool(nn.Module):
                def __init__(self, channels):
                    super().__init__()
                    self.scorer = nn.Conv1d(in_channels=channels, out_channels=1, kernel_size=3, padding=1)
                    self.normalize = nn.Softmax(dim=1)

                def forward(self, series):
                    weights = self.normalize(self.scorer(series.transpose(1, 2)))
                    return (weights * series.transpose(1, 2)).sum(dim=-1)


            if __name__ == "__main__":
                print(AttentionPool(16)(torch.randn(4, 30, 16)).shape)
            """,
        ),
        # Scores flattened to (batch * queries, keys) rows keep their keys on the last axis:
        # dim 0 normalises each key over every query of the batch.
        Invalid(
            """
            import torch


            def pointer_weights(query_states, memory):
                n_batch, n_steps, width = query_states.size()
                _, n_slots, _ = memory.size()
                logits = torch.bmm(query_states, memory.transpose(1, 2)) / width ** 0.5
                rows = logits.view(n_batch * n_steps, n_slots)
                probs = torch.softmax(rows, dim=0)
                return torch.bmm(probs.view(n_batch, n_steps, n_slots), memory)
            """,
            fixed="""
            import torch


            def pointer_weights(query_states, memory):
                n_batch, n_steps, width = query_states.size()
                _, n_slots, _ = memory.size()
                logits = torch.bmm(query_states, memory.transpose(1, 2)) / width ** 0.5
                rows = logits.view(n_batch * n_steps, n_slots)
                probs = torch.softmax(rows, dim=-1)
                return torch.bmm(probs.view(n_batch, n_steps, n_slots), memory)
            """,
        ),
        # `nn.Softmax()` with no dim on 3-D scores: dim 0 (the batch). The parameters' names say
        # which input is the query and which the key, whatever one tensor the caller passes.
        Invalid(
            """
            import torch
            from torch import nn


            class DotAttention(nn.Module):
                def __init__(self, scale):
                    super().__init__()
                    self.scale = scale
                    self.normalize = nn.Softmax()

                def forward(self, query, key, value):
                    energy = torch.bmm(query, key.permute(0, 2, 1)) / self.scale
                    weights = self.normalize(energy)
                    return torch.bmm(weights, value), weights


            if __name__ == "__main__":
                layer = DotAttention(scale=8.0)
                tokens = torch.randn(3, 7, 64)
                context, weights = layer(tokens, tokens, tokens)
                print(weights.sum(dim=-1))
            """,
            fixed="""
            import torch
            from torch import nn


            class DotAttention(nn.Module):
                def __init__(self, scale):
                    super().__init__()
                    self.scale = scale
                    self.normalize = nn.Softmax(dim=-1)

                def forward(self, query, key, value):
                    energy = torch.bmm(query, key.permute(0, 2, 1)) / self.scale
                    weights = self.normalize(energy)
                    return torch.bmm(weights, value), weights


            if __name__ == "__main__":
                layer = DotAttention(scale=8.0)
                tokens = torch.randn(3, 7, 64)
                context, weights = layer(tokens, tokens, tokens)
                print(weights.sum(dim=-1))
            """,
        ),
        # The course notes' CausalAttention with the softmax over queries.
        Invalid(
            """
            import torch
            def forward(self, x):
                b, num_tokens, d_in = x.shape
                queries = self.W_q(x)
                keys = self.W_k(x)
                values = self.W_v(x)
                attn_scores = queries @ keys.transpose(1, 2)
                attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=1)
                return attn_weights @ values
            """,
            fixed="""
            import torch
            def forward(self, x):
                b, num_tokens, d_in = x.shape
                queries = self.W_q(x)
                keys = self.W_k(x)
                values = self.W_v(x)
                attn_scores = queries @ keys.transpose(1, 2)
                attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
                return attn_weights @ values
            """,
            line=8,
            column=19,
            page=True,
        ),
        # 4-D scores, dim=1 is the heads axis.
        Invalid(
            """
            import torch.nn.functional as F
            def forward(self, x):
                B, T, C = x.size()
                q = self.query(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                k = self.key(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                att = (q @ k.transpose(-2, -1)) * self.scale
                return F.softmax(att, dim=1)
            """,
            fixed="""
            import torch.nn.functional as F
            def forward(self, x):
                B, T, C = x.size()
                q = self.query(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                k = self.key(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                att = (q @ k.transpose(-2, -1)) * self.scale
                return F.softmax(att, dim=-1)
            """,
        ),
        # 4-D scores, dim=2 is the query axis.
        Invalid(
            """
            import torch
            def forward(self, q, k, v):
                b, h, n, d = q.shape
                s = torch.matmul(q, k.transpose(2, 3)) / d ** 0.5
                return torch.softmax(s, dim=2) @ v
            """,
            fixed="""
            import torch
            def forward(self, q, k, v):
                b, h, n, d = q.shape
                s = torch.matmul(q, k.transpose(2, 3)) / d ** 0.5
                return torch.softmax(s, dim=-1) @ v
            """,
        ),
        # No dim on 3-D scores: PyTorch picks dim 0, the batch.
        Invalid(
            """
            import torch.nn.functional as F
            def forward(self, q, k):
                b, n, d = q.shape
                s = q @ k.transpose(1, 2) / d ** 0.5
                return F.softmax(s)
            """,
            fixed="""
            import torch.nn.functional as F
            def forward(self, q, k):
                b, n, d = q.shape
                s = q @ k.transpose(1, 2) / d ** 0.5
                return F.softmax(s, dim=-1)
            """,
        ),
        # No dim on 4-D scores: PyTorch picks dim 1, the heads.
        Invalid(
            """
            import torch
            def forward(self, q, k):
                b, h, n, d = k.shape
                return torch.softmax(q @ k.transpose(-2, -1) * self.scale)
            """,
            fixed="""
            import torch
            def forward(self, q, k):
                b, h, n, d = k.shape
                return torch.softmax(q @ k.transpose(-2, -1) * self.scale, dim=-1)
            """,
        ),
        # Method form.
        Invalid(
            """
            def forward(self, q, k, v):
                b, n, d = q.shape
                scores = q @ k.transpose(-2, -1) * d ** -0.5
                return scores.softmax(1) @ v
            """,
            fixed="""
            def forward(self, q, k, v):
                b, n, d = q.shape
                scores = q @ k.transpose(-2, -1) * d ** -0.5
                return scores.softmax(-1) @ v
            """,
        ),
        # nn.Softmax built in __init__ with the wrong dim.
        Invalid(
            """
            import torch
            import torch.nn as nn
            class Attn(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.softmax = nn.Softmax(dim=1)
                def forward(self, q, k, v):
                    b, n, d = q.shape
                    scores = torch.bmm(q, k.transpose(1, 2)) / d ** 0.5
                    return torch.bmm(self.softmax(scores), v)
            """,
            fixed="""
            import torch
            import torch.nn as nn
            class Attn(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.softmax = nn.Softmax(dim=-1)
                def forward(self, q, k, v):
                    b, n, d = q.shape
                    scores = torch.bmm(q, k.transpose(1, 2)) / d ** 0.5
                    return torch.bmm(self.softmax(scores), v)
            """,
        ),
        # nn.Softmax() with no dim.
        Invalid(
            """
            import torch
            import torch.nn as nn
            class Attn(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.softmax = nn.Softmax()
                def forward(self, q, k):
                    b, h, n, d = q.shape
                    return self.softmax(q @ k.transpose(-2, -1) * self.scale)
            """,
            fixed="""
            import torch
            import torch.nn as nn
            class Attn(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.softmax = nn.Softmax(dim=-1)
                def forward(self, q, k):
                    b, h, n, d = q.shape
                    return self.softmax(q @ k.transpose(-2, -1) * self.scale)
            """,
        ),
        # Query-major scores normalised with dim=-2.
        Invalid(
            """
            import torch
            def forward(self, query, key, value):
                scores = torch.matmul(query, key.transpose(-2, -1)) * self.scale
                attn = torch.softmax(scores, dim=-2)
                return torch.matmul(attn, value)
            """,
            fixed="""
            import torch
            def forward(self, query, key, value):
                scores = torch.matmul(query, key.transpose(-2, -1)) * self.scale
                attn = torch.softmax(scores, dim=-1)
                return torch.matmul(attn, value)
            """,
        ),
        # Key-major scores normalised over the query axis.
        Invalid(
            """
            def forward(self, q, k, v):
                b, n, d = q.shape
                s = k @ q.transpose(1, 2) * d ** -0.5
                w = s.softmax(dim=2)
                return w.transpose(1, 2) @ v
            """,
            fixed="""
            def forward(self, q, k, v):
                b, n, d = q.shape
                s = k @ q.transpose(1, 2) * d ** -0.5
                w = s.softmax(dim=-2)
                return w.transpose(1, 2) @ v
            """,
        ),
        # einsum: output subscripts put keys last.
        Invalid(
            """
            import torch
            def forward(self, q, k, v):
                sim = torch.einsum("bhid,bhjd->bhij", q, k) * self.scale
                attn = sim.softmax(dim=2)
                return torch.einsum("bhij,bhjd->bhid", attn, v)
            """,
            fixed="""
            import torch
            def forward(self, q, k, v):
                sim = torch.einsum("bhid,bhjd->bhij", q, k) * self.scale
                attn = sim.softmax(dim=-1)
                return torch.einsum("bhij,bhjd->bhid", attn, v)
            """,
        ),
        # dim=0 is never the key axis of query-major scores, whatever the rank.
        Invalid(
            """
            import torch
            def attend(query, key, value):
                scores = query @ key.transpose(-2, -1) * self.scale
                return torch.softmax(scores, dim=0) @ value
            """,
            fixed="""
            import torch
            def attend(query, key, value):
                scores = query @ key.transpose(-2, -1) * self.scale
                return torch.softmax(scores, dim=-1) @ value
            """,
        ),
        # Through a mask and dropout; the key axis is confirmed by `attn @ v`.
        Invalid(
            """
            import torch
            def forward(self, x, mask):
                B, N, C = x.shape
                q = self.q(x).reshape(B, N, self.h, C // self.h).permute(0, 2, 1, 3)
                k = self.k(x).reshape(B, N, self.h, C // self.h).permute(0, 2, 1, 3)
                v = self.v(x).reshape(B, N, self.h, C // self.h).permute(0, 2, 1, 3)
                attn = (q @ k.transpose(-2, -1)) * self.scale
                attn = attn.masked_fill(mask == 0, -1e9)
                attn = self.attn_drop(attn.softmax(dim=1))
                return attn @ v
            """,
            fixed="""
            import torch
            def forward(self, x, mask):
                B, N, C = x.shape
                q = self.q(x).reshape(B, N, self.h, C // self.h).permute(0, 2, 1, 3)
                k = self.k(x).reshape(B, N, self.h, C // self.h).permute(0, 2, 1, 3)
                v = self.v(x).reshape(B, N, self.h, C // self.h).permute(0, 2, 1, 3)
                attn = (q @ k.transpose(-2, -1)) * self.scale
                attn = attn.masked_fill(mask == 0, -1e9)
                attn = self.attn_drop(attn.softmax(dim=-1))
                return attn @ v
            """,
        ),
        # Top-level script code with tensors built by constructors.
        Invalid(
            """
            import torch
            queries = torch.randn(2, 5, 16)
            keys = torch.randn(2, 5, 16)
            weights = torch.softmax(queries @ keys.transpose(1, 2) / 4.0, 1)
            """,
            fixed="""
            import torch
            queries = torch.randn(2, 5, 16)
            keys = torch.randn(2, 5, 16)
            weights = torch.softmax(queries @ keys.transpose(1, 2) / 4.0, -1)
            """,
        ),
        # dim=-3 on 4-D scores.
        Invalid(
            """
            import torch
            def forward(self, xq, xk):
                scores = torch.matmul(xq, xk.transpose(2, 3)) / self.head_dim ** 0.5
                return torch.softmax(scores.float(), dim=-3)
            """,
            fixed="""
            import torch
            def forward(self, xq, xk):
                scores = torch.matmul(xq, xk.transpose(2, 3)) / self.head_dim ** 0.5
                return torch.softmax(scores.float(), dim=-1)
            """,
        ),
        # Seq2seq (Bahdanau) attention over time-major encoder outputs: dim=1 is the batch.
        Invalid(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F


            class Attention(nn.Module):
                def __init__(self, enc_hid_dim, dec_hid_dim):
                    super().__init__()
                    self.attn = nn.Linear(enc_hid_dim + dec_hid_dim, dec_hid_dim)
                    self.v = nn.Linear(dec_hid_dim, 1, bias=False)

                def forward(self, hidden, encoder_outputs):
                    # encoder_outputs = [src len, batch size, enc hid dim]
                    src_len = encoder_outputs.shape[0]
                    hidden = hidden.unsqueeze(0).repeat(src_len, 1, 1)
                    # hidden = [src len, batch size, dec hid dim]
                    energy = torch.tanh(self.attn(torch.cat((hidden, encoder_outputs), dim=2)))
                    attention = self.v(energy).squeeze(2)
                    return F.softmax(attention, dim=1)
            """,
            fixed="""
            import torch
            import torch.nn as nn
            import torch.nn.functional as F


            class Attention(nn.Module):
                def __init__(self, enc_hid_dim, dec_hid_dim):
                    super().__init__()
                    self.attn = nn.Linear(enc_hid_dim + dec_hid_dim, dec_hid_dim)
                    self.v = nn.Linear(dec_hid_dim, 1, bias=False)

                def forward(self, hidden, encoder_outputs):
                    # encoder_outputs = [src len, batch size, enc hid dim]
                    src_len = encoder_outputs.shape[0]
                    hidden = hidden.unsqueeze(0).repeat(src_len, 1, 1)
                    # hidden = [src len, batch size, dec hid dim]
                    energy = torch.tanh(self.attn(torch.cat((hidden, encoder_outputs), dim=2)))
                    attention = self.v(energy).squeeze(2)
                    return F.softmax(attention, dim=-2)
            """,
        ),
        # Graph attention over an (N, N) score matrix normalised over the wrong node axis.
        Invalid(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F


            class GraphAttention(nn.Module):
                def __init__(self, in_features, out_features):
                    super().__init__()
                    self.W = nn.Parameter(torch.empty(size=(in_features, out_features)))
                    self.a = nn.Parameter(torch.empty(size=(2 * out_features, 1)))
                    self.out_features = out_features

                def forward(self, h, adj):
                    Wh = torch.mm(h, self.W)  # (N, out_features)
                    e = torch.matmul(Wh, self.a[: self.out_features, :]) + torch.matmul(Wh, self.a[self.out_features :, :]).T
                    e = F.leaky_relu(e, 0.2)
                    attention = torch.where(adj > 0, e, -9e15 * torch.ones_like(e))
                    attention = F.softmax(attention, dim=0)
                    return torch.matmul(attention, Wh)
            """,
            fixed="""
            import torch
            import torch.nn as nn
            import torch.nn.functional as F


            class GraphAttention(nn.Module):
                def __init__(self, in_features, out_features):
                    super().__init__()
                    self.W = nn.Parameter(torch.empty(size=(in_features, out_features)))
                    self.a = nn.Parameter(torch.empty(size=(2 * out_features, 1)))
                    self.out_features = out_features

                def forward(self, h, adj):
                    Wh = torch.mm(h, self.W)  # (N, out_features)
                    e = torch.matmul(Wh, self.a[: self.out_features, :]) + torch.matmul(Wh, self.a[self.out_features :, :]).T
                    e = F.leaky_relu(e, 0.2)
                    attention = torch.where(adj > 0, e, -9e15 * torch.ones_like(e))
                    attention = F.softmax(attention, dim=-1)
                    return torch.matmul(attention, Wh)
            """,
        ),
        # einsum scores laid out (batch, queries, heads, keys): dim=1 is the query axis.
        Invalid(
            """
            import torch


            def attend(q, k, v):
                s = torch.einsum("bqhd,bkhd->bqhk", q, k) * q.shape[-1] ** -0.5
                w = s.softmax(dim=1)
                return torch.einsum("bqhk,bkhd->bqhd", w, v)
            """,
            fixed="""
            import torch


            def attend(q, k, v):
                s = torch.einsum("bqhd,bkhd->bqhk", q, k) * q.shape[-1] ** -0.5
                w = s.softmax(dim=-1)
                return torch.einsum("bqhk,bkhd->bqhd", w, v)
            """,
        ),
        # Scores flattened to (rows, memory slots), the memory 3-D because a later `torch.bmm`
        # takes it: `dim=0` normalises over every row of the batch, not over the slots.
        Invalid(
            """
            import torch
            import torch.nn as nn


            class GeneralAttention(nn.Module):
                def __init__(self, width):
                    super().__init__()
                    self.proj = nn.Linear(width, width, bias=False)
                    self.normalise = nn.Softmax(dim=0)

                def forward(self, query, memory):
                    batch, n_out, width = query.size()
                    n_mem = memory.size(1)
                    q = self.proj(query)
                    scores = torch.bmm(q, memory.transpose(1, 2))
                    rows = scores.view(batch * n_out, n_mem)
                    weights = self.normalise(rows).view(batch, n_out, n_mem)
                    return torch.bmm(weights, memory), weights
            """,
            fixed="""
            import torch
            import torch.nn as nn


            class GeneralAttention(nn.Module):
                def __init__(self, width):
                    super().__init__()
                    self.proj = nn.Linear(width, width, bias=False)
                    self.normalise = nn.Softmax(dim=-1)

                def forward(self, query, memory):
                    batch, n_out, width = query.size()
                    n_mem = memory.size(1)
                    q = self.proj(query)
                    scores = torch.bmm(q, memory.transpose(1, 2))
                    rows = scores.view(batch * n_out, n_mem)
                    weights = self.normalise(rows).view(batch, n_out, n_mem)
                    return torch.bmm(weights, memory), weights
            """,
        ),
        # Luong scores `torch.sum(hidden * enc, dim=2).t()` are (batch, src_len): dim=0 is the batch.
        Invalid(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F


            class LuongAttention(nn.Module):
                def __init__(self, hidden_size):
                    super().__init__()
                    self.attn = nn.Linear(hidden_size, hidden_size)

                def general_score(self, hidden, encoder_output):
                    return torch.sum(hidden * self.attn(encoder_output), dim=2)

                def forward(self, hidden, encoder_outputs):
                    # hidden: (1, B, H); encoder_outputs: (S, B, H)
                    energies = self.general_score(hidden, encoder_outputs).t()
                    return F.softmax(energies, dim=0).unsqueeze(1)
            """,
            fixed="""
            import torch
            import torch.nn as nn
            import torch.nn.functional as F


            class LuongAttention(nn.Module):
                def __init__(self, hidden_size):
                    super().__init__()
                    self.attn = nn.Linear(hidden_size, hidden_size)

                def general_score(self, hidden, encoder_output):
                    return torch.sum(hidden * self.attn(encoder_output), dim=2)

                def forward(self, hidden, encoder_outputs):
                    # hidden: (1, B, H); encoder_outputs: (S, B, H)
                    energies = self.general_score(hidden, encoder_outputs).t()
                    return F.softmax(energies, dim=-1).unsqueeze(1)
            """,
        ),
        # ViT blocks stacked in an nn.Sequential of a list: each block is given the patches
        # the model embeds, (batch, patches, dim), and slices its own q, k, v from them; dim=1
        # of its scores is the query axis.
        Invalid(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F


            class SelfAttention(nn.Module):
                def __init__(self, embedding_dim, key_dim):
                    super().__init__()
                    self.key_dim = key_dim
                    self.W = nn.Parameter(torch.randn(embedding_dim, 3 * key_dim))

                def forward(self, x):
                    qkv = torch.matmul(x, self.W)
                    q = qkv[:, :, : self.key_dim]
                    k = qkv[:, :, self.key_dim : 2 * self.key_dim]
                    v = qkv[:, :, 2 * self.key_dim :]
                    scores = torch.matmul(q, k.transpose(-2, -1)) / self.key_dim ** 0.5
                    return torch.matmul(F.softmax(scores, dim=1), v)


            class VisionTransformer(nn.Module):
                def __init__(self, patch_dim, embedding_dim, depth):
                    super().__init__()
                    self.embed = nn.Linear(patch_dim, embedding_dim)
                    self.blocks = nn.Sequential(*[SelfAttention(embedding_dim, embedding_dim) for _ in range(depth)])

                def forward(self, patches):
                    # patches: (batch, num_patches, patch_dim)
                    b, n, _ = patches.shape
                    return self.blocks(self.embed(patches))
            """,
            fixed="""
            import torch
            import torch.nn as nn
            import torch.nn.functional as F


            class SelfAttention(nn.Module):
                def __init__(self, embedding_dim, key_dim):
                    super().__init__()
                    self.key_dim = key_dim
                    self.W = nn.Parameter(torch.randn(embedding_dim, 3 * key_dim))

                def forward(self, x):
                    qkv = torch.matmul(x, self.W)
                    q = qkv[:, :, : self.key_dim]
                    k = qkv[:, :, self.key_dim : 2 * self.key_dim]
                    v = qkv[:, :, 2 * self.key_dim :]
                    scores = torch.matmul(q, k.transpose(-2, -1)) / self.key_dim ** 0.5
                    return torch.matmul(F.softmax(scores, dim=-1), v)


            class VisionTransformer(nn.Module):
                def __init__(self, patch_dim, embedding_dim, depth):
                    super().__init__()
                    self.embed = nn.Linear(patch_dim, embedding_dim)
                    self.blocks = nn.Sequential(*[SelfAttention(embedding_dim, embedding_dim) for _ in range(depth)])

                def forward(self, patches):
                    # patches: (batch, num_patches, patch_dim)
                    b, n, _ = patches.shape
                    return self.blocks(self.embed(patches))
            """,
        ),
        # A chatbot tutorial's Luong concat attention: nn.GRU and pad_packed_sequence are
        # time-major by default, so the energies are (src_len, batch) and dim=1 is the batch.
        Invalid(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F


            class EncoderRNN(nn.Module):
                def __init__(self, vocab_size, hidden_size):
                    super().__init__()
                    self.hidden_size = hidden_size
                    self.embedding = nn.Embedding(vocab_size, hidden_size)
                    self.gru = nn.GRU(hidden_size, hidden_size, bidirectional=True)

                def forward(self, input_seq, input_lengths):
                    embedded = self.embedding(input_seq)
                    packed = nn.utils.rnn.pack_padded_sequence(embedded, input_lengths.cpu())
                    outputs, hidden = self.gru(packed)
                    outputs, _ = nn.utils.rnn.pad_packed_sequence(outputs)
                    return outputs[:, :, : self.hidden_size] + outputs[:, :, self.hidden_size :], hidden


            class ConcatAttn(nn.Module):
                def __init__(self, hidden_size):
                    super().__init__()
                    self.attn = nn.Linear(hidden_size * 2, hidden_size)
                    self.v = nn.Parameter(torch.FloatTensor(hidden_size).uniform_(-0.1, 0.1))

                def forward(self, hidden, encoder_outputs):
                    energy = self.attn(torch.cat((hidden.expand(encoder_outputs.size(0), -1, -1), encoder_outputs), 2)).tanh()
                    attn_energies = torch.sum(self.v * energy, dim=2)
                    return F.softmax(attn_energies, dim=1).t().unsqueeze(1)


            class Seq2Seq(nn.Module):
                def __init__(self, vocab_size, hidden_size):
                    super().__init__()
                    self.encoder = EncoderRNN(vocab_size, hidden_size)
                    self.attn = ConcatAttn(hidden_size)

                def forward(self, input_seq, input_lengths, decoder_state):
                    encoder_outputs, _ = self.encoder(input_seq, input_lengths)
                    weights = self.attn(decoder_state, encoder_outputs)
                    return weights.bmm(encoder_outputs.transpose(0, 1))
            """,
            fixed="""
            import torch
            import torch.nn as nn
            import torch.nn.functional as F


            class EncoderRNN(nn.Module):
                def __init__(self, vocab_size, hidden_size):
                    super().__init__()
                    self.hidden_size = hidden_size
                    self.embedding = nn.Embedding(vocab_size, hidden_size)
                    self.gru = nn.GRU(hidden_size, hidden_size, bidirectional=True)

                def forward(self, input_seq, input_lengths):
                    embedded = self.embedding(input_seq)
                    packed = nn.utils.rnn.pack_padded_sequence(embedded, input_lengths.cpu())
                    outputs, hidden = self.gru(packed)
                    outputs, _ = nn.utils.rnn.pad_packed_sequence(outputs)
                    return outputs[:, :, : self.hidden_size] + outputs[:, :, self.hidden_size :], hidden


            class ConcatAttn(nn.Module):
                def __init__(self, hidden_size):
                    super().__init__()
                    self.attn = nn.Linear(hidden_size * 2, hidden_size)
                    self.v = nn.Parameter(torch.FloatTensor(hidden_size).uniform_(-0.1, 0.1))

                def forward(self, hidden, encoder_outputs):
                    energy = self.attn(torch.cat((hidden.expand(encoder_outputs.size(0), -1, -1), encoder_outputs), 2)).tanh()
                    attn_energies = torch.sum(self.v * energy, dim=2)
                    return F.softmax(attn_energies, dim=-2).t().unsqueeze(1)


            class Seq2Seq(nn.Module):
                def __init__(self, vocab_size, hidden_size):
                    super().__init__()
                    self.encoder = EncoderRNN(vocab_size, hidden_size)
                    self.attn = ConcatAttn(hidden_size)

                def forward(self, input_seq, input_lengths, decoder_state):
                    encoder_outputs, _ = self.encoder(input_seq, input_lengths)
                    weights = self.attn(decoder_state, encoder_outputs)
                    return weights.bmm(encoder_outputs.transpose(0, 1))
            """,
        ),
    ]


def _takes_dim_keyword(ctx: RuleContext, site: SoftmaxSite) -> bool:
    """The call can be given `dim=`: the helper (of this file) reads its parameter `dim` as the
    softmax's, and the call does not pass it already."""
    import libcst as cst

    if not (isinstance(site.dim_node, cst.Name) and site.dim_node.value == "dim"):
        return False
    return ctx.analysis.takes_keyword(site.dim_bound_by, ctx.analysis.enclosing(site.call), "dim")


def _message(site: SoftmaxSite, axes, key_axis: Optional[int]) -> str:
    names = site.axis_names()
    axis = next(iter(axes)) if len(axes) == 1 else None
    written = f"dim={site.dim}" if site.dim_given else "no dim"
    kind = "scores" if site.input.scores is not None else "attention logits"
    if names is not None and axis is not None and -len(names) <= axis < 0:
        named = any(not n.startswith("axis ") for n in names)
        name = names[axis]
        singular = {"queries": "query", "keys": "key", "heads": "head", "tokens": "token"}.get(name, name)
        what = f"normalises over {name}" if name.startswith("axis ") else f"normalises over the {singular} axis"
        if not site.dim_given:
            picked = f"{name}" if name.startswith("axis ") else f"the {name} axis"
            what = f"makes PyTorch pick dim={axis + len(names)} implicitly, {picked}"
        where = f"on ({', '.join(names)}) {kind}" if named else f"on {len(names)}-D {kind}"
    else:
        what, where = "does not normalise over the keys", f"on these {kind}"
    target = f"; use dim={key_axis}" if key_axis is not None else ""
    return f"softmax with {written} {where} {what}: attention weights must sum to 1 over the keys{target}"
