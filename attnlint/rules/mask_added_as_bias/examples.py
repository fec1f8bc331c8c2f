"""ATN208's examples: run as tests (tests/test_rule_examples.py); the flagged one is its page's."""

from attnlint.rules.base import Invalid, Valid

VALID = [
    # Laid out per key and passed as bool: a mask, not a bias.
    Valid(
        """
        import torch.nn.functional as F
        from einops import rearrange


        def cross_attend(q, k, v, enc_mask):
            # Laid out per key and handed over as bool: SDPA reads it as a mask, not a bias.
            keep = rearrange(enc_mask, "b j -> b 1 1 j").bool()
            return F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
        """
    ),
    # The same mask used as it comes: it may be the caller's bias.
    Valid(
        """
        import torch.nn.functional as F


        def cross_attend(q, k, v, enc_mask):
            # Used as it comes (not laid out here): it may be the caller's additive bias, already (b, 1, 1, j).
            return F.scaled_dot_product_attention(q, k, v, attn_mask=enc_mask.to(q.dtype))
        """
    ),
    # The same helper, but the only caller passes weights of its own under the mask's name: not a mask.
    Valid(
        """
        import torch
        import torch.nn as nn


        class SlotPooling(nn.Module):
            def __init__(self, width):
                super().__init__()
                self.score = nn.Linear(width, 1)

            def forward(self, slots, mask):
                e = self.score(slots).squeeze(-1)
                e = e * mask
                return (torch.softmax(e, dim=-1).unsqueeze(-1) * slots).sum(1)


        class DialogueState(nn.Module):
            def __init__(self, width):
                super().__init__()
                self.pool = SlotPooling(width)

            def forward(self, slots, slot_weights):
                # The caller passes per-slot weights of its own under the callee's mask name: a
                # temperature per slot, not a mask.
                return self.pool(slots, slot_weights.float())
        """
    ),
    # A mask that may be bool or a float bias, tested by its dtype: `~` on the bool branch only,
    # the float one added (an SDPA fallback written by hand).
    Valid(
        """
        import torch
        def attention(query, key, value, attn_mask=None):
            w = torch.matmul(query, key.transpose(-2, -1)) * query.shape[-1] ** -0.5
            if attn_mask is not None:
                if attn_mask.dtype == torch.bool:
                    w = w.masked_fill(~attn_mask, float("-inf"))
                else:
                    w = w + attn_mask
            return torch.softmax(w, dim=-1) @ value
        """
    ),
    # A parameter inverted with `~` and handed to SDPA as bool: what SDPA expects.
    Valid(
        """
        import torch.nn.functional as F


        def caption_self_attention(q, k, v, text_pad):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=~text_pad[:, None, None, :])
        """
    ),
    # A parameter that is never inverted here, added as it comes: the caller's bias.
    Valid(
        """
        import torch


        def attend(q, k, v, valid):
            att = q @ k.transpose(-2, -1) * q.size(-1) ** -0.5
            att = att + valid[:, None, None, :].to(att.dtype)
            return att.softmax(-1) @ v
        """
    ),
    # The same fill in place, as a statement: it changes the scores.
    Valid(
        """
        import torch


        def sentence_attention(q, k, v, token_mask):
            logits = torch.matmul(q, k.transpose(-1, -2)) * q.size(-1) ** -0.5
            logits.masked_fill_(token_mask[:, None, None, :] == 0, -1e4)
            return torch.softmax(logits, dim=-1) @ v
        """
    ),
    # A comparison turned into a bias before it is added: -1e4 where the test holds.
    Valid(
        """
        import torch


        def local_attention(q, k, v, pos, radius):
            scores = torch.einsum("bid,bjd->bij", q, k) / q.shape[-1] ** 0.5
            far = torch.cdist(pos, pos) > radius
            scores = scores + far.float() * -1e4
            return scores.softmax(dim=-1) @ v
        """
    ),
    # The same test through torch.where, with a finite fill.
    Valid(
        """
        import torch


        def local_attention(q, k, v, pos, radius):
            scores = torch.einsum("bid,bjd->bij", q, k) / q.shape[-1] ** 0.5
            scores = scores + torch.where(torch.cdist(pos, pos) > radius, -1e4, 0.0)
            return scores.softmax(dim=-1) @ v
        """
    ),
    # A comparison multiplied into the weights after the softmax and renormalised: no score is
    # touched.
    Valid(
        """
        import torch


        def gated(q, k, v, frames):
            w = (q @ k.transpose(1, 2) / q.size(-1) ** 0.5).softmax(-1)
            w = w * (frames.abs().sum(-1) > 0)[:, None, :]
            w = w / w.sum(-1, keepdim=True).clamp_min(1e-6)
            return w @ v
        """
    ),
    # The additive form.
    Valid(
        """
        import torch
        def attention(q, k, v, attention_mask):
            scores = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
            bias = (1.0 - attention_mask[:, None, None, :].to(scores.dtype)) * torch.finfo(scores.dtype).min
            return (scores + bias).softmax(-1) @ v
        """
    ),
    # A Hugging Face attention layer: the mask it receives is already a bias.
    Valid(
        """
        import torch
        from torch import nn
        def eager_attention_forward(module, query, key, value, attention_mask, scaling):
            attn_weights = torch.matmul(query, key.transpose(2, 3)) * scaling
            if attention_mask is not None:
                attn_weights = attn_weights + attention_mask[:, :, :, : key.shape[-2]]
            attn_weights = nn.functional.softmax(attn_weights, dim=-1)
            return torch.matmul(attn_weights, value)
        """
    ),
    # masked_fill with -inf.
    Valid(
        """
        import torch
        def attention(q, k, v, lengths):
            keep = torch.arange(k.size(-2))[None, :] < lengths[:, None]
            s = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
            s = s.masked_fill(~keep[:, None, None, :], float("-inf"))
            return s.softmax(-1) @ v
        """
    ),
    # An additive causal mask built with masked_fill.
    Valid(
        """
        import torch
        def attention(q, k, v):
            T = q.size(-2)
            causal = torch.zeros(T, T).masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float("-inf"))
            s = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5 + causal
            return s.softmax(-1) @ v
        """
    ),
    # generate_square_subsequent_mask is additive.
    Valid(
        """
        import torch.nn as nn
        def forward(self, src):
            mask = nn.Transformer.generate_square_subsequent_mask(src.size(1))
            return self.encoder(src, mask=mask)
        """
    ),
    # A bool mask to SDPA (its convention is ATN205's business).
    Valid(
        """
        import torch
        import torch.nn.functional as F
        def attention(q, k, v):
            T = q.size(-2)
            keep = torch.tril(torch.ones(T, T, dtype=torch.bool))
            return F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
        """
    ),
    # A float additive mask to SDPA.
    Valid(
        """
        import torch
        import torch.nn.functional as F
        def attention(q, k, v, attention_mask):
            bias = (1.0 - attention_mask[:, None, None, :].float()) * -10000.0
            return F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        """
    ),
    # A relative-position bias added: not a mask.
    Valid(
        """
        import torch
        def attention(q, k, v, rel_bias):
            s = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5 + rel_bias
            return s.softmax(-1) @ v
        """
    ),
    # A large fill.
    Valid(
        """
        import torch
        def attention(q, k, v, mask):
            s = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
            s = s.masked_fill(mask == 0, -1e4)
            return s.softmax(-1) @ v
        """
    ),
    # Zero fill of the weights after the softmax: a guard, not a mask.
    Valid(
        """
        import torch
        def attention(q, k, v, mask):
            w = ((q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5).softmax(-1)
            w = w.masked_fill(mask, 0.0)
            return w @ v
        """
    ),
    # A mask parameter used as it comes (the caller's bias).
    Valid(
        """
        import torch.nn as nn
        class Attention(nn.Module):
            def forward(self, q, k, v, mask=None):
                s = (q @ k.transpose(-2, -1)) * self.scale
                if mask is not None:
                    s = s + mask
                return s.softmax(-1) @ v
        """
    ),
    # A float 0/1 mask multiplied, then turned into a bias.
    Valid(
        """
        import torch
        def attention(q, k, v):
            T = q.size(-2)
            keep = torch.tril(torch.ones(T, T))
            s = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
            s = s + (keep - 1.0) * 1e9
            return s.softmax(-1) @ v
        """
    ),
    # SDPA with a causal flag only.
    Valid(
        """
        import torch.nn.functional as F
        def attention(q, k, v):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        """
    ),
    # nn.MultiheadAttention with a bool padding mask.
    Valid(
        """
        import torch.nn as nn
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.mha = nn.MultiheadAttention(64, 4, batch_first=True)
            def forward(self, x, ids, pad_id):
                return self.mha(x, x, x, key_padding_mask=(ids == pad_id))[0]
        """
    ),
    # The where form with the dtype's min.
    Valid(
        """
        import torch
        def attention(q, k, v, keep):
            s = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
            s = torch.where(keep.bool(), s, torch.finfo(s.dtype).min)
            return s.softmax(-1) @ v
        """
    ),
    # A True = masked triangle scaled into a bias.
    Valid(
        """
        import torch
        def attention(q, k, v):
            T = q.size(-2)
            future = torch.triu(torch.ones(T, T), diagonal=1) * -1e9
            s = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5 + future
            return s.softmax(-1) @ v
        """
    ),
    # Linear (chunked delta-rule) attention: no softmax follows, a zero fill is the mask.
    Valid(
        """
        import torch
        def chunk(q, k, v, decay, n):
            mask = torch.triu(torch.ones(n, n, dtype=torch.bool, device=q.device), diagonal=1)
            attn = (q @ k.transpose(-1, -2) * decay).masked_fill_(mask, 0)
            return attn @ v
        """
    ),
    # Every caller builds a bias before handing the mask over: a triangle of `finfo.min`, a
    # keep-mask turned into 0/-inf with masked_fill, and `torch.where` with -inf.
    Valid(
        """
        import torch


        def attend(q, k, v, bias):
            logits = q @ k.transpose(-2, -1) * q.size(-1) ** -0.5
            logits = logits + bias
            return logits.softmax(dim=-1) @ v


        def run(q, k, v):
            n = q.size(-2)
            upper = torch.full((n, n), torch.finfo(q.dtype).min, dtype=q.dtype).triu(1)
            return attend(q, k, v, upper)


        def run_keep(q, k, v):
            keep = torch.ones(q.size(-2), q.size(-2)).tril()
            return attend(q, k, v, keep.masked_fill(keep == 0, float("-inf")).masked_fill(keep == 1, 0.0))


        def run_where(q, k, v):
            keep = torch.ones(q.size(-2), q.size(-2), dtype=torch.bool).tril()
            return attend(q, k, v, torch.where(keep, 0.0, float("-inf")))
        """
    ),
    # A finite fill after the -inf one restores the rows it emptied: a guard, not a mask.
    Valid(
        """
        import torch


        def pooled(energy, key_padding_mask):
            energy = energy.masked_fill(key_padding_mask, float("-inf"))
            energy = energy.masked_fill(key_padding_mask.all(dim=-1, keepdim=True), 0.0)
            return energy.softmax(dim=-1)
        """
    ),
    # Multiplied, then the additive form on the masked entries; renormalised after the softmax; linear attention (no softmax).
    Valid(
        """
        import torch
        import torch.nn.functional as F


        def bert_style(q, k, v, lengths):
            keep = (torch.arange(k.size(-2))[None, :] < lengths[:, None]).float()[:, None, :]
            s = q @ k.transpose(-2, -1) / q.size(-1) ** 0.5
            s = s * keep + (1.0 - keep) * -10000.0
            return F.softmax(s, dim=-1) @ v


        def renormalised(vector, lengths):
            mask = (torch.arange(vector.size(-1))[None, :] < lengths[:, None]).float()
            result = F.softmax(vector * mask, dim=-1)
            result = result * mask
            return result / (result.sum(dim=-1, keepdim=True) + 1e-13)


        def causal_linear_attention(q, k, v):
            n = q.size(-2)
            return ((q @ k.transpose(-2, -1)) * torch.tril(torch.ones(n, n))) @ v
        """
    ),
    # The same energies filled in place: masked before the softmax.
    Valid(
        """
        import torch
        import torch.nn as nn


        class BilinearPointer(nn.Module):
            def __init__(self, width):
                super().__init__()
                self.bilinear = nn.Linear(width, width, bias=False)

            def forward(self, query, memory, memory_keep):
                energy = torch.bmm(memory, self.bilinear(query).unsqueeze(-1)).squeeze(-1)
                # In place: the energies are filled.
                energy.masked_fill_(~memory_keep, float("-inf"))
                return torch.softmax(energy, dim=-1)
        """
    ),
    # The only caller passes soft weights under a mask's name: a per-pair temperature, not a mask.
    Valid(
        """
        import torch
        import torch.nn as nn


        class PairAttention(nn.Module):
            def __init__(self, width):
                super().__init__()
                self.qk = nn.Linear(width, 2 * width)
                self.v = nn.Linear(width, width)

            def forward(self, nodes, pair_mask):
                q, k = self.qk(nodes).chunk(2, dim=-1)
                scores = torch.einsum("bid,bjd->bij", q, k) / q.shape[-1] ** 0.5
                scores = scores * pair_mask
                return torch.softmax(scores, dim=-1) @ self.v(nodes)


        def run(nodes, positions):
            # The only caller passes soft distance weights under that name, not a mask: a temperature
            # per pair.
            weights = torch.exp(-torch.cdist(positions, positions))
            return PairAttention(nodes.size(-1))(nodes, weights)
        """
    ),
    # The mask's name read again after the product (the additive form): it is applied.
    Valid(
        """
        import torch
        import torch.nn as nn


        class PairAttention(nn.Module):
            def __init__(self, width):
                super().__init__()
                self.qk = nn.Linear(width, 2 * width)
                self.v = nn.Linear(width, width)

            def forward(self, nodes, pair_mask):
                q, k = self.qk(nodes).chunk(2, dim=-1)
                scores = torch.einsum("bid,bjd->bij", q, k) / q.shape[-1] ** 0.5
                # Multiplied, then the masked pairs pushed down: the additive form.
                scores = scores * pair_mask + (1.0 - pair_mask) * -1e4
                return torch.softmax(scores, dim=-1) @ self.v(nodes)
        """
    ),
    # The weights' fill assigned back.
    Valid(
        """
        import torch


        def media_cross_attention(q, k, v, has_media):
            w = (q @ k.transpose(-2, -1) * q.size(-1) ** -0.5).softmax(dim=-1)
            w = w.masked_fill(~has_media[:, None, :, None], 0.0)
            return w @ v
        """
    ),
    # The only caller passes the fill: the small default is never used here.
    Valid(
        """
        import math

        import torch
        import torch.nn as nn


        class DotAttention(nn.Module):
            def forward(self, q, k, v, mask=None, eps=1e-9):
                s = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
                if mask is not None:
                    s = s.masked_fill(mask == 0, -eps)
                return s.softmax(dim=-1) @ v


        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.attend = DotAttention()

            def forward(self, q, k, v, mask):
                # The caller passes a fill that masks: the default is never used here.
                return self.attend(q, k, v, mask=mask, eps=1e9)
        """
    ),
    # Swin's shifted-window mask, (windows, N, N) of 0 and -100 made by the model, given a new
    # leading axis to broadcast over the batch: a bias of other axes, not a raw padding mask.
    Valid(
        """
        import math
        import torch
        from torch import nn
        class WindowSelfAttention(nn.Module):
            def __init__(self, dim, heads):
                super().__init__()
                self.heads = heads
                self.head_dim = dim // heads
                self.qkv = nn.Linear(dim, 3 * dim)
            def forward(self, hidden_states, attention_mask=None):
                batch_size, dim, _ = hidden_states.shape
                q, k, v = self.qkv(hidden_states).view(batch_size, dim, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
                scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
                if attention_mask is not None:
                    mask_shape = attention_mask.shape[0]
                    scores = scores.view(batch_size // mask_shape, mask_shape, self.heads, dim, dim)
                    scores = scores + attention_mask.unsqueeze(1).unsqueeze(0)
                    scores = scores.view(-1, self.heads, dim, dim)
                probs = nn.functional.softmax(scores, dim=-1)
                return torch.matmul(probs, v)
        """
    ),
    # fairseq's encoder layer: the 0/1 attn_mask becomes a bias with a large negative chosen by
    # dtype before nn.MultiheadAttention adds it.
    Valid(
        """
        import torch
        from torch import nn
        class EncoderLayer(nn.Module):
            def __init__(self, d, h):
                super().__init__()
                self.self_attn = nn.MultiheadAttention(d, h)
            def forward(self, x, attn_mask=None):
                if attn_mask is not None:
                    attn_mask = attn_mask.masked_fill(attn_mask.to(torch.bool), -1e8 if x.dtype == torch.float32 else -1e4)
                return self.self_attn(x, x, x, attn_mask=attn_mask)[0]
        if __name__ == "__main__":
            idx = torch.arange(10)
            layer = EncoderLayer(16, 4)
            layer(torch.randn(10, 2, 16), attn_mask=((idx[None, :] - idx[:, None]).abs() > 4).float())
        """
    ),
    # Gemma-style sliding window: the bias the model made is filled again by a helper, with a
    # fill bound to a name; what is added is that bias, not the window's 0/1.
    Valid(
        """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F


        class Attention(nn.Module):
            def __init__(self, dim, heads, window):
                super().__init__()
                self.heads, self.head_dim, self.window = heads, dim // heads, window
                self.qkv = nn.Linear(dim, 3 * dim)

            def _apply_sliding_window(self, mask):
                min_dtype = torch.finfo(mask.dtype).min
                q_len, kv_len = mask.shape[-2:]
                q_pos = torch.arange(kv_len - q_len, kv_len, device=mask.device)[:, None]
                k_pos = torch.arange(kv_len, device=mask.device)[None, :]
                too_far = (q_pos - k_pos) >= self.window
                return mask.masked_fill(too_far, min_dtype)

            def forward(self, x, attention_mask):
                b, n, _ = x.shape
                q, k, v = self.qkv(x).view(b, n, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
                scores = q @ k.transpose(-1, -2) * self.head_dim ** -0.5
                scores = scores + self._apply_sliding_window(attention_mask)
                return F.softmax(scores, dim=-1) @ v


        class Model(nn.Module):
            def __init__(self, dim, heads, window):
                super().__init__()
                self.attn = Attention(dim, heads, window)

            def forward(self, x, padding_mask):
                n = x.shape[1]
                bias = torch.zeros(n, n).masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
                bias = bias[None, None] + (1.0 - padding_mask[:, None, None, :].float()) * torch.finfo(x.dtype).min
                return self.attn(x, bias)
        """
    ),
]

