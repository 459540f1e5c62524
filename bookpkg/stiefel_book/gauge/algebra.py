"""Gauge directions of attention's W_Q, W_K: generators, projection onto their span, the product's kernel (chapter
gauge)."""

from __future__ import annotations

import torch
from torch import Tensor

from stiefel_core.manifold import project_tangent

DTYPE = torch.float64
GROUPS = ("orthogonal", "gl")  # O(r) on St x St; GL(r) on R^(d x r) x R^(d x r)


def _check_group(group: str) -> str:
    if group not in GROUPS:
        raise ValueError(
            f"unknown gauge group {group!r}: choose 'orthogonal' (O(r), Stiefel) or 'gl' (GL(r), Euclidean)"
        )
    return group


# --------------------------------------------------------------------------------------------
# Generators
# --------------------------------------------------------------------------------------------


def gl_basis(r: int, dtype: torch.dtype = DTYPE) -> Tensor:
    """The ``r²`` matrix units ``E_ij`` of gl(r), shape ``(r², r, r)``, row-major in ``(i, j)``. Chapter: gauge."""
    return torch.eye(r * r, dtype=dtype).reshape(r * r, r, r)


def skew_basis(r: int, dtype: torch.dtype = DTYPE) -> Tensor:
    """The ``r(r-1)/2`` skew matrices ``E_ij - E_ji`` (``i < j``) spanning o(r), shape ``(n, r, r)``. Chapter: gauge."""
    i, j = torch.triu_indices(r, r, offset=1)
    basis = torch.zeros(len(i), r, r, dtype=dtype)
    k = torch.arange(len(i))
    basis[k, i, j], basis[k, j, i] = 1.0, -1.0
    return basis


def gl_generators(W_Q: Tensor, W_K: Tensor) -> tuple[Tensor, Tensor]:
    """The GL(r) gauge directions ``(W_Q X, -W_K Xᵀ)`` for ``X = E_ij``: the velocities at ``t = 0``
    of ``(W_Q exp(tX), W_K exp(-tXᵀ))``. ``W_Q, W_K`` of shape ``(..., d, r)``; returns the query
    and key parts, each ``(..., r², d, r)``.
    Chapter: gauge."""
    X = gl_basis(W_Q.shape[-1], W_Q.dtype).to(W_Q.device)  # (n, r, r)
    return W_Q.unsqueeze(-3) @ X, -(W_K.unsqueeze(-3) @ X.mT)  # (..., n, d, r)


def orthogonal_generators(W_Q: Tensor, W_K: Tensor) -> tuple[Tensor, Tensor]:
    """The O(r) gauge directions ``(W_Q Ω, W_K Ω)`` for ``Ω = E_ij - E_ji``: the velocities of
    ``(W_Q exp(tΩ), W_K exp(tΩ))``. Returns the query and key parts, each ``(..., r(r-1)/2, d, r)``.
    Chapter: gauge."""
    Omega = skew_basis(W_Q.shape[-1], W_Q.dtype).to(W_Q.device)  # (n, r, r)
    return W_Q.unsqueeze(-3) @ Omega, W_K.unsqueeze(-3) @ Omega


def generators(W_Q: Tensor, W_K: Tensor, group: str) -> tuple[Tensor, Tensor]:
    """:func:`orthogonal_generators` or :func:`gl_generators`, by ``group``. Chapter: gauge."""
    return orthogonal_generators(W_Q, W_K) if _check_group(group) == "orthogonal" else gl_generators(W_Q, W_K)


def gl_action(W_Q: Tensor, W_K: Tensor, A: Tensor) -> tuple[Tensor, Tensor]:
    """``(W_Q A, W_K A⁻ᵀ)``: the same product ``W_Q W_Kᵀ`` for any invertible ``A`` (``(..., r, r)``).
    Chapter: gauge."""
    return W_Q @ A, W_K @ torch.linalg.inv(A).mT


