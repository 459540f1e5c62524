"""The Stiefel manifold St(d, r) = {W in R^(d x r) : WᵀW = I_r}, as plain batched functions.

Every function takes frames of shape ``(..., d, r)`` (any leading batch shape), any float
dtype and any device. Half-precision inputs are computed in float32 and returned in their
own dtype. Names follow geoopt's manifold functions and Absil, Mahony and Sepulchre (2008).
"""

from __future__ import annotations

import contextlib
import functools
import math

import torch
from torch import Tensor

__all__ = [
    "check_frame_shape",
    "sym",
    "project_tangent",
    "retract_polar",
    "polar_factor",
    "random_frame",
    "orthonormalize",
    "orthonormality_error",
    "compute_dtype",
]


def check_frame_shape(shape: torch.Size | tuple[int, ...], name: str = "frame") -> tuple[int, int]:
    """Return ``(d, r)`` of a frame shape ``(..., d, r)``; raise ``ValueError`` when it is not one. Chapter: primer."""
    if len(shape) < 2:
        raise ValueError(
            f"{name} has shape {tuple(shape)}: a Stiefel frame needs a trailing (d, r) matrix shape, "
            "for example (d_model, d_head) or a bank (n_frames, d_model, d_head)."
        )
    d, r = shape[-2], shape[-1]
    if r < 1 or r > d:
        raise ValueError(
            f"{name} has trailing shape (d, r) = ({d}, {r}): St(d, r) needs 1 <= r <= d "
            "(orthonormal columns cannot outnumber rows). Transpose it or choose r <= d."
        )
    return d, r


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype we compute in: float64 stays, everything else is float32. Chapter: primer."""
    return torch.float64 if dtype == torch.float64 else torch.float32


AUTOCAST_DEVICES = ("cpu", "cuda")  # where an autocast block can lower the step's products


@contextlib.contextmanager
def full_precision_matmul(device: torch.device):
    """Products in the operands' own precision inside the block: no autocast (its bfloat16 or
    float16 products would cap orthonormality near 1e-2, and its in-place products refuse float32
    outputs: an optimizer stepped inside an autocast block) and, on CUDA, no TF32 (which would cap
    it near 1e-3). Chapter: primer."""
    on_autocast_device = device.type in AUTOCAST_DEVICES
    with torch.autocast(device.type, enabled=False) if on_autocast_device else contextlib.nullcontext():
        if device.type != "cuda":
            yield
            return
        saved = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = False
        try:
            yield
        finally:
            torch.backends.cuda.matmul.allow_tf32 = saved


def sym(A: Tensor) -> Tensor:
    """Symmetric part ``(A + Aᵀ) / 2`` of the trailing square matrices. Chapter: primer."""
    return 0.5 * (A + A.mT)


def project_tangent(W: Tensor, G: Tensor) -> Tensor:
    """Orthogonal projection of ``G`` onto the tangent space at ``W``: ``G - W sym(WᵀG)``.

    This is the Riemannian gradient of the embedded metric when ``G`` is the Euclidean one.
    Chapter: primer.
    """
    check_frame_shape(W.shape, "W")
    dtype = compute_dtype(W.dtype)
    W32, G32 = W.to(dtype), G.to(dtype)
    with full_precision_matmul(W.device):
        out = G32 - W32 @ sym(W32.mT @ G32)  # (..., d, r)
    return out.to(G.dtype)


def orthonormality_error(W: Tensor) -> Tensor:
    """Per-frame ``‖WᵀW - I‖_F`` (shape ``W.shape[:-2]``), computed in at least float32. Chapter: primer."""
    check_frame_shape(W.shape, "W")
    W = W.to(compute_dtype(W.dtype))
    eye = torch.eye(W.shape[-1], dtype=W.dtype, device=W.device)
    with full_precision_matmul(W.device):
        return torch.linalg.matrix_norm(W.mT @ W - eye)


def orthonormalize(W: Tensor) -> Tensor:
    """The nearest frame to ``W`` in Frobenius norm: ``U Vᵀ`` from the thin SVD ``W = U S Vᵀ``.

    Use it to put a parameter on the manifold: ``p.data.copy_(orthonormalize(p.data))``.
    Chapter: primer.
    """
    check_frame_shape(W.shape, "W")
    return polar_factor(W.to(compute_dtype(W.dtype))).to(W.dtype)


def random_frame(
    d: int,
    r: int,
    *batch: int,
    generator: torch.Generator | None = None,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str | None = None,
) -> Tensor:
    """Frames of shape ``(*batch, d, r)`` drawn from the uniform (Haar) measure on St(d, r). Chapter: primer."""
    check_frame_shape((d, r), "random_frame")
    work = compute_dtype(dtype)
    X = torch.randn(*batch, d, r, generator=generator, dtype=work, device=device)
    Q, R = torch.linalg.qr(X)
    signs = torch.sign(torch.diagonal(R, dim1=-2, dim2=-1))  # (*batch, r)
    signs = torch.where(signs == 0, torch.ones_like(signs), signs)
    return (Q * signs.unsqueeze(-2)).to(dtype).contiguous()


@functools.lru_cache(maxsize=None)
def newton_schulz_steps(worst_eigenvalue: float, dtype: torch.dtype) -> int:
    """Coupled Newton-Schulz steps that bring ``x^(-1/2)`` to working precision for every
    ``x`` in ``[worst_eigenvalue, 1]``, found by running the scalar recursion.
    Chapter: primer."""
    tol = 4 * torch.finfo(dtype).eps
    y, z = worst_eigenvalue, 1.0
    for steps in range(1, 64):
        t = 0.5 * (3.0 - z * y)
        y, z = y * t, t * z
        if abs(z * math.sqrt(worst_eigenvalue) - 1.0) < tol:
            return steps + 1  # one more: the matrix recursion rounds, the scalar one does not
    raise ValueError(f"Newton-Schulz does not converge from eigenvalue {worst_eigenvalue}")


def inverse_sqrt_newton_schulz(A: Tensor, scale: Tensor, steps: int) -> Tensor:
    """``A^(-1/2)`` for SPD ``A`` whose spectrum lies in ``(0, scale]``; matrix products only. Chapter: primer."""
    eye = torch.eye(A.shape[-1], dtype=A.dtype, device=A.device)
    Y = A / scale  # (..., r, r), spectrum in (0, 1]
    Z = eye.expand_as(A)
    for _ in range(steps):
        T = 1.5 * eye - 0.5 * (Z @ Y)
        Y, Z = Y @ T, T @ Z
    return Z / scale.sqrt()


def polar_factor(Y: Tensor, *, spectrum: tuple[Tensor, float] | None = None, out: Tensor | None = None) -> Tensor:
    """The orthonormal polar factor ``Y (YᵀY)^(-1/2)`` of full-rank ``Y`` (computed dtype).

    ``spectrum = (upper, worst)`` states what is known of ``YᵀY``: its eigenvalues lie in
    ``[worst * upper, upper]`` (``upper`` per frame, ``worst`` a number in (0, 1]). Then the
    inverse square root of the r x r Gram matrix is a fixed number of Newton-Schulz steps:
    matrix products only, no host synchronisation (when ``tr(YᵀY)`` shows the statement false,
    for a ``Y`` built from a frame that left the manifold, the trace bounds the spectrum instead:
    the result stays finite and near the manifold). Without it, ``U Vᵀ`` from a thin SVD of
    ``Y``: backward stable for any conditioning, and slower. ``out`` receives the result.
    Chapter: primer.
    """
    with full_precision_matmul(Y.device):
        if spectrum is None:
            U, _, Vh = torch.linalg.svd(Y, full_matrices=False)
            return torch.matmul(U, Vh, out=out)
        upper, worst = spectrum
        steps = newton_schulz_steps(float(worst), Y.dtype)
        A = Y.mT @ Y  # (..., r, r)
        # The stated spectrum gives tr(A) <= r * upper. A frame that left the manifold breaks it,
        # and Newton-Schulz would overflow; tr(A) >= λ_max(A) is then a safe bound (re-projection).
        trace = A.diagonal(dim1=-2, dim2=-1).sum(-1)  # (...,)
        upper = torch.where(trace > 1.01 * A.shape[-1] * upper, trace, upper)
        return torch.matmul(Y, inverse_sqrt_newton_schulz(A, upper[..., None, None], steps), out=out)


def gram_spectrum(step_norm: Tensor, step_bound: float | None, tangent: bool) -> tuple[Tensor, float] | None:
    """What ``W + ξ`` with ``‖ξ‖_F = step_norm <= step_bound`` tells of the spectrum of its Gram
    matrix (see :func:`polar_factor`); ``None`` when nothing useful is known.
    Chapter: primer."""
    if step_bound is None:
        return None
    if tangent:  # (W + ξ)ᵀ(W + ξ) = I + ξᵀξ: eigenvalues in [1, 1 + ‖ξ‖²]
        return 1.0 + step_norm * step_norm, 1.0 / (1.0 + step_bound**2)
    if step_bound < 1.0:  # singular values of W + ξ in [1 - ‖ξ‖, 1 + ‖ξ‖]
        return (1.0 + step_norm) ** 2, ((1.0 - step_bound) / (1.0 + step_bound)) ** 2
    return None


def retract_polar(W: Tensor, xi: Tensor, *, step_bound: float | None = None, tangent: bool = True) -> Tensor:
    """Polar retraction ``R_W(ξ) = (W + ξ)(I + ξᵀξ)^(-1/2)``, the frame nearest to ``W + ξ``.

    It forms the actual Gram matrix of ``W + ξ``, so rounding drift of ``W`` is corrected at
    every call. ``step_bound`` is a bound on every ``‖ξ‖_F`` (a trust radius): with it, and
    ``ξ`` tangent (or any ``ξ`` with ``step_bound < 1`` when ``tangent=False``), the retraction
    is matrix products only; without it, any step is retracted through an SVD.
    Chapter: primer.
    """
    check_frame_shape(W.shape, "W")
    if xi.shape != W.shape:
        raise ValueError(f"xi has shape {tuple(xi.shape)} but W has {tuple(W.shape)}: they must match.")
    dtype = compute_dtype(W.dtype)
    xi = xi.to(dtype)
    spectrum = gram_spectrum(torch.linalg.matrix_norm(xi), step_bound, tangent)
    return polar_factor(W.to(dtype) + xi, spectrum=spectrum).to(W.dtype)
