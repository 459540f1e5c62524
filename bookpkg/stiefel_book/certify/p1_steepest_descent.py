"""Proposition 1's certificate: StiefelAdam's step is steepest descent in the embedded metric (chapter
p1_steepest_descent)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import torch
from torch import Tensor

from stiefel_core.manifold import project_tangent, random_frame

from ..threads import single_threaded
from .base import DTYPE, TOLERANCE, Certificate, _at_most, _sig
from .trajectory import QuadraticProblem, inverse_retract_polar, run_trajectory

P1_SHAPES = ((3, 1), (5, 2), (8, 8), (16, 4), (64, 8))


def steepest_tangent_direction(W: Tensor, G: Tensor) -> Tensor:
    """``η* = -P_W(G) / ‖P_W(G)‖_F``, the unit tangent direction of fastest first-order decrease.
    Chapter: p1_steepest_descent."""
    g = project_tangent(W, G)
    return -g / torch.linalg.matrix_norm(g)[..., None, None]


def sampled_decrease_ratios(W: Tensor, G: Tensor, n: int, *, seed: int = 0, around: Tensor | None = None) -> Tensor:
    """First-order decreases ``-⟨G, η⟩ / ‖P_W G‖`` of ``n`` sampled unit tangent directions ``η``
    at one frame ``W`` ``(d, r)``: uniform on the unit sphere of the tangent space, or, with
    ``around``, perturbations ``around + δ z`` with ``δ`` log-spaced in ``[1e-6, 10]``.
    Chapter: p1_steepest_descent."""
    g = torch.Generator().manual_seed(seed)
    Z = project_tangent(W, torch.randn(n, *W.shape, generator=g, dtype=DTYPE))  # (n, d, r)
    if around is not None:
        Z = Z / torch.linalg.matrix_norm(Z)[:, None, None]
        deltas = torch.logspace(-6, 1, n, dtype=DTYPE)
        Z = around + deltas[:, None, None] * Z
    eta = Z / torch.linalg.matrix_norm(Z)[:, None, None]
    decrease = -(G * eta).sum((-2, -1))  # (n,)
    return decrease / torch.linalg.matrix_norm(project_tangent(W, G))


@dataclass(frozen=True)
class SteepestDescentCertificate(Certificate):
    """Proposition 1's certificate: its numbers, checks and rounded summary. Chapter: p1_steepest_descent."""

    shapes: tuple[tuple[int, int], ...]
    direction_error: float  # max ‖ξ/‖ξ‖ - η*‖_F over shapes, trust regions, first steps
    decrease_error: float  # max |-⟨G, η*⟩ - ‖P_W G‖| / ‖P_W G‖
    every_step_error: float  # the same as direction_error, at every step of a β1 = 0 run
    n_sampled: int  # sampled unit tangent directions per shape (uniform + near η*)
    n_beating: int  # how many of them beat η* by more than the tolerance
    best_uniform_ratio: tuple[float, ...]  # per shape: best sampled decrease / ‖P_W G‖
    best_near_ratio: float  # best near-η* sample / ‖P_W G‖ (at most 1)
    tolerance: float = TOLERANCE

    def checks(self) -> dict[str, bool]:
        return {
            "step direction = η*": self.direction_error <= self.tolerance,
            "decrease = ‖P_W G‖": self.decrease_error <= self.tolerance,
            "every step (β1 = 0)": self.every_step_error <= self.tolerance,
            "no sample beats η*": self.n_beating == 0,
        }

    def summary(self) -> dict[str, object]:
        return {
            "shapes (d, r)": ", ".join(f"({d}, {r})" for d, r in self.shapes),
            "‖ξ/‖ξ‖ - η*‖_F, first steps": _at_most(self.direction_error, self.tolerance),
            "|decrease - ‖P_W G‖| / ‖P_W G‖": _at_most(self.decrease_error, self.tolerance),
            "‖ξ/‖ξ‖ - η*‖_F, every step, β1 = 0": _at_most(self.every_step_error, self.tolerance),
            "sampled unit tangents per shape": self.n_sampled,
            "samples that beat η*": self.n_beating,
            "best uniform sample / optimum": ", ".join(f"{x:.3f}" for x in self.best_uniform_ratio),
            "best near-η* sample / optimum ≤ 1": round(self.best_near_ratio, 6) <= 1.0,
        }


