"""The new rules' fixes, proven on CPU by their recipes; and a wrong fix for each, rejected.

Each case is attention code with the bug, the fix attnlint's engine makes (never written here),
and a plausible wrong fix someone might write instead. The recipe must verify the first and
refuse the second.
"""

from __future__ import annotations

import textwrap

import pytest

pytest.importorskip("torch")

from attnlint.config import Settings
from attnlint.engine import fix_source
from attnlint.verify import verify

CPU32 = {"devices": ("cpu",), "dtypes": {"cpu": ["float32"]}}

MHA_WIDTH_SCALE = """
import math
import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model=64, num_heads=4):
        super().__init__()
        self.d_model = d_model
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out_proj = nn.Linear(d_model, d_model)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(self.d_model, dim=2)
        q = q.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        k = k.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        v = v.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(self.d_model)
        y = att.softmax(dim=-1) @ v
        return self.out_proj(y.transpose(1, 2).reshape(B, T, C))
"""

HEADS_BY_VIEW = """
import math
import torch
import torch.nn as nn


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd=64, n_head=4):
        super().__init__()
        self.n_head = n_head
        self.query = nn.Linear(n_embd, n_embd)
        self.key = nn.Linear(n_embd, n_embd)
        self.value = nn.Linear(n_embd, n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        B, T, C = x.size()
        hs = C // self.n_head
        q = self.query(x).view(B, T, self.n_head, hs).transpose(1, 2)
        k = self.key(x).view(B, T, self.n_head, hs).transpose(1, 2)
        v = self.value(x).view(B, self.n_head, T, hs)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
        y = att.softmax(dim=-1) @ v
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))
"""

HALF_FILL = """
import torch


def attention(q, k, v, mask):
    scores = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
    scores = scores.masked_fill(mask == 0, -1e9)
    return scores.softmax(dim=-1).to(q.dtype) @ v
"""

CAUSAL_AND_MASK = """
import torch
import torch.nn.functional as F


def decode_step(q, k, v, attn_mask):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=True)
"""

KEEP_ADDED = """
import torch


def attention(q, k, v, attention_mask):
    scores = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
    mask = attention_mask[:, None, None, :].to(scores.dtype)
    scores = scores + mask
    return scores.softmax(dim=-1) @ v
"""

DROPOUT_ON = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class SelfAttention(nn.Module):
    def __init__(self, d=32, p=0.3):
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d)
        self.p = p

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        w = torch.softmax(q @ k.transpose(-2, -1) / q.size(-1) ** 0.5, dim=-1)
        return F.dropout(w, self.p) @ v
"""

CASES = [
    # code, source, entry, params, (wrong-fix old, new)
    ("ATN104", MHA_WIDTH_SCALE, "MultiHeadAttention", {}, ("/ math.sqrt(self.d_model)", "* math.sqrt(self.head_dim)")),
    (
        "ATN106",
        HEADS_BY_VIEW,
        "CausalSelfAttention",
        {},
        (".view(B, self.n_head, T, hs)", ".reshape(B, self.n_head, T, hs)"),
    ),
    ("ATN206", HALF_FILL, "attention", {"mask_format": "keep"}, ("-1e9)", "0.0)")),
    (
        "ATN207",
        CAUSAL_AND_MASK,
        "decode_step",
        {},
        (
            "attn_mask=attn_mask, is_causal=True",
            "attn_mask=attn_mask & torch.ones(q.size(-2), k.size(-2), dtype=torch.bool).tril(), is_causal=False",
        ),
    ),
    (
        "ATN208",
        KEEP_ADDED,
        "attention",
        {},
        ("scores = scores + mask", "scores = scores.masked_fill(mask == 0, -1e-3)"),
    ),
    ("ATN209", DROPOUT_ON, "SelfAttention", {}, ("F.dropout(w, self.p)", "F.dropout(w, self.p, training=False)")),
]


def _engine_fix(code: str, source: str) -> str:
    fixed = fix_source(source, "model.py", Settings(select=[code]), unsafe=True).fixed_source
    assert fixed != source, f"{code}: the engine made no fix"
    return fixed


@pytest.mark.parametrize("code,source,entry,params,wrong", CASES, ids=[c[0] for c in CASES])
def test_engine_fix_is_verified(code, source, entry, params, wrong):
    source = textwrap.dedent(source)
    reports = verify(code, source, _engine_fix(code, source), entry=entry, params=params, **CPU32)
    assert reports and all(r.ok for r in reports), "\n".join(r.summary() for r in reports)
    # The evidence shows the bug: a check about the original passed.
    assert any("original" in c.name and c.passed for r in reports for c in r.checks)


@pytest.mark.parametrize("code,source,entry,params,wrong", CASES, ids=[c[0] for c in CASES])
def test_wrong_fix_is_rejected(code, source, entry, params, wrong):
    source = textwrap.dedent(source)
    old, new = wrong
    assert old in source
    reports = verify(code, source, source.replace(old, new), entry=entry, params=params, **CPU32)
    assert reports and not all(r.ok for r in reports), "\n".join(r.summary() for r in reports)


MODULE_OF_X_CAUSAL_FLAG = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class CausalAttention(nn.Module):
    def __init__(self, d_model=32, n_heads=4, block_size=16):
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.register_buffer("keep", torch.ones(block_size, block_size, dtype=torch.bool).tril())

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_heads, -1).transpose(1, 2) for t in self.qkv(x).chunk(3, dim=-1))
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=self.keep[:T, :T], is_causal=True)
        return y.transpose(1, 2).reshape(B, T, C)
"""


