"""Proposition 4's certificate: StiefelAdam is exactly O(d)-equivariant (chapter p4_equivariance)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
from torch import Tensor
from torch.optim import Optimizer

from stiefel_core.manifold import random_frame

from ..threads import single_threaded
from .base import DTYPE, TOLERANCE, Certificate, _at_most, _sig
from .trajectory import problem_and_start, run_trajectory


def haar_orthogonal(d: int, *batch: int, generator: torch.Generator | None = None) -> Tensor:
    """Haar-distributed ``Q`` in O(d), shape ``(*batch, d, d)``: QR of a Gaussian matrix with the
    signs of ``R``'s diagonal moved into ``Q`` (Mezzadri 2007), in float64.
    Chapter: p4_equivariance."""
    return random_frame(d, d, *batch, generator=generator, dtype=DTYPE)


@single_threaded
def equivariance_deviation(
    Q: Tensor,
    *,
    steps: int = 50,
    d: int = 16,
    r: int = 4,
    n_frames: int = 4,
    seed: int = 0,
    make_optimizer: Callable[[list[Tensor]], Optimizer] | None = None,
    **options,
) -> Tensor:
    """Per step ``t``, ``‖W'_t - Q W_t‖_F / ‖W_t‖_F``: ``W'`` is the trajectory from ``(QW_0, QG_t)``,
    ``W`` the one from ``(W_0, G_t)``, on the quadratic test loss (``Q`` acts frame by frame).
    Chapter: p4_equivariance."""
    problem, W0 = problem_and_start(n_frames, d, r, steps, seed=seed)
    path = run_trajectory(W0, problem.gradient, steps, make_optimizer=make_optimizer, **options)
    rotated = run_trajectory(Q @ W0, problem.rotated(Q).gradient, steps, make_optimizer=make_optimizer, **options)
    return torch.linalg.vector_norm(rotated - Q @ path, dim=(-3, -2, -1)) / torch.linalg.vector_norm(
        path, dim=(-3, -2, -1)
    )


@dataclass(frozen=True)
class EquivarianceCertificate(Certificate):
    """Proposition 4's certificate: its numbers, checks and rounded summary. Chapter: p4_equivariance."""

    n_rotations: int
    steps: int
    max_deviation: float  # max over Q and t of ‖W'_t - Q W_t‖_F / ‖W_t‖_F
    entry_deviation: float  # the same with a per-entry second moment (ordinary Adam's v)
    euclidean_projector_deviation: float  # projector="euclidean" (a by-product: also equivariant)
    tolerance: float = TOLERANCE

    def checks(self) -> dict[str, bool]:
        return {
            "W'_t = Q W_t": self.max_deviation <= self.tolerance,
            "per-entry second moment visibly breaks it (> 1e-3)": self.entry_deviation > 1e-3,
        }

    def summary(self) -> dict[str, object]:
        return {
            "random Q in O(d) (Haar)": self.n_rotations,
            "trajectory": f"{self.steps} steps",
            "max_Q,t ‖W'_t - Q W_t‖ / ‖W_t‖": _at_most(self.max_deviation, self.tolerance),
            "same, second_moment='entry'": _sig(self.entry_deviation, 2),
            "same, projector='euclidean'": _at_most(self.euclidean_projector_deviation, self.tolerance),
        }


@single_threaded
def certify_equivariance(
    n_rotations: int = 5,
    *,
    steps: int = 50,
    seed: int = 0,
    make_optimizer: Callable[[list[Tensor]], Optimizer] | None = None,
    **options,
) -> EquivarianceCertificate:
    """Proposition 4: the trajectory from ``(QW, QG_t)`` is ``Q`` times the one from ``(W, G_t)``.

    ``n_rotations`` Haar-random ``Q`` per frame (4 frames in St(16, 4)), 50 steps of StiefelAdam
    on the quadratic test loss. For contrast, the same with ``second_moment="entry"`` (a
    coordinatewise ``v``, as in Adam), which is not equivariant; and ``projector="euclidean"``,
    which is. ``make_optimizer`` or ``options`` replace the optimizer under test.
    """
    g = torch.Generator().manual_seed(seed + 1000)
    Qs = [haar_orthogonal(16, 4, generator=g) for _ in range(n_rotations)]

    def worst(**kw) -> float:
        return max(float(equivariance_deviation(Q, steps=steps, seed=seed, **kw).max()) for Q in Qs)

    return EquivarianceCertificate(
        n_rotations=n_rotations,
        steps=steps,
        max_deviation=worst(make_optimizer=make_optimizer, **options),
        entry_deviation=worst(second_moment="entry"),
        euclidean_projector_deviation=worst(projector="euclidean"),
    )