def orthogonal_action(W_Q: Tensor, W_K: Tensor, Omega: Tensor, t: float = 1.0) -> tuple[Tensor, Tensor]:
    """``(W_Q R, W_K R)`` with ``R = exp(tΩ)`` for skew ``Ω``: frames stay frames. Chapter: gauge."""
    R = torch.linalg.matrix_exp(t * Omega)
    return W_Q @ R, W_K @ R


def tangency_error(W: Tensor, xi: Tensor) -> Tensor:
    """``‖Wᵀξ + ξᵀW‖_F`` (zero exactly when ``ξ`` is tangent to St(d, r) at the frame ``W``);
    ``xi`` may carry an extra direction axis: ``W (..., d, r)``, ``xi (..., n, d, r)``.
    Chapter: gauge."""
    if xi.ndim == W.ndim + 1:
        W = W.unsqueeze(-3)
    A = W.mT @ xi
    return torch.linalg.matrix_norm(A + A.mT)


def normality_error(W: Tensor, xi: Tensor) -> Tensor:
    """``‖P_W(ξ)‖_F``: zero exactly when ``ξ`` is normal to St(d, r) at ``W`` (shapes as
    :func:`tangency_error`).
    Chapter: gauge."""
    if xi.ndim == W.ndim + 1:
        W = W.unsqueeze(-3)
    return torch.linalg.matrix_norm(project_tangent(W.expand_as(xi), xi))


# --------------------------------------------------------------------------------------------
# Projection onto the span of the gauge directions
# --------------------------------------------------------------------------------------------


def _sylvester_spd(A: Tensor, B: Tensor, C: Tensor) -> Tensor:
    """The solution ``X`` of ``A X + X B = C`` for symmetric positive definite ``A``, ``B``
    (batched): with ``A = U a Uᵀ`` and ``B = V b Vᵀ``, ``X = U [(UᵀCV)_ij / (a_i + b_j)] Vᵀ``."""
    a, U = torch.linalg.eigh(A)
    b, V = torch.linalg.eigh(B)
    return U @ ((U.mT @ C @ V) / (a[..., :, None] + b[..., None, :])) @ V.mT


def _gauge_coordinates(W_Q: Tensor, W_K: Tensor, G_Q: Tensor, G_K: Tensor, group: str) -> Tensor:
    """The ``r x r`` matrix (``Ω`` skew, or ``X``) of the point of the gauge span nearest to
    ``(G_Q, G_K)`` in the Frobenius metric (the normal equations of least squares)."""
    if _check_group(group) == "orthogonal":
        # min_Ω ‖G_Q - W_Q Ω‖² + ‖G_K - W_K Ω‖² over skew Ω:  A Ω + Ω A = C - Cᵀ
        A = W_Q.mT @ W_Q + W_K.mT @ W_K  # (..., r, r); 2 I on St x St
        C = W_Q.mT @ G_Q + W_K.mT @ G_K
        return _sylvester_spd(A, A, C - C.mT)
    # min_X ‖G_Q - W_Q X‖² + ‖G_K + W_K Xᵀ‖²:  (W_QᵀW_Q) X + X (W_KᵀW_K) = W_QᵀG_Q - G_KᵀW_K
    return _sylvester_spd(W_Q.mT @ W_Q, W_K.mT @ W_K, W_Q.mT @ G_Q - G_K.mT @ W_K)


def project_gauge(W_Q: Tensor, W_K: Tensor, G_Q: Tensor, G_K: Tensor, group: str) -> tuple[Tensor, Tensor]:
    """Orthogonal projection (Frobenius metric on the pair) of ``(G_Q, G_K)`` onto the span of the
    gauge directions of ``group`` at ``(W_Q, W_K)``, per head: shapes ``(..., d, r)``, computed in
    float64. For ``"orthogonal"`` on St x St the span is tangent, so projecting a Riemannian
    gradient gives a tangent vector.
    Chapter: gauge."""
    W_Q, W_K, G_Q, G_K = (x.to(DTYPE) for x in (W_Q, W_K, G_Q, G_K))
    Y = _gauge_coordinates(W_Q, W_K, G_Q, G_K, group)
    if group == "orthogonal":
        return W_Q @ Y, W_K @ Y
    return W_Q @ Y, -(W_K @ Y.mT)


