"""ATN201-ATN205 (the masking rules): the harness proves the linter's fixes by running them.

The buggy code is in data/masking_modules.py (one or more entries per rule, in the styles of the rules'
INVALID examples). The fixed code is the linter's own: `verify_fix` runs `fix_source` with one rule
selected and unsafe fixes on. For each rule at least one WRONG fix, written by hand, must be
rejected. Each `verify`/`verify_fix` call is one child process that runs float64 and float32 on the
CPU (CUDA tests are marked and skip cleanly without a device).

Witnesses (shared/notes/verification-facts.md): padded batches of lengths {7, 5, 1, 0}, right and left
padding, garbage in the padded slots drawn twice; inputs shorter than, equal to and longer than a
mask buffer; backward passes through fully masked rows.
"""

import math
from functools import lru_cache
from pathlib import Path

import pytest

from attnlint.config import Settings
from attnlint.engine import fix_source
from attnlint.verify import supported_rules, verify, verify_fix
from attnlint.verify.extract import extract_entry

DATA = Path(__file__).parent / "data"
SOURCE = (DATA / "masking_modules.py").read_text(encoding="utf-8")
CPU = {"devices": ["cpu"]}  # float64 and float32
FLOAT32 = {"devices": ["cpu"], "dtypes": {"cpu": ["float32"]}}

MHA = {"d_model": 12, "num_heads": 2}
CASES = {
    ("ATN201", "lm_loss"): {},
    ("ATN201", "summed_lm_loss"): {},
    ("ATN201", "TaggerTrainer"): {
        "method": "training_step",
        "init_kwargs": {"vocab_size": 11, "d_model": 6, "num_tags": 5},
    },
    ("ATN202", "EncoderBlock"): {"init_kwargs": MHA},
    ("ATN202", "SdpaSelfAttention"): {"init_kwargs": MHA},
    ("ATN203", "PaddedSelfAttention"): {"init_kwargs": MHA},
    ("ATN203", "CausalPaddedAttention"): {"init_kwargs": MHA, "causal": True},
    ("ATN203", "padded_attention"): {"call": "qkv"},
    ("ATN204", "CausalAttention"): {"init_kwargs": {"d_in": 7, "d_out": 6, "context_length": 10, "dropout": 0.0}},
    ("ATN204", "CausalSelfAttention"): {"init_kwargs": {"n_embd": 12, "n_head": 2, "block_size": 10}},
    ("ATN205", "CausalSdpaAttention"): {"init_kwargs": MHA},
    ("ATN205", "PaddedEncoder"): {"init_kwargs": MHA},
}

