"""ATN101 missing-attention-scale: the harness proves the linter's scale fix by running it.

The buggy modules are in data/missing_scale_modules.py (single head with nn.Linear projections,
multi-head with view/transpose and `head_dim`, einsum "bhid,bhjd->bhij" with a fused qkv, bmm on
(b, n, d)). The fixed code is the linter's own (`verify_fix` runs `fix_source` with ATN101 only);
a wrong fix seen in public code (scaling by the model width `self.d_out` instead of the per-head dim)
is written by hand and must be rejected.

Head dims are 80 (sqrt(80) is not a power of two, so only tolerances can accept every correct
placement of the scale). Each `verify` call is one child process running float64 and float32.
"""

import math
from pathlib import Path

import pytest

from attnlint.config import Settings
from attnlint.engine import fix_source
from attnlint.verify import verify, verify_fix
from attnlint.verify.extract import extract_entry

DATA = Path(__file__).parent / "data"
SOURCE = (DATA / "missing_scale_modules.py").read_text(encoding="utf-8")
CPU = {"devices": ["cpu"]}  # float64 and float32

WITNESS_BUG = "witness_original_silently_wrong"
MATCHES_NAIVE = "fixed_matches_float64_naive_kernel"
MATCHES_SDPA = "fixed_matches_float64_sdpa"
GRADIENT = "fixed_gradient_matches_float64_reference"
SINGLE_KEY = "single_key_bit_identical"
FIRST_QUERY = "causal_first_query_bit_identical"
COMMON = [WITNESS_BUG, MATCHES_NAIVE, MATCHES_SDPA, GRADIENT, SINGLE_KEY]

MHA_KWARGS = {"d_in": 24, "d_out": 160, "num_heads": 2, "context_length": 16, "dropout": 0.0}
CASES = {
    "SingleHeadAttention": {"init_kwargs": {"d_in": 12, "d_out": 80}},
    "MultiHeadAttention": {"causal": True, "init_kwargs": MHA_KWARGS},
    "EinsumAttention": {"init_kwargs": {"dim": 20, "heads": 3, "dim_head": 80}},
    "BmmAttention": {"init_kwargs": {"d_model": 80}},
}
# What the linter writes: the per-head dim the code names (`self.head_dim`, whatever numbers the
# smoke test passes), else read from an operand's contracted axis.
EXPECTED_FIX = {
    "SingleHeadAttention": "attn_scores = (queries @ keys.transpose(1, 2)) * queries.shape[-1] ** -0.5",
    "MultiHeadAttention": "attn_scores = (queries @ keys.transpose(2, 3)) * self.head_dim ** -0.5",
    "EinsumAttention": 'sim = torch.einsum("bhid,bhjd->bhij", q, k) * q.shape[-1] ** -0.5',
    "BmmAttention": "F.softmax(torch.bmm(query, key.transpose(1, 2)) * query.shape[-1] ** -0.5, dim=2)",
}


def linter_fixed(source: str = SOURCE) -> str:
    return fix_source(source, "x.py", Settings(select=["ATN101"]), unsafe=True).fixed_source


def by_dtype(reports):
    return {r.dtype: r for r in reports}


def summaries(reports):
    return "\n".join(r.summary() for r in reports)


@pytest.fixture(scope="module", params=sorted(CASES))
def linter_fix_reports(request):
    entry = request.param
    return entry, by_dtype(verify_fix("ATN101", SOURCE, entry=entry, params=CASES[entry], **CPU))


# ---------------------------------------------------------------------------------------------
# The linter's own fix, on every style
# ---------------------------------------------------------------------------------------------
def test_linter_writes_the_per_head_scale():
    fixed = linter_fixed()
    for entry, line in EXPECTED_FIX.items():
        assert line in extract_entry(fixed, entry), entry
    assert "d_out **" not in fixed and "d_out**" not in fixed


