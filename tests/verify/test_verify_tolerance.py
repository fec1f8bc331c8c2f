"""The comparison rules of attnlint.verify.tolerance, checked on hand-made numbers."""

import pytest

torch = pytest.importorskip("torch")

from attnlint.verify.tolerance import (  # noqa: E402
    DTYPES_BY_DEVICE,
    EPS_FLOOR_MULTIPLIER,
    FA_SLOPE,
    bit_identical,
    dtype_from_name,
    exact_fp32_matmul,
    flash_rule,
    max_abs_diff,
    rounding_floor,
)


def _ref(shape=(3, 4), seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def test_bound_is_twice_the_plain_error_plus_the_floor():
    ref = _ref()
    plain = (ref + 1e-3).float()
    out = (ref + 1.5e-3).float()
    cmp = flash_rule(out, ref, plain)
    assert cmp.plain_error == pytest.approx(1e-3, rel=1e-3)
    assert cmp.bound == FA_SLOPE * cmp.plain_error + cmp.floor
    assert cmp.max_error == pytest.approx(1.5e-3, rel=1e-3)
    assert cmp.passed and cmp.ratio < 1


def test_more_than_twice_the_plain_error_fails():
    ref = _ref()
    plain = (ref + 1e-3).float()
    out = (ref + 3e-3).float()  # 3x the plain implementation's error: beyond FlashAttention's 2x
    cmp = flash_rule(out, ref, plain)
    assert not cmp.passed
    assert cmp.ratio > 1


def test_floor_is_fa3_rounding_step_in_the_test_dtype():
    ref = _ref()
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        r = ref.to(dtype)
        fa3 = 2 * float(((r + 0.3 - 0.3) - r).abs().double().max())
        assert rounding_floor(ref, dtype) == fa3 > 0
    assert rounding_floor(ref, torch.bfloat16) > rounding_floor(ref, torch.float16) > rounding_floor(ref, torch.float32)


def test_float64_floor_is_a_few_epsilons_because_the_plain_kernel_is_the_golden_one():
    ref = _ref()
    eps_floor = EPS_FLOOR_MULTIPLIER * torch.finfo(torch.float64).eps * max(1.0, float(ref.abs().max()))
    assert rounding_floor(ref, torch.float64) >= eps_floor
    assert rounding_floor(ref, torch.float64) < 1e-13
    assert rounding_floor(torch.zeros(0, dtype=torch.float64), torch.float64) == 0.0


def test_equal_outputs_pass_even_when_the_plain_kernel_is_exact():
    ref = _ref()
    assert flash_rule(ref.clone(), ref, ref.clone()).passed


def test_shape_mismatch_never_passes():
    ref = _ref((2, 3, 4))
    cmp = flash_rule(ref[:, :, :3], ref, ref)
    assert not cmp.same_shape and not cmp.passed
    assert "shape" in cmp.describe()


def test_nan_counts_as_infinitely_wrong_unless_the_reference_is_nan_there_too():
    ref = _ref()
    out = ref.clone()
    out[0, 0] = float("nan")
    assert max_abs_diff(out, ref) == float("inf")
    assert not flash_rule(out, ref, ref).passed
    both = ref.clone()
    both[0, 0] = float("nan")
    assert max_abs_diff(out, both) == 0.0


def test_bit_identical_is_torch_equal_and_dtype_strict():
    a = _ref()
    assert bit_identical(a, a.clone())
    b = a.clone()
    b[1, 2] = torch.nextafter(b[1, 2], torch.tensor(float("inf"), dtype=torch.float64))
    assert not bit_identical(a, b)  # one ulp is not "the same"
    assert not bit_identical(a.float(), a)  # different dtype is never bit-identical


def test_dtypes_per_device_follow_the_notes():
    assert DTYPES_BY_DEVICE["cpu"] == ("float64", "float32")
    assert DTYPES_BY_DEVICE["cuda"] == ("float32", "float16", "bfloat16")
    assert dtype_from_name("bfloat16") is torch.bfloat16
    with pytest.raises(ValueError):
        dtype_from_name("int64")


def test_exact_fp32_matmul_turns_tf32_off_and_restores_it():
    before = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = True
    try:
        with exact_fp32_matmul():
            assert torch.backends.cuda.matmul.allow_tf32 is False
            assert torch.backends.cudnn.allow_tf32 is False
        assert torch.backends.cuda.matmul.allow_tf32 is True
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before
