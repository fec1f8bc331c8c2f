"""ATN202 unmasked-padding."""

from __future__ import annotations

from typing import Optional

from attnlint.analysis import masks
from attnlint.analysis.evaluator import FunctionFacts
from attnlint.analysis.values import AttentionCallSite
from attnlint.diagnostics import Applicability
from attnlint.fixers.keyword import set_keyword
from attnlint.rules.base import FixAvailability, Invalid, Rule, RuleContext, Valid

# For each attention API: which of our parameter names it takes, under which keyword. Only a
# parameter already in the API's own convention is passed on by the fix.
_PASS_AS = {
    "sdpa": {"attn_mask": "attn_mask"},
    "MultiheadAttention": {"key_padding_mask": "key_padding_mask", "padding_mask": "key_padding_mask",
                           "attn_mask": "attn_mask"},
    "TransformerEncoder": {"src_key_padding_mask": "src_key_padding_mask", "key_padding_mask": "src_key_padding_mask",
                           "mask": "mask"},
    "TransformerEncoderLayer": {"src_key_padding_mask": "src_key_padding_mask",
                                "key_padding_mask": "src_key_padding_mask", "src_mask": "src_mask"},
}


class UnmaskedPadding(Rule):
    """
    ## What it does
    Checks for attention over a padded batch without a padding mask:
    - a `forward(..., attention_mask=None)` (or `key_padding_mask`, `padding_mask`, `mask`, ...)
      parameter that the function never uses, although it computes attention or calls an
      attention module;
    - a `pad_sequence`d batch fed to `nn.MultiheadAttention`, `nn.Transformer*` or
      `F.scaled_dot_product_attention` with no mask (right padding with `is_causal=True` is fine);
    - a block that accepts a mask and does not pass it on to the attention submodule it calls.

    ## Why is this bad?
    Without the mask, every real token attends to the padding. The outputs then depend on how
    much padding the batch happened to have and on whatever values sit in the padded slots:
    results differ between batch sizes, and training learns from garbage.

    ## Example
    ```python
    def forward(self, x, key_padding_mask=None):
        out, _ = self.attn(x, x, x)
        return out
    ```

    ## Use instead
    ```python
    def forward(self, x, key_padding_mask=None):
        out, _ = self.attn(x, x, x, key_padding_mask=key_padding_mask)
        return out
    ```

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
    triggers = ("mask", "pad_sequence")

    def check(self, ctx: RuleContext) -> None:
        protocols = _shared_signatures(ctx.analysis)
        for function in ctx.analysis.functions:
            self._unused_mask_parameters(ctx, function, protocols)
            for call in function.attention_calls:
                self._padded_batch_without_mask(ctx, call)

    def _unused_mask_parameters(self, ctx: RuleContext, function: FunctionFacts, protocols) -> None:
        unused = [n for n in function.params if masks.is_mask_param(n) and n not in function.used_names]
        # A method that implements a signature shared by several classes here (attention
        # processors, backends) may ignore a parameter by design: the mask is for the others.
        unused = [n for n in unused if (function.name, n) not in protocols]
        if not unused:
            return
        calls = [c for c in function.attention_calls if self._takes_mask(ctx, c)]
        computes_attention = any(s.input.scores is not None for s in function.softmax_sites)
        if not calls and not computes_attention:
            return
        for name in unused:
            fix = None
            if len(calls) == 1 and not computes_attention:
                keyword = self._keyword_for(ctx, calls[0], name)
                if keyword is not None:
                    fix = set_keyword(calls[0].call, keyword, name, f"Pass `{keyword}={name}` on")
            ctx.report(
                function.param_nodes[name].name,
                f"`{name}` is accepted but never used: the attention in `{function.name}` "
                "also attends to padding",
                fix=fix,
            )

    def _padded_batch_without_mask(self, ctx: RuleContext, call: AttentionCallSite) -> None:
        if call.mask_keywords or not any(v.get_extra("padded") for v in call.inputs):
            return
        if call.is_causal:
            return  # pad_sequence pads on the right: causal attention never sees the padding
        if call.api == "submodule" and not self._takes_mask(ctx, call):
            return
        ctx.report(call.call, "a padded batch (pad_sequence) goes into attention with no padding mask")

    def _takes_mask(self, ctx: RuleContext, call: AttentionCallSite) -> bool:
        if call.api != "submodule":
            return True
        callee = ctx.analysis.classes.get(call.callee_class or "")
        return callee is not None and any(masks.is_mask_param(p) for p in callee.forward_params)

    def _keyword_for(self, ctx: RuleContext, call: AttentionCallSite, name: str) -> Optional[str]:
        if call.api == "submodule":
            callee = ctx.analysis.classes.get(call.callee_class or "")
            return name if callee is not None and name in callee.forward_params else None
        return _PASS_AS.get(call.api, {}).get(name)

    VALID = [
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
    ]

    INVALID = [
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
            line=6,
            column=25,
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
                    return x
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
                    return x
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
    ]


def _shared_signatures(analysis) -> set:
    """(method name, mask parameter) pairs that form an interface several classes implement.

    `__call__` of attention processors, backends of one attention class (`LlamaSdpaAttention`
    subclassing `LlamaAttention`): one implementation may ignore what another needs. Plain
    `forward` methods of unrelated modules are not an interface.
    """
    owners = {}
    for function in analysis.functions:
        if function.class_name is None:
            continue
        for name in function.params:
            if masks.is_mask_param(name):
                owners.setdefault((function.name, name), set()).add(function.class_name)
    shared = set()
    for (method, name), classes in owners.items():
        if len(classes) < 2:
            continue
        if method != "forward" or _related(classes, analysis.classes):
            shared.add((method, name))
    return shared


def _related(classes: set, facts) -> bool:
    """Do two of these classes share a base defined in this file (or subclass one another)?"""
    local = set(facts)
    families = {}
    for name in classes:
        bases = [b for b in facts[name].bases if b in local] if name in facts else []
        root = bases[0] if bases else name
        families.setdefault(root, set()).add(name)
    return any(len(members) > 1 for members in families.values()) or any(
        b in classes for name in classes if name in facts for b in facts[name].bases
    )