def test_linter_fix_is_verified(linter_fix_reports):
    entry, reports = linter_fix_reports
    assert set(reports) == {"float64", "float32"}
    for dtype, report in reports.items():
        assert (report.rule_code, report.device) == ("ATN101", "cpu")
        expected = COMMON + ([FIRST_QUERY] if CASES[entry].get("causal") else [])
        assert [c.name for c in report.checks] == expected
        assert report.ok, report.summary()
        m = report.measurements
        assert m["head_dim"] == 80
        # Fixed: within FlashAttention's bound of the float64 naive kernel and of float64 SDPA.
        for witness in ("witness", "single_token"):
            assert m[f"{witness}_fixed_max_error"] <= m[f"{witness}_fixed_bound"]
            assert m[f"{witness}_fixed_grad_max_error"] <= m[f"{witness}_grad_bound"]
        ceiling = 1e-13 if dtype == "float64" else 1e-5
        assert m["witness_fixed_max_error"] < ceiling and m["witness_fixed_sdpa_max_error"] < ceiling
        # Buggy: wrong by O(1), not by rounding.
        assert m["witness_original_max_error"] > 0.1
        assert m["witness_original_max_error"] > 1e4 * m["witness_bound"]
        assert math.log10(m["witness_original_max_error"] / max(m["witness_fixed_max_error"], 1e-30)) > 5


def test_heads_and_projections_are_found(linter_fix_reports):
    entry, reports = linter_fix_reports
    expected = {
        "SingleHeadAttention": "W_query/W_key/W_value, heads=1",
        "MultiHeadAttention": "W_query/W_key/W_value, heads=2 (num_heads), head_dim=80, out=out_proj, causal=True",
        "EinsumAttention": "to_qkv[q]/to_qkv[k]/to_qkv[v], heads=3 (heads), head_dim=80, out=to_out",
        "BmmAttention": "query_proj/key_proj/value_proj, heads=1",
    }[entry]
    for report in reports.values():
        assert expected in report.check(WITNESS_BUG).detail


# ---------------------------------------------------------------------------------------------
# Where a missing scale is invisible: the witnesses matter
# ---------------------------------------------------------------------------------------------
def test_one_key_hides_the_bug(linter_fix_reports):
    # n_q = n_k = 1: a softmax over one score is exactly 1, whatever the scale.
    _, reports = linter_fix_reports
    for report in reports.values():
        m = report.measurements
        assert report.check(SINGLE_KEY).passed
        assert m["single_token_original_equals_fixed"] == 1.0
        assert m["single_token_bug_visible"] == 0.0
        assert m["single_token_original_max_error"] <= m["single_token_bound"]


def test_first_query_under_a_causal_mask_hides_the_bug(linter_fix_reports):
    entry, reports = linter_fix_reports
    if not CASES[entry].get("causal"):  # query 0 sees every key without a causal mask
        assert all(FIRST_QUERY not in {c.name for c in r.checks} for r in reports.values())
        return
    for report in reports.values():
        m = report.measurements
        assert report.check(FIRST_QUERY).passed
        assert m["first_query_original_vs_fixed_max_diff"] == 0.0
        assert m["later_queries_original_vs_fixed_max_diff"] > 0.1


def test_head_dim_one_hides_the_bug():
    # 3 heads of dim 1: the scale is 1 ** -0.5 == 1.0, so the harness cannot tell bug from fix.
    params = {"causal": True, "init_kwargs": dict(MHA_KWARGS, d_out=3, num_heads=3)}
    reports = verify_fix("ATN101", SOURCE, entry="MultiHeadAttention", params=params, **CPU)
    assert {r.dtype for r in reports} == {"float64", "float32"}
    for report in reports:
        assert report.measurements["head_dim"] == 1
        assert not report.ok
        assert {c.name for c in report.failed_checks()} == {WITNESS_BUG}, report.summary()
        assert "bug NOT visible" in report.check(WITNESS_BUG).detail
        assert report.measurements["witness_original_equals_fixed"] == 1.0
        assert report.measurements["witness_original_max_error"] <= report.measurements["witness_bound"]


