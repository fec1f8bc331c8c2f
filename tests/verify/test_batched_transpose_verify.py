"""ATN103 batched-transpose: the harness proves the fix `X.T` -> `X.transpose(-2, -1)` by running it.

The buggy code is the seed's `SelfAttentionV1` (`queries @ keys.T` with x: (batch, tokens, d_in)).
The fixed text is written by hand from the rule's definition, so these tests do not depend on the
rule's implementation.
"""

import math
from pathlib import Path

import pytest

from attnlint.verify import VerificationReport, verify
from attnlint.verify.extract import extract_entry

DATA = Path(__file__).parent / "data"
SEED = (DATA / "seed_self_attention.py").read_text(encoding="utf-8")
VARIANTS = (DATA / "variants.py").read_text(encoding="utf-8")

BUG = "queries @ keys.T"
CPU = {"devices": ["cpu"]}  # the CPU dtypes by default: float64 and float32

UNBATCHED = "unbatched_output_bit_identical"
NON_CUBE = "non_cube_batch_original_crashes_fixed_runs"
CUBE_BUG = "cube_witness_original_silently_wrong"
MATCHES_NAIVE = "fixed_matches_float64_naive_kernel"
MATCHES_SDPA = "fixed_matches_float64_sdpa"
GRADIENT = "fixed_gradient_matches_float64_reference"
ALL_CHECKS = [UNBATCHED, NON_CUBE, CUBE_BUG, MATCHES_NAIVE, MATCHES_SDPA, GRADIENT]


def fixed_by_hand(source: str) -> str:
    """ATN103's fix, applied as the rule defines it: `keys.T` -> `keys.transpose(-2, -1)`."""
    assert BUG in source
    return source.replace(BUG, "queries @ keys.transpose(-2, -1)")


def by_dtype(reports):
    return {r.dtype: r for r in reports}


@pytest.fixture(scope="module")
def seed_reports():
    return by_dtype(verify("ATN103", SEED, fixed_by_hand(SEED), entry="SelfAttentionV1", **CPU))


# ---------------------------------------------------------------------------------------------
# The correct fix on the seed
# ---------------------------------------------------------------------------------------------
def test_cpu_runs_in_float64_and_float32_with_every_check(seed_reports):
    assert set(seed_reports) == {"float64", "float32"}
    for report in seed_reports.values():
        assert isinstance(report, VerificationReport)
        assert (report.rule_code, report.device) == ("ATN103", "cpu")
        assert [c.name for c in report.checks] == ALL_CHECKS
        assert report.ok, report.summary()


def test_unbatched_input_gives_torch_equal_outputs(seed_reports):
    for report in seed_reports.values():
        check = report.check(UNBATCHED)
        assert check.passed and "torch.equal on 2-D input" in check.detail


def test_non_cube_batch_crashes_the_original_and_not_the_fix(seed_reports):
    for report in seed_reports.values():
        check = report.check(NON_CUBE)
        assert check.passed
        assert "original raises RuntimeError" in check.detail
        assert "fixed runs -> (2, 7, 6)" in check.detail  # batch 2, tokens d+1 = 7, d_out 6


def test_cube_witness_shows_the_bug_far_outside_tolerance(seed_reports):
    for report in seed_reports.values():
        m = report.measurements
        assert report.check(CUBE_BUG).passed
        assert "deprecation warning seen" in report.check(CUBE_BUG).detail
        # Not a rounding question: orders of magnitude past the bound, and wrong in absolute terms.
        assert m["cube_original_max_error"] > 1e4 * m["cube_bound"]
        assert m["cube_original_max_error"] > 0.1