def remove_gauge(W_Q: Tensor, W_K: Tensor, G_Q: Tensor, G_K: Tensor, group: str) -> tuple[Tensor, Tensor]:
    """``(G_Q, G_K)`` minus :func:`project_gauge`: its part orthogonal to every gauge direction. Chapter: gauge."""
    P_Q, P_K = project_gauge(W_Q, W_K, G_Q, G_K, group)
    return G_Q.to(DTYPE) - P_Q, G_K.to(DTYPE) - P_K


def project_onto_span(G_Q: Tensor, G_K: Tensor, D_Q: Tensor, D_K: Tensor) -> tuple[Tensor, Tensor]:
    """Reference projection of one pair ``(G_Q, G_K)`` (``(d, r)`` each) onto the span of explicit
    directions ``(D_Q, D_K)`` (``(n, d, r)`` each), through a QR factorisation. Slow and plain:
    tests hold :func:`project_gauge` equal to it.
    Chapter: gauge."""
    d, r = G_Q.shape
    basis = torch.cat([D_Q.reshape(len(D_Q), -1), D_K.reshape(len(D_K), -1)], 1).to(DTYPE).T  # (2dr, n)
    Q, _ = torch.linalg.qr(basis)
    g = torch.cat([G_Q.reshape(-1), G_K.reshape(-1)]).to(DTYPE)
    p = Q @ (Q.T @ g)
    return p[: d * r].reshape(d, r), p[d * r :].reshape(d, r)


def _pair_norm(G_Q: Tensor, G_K: Tensor) -> Tensor:
    return torch.sqrt(torch.linalg.matrix_norm(G_Q) ** 2 + torch.linalg.matrix_norm(G_K) ** 2)


def gauge_component(W_Q: Tensor, W_K: Tensor, G_Q: Tensor, G_K: Tensor, group: str) -> Tensor:
    """``‖P_gauge(G)‖ / ‖G‖`` per head (shape ``W_Q.shape[:-2]``), ``G = (G_Q, G_K)`` the head's
    gradient pair: the size of the gradient's component in the span of the gauge directions,
    relative to the gradient. It bounds the cosine with every single gauge direction. A zero
    gradient has component 0.
    Chapter: gauge."""
    P_Q, P_K = project_gauge(W_Q, W_K, G_Q, G_K, group)
    norm = _pair_norm(G_Q.to(DTYPE), G_K.to(DTYPE))
    return torch.where(norm > 0, _pair_norm(P_Q, P_K) / norm.clamp_min(torch.finfo(DTYPE).tiny), torch.zeros_like(norm))


def frame_normalized_component(W_Q: Tensor, W_K: Tensor, G_Q: Tensor, G_K: Tensor, group: str) -> Tensor:
    """:func:`gauge_component` of ``(G_Q / ‖G_Q‖, G_K / ‖G_K‖)``: the pair after each factor is
    scaled on its own, as a per-frame scale-free step (StiefelAdam's first step) scales it. A
    gauge-free pair stays gauge free only when ``‖G_Q‖ = ‖G_K‖``: each factor alone has a gauge
    component, and only the pair's cancel.
    Chapter: gauge."""
    n_Q = torch.linalg.matrix_norm(G_Q.to(DTYPE))[..., None, None]
    n_K = torch.linalg.matrix_norm(G_K.to(DTYPE))[..., None, None]
    return gauge_component(W_Q, W_K, G_Q.to(DTYPE) / n_Q, G_K.to(DTYPE) / n_K, group)