def test_a_module_of_x_gives_no_evidence_against_a_reference_on_other_qkv():
    # Its projections make its own q, k, v: comparing its output with attention over the
    # witness's q, k, v says nothing of the fix, so the verdict is "no evidence", never "failed".
    from attnlint.verify.session import SETUP_CHECKS

    source = textwrap.dedent(MODULE_OF_X_CAUSAL_FLAG)
    reports = verify("ATN207", source, _engine_fix("ATN207", source), entry="CausalAttention", **CPU32)
    failed = [c.name for r in reports for c in r.failed_checks()]
    assert failed and set(failed) <= set(SETUP_CHECKS), failed


# An output projection the reference cannot find (`self.o`): the reference is attention without
# one, so it differs from the module even on one token, where the scale cannot matter.
UNFOUND_OUTPUT_PROJECTION = """
import math
import torch
import torch.nn as nn


class Attention(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.h, self.d_model, self.d_k = n_heads, d_model, d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.o = nn.Linear(d_model, d_model)

    def forward(self, x):
        B, T, _ = x.shape
        q, k, v = (t.view(B, T, self.h, self.d_k).transpose(1, 2) for t in self.qkv(x).split(self.d_model, dim=-1))
        att = (q @ k.transpose(-2, -1) / math.sqrt(self.d_model)).softmax(-1)
        return self.o((att @ v).transpose(1, 2).reshape(B, T, self.d_model))
"""


def test_a_reference_off_the_module_on_one_token_is_no_evidence_and_naming_the_projection_verifies():
    from attnlint.verify.session import SETUP_CHECKS

    source = textwrap.dedent(UNFOUND_OUTPUT_PROJECTION)
    fixed = _engine_fix("ATN104", source)
    reports = verify("ATN104", source, fixed, entry="Attention", **CPU32)
    failed = [c for r in reports for c in r.failed_checks()]
    assert failed and {c.name for c in failed} <= set(SETUP_CHECKS), [c.name for c in failed]
    assert "single token" in failed[0].detail
    # Told where the output projection is, the same reference reproduces the module and proves the fix.
    reports = verify("ATN104", source, fixed, entry="Attention", params={"out_proj": "o"}, **CPU32)
    assert reports and all(r.ok for r in reports), "\n".join(r.summary() for r in reports)


# Heads split by a view of a chunk of the fused projection: the original view raises (the chunk is
# not contiguous), which is as wrong as mixing positions; the fix runs and matches the reference.
VIEW_OF_A_CHUNK = """
import torch
import torch.nn as nn


class Attention(nn.Module):
    def __init__(self, dim=64, heads=4):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.view(B, self.heads, N, self.head_dim)
        k = k.view(B, self.heads, N, self.head_dim)
        v = v.view(B, self.heads, N, self.head_dim)
        att = ((q @ k.transpose(-2, -1)) * self.head_dim ** -0.5).softmax(dim=-1)
        return self.proj((att @ v).transpose(1, 2).reshape(B, N, C))
"""


def test_a_view_that_raises_on_the_witness_is_evidence_and_its_fix_is_verified():
    source = textwrap.dedent(VIEW_OF_A_CHUNK)
    reports = verify("ATN106", source, _engine_fix("ATN106", source), entry="Attention", **CPU32)
    assert reports and all(r.ok for r in reports), "\n".join(r.summary() for r in reports)
    assert any(c.name == "witness_original_raises" and c.passed for r in reports for c in r.checks)
    # Half a fix (only q transposed) still fails the reference.
    half = source.replace(
        "q = q.view(B, self.heads, N, self.head_dim)", "q = q.reshape(B, N, self.heads, self.head_dim).transpose(1, 2)"
    )
    reports = verify("ATN106", source, half, entry="Attention", **CPU32)
    assert reports and not all(r.ok for r in reports)


