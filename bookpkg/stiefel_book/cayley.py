"""``CayleyAdam``: the nearest prior art of the Stiefel rule, written from Algorithm 2 ("Cayley ADAM")
of J. Li, F. Li and S. Todorovic, "Efficient Riemannian optimization on the Stiefel manifold via
the Cayley transform", ICLR 2020 (arXiv:2002.01113): the ``cayley_adam`` arm (issue 28)."""

from __future__ import annotations

from typing import Callable, Iterable

import torch
from torch import Tensor

from stiefel_core.frame_steps import (
    FrameOptimizer,
    adam_defaults,
    adam_states,
    bank,
    evaluate_closure,
    new_parameters,
    unbank,
)
from stiefel_core.manifold import compute_dtype, full_precision_matmul, orthonormality_error
from stiefel_core.step_checks import orthonormality_tolerance

__all__ = ["CayleyAdam", "cayley_adam_update_"]


class CayleyAdam(FrameOptimizer):
    r"""Cayley ADAM (Li, Li & Todorovic, ICLR 2020, Algorithm 2) on St(d, r), frames ``X`` of shape
    ``(..., d, r)`` with ``XᵀX = I`` (the paper's ``n x p`` matrices: the same orientation). For
    each frame with Euclidean gradient ``G``, at step ``k``::

        M  ← β1 M + (1 - β1) G                          biased momentum
        v  ← β2 v + (1 - β2) ‖G‖²_F                     one scalar per frame, a sum of squares
        v̂  = v / (1 - β2^k),  ρ = (1 - β1^k) √(v̂ + ε)
        Ŵ  = M Xᵀ - ½ X (Xᵀ M Xᵀ),  W = (Ŵ - Ŵᵀ) / ρ     skew-symmetric d x d
        M  ← ρ W X                                      momentum projected to the tangent space
        α  = min(lr, 2q / (‖W‖ + ε))                     step size cap
        Y⁰ = X - α M;  Yⁱ = X - (α/2) W (X + Yⁱ⁻¹), i = 1..s;  X ← Yˢ

    ``W X = P_X(M) / ρ`` with ``P_X`` the embedded metric's tangent projection, so ``‖α W X‖_F``
    is about ``α``: with ``v`` a sum over the frame's ``d r`` entries (StiefelAdam's is a mean),
    an lr here moves a frame about as far as ``lr / √(d r)`` does in StiefelAdam. The ``s``
    fixed-point iterations estimate the Cayley transform ``(I + α/2 W)⁻¹(I - α/2 W) X``, which is
    exactly orthonormal; the cap makes the iteration a contraction (``α ‖W‖₂ / 2 <= q``). ``Yˢ``
    is not exact: ``Y⁰`` starts at the momentum's scale (``ρ W X``, not ``W X``), so the error left
    after ``s`` iterations, and the frame's drift off the manifold, grow with the gradient's size.
    As in Algorithm 2, nothing re-orthonormalises (the authors' code runs a QR retraction at
    random, about one step in a hundred; that is left out, and the runs log the drift).

    Where the algorithm leaves a choice, the authors' published code decides: ``v`` starts at 0,
    ``‖W‖`` is the matrix 1-norm (max column sum, which bounds ``‖W‖₂`` for a skew ``W``).
    Weight decay is accepted for API parity and ignored, as the paper applies none to the frames.

    Args:
        params: frames ``(..., d, r)`` on the manifold (``‖XᵀX - I‖_F <= 1e-4``, or ``eps · r`` of a
            low-precision dtype), or groups.
        lr: the paper's ``l``, the largest step size ``α``.
        betas: ``(β1, β2)``. eps: ``ε``. q: the cap's constant (0.5). s: fixed-point iterations (2).
    """

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-1,
        betas: tuple[float, float] = (0.9, 0.99),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        *,
        q: float = 0.5,
        s: int = 2,
    ):
        defaults = adam_defaults(lr, betas, eps, weight_decay, q=q, s=s)
        if not 0.0 < q < 1.0:
            raise ValueError(f"Invalid q: {q} (in (0, 1), so that the fixed-point iteration contracts)")
        if not (isinstance(s, int) and s >= 1):
            raise ValueError(f"Invalid s: {s!r} (a positive number of fixed-point iterations)")
        super().__init__(params, defaults)

    def add_param_group(self, param_group: dict) -> None:
        super().add_param_group(param_group)
        for name, p in new_parameters(self, "CayleyAdam"):
            error = orthonormality_error(p.detach()).max().item() if p.numel() else 0.0
            if not error <= orthonormality_tolerance(p):
                raise ValueError(
                    f"CayleyAdam: parameter {name} is not on the Stiefel manifold (max ‖XᵀX - I‖_F = {error:.3g}). "
                    "Orthonormalise it first: `with torch.no_grad(): p.copy_(stiefel_core.manifold.orthonormalize(p))`."
                )

    @torch.no_grad()
    def step(self, closure: Callable[[], Tensor] | None = None):
        """One step for every frame with a gradient; ``closure`` re-evaluates the loss."""
        loss = evaluate_closure(closure)
        for group, p, state in adam_states(self, "CayleyAdam"):
            d, r = p.shape[-2:]
            state["step"] += 1
            X, G, M = bank([p], d, r), bank([p.grad], d, r), bank([state["exp_avg"]], d, r)
            cayley_adam_update_(
                X,
                G,
                M,
                state["exp_avg_sq"].view(-1),
                float(state["step"]),
                **{k: group[k] for k in ("lr", "betas", "eps", "q", "s")},
            )
            unbank(X, [p])
            unbank(M, [state["exp_avg"]])
        return loss


def cayley_adam_update_(
    X: Tensor,
    G: Tensor,
    M: Tensor,
    v: Tensor,
    k: float,
    *,
    lr: float,
    betas: tuple[float, float],
    eps: float,
    q: float = 0.5,
    s: int = 2,
) -> None:
    """:class:`CayleyAdam`'s update of a bank, in place on ``X, M`` ``(F, d, r)`` and ``v`` ``(F,)``
    at step ``k`` (from 1), computed in float32 at least."""
    dt = compute_dtype(X.dtype)
    X32, G32, M32 = X.to(dt), G.to(dt), M.to(dt)
    beta1, beta2 = betas
    with full_precision_matmul(X.device):
        M32.mul_(beta1).add_(G32, alpha=1 - beta1)
        v.mul_(beta2).add_(torch.linalg.matrix_norm(G32).square().to(v.dtype), alpha=1 - beta2)
        rho = (1 - beta1**k) * (v.to(dt) / (1 - beta2**k) + eps).sqrt()  # (F,)
        MXt = M32 @ X32.mT  # (F, d, d)
        W_hat = MXt - 0.5 * X32 @ (X32.mT @ MXt)
        W = (W_hat - W_hat.mT) / rho[:, None, None]
        M32 = rho[:, None, None] * (W @ X32)  # projected momentum
        alpha = torch.clamp(2 * q / (torch.linalg.matrix_norm(W, ord=1) + eps), max=lr)[:, None, None]  # (F, 1, 1)
        Y = X32 - alpha * M32
        for _ in range(s):
            Y = X32 - 0.5 * alpha * (W @ (X32 + Y))
    X.copy_(Y)
    M.copy_(M32)