ATN201_CHECKS = [
    "witness_original_trains_padding",
    "fixed_matches_float64_loss",
    "fixed_matches_float64_naive_loss",
    "fixed_gradient_matches_float64_reference",
    "fixed_padding_gets_no_gradient",
    "fixed_ignores_padding_garbage",
    "no_padding_bit_identical",
    "all_ignored_matches_reference",
]
PADDED_CHECKS = [
    "witness_original_wrong",
    "fixed_ignores_padding_garbage",
    "fixed_matches_float64_naive_kernel",
    "fixed_matches_float64_sdpa",
    "fixed_matches_unpadded_original",
    "fixed_gradient_matches_float64_reference",
    "no_padding_bit_identical",
]
ATN203_CHECKS = [
    "witness_original_nan",
    "fixed_output_finite",
    "fixed_matches_float64_naive_kernel",
    "fixed_matches_float64_sdpa",
    "fixed_gradients_finite",
    "fixed_gradient_matches_float64_reference",
    "fixed_ignores_padding_garbage",
    "no_empty_rows_bit_identical",
]
ATN204_CHECKS = [
    "short_input_original_raises_fixed_runs",
    "fixed_matches_float64_naive_kernel",
    "fixed_matches_float64_sdpa",
    "fixed_gradient_matches_float64_reference",
    "full_length_bit_identical",
    "over_length_both_raise",
]
ATN205_CAUSAL_CHECKS = [
    "witness_original_wrong",
    "fixed_matches_float64_naive_kernel",
    "fixed_matches_float64_sdpa",
    "fixed_gradient_matches_float64_reference",
]
ATN205_PADDED_CHECKS = [
    c for c in PADDED_CHECKS if c not in ("fixed_matches_unpadded_original", "no_padding_bit_identical")
]
EXPECTED_CHECKS = {
    ("ATN201", "lm_loss"): ATN201_CHECKS,
    ("ATN201", "summed_lm_loss"): ATN201_CHECKS,
    # No `logits` argument: the padded logits come from the module, there is no garbage to plant.
    ("ATN201", "TaggerTrainer"): [c for c in ATN201_CHECKS if c != "fixed_ignores_padding_garbage"],
    ("ATN202", "EncoderBlock"): PADDED_CHECKS,
    ("ATN202", "SdpaSelfAttention"): PADDED_CHECKS,
    ("ATN203", "PaddedSelfAttention"): ATN203_CHECKS,
    ("ATN203", "CausalPaddedAttention"): ATN203_CHECKS,
    ("ATN203", "padded_attention"): ATN203_CHECKS,
    ("ATN204", "CausalAttention"): ATN204_CHECKS,
    ("ATN204", "CausalSelfAttention"): ATN204_CHECKS,
    ("ATN205", "CausalSdpaAttention"): ATN205_CAUSAL_CHECKS,
    ("ATN205", "PaddedEncoder"): ATN205_PADDED_CHECKS,
}
# What the linter writes, one rule at a time.
EXPECTED_FIX = {
    ("ATN201", "lm_loss"): "criterion = nn.CrossEntropyLoss(ignore_index=0)",
    ("ATN201", "summed_lm_loss"): 'targets.reshape(-1), reduction="sum", ignore_index=0)',
    ("ATN201", "TaggerTrainer"): "self.criterion = nn.CrossEntropyLoss(label_smoothing=0.1, ignore_index=0)",
    ("ATN202", "EncoderBlock"): "attn_out, _ = self.attn(x, x, x, key_padding_mask=key_padding_mask)",
    ("ATN202", "SdpaSelfAttention"): "y = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)",
    (
        "ATN203",
        "PaddedSelfAttention",
    ): "attn = F.softmax(scores, dim=-1).masked_fill(scores.isneginf().all(dim=-1, keepdim=True), 0.0)",
    (
        "ATN203",
        "CausalPaddedAttention",
    ): "weights = torch.softmax(scores, dim=-1).masked_fill(scores.isneginf().all(dim=-1, keepdim=True), 0.0)",
    (
        "ATN203",
        "padded_attention",
    ): "return s.softmax(dim=-1).masked_fill(s.isneginf().all(dim=-1, keepdim=True), 0.0) @ v",
    (
        "ATN204",
        "CausalAttention",
    ): "attn_scores.masked_fill_(self.mask[..., :num_tokens, :num_tokens].bool(), -torch.inf)",
    (
        "ATN204",
        "CausalSelfAttention",
    ): 'att = att.masked_fill(self.bias[..., :T, :T] == 0, float("-inf"))',
    ("ATN205", "CausalSdpaAttention"): "y = F.scaled_dot_product_attention(q, k, v, attn_mask=~future)",
    (
        "ATN205",
        "PaddedEncoder",
    ): "return self.mha(x, x, x, key_padding_mask=~(attention_mask == 1), need_weights=False)[0]",
}


@lru_cache(maxsize=None)
def linter_fixed(code: str) -> str:
    return fix_source(SOURCE, "x.py", Settings(select=[code]), unsafe=True).fixed_source


def replace_once(source: str, old: str, new: str) -> str:
    assert source.count(old) == 1, old
    return source.replace(old, new)


def by_dtype(reports):
    return {r.dtype: r for r in reports}


def failed(report):
    return {c.name for c in report.failed_checks()}


def ceiling(dtype: str) -> float:
    return 1e-12 if dtype == "float64" else 1e-5


@lru_cache(maxsize=None)
def linter_fix_reports(code: str, entry: str):
    """The linter's fix of one entry, verified once per session (one child process)."""
    return by_dtype(verify_fix(code, SOURCE, entry=entry, params=CASES[(code, entry)], **CPU))


def cases(code: str):
    return pytest.mark.parametrize("entry", [entry for c, entry in sorted(CASES) if c == code])


# ---------------------------------------------------------------------------------------------
# Registration and the linter's fixes
# ---------------------------------------------------------------------------------------------
def test_the_masking_rules_have_recipes():
    assert {"ATN201", "ATN202", "ATN203", "ATN204", "ATN205"} <= set(supported_rules())
    from attnlint.verify.recipes import rule_code_for

    assert rule_code_for("all-masked-row-nan") == "ATN203"
    assert rule_code_for("inverted-mask-convention") == "ATN205"


