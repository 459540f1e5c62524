"""The manifold functions: projection, polar retraction, frames, errors."""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from stiefel_core.manifold import (
    inverse_sqrt_newton_schulz,
    orthonormality_error,
    orthonormalize,
    project_tangent,
    random_frame,
    retract_polar,
    sym,
)

shapes = st.integers(1, 10).flatmap(lambda d: st.tuples(st.just(d), st.integers(1, d), st.integers(0, 3)))


def frame_and_matrix(d, r, batch, seed, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    W = random_frame(d, r, *([batch] if batch else []), generator=g, dtype=dtype)
    G = torch.randn(W.shape, generator=g, dtype=dtype)
    return W, G


@given(shapes, st.integers(0, 2**16))
def test_projection_is_idempotent_tangent_and_kills_the_normal_space(shape, seed):
    d, r, batch = shape
    W, G = frame_and_matrix(d, r, batch, seed)
    P = project_tangent(W, G)
    assert torch.allclose(project_tangent(W, P), P, atol=1e-12)
    assert sym(W.mT @ P).abs().max() < 1e-12  # WᵀP is skew: P is tangent
    normal = W @ sym(torch.randn(W.shape[:-2] + (r, r), dtype=W.dtype, generator=torch.Generator().manual_seed(seed)))
    assert project_tangent(W, normal).abs().max() < 1e-12


@given(shapes, st.integers(0, 2**16), st.sampled_from([1e-8, 1e-3, 0.3, 1.0, 30.0, 1e4]))
def test_retraction_lands_on_the_manifold_for_every_tangent_step(shape, seed, size):
    d, r, batch = shape
    W, G = frame_and_matrix(d, r, batch, seed)
    xi = project_tangent(W, G)
    xi = xi * (size / torch.linalg.matrix_norm(xi).clamp_min(1e-300))[..., None, None]
    assert orthonormality_error(retract_polar(W, xi)).max() <= 1e-12
    W32, xi32 = W.float(), xi.float()
    assert orthonormality_error(retract_polar(W32, xi32)).max() <= 1e-5
    if size <= 1.0:  # the matrix-product path under a trust radius
        assert orthonormality_error(retract_polar(W, xi, step_bound=1.0)).max() <= 1e-12
        assert orthonormality_error(retract_polar(W32, xi32, step_bound=1.0)).max() <= 1e-5


@given(shapes, st.integers(0, 2**16))
def test_retraction_agrees_with_w_plus_xi_to_first_order(shape, seed):
    d, r, batch = shape
    W, G = frame_and_matrix(d, r, batch, seed)
    xi = project_tangent(W, G)
    errors = [torch.linalg.matrix_norm(retract_polar(W, t * xi) - (W + t * xi)).max().item() for t in (1e-2, 1e-3)]
    scale = torch.linalg.matrix_norm(xi).max().item() ** 2 + 1e-300
    assert errors[1] <= 1e-5 * scale + 1e-14  # O(t²): (1e-3)² = 1e-6
    if errors[0] > 1e-12:
        assert errors[1] / errors[0] < 0.02  # shrinking the step 10x shrinks the error ~100x


def eigh_inverse_sqrt(A):
    lam, V = torch.linalg.eigh(A)
    return (V * lam.rsqrt().unsqueeze(-2)) @ V.mT


def test_newton_schulz_and_eigh_agree():
    W, G = frame_and_matrix(30, 6, 5, 0)
    xi = 0.5 * project_tangent(W, G) / torch.linalg.matrix_norm(project_tangent(W, G))[..., None, None]
    assert torch.allclose(retract_polar(W, xi, step_bound=0.5), retract_polar(W, xi), atol=1e-13)
    A = torch.eye(6, dtype=torch.float64) + xi.mT @ xi
    upper = 1 + torch.linalg.matrix_norm(xi) ** 2
    assert torch.allclose(inverse_sqrt_newton_schulz(A, upper[:, None, None], 8), eigh_inverse_sqrt(A), atol=1e-13)


def test_non_tangent_steps_are_re_orthonormalised():
    W, G = frame_and_matrix(12, 5, 4, 1)
    xi = 0.3 * G / torch.linalg.matrix_norm(G)[..., None, None]
    bounded = retract_polar(W, xi, step_bound=0.3, tangent=False)
    assert orthonormality_error(bounded).max() <= 1e-12
    assert torch.allclose(bounded, orthonormalize(W + xi), atol=1e-12)


@pytest.mark.parametrize("dtype, tolerance", [(torch.float64, 1e-12), (torch.float32, 1e-5)])
@pytest.mark.parametrize("bounded", [True, False])
def test_no_drift_over_ten_thousand_retractions(dtype, tolerance, bounded):
    g = torch.Generator().manual_seed(7)
    W = random_frame(16, 4, 2, generator=g, dtype=dtype)
    for _ in range(10_000):
        xi = project_tangent(W, 0.05 * torch.randn(W.shape, generator=g, dtype=dtype))
        W = retract_polar(W, xi, step_bound=0.5 if bounded else None)
    assert orthonormality_error(W).max() <= tolerance


def test_low_precision_frames_are_computed_in_float32_and_keep_their_dtype():
    W = random_frame(64, 8, 3, dtype=torch.bfloat16)
    assert W.dtype == torch.bfloat16
    xi = project_tangent(W, torch.randn_like(W) * 0.01)
    out = retract_polar(W, xi, step_bound=0.5)
    assert out.dtype == torch.bfloat16 and xi.dtype == torch.bfloat16
    assert orthonormality_error(out).max() < 0.05  # bfloat16 keeps 8 bits: ~4e-3 per entry
    assert orthonormality_error(out).dtype == torch.float32


def test_random_frame_is_orthonormal_and_reproducible():
    a = random_frame(9, 3, 2, 4, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    b = random_frame(9, 3, 2, 4, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    assert a.shape == (2, 4, 9, 3) and torch.equal(a, b)
    assert orthonormality_error(a).max() < 1e-14


def test_orthonormalize_fixes_a_perturbed_frame():
    W = random_frame(10, 4, dtype=torch.float64) + 0.1
    assert orthonormality_error(orthonormalize(W)) < 1e-14


@pytest.mark.parametrize("shape", [(3, 5), (7,), (2, 2, 3)])
def test_bad_shapes_raise_value_error(shape):
    with pytest.raises(ValueError, match="St\\(d, r\\)|trailing"):
        project_tangent(torch.zeros(shape), torch.zeros(shape))
    with pytest.raises(ValueError):
        random_frame(2, 3)
