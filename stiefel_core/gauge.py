r"""Gauge directions of attention, and why removing them changes nothing.

A head scores the pair of tokens ``(i, j)`` by ``x_iᵀ W_Q W_Kᵀ x_j / √r``: its logits, and so
the whole model, depend on ``W_Q, W_K`` (each ``d x r``) only through the product
``M = W_Q W_Kᵀ``. Two symmetries follow, one per geometry:

- **Euclidean, GL(r).** ``(W_Q, W_K) → (W_Q A, W_K A⁻ᵀ)`` for invertible ``A`` keeps ``M``. Along
  ``A = exp(tX)``, ``X`` in gl(r), the curve leaves with velocity ``(W_Q X, -W_K Xᵀ)``: ``r²``
  gauge directions per head (:func:`gl_generators`).
- **Stiefel, O(r).** On St(d, r) x St(d, r) only ``A = R`` orthogonal keeps both factors frames
  (``A⁻ᵀ = R``): ``(W_Q R, W_K R)``, with velocities ``(W_Q Ω, W_K Ω)`` for skew ``Ω``, ``r(r-1)/2``
  per head (:func:`orthogonal_generators`). They are tangent: ``Wᵀ(WΩ) = Ω`` is skew. The other
  ``r(r+1)/2`` GL directions, ``X = S`` symmetric, are ``(W_Q S, -W_K S)``: normal to St x St.

A loss that is constant along a curve through a point has zero derivative along the curve's
velocity, so its gradient (Euclidean, or Riemannian for the Stiefel arm, since the O(r)
directions are tangent) is orthogonal to every gauge direction. This module computes the
generators, the orthogonal projection onto their span and its removal (closed forms, float64),
and three certificates:

- :func:`certify_symmetry`: the generators are symmetries, tangent or normal as stated, and
  they are *all* the symmetry there is to first order (the kernel of ``d(W_Q W_Kᵀ)``);
- :func:`certify_gauge_gradients`: the gradient's component along the gauge directions, relative
  to the gradient's norm, is at most 1e-12, at random points and along training runs, for
  both arms; a loss with a term in ``W_Q`` alone visibly fails the same check;
- :func:`certify_projected_run`: training with the gauge component removed from every gradient
  matches plain training to 1e-10 in float64 over 120 steps.

Everything here is computed in float64 on the CPU on one thread (the problems are tiny).
"""

from __future__ import annotations

import contextlib
import functools
import math
from dataclasses import dataclass
from typing import Callable, Iterator

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .attention import SelfAttention
from .certify import TOLERANCE, Certificate, _at_most, _sig, inverse_retract_polar
from .train import one_thread, single_threaded
from .data.modular import ModularData, modular_data
from .manifold import orthonormalize, project_tangent, random_frame, retract_polar
from .models import ModularTransformer
from .optim import configure_optimizer, is_frame

__all__ = [
    "DTYPE",
    "TOLERANCE",
    "RUN_TOLERANCE",
    "GROUPS",
    "gl_basis",
    "skew_basis",
    "gl_generators",
    "orthogonal_generators",
    "generators",
    "gl_action",
    "orthogonal_action",
    "tangency_error",
    "normality_error",
    "project_gauge",
    "remove_gauge",
    "project_onto_span",
    "gauge_component",
    "direction_cosines",
    "frame_normalized_component",
    "product_kernel",
    "GaugeProblem",
    "attention_modules",
    "make_model",
    "task_loss",
    "query_penalty",
    "head_gradients",
    "model_gauge_components",
    "remove_gauge_from_grads_",
    "loss_along",
    "orbit_curves",
    "training_checkpoints",
    "trained_model",
    "REMOVE_MODES",
    "run_deviation",
    "gauge_components_by_point",
    "projected_run",
    "update_gauge_components",
    "SymmetryCertificate",
    "GaugeGradientCertificate",
    "ProjectedRunCertificate",
    "certify_symmetry",
    "certify_gauge_gradients",
    "certify_projected_run",
    "moved_start_deviation",
    "GaugeEquivarianceCertificate",
    "certify_gauge_equivariance",
]

DTYPE = torch.float64
RUN_TOLERANCE = 1e-10  # projected and plain runs agree to this over >= 100 steps (rounding compounds)
GROUPS = ("orthogonal", "gl")  # O(r) on St x St; GL(r) on R^(d x r) x R^(d x r)


def _check_group(group: str) -> str:
    if group not in GROUPS:
        raise ValueError(f"unknown gauge group {group!r}: choose 'orthogonal' (O(r), Stiefel) or 'gl' (GL(r), Euclidean)")
    return group


# --------------------------------------------------------------------------------------------
# Generators
# --------------------------------------------------------------------------------------------


def gl_basis(r: int, dtype: torch.dtype = DTYPE) -> Tensor:
    """The ``r²`` matrix units ``E_ij`` of gl(r), shape ``(r², r, r)``, row-major in ``(i, j)``."""
    return torch.eye(r * r, dtype=dtype).reshape(r * r, r, r)


def skew_basis(r: int, dtype: torch.dtype = DTYPE) -> Tensor:
    """The ``r(r-1)/2`` skew matrices ``E_ij - E_ji`` (``i < j``) spanning o(r), shape ``(n, r, r)``."""
    i, j = torch.triu_indices(r, r, offset=1)
    basis = torch.zeros(len(i), r, r, dtype=dtype)
    k = torch.arange(len(i))
    basis[k, i, j], basis[k, j, i] = 1.0, -1.0
    return basis


def gl_generators(W_Q: Tensor, W_K: Tensor) -> tuple[Tensor, Tensor]:
    """The GL(r) gauge directions ``(W_Q X, -W_K Xᵀ)`` for ``X = E_ij``: the velocities at ``t = 0``
    of ``(W_Q exp(tX), W_K exp(-tXᵀ))``. ``W_Q, W_K`` of shape ``(..., d, r)``; returns the query
    and key parts, each ``(..., r², d, r)``."""
    X = gl_basis(W_Q.shape[-1], W_Q.dtype).to(W_Q.device)  # (n, r, r)
    return W_Q.unsqueeze(-3) @ X, -(W_K.unsqueeze(-3) @ X.mT)  # (..., n, d, r)


def orthogonal_generators(W_Q: Tensor, W_K: Tensor) -> tuple[Tensor, Tensor]:
    """The O(r) gauge directions ``(W_Q Ω, W_K Ω)`` for ``Ω = E_ij - E_ji``: the velocities of
    ``(W_Q exp(tΩ), W_K exp(tΩ))``. Returns the query and key parts, each ``(..., r(r-1)/2, d, r)``."""
    Omega = skew_basis(W_Q.shape[-1], W_Q.dtype).to(W_Q.device)  # (n, r, r)
    return W_Q.unsqueeze(-3) @ Omega, W_K.unsqueeze(-3) @ Omega


def generators(W_Q: Tensor, W_K: Tensor, group: str) -> tuple[Tensor, Tensor]:
    """:func:`orthogonal_generators` or :func:`gl_generators`, by ``group``."""
    return orthogonal_generators(W_Q, W_K) if _check_group(group) == "orthogonal" else gl_generators(W_Q, W_K)


def gl_action(W_Q: Tensor, W_K: Tensor, A: Tensor) -> tuple[Tensor, Tensor]:
    """``(W_Q A, W_K A⁻ᵀ)``: the same product ``W_Q W_Kᵀ`` for any invertible ``A`` (``(..., r, r)``)."""
    return W_Q @ A, W_K @ torch.linalg.inv(A).mT