@single_threaded
def certify_steepest_descent(
    shapes: Iterable[tuple[int, int]] = P1_SHAPES,
    *,
    n_samples: int = 10_000,
    lr: float = 0.05,
    steps: int = 20,
    seed: int = 0,
    **options,
) -> SteepestDescentCertificate:
    """Proposition 1: StiefelAdam's first step points along ``η* = -P_W(G)/‖P_W(G)‖``.

    For each shape, a random frame ``W`` and gradient ``G``: one step of StiefelAdam (``eps=0``;
    trust radius off, and 0.5, which only rescales ``ξ``) from fresh state, whose ``ξ`` is
    recovered by :func:`inverse_retract_polar`. Then ``n_samples`` unit tangent directions
    drawn uniformly and ``n_samples`` near ``η*`` must not beat ``η*``. Last, a run with
    ``β1 = 0`` (no momentum): every step, not only the first, points along its ``η*``.
    ``options`` go to StiefelAdam (tests pass broken ones).
    """
    shapes = tuple(tuple(s) for s in shapes)
    g = torch.Generator().manual_seed(seed)
    direction_error = decrease_error = 0.0
    n_beating, best_uniform, best_near = 0, [], 0.0
    for i, (d, r) in enumerate(shapes):
        W = random_frame(d, r, generator=g, dtype=DTYPE)
        G = torch.randn(d, r, generator=g, dtype=DTYPE)
        eta = steepest_tangent_direction(W, G)
        for radius in (None, 0.5):
            opts = {"eps": 0.0, "lr": lr, "trust_radius": radius, **options}
            W1 = run_trajectory(W, lambda _W, _t: G, 1, **opts)[1]
            xi = inverse_retract_polar(W, W1)
            direction_error = max(
                direction_error, float(torch.linalg.matrix_norm(xi / torch.linalg.matrix_norm(xi) - eta))
            )
        optimum = float(torch.linalg.matrix_norm(project_tangent(W, G)))
        decrease_error = max(decrease_error, abs(float(-(G * eta).sum()) - optimum) / optimum)
        uniform = sampled_decrease_ratios(W, G, n_samples, seed=seed + 1 + i)
        near = sampled_decrease_ratios(W, G, n_samples, seed=seed + 101 + i, around=eta)
        n_beating += int((uniform > 1 + TOLERANCE).sum() + (near > 1 + TOLERANCE).sum())
        best_uniform.append(_sig(float(uniform.max()), 3))
        best_near = max(best_near, float(near.max()))

    problem = QuadraticProblem.random(3, 16, 4, steps, seed=seed + 7)
    W0 = random_frame(16, 4, 3, generator=g, dtype=DTYPE)
    opts = {"eps": 0.0, "lr": lr, "trust_radius": 0.5, "betas": (0.0, 0.999), **options}
    path = run_trajectory(W0, problem.gradient, steps, **opts)
    every_step_error = 0.0
    for t in range(steps):
        xi = inverse_retract_polar(path[t], path[t + 1])
        eta = steepest_tangent_direction(path[t], problem.gradient(path[t], t))
        unit = xi / torch.linalg.matrix_norm(xi)[..., None, None]
        every_step_error = max(every_step_error, float(torch.linalg.matrix_norm(unit - eta).max()))
    return SteepestDescentCertificate(
        shapes=shapes,
        direction_error=direction_error,
        decrease_error=decrease_error,
        every_step_error=every_step_error,
        n_sampled=2 * n_samples,
        n_beating=n_beating,
        best_uniform_ratio=tuple(best_uniform),
        best_near_ratio=best_near,
    )