INVALID = [
    # A fill given as a parameter's default that no call here overrides (`e=1e-12`): the masked
    # scores become -1e-12, which masks nothing. A training function of the module with five
    # positional arguments cannot reach `forward`.
    Invalid(
        """
        import math
        import torch.nn as nn


        class ScaleDotProductAttention(nn.Module):
            def __init__(self):
                super().__init__()
                self.softmax = nn.Softmax(dim=-1)

            def forward(self, q, k, v, mask=None, e=1e-12):
                batch_size, head, length, d_tensor = k.size()
                score = (q @ k.transpose(2, 3)) / math.sqrt(d_tensor)
                if mask is not None:
                    score = score.masked_fill(mask == 0, -e)
                return self.softmax(score) @ v, score


        def train(model, iterator, optimizer, criterion, clip):
            for src, trg in iterator:
                loss = criterion(model(src, trg[:, :-1]).flatten(0, 1), trg[:, 1:].flatten())
                loss.backward()
                nn.utils.clip_grad_norm_(model.parameters(), clip)
                optimizer.step()


        if __name__ == "__main__":
            train(ScaleDotProductAttention(), [], None, nn.CrossEntropyLoss(), 1.0)
        """,
        line=14,
    ),
    # A keep mask padded with True for the class token (so bool) and cast to the activations'
    # dtype: SDPA adds 1.0/0.0 to the scores.
    Invalid(
        """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F


        class TemporalAttention(nn.Module):
            def __init__(self, dim, heads):
                super().__init__()
                self.heads = heads
                self.to_qkv = nn.Linear(dim, 3 * dim)
                self.cls_token = nn.Parameter(torch.randn(1, 1, dim))

            def forward(self, frames, frame_mask):
                b, f, d = frames.shape
                x = torch.cat((self.cls_token.expand(b, -1, -1), frames), dim=1)
                q, k, v = self.to_qkv(x).view(b, f + 1, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
                keep = F.pad(frame_mask, (1, 0), value=True)
                out = F.scaled_dot_product_attention(q, k, v, attn_mask=keep[:, None, None, :].to(x.dtype))
                return out.transpose(1, 2).reshape(b, f + 1, d)
        """,
        fixed=None,
        line=18,
    ),
    # The tokenizer's 0/1 mask cast by a helper to the hidden states' dtype (handed in as
    # `dtype`), then given to SDPA as a float `attn_mask`: added, 1.0/0.0 masks nothing.
    Invalid(
        """
        import torch.nn as nn
        import torch.nn.functional as F


        def to_sdpa_mask(attention_mask, dtype):
            return attention_mask[:, None, None, :].to(dtype)


        class Encoder(nn.Module):
            def __init__(self, vocab, dim, heads):
                super().__init__()
                self.heads = heads
                self.tok = nn.Embedding(vocab, dim)
                self.qkv = nn.Linear(dim, 3 * dim)

            def forward(self, input_ids, attention_mask):
                x = self.tok(input_ids)
                B, T, C = x.shape
                q, k, v = self.qkv(x).view(B, T, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
                mask = to_sdpa_mask(attention_mask, x.dtype)
                return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        """,
        fixed="""
        import torch.nn as nn
        import torch.nn.functional as F


        def to_sdpa_mask(attention_mask, dtype):
            return attention_mask[:, None, None, :].to(dtype)


        class Encoder(nn.Module):
            def __init__(self, vocab, dim, heads):
                super().__init__()
                self.heads = heads
                self.tok = nn.Embedding(vocab, dim)
                self.qkv = nn.Linear(dim, 3 * dim)

            def forward(self, input_ids, attention_mask):
                x = self.tok(input_ids)
                B, T, C = x.shape
                q, k, v = self.qkv(x).view(B, T, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
                mask = to_sdpa_mask(attention_mask, x.dtype)
                return F.scaled_dot_product_attention(q, k, v, attn_mask=mask.bool())
        """,
        line=21,
    ),
    # A BERT encoder's helper broadcasts the tokenizer's 0/1 mask, with no arithmetic, and
    # every layer adds it to its scores.
    Invalid(
        """
        import math
        import torch
        from torch import nn

        class SelfAttention(nn.Module):
            def __init__(self, dim, heads):
                super().__init__()
                self.heads, self.head_dim = heads, dim // heads
                self.qkv = nn.Linear(dim, 3 * dim)

            def forward(self, x, attention_mask):
                b, n, _ = x.shape
                q, k, v = self.qkv(x).view(b, n, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
                scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
                scores = scores + attention_mask
                return (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, n, -1)

        class Encoder(nn.Module):
            def __init__(self, dim, heads, depth):
                super().__init__()
                self.layers = nn.ModuleList([SelfAttention(dim, heads) for _ in range(depth)])

            @staticmethod
            def extended_mask(attention_mask, dtype):
                return attention_mask[:, None, None, :].to(dtype=dtype)

            def forward(self, x, attention_mask):
                mask = self.extended_mask(attention_mask, x.dtype)
                for layer in self.layers:
                    x = layer(x, mask)
                return x
        """,
        fixed="""
        import math
        import torch
        from torch import nn

        class SelfAttention(nn.Module):
            def __init__(self, dim, heads):
                super().__init__()
                self.heads, self.head_dim = heads, dim // heads
                self.qkv = nn.Linear(dim, 3 * dim)

            def forward(self, x, attention_mask):
                b, n, _ = x.shape
                q, k, v = self.qkv(x).view(b, n, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
                scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
                scores = scores + ((1.0 - attention_mask.to(scores.dtype)) * torch.finfo(scores.dtype).min)
                return (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, n, -1)

        class Encoder(nn.Module):
            def __init__(self, dim, heads, depth):
                super().__init__()
                self.layers = nn.ModuleList([SelfAttention(dim, heads) for _ in range(depth)])

            @staticmethod
            def extended_mask(attention_mask, dtype):
                return attention_mask[:, None, None, :].to(dtype=dtype)

            def forward(self, x, attention_mask):
                mask = self.extended_mask(attention_mask, x.dtype)
                for layer in self.layers:
                    x = layer(x, mask)
                return x
        """,
    ),
    # A padding-mask parameter broadcast here and cast with type_as(q): a float 0/1 mask to SDPA.
    Invalid(
        """
        import torch.nn.functional as F


        def cross_attend(q, k, v, memory_pad_mask):
            # The memory's padding mask, broadcast here and cast with type_as: 1.0/0.0 added by SDPA.
            return F.scaled_dot_product_attention(q, k, v, attn_mask=memory_pad_mask[:, None, None, :].type_as(q))
        """
    ),
    # A padding mask of the attended sequence, laid out per key here by einops and cast to the queries' dtype: SDPA adds it.
    Invalid(
        """
        import torch.nn.functional as F
        from einops import rearrange


        def cross_attend(q, k, v, enc_mask):
            # The encoder's padding mask, laid out per key here and cast to the queries' dtype: SDPA adds
            # its 1.0s and 0.0s to the scores.
            bias = rearrange(enc_mask, "b j -> b 1 1 j").to(q.dtype)
            return F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        """
    ),
    # A caller hands on its own mask parameter (cast to float): a mask, multiplied into the scores.
    Invalid(
        """
        import torch
        import torch.nn as nn


        class SlotPooling(nn.Module):
            def __init__(self, width):
                super().__init__()
                self.score = nn.Linear(width, 1)

            def forward(self, slots, mask):
                e = self.score(slots).squeeze(-1)
                e = e * mask
                return (torch.softmax(e, dim=-1).unsqueeze(-1) * slots).sum(1)


        class DialogueState(nn.Module):
            def __init__(self, width):
                super().__init__()
                self.pool = SlotPooling(width)

            def forward(self, slots, slot_mask):
                # The caller hands on its own mask parameter, cast to float: still a mask, multiplied in.
                return self.pool(slots, slot_mask.float())
        """
    ),
    # A Hugging Face 0/1 attention_mask, broadcast here and added as is.
    Invalid(
        """
        import torch
        def attention(q, k, v, attention_mask):
            scores = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
            mask = attention_mask[:, None, None, :].to(scores.dtype)
            scores = scores + mask
            return scores.softmax(dim=-1) @ v
        """,
        fixed="""
        import torch
        def attention(q, k, v, attention_mask):
            scores = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
            mask = attention_mask[:, None, None, :].to(scores.dtype)
            scores = scores + ((1.0 - mask.to(scores.dtype)) * torch.finfo(scores.dtype).min)
            return scores.softmax(dim=-1) @ v
        """,
        line=5,
        page=True,
    ),
    # BERT-style module.
    Invalid(
        """
        import math
        import torch
        import torch.nn as nn
        class SelfAttention(nn.Module):
            def forward(self, hidden_states, attention_mask):
                q = self.query(hidden_states)
                k = self.key(hidden_states)
                v = self.value(hidden_states)
                attention_scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.size(-1))
                extended_attention_mask = attention_mask.unsqueeze(1).unsqueeze(2)
                attention_scores = attention_scores + extended_attention_mask
                probs = nn.functional.softmax(attention_scores, dim=-1)
                return torch.matmul(probs, v)
        """,
        fixed="""
        import math
        import torch
        import torch.nn as nn
        class SelfAttention(nn.Module):
            def forward(self, hidden_states, attention_mask):
                q = self.query(hidden_states)
                k = self.key(hidden_states)
                v = self.value(hidden_states)
                attention_scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.size(-1))
                extended_attention_mask = attention_mask.unsqueeze(1).unsqueeze(2)
                attention_scores = attention_scores + ((1.0 - extended_attention_mask.to(attention_scores.dtype)) * torch.finfo(attention_scores.dtype).min)
                probs = nn.functional.softmax(attention_scores, dim=-1)
                return torch.matmul(probs, v)
        """,
    ),
    # A triangle of ones added as a causal "mask".
    Invalid(
        """
        import torch
        def causal_attention(q, k, v):
            T = q.size(-2)
            causal = torch.tril(torch.ones(T, T, device=q.device))
            s = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
            s = s + causal
            return torch.softmax(s, dim=-1) @ v
        """,
        fixed="""
        import torch
        def causal_attention(q, k, v):
            T = q.size(-2)
            causal = torch.tril(torch.ones(T, T, device=q.device))
            s = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
            s = s + ((1.0 - causal.to(s.dtype)) * torch.finfo(s.dtype).min)
            return torch.softmax(s, dim=-1) @ v
        """,
    ),
    # A bool padding mask from lengths, added.
    Invalid(
        """
        import torch
        def attention(q, k, v, lengths):
            keep = torch.arange(k.size(-2), device=k.device)[None, :] < lengths[:, None]
            s = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
            s = s + keep[:, None, None, :]
            return s.softmax(-1) @ v
        """,
        fixed="""
        import torch
        def attention(q, k, v, lengths):
            keep = torch.arange(k.size(-2), device=k.device)[None, :] < lengths[:, None]
            s = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
            s = s + ((1.0 - keep[:, None, None, :].to(s.dtype)) * torch.finfo(s.dtype).min)
            return s.softmax(-1) @ v
        """,
    ),
    # A float keep mask given to SDPA.
    Invalid(
        """
        import torch.nn.functional as F
        def attention(q, k, v, attention_mask):
            mask = attention_mask[:, None, None, :].float()
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        """,
        fixed="""
        import torch.nn.functional as F
        def attention(q, k, v, attention_mask):
            mask = attention_mask[:, None, None, :].float()
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask.bool())
        """,
    ),
    # A float triangle given to SDPA.
    Invalid(
        """
        import torch
        import torch.nn.functional as F
        def attention(q, k, v):
            T = q.size(-2)
            causal = torch.tril(torch.ones(T, T))
            return F.scaled_dot_product_attention(q, k, v, attn_mask=causal)
        """,
        fixed="""
        import torch
        import torch.nn.functional as F
        def attention(q, k, v):
            T = q.size(-2)
            causal = torch.tril(torch.ones(T, T))
            return F.scaled_dot_product_attention(q, k, v, attn_mask=causal.bool())
        """,
    ),
    # A fill that masks nothing (a typo of -1e9).
    Invalid(
        """
        import torch
        def attention(q, k, v, mask):
            s = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
            s = s.masked_fill(mask == 0, -1e-9)
            return s.softmax(-1) @ v
        """,
        fixed="""
        import torch
        def attention(q, k, v, mask):
            s = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
            s = s.masked_fill(mask == 0, torch.finfo(s.dtype).min)
            return s.softmax(-1) @ v
        """,
    ),
    # A zero fill of scores.
    Invalid(
        """
        import torch
        import torch.nn as nn
        class Attention(nn.Module):
            def forward(self, q, k, v, pad_mask):
                scores = torch.einsum("bhid,bhjd->bhij", q, k) * self.scale
                scores = scores.masked_fill(pad_mask, 0)
                return torch.einsum("bhij,bhjd->bhid", scores.softmax(dim=-1), v)
        """,
        fixed="""
        import torch
        import torch.nn as nn
        class Attention(nn.Module):
            def forward(self, q, k, v, pad_mask):
                scores = torch.einsum("bhid,bhjd->bhij", q, k) * self.scale
                scores = scores.masked_fill(pad_mask, torch.finfo(scores.dtype).min)
                return torch.einsum("bhij,bhjd->bhid", scores.softmax(dim=-1), v)
        """,
    ),
    # A where-fill that masks nothing.
    Invalid(
        """
        import torch
        def attention(q, k, v, keep):
            s = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
            s = torch.where(keep, s, 1e-9)
            return s.softmax(-1) @ v
        """,
        fixed="""
        import torch
        def attention(q, k, v, keep):
            s = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
            s = torch.where(keep, s, torch.finfo(s.dtype).min)
            return s.softmax(-1) @ v
        """,
    ),
    # Added in place.
    Invalid(
        """
        import torch
        def attention(q, k, v, ids, pad_id):
            keep = (ids != pad_id)
            s = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
            s = s + keep[:, None, None, :].float()
            return s.softmax(-1) @ v
        """,
        fixed="""
        import torch
        def attention(q, k, v, ids, pad_id):
            keep = (ids != pad_id)
            s = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
            s = s + ((1.0 - keep[:, None, None, :].float().to(s.dtype)) * torch.finfo(s.dtype).min)
            return s.softmax(-1) @ v
        """,
    ),
    # A True = masked triangle added (the future gets +1).
    Invalid(
        """
        import torch
        def attention(q, k, v):
            T = q.size(-2)
            future = torch.triu(torch.ones(T, T), diagonal=1)
            s = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
            s = s + future
            return s.softmax(-1) @ v
        """,
        fixed="""
        import torch
        def attention(q, k, v):
            T = q.size(-2)
            future = torch.triu(torch.ones(T, T), diagonal=1)
            s = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
            s = s + (future.to(s.dtype) * torch.finfo(s.dtype).min)
            return s.softmax(-1) @ v
        """,
    ),
    # A config-driven module with its keep mask built from lengths.
    Invalid(
        """
        from dataclasses import dataclass
        import torch
        import torch.nn as nn
        @dataclass
        class Config:
            d_model: int = 64
        class Attention(nn.Module):
            def __init__(self, cfg: Config):
                super().__init__()
                self.cfg = cfg
            def forward(self, q, k, v, lengths):
                keep = torch.arange(k.size(-2))[None, :] < lengths[:, None]
                att = torch.matmul(q, k.transpose(-2, -1)) / self.cfg.d_model ** 0.5
                att = att + keep.unsqueeze(1).unsqueeze(2).float()
                return torch.softmax(att, dim=-1) @ v
        """,
        fixed="""
        from dataclasses import dataclass
        import torch
        import torch.nn as nn
        @dataclass
        class Config:
            d_model: int = 64
        class Attention(nn.Module):
            def __init__(self, cfg: Config):
                super().__init__()
                self.cfg = cfg
            def forward(self, q, k, v, lengths):
                keep = torch.arange(k.size(-2))[None, :] < lengths[:, None]
                att = torch.matmul(q, k.transpose(-2, -1)) / self.cfg.d_model ** 0.5
                att = att + ((1.0 - keep.unsqueeze(1).unsqueeze(2).float().to(att.dtype)) * torch.finfo(att.dtype).min)
                return torch.softmax(att, dim=-1) @ v
        """,
    ),
    # A float padding mask for nn.MultiheadAttention (added to the logits).
    Invalid(
        """
        import torch
        import torch.nn as nn
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.mha = nn.MultiheadAttention(64, 4, batch_first=True)
            def forward(self, x, ids, pad_id):
                pad = (ids == pad_id).float()
                return self.mha(x, x, x, key_padding_mask=pad)[0]
        """,
        fixed="""
        import torch
        import torch.nn as nn
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.mha = nn.MultiheadAttention(64, 4, batch_first=True)
            def forward(self, x, ids, pad_id):
                pad = (ids == pad_id).float()
                return self.mha(x, x, x, key_padding_mask=pad.bool())[0]
        """,
    ),
    # Mask added on the left.
    Invalid(
        """
        import torch
        def attention(q, k, v):
            n = q.size(-2)
            keep = torch.ones(n, n).tril()
            s = keep + (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
            return s.softmax(-1) @ v
        """,
        fixed=None,
    ),
    # Broadcast by view in a module, added with no fix (scores not a plain name).
    Invalid(
        """
        import torch
        import torch.nn as nn
        class Attention(nn.Module):
            def forward(self, q, k, v, attention_mask):
                b, n = attention_mask.shape
                m = attention_mask.view(b, 1, 1, n)
                w = ((q @ k.transpose(-2, -1)) * self.scale + m).softmax(-1)
                return w @ v
        """,
        fixed=None,
    ),
    # A helper adds whatever mask it gets; its only caller passes a bool lower triangle.
    Invalid(
        """
        import torch
        import torch.nn as nn


        def scores_with_bias(q, k, bias):
            w = torch.einsum("bhid,bhjd->bhij", q, k) / q.shape[-1] ** 0.5
            w = w + bias
            return w.softmax(dim=-1)


        class CausalBlock(nn.Module):
            def __init__(self, width=32, heads=4):
                super().__init__()
                self.heads = heads
                self.qkv = nn.Linear(width, 3 * width)

            def forward(self, x):
                b, n, c = x.shape
                q, k, v = self.qkv(x).view(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
                allowed = torch.ones(n, n, dtype=torch.bool, device=x.device).tril()
                return scores_with_bias(q, k, allowed) @ v
        """,
        line=7,
        fixed="""
        import torch
        import torch.nn as nn


        def scores_with_bias(q, k, bias):
            w = torch.einsum("bhid,bhjd->bhij", q, k) / q.shape[-1] ** 0.5
            w = w + ((1.0 - bias.to(w.dtype)) * torch.finfo(w.dtype).min)
            return w.softmax(dim=-1)


        class CausalBlock(nn.Module):
            def __init__(self, width=32, heads=4):
                super().__init__()
                self.heads = heads
                self.qkv = nn.Linear(width, 3 * width)

            def forward(self, x):
                b, n, c = x.shape
                q, k, v = self.qkv(x).view(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
                allowed = torch.ones(n, n, dtype=torch.bool, device=x.device).tril()
                return scores_with_bias(q, k, allowed) @ v
        """,
    ),
    # A mask from lengths, passed to a method that adds it.
    Invalid(
        """
        import torch
        import torch.nn as nn


        class Pool(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.score = nn.Linear(d, d)

            def weights(self, x, valid):
                logits = self.score(x) @ x.transpose(1, 2) / x.size(-1) ** 0.5
                logits = logits + valid[:, None, :]
                return torch.softmax(logits, dim=-1)

            def forward(self, x, lengths):
                valid = torch.arange(x.size(1), device=x.device)[None, :] < lengths[:, None]
                return self.weights(x, valid) @ x
        """,
        line=12,
        fixed="""
        import torch
        import torch.nn as nn


        class Pool(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.score = nn.Linear(d, d)

            def weights(self, x, valid):
                logits = self.score(x) @ x.transpose(1, 2) / x.size(-1) ** 0.5
                logits = logits + ((1.0 - valid[:, None, :].to(logits.dtype)) * torch.finfo(logits.dtype).min)
                return torch.softmax(logits, dim=-1)

            def forward(self, x, lengths):
                valid = torch.arange(x.size(1), device=x.device)[None, :] < lengths[:, None]
                return self.weights(x, valid) @ x
        """,
    ),
    # Attention pooling: energies multiplied by a 0/1 mask from lengths before the softmax.
    Invalid(
        """
        import torch
        import torch.nn as nn


        class AttentivePooling(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.query = nn.Parameter(torch.randn(dim))

            def forward(self, states, lengths):
                positions = torch.arange(states.size(1), device=states.device)
                valid = (positions[None, :] < lengths[:, None]).to(states.dtype)
                energies = states @ self.query
                energies = energies * valid
                weights = torch.softmax(energies, dim=1)
                return (weights.unsqueeze(-1) * states).sum(1)
        """,
        line=14,
    ),
    # A bool keep-mask multiplied into einsum scores, inside the softmax call.
    Invalid(
        """
        import torch


        def attend(q, k, v, lengths):
            n = k.size(-2)
            keep = torch.arange(n, device=k.device)[None, :] < lengths[:, None]
            logits = torch.einsum("bhqd,bhkd->bhqk", q, k) * q.size(-1) ** -0.5
            return torch.softmax(keep[:, None, None, :] * logits, dim=-1) @ v
        """,
        line=8,
    ),
    # A comparison on features (silent frames are all zeros) cast to float and multiplied in.
    Invalid(
        """
        import torch
        import torch.nn as nn


        class FrameAttention(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.q = nn.Linear(d, d)
                self.k = nn.Linear(d, d)

            def forward(self, frames):
                q, k = self.q(frames), self.k(frames)
                logits = q @ k.transpose(1, 2) / q.size(-1) ** 0.5
                voiced = (frames.abs().sum(dim=-1) > 0).float()
                logits = logits * voiced[:, None, :]
                return torch.softmax(logits, dim=-1) @ frames
        """,
        line=15,
    ),
    # A neighbourhood test added to the scores as it is.
    Invalid(
        """
        import torch


        def neighbourhood_attention(q, k, v, coords, radius=1.5):
            sim = torch.einsum("bid,bjd->bij", q, k) * q.shape[-1] ** -0.5
            near = (torch.cdist(coords, coords) <= radius).to(sim.dtype)
            sim = sim + near
            return sim.softmax(dim=-1) @ v
        """,
        line=7,
    ),
    # A comparison handed to SDPA as a float mask (no fix: what True means is the author's).
    Invalid(
        """
        import torch.nn.functional as F


        def attend(q, k, v, frame_energy):
            keep = (frame_energy > 1e-3)[:, None, None, :].float()
            return F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
        """,
        line=6,
    ),
    # An out-of-place fill written as a statement: its result is dropped.
    Invalid(
        """
        import torch


        def sentence_attention(q, k, v, token_mask):
            logits = torch.matmul(q, k.transpose(-1, -2)) * q.size(-1) ** -0.5
            logits.masked_fill(token_mask[:, None, None, :] == 0, -1e4)
            return torch.softmax(logits, dim=-1) @ v
        """,
        fixed="""
        import torch


        def sentence_attention(q, k, v, token_mask):
            logits = torch.matmul(q, k.transpose(-1, -2)) * q.size(-1) ** -0.5
            logits.masked_fill_(token_mask[:, None, None, :] == 0, -1e4)
            return torch.softmax(logits, dim=-1) @ v
        """,
        line=6,
    ),
    # The same with torch.where inside a method (no fix offered).
    Invalid(
        """
        import torch
        import torch.nn as nn


        class Pool(nn.Module):
            def __init__(self, width):
                super().__init__()
                self.q = nn.Linear(width, width)

            def forward(self, h, valid):
                energy = self.q(h) @ h.transpose(1, 2) / h.size(-1) ** 0.5
                torch.where(valid[:, None, :], energy, torch.finfo(energy.dtype).min)
                return energy.softmax(-1) @ h
        """,
        line=12,
    ),
    # A parameter the layer inverts itself (so bool), also added to the scores.
    Invalid(
        """
        import torch
        import torch.nn as nn


        class TaggerAttention(nn.Module):
            def __init__(self, width, heads=4):
                super().__init__()
                self.heads = heads
                self.qkv = nn.Linear(width, 3 * width)

            def forward(self, x, valid):
                b, n, c = x.shape
                q, k, v = self.qkv(x).view(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
                att = q @ k.transpose(-2, -1) * (c // self.heads) ** -0.5
                att = att.masked_fill(~valid[:, None, None, :], -1e4)
                att = att + valid[:, None, None, :].to(att.dtype)
                return (att.softmax(-1) @ v).transpose(1, 2).reshape(b, n, c)
        """,
        line=16,
    ),
    # The inverse of a bool parameter, cast to float for SDPA.
    Invalid(
        """
        import torch.nn.functional as F


        def caption_self_attention(q, k, v, text_pad):
            allowed = (~text_pad)[:, None, None, :].float()
            return F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
        """,
        line=6,
    ),
    # A thrown-away fill of bilinear energies (not Q·Kᵀ) that a softmax then normalises unmasked.
    Invalid(
        """
        import torch
        import torch.nn as nn


        class BilinearPointer(nn.Module):
            def __init__(self, width):
                super().__init__()
                self.bilinear = nn.Linear(width, width, bias=False)

            def forward(self, query, memory, memory_keep):
                energy = torch.bmm(memory, self.bilinear(query).unsqueeze(-1)).squeeze(-1)
                energy.masked_fill(~memory_keep, float("-inf"))
                return torch.softmax(energy, dim=-1)
        """,
        fixed="""
        import torch
        import torch.nn as nn


        class BilinearPointer(nn.Module):
            def __init__(self, width):
                super().__init__()
                self.bilinear = nn.Linear(width, width, bias=False)

            def forward(self, query, memory, memory_keep):
                energy = torch.bmm(memory, self.bilinear(query).unsqueeze(-1)).squeeze(-1)
                energy.masked_fill_(~memory_keep, float("-inf"))
                return torch.softmax(energy, dim=-1)
        """,
        line=12,
    ),
    # A mask parameter of no known encoding multiplied into the scores, its only use: a product masks nothing whichever way round its 0/1 values go (or if it is a bias).
    Invalid(
        """
        import torch
        import torch.nn as nn


        class PairAttention(nn.Module):
            def __init__(self, width):
                super().__init__()
                self.qk = nn.Linear(width, 2 * width)
                self.v = nn.Linear(width, width)

            def forward(self, nodes, pair_mask):
                q, k = self.qk(nodes).chunk(2, dim=-1)
                scores = torch.einsum("bid,bjd->bij", q, k) / q.shape[-1] ** 0.5
                scores = scores * pair_mask
                return torch.softmax(scores, dim=-1) @ self.v(nodes)
        """,
        line=14,
    ),
    # The same under an `is not None` test, broadcast first.
    Invalid(
        """
        import torch


        def relation_attention(q, k, v, edge_mask=None):
            logits = q @ k.transpose(-2, -1) / q.size(-1) ** 0.5
            if edge_mask is not None:
                logits = logits * edge_mask.unsqueeze(1)
            return logits.softmax(dim=-1) @ v
        """,
        line=7,
    ),
    # An out-of-place fill of the weights after the softmax, as a statement: the weights stay as they were.
    Invalid(
        """
        import torch


        def media_cross_attention(q, k, v, has_media):
            w = (q @ k.transpose(-2, -1) * q.size(-1) ** -0.5).softmax(dim=-1)
            w.masked_fill(~has_media[:, None, :, None], 0.0)
            return w @ v
        """,
        fixed="""
        import torch


        def media_cross_attention(q, k, v, has_media):
            w = (q @ k.transpose(-2, -1) * q.size(-1) ** -0.5).softmax(dim=-1)
            w.masked_fill_(~has_media[:, None, :, None], 0.0)
            return w @ v
        """,
        line=6,
    ),
    # A fill read from a parameter's default that no caller in the file overrides: -1e-9 masks nothing.
    Invalid(
        """
        import math

        import torch
        import torch.nn as nn


        class DotAttention(nn.Module):
            def forward(self, q, k, v, mask=None, eps=1e-9):
                s = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
                if mask is not None:
                    s = s.masked_fill(mask == 0, -eps)
                return s.softmax(dim=-1) @ v


        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.attend = DotAttention()

            def forward(self, q, k, v, mask):
                return self.attend(q, k, v, mask=mask)
        """,
        fixed="""
        import math

        import torch
        import torch.nn as nn


        class DotAttention(nn.Module):
            def forward(self, q, k, v, mask=None, eps=1e-9):
                s = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
                if mask is not None:
                    s = s.masked_fill(mask == 0, torch.finfo(s.dtype).min)
                return s.softmax(dim=-1) @ v


        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.attend = DotAttention()

            def forward(self, q, k, v, mask):
                return self.attend(q, k, v, mask=mask)
        """,
        line=11,
    ),
    # A causal -inf fill, then the padded keys filled with 0.0: the second mask varies along
    # the keys, so it is no guard of emptied rows; padded keys (and the future where it is
    # padding) are attended.
    Invalid(
        """
        import math
        import torch


        def full_attention(queries, keys, values, causal, key_valid):
            B, L, H, E = queries.shape
            scores = torch.einsum("blhe,bshe->bhls", queries, keys)
            scores.masked_fill_(causal, -math.inf)
            scores = scores.masked_fill(~key_valid[:, None, None, :], 0.0)
            A = torch.softmax(scores / math.sqrt(E), dim=-1)
            return torch.einsum("bhls,bshd->blhd", A, values)
        """,
        fixed="""
        import math
        import torch


        def full_attention(queries, keys, values, causal, key_valid):
            B, L, H, E = queries.shape
            scores = torch.einsum("blhe,bshe->bhls", queries, keys)
            scores.masked_fill_(causal, -math.inf)
            scores = scores.masked_fill(~key_valid[:, None, None, :], torch.finfo(scores.dtype).min)
            A = torch.softmax(scores / math.sqrt(E), dim=-1)
            return torch.einsum("bhls,bshd->blhd", A, values)
        """,
        line=9,
    ),
    # A bool key-padding mask laid out by the caller and added by the kernel it calls; the -inf
    # bias built from it is never used.
    Invalid(
        """
        import math
        import torch
        import torch.nn.functional as F
        from torch import nn
        class Attention(nn.Module):
            def forward(self, q, k, v, key_padding_mask=None):
                bsz, src_len = q.size(0), k.size(1)
                attn_mask = None
                if key_padding_mask is not None:
                    attn_mask = key_padding_mask.view(bsz, 1, src_len)
                    assert attn_mask.dtype == torch.bool
                return self._kernel(q, k, v, attn_mask)
            def _kernel(self, q, k, v, attn_mask=None):
                attn = torch.bmm(q / math.sqrt(q.size(-1)), k.transpose(-2, -1))
                if attn_mask is not None:
                    attn += attn_mask
                return torch.bmm(F.softmax(attn, dim=-1), v)
        if __name__ == "__main__":
            x = torch.randn(2, 5, 8)
            Attention()(x, x, x, key_padding_mask=torch.arange(5)[None, :] >= torch.tensor([5, 3])[:, None])
        """,
        fixed="""
        import math
        import torch
        import torch.nn.functional as F
        from torch import nn
        class Attention(nn.Module):
            def forward(self, q, k, v, key_padding_mask=None):
                bsz, src_len = q.size(0), k.size(1)
                attn_mask = None
                if key_padding_mask is not None:
                    attn_mask = key_padding_mask.view(bsz, 1, src_len)
                    assert attn_mask.dtype == torch.bool
                return self._kernel(q, k, v, attn_mask)
            def _kernel(self, q, k, v, attn_mask=None):
                attn = torch.bmm(q / math.sqrt(q.size(-1)), k.transpose(-2, -1))
                if attn_mask is not None:
                    attn += (attn_mask.to(attn.dtype) * torch.finfo(attn.dtype).min)
                return torch.bmm(F.softmax(attn, dim=-1), v)
        if __name__ == "__main__":
            x = torch.randn(2, 5, 8)
            Attention()(x, x, x, key_padding_mask=torch.arange(5)[None, :] >= torch.tensor([5, 3])[:, None])
        """,
        line=16,
    ),
    # Dense graph attention: a 0/1 adjacency with self loops, built at the top of the script and
    # handed through the model to each head, added to the logits.
    Invalid(
        """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        def build_bias(adj):
            eye = torch.eye(adj.size(-1), dtype=adj.dtype)
            return ((adj > 0).float() + eye).clamp(max=1)
        class GraphAttentionLayer(nn.Module):
            def __init__(self, d_in, d_out):
                super().__init__()
                self.W = nn.Linear(d_in, d_out, bias=False)
                self.a = nn.Linear(2 * d_out, 1, bias=False)
            def forward(self, h, bias):
                Wh = self.W(h)
                n = Wh.size(0)
                pairs = torch.cat([Wh.unsqueeze(1).expand(-1, n, -1), Wh.unsqueeze(0).expand(n, -1, -1)], dim=-1)
                e = F.leaky_relu(self.a(pairs).squeeze(-1), 0.2)
                attention = F.softmax(e + bias, dim=1)
                return attention @ Wh
        if __name__ == "__main__":
            adj = (torch.rand(50, 50) < 0.1).float()
            layer = GraphAttentionLayer(16, 8)
            out = layer(torch.randn(50, 16), build_bias(adj))
        """,
        line=17,
    ),
]
