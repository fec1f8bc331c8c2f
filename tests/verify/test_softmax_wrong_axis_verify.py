"""ATN102 softmax-wrong-axis: the harness proves the linter's `dim` fix by running it.

The buggy modules are in data/softmax_axis_modules.py: key-major scores `k @ q^T` normalised over the
query axis (fix: dim=-2), `nn.Softmax(dim=1)` built in __init__ over (b, n_q, n_k) scores (fix: the
constructor's dim=-1), and nanoGPT-style multi-head code normalising over the heads axis (fix:
dim=-1). The fixed code is the linter's own (`verify_fix`, ATN102 only). Each `verify` call is one
child process running float64 and float32.
"""

from pathlib import Path

import pytest

from attnlint.config import Settings
from attnlint.engine import fix_source
from attnlint.verify import verify, verify_fix
from attnlint.verify.extract import extract_entry

DATA = Path(__file__).parent / "data"
SOURCE = (DATA / "softmax_axis_modules.py").read_text(encoding="utf-8")
CPU = {"devices": ["cpu"]}  # float64 and float32

WITNESS_BUG = "witness_original_silently_wrong"
MATCHES_NAIVE = "fixed_matches_float64_naive_kernel"
MATCHES_SDPA = "fixed_matches_float64_sdpa"
GRADIENT = "fixed_gradient_matches_float64_reference"
ALL_CHECKS = [WITNESS_BUG, MATCHES_NAIVE, MATCHES_SDPA, GRADIENT]

CASES = {
    "KeyMajorAttention": {"init_kwargs": {"d_in": 12, "d_out": 80}},
    "SoftmaxModuleAttention": {"init_kwargs": {"d_in": 12, "d_out": 80}},
    "HeadsAxisSelfAttention": {"init_kwargs": {"n_embd": 160, "n_head": 2}},
}
EXPECTED_FIX = {
    "KeyMajorAttention": "weights = torch.softmax(scores, dim=-2)",
    "SoftmaxModuleAttention": "self.softmax = nn.Softmax(dim=-1)",
    "HeadsAxisSelfAttention": "att = F.softmax(att, dim=-1)",
}
# The wrong axis is a token axis (invisible at n_q = n_k = 1) except for the heads-axis module.
TOKEN_AXIS_BUG = {"KeyMajorAttention": True, "SoftmaxModuleAttention": True, "HeadsAxisSelfAttention": False}


def summaries(reports):
    return "\n".join(r.summary() for r in reports)


@pytest.fixture(scope="module", params=sorted(CASES))
def linter_fix_reports(request):
    entry = request.param
    reports = verify_fix("ATN102", SOURCE, entry=entry, params=CASES[entry], **CPU)
    return entry, {r.dtype: r for r in reports}


def test_linter_fix_sets_the_key_axis():
    fixed = fix_source(SOURCE, "x.py", Settings(select=["ATN102"]), unsafe=True).fixed_source
    for entry, line in EXPECTED_FIX.items():
        assert line in extract_entry(fixed, entry), entry


def test_linter_fix_is_verified(linter_fix_reports):
    entry, reports = linter_fix_reports
    assert set(reports) == {"float64", "float32"}
    for dtype, report in reports.items():
        assert (report.rule_code, report.device) == ("ATN102", "cpu")
        assert [c.name for c in report.checks] == ALL_CHECKS
        assert report.ok, report.summary()
        m = report.measurements
        assert m["head_dim"] == 80
        for witness in ("witness", "single_token"):
            assert m[f"{witness}_fixed_max_error"] <= m[f"{witness}_fixed_bound"]
            assert m[f"{witness}_fixed_grad_max_error"] <= m[f"{witness}_grad_bound"]
        ceiling = 1e-13 if dtype == "float64" else 1e-5
        assert m["witness_fixed_max_error"] < ceiling and m["witness_fixed_sdpa_max_error"] < ceiling
        # The weights sum to one over the wrong axis: wrong by O(0.1), not by rounding.
        assert m["witness_original_max_error"] > 0.1
        assert m["witness_original_max_error"] > 1e4 * m["witness_bound"]


def test_single_token_hides_a_token_axis_bug(linter_fix_reports):
    # n_q = n_k = 1: a softmax over a size-1 axis is exactly 1. Over the heads axis it is not.
    entry, reports = linter_fix_reports
    for report in reports.values():
        m = report.measurements
        if TOKEN_AXIS_BUG[entry]:
            assert m["single_token_bug_visible"] == 0.0
            assert m["single_token_original_equals_fixed"] == 1.0
            assert m["single_token_original_max_error"] <= m["single_token_bound"]
        else:
            assert m["single_token_bug_visible"] == 1.0
            assert m["single_token_original_max_error"] > 0.1


def test_one_token_witness_cannot_see_the_bug():
    params = dict(CASES["KeyMajorAttention"], witness={"batch": 2, "tokens": 1})
    reports = verify_fix("ATN102", SOURCE, entry="KeyMajorAttention", params=params, **CPU)
    assert {r.dtype for r in reports} == {"float64", "float32"}
    for report in reports:
        assert not report.ok
        assert {c.name for c in report.failed_checks()} == {WITNESS_BUG}, report.summary()
        assert "bug NOT visible" in report.check(WITNESS_BUG).detail
        assert report.measurements["witness_original_equals_fixed"] == 1.0


def test_softmax_over_the_query_axis_is_a_wrong_fix():
    # Moving the softmax from the heads axis to the query axis (dim=2) is still not the keys.
    bug = "att = F.softmax(att, dim=1)"
    assert SOURCE.count(bug) == 1
    wrong = SOURCE.replace(bug, "att = F.softmax(att, dim=2)")
    params = CASES["HeadsAxisSelfAttention"]
    reports = verify("ATN102", SOURCE, wrong, entry="HeadsAxisSelfAttention", params=params, **CPU)
    assert {r.dtype for r in reports} == {"float64", "float32"}
    for report in reports:
        assert not report.ok
        assert {c.name for c in report.failed_checks()} == {MATCHES_NAIVE, MATCHES_SDPA, GRADIENT}, report.summary()
        assert report.check(WITNESS_BUG).passed
        m = report.measurements
        assert m["witness_fixed_max_error"] > 0.01 and m["witness_fixed_max_error"] > 1e4 * m["witness_fixed_bound"]
        # At one token the query axis has size 1: this wrong fix is invisible there, unlike the bug.
        assert m["single_token_fixed_max_error"] <= m["single_token_fixed_bound"]


@pytest.mark.cuda
def test_cuda_float32_float16_bfloat16():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device: torch.cuda.is_available() is False")
    for entry in ("KeyMajorAttention", "HeadsAxisSelfAttention"):
        reports = verify_fix("ATN102", SOURCE, entry=entry, params=CASES[entry], devices=["cuda"])
        assert {r.dtype for r in reports} == {"float32", "float16", "bfloat16"}, summaries(reports)
        for report in reports:
            assert report.device == "cuda"
            assert report.ok, report.summary()
            assert report.measurements["witness_original_max_error"] > 10 * report.measurements["witness_bound"]