def orthogonal_action(W_Q: Tensor, W_K: Tensor, Omega: Tensor, t: float = 1.0) -> tuple[Tensor, Tensor]:
    """``(W_Q R, W_K R)`` with ``R = exp(tΩ)`` for skew ``Ω``: frames stay frames."""
    R = torch.linalg.matrix_exp(t * Omega)
    return W_Q @ R, W_K @ R


def tangency_error(W: Tensor, xi: Tensor) -> Tensor:
    """``‖Wᵀξ + ξᵀW‖_F`` (zero exactly when ``ξ`` is tangent to St(d, r) at the frame ``W``);
    ``xi`` may carry an extra direction axis: ``W (..., d, r)``, ``xi (..., n, d, r)``."""
    if xi.ndim == W.ndim + 1:
        W = W.unsqueeze(-3)
    A = W.mT @ xi
    return torch.linalg.matrix_norm(A + A.mT)


def normality_error(W: Tensor, xi: Tensor) -> Tensor:
    """``‖P_W(ξ)‖_F``: zero exactly when ``ξ`` is normal to St(d, r) at ``W`` (shapes as
    :func:`tangency_error`)."""
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
    gradient gives a tangent vector."""
    W_Q, W_K, G_Q, G_K = (x.to(DTYPE) for x in (W_Q, W_K, G_Q, G_K))
    Y = _gauge_coordinates(W_Q, W_K, G_Q, G_K, group)
    if group == "orthogonal":
        return W_Q @ Y, W_K @ Y
    return W_Q @ Y, -(W_K @ Y.mT)


def remove_gauge(W_Q: Tensor, W_K: Tensor, G_Q: Tensor, G_K: Tensor, group: str) -> tuple[Tensor, Tensor]:
    """``(G_Q, G_K)`` minus :func:`project_gauge`: its part orthogonal to every gauge direction."""
    P_Q, P_K = project_gauge(W_Q, W_K, G_Q, G_K, group)
    return G_Q.to(DTYPE) - P_Q, G_K.to(DTYPE) - P_K


def project_onto_span(G_Q: Tensor, G_K: Tensor, D_Q: Tensor, D_K: Tensor) -> tuple[Tensor, Tensor]:
    """Reference projection of one pair ``(G_Q, G_K)`` (``(d, r)`` each) onto the span of explicit
    directions ``(D_Q, D_K)`` (``(n, d, r)`` each), through a QR factorisation. Slow and plain:
    tests hold :func:`project_gauge` equal to it."""
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
    gradient has component 0."""
    P_Q, P_K = project_gauge(W_Q, W_K, G_Q, G_K, group)
    norm = _pair_norm(G_Q.to(DTYPE), G_K.to(DTYPE))
    return torch.where(norm > 0, _pair_norm(P_Q, P_K) / norm.clamp_min(torch.finfo(DTYPE).tiny), torch.zeros_like(norm))


def frame_normalized_component(W_Q: Tensor, W_K: Tensor, G_Q: Tensor, G_K: Tensor, group: str) -> Tensor:
    """:func:`gauge_component` of ``(G_Q / ‖G_Q‖, G_K / ‖G_K‖)``: the pair after each factor is
    scaled on its own, as a per-frame scale-free step (StiefelAdam's first step) scales it. A
    gauge-free pair stays gauge free only when ``‖G_Q‖ = ‖G_K‖``: each factor alone has a gauge
    component, and only the pair's cancel."""
    n_Q = torch.linalg.matrix_norm(G_Q.to(DTYPE))[..., None, None]
    n_K = torch.linalg.matrix_norm(G_K.to(DTYPE))[..., None, None]
    return gauge_component(W_Q, W_K, G_Q.to(DTYPE) / n_Q, G_K.to(DTYPE) / n_K, group)


def direction_cosines(W_Q: Tensor, W_K: Tensor, G_Q: Tensor, G_K: Tensor, group: str) -> Tensor:
    """``|⟨G, D⟩| / (‖G‖ ‖D‖)`` for every gauge direction ``D`` of ``group``, shape ``(..., n)``."""
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
    values below 1e-10 of the largest), the dimension of the gauge span (``r²`` for GL, ``r(r-1)/2`` for O(r): the generators are independent), and
    ``span_residual``, the part of the unit gauge directions outside the kernel. Equal
    dimensions and a zero residual mean that the gauge directions are *all* the first-order
    symmetry of the product: nothing else leaves the model unchanged.
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


# --------------------------------------------------------------------------------------------
# A small model, its loss, and gradients by head
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GaugeProblem:
    """The small float64 problem of the certificates: a one-layer :class:`ModularTransformer` on
    ``a + b mod p``, full-batch cross-entropy on the training split."""

    p: int = 11  # 121 pairs: a full batch is tiny
    d_model: int = 12  # small and fast
    n_heads: int = 3  # three heads of width 4: O(4) is non-abelian (6 rotations, 16 GL directions)
    d_mlp: int = 24
    train_fraction: float = 0.5  # 60 training pairs
    data_seed: int = 0

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    def data(self) -> ModularData:
        return modular_data(self.p, "add", self.train_fraction, seed=self.data_seed)


def attention_modules(model: nn.Module) -> list[tuple[str, SelfAttention]]:
    """Every :class:`SelfAttention` of ``model``, with its name, in module order."""
    found = [(name, m) for name, m in model.named_modules() if isinstance(m, SelfAttention)]
    if not found:
        raise ValueError("the model has no stiefel_core.attention.SelfAttention: it has no attention gauge")
    return found


