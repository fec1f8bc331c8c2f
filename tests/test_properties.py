"""Property tests (issue 12, Fix soundness): the engine never crashes on a valid program, and its
fixes keep code parseable and settle.

Two sources of programs: attention code composed from the pieces real attention is written with
(where the rules fire and the fixes run), and arbitrary valid Python from `hypothesmith` (where
the parser, the pre-filter and the analysis meet syntax nobody writes by hand). Examples are few
and deadlines off, to fit a 2-core CI.
"""

from __future__ import annotations

import ast

import libcst
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attnlint.config import Settings
from attnlint.engine import check_source, fix_source

SMALL = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ---------------------------------------------------------------------------------------------
# Attention code from its usual pieces
# ---------------------------------------------------------------------------------------------
KEYS_T = st.sampled_from(["k.T", "k.transpose(-2, -1)", "k.transpose(1, 2)", "k.mT", "k.permute(0, 2, 1)", "k"])
SCALE = st.sampled_from(["", " / d ** 0.5", " * self.scale", " / math.sqrt(d)", " * d ** -0.5", " / 8"])
MASK = st.sampled_from(
    [
        "",
        "scores = scores.masked_fill(mask == 0, float('-inf'))\n",
        "scores = scores.masked_fill(~mask, -1e9)\n",
        "scores = scores.masked_fill(self.mask, float('-inf'))\n",
        "scores = scores + mask\n",
        "scores.masked_fill_(self.bias[:, :, :n, :n] == 0, float('-inf'))\n",
    ]
)
SOFTMAX = st.sampled_from(
    [
        "scores.softmax(-1)",
        "scores.softmax(dim=1)",
        "torch.softmax(scores, dim=-1)",
        "F.softmax(scores, dim=-2)",
        "nn.functional.softmax(scores, 0)",
        "scores.softmax(-1).softmax(-1)",
    ]
)
OUTPUT = st.sampled_from(["return weights @ v", "return torch.matmul(weights, v)", "out = weights @ v\nreturn out"])
EXTRA = st.sampled_from(
    [
        "",
        "loss = F.cross_entropy(logits, targets, ignore_index=-100)\n",
        "out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)\n",
        "pad = torch.nn.utils.rnn.pad_sequence(seqs, batch_first=True, padding_value=0)\n",
        "# noqa: ATN101\n",
    ]
)


@st.composite
def attention_programs(draw):
    body = (
        "b, n, d = q.shape\n"
        + draw(EXTRA)
        + f"scores = q @ {draw(KEYS_T)}{draw(SCALE)}\n"
        + draw(MASK)
        + f"weights = {draw(SOFTMAX)}\n"
        + draw(OUTPUT)
        + "\n"
    )
    indented = "".join("        " + line + "\n" for line in body.splitlines())
    if draw(st.booleans()):
        return (
            "import math\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
            "class Attention(nn.Module):\n"
            "    def __init__(self, context_length, d):\n"
            "        super().__init__()\n"
            "        self.scale = d ** -0.5\n"
            "        self.register_buffer('mask', torch.triu(torch.ones(context_length, context_length), diagonal=1).bool())\n"
            "\n"
            "    def forward(self, q, k, v, mask=None):\n" + indented
        )
    return (
        "import math\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
        "def attention(q, k, v, mask=None):\n" + indented.replace("        ", "    ").replace("self.", "")
    )


def assert_parses(source: str) -> None:
    ast.parse(source)
    libcst.parse_module(source)


@SMALL
@given(attention_programs(), st.booleans())
def test_engine_never_fails_on_attention_code_and_fixes_settle(source, unsafe):
    result = check_source(source, "attention.py")
    assert not result.internal_error, result.error
    fixed = fix_source(source, "attention.py", Settings(), unsafe=unsafe)
    assert not fixed.internal_error, fixed.error
    assert not [w for w in fixed.fix_warnings if "did not settle" in w or "would not parse" in w], fixed.fix_warnings
    assert_parses(fixed.fixed_source)
    # One run fixes what it can: a second run finds nothing more to fix.
    again = fix_source(fixed.fixed_source, "attention.py", Settings(), unsafe=unsafe)
    assert again.fixed_source == fixed.fixed_source
    # Fixes only ever replace code the findings pointed at: a clean file is never touched.
    if not any(d.fix for d in result.diagnostics):
        assert fixed.fixed_source == source


# ---------------------------------------------------------------------------------------------
# Arbitrary valid Python (hypothesmith), with attention code after it so that LibCST and the
# analysis run on it rather than the pre-filter skipping the file
# ---------------------------------------------------------------------------------------------
hypothesmith = pytest.importorskip("hypothesmith")

TAIL = "\n\ndef attention(q, k, v):\n    b, n, d = k.shape\n    return (q @ k.T / d ** 0.5).softmax(-1) @ v\n"


def _valid(source: str) -> bool:
    try:
        compile(source, "<generated>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
        libcst.parse_module(source)
    except Exception:
        return False
    return True


@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(hypothesmith.from_node(libcst.Module).filter(_valid))
def test_engine_never_fails_on_generated_programs(program):
    source = program.rstrip("\n") + "\n" + TAIL if program.strip() else TAIL
    if not _valid(source):  # e.g. a trailing backslash continuation swallows the tail
        return
    result = check_source(source, "generated.py")
    assert not result.internal_error, result.error
    assert not any(d.code == "ATN001" for d in result.diagnostics), "a valid program reported as a syntax error"
    fixed = fix_source(source, "generated.py", Settings(), unsafe=True)
    assert not fixed.internal_error, fixed.error
    assert_parses(fixed.fixed_source)