def test_linter_writes_the_expected_fixes():
    for (code, entry), line in EXPECTED_FIX.items():
        assert line in extract_entry(linter_fixed(code), entry), (code, entry)


def test_linter_refuses_to_fix_an_additive_mask():
    # Reported, but no fix: an additive -inf bias leaves NaN in the q/k gradients whatever follows.
    result = fix_source(SOURCE, "x.py", Settings(select=["ATN203"]), unsafe=True)
    entry = "additive_padded_attention"
    assert extract_entry(result.fixed_source, entry) == extract_entry(SOURCE, entry)
    assert any("-inf" in d.message for d in result.diagnostics)


@pytest.mark.parametrize("code, entry", sorted(CASES), ids=[f"{c}-{e}" for c, e in sorted(CASES)])
def test_linter_fix_is_verified(code, entry):
    reports = linter_fix_reports(code, entry)
    assert set(reports) == {"float64", "float32"}
    for report in reports.values():
        assert (report.rule_code, report.device) == (code, "cpu")
        assert [c.name for c in report.checks] == EXPECTED_CHECKS[(code, entry)], report.summary()
        assert report.ok, report.summary()


# ---------------------------------------------------------------------------------------------
# ATN201 cross-entropy-ignore-index
# ---------------------------------------------------------------------------------------------
@cases("ATN201")
def test_atn201_padding_is_trained_by_the_original_and_not_by_the_fix(entry):
    reports = linter_fix_reports("ATN201", entry)
    for dtype, report in reports.items():
        m = report.measurements
        assert m["padded_positions"] == 15  # 4 * 7 - (7 + 5 + 1 + 0)
        # The original's loss is off by O(1) (lm_loss: 5.90 vs 2.02), and the padding gets gradient.
        assert m["original_max_error"] > 0.1 and m["original_ratio"] > 1e4
        assert m["original_padded_grad_max"] > 1e-3
        # The fix: the float64 loss with an explicit ignore_index, to rounding; padding gets exactly 0.
        assert m["fixed_max_error"] <= m["fixed_bound"]
        assert m["fixed_naive_max_error"] < ceiling(dtype) * max(1.0, abs(m["reference_loss"]))
        assert m["fixed_padded_grad_max"] == 0.0
        assert m["fixed_grad_max_error"] <= m["fixed_grad_bound"]
        assert m["no_padding_max_diff"] == 0.0
        if entry != "TaggerTrainer":
            assert m["original_garbage_diff"] > 0.1 and m["fixed_garbage_diff"] == 0.0


@cases("ATN201")
def test_atn201_all_targets_ignored(entry):
    # reduction='mean' over no target is NaN, like the reference; 'sum' is 0.
    reports = linter_fix_reports("ATN201", entry)
    mean = entry != "summed_lm_loss"
    for report in reports.values():
        assert report.measurements["all_ignored_fixed_is_nan"] == float(mean)
        assert report.measurements["all_ignored_reference_is_nan"] == float(mean)


def test_atn201_wrong_ignore_index_is_rejected():
    wrong = replace_once(
        SOURCE, "    criterion = nn.CrossEntropyLoss()\n", "    criterion = nn.CrossEntropyLoss(ignore_index=-1)\n"
    )
    for report in verify("ATN201", SOURCE, wrong, entry="lm_loss", **CPU):
        assert not report.ok
        assert failed(report) == {
            "fixed_matches_float64_loss",
            "fixed_matches_float64_naive_loss",
            "fixed_gradient_matches_float64_reference",
            "fixed_padding_gets_no_gradient",
            "fixed_ignores_padding_garbage",
        }, report.summary()
        m = report.measurements
        assert m["fixed_max_error"] > 0.1 and m["fixed_padded_grad_max"] > 1e-3
        assert m["fixed_garbage_diff"] > 0.1