def direction_cosines(W_Q: Tensor, W_K: Tensor, G_Q: Tensor, G_K: Tensor, group: str) -> Tensor:
    """``|⟨G, D⟩| / (‖G‖ ‖D‖)`` for every gauge direction ``D`` of ``group``, shape ``(..., n)``. Chapter: gauge."""
    D_Q, D_K = generators(W_Q.to(DTYPE), W_K.to(DTYPE), group)  # (..., n, d, r)
    G_Q, G_K = G_Q.to(DTYPE).unsqueeze(-3), G_K.to(DTYPE).unsqueeze(-3)
    inner = (G_Q * D_Q).sum((-2, -1)) + (G_K * D_K).sum((-2, -1))  # (..., n)
    norm = _pair_norm(G_Q, G_K) * _pair_norm(D_Q, D_K)
    return inner.abs() / norm.clamp_min(torch.finfo(DTYPE).tiny)


def _tangent_basis(W: Tensor) -> Tensor:
    """An orthonormal basis of T_W St(d, r) as the columns of a ``(d r, dim)`` matrix."""
    d, r = W.shape
    E = torch.eye(d * r, dtype=DTYPE).reshape(d * r, d, r)
    P = project_tangent(W.to(DTYPE).expand_as(E), E).reshape(d * r, d * r)  # column k = P_W(E_k)
    eigenvalues, vectors = torch.linalg.eigh(P)
    return vectors[:, eigenvalues > 0.5]


def product_kernel(W_Q: Tensor, W_K: Tensor, *, tangent: bool) -> dict[str, float]:
    """The kernel of the differential of ``(W_Q, W_K) ↦ W_Q W_Kᵀ`` at one head (``(d, r)`` each),
    on all of R^(d x r) x R^(d x r) (``tangent=False``) or on the tangent space of St x St.

    Returns the dimension of the domain, of the image (how many independent ways the product can
    move: the local dimension of the model's set of bilinear forms) and of the kernel (singular
    values below 1e-10 of the largest), the dimension of the gauge span (``r²`` for GL, ``r(r-1)/2`` for O(r): the
    generators are independent), and
    ``span_residual``, the part of the unit gauge directions outside the kernel. Equal
    dimensions and a zero residual mean that the gauge directions are *all* the first-order
    symmetry of the product: nothing else leaves the model unchanged.
    Chapter: gauge.
    """
    W_Q, W_K = W_Q.to(DTYPE), W_K.to(DTYPE)
    d, r = W_Q.shape
    # dM = dQ W_Kᵀ + W_Q dKᵀ; columns: the images of the unit matrices of (dQ, dK)
    E = torch.eye(d * r, dtype=DTYPE).reshape(d * r, d, r)
    J = torch.cat([(E @ W_K.T).reshape(d * r, d * d), (W_Q @ E.mT).reshape(d * r, d * d)]).T  # (d², 2dr)
    if tangent:
        T = torch.block_diag(_tangent_basis(W_Q), _tangent_basis(W_K))  # (2dr, dim T)
        J_restricted = J @ T
    else:
        T = torch.eye(2 * d * r, dtype=DTYPE)
        J_restricted = J
    _, s, Vh = torch.linalg.svd(J_restricted, full_matrices=True)
    s_full = torch.zeros(Vh.shape[0], dtype=DTYPE)
    s_full[: len(s)] = s
    null = s_full < 1e-10 * s_full.max()
    kernel = T @ Vh[null].T  # (2dr, k): orthonormal columns in the ambient coordinates
    D_Q, D_K = generators(W_Q, W_K, "orthogonal" if tangent else "gl")
    D = torch.cat([D_Q.reshape(len(D_Q), -1), D_K.reshape(len(D_K), -1)], 1).T  # (2dr, n)
    D = D / torch.linalg.vector_norm(D, dim=0)
    residual = D - kernel @ (kernel.T @ D)
    return {
        "domain_dim": int(T.shape[1]),
        "image_dim": int((~null).sum()),  # the dimension of the set of products W_Q W_Kᵀ near this point
        "kernel_dim": int(null.sum()),
        "gauge_dim": int(torch.linalg.matrix_rank(D)),
        "span_residual": float(torch.linalg.matrix_norm(residual)),
        "smallest_nonzero": float(s_full[~null].min() / s_full.max()),
    }