def test_fixed_output_and_gradient_are_within_tolerance(seed_reports):
    for dtype, report in seed_reports.items():
        m = report.measurements
        for witness in ("cube", "non_cube"):
            assert m[f"{witness}_fixed_max_error"] <= m[f"{witness}_bound"]
            assert m[f"{witness}_fixed_grad_max_error"] <= m[f"{witness}_grad_bound"]
        ceiling = 1e-13 if dtype == "float64" else 1e-5
        assert m["cube_fixed_max_error"] < ceiling
        assert m["cube_fixed_sdpa_max_error"] < ceiling
        assert report.check(MATCHES_NAIVE).passed and report.check(MATCHES_SDPA).passed
        assert report.check(GRADIENT).passed


def test_bug_and_fix_are_separated_by_many_orders_of_magnitude(seed_reports):
    m = seed_reports["float32"].measurements
    assert math.log10(m["cube_original_max_error"] / max(m["cube_fixed_max_error"], 1e-30)) > 5


# ---------------------------------------------------------------------------------------------
# The harness must be able to fail
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "wrong_fix, must_fail",
    [
        # No fix at all: still crashes on the non-cube batch, still wrong on the cube.
        ("queries @ keys.T", {NON_CUBE, MATCHES_NAIVE, MATCHES_SDPA, GRADIENT}),
        # Reverses all dims like .T: raises on 2-D input, where the old code was right.
        ("queries @ keys.permute(2, 1, 0)", {UNBATCHED, NON_CUBE, MATCHES_NAIVE, MATCHES_SDPA, GRADIENT}),
        # Plausible and bit-identical on 2-D input, but swaps batch and tokens on 3-D input:
        # only the batched witnesses can expose it.
        ("queries @ keys.transpose(0, 1)", {NON_CUBE, MATCHES_NAIVE, MATCHES_SDPA, GRADIENT}),
    ],
    ids=["unfixed", "permute-210", "transpose-0-1"],
)
def test_wrong_fix_is_rejected(wrong_fix, must_fail):
    reports = verify("ATN103", SEED, SEED.replace(BUG, wrong_fix), entry="SelfAttentionV1", **CPU)
    assert {r.dtype for r in reports} == {"float64", "float32"}
    for report in reports:
        assert not report.ok
        failed = {c.name for c in report.failed_checks()}
        assert failed == must_fail, report.summary()
        # The original is still shown to be buggy: the failure is the fix's, not the harness's.
        assert report.check(CUBE_BUG).passed
        m = report.measurements
        if "cube_fixed_max_error" in m:  # the wrong fix ran on the cube: wrong by far, not by rounding
            assert m["cube_fixed_max_error"] > 1e4 * m["cube_bound"]
    if wrong_fix.endswith("transpose(0, 1)"):
        assert all(r.check(UNBATCHED).passed for r in reports)  # it fools the 2-D check, not the cube


# ---------------------------------------------------------------------------------------------
# Other spellings and styles
# ---------------------------------------------------------------------------------------------
def test_mT_is_an_equally_correct_fix():
    reports = verify("ATN103", SEED, SEED.replace(BUG, "queries @ keys.mT"), entry="SelfAttentionV1", **CPU)
    assert all(r.ok for r in reports), "\n".join(r.summary() for r in reports)


def test_linear_projections_with_bias():
    fixed = fixed_by_hand(extract_entry(VARIANTS, "LinearSelfAttention"))
    reports = verify("ATN103", VARIANTS, fixed, entry="LinearSelfAttention", **CPU)
    assert len(reports) == 2 and all(r.ok for r in reports), "\n".join(r.summary() for r in reports)


def test_causal_module_with_mask_buffer():
    reports = verify(
        "ATN103",
        VARIANTS,
        VARIANTS.replace(BUG, "queries @ keys.transpose(-2, -1)"),
        entry="CausalAttention",
        params={"causal": True, "init_kwargs": {"d_in": 5, "d_out": 3, "context_length": 8}},
        **CPU,
    )
    for report in reports:
        assert report.ok, report.summary()
        assert "(3, 3, 5)" in report.check(CUBE_BUG).detail  # the cube follows the key width