# ---------------------------------------------------------------------------------------------
# ATN202 unmasked-padding
# ---------------------------------------------------------------------------------------------
@cases("ATN202")
def test_atn202_real_tokens_ignore_the_padding_only_after_the_fix(entry):
    reports = linter_fix_reports("ATN202", entry)
    for dtype, report in reports.items():
        m = report.measurements
        for side in ("right", "left"):
            # Unmasked: the real outputs are off by O(1) and move with the garbage in the padding.
            assert m[f"{side}_original_max_error"] > 0.5
            assert m[f"{side}_original_garbage_diff"] > 0.5
            # Masked: bit-for-bit blind to the garbage, and equal to the reference to rounding.
            assert m[f"{side}_fixed_garbage_diff"] == 0.0
            assert m[f"{side}_fixed_max_error"] < ceiling(dtype)
            assert m[f"{side}_fixed_sdpa_max_error"] < ceiling(dtype)
            assert m[f"{side}_fixed_vs_unpadded_max_error"] < ceiling(dtype)
            assert m[f"{side}_fixed_dx_max_error"] <= m[f"{side}_dx_bound"]
        assert m["no_padding_max_diff"] == 0.0
        # The empty sequence: nn.MultiheadAttention returns NaN rows (ATN203's business), SDPA zeros.
        assert m["right_fixed_nan_rows"] == (7 if entry == "EncoderBlock" else 0)


def test_atn202_float_padding_mask_is_rejected():
    # A float key_padding_mask is *added* to the scores: +1 on the padded keys, which masks nothing.
    fixed = linter_fixed("ATN202")
    wrong = replace_once(fixed, "key_padding_mask=key_padding_mask)", "key_padding_mask=key_padding_mask.float())")
    reports = verify("ATN202", SOURCE, wrong, entry="EncoderBlock", params=CASES[("ATN202", "EncoderBlock")], **FLOAT32)
    (report,) = reports
    assert {
        "fixed_ignores_padding_garbage",
        "fixed_matches_float64_naive_kernel",
        "fixed_matches_float64_sdpa",
        "fixed_matches_unpadded_original",
    } <= failed(report), report.summary()
    assert report.check("witness_original_wrong").passed
    assert report.measurements["right_fixed_max_error"] > 0.1


# ---------------------------------------------------------------------------------------------
# ATN203 all-masked-row-nan
# ---------------------------------------------------------------------------------------------
@cases("ATN203")
def test_atn203_nan_rows_and_gradients_before_and_after(entry):
    reports = linter_fix_reports("ATN203", entry)
    heads = 2 if entry == "padded_attention" else 1
    # Fully masked rows of lengths {7, 5, 1, 0} padded to 7. Under a causal mask: the empty
    # sequence (7 rows), and with left padding the leading pads of the lengths-5 and -1 sequences
    # too (2 + 6). Where padded queries are masked: every padded query, either side (2 + 6 + 7).
    if entry == "CausalPaddedAttention":
        expected = {"right": 7, "left": 15}
    else:
        expected = {"right": 15 * heads, "left": 15 * heads}
    for dtype, report in reports.items():
        m = report.measurements
        for side in ("right", "left"):
            assert m[f"{side}_fully_masked_rows"] == expected[side]
            assert m[f"{side}_original_nan_rows"] == expected[side]
            assert m[f"{side}_original_nonfinite_grads"] > 0
            assert m[f"{side}_fixed_nan_rows"] == 0
            assert m[f"{side}_fixed_nonfinite_grads"] == 0
            assert m[f"{side}_fixed_max_error"] < ceiling(dtype)
            assert m[f"{side}_fixed_sdpa_max_error"] < ceiling(dtype)
            labels = ["dq", "dk", "dv"] if entry == "padded_attention" else ["dx"]
            for label in labels:
                assert m[f"{side}_fixed_{label}_max_error"] <= m[f"{side}_{label}_bound"]
        if entry == "CausalPaddedAttention":  # the module's q, k, v gradients (projection outputs)
            for proj in ("W_query", "W_key", "W_value"):
                assert m[f"right_fixed_d{proj}_max_error"] < 10 * ceiling(dtype)
        assert m["no_empty_rows_fully_masked_rows"] == 0 and m["no_empty_rows_max_diff"] == 0.0


