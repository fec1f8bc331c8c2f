"""ATN202 unmasked-padding."""

from __future__ import annotations

from typing import Optional

from attnlint.analysis import attention, masks
from attnlint.analysis.flow import FunctionFacts
from attnlint.analysis.values import AttentionCallSite
from attnlint.diagnostics import Applicability
from attnlint.fixers.keyword import set_keyword
from attnlint.rules.base import FixAvailability, Invalid, Rule, RuleContext, Valid


class UnmaskedPadding(Rule):
    """
    ## What it does
    Checks for attention over a padded batch without a padding mask:
    - a `forward(..., attention_mask=None)` (or `key_padding_mask`, `padding_mask`, `mask`, a
      mask of the attended sequence: `ctx_mask`, `enc_mask`, ...) parameter that the function
      never uses, although it computes attention (a softmax of Q·Kᵀ scores, or one whose
      weights are summed against values: additive attention), calls an attention module, or
      defines a closure that does (a decoder's `step`), or calls a submodule computing
      attention that takes no mask at all;
    - a `pad_sequence`d batch (or its embedding or projections) fed to `nn.MultiheadAttention`,
      `nn.Transformer*`, `F.scaled_dot_product_attention` or hand-written attention with no mask
      (right padding with `is_causal=True` is fine); `nn.Transformer` and `nn.TransformerDecoder`
      need a mask for each padded input: a causal `tgt_mask` covers a right-padded target, not a
      padded source (`src_key_padding_mask`) or memory (`memory_key_padding_mask`), and a padded
      source masked in the encoder is the decoder's memory too (`memory_key_padding_mask`). The batch stays
      padded through embeddings, positional terms added to it, normalisations, transposes and
      permutes. Token ids a function embeds and itself tests against the pad id
      (`tokens.ne(self.pad_id)` for pooling) are a padded batch too;
    - a block that accepts a mask and does not pass it on to the attention submodule it calls;
    - sequence lengths accepted (`lengths`, `x_lens`, `src_lengths`) and never used, while
      every attention in the function runs with no mask at all; or read, but never toward the
      attention (only into other lengths, `out_lens = self.frontend.output_lengths(feat_lens)`,
      returned), while nothing in the function builds or applies a mask;
    - a padding mask the function obtains (`src_pad_mask = tokens.eq(pad)`, `encoder_padding_mask =
      encoder_out["encoder_padding_mask"]`, or a `*_mask` made by testing ids against the pad id:
      `hist_mask = batch["hist_items"] > 0`) and never uses, while the attention it calls (an API,
      or a submodule whose forward masks with a mask parameter) is given no mask.

    A mask is told by its name: `attention_mask`, `key_padding_mask`, `padding_mask`, `pad_mask`,
    and those names with a prefix saying what is padded (`encoder_padding_mask`, `src_pad_mask`).

    An unused mask (or lengths) parameter is reported at the attention call that goes without
    it when there is one such call in the function (where the fix writes), else at the parameter. Not reported:
    a mask parameter of an interface several classes implement (attention processors, backends
    of one attention class, drop-in backends whose forwards share one signature of queries,
    keys, values and more), which one implementation may ignore by design (not a subclass that
    adds parameters to a base's forward that uses the mask: it extends it); a mask parameter the
    function's docstring says is not used (kept for compatibility);
    a mask of no stated meaning (`mask`) next to another mask parameter the function does use,
    and a padded batch handed to a submodule only as its queries (`Q`, `query`) while what it
    attends to (`K`, the inducing points of a Set Transformer) has no padding.

    ## Why is this bad?
    Without the mask, every real token attends to the padding. The outputs then depend on how
    much padding the batch happened to have and on whatever values sit in the padded slots:
    results differ between batch sizes, and training learns from garbage.

    ## Fix safety
    The fix is unsafe: masking changes the outputs of every padded sequence. It is offered only
    when the mask already is in the callee's own convention (a `key_padding_mask` for
    `nn.MultiheadAttention`, an `attn_mask` for SDPA, a parameter of the same name for a
    submodule defined in the same file) and there is exactly one attention call to pass it to;
    otherwise the finding has no fix.
    """

    code = "ATN202"
    name = "unmasked-padding"
    summary = "attention over a padded batch without a padding mask"
    fix_availability = FixAvailability.SOMETIMES
    fix_applicability = Applicability.UNSAFE
    # A padded batch is told by a mask, pad_sequence, a test against a pad id (`tokens.ne(pad_id)`),
    # or the lengths of its sequences (`lengths`, `x_lens`).
    triggers = ("mask", "pad", "lengths", "lens")
    # Reported at attention in this file: a softmax (hand-written, or in a module class defined
    # here), or a torch attention API.
    reported_where = ("softmax", "Softmax", "scaled_dot_product_attention", "MultiheadAttention", "Transformer")
    recipe = "unmasked_padding"

    def check(self, ctx: RuleContext) -> None:
        protocols = ctx.analysis.interface_parameters()
        for function in ctx.analysis.functions:
            self._unused_mask_parameters(ctx, function, protocols)
            self._unused_lengths(ctx, function, protocols)
            self._unread_mask_locals(ctx, function)
            self._masks_kept_from_attention(ctx, function)
            for call in function.attention_calls:
                self._padded_batch_without_mask(ctx, call)
            for site in function.softmax_sites:
                self._padded_scores_without_mask(ctx, site)

    def _unused_mask_parameters(self, ctx: RuleContext, function: FunctionFacts, protocols) -> None:
        unused = [
            n
            for n in function.params
            if (masks.is_mask_param(n) or masks.names_attended_mask(n)) and n not in function.used_names
        ]
        # A method that implements a signature shared by several classes here (attention
        # processors, backends) may ignore a parameter by design: the mask is for the others.
        unused = [
            n
            for n in unused
            if (function.name, n) not in protocols or ctx.analysis.drops_what_its_base_uses(function, n)
        ]
        # Kept for compatibility, and said so (Whisper's encoder: "this argument is preserved for
        # compatibility, but it is not used").
        unused = [n for n in unused if not masks.documented_as_unused(function.node, n)]
        # A mask of no stated meaning (`mask`) next to another mask parameter the function does
        # use (`attn_mask` into SDPA): the attention is masked, and what the unused one would
        # mask (kept tokens, a context selection) the code does not say.
        other_used = any(
            (masks.is_mask_param(n) or masks.names_attended_mask(n)) and n in function.used_names for n in function.params
        )
        unused = [n for n in unused if masks.names_padding(n) or not other_used]
        if not unused or function.is_drop_in_layer():
            return
        # The attention may sit in a closure the function defines and calls (`def recurrence(...)`
        # stepping a decoder), or in a submodule that takes no mask at all: the mask accepted
        # here then reaches no attention either.
        scopes = [function] + ctx.analysis.nested_in(function)
        calls = [
            c
            for scope in scopes
            for c in scope.attention_calls
            if self._takes_mask(ctx, c) or self._attends_unmasked(ctx, c)
        ]
        computes_attention = any(scope.computes_attention() for scope in scopes)
        # Or in a helper method or function of this file that computes attention and masks it
        # with a parameter this call leaves out (`self.forward_attention(v, scores)`).
        helpers = [
            c.call
            for c in function.calls
            if (callee := ctx.analysis.callee_facts(c, function)) is not None
            and callee.computes_attention()
            and callee.masks_into_attention()
            # Every mask parameter of the helper left out: passed neither by keyword nor by
            # position (`self.forward_attention(v, scores, mask)` passes it).
            and all(ctx.analysis.takes_keyword(c.call, callee.node, m) for m in callee.masks_into_attention())
        ]
        if not calls and not computes_attention and not helpers:
            return
        for name in unused:
            fix = None
            # One attention call (or one given no mask at all): the finding is that call, where
            # the mask goes missing (and where the fix passes it); otherwise the parameter.
            where = function.param_nodes[name].name
            if not calls and not computes_attention and len(helpers) == 1:
                where = helpers[0]
            unmasked = [c for c in calls if not c.mask_keywords and not any(a.star for a in c.call.args)]
            target = calls[0] if len(calls) == 1 else (unmasked[0] if len(unmasked) == 1 else None)
            if target is not None and not computes_attention:
                if any(c is target for c in function.attention_calls):
                    where = target.call  # in a closure it defines, the parameter stays the place
                keyword = self._keyword_for(ctx, target, name)
                if keyword is not None:
                    fix = set_keyword(target.call, keyword, name, f"Pass `{keyword}={name}` on")
            ctx.report(
                where,
                f"`{name}` is accepted but never used: the attention in `{function.name}` "
                + ("also attends to padding" if masks.names_padding(name) else "ignores the mask its callers pass"),
                fix=fix,
            )

    def _unused_lengths(self, ctx: RuleContext, function: FunctionFacts, protocols) -> None:
        """Sequence lengths accepted and never read, while every attention here runs with no
        mask at all: nothing tells it where the padding starts."""
        unused = [n for n in attention.unused_lengths_parameters(function) if (function.name, n) not in protocols]
        kept = [n for n in attention.lengths_kept_from_attention(function) if (function.name, n) not in protocols]
        if not (unused or kept) or function.is_drop_in_layer():
            return
        calls = function.attention_calls
        if any(c.mask_keywords or any(a.star for a in c.call.args) for c in calls):
            return  # some mask reaches the attention: it may be built from other arguments
        calls = [c for c in calls if self._takes_mask(ctx, c)]
        # Hand-written attention: Q·Kᵀ scores, or any scores whose weights weigh values
        # (attentive pooling `sum(x * softmax(v(tanh(W x))), dim)`, additive attention).
        hand_written = [s for s in function.softmax_sites if s.input.scores is not None or s.weighs_values]
        if any(s.input.fills for s in hand_written) or not (calls or hand_written):
            return
        for name in unused:
            # At the one attention call that goes without it, like an unused mask parameter;
            # at the parameter when there are several, or the attention is written by hand.
            at = calls[0].call if len(calls) == 1 and not hand_written else function.param_nodes[name].name
            ctx.report(
                at,
                f"`{name}` is accepted but never used, and the attention in `{function.name}` gets no "
                "padding mask: it also attends to the padding past each length",
            )
        for call in calls if kept else ():
            # The lengths are read (into other lengths, a return), never toward a mask.
            names = " and ".join(f"`{n}`" for n in kept)
            ctx.report(
                call.call,
                f"{names} {'tells' if len(kept) == 1 else 'tell'} where each sequence ends, but this "
                "attention gets no padding mask: it also attends to the padding past each length",
            )

    def _unread_mask_locals(self, ctx: RuleContext, function: FunctionFacts) -> None:
        """A padding mask bound here and never read, while the attention this function calls
        (an API or a submodule whose forward masks its attention) is given no mask at all."""
        calls = [
            c
            for c in function.attention_calls
            if not c.mask_keywords and not any(a.star for a in c.call.args) and self._takes_mask(ctx, c)
        ]
        # The body's names are walked only where some attention goes without a mask.
        unread = attention.unread_padding_masks(function) if calls else {}
        if not unread:
            return
        for call in calls:
            names = " and ".join(f"`{n}`" for n in unread)
            fix = None
            if len(calls) == 1 and len(unread) == 1:
                (name,) = unread
                keyword = self._keyword_for(ctx, call, name)
                if keyword is not None:
                    fix = set_keyword(call.call, keyword, name, f"Pass `{keyword}={name}` on")
            ctx.report(
                call.call,
                f"{names} {'is' if len(unread) == 1 else 'are'} set here but never used, and this "
                "attention gets no mask: it also attends to the padding",
                fix=fix,
            )

    def _masks_kept_from_attention(self, ctx: RuleContext, function: FunctionFacts) -> None:
        """A padding mask used here only away from the attention (pooling its output, zeroing
        its inputs, a convolution beside it), while that attention gets no mask."""
        if function.is_drop_in_layer():
            return
        for call, held in ctx.analysis.padding_masks_kept_from_attention(function):
            if not self._takes_mask(ctx, call) or attention.padded_inputs_without_mask(call):
                continue  # reported as a padded batch without a mask
            names = " and ".join(f"`{n}`" for n in held)
            ctx.report(
                call.call,
                f"{names} marks the padding of this sequence and is used here, but not for this attention, "
                "which gets no mask: it also attends to the padding",
            )

    def _padded_batch_without_mask(self, ctx: RuleContext, call: AttentionCallSite) -> None:
        # pad_sequence pads on the right: causal attention never sees the padding.
        unmasked = attention.padded_inputs_without_mask(call)
        if not unmasked:
            return
        if any(a.star for a in call.call.args):
            return  # `model(src, tgt, *masks)`: the masks may be in there
        if unmasked == ["memory"] and call.api == "Transformer":
            ctx.report(
                call.call,
                "the padded `src` is masked in the encoder but not as the decoder's memory "
                "(`memory_key_padding_mask`): the target attends to the source's padding",
            )
            return
        if unmasked != ["input"]:
            inputs = " and ".join(f"`{n}`" for n in unmasked if n != "memory")
            keywords = " / ".join(f"`{n}_key_padding_mask`" for n in unmasked)
            ctx.report(
                call.call,
                f"the padded {inputs} goes into nn.{call.api} with no mask for its padding ({keywords}): "
                "real tokens attend to the padding",
            )
            return
        if call.api == "submodule" and not self._takes_mask(ctx, call):
            return
        if call.api == "submodule":
            forward = ctx.analysis.forward_of(call.callee_class)
            if forward is not None and forward.masks_into_attention() <= _bound_by(forward, call):
                return  # `model(x, boxes, valid)`: the mask goes in positionally
            if forward is not None and attention.only_queries_padded(forward, call):
                return  # `mab(X, H)`: padded queries against keys with no padding
            taken = " or ".join(f"`{n}`" for n in sorted(forward.masks_into_attention())) if forward else ""
            ctx.report(
                call.call,
                f"a padded batch goes into `{call.callee_class}` with no padding mask, though it takes {taken}: "
                "real tokens attend to the padding",
            )
            return
        ctx.report(call.call, "a padded batch goes into attention with no padding mask")

    def _padded_scores_without_mask(self, ctx: RuleContext, site) -> None:
        """Hand-written attention whose queries or keys come from a padded batch, with no fill
        (masked_fill, where, additive mask) on the scores before the softmax."""
        scores = site.input.scores
        if scores is None or not scores.padded or site.input.fills:
            return
        if scores.scale is None:
            return  # multiplied by a tensor we cannot read (`scores * adj`): it may be the mask
        ctx.report(site.call, "attention over a padded batch with no padding mask on the scores")

    def _takes_mask(self, ctx: RuleContext, call: AttentionCallSite) -> bool:
        """Does this call consume a mask? Torch's attention APIs do; a submodule defined here
        does when its forward feeds one of its mask parameters into attention."""
        if call.api != "submodule":
            return True
        forward = ctx.analysis.forward_of(call.callee_class)
        return forward is not None and bool(forward.masks_into_attention())

    def _attends_unmasked(self, ctx: RuleContext, call: AttentionCallSite) -> bool:
        """A submodule whose forward computes attention by hand and takes no mask at all."""
        if call.api != "submodule":
            return False
        forward = ctx.analysis.forward_of(call.callee_class)
        if forward is None or not forward.computes_attention():
            return False
        return not any(masks.is_mask_param(n) or masks.names_attended_mask(n) for n in forward.params)

    def _keyword_for(self, ctx: RuleContext, call: AttentionCallSite, name: str) -> Optional[str]:
        if call.api == "submodule":
            forward = ctx.analysis.forward_of(call.callee_class)
            return name if forward is not None and name in forward.masks_into_attention() else None
        return masks.keyword_for(call.api, name)

    VALID = [
        # The tutorial as written: the source's padding mask is also the memory's.
        Valid(
            """
            import torch
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence

            PAD_IDX = 1


            class Seq2Seq(nn.Module):
                def __init__(self, vocab, d):
                    super().__init__()
                    self.emb = nn.Embedding(vocab, d)
                    self.transformer = nn.Transformer(d_model=d, nhead=4)
                    self.out = nn.Linear(d, vocab)

                def forward(self, src, trg, tgt_mask, src_padding_mask, tgt_padding_mask):
                    outs = self.transformer(
                        self.emb(src), self.emb(trg), None, tgt_mask, None, src_padding_mask, tgt_padding_mask, src_padding_mask
                    )
                    return self.out(outs)


            def step(model, pairs):
                src = pad_sequence([s for s, _ in pairs], padding_value=PAD_IDX)
                tgt = pad_sequence([t for _, t in pairs], padding_value=PAD_IDX)[:-1]
                causal = nn.Transformer.generate_square_subsequent_mask(tgt.shape[0])
                return model(src, tgt, causal, (src == PAD_IDX).T, (tgt == PAD_IDX).T)
            """
        ),
        # An HF-style decoder reads its padding mask for the position ids and builds the 4-D mask
        # its layers get from it: the mask reaches the attention through the layers.
        Valid(
            """
            import torch
            import torch.nn as nn


            def build_causal_mask(attention_mask, q_len, dtype):
                causal = torch.triu(torch.full((q_len, q_len), torch.finfo(dtype).min, dtype=dtype), 1)
                pad = (1.0 - attention_mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min
                return causal[None, None] + pad


            class Layer(nn.Module):
                def __init__(self, dim, heads):
                    super().__init__()
                    self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)

                def forward(self, hidden, mask):
                    return self.attn(hidden, hidden, hidden, attn_mask=mask[:, 0].repeat_interleave(2, 0))[0]


            class Decoder(nn.Module):
                def __init__(self, vocab, dim, heads, depth):
                    super().__init__()
                    self.embed_tokens = nn.Embedding(vocab, dim)
                    self.layers = nn.ModuleList([Layer(dim, heads) for _ in range(depth)])

                def forward(self, input_ids, attention_mask):
                    position_ids = (attention_mask.long().cumsum(-1) - 1).clamp(min=0)
                    hidden = self.embed_tokens(input_ids) + position_ids[..., None]
                    mask = build_causal_mask(attention_mask, input_ids.shape[1], hidden.dtype)
                    for layer in self.layers:
                        hidden = layer(hidden, mask)
                    return hidden
            """
        ),
        # The text's padding mask goes to the text encoder; the image encoder next to it attends
        # over patches, which have no padding.
        Valid(
            """
            import torch.nn as nn


            class ImageEncoder(nn.Module):
                def __init__(self, dim):
                    super().__init__()
                    self.attn = nn.MultiheadAttention(dim, 4, batch_first=True)

                def forward(self, patches, key_padding_mask=None):
                    return self.attn(patches, patches, patches, key_padding_mask=key_padding_mask)[0]


            class Matcher(nn.Module):
                def __init__(self, vocab, dim):
                    super().__init__()
                    self.vision = ImageEncoder(dim)
                    self.embed = nn.Embedding(vocab, dim)
                    self.text = nn.LSTM(dim, dim, batch_first=True)

                def forward(self, patches, tokens, text_padding_mask):
                    image = self.vision(patches).mean(1)
                    words, _ = self.text(self.embed(tokens))
                    keep = (~text_padding_mask).unsqueeze(-1).float()
                    text = (words * keep).sum(1) / keep.sum(1)
                    return (image * text).sum(-1)
            """
        ),
        # Two drop-in attention backends with one forward signature (queries, keys, values,
        # attn_mask): the Auto-Correlation one ignores the mask by design, and so may its
        # baseline.
        Valid(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F
            class AutoCorrelation(nn.Module):
                def forward(self, queries, keys, values, attn_mask=None):
                    q_fft = torch.fft.rfft(queries.permute(0, 2, 3, 1).contiguous(), dim=-1)
                    k_fft = torch.fft.rfft(keys.permute(0, 2, 3, 1).contiguous(), dim=-1)
                    corr = torch.fft.irfft(q_fft * torch.conj(k_fft), dim=-1)
                    return (values.permute(0, 2, 3, 1) * corr.softmax(dim=-1)).permute(0, 3, 1, 2)
            class ScaledDotAttention(nn.Module):
                def forward(self, queries, keys, values, attn_mask=None):
                    B, L, H, E = queries.shape
                    q, k, v = queries.permute(0, 2, 1, 3), keys.permute(0, 2, 3, 1), values.permute(0, 2, 1, 3)
                    attn = F.softmax(torch.matmul(q, k) * E ** -0.5, dim=-1)
                    return torch.matmul(attn, v).permute(0, 2, 1, 3)
            """
        ),
        # Set Transformer's ISAB: the inducing points attend to the padded set with its mask; the
        # set then attends to the inducing points' output, which has no padding.
        Valid(
            """
            import math
            import torch
            import torch.nn as nn


            class MAB(nn.Module):
                def __init__(self, dim):
                    super().__init__()
                    self.fc_q, self.fc_k, self.fc_v = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)

                def forward(self, Q, K, key_mask=None):
                    Q, V, K = self.fc_q(Q), self.fc_v(K), self.fc_k(K)
                    logits = Q.bmm(K.transpose(1, 2)) / math.sqrt(Q.size(-1))
                    if key_mask is not None:
                        logits = logits.masked_fill(~key_mask.unsqueeze(1), -1e9)
                    return Q + torch.softmax(logits, 2).bmm(V)


            class ISAB(nn.Module):
                def __init__(self, dim, num_inds):
                    super().__init__()
                    self.I = nn.Parameter(torch.randn(1, num_inds, dim))
                    self.mab0 = MAB(dim)
                    self.mab1 = MAB(dim)

                def forward(self, X, mask=None):
                    H = self.mab0(self.I.repeat(X.size(0), 1, 1), X, key_mask=mask)
                    return self.mab1(X, H)


            def encode(model, sets):
                X = torch.nn.utils.rnn.pad_sequence(sets, batch_first=True)
                mask = torch.nn.utils.rnn.pad_sequence([torch.ones(len(s), dtype=torch.bool) for s in sets], batch_first=True)
                return model(X, mask)
            """
        ),
        # V-JEPA's attention: `attn_mask` reaches SDPA; the `mask` it also accepts (and its
        # block hands on) is of no stated meaning, and the attention is masked.
        Valid(
            """
            import torch.nn as nn
            import torch.nn.functional as F


            class Attention(nn.Module):
                def __init__(self, dim, heads):
                    super().__init__()
                    self.heads = heads
                    self.qkv = nn.Linear(dim, 3 * dim)

                def forward(self, x, mask=None, attn_mask=None):
                    B, N, C = x.shape
                    q, k, v = self.qkv(x).view(B, N, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
                    x = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
                    return x.transpose(1, 2).reshape(B, N, C)


            class Block(nn.Module):
                def __init__(self, dim, heads):
                    super().__init__()
                    self.attn = Attention(dim, heads)

                def forward(self, x, mask=None, attn_mask=None):
                    return x + self.attn(x, mask=mask, attn_mask=attn_mask)
            """
        ),
        # The same pooling, masked from the lengths before the softmax.
        Valid(
            """
            import torch
            import torch.nn as nn


            class FramePool(nn.Module):
                def __init__(self, width):
                    super().__init__()
                    self.score = nn.Sequential(nn.Linear(width, width), nn.Tanh(), nn.Linear(width, 1))

                def forward(self, h, frame_lens):
                    e = self.score(h)
                    keep = torch.arange(h.size(1), device=h.device)[None, :, None] < frame_lens[:, None, None]
                    w = torch.softmax(e.masked_fill(~keep, float("-inf")), dim=1)
                    return (h * w).sum(1)
            """
        ),
        # Softmax weights that scale a learned parameter (mixing coefficients), not the frames:
        # no attention over the sequence, unused lengths or not.
        Valid(
            """
            import torch
            import torch.nn as nn


            class LayerMix(nn.Module):
                def __init__(self, layers, width):
                    super().__init__()
                    self.logits = nn.Parameter(torch.zeros(layers))
                    self.gamma = nn.Parameter(torch.ones(layers))

                def forward(self, stacked, lengths):
                    w = torch.softmax(self.logits, dim=0) * self.gamma
                    return (stacked * w[:, None, None, None]).sum(0)
            """
        ),
        # The same collate factory, and the encoder masks the padding.
        Valid(
            """
            import torch
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            from torch.utils.data import DataLoader


            def batching(encode):
                def collate(rows):
                    ids = [torch.tensor(encode(text)) for text, _ in rows]
                    return pad_sequence(ids, batch_first=True), torch.tensor([y for _, y in rows])
                return collate


            class Sentiment(nn.Module):
                def __init__(self, vocab, width=64):
                    super().__init__()
                    self.embed = nn.Embedding(vocab, width, padding_idx=0)
                    block = nn.TransformerEncoderLayer(width, 4, batch_first=True)
                    self.body = nn.TransformerEncoder(block, 2)
                    self.head = nn.Linear(width, 2)

                def forward(self, ids):
                    h = self.body(self.embed(ids), src_key_padding_mask=ids == 0)
                    return self.head(h[:, 0])


            def fit(model, rows, encode):
                for ids, y in DataLoader(rows, batch_size=32, collate_fn=batching(encode)):
                    nn.functional.cross_entropy(model(ids), y).backward()
            """
        ),
        # The mask goes to the submodule positionally (a name that says nothing of masks).
        Valid(
            """
            import torch
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence


            class Pool(nn.Module):
                def __init__(self, width):
                    super().__init__()
                    self.proj = nn.Linear(width, width)

                def forward(self, x, keep):
                    s = self.proj(x) @ x.transpose(1, 2) / x.size(-1) ** 0.5
                    s = s.masked_fill(~keep[:, None, :], -1e4)
                    return s.softmax(-1) @ x


            class Reader(nn.Module):
                def __init__(self, width):
                    super().__init__()
                    self.pool = Pool(width)

                def forward(self, frames, keep):
                    batch = pad_sequence(frames, batch_first=True)
                    return self.pool(batch, keep)
            """
        ),
        # Hand-written attention over a padded batch, masked.
        Valid(
            """
            import torch
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            PAD = 0
            class Encoder(nn.Module):
                def __init__(self, vocab, d):
                    super().__init__()
                    self.emb = nn.Embedding(vocab, d, padding_idx=PAD)
                    self.q_proj = nn.Linear(d, d)
                    self.k_proj = nn.Linear(d, d)
                def forward(self, token_lists):
                    tokens = pad_sequence(token_lists, batch_first=True, padding_value=PAD)
                    x = self.emb(tokens)
                    q, k = self.q_proj(x), self.k_proj(x)
                    s = q @ k.transpose(-2, -1) * q.size(-1) ** -0.5
                    s = s.masked_fill((tokens == PAD)[:, None, :], -1e9)
                    return torch.softmax(s, dim=-1) @ x
            """
        ),
        # Parameters handed on through locals().
        Valid(
            """
            import torch.nn as nn


            class Block(nn.Module):
                def __init__(self, d, h):
                    super().__init__()
                    self.attn = nn.MultiheadAttention(d, h, batch_first=True)

                def forward(self, x, key_padding_mask=None):
                    kw = {k: v for k, v in locals().items() if k == "key_padding_mask"}
                    return self.attn(x, x, x, **kw)[0]
            """
        ),
        Valid(
            """
            import torch.nn as nn
            class Block(nn.Module):
                def __init__(self, d, h):
                    super().__init__()
                    self.attn = nn.MultiheadAttention(d, h, batch_first=True)
                def forward(self, x, key_padding_mask=None):
                    return self.attn(x, x, x, key_padding_mask=key_padding_mask)[0]
            """
        ),
        # Processors sharing one signature: one of them ignores the mask by design.
        Valid(
            """
            import torch.nn.functional as F
            class MaskedProcessor:
                def __call__(self, attn, q, k, v, attention_mask=None):
                    return F.scaled_dot_product_attention(q, k, v, attn_mask=attention_mask)
            class JointProcessor:
                def __call__(self, attn, q, k, v, attention_mask=None):
                    return F.scaled_dot_product_attention(q, k, v)
            """
        ),
        # A mask parameter in a function that computes no attention.
        Valid(
            """
            def forward(self, x, attention_mask=None):
                return self.mlp(x)
            """
        ),
        # Abstract interface.
        Valid(
            """
            class Base:
                def forward(self, x, attention_mask=None):
                    raise NotImplementedError
            """
        ),
        # Mask used by hand-written attention.
        Valid(
            """
            def attention(q, k, v, mask=None):
                s = q @ k.transpose(-2, -1) * q.size(-1) ** -0.5
                if mask is not None:
                    s = s.masked_fill(mask == 0, -1e9)
                return s.softmax(-1) @ v
            """
        ),
        # pad_sequence with is_causal (right padding).
        Valid(
            """
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence
            def f(seqs):
                x = pad_sequence(seqs, batch_first=True)
                return F.scaled_dot_product_attention(x, x, x, is_causal=True)
            """
        ),
        # pad_sequence with a mask.
        Valid(
            """
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            class Enc(nn.Module):
                def __init__(self, layer):
                    super().__init__()
                    self.encoder = nn.TransformerEncoder(layer, num_layers=2)
                def forward(self, seqs):
                    x = pad_sequence(seqs, batch_first=True)
                    return self.encoder(x, src_key_padding_mask=(x == 0).all(-1))
            """
        ),
        # A submodule whose forward takes no mask.
        Valid(
            """
            import torch.nn as nn
            class Mixer(nn.Module):
                def forward(self, x):
                    return x
            class Block(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.mix = Mixer()
                def forward(self, x, mask=None):
                    return self.mix(x)
            """
        ),
        # HF Llama eager attention: additive `attention_mask`.
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
        # x-transformers style: `mask` used with a finite fill.
        Valid(
            """
            import torch
            from torch import einsum
            def attend(q, k, v, mask=None, scale=None):
                sim = einsum("b h i d, b h j d -> b h i j", q, k) * scale
                if mask is not None:
                    sim = sim.masked_fill(~mask, -torch.finfo(sim.dtype).max)
                attn = sim.softmax(dim=-1)
                return einsum("b h i j, b h j d -> b h i d", attn, v)
            """
        ),
        # A pad_sequence batch with a key_padding_mask from lengths.
        Valid(
            """
            import torch
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            class Enc(nn.Module):
                def __init__(self, d):
                    super().__init__()
                    self.mha = nn.MultiheadAttention(d, 4, batch_first=True)
                def forward(self, seqs, lengths):
                    x = pad_sequence(seqs, batch_first=True)
                    pad = torch.arange(x.size(1), device=x.device)[None, :] >= lengths[:, None]
                    return self.mha(x, x, x, key_padding_mask=pad)[0]
            """
        ),
        # A pad_sequence batch into SDPA with a boolean attn_mask from lengths.
        Valid(
            """
            import torch
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence
            def encode(seqs, lengths):
                x = pad_sequence(seqs, batch_first=True).unsqueeze(1)
                keep = torch.arange(x.size(-2))[None, :] < lengths[:, None]
                return F.scaled_dot_product_attention(x, x, x, attn_mask=keep[:, None, None, :])
            """
        ),
        # Right-padded batch into a causal TransformerEncoder (mask and is_causal).
        Valid(
            """
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            class CausalLM(nn.Module):
                def __init__(self, d):
                    super().__init__()
                    layer = nn.TransformerEncoderLayer(d, 8, batch_first=True)
                    self.decoder = nn.TransformerEncoder(layer, 6)
                def forward(self, seqs):
                    x = pad_sequence(seqs, batch_first=True)
                    causal = nn.Transformer.generate_square_subsequent_mask(x.size(1))
                    return self.decoder(x, mask=causal, is_causal=True)
            """
        ),
        # A layer that passes its mask on (and takes **kwargs).
        Valid(
            """
            import torch.nn as nn
            class Attention(nn.Module):
                def forward(self, x, attention_mask=None):
                    return x
            class Layer(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.attention = Attention()
                def forward(self, hidden_states, attention_mask=None, **kwargs):
                    return self.attention(hidden_states, attention_mask=attention_mask)
            """
        ),
        # Masks passed positionally to nn.MultiheadAttention.
        Valid(
            """
            import torch.nn as nn
            class Block(nn.Module):
                def __init__(self, d, h):
                    super().__init__()
                    self.attn = nn.MultiheadAttention(d, h)
                def forward(self, src, src_mask, src_key_padding_mask):
                    return self.attn(src, src, src, src_key_padding_mask, False, src_mask)[0]
            """
        ),
        # Mask handed to a helper method that does the attention.
        Valid(
            """
            import torch.nn as nn
            import torch.nn.functional as F
            class Attention(nn.Module):
                def _attn(self, q, k, v, attn_mask):
                    return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
                def forward(self, x, attn_mask=None):
                    q, k, v = self.qkv(x).chunk(3, dim=-1)
                    return self._attn(q, k, v, attn_mask)
            """
        ),
        # A GRU over a packed batch: no attention, the unused `mask` is not this rule's.
        Valid(
            """
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence, pack_padded_sequence
            class RNNEncoder(nn.Module):
                def __init__(self, d):
                    super().__init__()
                    self.rnn = nn.GRU(d, d, batch_first=True)
                def forward(self, seqs, lengths, mask=None):
                    x = pad_sequence(seqs, batch_first=True)
                    packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
                    return self.rnn(packed)
            """
        ),
        # ViT attention: no mask parameter and no padding.
        Valid(
            """
            import torch
            import torch.nn as nn
            class ViTAttention(nn.Module):
                def __init__(self, dim, heads):
                    super().__init__()
                    self.heads = heads
                    self.scale = (dim // heads) ** -0.5
                    self.qkv = nn.Linear(dim, dim * 3)
                def forward(self, x):
                    B, N, C = x.shape
                    q, k, v = self.qkv(x).reshape(B, N, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
                    attn = (q @ k.transpose(-2, -1)) * self.scale
                    return (attn.softmax(dim=-1) @ v).transpose(1, 2).reshape(B, N, C)
            """
        ),
        # HF backend subclasses: the flash variant ignores the mask by design.
        Valid(
            """
            import torch.nn as nn
            import torch.nn.functional as F
            class LlamaAttention(nn.Module):
                def forward(self, hidden_states, attention_mask=None):
                    q, k, v = self.q_proj(hidden_states), self.k_proj(hidden_states), self.v_proj(hidden_states)
                    return F.scaled_dot_product_attention(q, k, v, attn_mask=attention_mask)
            class LlamaFlashAttention2(LlamaAttention):
                def forward(self, hidden_states, attention_mask=None):
                    q, k, v = self.q_proj(hidden_states), self.k_proj(hidden_states), self.v_proj(hidden_states)
                    return F.scaled_dot_product_attention(q, k, v, is_causal=True)
            """
        ),
        # A mask parameter that is checked and rejected.
        Valid(
            """
            import torch.nn.functional as F
            def attend(q, k, v, attn_mask=None):
                if attn_mask is not None:
                    raise NotImplementedError("masking is not supported by this kernel")
                return F.scaled_dot_product_attention(q, k, v)
            """
        ),
        # Embedding padding_idx and `tokens == PAD` as the key_padding_mask.
        Valid(
            """
            import torch
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            PAD = 0
            class Encoder(nn.Module):
                def __init__(self, vocab, d):
                    super().__init__()
                    self.embed = nn.Embedding(vocab, d, padding_idx=PAD)
                    layer = nn.TransformerEncoderLayer(d, 8, batch_first=True)
                    self.encoder = nn.TransformerEncoder(layer, 6)
                def forward(self, token_lists):
                    tokens = pad_sequence(token_lists, batch_first=True, padding_value=PAD)
                    return self.encoder(self.embed(tokens), src_key_padding_mask=tokens == PAD)
            """
        ),
        # Decoder layer passing tgt_mask and memory_key_padding_mask.
        Valid(
            """
            import torch
            import torch.nn as nn
            class DecoderLayer(nn.Module):
                def __init__(self, d, h):
                    super().__init__()
                    self.self_attn = nn.MultiheadAttention(d, h, batch_first=True)
                    self.cross_attn = nn.MultiheadAttention(d, h, batch_first=True)
                def forward(self, x, memory, tgt_mask=None, memory_key_padding_mask=None):
                    x = x + self.self_attn(x, x, x, attn_mask=tgt_mask, is_causal=True)[0]
                    return x + self.cross_attn(x, memory, memory, key_padding_mask=memory_key_padding_mask)[0]
            """
        ),
        # key_padding_mask passed positionally for a pad_sequence batch.
        Valid(
            """
            import torch
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            class Enc(nn.Module):
                def __init__(self, d):
                    super().__init__()
                    self.mha = nn.MultiheadAttention(d, 4, batch_first=True)
                def forward(self, seqs):
                    x = pad_sequence(seqs, batch_first=True)
                    pad = (x == 0).all(dim=-1)
                    return self.mha(x, x, x, pad)[0]
            """
        ),
        # A mask parameter asserted to be None.
        Valid(
            """
            import torch.nn.functional as F
            def attend(q, k, v, attn_mask=None):
                assert attn_mask is None, "use is_causal instead"
                return F.scaled_dot_product_attention(q, k, v, is_causal=True)
            """
        ),
        # The same model given the padding mask it needs.
        Valid(
            """
            import torch
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            from torch.utils.data import DataLoader


            def collate_batch(batch):
                labels = torch.tensor([label for label, _ in batch])
                return labels, pad_sequence([ids for _, ids in batch], batch_first=True)


            class Classifier(nn.Module):
                def __init__(self, vocab_size=100, d_model=32):
                    super().__init__()
                    self.embedding = nn.Embedding(vocab_size, d_model)
                    layer = nn.TransformerEncoderLayer(d_model, 4, batch_first=True)
                    self.encoder = nn.TransformerEncoder(layer, num_layers=2)

                def forward(self, text):
                    return self.encoder(self.embedding(text), src_key_padding_mask=text == 0).mean(dim=1)


            def train(model, loader):
                for label, text in loader:
                    model(text)


            if __name__ == "__main__":
                train(Classifier(), DataLoader([], collate_fn=collate_batch))
            """
        ),
        # A padding mask read from the batch and handed on to the layer that masks with it.
        Valid(
            """
            import torch
            import torch.nn as nn
            class CrossAttention(nn.Module):
                def forward(self, x, memory, memory_pad_mask=None):
                    s = x @ memory.transpose(1, 2) * x.size(-1) ** -0.5
                    if memory_pad_mask is not None:
                        s = s.masked_fill(memory_pad_mask[:, None, :], -1e9)
                    return torch.softmax(s, dim=-1) @ memory
            class Decoder(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.cross = CrossAttention()
                def forward(self, x, batch):
                    memory = batch["memory"]
                    memory_pad_mask = batch["memory_pad_mask"]
                    return self.cross(x, memory, memory_pad_mask)
            """
        ),
        # A padding mask bound but unused, and a layer that takes no mask: nothing to give it to.
        Valid(
            """
            import torch.nn as nn
            class Mixer(nn.Module):
                def forward(self, x):
                    return x.mean(1, keepdim=True).expand_as(x)
            class Block(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.mix = Mixer()
                def forward(self, x, tokens):
                    src_pad_mask = tokens.eq(0)
                    return self.mix(x)
            """
        ),
        # A mask name bound to None and an attention given everything by keyword expansion.
        Valid(
            """
            import torch.nn as nn
            class Block(nn.Module):
                def __init__(self, d, h):
                    super().__init__()
                    self.attn = nn.MultiheadAttention(d, h, batch_first=True)
                def forward(self, x, options):
                    key_padding_mask = None
                    return self.attn(x, x, x, need_weights=False)[0]
            """
        ),
        Valid(
            """
            import torch.nn as nn
            class Block(nn.Module):
                def __init__(self, d, h):
                    super().__init__()
                    self.attn = nn.MultiheadAttention(d, h, batch_first=True)
                def forward(self, x, batch):
                    key_padding_mask = batch["key_padding_mask"]
                    return self.attn(x, x, x, **batch["attn_kwargs"])[0]
            """
        ),
        # A left-padded batch given to the model with its mask.
        Valid(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F
            PAD = 0
            class TinyLM(nn.Module):
                def __init__(self, vocab=32, d=16, h=2):
                    super().__init__()
                    self.h = h
                    self.emb = nn.Embedding(vocab, d)
                    self.qkv = nn.Linear(d, 3 * d)
                def forward(self, ids, attention_mask=None):
                    B, T = ids.shape
                    q, k, v = self.qkv(self.emb(ids)).view(B, T, 3, self.h, -1).permute(2, 0, 3, 1, 4)
                    allowed = None
                    if attention_mask is not None:
                        causal = torch.ones(T, T, dtype=torch.bool).tril()
                        allowed = attention_mask.bool()[:, None, None, :] & causal
                    return F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, is_causal=allowed is None)
            def collate(seqs, n):
                rows = []
                for s in seqs:
                    rows.append([PAD] * (n - len(s)) + s)
                return torch.tensor(rows)
            def step(model, seqs):
                ids = collate(seqs, 8)
                return model(ids, attention_mask=ids != PAD)
            if __name__ == "__main__":
                step(TinyLM(), [[3, 4, 5], [6]])
            """
        ),
        # The same model over a batch nobody padded.
        Valid(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F
            PAD = 0
            class TinyLM(nn.Module):
                def __init__(self, vocab=32, d=16, h=2):
                    super().__init__()
                    self.h = h
                    self.emb = nn.Embedding(vocab, d)
                    self.qkv = nn.Linear(d, 3 * d)
                def forward(self, ids, attention_mask=None):
                    B, T = ids.shape
                    q, k, v = self.qkv(self.emb(ids)).view(B, T, 3, self.h, -1).permute(2, 0, 3, 1, 4)
                    allowed = None
                    if attention_mask is not None:
                        causal = torch.ones(T, T, dtype=torch.bool).tril()
                        allowed = attention_mask.bool()[:, None, None, :] & causal
                    return F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, is_causal=allowed is None)
            def collate(seqs, n):
                rows = []
                for s in seqs:
                    rows.append([PAD] * (n - len(s)) + s)
                return torch.tensor(rows)
            def step(model, ids):
                return model(ids)
            if __name__ == "__main__":
                step(TinyLM(), torch.randint(1, 32, (2, 8)))
            """
        ),
        # nn.Transformer given the source's padding mask for the encoder and the memory; tgt has its causal mask.
        Valid(
            """
            import torch
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence

            PAD_ID = 1


            class Translator(nn.Module):
                def __init__(self, vocab, width=256):
                    super().__init__()
                    self.embed = nn.Embedding(vocab, width, padding_idx=PAD_ID)
                    self.core = nn.Transformer(d_model=width, nhead=8, batch_first=True)

                def forward(self, src_tokens, tgt_tokens):
                    causal = self.core.generate_square_subsequent_mask(tgt_tokens.size(1))
                    src_pad = src_tokens == PAD_ID
                    return self.core(
                        self.embed(src_tokens),
                        self.embed(tgt_tokens),
                        tgt_mask=causal,
                        src_key_padding_mask=src_pad,
                        memory_key_padding_mask=src_pad,
                    )


            def translate_batch(model, sources, targets):
                src = pad_sequence(sources, batch_first=True, padding_value=PAD_ID)
                tgt = pad_sequence(targets, batch_first=True, padding_value=PAD_ID)
                return model(src, tgt[:, :-1])


            if __name__ == "__main__":
                translate_batch(Translator(1000), [], [])
            """
        ),
        # Right-padded captions under a causal tgt_mask; the memory (image features) is not padded.
        Valid(
            """
            import torch
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence


            class CaptionDecoder(nn.Module):
                def __init__(self, vocab, dim=128):
                    super().__init__()
                    self.tokens = nn.Embedding(vocab, dim)
                    self.decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(dim, 4, batch_first=True), 2)

                def forward(self, captions, image_features):
                    ids = pad_sequence(captions, batch_first=True)
                    causal = nn.Transformer.generate_square_subsequent_mask(ids.size(1))
                    return self.decoder(self.tokens(ids), image_features, tgt_mask=causal)
            """
        ),
            # The padding mask the module builds goes to the encoder as well as to the pooling.
        Valid(
            """
            import torch.nn as nn


            class ReviewEncoder(nn.Module):
                def __init__(self, vocab, dim=128, pad_id=0):
                    super().__init__()
                    self.pad_id = pad_id
                    self.embed = nn.Embedding(vocab, dim, padding_idx=pad_id)
                    self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(dim, 4, batch_first=True), 2)
                    self.classify = nn.Linear(dim, 2)

                def forward(self, tokens):
                    is_pad = tokens == self.pad_id
                    states = self.encoder(self.embed(tokens), src_key_padding_mask=is_pad)
                    keep = (~is_pad).unsqueeze(-1).float()
                    return self.classify((states * keep).sum(1) / keep.sum(1))
            """
        ),
        # Token ids tested against the pad id for a loss weight; the attention has its (causal) mask.
        Valid(
            """
            import torch.nn as nn


            class TinyLM(nn.Module):
                def __init__(self, vocab, dim=64, pad_id=0):
                    super().__init__()
                    self.pad_id = pad_id
                    self.embed = nn.Embedding(vocab, dim)
                    self.attn = nn.MultiheadAttention(dim, 4, batch_first=True)

                def forward(self, ids, causal):
                    x = self.embed(ids)
                    out, _ = self.attn(x, x, x, attn_mask=causal)
                    weight = (ids != self.pad_id).float()
                    return out, weight
            """
        ),
        # The lengths become the key padding mask.
        Valid(
            """
            import torch
            import torch.nn as nn


            class UtterancePool(nn.Module):
                def __init__(self, width, heads=2):
                    super().__init__()
                    self.probe = nn.Parameter(torch.zeros(1, 1, width))
                    self.attend = nn.MultiheadAttention(width, heads, batch_first=True)

                def forward(self, frames, frame_lens):
                    probe = self.probe.expand(frames.shape[0], 1, -1)
                    pad = torch.arange(frames.shape[1], device=frames.device)[None, :] >= frame_lens[:, None]
                    summary, _ = self.attend(probe, frames, frames, key_padding_mask=pad)
                    return summary[:, 0]
            """
        ),
        # A maximum length is one number for the whole batch, not where each sequence ends.
        Valid(
            """
            import torch.nn.functional as F


            def attend(q, k, v, max_len):
                return F.scaled_dot_product_attention(q, k, v)
            """
        ),
        # Unused lengths, but a mask from another argument reaches the attention.
        Valid(
            """
            import torch.nn.functional as F


            def attend(q, k, v, seq_lens, keep):
                return F.scaled_dot_product_attention(q, k, v, attn_mask=keep[:, None, None, :])
            """
        ),
        # Hand-written attention masked through a fill; the lengths were used upstream.
        Valid(
            """
            import torch


            def attend(query, memory, pad, src_lengths):
                scores = query @ memory.transpose(1, 2) / memory.size(-1) ** 0.5
                scores = scores.masked_fill(pad[:, None, :], float("-inf"))
                return torch.softmax(scores, dim=-1) @ memory
            """
        ),
        # Cumulative offsets (varlen kernels) are not per-sequence lengths.
        Valid(
            """
            import torch.nn.functional as F


            def attend(q, k, v, cu_seqlens):
                return F.scaled_dot_product_attention(q, k, v, is_causal=True)
            """
        ),
        # The same additive attention with its mask applied to the scores.
        Valid(
            """
            import torch
            import torch.nn as nn


            class AdditiveAttention(nn.Module):
                def __init__(self, enc_dim, dec_dim, hidden):
                    super().__init__()
                    self.enc_proj = nn.Linear(enc_dim, hidden)
                    self.dec_proj = nn.Linear(dec_dim, hidden)
                    self.score = nn.Linear(hidden, 1)

                def forward(self, state, memory, memory_mask):
                    e = self.score(torch.tanh(self.enc_proj(memory) + self.dec_proj(state)[:, None])).squeeze(2)
                    e = e.masked_fill(~memory_mask, float("-inf"))
                    alpha = torch.softmax(e, dim=-1)
                    return torch.bmm(alpha.unsqueeze(1), memory).squeeze(1), alpha
            """
        ),
        # A softmax over class logits that nothing sums values with: no attention to mask.
        Valid(
            """
            import torch
            import torch.nn as nn


            class Head(nn.Module):
                def __init__(self, dim, classes):
                    super().__init__()
                    self.out = nn.Linear(dim, classes)

                def forward(self, pooled, mask=None):
                    probs = torch.softmax(self.out(pooled), dim=-1)
                    return probs.unsqueeze(1)
            """
        ),
        # Softmax weights mixing learned prototypes (a parameter), not the padded positions.
        Valid(
            """
            import torch
            import torch.nn as nn


            class Codebook(nn.Module):
                def __init__(self, dim, size):
                    super().__init__()
                    self.logits = nn.Linear(dim, size)
                    self.codes = nn.Parameter(torch.randn(size, dim))

                def forward(self, x, mask=None):
                    w = torch.softmax(self.logits(x), dim=-1)
                    return w.unsqueeze(-2) @ self.codes
            """
        ),
        # The root module builds the key padding mask from the ids itself.
        Valid(
            """
            import torch
            import torch.nn as nn


            def pad_batch(docs):
                width = max(len(d) for d in docs)
                ids = torch.zeros(len(docs), width, dtype=torch.long)
                for row, d in enumerate(docs):
                    ids[row, : len(d)] = torch.tensor(d)
                return ids


            class TextEncoder(nn.Module):
                def __init__(self, vocab, dim=128):
                    super().__init__()
                    self.embed = nn.Embedding(vocab, dim)
                    self.mha = nn.MultiheadAttention(dim, 4, batch_first=True)

                def forward(self, ids):
                    h = self.embed(ids)
                    out, _ = self.mha(h, h, h, key_padding_mask=ids.eq(0))
                    return out.mean(1)


            def embed_all(model, docs):
                return [model(pad_batch(docs[i : i + 16])) for i in range(0, len(docs), 16)]
            """
        ),
        # Two root modules: which one `model` is, the module does not show.
        Valid(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence


            class Plain(nn.Module):
                def __init__(self, dim):
                    super().__init__()
                    self.embed = nn.Embedding(100, dim)

                def forward(self, ids):
                    h = self.embed(ids)
                    return F.scaled_dot_product_attention(h, h, h)


            class Masked(nn.Module):
                def __init__(self, dim):
                    super().__init__()
                    self.embed = nn.Embedding(100, dim)

                def forward(self, ids):
                    h = self.embed(ids)
                    return F.scaled_dot_product_attention(h, h, h, attn_mask=ids.ne(0)[:, None, :])


            def run(model, seqs):
                return model(pad_sequence(seqs, batch_first=True))
            """
        ),
        # The closure hands the source mask on to an attention that applies it.
        Valid(
            """
            import torch
            import torch.nn as nn


            class DotAttention(nn.Module):
                def __init__(self, dim):
                    super().__init__()
                    self.proj = nn.Linear(dim, dim, bias=False)

                def forward(self, h, memory, enc_mask):
                    e = torch.bmm(memory, self.proj(h).unsqueeze(2)).squeeze(2)
                    e = e.masked_fill(~enc_mask, float("-inf"))
                    a = torch.softmax(e, dim=1)
                    return torch.bmm(a.view(a.size(0), 1, a.size(1)), memory).squeeze(1)


            class StepDecoder(nn.Module):
                def __init__(self, dim):
                    super().__init__()
                    self.cell = nn.GRUCell(dim, dim)
                    self.attend = DotAttention(dim)

                def forward(self, inputs, h, memory, enc_mask=None):
                    def step(x, h):
                        h = self.cell(x, h)
                        return h + self.attend(h, memory, enc_mask)

                    outs = []
                    for t in range(inputs.size(1)):
                        h = step(inputs[:, t], h)
                        outs.append(h)
                    return torch.stack(outs, 1)
            """
        ),
        # A `<what>_mask` whose words do not say an attended sequence (a loss mask) is not a padding
        # mask for the attention.
        Valid(
            """
            import torch
            import torch.nn as nn


            class Pool(nn.Module):
                def __init__(self, dim):
                    super().__init__()
                    self.score = nn.Linear(dim, 1)

                def forward(self, x, loss_mask=None):
                    w = torch.softmax(self.score(x).squeeze(-1), dim=1)
                    return torch.bmm(w.unsqueeze(1), x).squeeze(1)
            """
        ),
        # The same encoder given the mask made from the shortened lengths.
        Valid(
            """
            import torch
            from torch import nn
            class CTCEncoder(nn.Module):
                def __init__(self, n_mels=80, d_model=256):
                    super().__init__()
                    self.conv = nn.Conv1d(n_mels, d_model, 5, stride=2, padding=2)
                    layer = nn.TransformerEncoderLayer(d_model, 4, batch_first=True)
                    self.encoder = nn.TransformerEncoder(layer, 6)
                def forward(self, feats, feat_lens):
                    x = self.conv(feats.transpose(1, 2)).transpose(1, 2)
                    out_lens = torch.div(feat_lens - 1, 2, rounding_mode="floor") + 1
                    pad = torch.arange(x.size(1))[None, :] >= out_lens[:, None]
                    x = self.encoder(x, src_key_padding_mask=pad)
                    return x, out_lens
            """
        ),
    ]
    INVALID = [
        # A subclass adds relative positions to its base's attention and drops the mask its
        # base hands to the attention helper.
        Invalid(
            """
            import math
            import torch
            import torch.nn as nn


            class MultiHeadedAttention(nn.Module):
                def __init__(self, n_head, n_feat):
                    super().__init__()
                    self.h, self.d_k = n_head, n_feat // n_head
                    self.linear_q = nn.Linear(n_feat, n_feat)
                    self.linear_k = nn.Linear(n_feat, n_feat)
                    self.linear_v = nn.Linear(n_feat, n_feat)

                def forward_qkv(self, query, key, value):
                    b = query.size(0)
                    q = self.linear_q(query).view(b, -1, self.h, self.d_k).transpose(1, 2)
                    k = self.linear_k(key).view(b, -1, self.h, self.d_k).transpose(1, 2)
                    v = self.linear_v(value).view(b, -1, self.h, self.d_k).transpose(1, 2)
                    return q, k, v

                def forward_attention(self, value, scores, mask=None):
                    if mask is not None:
                        scores = scores.masked_fill(mask, torch.finfo(scores.dtype).min)
                    return torch.matmul(torch.softmax(scores, dim=-1), value)

                def forward(self, query, key, value, mask=None):
                    q, k, v = self.forward_qkv(query, key, value)
                    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.d_k)
                    return self.forward_attention(v, scores, mask)


            class RelPositionMultiHeadedAttention(MultiHeadedAttention):
                def __init__(self, n_head, n_feat):
                    super().__init__(n_head, n_feat)
                    self.linear_pos = nn.Linear(n_feat, n_feat, bias=False)

                def forward(self, query, key, value, pos_emb, mask=None):
                    q, k, v = self.forward_qkv(query, key, value)
                    p = self.linear_pos(pos_emb).view(pos_emb.size(0), -1, self.h, self.d_k).transpose(1, 2)
                    scores = (torch.matmul(q, k.transpose(-2, -1)) + torch.matmul(q, p.transpose(-2, -1))) / math.sqrt(self.d_k)
                    return self.forward_attention(v, scores)
            """,
            line=41,
        ),
        # The PyTorch translation tutorial's model, with the last positional mask left out: the
        # source's padding is masked in the encoder, not in the decoder's cross-attention.
        Invalid(
            """
            import torch
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence

            PAD_IDX = 1


            class Seq2Seq(nn.Module):
                def __init__(self, vocab, d):
                    super().__init__()
                    self.emb = nn.Embedding(vocab, d)
                    self.transformer = nn.Transformer(d_model=d, nhead=4)
                    self.out = nn.Linear(d, vocab)

                def forward(self, src, trg, tgt_mask, src_padding_mask, tgt_padding_mask):
                    outs = self.transformer(
                        self.emb(src), self.emb(trg), None, tgt_mask, None, src_padding_mask, tgt_padding_mask
                    )
                    return self.out(outs)


            def step(model, pairs):
                src = pad_sequence([s for s, _ in pairs], padding_value=PAD_IDX)
                tgt = pad_sequence([t for _, t in pairs], padding_value=PAD_IDX)[:-1]
                causal = nn.Transformer.generate_square_subsequent_mask(tgt.shape[0])
                return model(src, tgt, causal, (src == PAD_IDX).T, (tgt == PAD_IDX).T)
            """,
            line=16,
        ),
        # A Conformer block hands its padding mask to the convolution module only: the
        # self-attention module, which takes a key padding mask, attends to the padded frames.
        Invalid(
            """
            import torch.nn as nn


            class ConvModule(nn.Module):
                def __init__(self, d):
                    super().__init__()
                    self.depthwise = nn.Conv1d(d, d, 31, padding=15, groups=d)

                def forward(self, x, pad_mask=None):
                    if pad_mask is not None:
                        x = x.masked_fill(pad_mask.unsqueeze(-1), 0.0)
                    return self.depthwise(x.transpose(1, 2)).transpose(1, 2)


            class MHSAModule(nn.Module):
                def __init__(self, d, heads):
                    super().__init__()
                    self.attn = nn.MultiheadAttention(d, heads, batch_first=True)

                def forward(self, x, key_padding_mask=None):
                    return self.attn(x, x, x, key_padding_mask=key_padding_mask, need_weights=False)[0]


            class ConformerBlock(nn.Module):
                def __init__(self, d, heads):
                    super().__init__()
                    self.mhsa = MHSAModule(d, heads)
                    self.conv = ConvModule(d)

                def forward(self, x, pad_mask):
                    x = x + self.mhsa(x)
                    x = x + self.conv(x, pad_mask)
                    return x
            """,
            line=31,
        ),
        # A text classifier pools with its attention mask, but its encoder runs without one.
        Invalid(
            """
            import torch.nn as nn


            class Classifier(nn.Module):
                def __init__(self, vocab, d, classes):
                    super().__init__()
                    self.embed = nn.Embedding(vocab, d)
                    layer = nn.TransformerEncoderLayer(d, 4, batch_first=True)
                    self.encoder = nn.TransformerEncoder(layer, 2)
                    self.head = nn.Linear(d, classes)

                @staticmethod
                def masked_mean(hidden, attention_mask):
                    m = attention_mask.unsqueeze(-1).to(hidden.dtype)
                    return (hidden * m).sum(1) / m.sum(1).clamp(min=1.0)

                def forward(self, input_ids, attention_mask):
                    x = self.encoder(self.embed(input_ids))
                    return self.head(self.masked_mean(x, attention_mask))
            """,
            line=18,
        ),
        # BERT-style layers: the attention block hands its mask on positionally to the
        # self-attention that fills with it; the layer above accepts the mask and drops it.
        Invalid(
            """
            import math
            import torch
            import torch.nn as nn
            class SelfAttention(nn.Module):
                def __init__(self, hidden):
                    super().__init__()
                    self.query, self.key, self.value = nn.Linear(hidden, hidden), nn.Linear(hidden, hidden), nn.Linear(hidden, hidden)
                def forward(self, hidden_states, attention_mask=None):
                    q, k, v = self.query(hidden_states), self.key(hidden_states), self.value(hidden_states)
                    scores = q @ k.transpose(-1, -2) / math.sqrt(q.size(-1))
                    if attention_mask is not None:
                        scores = scores + attention_mask
                    return torch.softmax(scores, dim=-1) @ v
            class AttentionBlock(nn.Module):
                def __init__(self, hidden):
                    super().__init__()
                    self.self = SelfAttention(hidden)
                def forward(self, hidden_states, attention_mask=None):
                    return self.self(hidden_states, attention_mask)
            class Layer(nn.Module):
                def __init__(self, hidden):
                    super().__init__()
                    self.attention = AttentionBlock(hidden)
                def forward(self, hidden_states, attention_mask=None):
                    return self.attention(hidden_states)
            """,
            line=25,
            fixed="""
            import math
            import torch
            import torch.nn as nn
            class SelfAttention(nn.Module):
                def __init__(self, hidden):
                    super().__init__()
                    self.query, self.key, self.value = nn.Linear(hidden, hidden), nn.Linear(hidden, hidden), nn.Linear(hidden, hidden)
                def forward(self, hidden_states, attention_mask=None):
                    q, k, v = self.query(hidden_states), self.key(hidden_states), self.value(hidden_states)
                    scores = q @ k.transpose(-1, -2) / math.sqrt(q.size(-1))
                    if attention_mask is not None:
                        scores = scores + attention_mask
                    return torch.softmax(scores, dim=-1) @ v
            class AttentionBlock(nn.Module):
                def __init__(self, hidden):
                    super().__init__()
                    self.self = SelfAttention(hidden)
                def forward(self, hidden_states, attention_mask=None):
                    return self.self(hidden_states, attention_mask)
            class Layer(nn.Module):
                def __init__(self, hidden):
                    super().__init__()
                    self.attention = AttentionBlock(hidden)
                def forward(self, hidden_states, attention_mask=None):
                    return self.attention(hidden_states, attention_mask=attention_mask)
            """,
        ),
        # The self-attention is masked; the cross-attention, the one call given no mask, is where
        # the memory's padding mask goes missing.
        Invalid(
            """
            import torch.nn as nn


            class FusionDecoderLayer(nn.Module):
                def __init__(self, d_model, nhead):
                    super().__init__()
                    self.self_attn = nn.MultiheadAttention(d_model, nhead, batch_first=True)
                    self.cross_attn = nn.MultiheadAttention(d_model, nhead, batch_first=True)

                def forward(self, x, memory, causal_mask, text_pad_mask, memory_pad_mask=None):
                    h, _ = self.self_attn(x, x, x, attn_mask=causal_mask, key_padding_mask=text_pad_mask)
                    x = x + h
                    h, _ = self.cross_attn(query=x, key=memory, value=memory, need_weights=False)
                    return x + h
            """,
            line=13,
        ),
        # Attentive pooling over frames: the weights weigh the frames (`(h * w).sum(1)`), the
        # lengths are accepted and never used, so padded frames share the softmax.
        Invalid(
            """
            import torch
            import torch.nn as nn


            class FramePool(nn.Module):
                def __init__(self, width):
                    super().__init__()
                    self.score = nn.Sequential(nn.Linear(width, width), nn.Tanh(), nn.Linear(width, 1))

                def forward(self, h, frame_lens):
                    w = torch.softmax(self.score(h), dim=1)
                    return (h * w).sum(1)
            """,
        ),
        # The batches come from the closure a collate factory returns (padded with 0), reach the
        # model handed in, and its encoder gets no src_key_padding_mask: the lengths only pool.
        Invalid(
            """
            import torch
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            from torch.utils.data import DataLoader


            def batching(encode):
                def collate(rows):
                    ids = [torch.tensor(encode(text)) for text, _ in rows]
                    sizes = torch.tensor([len(i) for i in ids])
                    return pad_sequence(ids, batch_first=True), sizes, torch.tensor([y for _, y in rows])
                return collate


            class Sentiment(nn.Module):
                def __init__(self, vocab, width=64):
                    super().__init__()
                    self.embed = nn.Embedding(vocab, width, padding_idx=0)
                    block = nn.TransformerEncoderLayer(width, 4, batch_first=True)
                    self.body = nn.TransformerEncoder(block, 2)
                    self.head = nn.Linear(width, 2)

                def forward(self, ids, sizes):
                    h = self.body(self.embed(ids))
                    return self.head(h.sum(1) / sizes[:, None])


            def fit(model, rows, encode):
                for ids, sizes, y in DataLoader(rows, batch_size=32, collate_fn=batching(encode)):
                    nn.functional.cross_entropy(model(ids, sizes), y).backward()
            """,
        ),
        # Hand-written attention over an embedded pad_sequence batch, no mask.
        Invalid(
            """
            import torch
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            class Encoder(nn.Module):
                def __init__(self, vocab, d):
                    super().__init__()
                    self.emb = nn.Embedding(vocab, d)
                    self.q_proj = nn.Linear(d, d)
                    self.k_proj = nn.Linear(d, d)
                def forward(self, token_lists):
                    x = self.emb(pad_sequence(token_lists, batch_first=True))
                    q, k = self.q_proj(x), self.k_proj(x)
                    w = torch.softmax(q @ k.transpose(-2, -1) * q.size(-1) ** -0.5, dim=-1)
                    return w @ x
            """,
        ),
        # Embedded pad_sequence batch into nn.MultiheadAttention with no mask.
        Invalid(
            """
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence


            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.emb = nn.Embedding(100, 64)
                    self.mha = nn.MultiheadAttention(64, 4, batch_first=True)

                def forward(self, seqs):
                    x = self.emb(pad_sequence(seqs, batch_first=True))
                    return self.mha(x, x, x)[0]
            """,
        ),
        Invalid(
            """
            import torch.nn as nn
            class Block(nn.Module):
                def __init__(self, d, h):
                    super().__init__()
                    self.attn = nn.MultiheadAttention(d, h, batch_first=True)
                def forward(self, x, key_padding_mask=None):
                    out, _ = self.attn(x, x, x)
                    return out
            """,
            fixed="""
            import torch.nn as nn
            class Block(nn.Module):
                def __init__(self, d, h):
                    super().__init__()
                    self.attn = nn.MultiheadAttention(d, h, batch_first=True)
                def forward(self, x, key_padding_mask=None):
                    out, _ = self.attn(x, x, x, key_padding_mask=key_padding_mask)
                    return out
            """,
            line=7,
            column=17,
        ),
        # Hand-written attention that ignores its attention_mask.
        Invalid(
            """
            import torch
            def forward(self, hidden_states, attention_mask=None):
                q = self.query(hidden_states)
                k = self.key(hidden_states)
                v = self.value(hidden_states)
                scores = torch.matmul(q, k.transpose(-1, -2)) / self.head_dim ** 0.5
                return torch.softmax(scores, dim=-1) @ v
            """,
        ),
        # A block that does not pass its mask on to its attention submodule.
        Invalid(
            """
            import torch.nn as nn
            class Attention(nn.Module):
                def forward(self, x, mask=None):
                    s = self.q(x) @ self.k(x).transpose(-2, -1) * self.scale
                    if mask is not None:
                        s = s.masked_fill(mask == 0, -1e9)
                    return s.softmax(-1) @ self.v(x)
            class Block(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.attn = Attention()
                def forward(self, x, mask=None):
                    return x + self.attn(self.norm(x))
            """,
            fixed="""
            import torch.nn as nn
            class Attention(nn.Module):
                def forward(self, x, mask=None):
                    s = self.q(x) @ self.k(x).transpose(-2, -1) * self.scale
                    if mask is not None:
                        s = s.masked_fill(mask == 0, -1e9)
                    return s.softmax(-1) @ self.v(x)
            class Block(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.attn = Attention()
                def forward(self, x, mask=None):
                    return x + self.attn(self.norm(x), mask=mask)
            """,
        ),
        # SDPA ignoring attn_mask.
        Invalid(
            """
            import torch.nn.functional as F
            def attend(q, k, v, attn_mask=None):
                return F.scaled_dot_product_attention(q, k, v)
            """,
            fixed="""
            import torch.nn.functional as F
            def attend(q, k, v, attn_mask=None):
                return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
            """,
            page=True,
        ),
        # A pad_sequence batch straight into nn.MultiheadAttention.
        Invalid(
            """
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            class Enc(nn.Module):
                def __init__(self, d):
                    super().__init__()
                    self.mha = nn.MultiheadAttention(d, 4, batch_first=True)
                def forward(self, seqs):
                    x = pad_sequence(seqs, batch_first=True)
                    return self.mha(x, x, x)[0]
            """,
        ),
        # ... and into nn.TransformerEncoder.
        Invalid(
            """
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            class Enc(nn.Module):
                def __init__(self, layer):
                    super().__init__()
                    self.encoder = nn.TransformerEncoder(layer, num_layers=2)
                def forward(self, seqs):
                    return self.encoder(pad_sequence(seqs, batch_first=True))
            """,
        ),
        # HF-style self-attention with einsum that ignores `attention_mask`: no fix (it computes attention itself).
        Invalid(
            """
            import math
            import torch
            import torch.nn as nn
            class SelfAttention(nn.Module):
                def __init__(self, hidden, heads):
                    super().__init__()
                    self.heads = heads
                    self.head_dim = hidden // heads
                    self.qkv = nn.Linear(hidden, 3 * hidden)
                def forward(self, hidden_states, attention_mask=None):
                    B, T, C = hidden_states.shape
                    q, k, v = self.qkv(hidden_states).view(B, T, 3, self.heads, self.head_dim).unbind(2)
                    scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(self.head_dim)
                    probs = scores.softmax(dim=-1)
                    return torch.einsum("bhqk,bkhd->bqhd", probs, v).reshape(B, T, C)
            """,
        ),
        # `key_padding_mask` has no SDPA keyword to go to: reported without a fix.
        Invalid(
            """
            import torch.nn.functional as F
            def attend(q, k, v, key_padding_mask=None, dropout_p=0.0):
                return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p)
            """,
        ),
        # `padding_mask` goes to nn.MultiheadAttention as its key_padding_mask.
        Invalid(
            """
            import torch.nn as nn
            class EncoderBlock(nn.Module):
                def __init__(self, d_model, n_heads):
                    super().__init__()
                    self.norm = nn.LayerNorm(d_model)
                    self.self_attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
                def forward(self, x, padding_mask=None):
                    h = self.norm(x)
                    h, _ = self.self_attn(h, h, h, need_weights=False)
                    return x + h
            """,
        ),
        # A TransformerEncoder wrapper that drops `src_key_padding_mask`.
        Invalid(
            """
            import torch.nn as nn
            class TextEncoder(nn.Module):
                def __init__(self, d_model, n_heads, n_layers):
                    super().__init__()
                    layer = nn.TransformerEncoderLayer(d_model, n_heads, batch_first=True)
                    self.encoder = nn.TransformerEncoder(layer, n_layers)
                def forward(self, x, src_key_padding_mask=None):
                    return self.encoder(x)
            """,
            fixed="""
            import torch.nn as nn
            class TextEncoder(nn.Module):
                def __init__(self, d_model, n_heads, n_layers):
                    super().__init__()
                    layer = nn.TransformerEncoderLayer(d_model, n_heads, batch_first=True)
                    self.encoder = nn.TransformerEncoder(layer, n_layers)
                def forward(self, x, src_key_padding_mask=None):
                    return self.encoder(x, src_key_padding_mask=src_key_padding_mask)
            """,
        ),
        # timm-style Attention with a fused and an eager path, neither using `attn_mask`.
        Invalid(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F
            class Attention(nn.Module):
                def __init__(self, dim, num_heads=8, fused_attn=True):
                    super().__init__()
                    self.num_heads = num_heads
                    self.head_dim = dim // num_heads
                    self.scale = self.head_dim ** -0.5
                    self.qkv = nn.Linear(dim, dim * 3)
                    self.proj = nn.Linear(dim, dim)
                    self.fused_attn = fused_attn
                def forward(self, x, attn_mask=None):
                    B, N, C = x.shape
                    qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
                    q, k, v = qkv.unbind(0)
                    if self.fused_attn:
                        x = F.scaled_dot_product_attention(q, k, v)
                    else:
                        q = q * self.scale
                        attn = q @ k.transpose(-2, -1)
                        attn = attn.softmax(dim=-1)
                        x = attn @ v
                    return self.proj(x.transpose(1, 2).reshape(B, N, C))
            """,
        ),
        # HF-style layer that does not pass `attention_mask` on to its attention submodule.
        Invalid(
            """
            import torch.nn as nn
            import torch.nn.functional as F
            class Attention(nn.Module):
                def forward(self, x, attention_mask=None):
                    return F.scaled_dot_product_attention(x, x, x, attn_mask=attention_mask)
            class Layer(nn.Module):
                def __init__(self, dim):
                    super().__init__()
                    self.attention = Attention()
                    self.mlp = nn.Linear(dim, dim)
                def forward(self, hidden_states, attention_mask=None):
                    hidden_states = hidden_states + self.attention(hidden_states)
                    return hidden_states + self.mlp(hidden_states)
            """,
            fixed="""
            import torch.nn as nn
            import torch.nn.functional as F
            class Attention(nn.Module):
                def forward(self, x, attention_mask=None):
                    return F.scaled_dot_product_attention(x, x, x, attn_mask=attention_mask)
            class Layer(nn.Module):
                def __init__(self, dim):
                    super().__init__()
                    self.attention = Attention()
                    self.mlp = nn.Linear(dim, dim)
                def forward(self, hidden_states, attention_mask=None):
                    hidden_states = hidden_states + self.attention(hidden_states, attention_mask=attention_mask)
                    return hidden_states + self.mlp(hidden_states)
            """,
        ),
        # `from torch import nn`: a TransformerEncoderLayer wrapper.
        Invalid(
            """
            from torch import nn
            class Layer(nn.Module):
                def __init__(self, d_model, nhead):
                    super().__init__()
                    self.layer = nn.TransformerEncoderLayer(d_model, nhead, batch_first=True)
                def forward(self, src, src_key_padding_mask=None):
                    return self.layer(src)
            """,
            fixed="""
            from torch import nn
            class Layer(nn.Module):
                def __init__(self, d_model, nhead):
                    super().__init__()
                    self.layer = nn.TransformerEncoderLayer(d_model, nhead, batch_first=True)
                def forward(self, src, src_key_padding_mask=None):
                    return self.layer(src, src_key_padding_mask=src_key_padding_mask)
            """,
        ),
        # Top-level script: a pad_sequence batch into nn.MultiheadAttention.
        Invalid(
            """
            import torch
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            seqs = [torch.randn(5, 64), torch.randn(3, 64)]
            batch = pad_sequence(seqs, batch_first=True)
            mha = nn.MultiheadAttention(64, 4, batch_first=True)
            out, weights = mha(batch, batch, batch)
            """,
        ),
        # Cross-attention that drops `memory_key_padding_mask`: no MHA keyword of that name, no fix.
        Invalid(
            """
            import torch.nn as nn
            class CrossAttentionBlock(nn.Module):
                def __init__(self, d_model, n_heads):
                    super().__init__()
                    self.cross_attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
                def forward(self, x, memory, memory_key_padding_mask=None):
                    out, _ = self.cross_attn(x, memory, memory)
                    return x + out
            """,
        ),
        # The Annotated Transformer's attention() with `mask` unused, bmm, `from torch.nn import functional as F`.
        Invalid(
            """
            import torch
            from torch.nn import functional as F
            def dot_product_attention(query, key, value, mask=None):
                d_k = query.size(-1)
                scores = torch.bmm(query, key.transpose(1, 2)) / d_k ** 0.5
                p_attn = F.softmax(scores, dim=-1)
                return torch.bmm(p_attn, value), p_attn
            """,
        ),
        # A pad_sequence batch into SDPA with an explicit is_causal=False.
        Invalid(
            """
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence
            def encode(seqs):
                x = pad_sequence(seqs, batch_first=True).unsqueeze(1)
                return F.scaled_dot_product_attention(x, x, x, is_causal=False)
            """,
        ),
        # Passes attn_mask but not key_padding_mask.
        Invalid(
            """
            import torch.nn as nn
            class Block(nn.Module):
                def __init__(self, d, h):
                    super().__init__()
                    self.attn = nn.MultiheadAttention(d, h, batch_first=True)
                    self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
                def forward(self, x, attn_mask=None, key_padding_mask=None):
                    x = x + self.attn(x, x, x, attn_mask=attn_mask)[0]
                    return x + self.ff(x)
            """,
            fixed="""
            import torch.nn as nn
            class Block(nn.Module):
                def __init__(self, d, h):
                    super().__init__()
                    self.attn = nn.MultiheadAttention(d, h, batch_first=True)
                    self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
                def forward(self, x, attn_mask=None, key_padding_mask=None):
                    x = x + self.attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask)[0]
                    return x + self.ff(x)
            """,
        ),
        # A pad_sequence set of elements into nn.TransformerEncoder with no mask.
        Invalid(
            """
            import torch
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            class SetEncoder(nn.Module):
                def __init__(self, d):
                    super().__init__()
                    layer = nn.TransformerEncoderLayer(d, 8, batch_first=True)
                    self.encoder = nn.TransformerEncoder(layer, 4)
                def forward(self, elements):
                    x = pad_sequence(elements, batch_first=True)
                    x = self.encoder(x)
                    return x.mean(dim=1)
            """,
        ),
        # Padded source and target into nn.Transformer with no masks.
        Invalid(
            """
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            class Translator(nn.Module):
                def __init__(self, d):
                    super().__init__()
                    self.transformer = nn.Transformer(d, 8, batch_first=True)
                def forward(self, src_seqs, tgt_seqs):
                    src = pad_sequence(src_seqs, batch_first=True)
                    tgt = pad_sequence(tgt_seqs, batch_first=True)
                    return self.transformer(src, tgt)
            """,
        ),
        # A collate_fn pads the batch; the model's encoder gets it with no padding mask.
        Invalid(
            """
            import torch
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            from torch.utils.data import DataLoader


            def collate_batch(batch):
                labels = torch.tensor([label for label, _ in batch])
                return labels, pad_sequence([ids for _, ids in batch], batch_first=True)


            class Classifier(nn.Module):
                def __init__(self, vocab_size=100, d_model=32):
                    super().__init__()
                    self.embedding = nn.Embedding(vocab_size, d_model)
                    layer = nn.TransformerEncoderLayer(d_model, 4, batch_first=True)
                    self.encoder = nn.TransformerEncoder(layer, num_layers=2)

                def forward(self, text):
                    return self.encoder(self.embedding(text)).mean(dim=1)


            def train(model, loader):
                for label, text in loader:
                    model(text)


            if __name__ == "__main__":
                train(Classifier(), DataLoader([], collate_fn=collate_batch))
            """,
        ),
            # The decoder reads the source padding mask and forgets to give it to its attention layers.
        Invalid(
            """
            import torch
            import torch.nn as nn
            class SourceAttention(nn.Module):
                def forward(self, x, memory, src_padding_mask=None):
                    s = torch.bmm(x, memory.transpose(1, 2)) * x.size(-1) ** -0.5
                    if src_padding_mask is not None:
                        s = s.masked_fill(src_padding_mask.unsqueeze(1), float("-inf"))
                    return torch.bmm(torch.softmax(s, dim=-1), memory)
            class Decoder(nn.Module):
                def __init__(self, layers):
                    super().__init__()
                    self.layers = nn.ModuleList([SourceAttention() for _ in range(layers)])
                def forward(self, x, encoder_state):
                    memory, src_padding_mask = encoder_state
                    for layer in self.layers:
                        x = x + layer(x, memory)
                    return x
            """,
            fixed="""
            import torch
            import torch.nn as nn
            class SourceAttention(nn.Module):
                def forward(self, x, memory, src_padding_mask=None):
                    s = torch.bmm(x, memory.transpose(1, 2)) * x.size(-1) ** -0.5
                    if src_padding_mask is not None:
                        s = s.masked_fill(src_padding_mask.unsqueeze(1), float("-inf"))
                    return torch.bmm(torch.softmax(s, dim=-1), memory)
            class Decoder(nn.Module):
                def __init__(self, layers):
                    super().__init__()
                    self.layers = nn.ModuleList([SourceAttention() for _ in range(layers)])
                def forward(self, x, encoder_state):
                    memory, src_padding_mask = encoder_state
                    for layer in self.layers:
                        x = x + layer(x, memory, src_padding_mask=src_padding_mask)
                    return x
            """,
            line=16,
        ),
        # A padding mask built from the tokens, then SDPA called without it.
        Invalid(
            """
            import torch.nn.functional as F
            PAD = 0
            def encode(tokens, q, k, v):
                enc_pad_mask = tokens == PAD
                return F.scaled_dot_product_attention(q, k, v)
            """,
            line=5,
        ),
        # A mask made by testing item ids against the pad id (0), then never passed to the
        # attention submodule that masks with it.
        Invalid(
            """
            import torch.nn as nn
            class TargetAttention(nn.Module):
                def forward(self, target, behaviours, mask=None):
                    logits = (behaviours @ target.unsqueeze(-1)).squeeze(-1)
                    if mask is not None:
                        logits = logits.masked_fill(~mask, float("-inf"))
                    return (logits.softmax(dim=-1).unsqueeze(-1) * behaviours).sum(1)
            class CTRModel(nn.Module):
                def __init__(self, n_items, dim):
                    super().__init__()
                    self.item_emb = nn.Embedding(n_items, dim, padding_idx=0)
                    self.attn = TargetAttention()
                def forward(self, batch):
                    hist_mask = batch["hist_items"] > 0
                    target = self.item_emb(batch["target_item"])
                    interest = self.attn(target, self.item_emb(batch["hist_items"]))
                    return (target * interest).sum(-1)
            """,
            line=16,
        ),
        # A mask parameter named after what it pads, unused.
        Invalid(
            """
            import torch.nn as nn
            class CrossBlock(nn.Module):
                def __init__(self, d, h):
                    super().__init__()
                    self.attn = nn.MultiheadAttention(d, h, batch_first=True)
                def forward(self, x, memory, memory_key_padding_mask=None):
                    return self.attn(x, memory, memory, need_weights=False)[0]
            """,
            line=7,
        ),
        # A left-padded batch goes to a model that takes a padding mask, and gets none.
        Invalid(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F
            PAD = 0
            class TinyLM(nn.Module):
                def __init__(self, vocab=32, d=16, h=2):
                    super().__init__()
                    self.h = h
                    self.emb = nn.Embedding(vocab, d)
                    self.qkv = nn.Linear(d, 3 * d)
                def forward(self, ids, attention_mask=None):
                    B, T = ids.shape
                    q, k, v = self.qkv(self.emb(ids)).view(B, T, 3, self.h, -1).permute(2, 0, 3, 1, 4)
                    allowed = None
                    if attention_mask is not None:
                        causal = torch.ones(T, T, dtype=torch.bool).tril()
                        allowed = attention_mask.bool()[:, None, None, :] & causal
                    return F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, is_causal=allowed is None)
            def collate(seqs, n):
                rows = []
                for s in seqs:
                    rows.append([PAD] * (n - len(s)) + s)
                return torch.tensor(rows)
            def step(model, batches):
                for ids in batches:
                    logits = model(ids)
                return logits
            if __name__ == "__main__":
                step(TinyLM(), [collate([[3, 4, 5], [6]], 8)])
            """,
            line=26,
        ),
        # A causal tgt_mask covers the padded target, not the padded source (time-major, module moved with .to()).
        Invalid(
            """
            import torch
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence

            PAD_ID = 1


            class Translator(nn.Module):
                def __init__(self, vocab, width=256):
                    super().__init__()
                    self.embed = nn.Embedding(vocab, width, padding_idx=PAD_ID)
                    self.core = nn.Transformer(d_model=width, nhead=8)
                    self.proj = nn.Linear(width, vocab)

                def forward(self, src_tokens, tgt_tokens):
                    causal = self.core.generate_square_subsequent_mask(tgt_tokens.size(1))
                    src = self.embed(src_tokens).transpose(0, 1)
                    tgt = self.embed(tgt_tokens).transpose(0, 1)
                    return self.proj(self.core(src, tgt, tgt_mask=causal))


            def translate_batch(model, sources, targets):
                src = pad_sequence(sources, batch_first=True, padding_value=PAD_ID)
                tgt = pad_sequence(targets, batch_first=True, padding_value=PAD_ID)
                return model(src, tgt[:, :-1])


            if __name__ == "__main__":
                translate_batch(Translator(1000).to("cpu"), [], [])
            """,
        ),
        # Token plus position embeddings of a padded batch are still padded.
        Invalid(
            """
            import torch
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence


            class SentenceEncoder(nn.Module):
                def __init__(self, vocab, dim=128, max_len=256):
                    super().__init__()
                    self.tokens = nn.Embedding(vocab, dim)
                    self.positions = nn.Embedding(max_len, dim)
                    self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(dim, 4, batch_first=True), 3)

                def forward(self, sentences):
                    ids = pad_sequence(sentences, batch_first=True)
                    where = torch.arange(ids.size(1), device=ids.device)[None, :]
                    hidden = self.tokens(ids) + self.positions(where)
                    return self.encoder(hidden).mean(dim=1)
            """,
        ),
            # The module tests its token ids against the pad id (for pooling): they are padded, and the encoder gets no mask.
        Invalid(
            """
            import torch.nn as nn


            class ReviewEncoder(nn.Module):
                def __init__(self, vocab, dim=128, pad_id=0):
                    super().__init__()
                    self.pad_id = pad_id
                    self.embed = nn.Embedding(vocab, dim, padding_idx=pad_id)
                    self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(dim, 4, batch_first=True), 2)
                    self.classify = nn.Linear(dim, 2)

                def forward(self, tokens):
                    states = self.encoder(self.embed(tokens))
                    keep = tokens.ne(self.pad_id).unsqueeze(-1).float()
                    return self.classify((states * keep).sum(1) / keep.sum(1))
            """,
        ),
        # Per-utterance lengths accepted by a pooling layer and dropped: nn.MultiheadAttention
        # pools over the zero-padded frames too.
        Invalid(
            """
            import torch
            import torch.nn as nn


            class UtterancePool(nn.Module):
                def __init__(self, width, heads=2):
                    super().__init__()
                    self.probe = nn.Parameter(torch.zeros(1, 1, width))
                    self.attend = nn.MultiheadAttention(width, heads, batch_first=True)

                def forward(self, frames, frame_lens):
                    probe = self.probe.expand(frames.shape[0], 1, -1)
                    summary, _ = self.attend(probe, frames, frames, need_weights=False)
                    return summary[:, 0]
            """,
            line=13,
        ),
        # Hand-written attention given `src_lengths` and never using them.
        Invalid(
            """
            import torch


            def attend(query, memory, src_lengths):
                scores = query @ memory.transpose(1, 2) / memory.size(-1) ** 0.5
                return torch.softmax(scores, dim=-1) @ memory
            """,
        ),
        # Additive (Bahdanau-style) scores: no Q·Kᵀ product, but the softmax weights are summed
        # against the encoder states, and the source mask is never applied.
        Invalid(
            """
            import torch
            import torch.nn as nn


            class AdditiveAttention(nn.Module):
                def __init__(self, enc_dim, dec_dim, hidden):
                    super().__init__()
                    self.enc_proj = nn.Linear(enc_dim, hidden)
                    self.dec_proj = nn.Linear(dec_dim, hidden)
                    self.score = nn.Linear(hidden, 1)

                def forward(self, state, memory, memory_mask):
                    e = self.score(torch.tanh(self.enc_proj(memory) + self.dec_proj(state)[:, None])).squeeze(2)
                    alpha = torch.softmax(e, dim=-1)
                    return torch.bmm(alpha.unsqueeze(1), memory).squeeze(1), alpha
            """,
        ),
        # A function handed `model` from outside feeds it a zero-padded batch; the module's one
        # root nn.Module (built by no other class here) runs SDPA over it with no mask.
        Invalid(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F


            def pad_batch(docs):
                width = max(len(d) for d in docs)
                ids = torch.zeros(len(docs), width, dtype=torch.long)
                for row, d in enumerate(docs):
                    ids[row, : len(d)] = torch.tensor(d)
                return ids


            class SelfAttention(nn.Module):
                def __init__(self, dim, heads=4):
                    super().__init__()
                    self.heads = heads
                    self.qkv = nn.Linear(dim, 3 * dim)

                def forward(self, x):
                    b, n, d = x.shape
                    q, k, v = self.qkv(x).view(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
                    return F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, n, d)


            class TextEncoder(nn.Module):
                def __init__(self, vocab, dim=128):
                    super().__init__()
                    self.embed = nn.Embedding(vocab, dim)
                    self.block = SelfAttention(dim)

                def forward(self, ids):
                    h = self.embed(ids)
                    return (h + self.block(h)).mean(1)


            def embed_all(model, docs):
                return [model(pad_batch(docs[i : i + 16])) for i in range(0, len(docs), 16)]
            """,
        ),
        # A decoder that accepts the source mask and steps a closure calling a dot-attention
        # submodule that takes no mask: the mask reaches no attention.
        Invalid(
            """
            import torch
            import torch.nn as nn


            class DotAttention(nn.Module):
                def __init__(self, dim):
                    super().__init__()
                    self.proj = nn.Linear(dim, dim, bias=False)

                def forward(self, h, memory):
                    e = torch.bmm(memory, self.proj(h).unsqueeze(2)).squeeze(2)
                    a = torch.softmax(e, dim=1)
                    return torch.bmm(a.view(a.size(0), 1, a.size(1)), memory).squeeze(1)


            class StepDecoder(nn.Module):
                def __init__(self, dim):
                    super().__init__()
                    self.cell = nn.GRUCell(dim, dim)
                    self.attend = DotAttention(dim)

                def forward(self, inputs, h, memory, enc_mask=None):
                    def step(x, h):
                        h = self.cell(x, h)
                        return h + self.attend(h, memory)

                    outs = []
                    for t in range(inputs.size(1)):
                        h = step(inputs[:, t], h)
                        outs.append(h)
                    return torch.stack(outs, 1)
            """,
        ),
        # A decoder given the source mask calls its attention module without it; the module
        # masks its scores when a caller passes one (none here does). No fix: the module's
        # parameter has another name, and which argument it is meant to be is the author's.
        Invalid(
            """
            from typing import Optional
            import torch
            import torch.nn.functional as F
            from torch import nn
            class LuongAttn(nn.Module):
                def __init__(self, hidden):
                    super().__init__()
                    self.W = nn.Linear(hidden, hidden)
                def forward(self, h_t, enc_out, mask: Optional[torch.Tensor] = None):
                    scores = torch.bmm(enc_out, self.W(h_t).transpose(1, 2)).squeeze(2)
                    if mask is not None:
                        scores = scores.masked_fill(~mask, float("-inf"))
                    return F.softmax(scores, dim=-1).unsqueeze(1)
            class Decoder(nn.Module):
                def __init__(self, vocab, hidden):
                    super().__init__()
                    self.embedding = nn.Embedding(vocab, hidden)
                    self.lstm = nn.LSTM(hidden, hidden, batch_first=True)
                    self.attn = LuongAttn(hidden)
                def forward(self, y_prev, state, enc_out, src_mask):
                    rnn_out, state = self.lstm(self.embedding(y_prev).unsqueeze(1), state)
                    weights = self.attn(rnn_out, enc_out)
                    return weights.bmm(enc_out), state
            """,
            line=22,
        ),
        # The lengths are read, but only into the lengths the front end leaves, which are
        # returned: the encoder itself gets no padding mask.
        Invalid(
            """
            import torch
            from torch import nn
            class CTCEncoder(nn.Module):
                def __init__(self, n_mels=80, d_model=256):
                    super().__init__()
                    self.conv = nn.Conv1d(n_mels, d_model, 5, stride=2, padding=2)
                    layer = nn.TransformerEncoderLayer(d_model, 4, batch_first=True)
                    self.encoder = nn.TransformerEncoder(layer, 6)
                def forward(self, feats, feat_lens):
                    x = self.conv(feats.transpose(1, 2)).transpose(1, 2)
                    out_lens = torch.div(feat_lens - 1, 2, rounding_mode="floor") + 1
                    x = self.encoder(x)
                    return x, out_lens
            """,
            line=12,
        ),
    ]


def _bound_by(forward, call: AttentionCallSite) -> set:
    """The parameters of a submodule's forward that the call passes an argument for."""
    import libcst as cst

    from attnlint.analysis.summaries import NONE, bind_arguments

    if not isinstance(forward.node, cst.FunctionDef):
        return set()
    bound = bind_arguments(forward.node, call.call, list(call.inputs), method=True) or {}
    return {name for name, value in bound.items() if value is not NONE}