# ---------------------------------------------------------------------------------------------
# CUDA (only where a GPU exists; never queried at import time)
# ---------------------------------------------------------------------------------------------
@pytest.mark.cuda
def test_cuda_float32_float16_bfloat16():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device: torch.cuda.is_available() is False")
    reports = verify("ATN103", SEED, fixed_by_hand(SEED), entry="SelfAttentionV1", devices=["cuda"])
    assert {r.dtype for r in reports} == {"float32", "float16", "bfloat16"}
    for report in reports:
        assert report.device == "cuda"
        assert report.ok, report.summary()
        assert report.measurements["cube_original_max_error"] > 10 * report.measurements["cube_bound"]
    wrong_fix = SEED.replace(BUG, "queries @ keys.transpose(0, 1)")
    wrong = verify("ATN103", SEED, wrong_fix, entry="SelfAttentionV1", devices=["cuda"])
    assert wrong and not any(r.ok for r in wrong)


# ---------------------------------------------------------------------------------------------
# The engine's own fix, once the rule exists
# ---------------------------------------------------------------------------------------------
def test_verify_fix_uses_the_engine():
    pytest.importorskip(
        "attnlint.rules.batched_transpose",
        reason="rule ATN103 (attnlint.rules.batched_transpose) is not implemented yet",
    )
    from attnlint.verify import verify_fix

    reports = verify_fix("ATN103", SEED, entry="SelfAttentionV1", **CPU)
    assert reports and all(r.ok for r in reports), "\n".join(r.summary() for r in reports)


# ---------------------------------------------------------------------------------------------
# The recipe's building blocks, in-process (the facts the harness relies on)
# ---------------------------------------------------------------------------------------------
def test_building_blocks_in_process():
    torch = pytest.importorskip("torch")
    from attnlint.verify.loading import build_pair, load_source
    from attnlint.verify.recipes import batched_transpose as recipe

    original_mod = load_source(extract_entry(SEED, "SelfAttentionV1"), "test_atn103_original")
    fixed_mod = load_source(fixed_by_hand(extract_entry(SEED, "SelfAttentionV1")), "test_atn103_fixed")
    original, fixed = build_pair(original_mod.SelfAttentionV1, fixed_mod.SelfAttentionV1, {"d_in": 7, "d_out": 6}, 0)
    assert all(torch.equal(a, b) for a, b in zip(original.state_dict().values(), fixed.state_dict().values()))

    spec = recipe.build_spec(original, {})
    assert (spec.d_in, spec.d_key) == (7, 6)
    assert {p.layout for p in (spec.q, spec.k, spec.v)} == {"in_out"}  # x @ W, the book's layout
    shapes = recipe.witness_shapes(spec)
    assert shapes == {"unbatched": (8, 7), "non_cube": (2, 7, 7), "cube": (6, 6, 7)}

    x2 = recipe.make_input(shapes["unbatched"], 0, "cpu", torch.float32)
    with torch.no_grad():
        assert torch.equal(original(x2), fixed(x2))  # bit for bit where `.T` was right
    cube = recipe.make_input(shapes["cube"], 0, "cpu", torch.float32)
    refs = recipe.references(original, cube, spec)
    warn_always = torch.is_warn_always_enabled()
    torch.set_warn_always(True)  # the `.T` deprecation warning is once per process otherwise
    try:
        with torch.no_grad(), pytest.warns(UserWarning, match="x.T"):
            assert float((original(cube).double() - refs.golden).abs().max()) > 0.1
    finally:
        torch.set_warn_always(warn_always)
    with torch.no_grad():
        assert float((fixed(cube).double() - refs.golden).abs().max()) < 1e-5
    with pytest.raises(RuntimeError), torch.no_grad(), pytest.warns(UserWarning, match="x.T"):
        torch.set_warn_always(True)
        try:
            original(recipe.make_input(shapes["non_cube"], 0, "cpu", torch.float32))
        finally:
            torch.set_warn_always(warn_always)