# ---------------------------------------------------------------------------------------------
# The harness catches a wrong fix: d_model instead of the per-head dim
# ---------------------------------------------------------------------------------------------
def test_scaling_by_the_model_width_is_rejected():
    bug = "attn_scores = queries @ keys.transpose(2, 3)"
    assert SOURCE.count(bug) == 1
    wrong = SOURCE.replace(bug, "attn_scores = (queries @ keys.transpose(2, 3)) * self.d_out ** -0.5")
    reports = verify("ATN101", SOURCE, wrong, entry="MultiHeadAttention", params=CASES["MultiHeadAttention"], **CPU)
    assert {r.dtype for r in reports} == {"float64", "float32"}
    for report in reports:
        assert not report.ok
        # Only the comparisons with the per-head reference fail; the bug is still shown, and the
        # wrong fix is as inert as the right one where the scale cannot matter.
        assert {c.name for c in report.failed_checks()} == {MATCHES_NAIVE, MATCHES_SDPA, GRADIENT}, report.summary()
        assert report.check(WITNESS_BUG).passed and report.check(SINGLE_KEY).passed
        m = report.measurements
        assert m["witness_fixed_max_error"] > 0.01
        assert m["witness_fixed_max_error"] > 1e4 * m["witness_fixed_bound"]
        assert m["witness_fixed_sdpa_max_error"] > 0.01


# ---------------------------------------------------------------------------------------------
# Scale placement: bit-identical only when sqrt(d) is a power of two
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype_name", ["float64", "float32"])
@pytest.mark.parametrize("head_dim, bit_identical", [(64, True), (80, False)])
def test_scale_placement_needs_a_tolerance_at_head_dim_80(head_dim, bit_identical, dtype_name):
    # The linter scales the scores; timm-style code scales the queries before the product. Both are
    # right; only at sqrt(d) a power of two (d = 64) are they the same bits.
    torch = pytest.importorskip("torch")
    from attnlint.verify.loading import build_pair, load_source
    from attnlint.verify.recipes import _score_softmax as common
    from attnlint.verify.tolerance import flash_rule

    entry = "SingleHeadAttention"
    bug = "attn_scores = queries @ keys.transpose(1, 2)"
    prescaled = SOURCE.replace(bug, "attn_scores = (queries / math.sqrt(keys.shape[-1])) @ keys.transpose(1, 2)")
    scores_scaled = load_source(extract_entry(linter_fixed(), entry), f"atn101_scores_{head_dim}")
    queries_scaled = load_source(extract_entry(prescaled, entry), f"atn101_queries_{head_dim}")
    pair = build_pair(getattr(scores_scaled, entry), getattr(queries_scaled, entry), {"d_in": 12, "d_out": head_dim}, 0)
    dtype = getattr(torch, dtype_name)
    on_scores, on_queries = (module.to(dtype) for module in pair)
    spec = common.build_spec(on_scores, {})
    x = common.make_input((2, 7, 12), 0, "cpu", dtype)
    refs = common.references(on_scores, x, spec)
    with torch.no_grad():
        out_scores, out_queries = on_scores(x), on_queries(x)
    assert torch.equal(out_scores, out_queries) is bit_identical
    # Either placement is a correct fix: both pass FlashAttention's rule.
    assert flash_rule(out_scores, refs.golden, refs.plain).passed
    assert flash_rule(out_queries, refs.golden, refs.plain).passed


# ---------------------------------------------------------------------------------------------
# CUDA (only where a GPU exists; never queried at import time)
# ---------------------------------------------------------------------------------------------
@pytest.mark.cuda
def test_cuda_float32_float16_bfloat16():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device: torch.cuda.is_available() is False")
    entry = "MultiHeadAttention"
    reports = verify_fix("ATN101", SOURCE, entry=entry, params=CASES[entry], devices=["cuda"])
    assert {r.dtype for r in reports} == {"float32", "float16", "bfloat16"}, summaries(reports)
    for report in reports:
        assert report.device == "cuda"
        assert report.ok, report.summary()
        assert report.measurements["witness_original_max_error"] > 10 * report.measurements["witness_bound"]
    bug = "attn_scores = queries @ keys.transpose(2, 3)"
    wrong = SOURCE.replace(bug, "attn_scores = (queries @ keys.transpose(2, 3)) * self.d_out ** -0.5")
    rejected = verify("ATN101", SOURCE, wrong, entry=entry, params=CASES[entry], devices=["cuda"])
    assert rejected and not any(r.ok for r in rejected), summaries(rejected)
