"""Proposition 3's certificate: under a trust radius Δ the retraction's solve has condition number at most 1 + Δ²
(chapter p3_conditioning)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from stiefel_core.manifold import newton_schulz_steps, orthonormality_error

from ..threads import single_threaded
from .base import DTYPE, TOLERANCE, Certificate, _at_most, _sig
from .trajectory import inverse_retract_polar, problem_and_start, run_trajectory


def retraction_condition(xi: Tensor) -> Tensor:
    """Condition number ``(1 + σ_max²) / (1 + σ_min²)`` of ``I + ξᵀξ``, per frame (``σ`` the
    singular values of ``ξ``; ``σ_min = 0`` when ``ξ`` has rank below ``r``).
    Chapter: p3_conditioning."""
    s = torch.linalg.svdvals(xi.to(DTYPE))  # (..., r), descending
    return (1 + s[..., 0] ** 2) / (1 + s[..., -1] ** 2)


@single_threaded
def condition_history(
    lr: float,
    trust_radius: float | None,
    *,
    steps: int = 30,
    d: int = 16,
    r: int = 4,
    n_frames: int = 4,
    seed: int = 0,
    scale: float = 1.0,
    **options,
) -> dict[str, Tensor]:
    """One StiefelAdam run on the quadratic test loss (scaled by ``scale``); per step, the
    recovered ``ξ``'s Frobenius norm and the condition number of ``I + ξᵀξ`` (max over frames),
    and the orthonormality error of the frames (max over frames); and the noiseless loss (summed
    over frames) at the start and after every step, which is what the learning rate buys.
    Chapter: p3_conditioning."""
    problem, W0 = problem_and_start(n_frames, d, r, steps, seed=seed)
    problem = problem.scaled(scale)
    opts = {"lr": lr, "trust_radius": trust_radius, "eps": 0.0, **options}
    path = run_trajectory(W0, problem.gradient, steps, **opts)
    xis = torch.stack([inverse_retract_polar(path[t], path[t + 1]) for t in range(steps)])  # (steps, F, d, r)
    return {
        "condition": retraction_condition(xis).amax(-1),  # (steps,)
        "step_norm": torch.linalg.matrix_norm(xis).amax(-1),  # (steps,)
        "orthonormality_error": orthonormality_error(path[1:]).amax(-1),  # (steps,)
        "loss": problem.loss(path).sum(-1),  # (steps + 1,)
    }


@dataclass(frozen=True)
class ConditioningCertificate(Certificate):
    """Proposition 3's certificate: its numbers, checks and rounded summary. Chapter: p3_conditioning."""

    trust_radius: float | None  # the optimizer's trust radius
    bound_radius: float  # Δ in the bound 1 + Δ²
    lr: float
    steps: int
    bound: float  # 1 + Δ²
    observed_max: float  # max condition number of I + ξᵀξ over the run
    max_step_norm: float  # max ‖ξ‖_F over the run
    uncapped_max: float  # the same run without a trust region
    newton_schulz_steps: int  # matrix-product iterations the bound buys (float64)
    orthonormality_error: float  # max ‖WᵀW - I‖_F over the run
    tolerance: float = TOLERANCE

    def checks(self) -> dict[str, bool]:
        return {
            "condition ≤ 1 + Δ²": self.observed_max <= self.bound * (1 + self.tolerance),
            "‖ξ‖_F ≤ Δ": self.max_step_norm <= self.bound_radius * (1 + self.tolerance),
            "frames stay orthonormal (≤ 1e-12)": self.orthonormality_error <= self.tolerance,
        }

    def summary(self) -> dict[str, object]:
        return {
            "trust radius Δ": self.bound_radius,
            "run": f"{self.steps} steps at lr = {self.lr:g}",
            "bound 1 + Δ²": _sig(self.bound, 4),
            "observed max cond(I + ξᵀξ)": _sig(self.observed_max, 4),
            "observed max ‖ξ‖_F": _sig(self.max_step_norm, 4),
            "same run, no trust region: max cond": _sig(self.uncapped_max, 3),
            "Newton-Schulz steps the bound buys": self.newton_schulz_steps,
            "max ‖WᵀW - I‖_F": _at_most(self.orthonormality_error, self.tolerance),
        }


@single_threaded
def certify_conditioning(
    trust_radius: float | None = 0.5,
    *,
    lr: float = 1.0,
    steps: int = 40,
    seed: int = 0,
    bound_radius: float | None = None,
    **options,
) -> ConditioningCertificate:
    """Proposition 3: with trust radius ``Δ``, ``cond(I + ξᵀξ) ≤ 1 + Δ²`` at every step.

    A run at a large ``lr`` (so the cap binds at every step) on the quadratic test loss; ``ξ``
    of every step is recovered from the frames. ``bound_radius`` (default ``trust_radius``) is
    the ``Δ`` of the bound: a test passes ``trust_radius=None, bound_radius=0.5`` to see the
    bound fail without the cap. The same run without a trust region is reported beside it.
    """
    delta = trust_radius if bound_radius is None else bound_radius
    if delta is None:
        raise ValueError("certify_conditioning needs a trust radius, or bound_radius, to state the bound")
    capped = condition_history(lr, trust_radius, steps=steps, seed=seed, **options)
    uncapped = condition_history(lr, None, steps=steps, seed=seed, **options)
    return ConditioningCertificate(
        trust_radius=trust_radius,
        bound_radius=delta,
        lr=lr,
        steps=steps,
        bound=1 + delta**2,
        observed_max=float(capped["condition"].max()),
        max_step_norm=float(capped["step_norm"].max()),
        uncapped_max=float(uncapped["condition"].max()),
        newton_schulz_steps=newton_schulz_steps(1.0 / (1.0 + delta**2), DTYPE),
        orthonormality_error=float(capped["orthonormality_error"].max()),
    )
