"""ATN101 missing-attention-scale."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from attnlint.diagnostics import Applicability
from attnlint.fixers.keyword import set_keyword
from attnlint.fixers.scale import scale_scores
from attnlint.rules.base import FixAvailability, Invalid, Rule, RuleContext, Valid


class MissingAttentionScale(Rule):
    """
    ## What it does
    Checks for a softmax over query-key scores (`Q @ Kᵀ`, `matmul`, `bmm`, `einsum`) when no
    scale was applied anywhere on the way: not to the queries, not to the keys, not to the
    scores. A product handed to a softmax helper that other code shares (d2l's
    `masked_softmax(scores, valid_lens)`) is judged as that helper sees this caller's product,
    and reported at the product. A helper that scales its scores only when handed a scale (`if
    exists(scale): sim = sim * scale`) is judged for each call in this file: a call that gives
    none is reported (also through a table of attention functions), and the fix passes the
    caller's attribute of the parameter's name (`scale=self.scale`) when its class defines one.

    Queries and keys made by 1x1 `nn.Conv1d` projections (`self.q_conv(x).permute(0, 2, 1)` and
    `self.k_conv(x)`, point-cloud attention) are read channels-first: `bmm(x_q, x_k)` is Q·Kᵀ.

    ## Why is this bad?
    Scaled dot-product attention is `softmax(Q Kᵀ / sqrt(d_k)) V`. Without the `1/sqrt(d_k)`
    factor the variance of the scores grows with the head dimension, the softmax saturates to
    nearly one-hot weights, and its gradients vanish. The model still trains, just worse, so
    nothing fails loudly.

    Not reported: scale applied to q or k before the product, `baddbmm(..., alpha=...)`, a scale
    inside an einsum operand, `F.scaled_dot_product_attention` (scales by default), division by a
    temperature or a learned scale, normalised (cosine) attention, projections whose weights are
    set by hand in `__init__` (a scale folded into the initialisation, as T5 does), and any path on
    which the analysis cannot see every operation. A literal multiplied into a random projection
    weight (`W_q = torch.randn(d, d) * 0.1`) is the weight's initial spread, not a scale, as it is
    in `nn.Parameter(torch.randn(d, d) * 0.02)`. When q or k is a parameter of a helper, the
    helper is reported only while no caller in the same file passes a scaled value, or one the
    analysis cannot follow.

    ## Fix safety
    The fix is unsafe: it changes every attention weight (that is the point), and a model
    trained without the scale needs retraining or a matching change to its checkpoints. The
    dimension is taken from the contracted axis of an operand, which is the per-head dimension;
    scaling by the model width in multi-head code (a fix seen in public code) would be wrong.
    The fix is offered when an operand is a plain name; otherwise the finding has no fix.
    """

    code = "ATN101"
    name = "missing-attention-scale"
    summary = "softmax over Q·Kᵀ scores with no 1/sqrt(d_k) scale"
    fix_availability = FixAvailability.SOMETIMES
    fix_applicability = Applicability.UNSAFE
    triggers = ("softmax", "Softmax")
    recipe = "missing_attention_scale"

    def check(self, ctx: RuleContext) -> None:
        seen = set()
        # A helper's softmax sees each caller's product (d2l's `masked_softmax(scores, lens)`).
        for site in ctx.analysis.softmax_sites + ctx.analysis.scores_through_helpers:
            scores = site.input.scores
            if scores is None or scores.scaled is not False or id(scores.product) in seen:
                continue
            if site.scaled_after:
                continue  # scaled, but after the softmax: a wrong scale, not a missing one
            if self._scaled_by_callers(ctx, site, scores):
                continue
            seen.add(id(scores.product))
            ctx.report(
                scores.product,
                f"attention scores `{_short(ctx.code(scores.product))}` reach softmax without a "
                "1/sqrt(d_k) scale; the softmax saturates as the head dimension grows",
                fix=scale_scores(ctx.module, scores, ctx.analysis.parent_of(scores.product), self._dropped_scale(ctx, site)),
            )
        self._helper_called_unscaled(ctx, seen)

    def _helper_called_unscaled(self, ctx: RuleContext, reported: set) -> None:
        """`attend(q, k, v, mask=mask)` of a helper that scales only when handed a scale: this
        call's scores reach the softmax unscaled. Fixed by passing the class's own scale
        attribute when the helper takes a `scale` parameter and the class defines `self.scale`."""
        for call, site in ctx.analysis.unscaled_by_calls():
            scores = site.input.scores
            if id(scores.product) in reported or id(call) in reported:
                continue
            reported.add(id(call))
            fix = None
            helper = ctx.analysis.enclosing(site.call)
            caller_class = ctx.analysis.enclosing(call, cst.ClassDef)
            owner = ctx.analysis.classes.get(caller_class.name.value) if caller_class is not None else None
            # The helper's scale parameter (`scale`, `scaling`, `softmax_scale`) and the class's
            # attribute of that name.
            named = [n for n in _SCALE_PARAMETERS if ctx.analysis.takes_keyword(call, helper, n)]
            if len(named) == 1 and owner is not None and named[0] in owner.attrs:
                name = named[0]
                fix = set_keyword(call, name, f"self.{name}", f"Pass `{name}=self.{name}`")
            ctx.report(
                call,
                f"`{ctx.code(call.func)}` scales its scores only when given a scale, and this call gives "
                f"none: `{_short(ctx.code(scores.product))}` reaches softmax without a 1/sqrt(d_k) scale",
                fix=fix,
            )

    @staticmethod
    def _dropped_scale(ctx: RuleContext, site) -> Optional[str]:
        """The one scale parameter the function was handed and never read: the fix applies it."""
        function = ctx.analysis.function_of(site)
        dropped = ctx.analysis.dropped_scale_parameters(function) if function is not None else []
        return dropped[0] if len(dropped) == 1 else None

    @staticmethod
    def _scaled_by_callers(ctx: RuleContext, site, scores) -> bool:
        """q or k is a parameter and some caller in this file passes a scaled (or unknown) value:
        the helper computes attention on inputs someone else scales."""
        function = ctx.analysis.function_of(site)
        if function is None:
            return False
        # Handed a scale and dropped it: only inputs shown to be scaled already excuse that.
        dropped_scale = bool(ctx.analysis.dropped_scale_parameters(function))
        for param in scores.operand_params:
            for value in ctx.analysis.arguments_for(function, param):
                if value.scaled is True or (value.scaled is None and not dropped_scale):
                    return True
        return False

    VALID = [
        # The same helper, handed the module's scale.
        Valid(
            """
            import torch
            from torch import einsum


            def exists(val):
                return val is not None


            def attend(q, k, v, mask=None, scale=None):
                sim = einsum("b h i d, b h j d -> b h i j", q, k)
                if exists(scale):
                    sim = sim * scale
                attn = sim.softmax(dim=-1)
                return einsum("b h i j, b h j d -> b h i d", attn, v)


            class Attention(torch.nn.Module):
                def __init__(self, dim, heads=8, dim_head=64):
                    super().__init__()
                    self.scale = dim_head ** -0.5
                    self.heads = heads
                    self.to_q = torch.nn.Linear(dim, heads * dim_head)
                    self.to_k = torch.nn.Linear(dim, heads * dim_head)
                    self.to_v = torch.nn.Linear(dim, heads * dim_head)

                def forward(self, x):
                    b, n, _ = x.shape
                    q, k, v = (f(x).view(b, n, self.heads, -1).transpose(1, 2) for f in (self.to_q, self.to_k, self.to_v))
                    return attend(q, k, v, scale=self.scale)
            """
        ),
        # The projections are copies of a layer handed in from outside (it may scale what it
        # returns): the helper's q and k are unknown, silent.
        Valid(
            """
            import copy
            import torch
            import torch.nn as nn


            def attend(q, k, v):
                return torch.softmax(q @ k.transpose(-2, -1), dim=-1) @ v


            class Heads(nn.Module):
                def __init__(self, proj, n=3):
                    super().__init__()
                    self.projs = nn.ModuleList(copy.deepcopy(proj) for _ in range(n))

                def forward(self, x):
                    q, k, v = [p(x) for p in self.projs]
                    return attend(q, k, v)
            """
        ),
        # A decoding step that extends the cached keys with the new ones, and scales the scores
        # after the concatenation: scaled.
        Valid(
            """
            import torch
            import torch.nn as nn


            class CachedSelfAttention(nn.Module):
                def __init__(self, width):
                    super().__init__()
                    self.q = nn.Linear(width, width)
                    self.k = nn.Linear(width, width)
                    self.v = nn.Linear(width, width)

                def forward(self, h, past=None):
                    q, k, v = self.q(h), self.k(h), self.v(h)
                    if past is not None:
                        k = torch.cat((past["k"], k), dim=-2)
                        v = torch.cat((past["v"], v), dim=-2)
                    logits = q @ k.transpose(-2, -1) / k.size(-1) ** 0.5
                    return logits.softmax(dim=-1) @ v, {"k": k, "v": v}

            layer = CachedSelfAttention(32)


            def extend(h, past):
                # The serving code hands the cache in: what it holds is not known here.
                return layer(h, past=past)
            """
        ),
        # The stored keys come out of a helper the analysis does not follow (it may scale them):
        # unknown, silent.
        Valid(
            """
            import torch
            import torch.nn as nn


            class CompressedMemory(nn.Module):
                def __init__(self, width):
                    super().__init__()
                    self.q = nn.Linear(width, width)
                    self.k = nn.Linear(width, width)

                def forward(self, h, memory):
                    k = torch.cat((self.compress(memory), self.k(h)), dim=1)
                    return torch.softmax(self.q(h) @ k.transpose(1, 2), dim=-1)
            """
        ),
        # The same projection with the scale folded into the weight's initialisation (another
        # method sets it with a number made of sizes): the scale is unknown.
        Valid(
            """
            import torch
            import torch.nn as nn


            class FusedHeads(nn.Module):
                def __init__(self, width, heads):
                    super().__init__()
                    self.head_width = width // heads
                    self.w_qkv = nn.Parameter(torch.empty(3, width, heads, self.head_width))
                    self.reset_parameters(width)

                def reset_parameters(self, width):
                    # The query scale is folded into the initialisation (T5-style).
                    nn.init.normal_(self.w_qkv, std=(width * self.head_width) ** -0.5)

                def forward(self, x):
                    q, k, v = torch.einsum("bnd,tdhe->tbhne", x, self.w_qkv)
                    logits = torch.einsum("bhie,bhje->bhij", q, k)
                    weights = logits.softmax(dim=-1)
                    return torch.einsum("bhij,bhje->bhie", weights, v)
            """
        ),
        # The same product scaled (the reshape is ATN106's to report).
        Valid(
            """
            import torch
            import torch.nn as nn


            class SingleHead(nn.Module):
                def __init__(self, width):
                    super().__init__()
                    self.to_q = nn.Linear(width, width)
                    self.to_k = nn.Linear(width, width)
                    self.to_v = nn.Linear(width, width)

                def forward(self, tokens):
                    b, n, d = tokens.shape
                    keys_t = self.to_k(tokens).reshape(b, d, n)
                    affinity = torch.bmm(self.to_q(tokens), keys_t) / d ** 0.5
                    return torch.bmm(affinity.softmax(dim=-1), self.to_v(tokens))
            """
        ),
        # Notebook-style single head with plain weight tensors, scaled by the model width (one head).
        Valid(
            """
            import torch

            seq_len, d_model = 6, 12
            embeddings = torch.randn(seq_len, d_model)
            w_query = torch.randn(d_model, d_model)
            w_key = torch.randn(d_model, d_model)
            w_value = torch.randn(d_model, d_model)

            query = embeddings @ w_query
            key = embeddings @ w_key
            value = embeddings @ w_value
            scores = torch.matmul(query, key.T)
            weights = (scores / d_model ** 0.5).softmax(dim=-1)
            context = weights @ value
            """
        ),
        # Scaled after the softmax: a wrong scale (ATN104's), not a missing one.
        Valid(
            """
            import math
            import torch


            def attend(query, key, value):
                scores = torch.matmul(query, key.transpose(-2, -1))
                weights = torch.softmax(scores, dim=-1) / math.sqrt(query.size(-1))
                return weights @ value
            """
        ),
        # GPT-Neo style: q/k come through helpers we do not follow (`_split_heads`): unknown, silent.
        Valid(
            """
            import torch
            import torch.nn as nn
            class SelfAttention(nn.Module):
                def _attn(self, query, key, value):
                    attn_weights = torch.matmul(query, key.transpose(-1, -2))
                    attn_weights = nn.functional.softmax(attn_weights, dim=-1)
                    return torch.matmul(attn_weights, value)
                def forward(self, hidden_states):
                    query = self._split_heads(self.q_proj(hidden_states))
                    key = self._split_heads(self.k_proj(hidden_states))
                    value = self._split_heads(self.v_proj(hidden_states))
                    return self._attn(query, key, value)
            """
        ),
        # A helper whose caller scales q first.
        Valid(
            """
            import torch


            def _attend(q, k, v):
                return torch.softmax(q @ k.transpose(-2, -1), dim=-1) @ v


            def forward(q, k, v):
                q = q * q.shape[-1] ** -0.5
                return _attend(q, k, v)
            """
        ),
        # T5-style: the scale is folded into the projection's initialisation.
        Valid(
            """
            import torch
            import torch.nn as nn


            class T5Attention(nn.Module):
                def __init__(self, d_model, d_kv):
                    super().__init__()
                    self.q = nn.Linear(d_model, d_kv, bias=False)
                    self.k = nn.Linear(d_model, d_kv, bias=False)
                    nn.init.normal_(self.q.weight, std=(d_model * d_kv) ** -0.5)

                def forward(self, x, position_bias):
                    scores = torch.matmul(self.q(x), self.k(x).transpose(-1, -2)) + position_bias
                    return scores.softmax(dim=-1)
            """
        ),
        # nanoGPT: scale on the product.
        Valid(
            """
            import math
            import torch.nn.functional as F
            def forward(self, x):
                B, T, C = x.size()
                q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
                k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
                att = F.softmax(att, dim=-1)
                return att
            """
        ),
        # Course notes: scale inside the softmax call.
        Valid(
            """
            import torch
            def forward(self, x):
                queries = self.W_q(x)
                keys = self.W_k(x)
                attn_scores = queries @ keys.transpose(-2, -1)
                return torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
            """
        ),
        # timm: pre-scaled queries.
        Valid(
            """
            def forward(self, x):
                B, N, C = x.shape
                qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
                q, k, v = qkv.unbind(0)
                q = q * self.scale
                attn = q @ k.transpose(-2, -1)
                attn = attn.softmax(dim=-1)
                return attn @ v
            """
        ),
        # baddbmm with alpha (Megatron / BLOOM style).
        Valid(
            """
            import torch
            def forward(self, query, key, bias, inv_norm):
                scores = torch.baddbmm(bias, query, key.transpose(1, 2), beta=1.0, alpha=inv_norm)
                return torch.softmax(scores, dim=-1)
            """
        ),
        # Scale folded into an einsum operand.
        Valid(
            """
            import torch
            def forward(self, q, k, v):
                scores = torch.einsum("bhid,bhjd->bhij", q * self.scale, k)
                return scores.softmax(dim=-1)
            """
        ),
        # SDPA scales by default.
        Valid(
            """
            import torch.nn.functional as F
            def forward(self, q, k, v):
                return F.scaled_dot_product_attention(q, k, v, is_causal=True)
            """
        ),
        # A temperature.
        Valid(
            """
            import torch
            def forward(self, q, k):
                logits = torch.matmul(q, k.transpose(-1, -2)) / self.temperature
                return logits.softmax(-1)
            """
        ),
        # A learned scale, applied in place.
        Valid(
            """
            def forward(self, q, k):
                sim = q @ k.transpose(-2, -1)
                sim *= self.logit_scale.exp()
                return sim.softmax(dim=-1)
            """
        ),
        # Cosine attention: normalised q and k with a fixed multiplier.
        Valid(
            """
            import torch.nn.functional as F
            def forward(self, q, k, v):
                q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
                sim = (q @ k.transpose(-2, -1)) * 10
                return sim.softmax(dim=-1) @ v
            """
        ),
        # Scaling decided at run time: scaled on one path, unknown overall; stay silent.
        Valid(
            """
            import torch
            def _attn(self, query, key, value):
                attn_weights = torch.matmul(query, key.transpose(-1, -2))
                if self.scale_attn_weights:
                    attn_weights = attn_weights / torch.full([], value.size(-1) ** 0.5)
                return torch.softmax(attn_weights, dim=-1)
            """
        ),
        # Keys pre-scaled in a helper whose effect we cannot see.
        Valid(
            """
            def forward(self, x):
                q = self.q_proj(x)
                k = scale_keys(self.k_proj(x))
                return (q @ k.transpose(-2, -1)).softmax(-1)
            """
        ),
        # Not attention: a classifier over tied embeddings.
        Valid(
            """
            import torch
            def forward(self, hidden):
                logits = hidden @ self.embed.weight.T
                return torch.softmax(logits, dim=-1)
            """
        ),
        # Not attention: a self-similarity with no query/key roles (the notes' first example).
        Valid(
            """
            import torch
            inputs = torch.randn(3, 6)
            attn_scores = inputs @ inputs.T
            attn_weights = torch.softmax(attn_scores, dim=-1)
            """
        ),
        # torch.mul with the scale.
        Valid(
            """
            import torch
            def forward(self, q, k):
                s = torch.mul(torch.matmul(q, k.transpose(-2, -1)), self.scaling)
                return s.softmax(-1)
            """
        ),
        # q scaled in the projection line (BART style).
        Valid(
            """
            import torch
            def forward(self, hidden_states):
                query_states = self.q_proj(hidden_states) * self.scaling
                key_states = self.k_proj(hidden_states)
                attn_weights = torch.bmm(query_states, key_states.transpose(1, 2))
                return torch.softmax(attn_weights, dim=-1)
            """
        ),
        # In-place division of the scores.
        Valid(
            """
            def forward(self, q, k):
                scores = q.matmul(k.transpose(-2, -1))
                scores.div_(self.head_dim ** 0.5)
                return scores.softmax(dim=-1)
            """
        ),
        # lucidrains-style einops attention scaled by `dim_head ** -0.5`.
        Valid(
            """
            import torch
            from torch import nn
            from einops import rearrange, einsum


            class Attention(nn.Module):
                def __init__(self, dim, heads=8, dim_head=64):
                    super().__init__()
                    self.heads = heads
                    self.scale = dim_head ** -0.5
                    self.to_qkv = nn.Linear(dim, dim_head * heads * 3, bias=False)

                def forward(self, x):
                    q, k, v = self.to_qkv(x).chunk(3, dim=-1)
                    q, k, v = map(lambda t: rearrange(t, "b n (h d) -> b h n d", h=self.heads), (q, k, v))
                    sim = einsum(q, k, "b h i d, b h j d -> b h i j") * self.scale
                    attn = sim.softmax(dim=-1)
                    return einsum(attn, v, "b h i j, b h j d -> b h i d")
            """
        ),
        # HF eager attention function: the caller passes `scaling = head_dim ** -0.5`.
        Valid(
            """
            import torch
            from torch import nn


            def eager_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0):
                attn_weights = torch.matmul(query, key.transpose(2, 3)) * scaling
                if attention_mask is not None:
                    attn_weights = attn_weights + attention_mask
                attn_weights = nn.functional.softmax(attn_weights, dim=-1)
                return torch.matmul(attn_weights, value), attn_weights


            class Attention(nn.Module):
                def __init__(self, hidden_size, num_heads):
                    super().__init__()
                    self.head_dim = hidden_size // num_heads
                    self.scaling = self.head_dim ** -0.5
                    self.q_proj = nn.Linear(hidden_size, hidden_size)
                    self.k_proj = nn.Linear(hidden_size, hidden_size)
                    self.v_proj = nn.Linear(hidden_size, hidden_size)

                def forward(self, hidden_states, attention_mask=None):
                    shape = (*hidden_states.shape[:-1], -1, self.head_dim)
                    q = self.q_proj(hidden_states).view(shape).transpose(1, 2)
                    k = self.k_proj(hidden_states).view(shape).transpose(1, 2)
                    v = self.v_proj(hidden_states).view(shape).transpose(1, 2)
                    return eager_attention_forward(self, q, k, v, attention_mask, self.scaling)
            """
        ),
        # Random queries themselves multiplied by a number (not a weight's initial spread): the
        # queries are scaled.
        Valid(
            """
            import torch

            q = torch.randn(2, 6, 64) * 0.125
            k = torch.randn(2, 6, 64)
            v = torch.randn(2, 6, 64)
            out = torch.softmax(q @ k.transpose(-2, -1), dim=-1) @ v
            """
        ),
        # Learned queries against projected keys, scaled before the softmax.
        Valid(
            """
            import torch
            import torch.nn as nn


            class SlotReadout(nn.Module):
                def __init__(self, width, slots=4):
                    super().__init__()
                    self.slot_query = nn.Parameter(torch.zeros(slots, width))
                    self.key_proj = nn.Linear(width, width)
                    self.scale = width ** -0.5

                def forward(self, h):
                    key = self.key_proj(h)
                    logits = torch.einsum("sd,bnd->bsn", self.slot_query, key) * self.scale
                    return logits.softmax(-1)
            """
        ),
        # The caller folds the scale into the query and hands the helper `scaling=1.0`, which
        # the helper may ignore: nothing is dropped.
        Valid(
            """
            import torch
            import torch.nn as nn


            def eager_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0):
                attn_weights = torch.matmul(query, key.transpose(2, 3))
                if attention_mask is not None:
                    attn_weights = attn_weights + attention_mask
                attn_weights = nn.functional.softmax(attn_weights, dim=-1)
                return torch.matmul(attn_weights, value)


            class Attention(nn.Module):
                def __init__(self, hidden_size, num_heads):
                    super().__init__()
                    self.head_dim = hidden_size // num_heads
                    self.scaling = self.head_dim**-0.5
                    self.q_proj = nn.Linear(hidden_size, hidden_size)
                    self.k_proj = nn.Linear(hidden_size, hidden_size)
                    self.v_proj = nn.Linear(hidden_size, hidden_size)

                def forward(self, hidden_states, attention_mask=None):
                    shape = (*hidden_states.shape[:-1], -1, self.head_dim)
                    query = (self.q_proj(hidden_states) * self.scaling).view(shape).transpose(1, 2)
                    key = self.k_proj(hidden_states).view(shape).transpose(1, 2)
                    value = self.v_proj(hidden_states).view(shape).transpose(1, 2)
                    return eager_attention_forward(self, query, key, value, attention_mask, scaling=1.0)
            """
        ),
    ]

    INVALID = [
        # An HF-style eager kernel that scales only when given `scaling`, called through the
        # table of attention functions without it: the class's `self.scaling` is never used.
        Invalid(
            """
            import torch
            import torch.nn as nn


            def eager_attention_forward(module, query, key, value, attention_mask, scaling=None, dropout=0.0):
                attn_weights = torch.matmul(query, key.transpose(2, 3))
                if scaling is not None:
                    attn_weights = attn_weights * scaling
                if attention_mask is not None:
                    attn_weights = attn_weights + attention_mask
                attn_weights = nn.functional.softmax(attn_weights, dim=-1)
                return torch.matmul(attn_weights, value).transpose(1, 2), attn_weights


            ALL_ATTENTION_FUNCTIONS = {"eager": eager_attention_forward}


            class TinyAttention(nn.Module):
                def __init__(self, config):
                    super().__init__()
                    self.config = config
                    self.head_dim = config.hidden_size // config.num_attention_heads
                    self.scaling = self.head_dim ** -0.5
                    self.q_proj = nn.Linear(config.hidden_size, config.hidden_size)
                    self.k_proj = nn.Linear(config.hidden_size, config.hidden_size)
                    self.v_proj = nn.Linear(config.hidden_size, config.hidden_size)

                def forward(self, hidden_states, attention_mask=None):
                    input_shape = hidden_states.shape[:-1]
                    hidden_shape = (*input_shape, -1, self.head_dim)
                    q = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
                    k = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
                    v = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
                    attention_interface = ALL_ATTENTION_FUNCTIONS[self.config.attn_implementation]
                    out, weights = attention_interface(self, q, k, v, attention_mask)
                    return out.reshape(*input_shape, -1), weights
            """,
            fixed="""
            import torch
            import torch.nn as nn


            def eager_attention_forward(module, query, key, value, attention_mask, scaling=None, dropout=0.0):
                attn_weights = torch.matmul(query, key.transpose(2, 3))
                if scaling is not None:
                    attn_weights = attn_weights * scaling
                if attention_mask is not None:
                    attn_weights = attn_weights + attention_mask
                attn_weights = nn.functional.softmax(attn_weights, dim=-1)
                return torch.matmul(attn_weights, value).transpose(1, 2), attn_weights


            ALL_ATTENTION_FUNCTIONS = {"eager": eager_attention_forward}


            class TinyAttention(nn.Module):
                def __init__(self, config):
                    super().__init__()
                    self.config = config
                    self.head_dim = config.hidden_size // config.num_attention_heads
                    self.scaling = self.head_dim ** -0.5
                    self.q_proj = nn.Linear(config.hidden_size, config.hidden_size)
                    self.k_proj = nn.Linear(config.hidden_size, config.hidden_size)
                    self.v_proj = nn.Linear(config.hidden_size, config.hidden_size)

                def forward(self, hidden_states, attention_mask=None):
                    input_shape = hidden_states.shape[:-1]
                    hidden_shape = (*input_shape, -1, self.head_dim)
                    q = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
                    k = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
                    v = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
                    attention_interface = ALL_ATTENTION_FUNCTIONS[self.config.attn_implementation]
                    out, weights = attention_interface(self, q, k, v, attention_mask, scaling=self.scaling)
                    return out.reshape(*input_shape, -1), weights
            """,
        ),
        # A lucidrains-style `attend` helper scales only when handed a scale; the module defines
        # `self.scale` and calls it without: its scores reach the softmax unscaled.
        Invalid(
            """
            import torch
            from torch import einsum


            def exists(val):
                return val is not None


            def attend(q, k, v, mask=None, scale=None):
                sim = einsum("b h i d, b h j d -> b h i j", q, k)
                if exists(scale):
                    sim = sim * scale
                attn = sim.softmax(dim=-1)
                return einsum("b h i j, b h j d -> b h i d", attn, v)


            class Attention(torch.nn.Module):
                def __init__(self, dim, heads=8, dim_head=64):
                    super().__init__()
                    self.scale = dim_head ** -0.5
                    self.heads = heads
                    self.to_q = torch.nn.Linear(dim, heads * dim_head)
                    self.to_k = torch.nn.Linear(dim, heads * dim_head)
                    self.to_v = torch.nn.Linear(dim, heads * dim_head)

                def forward(self, x):
                    b, n, _ = x.shape
                    q, k, v = (f(x).view(b, n, self.heads, -1).transpose(1, 2) for f in (self.to_q, self.to_k, self.to_v))
                    return attend(q, k, v)
            """,
            fixed="""
            import torch
            from torch import einsum


            def exists(val):
                return val is not None


            def attend(q, k, v, mask=None, scale=None):
                sim = einsum("b h i d, b h j d -> b h i j", q, k)
                if exists(scale):
                    sim = sim * scale
                attn = sim.softmax(dim=-1)
                return einsum("b h i j, b h j d -> b h i d", attn, v)


            class Attention(torch.nn.Module):
                def __init__(self, dim, heads=8, dim_head=64):
                    super().__init__()
                    self.scale = dim_head ** -0.5
                    self.heads = heads
                    self.to_q = torch.nn.Linear(dim, heads * dim_head)
                    self.to_k = torch.nn.Linear(dim, heads * dim_head)
                    self.to_v = torch.nn.Linear(dim, heads * dim_head)

                def forward(self, x):
                    b, n, _ = x.shape
                    q, k, v = (f(x).view(b, n, self.heads, -1).transpose(1, 2) for f in (self.to_q, self.to_k, self.to_v))
                    return attend(q, k, v, scale=self.scale)
            """,
        ),
        # SASRec's multi-head attention: heads split with `torch.chunk` and stacked on the batch
        # axis by `torch.cat`, then a helper's `bmm` with no scale.
        Invalid(
            """
            import torch
            import torch.nn as nn


            class MultiHead(nn.Module):
                def __init__(self, hidden_units, num_heads):
                    super().__init__()
                    self.num_heads = num_heads
                    self.W_q = nn.Linear(hidden_units, hidden_units)
                    self.W_k = nn.Linear(hidden_units, hidden_units)
                    self.W_v = nn.Linear(hidden_units, hidden_units)

                def _split(self, x):
                    return torch.cat(torch.chunk(x, self.num_heads, dim=2), dim=0)

                def _attend(self, Q_, K_, V_):
                    outputs = torch.bmm(Q_, K_.transpose(1, 2))
                    return torch.bmm(torch.softmax(outputs, dim=-1), V_)

                def forward(self, x):
                    Q_, K_, V_ = self._split(self.W_q(x)), self._split(self.W_k(x)), self._split(self.W_v(x))
                    out = self._attend(Q_, K_, V_)
                    return torch.cat(torch.chunk(out, self.num_heads, dim=0), dim=2)
            """,
            fixed="""
            import torch
            import torch.nn as nn


            class MultiHead(nn.Module):
                def __init__(self, hidden_units, num_heads):
                    super().__init__()
                    self.num_heads = num_heads
                    self.W_q = nn.Linear(hidden_units, hidden_units)
                    self.W_k = nn.Linear(hidden_units, hidden_units)
                    self.W_v = nn.Linear(hidden_units, hidden_units)

                def _split(self, x):
                    return torch.cat(torch.chunk(x, self.num_heads, dim=2), dim=0)

                def _attend(self, Q_, K_, V_):
                    outputs = torch.bmm(Q_, K_.transpose(1, 2)) * Q_.shape[-1] ** -0.5
                    return torch.bmm(torch.softmax(outputs, dim=-1), V_)

                def forward(self, x):
                    Q_, K_, V_ = self._split(self.W_q(x)), self._split(self.W_k(x)), self._split(self.W_v(x))
                    out = self._attend(Q_, K_, V_)
                    return torch.cat(torch.chunk(out, self.num_heads, dim=0), dim=2)
            """,
        ),
        # Point-cloud attention with 1x1 Conv1d projections: keys come out (batch, channels,
        # points), already laid out as Kᵀ for `bmm`; the queries are permuted to channels last.
        Invalid(
            """
            import torch
            import torch.nn as nn


            class SelfAttentionLayer(nn.Module):
                def __init__(self, channels):
                    super().__init__()
                    self.q_conv = nn.Conv1d(channels, channels // 4, 1, bias=False)
                    self.k_conv = nn.Conv1d(channels, channels // 4, 1, bias=False)
                    self.v_conv = nn.Conv1d(channels, channels, 1)
                    self.softmax = nn.Softmax(dim=-1)

                def forward(self, x):
                    x_q = self.q_conv(x).permute(0, 2, 1)
                    x_k = self.k_conv(x)
                    x_v = self.v_conv(x)
                    energy = torch.bmm(x_q, x_k)
                    attention = self.softmax(energy)
                    return torch.bmm(x_v, attention.permute(0, 2, 1))
            """,
            fixed="""
            import torch
            import torch.nn as nn


            class SelfAttentionLayer(nn.Module):
                def __init__(self, channels):
                    super().__init__()
                    self.q_conv = nn.Conv1d(channels, channels // 4, 1, bias=False)
                    self.k_conv = nn.Conv1d(channels, channels // 4, 1, bias=False)
                    self.v_conv = nn.Conv1d(channels, channels, 1)
                    self.softmax = nn.Softmax(dim=-1)

                def forward(self, x):
                    x_q = self.q_conv(x).permute(0, 2, 1)
                    x_k = self.k_conv(x)
                    x_v = self.v_conv(x)
                    energy = torch.bmm(x_q, x_k) * x_q.shape[-1] ** -0.5
                    attention = self.softmax(energy)
                    return torch.bmm(x_v, attention.permute(0, 2, 1))
            """,
            line=17,
        ),
        # The Hugging Face helper is handed `scaling` and never applies it: whatever the caller
        # does to q and k on the way (rotary embeddings, a cache), the scores go unscaled. The
        # fix applies the scale the helper was given.
        Invalid(
            """
            import torch
            import torch.nn as nn


            def eager_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0):
                attn_weights = torch.matmul(query, key.transpose(2, 3))
                if attention_mask is not None:
                    attn_weights = attn_weights + attention_mask
                attn_weights = nn.functional.softmax(attn_weights, dim=-1)
                return torch.matmul(attn_weights, value)


            class Attention(nn.Module):
                def __init__(self, hidden_size, num_heads):
                    super().__init__()
                    self.head_dim = hidden_size // num_heads
                    self.scaling = self.head_dim**-0.5
                    self.q_proj = nn.Linear(hidden_size, hidden_size)
                    self.k_proj = nn.Linear(hidden_size, hidden_size)
                    self.v_proj = nn.Linear(hidden_size, hidden_size)

                def forward(self, hidden_states, cos, sin, attention_mask=None):
                    shape = (*hidden_states.shape[:-1], -1, self.head_dim)
                    query = self.q_proj(hidden_states).view(shape).transpose(1, 2)
                    key = self.k_proj(hidden_states).view(shape).transpose(1, 2)
                    value = self.v_proj(hidden_states).view(shape).transpose(1, 2)
                    query, key = query * cos + rotate(query) * sin, key * cos + rotate(key) * sin
                    return eager_attention_forward(self, query, key, value, attention_mask, scaling=self.scaling)
            """,
            fixed="""
            import torch
            import torch.nn as nn


            def eager_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0):
                attn_weights = torch.matmul(query, key.transpose(2, 3)) * scaling
                if attention_mask is not None:
                    attn_weights = attn_weights + attention_mask
                attn_weights = nn.functional.softmax(attn_weights, dim=-1)
                return torch.matmul(attn_weights, value)


            class Attention(nn.Module):
                def __init__(self, hidden_size, num_heads):
                    super().__init__()
                    self.head_dim = hidden_size // num_heads
                    self.scaling = self.head_dim**-0.5
                    self.q_proj = nn.Linear(hidden_size, hidden_size)
                    self.k_proj = nn.Linear(hidden_size, hidden_size)
                    self.v_proj = nn.Linear(hidden_size, hidden_size)

                def forward(self, hidden_states, cos, sin, attention_mask=None):
                    shape = (*hidden_states.shape[:-1], -1, self.head_dim)
                    query = self.q_proj(hidden_states).view(shape).transpose(1, 2)
                    key = self.k_proj(hidden_states).view(shape).transpose(1, 2)
                    value = self.v_proj(hidden_states).view(shape).transpose(1, 2)
                    query, key = query * cos + rotate(query) * sin, key * cos + rotate(key) * sin
                    return eager_attention_forward(self, query, key, value, attention_mask, scaling=self.scaling)
            """,
        ),
        # A module-level helper fed by projections that are deep copies of one nn.Linear (the
        # Annotated Transformer's `clones`): a copy is a Linear like the original, so the
        # helper's q and k are plain projections, and nothing scales them.
        Invalid(
            """
            import copy
            import torch
            import torch.nn as nn


            def replicate(layer, n):
                return nn.ModuleList([copy.deepcopy(layer) for _ in range(n)])


            def attend(q, k, v):
                return torch.softmax(q @ k.transpose(-2, -1), dim=-1) @ v


            class Heads(nn.Module):
                def __init__(self, width, heads):
                    super().__init__()
                    self.heads, self.d = heads, width // heads
                    self.projs = replicate(nn.Linear(width, width), 3)

                def forward(self, q, k, v):
                    b = q.size(0)
                    q, k, v = [
                        p(t).view(b, -1, self.heads, self.d).transpose(1, 2) for p, t in zip(self.projs, (q, k, v))
                    ]
                    return attend(q, k, v)
            """,
            fixed="""
            import copy
            import torch
            import torch.nn as nn


            def replicate(layer, n):
                return nn.ModuleList([copy.deepcopy(layer) for _ in range(n)])


            def attend(q, k, v):
                return torch.softmax((q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5, dim=-1) @ v


            class Heads(nn.Module):
                def __init__(self, width, heads):
                    super().__init__()
                    self.heads, self.d = heads, width // heads
                    self.projs = replicate(nn.Linear(width, width), 3)

                def forward(self, q, k, v):
                    b = q.size(0)
                    q, k, v = [
                        p(t).view(b, -1, self.heads, self.d).transpose(1, 2) for p, t in zip(self.projs, (q, k, v))
                    ]
                    return attend(q, k, v)
            """,
        ),
        # A decoding step with a key cache: the cached rows are earlier outputs of the same
        # projection, so the joined keys are as unscaled as the new ones, and no scale follows.
        Invalid(
            """
            import torch
            import torch.nn as nn


            class CachedSelfAttention(nn.Module):
                def __init__(self, width):
                    super().__init__()
                    self.q = nn.Linear(width, width)
                    self.k = nn.Linear(width, width)
                    self.v = nn.Linear(width, width)

                def forward(self, h, past=None):
                    q, k, v = self.q(h), self.k(h), self.v(h)
                    if past is not None:
                        k = torch.cat((past["k"], k), dim=-2)
                        v = torch.cat((past["v"], v), dim=-2)
                    logits = q @ k.transpose(-2, -1)
                    return logits.softmax(dim=-1) @ v, {"k": k, "v": v}

            layer = CachedSelfAttention(32)


            def extend(h, past):
                # The serving code hands the cache in: what it holds is not known here.
                return layer(h, past=past)
            """,
            fixed="""
            import torch
            import torch.nn as nn


            class CachedSelfAttention(nn.Module):
                def __init__(self, width):
                    super().__init__()
                    self.q = nn.Linear(width, width)
                    self.k = nn.Linear(width, width)
                    self.v = nn.Linear(width, width)

                def forward(self, h, past=None):
                    q, k, v = self.q(h), self.k(h), self.v(h)
                    if past is not None:
                        k = torch.cat((past["k"], k), dim=-2)
                        v = torch.cat((past["v"], v), dim=-2)
                    logits = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
                    return logits.softmax(dim=-1) @ v, {"k": k, "v": v}

            layer = CachedSelfAttention(32)


            def extend(h, past):
                # The serving code hands the cache in: what it holds is not known here.
                return layer(h, past=past)
            """,
        ),
        # q, k, v projected by an einsum with a learned weight named for its role (initialised
        # with no number folded in): the scores are never scaled.
        Invalid(
            """
            import torch
            import torch.nn as nn


            class FusedHeads(nn.Module):
                def __init__(self, width, heads):
                    super().__init__()
                    self.head_width = width // heads
                    self.w_qkv = nn.Parameter(torch.empty(3, width, heads, self.head_width))
                    nn.init.xavier_uniform_(self.w_qkv)

                def forward(self, x):
                    q, k, v = torch.einsum("bnd,tdhe->tbhne", x, self.w_qkv)
                    logits = torch.einsum("bhie,bhje->bhij", q, k)
                    weights = logits.softmax(dim=-1)
                    return torch.einsum("bhij,bhje->bhie", weights, v)
            """,
            fixed="""
            import torch
            import torch.nn as nn


            class FusedHeads(nn.Module):
                def __init__(self, width, heads):
                    super().__init__()
                    self.head_width = width // heads
                    self.w_qkv = nn.Parameter(torch.empty(3, width, heads, self.head_width))
                    nn.init.xavier_uniform_(self.w_qkv)

                def forward(self, x):
                    q, k, v = torch.einsum("bnd,tdhe->tbhne", x, self.w_qkv)
                    logits = torch.einsum("bhie,bhje->bhij", q, k) * self.head_width ** -0.5
                    weights = logits.softmax(dim=-1)
                    return torch.einsum("bhij,bhje->bhie", weights, v)
            """,
            line=14,
        ),
        # The keys "transposed" by a reshape (ATN106 reports the reshape): the product is still
        # the Q·Kᵀ the code means, and it is never scaled.
        Invalid(
            """
            import torch
            import torch.nn as nn


            class SingleHead(nn.Module):
                def __init__(self, width):
                    super().__init__()
                    self.to_q = nn.Linear(width, width)
                    self.to_k = nn.Linear(width, width)
                    self.to_v = nn.Linear(width, width)

                def forward(self, tokens):
                    b, n, d = tokens.shape
                    keys_t = self.to_k(tokens).reshape(b, d, n)
                    affinity = torch.bmm(self.to_q(tokens), keys_t)
                    return torch.bmm(affinity.softmax(dim=-1), self.to_v(tokens))
            """,
            fixed="""
            import torch
            import torch.nn as nn


            class SingleHead(nn.Module):
                def __init__(self, width):
                    super().__init__()
                    self.to_q = nn.Linear(width, width)
                    self.to_k = nn.Linear(width, width)
                    self.to_v = nn.Linear(width, width)

                def forward(self, tokens):
                    b, n, d = tokens.shape
                    keys_t = self.to_k(tokens).reshape(b, d, n)
                    affinity = torch.bmm(self.to_q(tokens), keys_t) * d ** -0.5
                    return torch.bmm(affinity.softmax(dim=-1), self.to_v(tokens))
            """,
            line=15,
        ),
        # Module-level code with plain weight tensors: nothing scales the product.
        Invalid(
            """
            import torch

            seq_len, d_model = 6, 12
            embeddings = torch.randn(seq_len, d_model)
            w_query = torch.randn(d_model, d_model)
            w_key = torch.randn(d_model, d_model)
            w_value = torch.randn(d_model, d_model)

            query = embeddings @ w_query
            key = embeddings @ w_key
            value = embeddings @ w_value
            scores = torch.matmul(query, key.T)
            weights = scores.softmax(dim=-1)
            context = weights @ value
            """,
            fixed="""
            import torch

            seq_len, d_model = 6, 12
            embeddings = torch.randn(seq_len, d_model)
            w_query = torch.randn(d_model, d_model)
            w_key = torch.randn(d_model, d_model)
            w_value = torch.randn(d_model, d_model)

            query = embeddings @ w_query
            key = embeddings @ w_key
            value = embeddings @ w_value
            scores = torch.matmul(query, key.T) * query.shape[-1] ** -0.5
            weights = scores.softmax(dim=-1)
            context = weights @ value
            """,
        ),
        # q, k, v unpacked from a permuted fused projection, then bmm.
        Invalid(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F


            class MHA(nn.Module):
                def __init__(self, dim, heads):
                    super().__init__()
                    self.h = heads
                    self.qkv = nn.Linear(dim, 3 * dim)

                def forward(self, x):
                    B, N, C = x.shape
                    q, k, v = self.qkv(x).reshape(B, N, 3, self.h, C // self.h).permute(2, 0, 3, 1, 4)
                    q = q.reshape(B * self.h, N, -1)
                    k = k.reshape(B * self.h, N, -1)
                    v = v.reshape(B * self.h, N, -1)
                    w = F.softmax(torch.bmm(q, k.transpose(1, 2)), dim=-1)
                    return torch.bmm(w, v).view(B, self.h, N, -1)
            """,
            fixed="""
            import torch
            import torch.nn as nn
            import torch.nn.functional as F


            class MHA(nn.Module):
                def __init__(self, dim, heads):
                    super().__init__()
                    self.h = heads
                    self.qkv = nn.Linear(dim, 3 * dim)

                def forward(self, x):
                    B, N, C = x.shape
                    q, k, v = self.qkv(x).reshape(B, N, 3, self.h, C // self.h).permute(2, 0, 3, 1, 4)
                    q = q.reshape(B * self.h, N, -1)
                    k = k.reshape(B * self.h, N, -1)
                    v = v.reshape(B * self.h, N, -1)
                    w = F.softmax(torch.bmm(q, k.transpose(1, 2)) * q.shape[-1] ** -0.5, dim=-1)
                    return torch.bmm(w, v).view(B, self.h, N, -1)
            """,
        ),
        # A helper whose callers pass plain projections.
        Invalid(
            """
            import torch
            import torch.nn as nn
            class SelfAttention(nn.Module):
                def _attn(self, query, key, value):
                    scores = torch.matmul(query, key.transpose(-1, -2))
                    return torch.softmax(scores, dim=-1) @ value
                def forward(self, x):
                    return self._attn(self.q_proj(x), self.k_proj(x), self.v_proj(x))
            """,
            fixed="""
            import torch
            import torch.nn as nn
            class SelfAttention(nn.Module):
                def _attn(self, query, key, value):
                    scores = torch.matmul(query, key.transpose(-1, -2)) * query.shape[-1] ** -0.5
                    return torch.softmax(scores, dim=-1) @ value
                def forward(self, x):
                    return self._attn(self.q_proj(x), self.k_proj(x), self.v_proj(x))
            """,
        ),
        # q, k, v indexed out of a fused qkv tensor.
        Invalid(
            """
            import torch


            def f(qkv):
                q, k, v = qkv[0], qkv[1], qkv[2]
                return torch.softmax(q @ k.transpose(-2, -1), dim=-1) @ v
            """,
            fixed="""
            import torch


            def f(qkv):
                q, k, v = qkv[0], qkv[1], qkv[2]
                return torch.softmax((q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5, dim=-1) @ v
            """,
        ),
        Invalid(
            """
            import torch
            def forward(self, x):
                queries = self.W_q(x)
                keys = self.W_k(x)
                attn_scores = queries @ keys.transpose(-2, -1)
                return torch.softmax(attn_scores, dim=-1)
            """,
            fixed="""
            import torch
            def forward(self, x):
                queries = self.W_q(x)
                keys = self.W_k(x)
                attn_scores = (queries @ keys.transpose(-2, -1)) * queries.shape[-1] ** -0.5
                return torch.softmax(attn_scores, dim=-1)
            """,
            line=5,
            column=18,
            page=True,
        ),
        # The Annotated Transformer's attention() without its `/ math.sqrt(d_k)`.
        Invalid(
            """
            import torch
            def attention(query, key, value, mask=None, dropout=None):
                scores = torch.matmul(query, key.transpose(-2, -1))
                if mask is not None:
                    scores = scores.masked_fill(mask == 0, -1e9)
                p_attn = scores.softmax(dim=-1)
                return torch.matmul(p_attn, value), p_attn
            """,
            fixed="""
            import torch
            def attention(query, key, value, mask=None, dropout=None):
                scores = torch.matmul(query, key.transpose(-2, -1)) * query.shape[-1] ** -0.5
                if mask is not None:
                    scores = scores.masked_fill(mask == 0, -1e9)
                p_attn = scores.softmax(dim=-1)
                return torch.matmul(p_attn, value), p_attn
            """,
        ),
        # Multi-head with view/transpose: the fix uses the per-head dim, not d_model.
        Invalid(
            """
            import torch.nn.functional as F
            def forward(self, x):
                B, T, C = x.size()
                q = self.W_q(x).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
                k = self.W_k(x).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
                att = q @ k.transpose(-2, -1)
                att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
                return F.softmax(att, dim=-1)
            """,
            fixed="""
            import torch.nn.functional as F
            def forward(self, x):
                B, T, C = x.size()
                q = self.W_q(x).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
                k = self.W_k(x).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
                att = (q @ k.transpose(-2, -1)) * self.head_dim ** -0.5
                att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
                return F.softmax(att, dim=-1)
            """,
        ),
        # einsum: the contracted letter gives the axis.
        Invalid(
            """
            import torch
            def forward(self, q, k, v):
                sim = torch.einsum("bhid,bhjd->bhij", q, k)
                attn = sim.softmax(dim=-1)
                return torch.einsum("bhij,bhjd->bhid", attn, v)
            """,
            fixed="""
            import torch
            def forward(self, q, k, v):
                sim = torch.einsum("bhid,bhjd->bhij", q, k) * q.shape[-1] ** -0.5
                attn = sim.softmax(dim=-1)
                return torch.einsum("bhij,bhjd->bhid", attn, v)
            """,
        ),
        # bmm on (batch, tokens, d).
        Invalid(
            """
            import torch
            def forward(self, x):
                query = self.query_proj(x)
                key = self.key_proj(x)
                weights = torch.softmax(torch.bmm(query, key.transpose(1, 2)), dim=2)
                return weights
            """,
            fixed="""
            import torch
            def forward(self, x):
                query = self.query_proj(x)
                key = self.key_proj(x)
                weights = torch.softmax(torch.bmm(query, key.transpose(1, 2)) * query.shape[-1] ** -0.5, dim=2)
                return weights
            """,
        ),
        # baddbmm without alpha: reported, no fix (the bias would be scaled too).
        Invalid(
            """
            import torch
            def forward(self, q, k, bias):
                scores = torch.baddbmm(bias, q, k.transpose(1, 2))
                return torch.softmax(scores, dim=-1)
            """,
        ),
        # nn.Linear projections declared in __init__; key-major product.
        Invalid(
            """
            import torch
            import torch.nn as nn
            class Attn(nn.Module):
                def __init__(self, d):
                    super().__init__()
                    self.to_q = nn.Linear(d, d)
                    self.to_k = nn.Linear(d, d)
                def forward(self, x):
                    q = self.to_q(x)
                    k = self.to_k(x)
                    s = k @ q.transpose(-2, -1)
                    return s.softmax(dim=-2)
            """,
            fixed="""
            import torch
            import torch.nn as nn
            class Attn(nn.Module):
                def __init__(self, d):
                    super().__init__()
                    self.to_q = nn.Linear(d, d)
                    self.to_k = nn.Linear(d, d)
                def forward(self, x):
                    q = self.to_q(x)
                    k = self.to_k(x)
                    s = (k @ q.transpose(-2, -1)) * k.shape[-1] ** -0.5
                    return s.softmax(dim=-2)
            """,
        ),
        # Parameters as projection matrices (course notes' V1 without the scale).
        Invalid(
            """
            import torch
            import torch.nn as nn
            class SelfAttention(nn.Module):
                def __init__(self, d_in, d_out):
                    super().__init__()
                    self.W_query = nn.Parameter(torch.rand(d_in, d_out))
                    self.W_key = nn.Parameter(torch.rand(d_in, d_out))
                def forward(self, x):
                    queries = x @ self.W_query
                    keys = x @ self.W_key
                    return torch.softmax(queries @ keys.T, dim=-1)
            """,
            fixed="""
            import torch
            import torch.nn as nn
            class SelfAttention(nn.Module):
                def __init__(self, d_in, d_out):
                    super().__init__()
                    self.W_query = nn.Parameter(torch.rand(d_in, d_out))
                    self.W_key = nn.Parameter(torch.rand(d_in, d_out))
                def forward(self, x):
                    queries = x @ self.W_query
                    keys = x @ self.W_key
                    return torch.softmax((queries @ keys.T) * queries.shape[-1] ** -0.5, dim=-1)
            """,
        ),
        # nn.Softmax module from __init__.
        Invalid(
            """
            import torch
            import torch.nn as nn
            class Attn(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.softmax = nn.Softmax(dim=-1)
                def forward(self, q, k, v):
                    attn = self.softmax(torch.matmul(q, k.transpose(-2, -1)))
                    return attn @ v
            """,
            fixed="""
            import torch
            import torch.nn as nn
            class Attn(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.softmax = nn.Softmax(dim=-1)
                def forward(self, q, k, v):
                    attn = self.softmax(torch.matmul(q, k.transpose(-2, -1)) * q.shape[-1] ** -0.5)
                    return attn @ v
            """,
        ),
        # permute-based transpose of the keys (b, n, h, d) -> (b, h, d, n).
        Invalid(
            """
            import torch
            def forward(self, x):
                b, n, _ = x.shape
                q = self.wq(x).view(b, n, self.h, -1).permute(0, 2, 1, 3)
                k = self.wk(x).view(b, n, self.h, -1).permute(0, 2, 3, 1)
                return torch.softmax(q @ k, dim=-1)
            """,
            fixed="""
            import torch
            def forward(self, x):
                b, n, _ = x.shape
                q = self.wq(x).view(b, n, self.h, -1).permute(0, 2, 1, 3)
                k = self.wk(x).view(b, n, self.h, -1).permute(0, 2, 3, 1)
                return torch.softmax((q @ k) * q.shape[-1] ** -0.5, dim=-1)
            """,
        ),
        # Fused qkv split, mask added, F.softmax with dtype.
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            def forward(self, x, mask):
                q, k, v = self.qkv(x).chunk(3, dim=-1)
                scores = q @ k.mT + mask
                attn = F.softmax(scores, dim=-1, dtype=torch.float32)
                return attn @ v
            """,
            fixed="""
            import torch
            import torch.nn.functional as F
            def forward(self, x, mask):
                q, k, v = self.qkv(x).chunk(3, dim=-1)
                scores = (q @ k.mT) * q.shape[-1] ** -0.5 + mask
                attn = F.softmax(scores, dim=-1, dtype=torch.float32)
                return attn @ v
            """,
        ),
        # Rotary embeddings do not scale.
        Invalid(
            """
            import torch
            def forward(self, x, cos, sin):
                xq = self.wq(x)
                xk = self.wk(x)
                xq, xk = apply_rotary_emb(xq, xk, cos, sin)
                scores = torch.matmul(xq, xk.transpose(2, 3))
                return torch.softmax(scores.float(), dim=-1).type_as(xq)
            """,
            fixed="""
            import torch
            def forward(self, x, cos, sin):
                xq = self.wq(x)
                xk = self.wk(x)
                xq, xk = apply_rotary_emb(xq, xk, cos, sin)
                scores = torch.matmul(xq, xk.transpose(2, 3)) * xq.shape[-1] ** -0.5
                return torch.softmax(scores.float(), dim=-1).type_as(xq)
            """,
        ),
        # Method-form matmul and softmax.
        Invalid(
            """
            def forward(self, queries, keys, values):
                scores = queries.matmul(keys.transpose(-2, -1))
                return scores.softmax(-1).matmul(values)
            """,
            fixed="""
            def forward(self, queries, keys, values):
                scores = queries.matmul(keys.transpose(-2, -1)) * queries.shape[-1] ** -0.5
                return scores.softmax(-1).matmul(values)
            """,
        ),
        # A mask applied with masked_fill in place, then dropout.
        Invalid(
            """
            import torch
            def forward(self, x, mask):
                q = self.q_linear(x)
                k = self.k_linear(x)
                scores = torch.matmul(q, k.transpose(-2, -1))
                scores.masked_fill_(mask, float("-inf"))
                attn = self.dropout(torch.softmax(scores, dim=-1))
                return attn
            """,
            fixed="""
            import torch
            def forward(self, x, mask):
                q = self.q_linear(x)
                k = self.k_linear(x)
                scores = torch.matmul(q, k.transpose(-2, -1)) * q.shape[-1] ** -0.5
                scores.masked_fill_(mask, float("-inf"))
                attn = self.dropout(torch.softmax(scores, dim=-1))
                return attn
            """,
        ),
        # Learned bias added, still no scale.
        Invalid(
            """
            import torch
            def forward(self, q, k, rel_pos_bias):
                s = q @ k.transpose(-2, -1) + rel_pos_bias
                return s.softmax(dim=-1)
            """,
            fixed="""
            import torch
            def forward(self, q, k, rel_pos_bias):
                s = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5 + rel_pos_bias
                return s.softmax(dim=-1)
            """,
        ),
        # Operand expressions too complex to repeat: reported without a fix.
        Invalid(
            """
            import torch
            def forward(self, x):
                scores = self.W_q(x) @ self.W_k(x).transpose(-2, -1)
                return torch.softmax(scores, dim=-1)
            """,
        ),
        # lucidrains-style einops attention with no scale (the fix reads the contracted axis).
        Invalid(
            """
            import torch
            from torch import nn
            from einops import rearrange, einsum


            class Attention(nn.Module):
                def __init__(self, dim, heads=8, dim_head=64):
                    super().__init__()
                    self.heads = heads
                    self.to_qkv = nn.Linear(dim, dim_head * heads * 3, bias=False)

                def forward(self, x):
                    q, k, v = self.to_qkv(x).chunk(3, dim=-1)
                    q, k, v = map(lambda t: rearrange(t, "b n (h d) -> b h n d", h=self.heads), (q, k, v))
                    sim = einsum(q, k, "b h i d, b h j d -> b h i j")
                    attn = sim.softmax(dim=-1)
                    return einsum(attn, v, "b h i j, b h j d -> b h i d")
            """,
            fixed="""
            import torch
            from torch import nn
            from einops import rearrange, einsum


            class Attention(nn.Module):
                def __init__(self, dim, heads=8, dim_head=64):
                    super().__init__()
                    self.heads = heads
                    self.to_qkv = nn.Linear(dim, dim_head * heads * 3, bias=False)

                def forward(self, x):
                    q, k, v = self.to_qkv(x).chunk(3, dim=-1)
                    q, k, v = map(lambda t: rearrange(t, "b n (h d) -> b h n d", h=self.heads), (q, k, v))
                    sim = einsum(q, k, "b h i d, b h j d -> b h i j") * q.shape[-1] ** -0.5
                    attn = sim.softmax(dim=-1)
                    return einsum(attn, v, "b h i j, b h j d -> b h i d")
            """,
        ),
        # Annotated-Transformer heads built in a comprehension over zip(linears, (q, k, v)): the fix uses `self.d_k`.
        Invalid(
            """
            import torch
            import torch.nn as nn


            class MultiHead(nn.Module):
                def __init__(self, d_model, h):
                    super().__init__()
                    self.h = h
                    self.d_k = d_model // h
                    self.linears = nn.ModuleList([nn.Linear(d_model, d_model) for _ in range(3)])

                def forward(self, query, key, value):
                    nbatches = query.size(0)
                    query, key, value = [
                        lin(x).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)
                        for lin, x in zip(self.linears, (query, key, value))
                    ]
                    scores = torch.matmul(query, key.transpose(-2, -1))
                    return torch.matmul(scores.softmax(dim=-1), value)
            """,
            fixed="""
            import torch
            import torch.nn as nn


            class MultiHead(nn.Module):
                def __init__(self, d_model, h):
                    super().__init__()
                    self.h = h
                    self.d_k = d_model // h
                    self.linears = nn.ModuleList([nn.Linear(d_model, d_model) for _ in range(3)])

                def forward(self, query, key, value):
                    nbatches = query.size(0)
                    query, key, value = [
                        lin(x).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)
                        for lin, x in zip(self.linears, (query, key, value))
                    ]
                    scores = torch.matmul(query, key.transpose(-2, -1)) * self.d_k ** -0.5
                    return torch.matmul(scores.softmax(dim=-1), value)
            """,
        ),
        # A course notebook at module level.
        Invalid(
            """
            import torch

            torch.manual_seed(0)
            x = torch.randn(2, 6, 16)
            W_q = torch.nn.Parameter(torch.randn(16, 8))
            W_k = torch.nn.Parameter(torch.randn(16, 8))
            W_v = torch.nn.Parameter(torch.randn(16, 8))
            queries = x @ W_q
            keys = x @ W_k
            values = x @ W_v
            attn_scores = queries @ keys.transpose(1, 2)
            attn_weights = torch.softmax(attn_scores, dim=-1)
            context = attn_weights @ values
            """,
            fixed="""
            import torch

            torch.manual_seed(0)
            x = torch.randn(2, 6, 16)
            W_q = torch.nn.Parameter(torch.randn(16, 8))
            W_k = torch.nn.Parameter(torch.randn(16, 8))
            W_v = torch.nn.Parameter(torch.randn(16, 8))
            queries = x @ W_q
            keys = x @ W_k
            values = x @ W_v
            attn_scores = (queries @ keys.transpose(1, 2)) * queries.shape[-1] ** -0.5
            attn_weights = torch.softmax(attn_scores, dim=-1)
            context = attn_weights @ values
            """,
        ),
        # Heads split by a helper method applied with map(); the fix uses `self.head_dim`.
        Invalid(
            """
            import torch
            import torch.nn as nn


            class Attention(nn.Module):
                def __init__(self, dim, num_heads=8):
                    super().__init__()
                    self.num_heads = num_heads
                    self.head_dim = dim // num_heads
                    self.qkv = nn.Linear(dim, dim * 3)

                def _split(self, t, B, N):
                    return t.reshape(B, N, self.num_heads, self.head_dim).transpose(1, 2)

                def forward(self, x):
                    B, N, C = x.shape
                    q, k, v = self.qkv(x).chunk(3, dim=-1)
                    q, k, v = map(lambda t: self._split(t, B, N), (q, k, v))
                    attn = (q @ k.transpose(-2, -1)).softmax(dim=-1)
                    return (attn @ v).transpose(1, 2).reshape(B, N, C)
            """,
            fixed="""
            import torch
            import torch.nn as nn


            class Attention(nn.Module):
                def __init__(self, dim, num_heads=8):
                    super().__init__()
                    self.num_heads = num_heads
                    self.head_dim = dim // num_heads
                    self.qkv = nn.Linear(dim, dim * 3)

                def _split(self, t, B, N):
                    return t.reshape(B, N, self.num_heads, self.head_dim).transpose(1, 2)

                def forward(self, x):
                    B, N, C = x.shape
                    q, k, v = self.qkv(x).chunk(3, dim=-1)
                    q, k, v = map(lambda t: self._split(t, B, N), (q, k, v))
                    attn = ((q @ k.transpose(-2, -1)) * self.head_dim ** -0.5).softmax(dim=-1)
                    return (attn @ v).transpose(1, 2).reshape(B, N, C)
            """,
        ),
        # Heads made by a generator expression over qkv.chunk(3, -1) and a helper method.
        Invalid(
            """
            import torch
            import torch.nn as nn


            class Attention(nn.Module):
                def __init__(self, dim, heads):
                    super().__init__()
                    self.heads = heads
                    self.qkv = nn.Linear(dim, dim * 3)

                def _to_heads(self, t):
                    b, n, d = t.shape
                    return t.reshape(b, n, self.heads, d // self.heads).permute(0, 2, 1, 3)

                def forward(self, x):
                    q, k, v = tuple(self._to_heads(t) for t in self.qkv(x).chunk(3, -1))
                    return torch.softmax(q @ k.transpose(-1, -2), dim=-1) @ v
            """,
            fixed="""
            import torch
            import torch.nn as nn


            class Attention(nn.Module):
                def __init__(self, dim, heads):
                    super().__init__()
                    self.heads = heads
                    self.qkv = nn.Linear(dim, dim * 3)

                def _to_heads(self, t):
                    b, n, d = t.shape
                    return t.reshape(b, n, self.heads, d // self.heads).permute(0, 2, 1, 3)

                def forward(self, x):
                    q, k, v = tuple(self._to_heads(t) for t in self.qkv(x).chunk(3, -1))
                    return torch.softmax((q @ k.transpose(-1, -2)) * q.shape[-1] ** -0.5, dim=-1) @ v
            """,
        ),
        # Projection weights drawn at random with a literal spread (as `nn.Parameter(torch.randn(d,
        # d) * 0.02)` is): the number is the weights' initialisation, not a scale of the scores.
        Invalid(
            """
            import torch

            d = 16
            W_query, W_key, W_value = (torch.randn(d, d) * 0.05 for _ in range(3))


            def attend(tokens, W_query, W_key, W_value):
                queries, keys, values = tokens @ W_query, tokens @ W_key, tokens @ W_value
                weights = torch.softmax(queries @ keys.transpose(-2, -1), dim=-1)
                return weights @ values


            attend(torch.randn(3, 7, d), W_query, W_key, W_value)
            """,
            fixed="""
            import torch

            d = 16
            W_query, W_key, W_value = (torch.randn(d, d) * 0.05 for _ in range(3))


            def attend(tokens, W_query, W_key, W_value):
                queries, keys, values = tokens @ W_query, tokens @ W_key, tokens @ W_value
                weights = torch.softmax((queries @ keys.transpose(-2, -1)) * queries.shape[-1] ** -0.5, dim=-1)
                return weights @ values


            attend(torch.randn(3, 7, d), W_query, W_key, W_value)
            """,
        ),
        # Learned queries (a parameter shared by the batch) against projected keys: attention
        # pooling, with no scale on the logits.
        Invalid(
            """
            import torch
            import torch.nn as nn


            class SlotReadout(nn.Module):
                def __init__(self, width, slots=4):
                    super().__init__()
                    self.slot_query = nn.Parameter(torch.zeros(slots, width))
                    self.key_proj = nn.Linear(width, width)

                def forward(self, h):
                    key = self.key_proj(h)
                    logits = torch.einsum("sd,bnd->bsn", self.slot_query, key)
                    return logits.softmax(-1)
            """,
            fixed="""
            import torch
            import torch.nn as nn


            class SlotReadout(nn.Module):
                def __init__(self, width, slots=4):
                    super().__init__()
                    self.slot_query = nn.Parameter(torch.zeros(slots, width))
                    self.key_proj = nn.Linear(width, width)

                def forward(self, h):
                    key = self.key_proj(h)
                    logits = torch.einsum("sd,bnd->bsn", self.slot_query, key) * self.slot_query.shape[-1] ** -0.5
                    return logits.softmax(-1)
            """,
        ),
        # d2l.ai's attention scoring: the product is made in the layer and normalised by a shared
        # masked-softmax helper that other layers call with their own scores.
        Invalid(
            """
            import torch
            from torch import nn


            def masked_softmax(X, valid_lens):
                if valid_lens is None:
                    return nn.functional.softmax(X, dim=-1)
                shape = X.shape
                X = X.reshape(-1, shape[-1])
                mask = torch.arange(shape[-1])[None, :] < valid_lens.reshape(-1)[:, None]
                X[~mask] = -1e6
                return nn.functional.softmax(X.reshape(shape), dim=-1)


            class AdditiveAttention(nn.Module):
                def __init__(self, num_hiddens):
                    super().__init__()
                    self.W_q = nn.LazyLinear(num_hiddens, bias=False)
                    self.W_k = nn.LazyLinear(num_hiddens, bias=False)
                    self.w_v = nn.LazyLinear(1, bias=False)

                def forward(self, queries, keys, values, valid_lens):
                    features = torch.tanh(self.W_q(queries).unsqueeze(2) + self.W_k(keys).unsqueeze(1))
                    scores = self.w_v(features).squeeze(-1)
                    return torch.bmm(masked_softmax(scores, valid_lens), values)


            class DotProductAttention(nn.Module):
                def forward(self, queries, keys, values, valid_lens=None):
                    d = queries.shape[-1]
                    scores = torch.bmm(queries, keys.transpose(1, 2))
                    return torch.bmm(masked_softmax(scores, valid_lens), values)
            """,
            fixed="""
            import torch
            from torch import nn


            def masked_softmax(X, valid_lens):
                if valid_lens is None:
                    return nn.functional.softmax(X, dim=-1)
                shape = X.shape
                X = X.reshape(-1, shape[-1])
                mask = torch.arange(shape[-1])[None, :] < valid_lens.reshape(-1)[:, None]
                X[~mask] = -1e6
                return nn.functional.softmax(X.reshape(shape), dim=-1)


            class AdditiveAttention(nn.Module):
                def __init__(self, num_hiddens):
                    super().__init__()
                    self.W_q = nn.LazyLinear(num_hiddens, bias=False)
                    self.W_k = nn.LazyLinear(num_hiddens, bias=False)
                    self.w_v = nn.LazyLinear(1, bias=False)

                def forward(self, queries, keys, values, valid_lens):
                    features = torch.tanh(self.W_q(queries).unsqueeze(2) + self.W_k(keys).unsqueeze(1))
                    scores = self.w_v(features).squeeze(-1)
                    return torch.bmm(masked_softmax(scores, valid_lens), values)


            class DotProductAttention(nn.Module):
                def forward(self, queries, keys, values, valid_lens=None):
                    d = queries.shape[-1]
                    scores = torch.bmm(queries, keys.transpose(1, 2)) * d ** -0.5
                    return torch.bmm(masked_softmax(scores, valid_lens), values)
            """,
            line=31,
        ),
    ]


def _short(code: str, limit: int = 60) -> str:
    code = " ".join(code.split())
    return code if len(code) <= limit else code[: limit - 3] + "..."


_SCALE_PARAMETERS = ("scale", "scaling", "softmax_scale", "sm_scale")