def test_atn203_nan_to_num_after_an_additive_mask_is_rejected():
    # The forward pass is fixed (finite, equal to the reference), the backward is not: NaN dq/dk.
    wrong = replace_once(
        SOURCE,
        "    s = q @ k.transpose(-2, -1) * q.size(-1) ** -0.5 + bias[:, None]\n"
        "    return s.softmax(dim=-1) @ v\n",
        "    s = q @ k.transpose(-2, -1) * q.size(-1) ** -0.5 + bias[:, None]\n"
        "    return torch.nan_to_num(s.softmax(dim=-1)) @ v\n",
    )
    reports = by_dtype(
        verify("ATN203", SOURCE, wrong, entry="additive_padded_attention", params={"call": "qkv", "padded_queries": True}, **CPU)
    )
    assert set(reports) == {"float64", "float32"}
    for report in reports.values():
        assert failed(report) == {"fixed_gradients_finite", "fixed_gradient_matches_float64_reference"}, (
            report.summary()
        )
        m = report.measurements
        assert m["right_fixed_nan_rows"] == 0 and m["right_fixed_max_error"] < 1e-5
        # dq of every fully masked row (the 15 padded queries of lengths {7, 5, 1, 0}) and dk of
        # every key such a row reads (the 21 keys of the three padded sequences) are NaN, in each
        # of 2 heads, head_dim 8; dv is fine.
        assert m["right_fixed_nonfinite_grads"] == 2 * (15 + 21) * 8
        assert math.isinf(m["right_fixed_dq_max_error"]) and math.isinf(m["right_fixed_dk_max_error"])
        assert m["right_fixed_dv_max_error"] <= m["right_dv_bound"]


def test_atn203_finite_fill_is_rejected():
    # -1e9 instead of -inf: no NaN, but a fully masked row averages V instead of being 0.
    wrong = replace_once(
        SOURCE,
        'scores = scores.masked_fill(padded, float("-inf"))',
        "scores = scores.masked_fill(padded, -1e9)",
    )
    (report,) = verify(
        "ATN203", SOURCE, wrong, entry="PaddedSelfAttention", params=CASES[("ATN203", "PaddedSelfAttention")], **FLOAT32
    )
    assert {"fixed_matches_float64_naive_kernel", "fixed_matches_float64_sdpa"} <= failed(report), report.summary()
    assert report.check("fixed_output_finite").passed and report.check("fixed_gradients_finite").passed
    assert report.check("fixed_ignores_padding_garbage").passed
    assert report.measurements["right_fixed_max_error"] > 0.01


# ---------------------------------------------------------------------------------------------
# ATN204 unsliced-causal-mask
# ---------------------------------------------------------------------------------------------
@cases("ATN204")
def test_atn204_short_inputs_crash_only_the_original(entry):
    reports = linter_fix_reports("ATN204", entry)
    for dtype, report in reports.items():
        m = report.measurements
        assert m["context_length"] == 10 and m["short_inputs_original_raised"] == 1.0
        for t in (1, 5, 9, 10):
            assert m[f"T{t}_fixed_max_error"] < ceiling(dtype)
            assert m[f"T{t}_fixed_sdpa_max_error"] < ceiling(dtype)
        assert m["full_length_max_diff"] == 0.0  # T == context_length: torch.equal
        assert "raises" in report.check("over_length_both_raise").detail


def test_atn204_slice_to_t_minus_one_is_rejected():
    fixed = linter_fixed("ATN204")
    wrong = replace_once(
        fixed,
        "self.mask[..., :num_tokens, :num_tokens]",
        "self.mask[..., :num_tokens - 1, :num_tokens - 1]",
    )
    params = CASES[("ATN204", "CausalAttention")]
    (report,) = verify("ATN204", SOURCE, wrong, entry="CausalAttention", params=params, **FLOAT32)
    assert {
        "short_input_original_raises_fixed_runs",
        "fixed_matches_float64_naive_kernel",
        "full_length_bit_identical",
    } <= failed(report), report.summary()
    assert "fixed raises" in report.check("short_input_original_raises_fixed_runs").detail


def test_atn204_wrong_block_passes_at_full_length_and_is_caught_below_it():
    # [:T, -T:] takes the top-right block: at T == context_length it is the whole buffer (bit-identical),
    # shorter inputs run but mask the wrong keys -- the first context_length - T rows see no key
    # at all, so they are NaN. Only the T < context_length witness catches it.
    fixed = linter_fixed("ATN204")
    wrong = replace_once(
        fixed,
        "self.mask[..., :num_tokens, :num_tokens]",
        "self.mask[..., :num_tokens, -num_tokens:]",
    )
    params = CASES[("ATN204", "CausalAttention")]
    (report,) = verify("ATN204", SOURCE, wrong, entry="CausalAttention", params=params, **FLOAT32)
    assert failed(report) == {
        "short_input_original_raises_fixed_runs",
        "fixed_matches_float64_naive_kernel",
        "fixed_matches_float64_sdpa",
        "fixed_gradient_matches_float64_reference",
    }, report.summary()
    assert "not finite" in report.check("short_input_original_raises_fixed_runs").detail
    m = report.measurements
    assert m["full_length_max_diff"] == 0.0 and m["T10_fixed_max_error"] < 1e-5
    assert math.isinf(m["T5_fixed_max_error"])  # NaN rows count as infinitely far