def make_model(stiefel: bool, seed: int = 0, problem: GaugeProblem = GaugeProblem(), *, random_point: bool = False) -> ModularTransformer:
    """The problem's model in float64, built under ``torch.manual_seed(seed)``; its frames are
    orthonormal in float64. ``random_point=True`` (Euclidean arm only) redraws ``W_Q, W_K`` with
    i.i.d. Gaussian entries of variance ``1/r``: a generic point, far from orthonormal, where the
    GL(r) gauge is the whole symmetry."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = ModularTransformer(problem.p + 1, problem.p, problem.d_model, problem.n_heads, problem.d_mlp, stiefel=stiefel)
        model = model.to(DTYPE)
        with torch.no_grad():
            for _, attn in attention_modules(model):
                for W in (attn.W_Q, attn.W_K):
                    if random_point:
                        if stiefel:
                            raise ValueError("random_point=True draws non-orthonormal W_Q, W_K: only for stiefel=False")
                        W.copy_(torch.randn_like(W) / math.sqrt(W.shape[-1]))
                    else:
                        W.copy_(orthonormalize(W))
    return model


def task_loss(model: nn.Module, x: Tensor, y: Tensor) -> Tensor:
    """Mean cross-entropy of the model's logits: a function of ``W_Q, W_K`` only through
    ``W_Q W_Kᵀ`` per head (the logits' ``1/√r`` is fixed by the head width)."""
    return F.cross_entropy(model(x), y)


@functools.lru_cache(maxsize=None)
def query_penalty(seed: int = 0, weight: float = 0.1) -> Callable[[nn.Module, Tensor, Tensor], Tensor]:
    """A deliberately *non*-invariant loss: :func:`task_loss` plus ``weight · ⟨B, W_Q⟩`` for a fixed
    random ``B``, a term in ``W_Q`` alone. Its gradient has a gauge component, for both groups:
    certificates must fail on it. (One function object per ``(seed, weight)``, so results computed
    with it can be remembered.)"""

    def loss(model: nn.Module, x: Tensor, y: Tensor) -> Tensor:
        total = task_loss(model, x, y)
        for i, (_, attn) in enumerate(attention_modules(model)):
            g = torch.Generator().manual_seed(seed + 7919 * i)
            B = torch.randn(attn.W_Q.shape, generator=g, dtype=attn.W_Q.dtype)
            total = total + weight * (B * attn.W_Q).sum()
        return total

    return loss


def head_gradients(model: nn.Module, loss: Tensor, *, riemannian: bool | None = None) -> list[tuple[Tensor, Tensor, Tensor, Tensor]]:
    """``(W_Q, W_K, G_Q, G_K)`` for every attention module (banks ``(H, d, r)``), ``G`` the gradient
    of ``loss``. ``riemannian`` (default: for frames) projects ``G`` onto the tangent spaces,
    ``P_W(G)``: the Riemannian gradient that StiefelAdam steps along."""
    modules = attention_modules(model)
    params = [W for _, attn in modules for W in (attn.W_Q, attn.W_K)]
    grads = torch.autograd.grad(loss, params, allow_unused=True)
    out = []
    for k, (_, attn) in enumerate(modules):
        W_Q, W_K = attn.W_Q.detach().to(DTYPE), attn.W_K.detach().to(DTYPE)
        G_Q, G_K = (torch.zeros_like(W) if G is None else G.detach().to(DTYPE) for W, G in ((W_Q, grads[2 * k]), (W_K, grads[2 * k + 1])))
        if riemannian if riemannian is not None else is_frame(attn.W_Q):
            G_Q, G_K = project_tangent(W_Q, G_Q), project_tangent(W_K, G_K)
        out.append((W_Q, W_K, G_Q, G_K))
    return out


def _default_group(model: nn.Module) -> str:
    return "orthogonal" if is_frame(attention_modules(model)[0][1].W_Q) else "gl"


def model_gauge_components(
    model: nn.Module,
    data: ModularData,
    *,
    group: str | None = None,
    loss_fn: Callable[[nn.Module, Tensor, Tensor], Tensor] = task_loss,
) -> dict[str, Tensor]:
    """The gradient's gauge component at the model's current point, every head of every attention
    module: ``"component"`` (:func:`gauge_component`, one per head) and ``"cosine"`` (the largest
    :func:`direction_cosines` per head). ``group`` defaults to O(r) for a Stiefel model (its
    Riemannian gradient) and GL(r) for a Euclidean one (its Euclidean gradient)."""
    group = _check_group(group or _default_group(model))
    loss = loss_fn(model, data.train_x, data.train_y)
    heads = head_gradients(model, loss)
    return {
        "component": torch.cat([gauge_component(*h, group) for h in heads]),
        "cosine": torch.cat([direction_cosines(*h, group).amax(-1) for h in heads]),
    }


@torch.no_grad()
def remove_gauge_from_grads_(model: nn.Module, *, group: str | None = None) -> Tensor:
    """Remove the gauge component from the ``.grad`` of every attention ``W_Q, W_K``, in place,
    before an optimizer step; returns the removed component relative to the gradient, per head.

    For frames, the part removed is the projection of the Riemannian gradient ``g = P_W(G)``
    onto the (tangent) O(r) span: ``G ← G - P_gauge(g)``, so the optimizer, which projects
    ``G`` itself, sees ``g - P_gauge(g)``. For Euclidean ``W_Q, W_K`` it is the GL(r) span of ``G``.
    """
    group = _check_group(group or _default_group(model))
    removed = []
    for _, attn in attention_modules(model):
        W_Q, W_K = attn.W_Q.to(DTYPE), attn.W_K.to(DTYPE)
        G_Q, G_K = attn.W_Q.grad.to(DTYPE), attn.W_K.grad.to(DTYPE)
        if is_frame(attn.W_Q):
            G_Q, G_K = project_tangent(W_Q, G_Q), project_tangent(W_K, G_K)
        P_Q, P_K = project_gauge(W_Q, W_K, G_Q, G_K, group)
        removed.append(_pair_norm(P_Q, P_K) / _pair_norm(G_Q, G_K).clamp_min(torch.finfo(DTYPE).tiny))
        attn.W_Q.grad.sub_(P_Q.to(attn.W_Q.grad.dtype))
        attn.W_K.grad.sub_(P_K.to(attn.W_K.grad.dtype))
    return torch.cat(removed)


# --------------------------------------------------------------------------------------------
# Curves through the point: along a gauge orbit, and off it
# --------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _swapped(attn: SelfAttention, W_Q: Tensor, W_K: Tensor):
    """Inside the block, ``attn.W_Q, attn.W_K`` hold the given values (restored afterwards), so a
    loss function sees them wherever it reads them."""
    saved = attn.W_Q.detach().clone(), attn.W_K.detach().clone()
    with torch.no_grad():
        attn.W_Q.copy_(W_Q)
        attn.W_K.copy_(W_K)
    try:
        yield
    finally:
        with torch.no_grad():
            attn.W_Q.copy_(saved[0])
            attn.W_K.copy_(saved[1])


@torch.no_grad()
def loss_along(
    model: nn.Module,
    data: ModularData,
    curve: Callable[[float], tuple[Tensor, Tensor]],
    ts,
    *,
    module: int = 0,
    loss_fn: Callable[[nn.Module, Tensor, Tensor], Tensor] = task_loss,
) -> Tensor:
    """The loss with ``(W_Q, W_K) = curve(t)`` in one attention module (banks ``(H, d, r)``), for
    every ``t`` of ``ts``; the model's own weights are restored afterwards."""
    attn = attention_modules(model)[module][1]
    values = []
    for t in ts:
        with _swapped(attn, *curve(float(t))):
            values.append(float(loss_fn(model, data.train_x, data.train_y)))
    return torch.tensor(values, dtype=DTYPE)


def orbit_curves(model: nn.Module, group: str, seed: int = 0, *, module: int = 0) -> dict[str, Callable[[float], tuple[Tensor, Tensor]]]:
    """Two curves through the model's ``(W_Q, W_K)`` with unit-norm random generators per head:
    ``"gauge"``, along the orbit (``(W_Q exp(tΩ), W_K exp(tΩ))`` or ``(W_Q exp(tX), W_K exp(-tXᵀ))``),
    and ``"off"``, the same motion of ``W_Q`` with ``W_K`` held fixed: for O(r) it stays on
    St x St, but it is no symmetry."""
    _check_group(group)
    attn = attention_modules(model)[module][1]
    W_Q, W_K = attn.W_Q.detach().to(DTYPE), attn.W_K.detach().to(DTYPE)
    H, r = W_Q.shape[0], W_Q.shape[-1]
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(H, r, r, generator=g, dtype=DTYPE)
    if group == "orthogonal":
        X = X - X.mT
    X = X / torch.linalg.matrix_norm(X)[:, None, None]

    def gauge(t: float) -> tuple[Tensor, Tensor]:
        return W_Q @ torch.linalg.matrix_exp(t * X), W_K @ torch.linalg.matrix_exp(-t * X.mT)

    def off(t: float) -> tuple[Tensor, Tensor]:
        return W_Q @ torch.linalg.matrix_exp(t * X), W_K

    return {"gauge": gauge, "off": off}


# --------------------------------------------------------------------------------------------
# Training runs
# --------------------------------------------------------------------------------------------

DEFAULT_LR = 1e-2  # both arms; Adam-sized steps that visibly train the tiny model in 100 steps


def _optimizer(model: nn.Module, lr: float, weight_decay: float):
    return configure_optimizer(model, lr=lr, weight_decay=weight_decay)


def training_checkpoints(
    stiefel: bool, *, steps: int = 60, every: int = 10, seed: int = 0, lr: float = DEFAULT_LR,
    weight_decay: float = 0.1, problem: GaugeProblem = GaugeProblem(), random_point: bool = False,
) -> Iterator[tuple[int, nn.Module, ModularData]]:
    """Train the problem's model (StiefelAdam on the frames and AdamW on the rest, or AdamW on
    everything) and yield ``(step, model, data)`` at steps ``0, every, 2 every, ..., steps``."""
    model = make_model(stiefel, seed, problem, random_point=random_point)
    data = problem.data()
    opt = _optimizer(model, lr, weight_decay)
    for step in range(steps + 1):
        if step % every == 0:
            yield step, model, data
        if step == steps:
            break
        opt.zero_grad()
        task_loss(model, data.train_x, data.train_y).backward()
        opt.step()


def trained_model(stiefel: bool, *, steps: int = 40, seed: int = 0, problem: GaugeProblem = GaugeProblem(), **kw) -> nn.Module:
    """The problem's model after ``steps`` steps of :func:`training_checkpoints` (at the start,
    attention is nearly uniform and barely matters to the loss; after a few dozen steps it does)."""
    *_, (_, model, _) = training_checkpoints(stiefel, steps=steps, every=steps or 1, seed=seed, problem=problem, **kw)
    return model


def _flat_parameters(model: nn.Module) -> Tensor:
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


REMOVE_MODES = ("none", "gradient", "update")


def _steps_taken(model: nn.Module, before: list[tuple[Tensor, Tensor]]) -> list[tuple[Tensor, Tensor]]:
    """The steps ``(ξ_Q, ξ_K)`` the optimizer just took in every attention module: recovered exactly
    from the frames before and after (:func:`inverse_retract_polar`) for frames, the difference
    ``W_after - W_before`` otherwise."""
    steps = []
    for (W_Q0, W_K0), (_, attn) in zip(before, attention_modules(model)):
        W_Q1, W_K1 = attn.W_Q.detach().to(DTYPE), attn.W_K.detach().to(DTYPE)
        if is_frame(attn.W_Q):
            steps.append((inverse_retract_polar(W_Q0, W_Q1), inverse_retract_polar(W_K0, W_K1)))
        else:
            steps.append((W_Q1 - W_Q0, W_K1 - W_K0))
    return steps


def update_gauge_components(model: nn.Module, before: list[tuple[Tensor, Tensor]], group: str) -> float:
    """The gauge component of the step the optimizer just took, relative to the step (the pair
    ``(ξ_Q, ξ_K)`` of a head), largest over heads, measured at the point before the step."""
    return max(
        float(gauge_component(W_Q0, W_K0, xi_Q, xi_K, group).max())
        for (W_Q0, W_K0), (xi_Q, xi_K) in zip(before, _steps_taken(model, before))
    )


@torch.no_grad()
def _remove_gauge_from_step_(model: nn.Module, before: list[tuple[Tensor, Tensor]], group: str) -> None:
    """Replace the step just taken in every attention module by its part orthogonal to the gauge
    directions at the point before it (retracted again for frames). Optimizer state is untouched."""
    for (W_Q0, W_K0), (xi_Q, xi_K), (_, attn) in zip(before, _steps_taken(model, before), attention_modules(model)):
        xi_Q, xi_K = remove_gauge(W_Q0, W_K0, xi_Q, xi_K, group)
        if is_frame(attn.W_Q):
            attn.W_Q.copy_(retract_polar(W_Q0, xi_Q))
            attn.W_K.copy_(retract_polar(W_K0, xi_K))
        else:
            attn.W_Q.copy_(W_Q0 + xi_Q)
            attn.W_K.copy_(W_K0 + xi_K)


@functools.lru_cache(maxsize=16)
def _cached_projected_run(stiefel: bool, remove: str, steps: int, seed: int, lr: float, weight_decay: float, problem: GaugeProblem) -> dict:
    with one_thread():
        model = make_model(stiefel, seed, problem)
        data = problem.data()
        opt = _optimizer(model, lr, weight_decay)
        group = _default_group(model)
        params, losses, removed, update_component = [_flat_parameters(model)], [], [], []
        for _ in range(steps):
            opt.zero_grad()
            loss = task_loss(model, data.train_x, data.train_y)
            loss.backward()
            losses.append(loss.item())
            if remove == "gradient":
                removed.append(float(remove_gauge_from_grads_(model, group=group).max()))
            before = [(attn.W_Q.detach().to(DTYPE).clone(), attn.W_K.detach().to(DTYPE).clone()) for _, attn in attention_modules(model)]
            opt.step()
            if remove != "gradient":  # the steps' own gauge part (the gradient run matches the plain one)
                update_component.append(update_gauge_components(model, before, group))
            if remove == "update":
                _remove_gauge_from_step_(model, before, group)
            params.append(_flat_parameters(model))
        with torch.no_grad():
            losses.append(task_loss(model, data.train_x, data.train_y).item())
    return {
        "params": torch.stack(params),  # (steps + 1, n_params)
        "loss": torch.tensor(losses, dtype=DTYPE),  # (steps + 1,)
        "removed": torch.tensor(removed, dtype=DTYPE),  # (steps,), or empty
        "update_component": torch.tensor(update_component, dtype=DTYPE),  # (steps,), or empty
    }


def projected_run(
    stiefel: bool, *, remove: str = "gradient", steps: int = 120, seed: int = 0, lr: float = DEFAULT_LR,
    weight_decay: float = 0.1, problem: GaugeProblem = GaugeProblem(),
) -> dict[str, Tensor]:
    """A float64 training run of the problem's model (full batch, ``configure_optimizer``: StiefelAdam
    on frames and AdamW on the rest, or AdamW on everything).

    ``remove`` says what loses its gauge component at every step: ``"gradient"`` (the attention
    gradients, before the optimizer sees them: :func:`remove_gauge_from_grads_`), ``"update"`` (the
    step the optimizer took, afterwards; its state is left alone) or ``"none"``. Returns ``params``
    (all parameters, the start first, then after each step), ``loss`` (before each step, then at
    the end), ``removed`` (the relative gauge component removed from each gradient) and, unless
    ``remove="gradient"``, ``update_component`` (the gauge component of each step the optimizer
    took, relative to the step). Deterministic and remembered: a second call with the same arguments is free.
    """
    if remove not in REMOVE_MODES:
        raise ValueError(f"remove={remove!r}: choose one of {REMOVE_MODES}")
    run = _cached_projected_run(bool(stiefel), remove, int(steps), int(seed), float(lr), float(weight_decay), problem)
    return {k: v.clone() for k, v in run.items()}


# --------------------------------------------------------------------------------------------
# Certificates
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SymmetryCertificate(Certificate):
    n_curves: int  # random generators per group and arm
    orthogonal_loss_change: float  # max |L(W_Q R, W_K R) - L| / |L| over R = exp(tΩ), Stiefel model
    gl_loss_change: float  # max |L(W_Q A, W_K A⁻ᵀ) - L| / |L|, both arms' models
    off_orbit_loss_change: float  # the same for (W_Q R, W_K): no symmetry, must move the loss
    orthogonal_tangency: float  # max ‖Wᵀ(WΩ) + (WΩ)ᵀW‖ over the O(r) generators
    symmetric_normality: float  # max ‖P_W(W S)‖ over the symmetric GL directions (W_Q S, -W_K S)
    kernel_dims: tuple[int, int]  # kernel of d(W_Q W_Kᵀ): (Euclidean, tangent to St x St)
    image_dims: tuple[int, int]  # its image: how many ways the product W_Q W_Kᵀ can move
    gauge_dims: tuple[int, int]  # (r², r(r-1)/2)
    span_residual: float  # max part of a unit gauge direction outside that kernel
    d_model: int
    d_head: int
    tolerance: float = TOLERANCE

    def checks(self) -> dict[str, bool]:
        return {
            "loss unchanged along O(r) orbits": self.orthogonal_loss_change <= self.tolerance,
            "loss unchanged along GL(r) orbits": self.gl_loss_change <= self.tolerance,
            "O(r) generators tangent to St x St": self.orthogonal_tangency <= self.tolerance,
            "symmetric GL generators normal to St x St": self.symmetric_normality <= self.tolerance,
            "kernel of d(W_Q W_Kᵀ) = gauge span": self.kernel_dims == self.gauge_dims and self.span_residual <= 1e-10,
            "St x St loses r(r+1)/2 product directions": self.image_dims[0] - self.image_dims[1] == self.d_head * (self.d_head + 1) // 2,
            "an off-orbit curve visibly moves the loss (> 1e-3)": self.off_orbit_loss_change > 1e-3,
        }

    def summary(self) -> dict[str, object]:
        r = self.d_head
        return {
            "heads": f"d_model = {self.d_model}, r = d_head = {r}",
            "random curves per group and arm": self.n_curves,
            "max |ΔL| / |L| along (W_Q R, W_K R), R ∈ O(r)": _at_most(self.orthogonal_loss_change, self.tolerance),
            "max |ΔL| / |L| along (W_Q A, W_K A⁻ᵀ), A ∈ GL(r)": _at_most(self.gl_loss_change, self.tolerance),
            "max |ΔL| / |L| along (W_Q R, W_K), no symmetry": _sig(self.off_orbit_loss_change, 2),
            "max ‖Wᵀξ + ξᵀW‖, ξ = WΩ": _at_most(self.orthogonal_tangency, self.tolerance),
            "max ‖P_W(W S)‖, S symmetric": _at_most(self.symmetric_normality, self.tolerance),
            f"dim ker d(W_Q W_Kᵀ), Euclidean (r² = {r * r})": self.kernel_dims[0],
            f"dim ker d(W_Q W_Kᵀ), on St x St (r(r-1)/2 = {r * (r - 1) // 2})": self.kernel_dims[1],
            "gauge directions outside the kernel": _at_most(self.span_residual, 1e-10),
            "dim of the products' motions, Euclidean / St x St": f"{self.image_dims[0]} / {self.image_dims[1]}",
        }


@single_threaded
def certify_symmetry(
    *, n_curves: int = 4, ts: tuple[float, ...] = (-2.0, -0.5, 0.3, 1.0, 3.0), seed: int = 0, trained_steps: int = 40,
    problem: GaugeProblem = GaugeProblem(), loss_fn: Callable[[nn.Module, Tensor, Tensor], Tensor] = task_loss,
) -> SymmetryCertificate:
    """The generators are symmetries, of the right kind, and all of the symmetry.

    - the loss along ``(W_Q exp(tΩ), W_K exp(tΩ))`` of the Stiefel model (trained ``trained_steps``
      steps, so that attention matters to the loss), and along
      ``(W_Q A, W_K A⁻ᵀ)``, ``A = exp(tX)`` with ``‖X‖_F = 1`` (condition number up to ``e^6``), of
      the Stiefel model and of the Euclidean one at a generic non-orthonormal point, for
      ``n_curves`` random generators per head and every ``t`` in ``ts``: unchanged to 1e-12
      relative; the curve ``(W_Q exp(tΩ), W_K)`` must change it (the check can fail);
    - the O(r) generators are tangent and the symmetric GL ones normal, at every head;
    - the kernel of ``d(W_Q W_Kᵀ)`` has dimension ``r²`` on the whole space and ``r(r-1)/2`` on
      the tangent space of St x St, and is spanned by the generators (:func:`product_kernel`);
      the image on St x St is ``r(r+1)/2`` dimensions smaller than the Euclidean one: the frames
      do not only fix a gauge, they restrict the products ``W_Q W_Kᵀ`` (all singular values 1).

    ``loss_fn`` replaces the task loss (tests pass a non-invariant one).
    """
    data = problem.data()
    stiefel_model = trained_model(True, steps=trained_steps, seed=seed, problem=problem)
    euclid_model = make_model(False, seed + 1, problem, random_point=True)

    def worst_change(model: nn.Module, group: str, kind: str) -> float:
        with torch.no_grad():
            base = loss_fn(model, data.train_x, data.train_y).item()
        worst = 0.0
        for c in range(n_curves):
            curve = orbit_curves(model, group, seed=seed + 100 + c)[kind]
            values = loss_along(model, data, curve, ts, loss_fn=loss_fn)
            worst = max(worst, float((values - base).abs().max()) / abs(base))
        return worst

    orthogonal_change = worst_change(stiefel_model, "orthogonal", "gauge")
    gl_change = max(worst_change(stiefel_model, "gl", "gauge"), worst_change(euclid_model, "gl", "gauge"))
    off_change = worst_change(stiefel_model, "orthogonal", "off")

    attn = attention_modules(stiefel_model)[0][1]
    W_Q, W_K = attn.W_Q.detach(), attn.W_K.detach()
    D_Q, D_K = orthogonal_generators(W_Q, W_K)
    tangency = float(torch.maximum(tangency_error(W_Q, D_Q), tangency_error(W_K, D_K)).max())
    r = W_Q.shape[-1]
    i, j = torch.triu_indices(r, r)
    S = torch.zeros(len(i), r, r, dtype=DTYPE)
    S[torch.arange(len(i)), i, j] = 1.0
    S = S + S.mT  # (r(r+1)/2, r, r): a basis of the symmetric matrices
    normality = float(torch.maximum(normality_error(W_Q, W_Q.unsqueeze(-3) @ S), normality_error(W_K, -(W_K.unsqueeze(-3) @ S))).max())

    W_E = attention_modules(euclid_model)[0][1]
    euclidean = product_kernel(W_E.W_Q.detach()[0], W_E.W_K.detach()[0], tangent=False)
    on_stiefel = product_kernel(W_Q[0], W_K[0], tangent=True)
    return SymmetryCertificate(
        n_curves=n_curves,
        orthogonal_loss_change=orthogonal_change,
        gl_loss_change=gl_change,
        off_orbit_loss_change=off_change,
        orthogonal_tangency=tangency,
        symmetric_normality=normality,
        kernel_dims=(euclidean["kernel_dim"], on_stiefel["kernel_dim"]),
        image_dims=(euclidean["image_dim"], on_stiefel["image_dim"]),
        gauge_dims=(euclidean["gauge_dim"], on_stiefel["gauge_dim"]),
        span_residual=max(euclidean["span_residual"], on_stiefel["span_residual"]),
        d_model=problem.d_model,
        d_head=problem.d_head,
    )


@dataclass(frozen=True)
class GaugeGradientCertificate(Certificate):
    n_random_points: int  # per arm
    checkpoints: tuple[int, ...]  # steps of the training runs at which the gradient is checked
    n_heads: int
    stiefel_random: float  # max ‖P_O(r)(grad)‖ / ‖grad‖, Riemannian gradient, random frames
    stiefel_run: float  # the same along a StiefelAdam run
    stiefel_gl: float  # the Stiefel model's Euclidean gradient against GL(r), random frames and run
    euclidean_random: float  # max ‖P_GL(r)(grad)‖ / ‖grad‖, Euclidean gradient, generic points
    euclidean_run: float  # the same along an AdamW run
    max_cosine: float  # largest |cos| between a gradient and a single gauge direction, anywhere
    control_stiefel: float  # min over points of the component for a loss with a W_Q-only term
    control_euclidean: float
    tolerance: float = TOLERANCE

    @property
    def worst(self) -> float:
        """The largest relative gauge component of every gradient checked."""
        return max(self.stiefel_random, self.stiefel_run, self.stiefel_gl, self.euclidean_random, self.euclidean_run, self.max_cosine)

    def checks(self) -> dict[str, bool]:
        return {
            "Stiefel: Riemannian gradient ⟂ O(r), random points": self.stiefel_random <= self.tolerance,
            "Stiefel: Riemannian gradient ⟂ O(r), along StiefelAdam": self.stiefel_run <= self.tolerance,
            "Stiefel: Euclidean gradient ⟂ GL(r)": self.stiefel_gl <= self.tolerance,
            "Euclidean: gradient ⟂ GL(r), random points": self.euclidean_random <= self.tolerance,
            "Euclidean: gradient ⟂ GL(r), along AdamW": self.euclidean_run <= self.tolerance,
            "every single gauge direction": self.max_cosine <= self.tolerance,
            "a W_Q-only loss term visibly fails it (> 1e-3)": min(self.control_stiefel, self.control_euclidean) > 1e-3,
        }

    def summary(self) -> dict[str, object]:
        t = self.tolerance
        return {
            "heads checked at each point": self.n_heads,
            "random points per arm": self.n_random_points,
            "training-run checkpoints (steps)": ", ".join(str(c) for c in self.checkpoints),
            "Stiefel, O(r), random points: max ‖P g‖/‖g‖": _at_most(self.stiefel_random, t),
            "Stiefel, O(r), along StiefelAdam": _at_most(self.stiefel_run, t),
            "Stiefel model, GL(r), Euclidean gradient": _at_most(self.stiefel_gl, t),
            "Euclidean, GL(r), random points": _at_most(self.euclidean_random, t),
            "Euclidean, GL(r), along AdamW": _at_most(self.euclidean_run, t),
            "max |cos(g, one gauge direction)|": _at_most(self.max_cosine, t),
            "control (+ ⟨B, W_Q⟩), Stiefel: min ‖P g‖/‖g‖": _sig(self.control_stiefel, 2),
            "control (+ ⟨B, W_Q⟩), Euclidean": _sig(self.control_euclidean, 2),
        }


def gauge_components_by_point(
    *, n_random_points: int = 6, steps: int = 60, every: int = 10, seed: int = 0, problem: GaugeProblem = GaugeProblem(),
    loss_fn: Callable[[nn.Module, Tensor, Tensor], Tensor] = task_loss,
) -> dict[str, Tensor]:
    """Relative gauge components of the gradient, one row per point, one column per head:
    ``"stiefel_random"``, ``"stiefel_run"`` (O(r), Riemannian gradient), ``"stiefel_gl"`` (the Stiefel
    model's Euclidean gradient against GL(r)), ``"euclidean_random"``, ``"euclidean_run"`` (GL(r)),
    ``"cosine"`` (largest single-direction cosine per point), ``"steps"`` (the run's checkpoints).
    Deterministic and remembered (per ``loss_fn`` object): a second call is free."""
    found = _cached_components(int(n_random_points), int(steps), int(every), int(seed), problem, loss_fn)
    return {k: v.clone() for k, v in found.items()}


@functools.lru_cache(maxsize=8)
@single_threaded
def _cached_components(n_random_points: int, steps: int, every: int, seed: int, problem: GaugeProblem, loss_fn) -> dict[str, Tensor]:
    data = problem.data()
    out: dict[str, list] = {k: [] for k in ("stiefel_random", "stiefel_run", "stiefel_gl", "euclidean_random", "euclidean_run", "cosine")}

    def check(model: nn.Module, key: str) -> None:
        group = _default_group(model)
        c = model_gauge_components(model, data, group=group, loss_fn=loss_fn)
        out[key].append(c["component"])
        out["cosine"].append(c["cosine"].max())
        if group == "orthogonal":  # the same model's Euclidean gradient against the full GL(r)
            loss = loss_fn(model, data.train_x, data.train_y)
            heads = head_gradients(model, loss, riemannian=False)
            out["stiefel_gl"].append(torch.cat([gauge_component(*h, "gl") for h in heads]))

    for k in range(n_random_points):
        check(make_model(True, seed + 10 + k, problem), "stiefel_random")
        check(make_model(False, seed + 10 + k, problem, random_point=True), "euclidean_random")
    steps_seen = []
    for stiefel, key in ((True, "stiefel_run"), (False, "euclidean_run")):
        for step, model, _ in training_checkpoints(stiefel, steps=steps, every=every, seed=seed, problem=problem):
            check(model, key)
            if stiefel:
                steps_seen.append(step)
    result = {k: torch.stack(v) for k, v in out.items()}
    result["steps"] = torch.tensor(steps_seen)
    return result


def certify_gauge_gradients(
    *, n_random_points: int = 6, steps: int = 60, every: int = 10, seed: int = 0, problem: GaugeProblem = GaugeProblem(),
    loss_fn: Callable[[nn.Module, Tensor, Tensor], Tensor] = task_loss,
) -> GaugeGradientCertificate:
    """The gradient carries no gauge component: at ``n_random_points`` random points per arm and at
    every ``every``-th step of a ``steps``-step training run per arm (StiefelAdam + AdamW; AdamW),
    every head's gradient has a component along the span of its gauge directions of at most 1e-12
    of its norm. The Stiefel arm's Riemannian gradient is checked against O(r), its Euclidean one
    against GL(r), the Euclidean arm's gradient against GL(r). The control, the same check for
    the loss plus ``0.1 ⟨B, W_Q⟩`` (:func:`query_penalty`) at the random points, must fail it
    visibly. ``loss_fn`` replaces the task loss (tests pass a non-invariant one)."""
    kw = dict(n_random_points=n_random_points, seed=seed, problem=problem)
    found = gauge_components_by_point(steps=steps, every=every, loss_fn=loss_fn, **kw)
    control = gauge_components_by_point(steps=0, every=1, loss_fn=query_penalty(seed), **kw)
    return GaugeGradientCertificate(
        n_random_points=n_random_points,
        checkpoints=tuple(int(s) for s in found["steps"]),
        n_heads=found["stiefel_random"].shape[-1],
        stiefel_random=float(found["stiefel_random"].max()),
        stiefel_run=float(found["stiefel_run"].max()),
        stiefel_gl=float(found["stiefel_gl"].max()),
        euclidean_random=float(found["euclidean_random"].max()),
        euclidean_run=float(found["euclidean_run"].max()),
        max_cosine=float(found["cosine"].max()),
        control_stiefel=float(control["stiefel_random"].min()),
        control_euclidean=float(control["euclidean_random"].min()),
    )


@dataclass(frozen=True)
class ProjectedRunCertificate(Certificate):
    steps: int
    lr: float
    weight_decay: float
    stiefel_param_deviation: float  # max over steps and entries |θ_projected - θ_plain|
    stiefel_loss_deviation: float  # max over steps |L_projected - L_plain|
    euclidean_param_deviation: float
    euclidean_loss_deviation: float
    max_removed: float  # largest relative gauge component removed from a gradient, both arms
    stiefel_loss: tuple[float, float]  # plain run: first and last loss (it trains)
    euclidean_loss: tuple[float, float]
    stiefel_update_component: float  # max relative gauge component of StiefelAdam's own steps
    euclidean_update_component: float  # the same for AdamW's steps
    stiefel_update_removed_deviation: float  # max |θ - θ_plain| when the *steps* lose their gauge part
    euclidean_update_removed_deviation: float
    stiefel_update_removed_loss_deviation: float  # max |L - L_plain| when the steps lose their gauge part
    euclidean_update_removed_loss_deviation: float
    tolerance: float = RUN_TOLERANCE

    def checks(self) -> dict[str, bool]:
        return {
            "Stiefel arm: parameters match": self.stiefel_param_deviation <= self.tolerance,
            "Stiefel arm: loss matches": self.stiefel_loss_deviation <= self.tolerance,
            "Euclidean arm: parameters match": self.euclidean_param_deviation <= self.tolerance,
            "Euclidean arm: loss matches": self.euclidean_loss_deviation <= self.tolerance,
            "removed components are rounding (≤ 1e-12)": self.max_removed <= TOLERANCE,
            "both runs train (loss falls)": self.stiefel_loss[1] < self.stiefel_loss[0] and self.euclidean_loss[1] < self.euclidean_loss[0],
        }

    def summary(self) -> dict[str, object]:
        t = self.tolerance
        return {
            "training run": f"{self.steps} steps, lr {self.lr:g}, AdamW weight decay {self.weight_decay:g}, float64",
            "Stiefel arm, max |θ_projected − θ_plain|": _at_most(self.stiefel_param_deviation, t),
            "Stiefel arm, max |L_projected − L_plain|": _at_most(self.stiefel_loss_deviation, t),
            "Euclidean arm, max |θ_projected − θ_plain|": _at_most(self.euclidean_param_deviation, t),
            "Euclidean arm, max |L_projected − L_plain|": _at_most(self.euclidean_loss_deviation, t),
            "largest gauge component removed (relative)": _at_most(self.max_removed, TOLERANCE),
            "Stiefel arm loss, first → last": f"{self.stiefel_loss[0]:.3f} → {self.stiefel_loss[1]:.3f}",
            "Euclidean arm loss, first → last": f"{self.euclidean_loss[0]:.3f} → {self.euclidean_loss[1]:.3f}",
        }

    def update_summary(self) -> dict[str, object]:
        """Not a check: the gauge part of the optimizers' own steps, and what removing it does."""
        return {
            "StiefelAdam steps: max gauge component (relative)": _sig(self.stiefel_update_component, 2),
            "AdamW steps: max gauge component (relative)": _sig(self.euclidean_update_component, 2),
            "steps projected instead, Stiefel: max |θ − θ_plain|": _sig(self.stiefel_update_removed_deviation, 2),
            "steps projected instead, Euclidean: max |θ − θ_plain|": _sig(self.euclidean_update_removed_deviation, 2),
            "steps projected instead, Stiefel: max |L − L_plain|": _sig(self.stiefel_update_removed_loss_deviation, 2),
            "steps projected instead, Euclidean: max |L − L_plain|": _sig(self.euclidean_update_removed_loss_deviation, 2),
        }


def run_deviation(stiefel: bool, *, remove: str = "gradient", **kw) -> dict[str, Tensor]:
    """Per step, between a run with ``remove`` (see :func:`projected_run`) and the plain run: the
    largest parameter deviation ``params`` and the loss deviation ``loss`` (``steps + 1`` entries
    each); the projected run's ``removed`` and ``projected_loss``, the plain run's ``plain_loss`` and
    ``update_component``."""
    plain, projected = projected_run(stiefel, remove="none", **kw), projected_run(stiefel, remove=remove, **kw)
    return {
        "params": (projected["params"] - plain["params"]).abs().amax(-1),
        "loss": (projected["loss"] - plain["loss"]).abs(),
        "removed": projected["removed"],
        "plain_loss": plain["loss"],
        "projected_loss": projected["loss"],
        "update_component": plain["update_component"],
    }


def certify_projected_run(
    *, steps: int = 120, seed: int = 0, lr: float = DEFAULT_LR, weight_decay: float = 0.1, problem: GaugeProblem = GaugeProblem(),
) -> ProjectedRunCertificate:
    """Removing the gauge directions from every gradient changes nothing: the problem's model
    trained ``steps`` steps in float64, once plainly and once with :func:`remove_gauge_from_grads_`
    before every step, for the Stiefel arm (StiefelAdam on the frames, its Riemannian gradient
    projected; AdamW on the rest) and the Euclidean arm (AdamW, GL(r)). Parameters and losses
    must agree to 1e-10 at every step.

    Recorded beside the checks, from the same plain runs: the gauge component of the steps the
    optimizers take (not of their gradients), and how far a run drifts from the plain one when
    those *steps* are projected instead (:meth:`ProjectedRunCertificate.update_summary`).
    """
    kw = dict(steps=steps, seed=seed, lr=lr, weight_decay=weight_decay, problem=problem)
    with one_thread():
        s, e = run_deviation(True, **kw), run_deviation(False, **kw)
        s_update, e_update = run_deviation(True, remove="update", **kw), run_deviation(False, remove="update", **kw)
    return ProjectedRunCertificate(
        steps=steps,
        lr=lr,
        weight_decay=weight_decay,
        stiefel_param_deviation=float(s["params"].max()),
        stiefel_loss_deviation=float(s["loss"].max()),
        euclidean_param_deviation=float(e["params"].max()),
        euclidean_loss_deviation=float(e["loss"].max()),
        max_removed=float(max(s["removed"].max(), e["removed"].max())),
        stiefel_loss=(float(s["plain_loss"][0]), float(s["plain_loss"][-1])),
        euclidean_loss=(float(e["plain_loss"][0]), float(e["plain_loss"][-1])),
        stiefel_update_component=float(s["update_component"].max()),
        euclidean_update_component=float(e["update_component"].max()),
        stiefel_update_removed_deviation=float(s_update["params"].max()),
        euclidean_update_removed_deviation=float(e_update["params"].max()),
        stiefel_update_removed_loss_deviation=float(s_update["loss"].max()),
        euclidean_update_removed_loss_deviation=float(e_update["loss"].max()),
    )


# --------------------------------------------------------------------------------------------
# Does the optimizer care where on the orbit it starts?
# --------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=16)
def _cached_moved_start_run(stiefel: bool, kind: str, draw: int, steps: int, seed: int, lr: float, weight_decay: float, problem: GaugeProblem) -> dict:
    with one_thread():
        model = make_model(stiefel, seed, problem)
        data = problem.data()
        attn = attention_modules(model)[0][1]
        H, r = attn.W_Q.shape[0], attn.W_Q.shape[-1]
        g = torch.Generator().manual_seed(seed + 500 + draw)
        if kind == "orthogonal":
            A = random_frame(r, r, H, generator=g, dtype=DTYPE)  # Haar-random R in O(r), one per head
        else:
            A = torch.linalg.matrix_exp(torch.randn(H, r, r, generator=g, dtype=DTYPE) / math.sqrt(r))  # in GL(r)
        if kind != "none":
            with torch.no_grad():
                W_Q, W_K = gl_action(attn.W_Q.detach(), attn.W_K.detach(), A)
                attn.W_Q.copy_(W_Q)
                attn.W_K.copy_(W_K)
        opt = _optimizer(model, lr, weight_decay)
        losses, frames, rest = [], [], []
        for step in range(steps + 1):
            loss = task_loss(model, data.train_x, data.train_y)
            losses.append(loss.item())
            frames.append(torch.stack([attn.W_Q.detach().clone(), attn.W_K.detach().clone()]))
            rest.append(torch.cat([p.detach().reshape(-1) for name, p in model.named_parameters() if not name.endswith(("W_Q", "W_K"))]))
            if step == steps:
                break
            opt.zero_grad()
            loss.backward()
            opt.step()
    return {
        "A": A if kind != "none" else torch.eye(r, dtype=DTYPE).expand(H, r, r).clone(),
        "loss": torch.tensor(losses, dtype=DTYPE),  # (steps + 1,)
        "frames": torch.stack(frames),  # (steps + 1, 2, H, d, r)
        "rest": torch.stack(rest),  # (steps + 1, n_rest)
    }


def moved_start_deviation(stiefel: bool, kind: str = "orthogonal", *, draw: int = 0, steps: int = 120, seed: int = 0,
                          lr: float = DEFAULT_LR, weight_decay: float = 0.1, problem: GaugeProblem = GaugeProblem()) -> dict[str, Tensor]:
    """Train from a point moved along its gauge orbit, ``(W_Q A, W_K A⁻ᵀ)`` with a random ``A`` per
    head (``kind="orthogonal"``: Haar ``R`` in O(r), so frames stay frames; ``"gl"``: ``exp(X)``),
    and from the point itself; the same optimizer, data and seed. Per step (``steps + 1``): ``loss``,
    the loss deviation; ``frames``, the largest ``|W'_t - W_t A|`` and ``|W'_t - W_t A⁻ᵀ|`` entry (the
    moved run is the original one moved, when the optimizer is gauge-equivariant); ``rest``, the
    largest deviation of every other parameter. Remembered."""
    if kind not in GROUPS:
        raise ValueError(f"kind={kind!r}: choose one of {GROUPS}")
    key = (int(steps), int(seed), float(lr), float(weight_decay), problem)
    plain = _cached_moved_start_run(bool(stiefel), "none", 0, *key)
    moved = _cached_moved_start_run(bool(stiefel), kind, int(draw), *key)
    A = moved["A"]
    W_Q, W_K = gl_action(plain["frames"][:, 0], plain["frames"][:, 1], A)  # the plain run, moved
    frames = torch.maximum((moved["frames"][:, 0] - W_Q).abs().amax((-3, -2, -1)), (moved["frames"][:, 1] - W_K).abs().amax((-3, -2, -1)))
    return {
        "loss": (moved["loss"] - plain["loss"]).abs(),
        "frames": frames,
        "rest": (moved["rest"] - plain["rest"]).abs().amax(-1),
    }


@dataclass(frozen=True)
class GaugeEquivarianceCertificate(Certificate):
    steps: int
    n_draws: int
    stiefel_loss_deviation: float  # max over R, t of |L'_t - L_t|, StiefelAdam from (W_Q R, W_K R)
    stiefel_frame_deviation: float  # max |W'_t - W_t R|
    stiefel_rest_deviation: float  # max deviation of every other parameter
    euclidean_orthogonal_loss_deviation: float  # AdamW from (W_Q R, W_K R)
    euclidean_gl_loss_deviation: float  # AdamW from (W_Q A, W_K A⁻ᵀ)
    tolerance: float = RUN_TOLERANCE

    def checks(self) -> dict[str, bool]:
        return {
            "StiefelAdam: same losses from a rotated gauge": self.stiefel_loss_deviation <= self.tolerance,
            "StiefelAdam: frames are the rotated frames": self.stiefel_frame_deviation <= self.tolerance,
            "StiefelAdam: other parameters identical": self.stiefel_rest_deviation <= self.tolerance,
            "AdamW from a rotated gauge: visibly different losses (> 1e-6)": self.euclidean_orthogonal_loss_deviation > 1e-6,
        }

    def summary(self) -> dict[str, object]:
        t = self.tolerance
        return {
            "training runs": f"{self.steps} steps from each of {self.n_draws} moved starts, float64",
            "StiefelAdam from (W_Q R, W_K R): max |L' − L|": _at_most(self.stiefel_loss_deviation, t),
            "StiefelAdam: max |W'_t − W_t R|": _at_most(self.stiefel_frame_deviation, t),
            "StiefelAdam: max deviation of the other parameters": _at_most(self.stiefel_rest_deviation, t),
            "AdamW from (W_Q R, W_K R): max |L' − L|": _sig(self.euclidean_orthogonal_loss_deviation, 2),
            "AdamW from (W_Q A, W_K A⁻ᵀ): max |L' − L|": _sig(self.euclidean_gl_loss_deviation, 2),
        }


def certify_gauge_equivariance(*, n_draws: int = 2, steps: int = 120, seed: int = 0, lr: float = DEFAULT_LR,
                               weight_decay: float = 0.1, problem: GaugeProblem = GaugeProblem()) -> GaugeEquivarianceCertificate:
    """Where on its orbit a run starts does not matter to StiefelAdam, and does matter to AdamW.

    ``P_{WR}(GR) = P_W(G) R``, ``‖gR‖ = ‖g‖`` and ``R_{WR}(ξR) = R_W(ξ) R`` for ``R`` in O(r): a run
    from ``(W_Q R, W_K R)`` is the original run with every frame multiplied by ``R``, and computes
    the same function at every step. AdamW's per-entry second moment is not invariant under
    ``W → W R``, so its run from a rotated (or GL-moved) start computes a different function.
    ``n_draws`` random ``R`` (and ``A``) per head, ``steps`` steps each (:func:`moved_start_deviation`).
    """
    kw = dict(steps=steps, seed=seed, lr=lr, weight_decay=weight_decay, problem=problem)
    s = [moved_start_deviation(True, "orthogonal", draw=k, **kw) for k in range(n_draws)]
    e = [moved_start_deviation(False, "orthogonal", draw=k, **kw) for k in range(n_draws)]
    e_gl = [moved_start_deviation(False, "gl", draw=k, **kw) for k in range(n_draws)]
    worst = lambda runs, key: max(float(run[key].max()) for run in runs)  # noqa: E731
    return GaugeEquivarianceCertificate(
        steps=steps,
        n_draws=n_draws,
        stiefel_loss_deviation=worst(s, "loss"),
        stiefel_frame_deviation=worst(s, "frames"),
        stiefel_rest_deviation=worst(s, "rest"),
        euclidean_orthogonal_loss_deviation=worst(e, "loss"),
        euclidean_gl_loss_deviation=worst(e_gl, "loss"),
    )
