"""The reference kernels: the float64 naive kernel must agree with SDPA, fully masked rows included."""

import math

import pytest

torch = pytest.importorskip("torch")

from attnlint.verify.kernels import combined_bool_mask, naive_attention, sdpa_reference  # noqa: E402


def _qkv(b=2, h=3, n_q=5, n_k=7, d=80, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)

    def make(n):
        return torch.randn(b, h, n, d, generator=g, dtype=torch.float64).to(dtype)

    return make(n_q), make(n_k), make(n_k)


@pytest.mark.parametrize("causal", [False, True])
def test_naive_float64_matches_sdpa_float64(causal):
    q, k, v = _qkv()  # d = 80: sqrt(d) is not a power of two, so scale placement matters
    naive = naive_attention(q, k, v, causal=causal)
    sdpa = sdpa_reference(q, k, v, causal=causal)
    assert naive.dtype == torch.float64
    assert float((naive - sdpa).abs().max()) < 1e-13


def test_naive_matches_sdpa_with_a_bool_mask_and_an_explicit_scale():
    q, k, v = _qkv()
    mask = torch.rand(5, 7, generator=torch.Generator().manual_seed(1)) > 0.3
    mask[:, 0] = True
    naive = naive_attention(q, k, v, attn_mask=mask, scale=0.1)
    sdpa = sdpa_reference(q, k, v, attn_mask=mask, scale=0.1)
    assert float((naive - sdpa).abs().max()) < 1e-13


def test_default_scale_is_one_over_sqrt_head_dim():
    q, k, v = _qkv(d=80)
    assert torch.equal(naive_attention(q, k, v), naive_attention(q, k, v, scale=1 / math.sqrt(80)))


def test_fully_masked_row_is_exactly_zero_like_sdpa():
    q, k, v = _qkv(n_q=4, n_k=4, d=16)
    mask = torch.ones(4, 4, dtype=torch.bool)
    mask[2] = False  # query 2 may attend to nothing
    naive = naive_attention(q, k, v, attn_mask=mask)
    sdpa = sdpa_reference(q, k, v, attn_mask=mask)
    assert torch.equal(naive[..., 2, :], torch.zeros_like(naive[..., 2, :]))
    assert torch.equal(sdpa[..., 2, :], torch.zeros_like(sdpa[..., 2, :]))
    assert float((naive - sdpa).abs().max()) < 1e-13


def test_fully_masked_row_has_finite_zero_gradients():
    # Left padding + causal: the first query sees only padding.
    q, k, v = (t.requires_grad_(True) for t in _qkv(b=1, h=1, n_q=4, n_k=4, d=8))
    padding = torch.tensor([False, True, True, True])  # key 0 is padding
    out = naive_attention(q, k, v, attn_mask=padding.expand(4, 4), causal=True)
    assert torch.equal(out[..., 0, :], torch.zeros_like(out[..., 0, :]))
    out.sum().backward()
    for t in (q, k, v):
        assert torch.isfinite(t.grad).all()
    assert torch.equal(q.grad[..., 0, :], torch.zeros_like(q.grad[..., 0, :]))


def test_same_dtype_mode_keeps_the_dtype():
    q, k, v = _qkv(dtype=torch.float32)
    out = naive_attention(q, k, v, compute_dtype=None)
    assert out.dtype == torch.float32
    golden = naive_attention(q, k, v)
    assert golden.dtype == torch.float64
    assert 0 < float((out.double() - golden).abs().max()) < 1e-5


def test_causal_is_folded_into_the_bool_mask_never_passed_with_it():
    mask = torch.ones(3, 3, dtype=torch.bool)
    mask[0, 0] = False
    both = combined_bool_mask(3, 3, attn_mask=mask, causal=True)
    assert torch.equal(both, torch.tensor([[False, False, False], [True, True, False], [True, True, True]]))
    # The MATH backend raises if given attn_mask and is_causal together; the reference never does.
    q, k, v = _qkv(n_q=3, n_k=3, d=8)
    sdpa_reference(q, k, v, attn_mask=mask, causal=True, backend="math")
    with pytest.raises(TypeError):
        combined_bool_mask(3, 3, attn_mask=mask.double())