# ---------------------------------------------------------------------------------------------
# ATN205 inverted-mask-convention
# ---------------------------------------------------------------------------------------------
@cases("ATN205")
def test_atn205_inverted_masks_are_silently_wrong(entry):
    reports = linter_fix_reports("ATN205", entry)
    for dtype, report in reports.items():
        m = report.measurements
        if entry == "CausalSdpaAttention":
            assert m["padding_kind"] == 0.0
            # triu(diagonal=1) as SDPA's keep-mask: attends to the future only (last row: nothing, 0).
            assert m["witness_original_max_error"] > 0.5 and m["witness_original_nan_rows"] == 0
            assert m["witness_fixed_max_error"] < ceiling(dtype)
            assert m["witness_fixed_grad_max_error"] <= m["witness_grad_bound"]
        else:
            assert m["padding_kind"] == 1.0
            for side in ("right", "left"):
                assert m[f"{side}_original_max_error"] > 0.5
                assert m[f"{side}_fixed_max_error"] < ceiling(dtype)
                assert m[f"{side}_fixed_garbage_diff"] == 0.0


def test_atn205_float_instead_of_invert_is_rejected():
    fixed = linter_fixed("ATN205")
    wrong = replace_once(fixed, "attn_mask=~future", "attn_mask=future.float()")
    params = CASES[("ATN205", "CausalSdpaAttention")]
    reports = verify("ATN205", SOURCE, wrong, entry="CausalSdpaAttention", params=params, **CPU)
    assert {r.dtype for r in reports} == {"float64", "float32"}
    for report in reports:
        # A float mask is added: +1 on the future, nothing masked.
        assert failed(report) == {
            "fixed_matches_float64_naive_kernel",
            "fixed_matches_float64_sdpa",
            "fixed_gradient_matches_float64_reference",
        }, report.summary()
        assert report.check("witness_original_wrong").passed
        assert report.measurements["witness_fixed_max_error"] > 0.1


# ---------------------------------------------------------------------------------------------
# Witness helpers, in process
# ---------------------------------------------------------------------------------------------
def test_witness_helpers():
    torch = pytest.importorskip("torch")
    from attnlint.verify.recipes._masking import keep_mask, padded_values
    from attnlint.verify.recipes.all_masked_row_nan import fully_masked_rows

    right, left = keep_mask([3, 1, 0], 4, "right", "cpu"), keep_mask([3, 1, 0], 4, "left", "cpu")
    assert right.tolist() == [[True, True, True, False], [True, False, False, False], [False] * 4]
    assert left.tolist() == [[False, True, True, True], [False, False, False, True], [False] * 4]
    # The same real tokens whatever the side and the garbage; different garbage in the padding.
    a = padded_values([3, 1, 0], 4, (5,), "right", 0, 101, "cpu", torch.float64)
    b = padded_values([3, 1, 0], 4, (5,), "left", 0, 202, "cpu", torch.float64)
    assert torch.equal(a[right], b[left])
    assert not torch.equal(a[~right], b[~left])
    assert fully_masked_rows(right, False, 1) == 4 and fully_masked_rows(left, True, 1) == 4 + 1 + 3


# ---------------------------------------------------------------------------------------------
# CUDA (skipped cleanly without a device)
# ---------------------------------------------------------------------------------------------
CUDA_CASES = [
    ("ATN201", "lm_loss"),
    ("ATN202", "SdpaSelfAttention"),
    ("ATN203", "CausalPaddedAttention"),
    ("ATN204", "CausalAttention"),
    ("ATN205", "PaddedEncoder"),
]


@pytest.mark.cuda
@pytest.mark.parametrize("case", CUDA_CASES, ids=lambda case: case[0])
def test_cuda_float32_float16_bfloat16(case):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device: torch.cuda.is_available() is False")
    code, entry = case
    reports = verify_fix(code, SOURCE, entry=entry, params=CASES[case], devices=["cuda"])
    assert {r.dtype for r in reports} == {"float32", "float16", "bfloat16"}
    for report in reports:
        assert report.device == "cuda"
        # Not measured on a GPU yet: with a mask, SDPA may pick another CUDA kernel than without one,
        # so the no-padding comparison may differ in the last bit there. Everything else must hold.
        assert failed(report) <= {"no_padding_bit_identical"}, report.summary()
