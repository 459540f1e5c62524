"""``SphereAdam``: the Stiefel rule's scale-free step on the sphere ``‖W‖_F = √r`` (a frame's norm).
W_Q, W_K keep a frame's scale and lose its orthonormality: the ``sphere`` arm (issue 28)."""

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
    trust_region_fraction,
    unbank,
)
from stiefel_core.manifold import compute_dtype

__all__ = ["SphereAdam", "SPHERE_TOLERANCE"]

SPHERE_TOLERANCE = 1e-4  # relative: |‖W‖_F / √r - 1| of a matrix accepted (or the dtype's eps, if larger)


class SphereAdam(FrameOptimizer):
    r"""Riemannian Adam on the sphere ``S = {W ∈ R^(d x r): ‖W‖_F = √r}``, one per matrix, with
    :class:`~stiefel_core.optim.StiefelAdam`'s default rule (one scalar second moment per matrix,
    bias correction, trust region); only the manifold differs. For every matrix ``W`` (the trailing
    ``(d, r)`` of each parameter) with Euclidean gradient ``G``, at step ``t``::

        g  = P_W(G) = G - W ⟨W, G⟩ / ‖W‖²                 radial part projected out
        m  ← P_W(β1 m + (1 - β1) G)                        moment, transported by projection
        v  ← β2 v + (1 - β2) ‖g‖²_F / (d r)                one scalar per matrix
        ξ  = -lr m̂ / (√v̂ + ε),  m̂ = m / (1 - β1^t),  v̂ = v / (1 - β2^t)
        ξ  ← ξ · min(1, Δ / ‖ξ‖_F)                         trust region of radius Δ
        W  ← √r (W + ξ) / ‖W + ξ‖_F                        retraction: back to the sphere

    The step is scale free (scaling the loss scales ``m`` and ``√v`` alike). Weight decay is
    accepted for API parity and does nothing: ``λW`` is radial, so its ``P_W`` is zero.

    Args:
        params: matrices ``(..., d, r)`` with ``‖W‖_F = √r`` (to :data:`SPHERE_TOLERANCE`), or groups.
        lr, betas, eps, trust_radius: as :class:`~stiefel_core.optim.StiefelAdam`'s.
        weight_decay: accepted and ignored.
    """

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        trust_radius: float | None = 0.5,
    ):
        super().__init__(params, adam_defaults(lr, betas, eps, weight_decay, trust_radius=trust_radius))

    def add_param_group(self, param_group: dict) -> None:
        super().add_param_group(param_group)
        for name, p in new_parameters(self, "SphereAdam"):
            r = p.shape[-1]
            norms = torch.linalg.matrix_norm(p.detach().to(compute_dtype(p.dtype)))
            error = (norms / r**0.5 - 1).abs().max().item() if p.numel() else 0.0
            if not error <= max(SPHERE_TOLERANCE, torch.finfo(p.dtype).eps):
                raise ValueError(
                    f"SphereAdam: parameter {name} is not on the sphere ‖W‖_F = √r = {r**0.5:.4g} (worst relative "
                    f"error {error:.3g}). Rescale it first: `with torch.no_grad(): p.mul_(r**0.5 / "
                    "torch.linalg.matrix_norm(p)[..., None, None])`."
                )

    def trust_region_fraction(self) -> float | None:
        """The share of matrix-steps so far that the trust region capped; ``None`` before the first
        step (as :meth:`StiefelAdam.trust_region_fraction`)."""
        return trust_region_fraction(self)

    @torch.no_grad()
    def step(self, closure: Callable[[], Tensor] | None = None):
        """One step for every matrix with a gradient; ``closure`` re-evaluates the loss."""
        loss = evaluate_closure(closure)
        for group, p, state in adam_states(self, "SphereAdam"):
            d, r = p.shape[-2:]
            if "trust_capped" not in state:
                state["trust_capped"] = torch.zeros(p.shape[:-2], dtype=torch.float32, device=p.device)
            state["step"] += 1
            targets = [p], [state["exp_avg"]], [state["exp_avg_sq"]], [state["trust_capped"]]
            W, G, m = bank(targets[0], d, r), bank([p.grad], d, r), bank(targets[1], d, r)
            v, capped = state["exp_avg_sq"].view(-1), state["trust_capped"].view(-1)
            sphere_update_(
                W,
                G,
                m,
                v,
                float(state["step"]),
                capped=capped,
                **{k: group[k] for k in ("lr", "betas", "eps", "trust_radius")},
            )
            unbank(W, targets[0])
            unbank(m, targets[1])
        return loss


def sphere_update_(
    W: Tensor,
    G: Tensor,
    m: Tensor,
    v: Tensor,
    t: float,
    *,
    lr: float,
    betas: tuple[float, float],
    eps: float,
    trust_radius: float | None,
    capped: Tensor | None = None,
) -> None:
    """:class:`SphereAdam`'s update of a bank, in place on ``W, m`` ``(F, d, r)`` and ``v`` ``(F,)``
    (computed in float32 at least); ``capped`` ``(F,)`` counts the steps the trust region cut."""
    dt = compute_dtype(W.dtype)
    W32, G32, m32 = W.to(dt), G.to(dt), m.to(dt)
    beta1, beta2 = betas
    _, d, r = W32.shape

    def radial(X: Tensor) -> Tensor:  # ⟨W, X⟩ / ‖W‖² per matrix, shaped to scale W
        return ((W32 * X).sum((-2, -1)) / W32.square().sum((-2, -1)))[:, None, None]

    g = G32 - W32 * radial(G32)
    m32.lerp_(G32, 1 - beta1)
    m32.sub_(W32 * radial(m32))  # P_W(β1 m + (1 - β1) G)
    v.lerp_(g.square().sum((-2, -1)).to(v.dtype) / (d * r), 1 - beta2)
    denom = (v.to(dt) / (1 - beta2**t)).sqrt() + eps  # (F,)
    scale = torch.where(denom > 0, (lr / (1 - beta1**t)) / denom, torch.zeros_like(denom))
    if trust_radius is not None:
        norm = scale * torch.linalg.matrix_norm(m32)
        if capped is not None:
            capped.add_(norm > trust_radius)
        scale = scale * torch.clamp(trust_radius / norm.clamp_min(torch.finfo(dt).tiny), max=1.0)
    Y = W32 - scale[:, None, None] * m32  # W + ξ, ξ ⟂ W: ‖Y‖² = r + ‖ξ‖² > 0
    W.copy_(Y * (r**0.5 / torch.linalg.matrix_norm(Y))[:, None, None])
    m.copy_(m32)