# Written as `forward(q, k, v, mask=None)` with sizes that have no default: the witness is
# self-attention (x given as q, k and v), with two heads so that the width and the head dim differ.
QKV_FORWARD_WIDTH_SCALE = """
import math
import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int):
        super().__init__()
        self.d_model, self.num_heads, self.d_head = d_model, num_heads, d_model // num_heads
        self.W_q, self.W_k = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        self.W_v, self.W_o = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)

    def split(self, x):
        b, t, _ = x.size()
        return x.view(b, t, self.num_heads, self.d_head).transpose(1, 2)

    def forward(self, q, k, v, mask=None):
        Q, K, V = self.split(self.W_q(q)), self.split(self.W_k(k)), self.split(self.W_v(v))
        scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(self.d_model)
        out = torch.matmul(torch.softmax(scores, dim=-1), V)
        b, _, t, _ = out.size()
        return self.W_o(out.transpose(1, 2).reshape(b, t, self.d_model))
"""


def test_a_module_of_q_k_v_is_run_as_self_attention_with_two_heads_and_its_fix_verified():
    source = textwrap.dedent(QKV_FORWARD_WIDTH_SCALE)
    reports = verify("ATN104", source, _engine_fix("ATN104", source), entry="MultiHeadAttention", **CPU32)
    assert reports and all(r.ok for r in reports), "\n".join(r.summary() for r in reports)
    assert all(r.measurements["heads"] == 2 for r in reports)
    wrong = source.replace("math.sqrt(self.d_model)", "self.d_head")
    reports = verify("ATN104", source, wrong, entry="MultiHeadAttention", **CPU32)
    assert reports and not all(r.ok for r in reports)


def test_a_chosen_width_is_a_multiple_of_the_head_count_the_constructor_defaults_to():
    from attnlint.verify.loading import constructor_kwargs

    class Attention:
        def __init__(self, dim, num_heads=8, qkv_bias=True):
            pass

    class Given:
        def __init__(self, dim, num_heads=8):
            pass

    assert constructor_kwargs(Attention, {})["dim"] % 8 == 0
    # A width the user gives is theirs, divisible or not.
    assert constructor_kwargs(Given, {"dim": 6})["dim"] == 6


# A causal triangle combined with the padding mask, in a file that pads on the left (which
# empties the rows of the leading pads): the reference is causal too.
CAUSAL_AND_PADDING = """
import math
import torch
import torch.nn as nn


def left_pad(prompts, pad_id=0):
    n = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), n), pad_id)
    for i, p in enumerate(prompts):
        ids[i, n - len(p):] = torch.tensor(p)
    return ids, ids != pad_id


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model=32, n_head=4):
        super().__init__()
        self.n_head, self.hd = n_head, d_model // n_head
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, self.hd).transpose(1, 2) for t in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.hd)
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        keep = causal[None, None] & attention_mask[:, None, None, :].bool()
        probs = scores.masked_fill(~keep, float("-inf")).softmax(dim=-1)
        return self.proj((probs @ v).transpose(1, 2).reshape(B, T, C))
"""


def test_a_causal_triangle_combined_with_the_padding_mask_makes_the_reference_causal():
    from attnlint.verify import verify_fix
    from attnlint.verify.entry_facts import entry_facts

    source = textwrap.dedent(CAUSAL_AND_PADDING)
    assert entry_facts([source], "CausalSelfAttention")["causal"]
    reports = verify_fix("ATN203", source, entry="CausalSelfAttention", **CPU32)
    assert reports and all(r.ok for r in reports), "\n".join(r.summary() for r in reports)


def test_an_entry_that_needs_a_mask_the_recipe_does_not_make_is_no_evidence():
    from attnlint.verify.session import SETUP_CHECKS

    source = textwrap.dedent(VIEW_OF_A_CHUNK).replace("def forward(self, x):", "def forward(self, x, pad_mask):")
    reports = verify("ATN106", source, _engine_fix("ATN106", source), entry="Attention", **CPU32)
    failed = [c for r in reports for c in r.failed_checks()]
    assert failed and {c.name for c in failed} <= set(SETUP_CHECKS)
    assert "pad_mask" in failed[0].detail
    # A size the forward needs (`forward(x, h, w)`) is not something x can stand for either.
    sized = source.replace("def forward(self, x, pad_mask):", "def forward(self, x, h, w):")
    reports = verify("ATN106", sized, _engine_fix("ATN106", sized), entry="Attention", **CPU32)
    assert {c.name for r in reports for c in r.failed_checks()} == {"no_evidence"}
