"""Proposition 2's certificate: StiefelAdam's trajectories do not depend on the gradient's scale (chapter
p2_scale_invariance)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import torch
from torch import Tensor

from ..threads import single_threaded
from .base import DTYPE, TOLERANCE, Certificate, _at_most, _sig
from .trajectory import _stiefel_options, problem_and_start, run_trajectory

P2_SCALES = tuple(10.0**k for k in range(-8, 9))


@single_threaded
def displacement_by_scale(
    scales: Iterable[float] = P2_SCALES,
    *,
    steps: int = 1,
    seed: int = 0,
    d: int = 16,
    r: int = 4,
    n_frames: int = 4,
    **options,
) -> tuple[Tensor, Tensor]:
    """``(scales, displacement)``: ``‖W_steps - W_0‖_F`` after ``steps`` steps on the loss scaled by
    each factor, from one start; ``options`` go to StiefelAdam.
    Chapter: p2_scale_invariance."""
    scales = torch.tensor(list(scales), dtype=DTYPE)
    problem, W0 = problem_and_start(n_frames, d, r, max(steps, 1), seed=seed)
    moved = [
        float(
            torch.linalg.vector_norm(run_trajectory(W0, problem.scaled(float(c)).gradient, steps, **options)[-1] - W0)
        )
        for c in scales
    ]
    return scales, torch.tensor(moved, dtype=DTYPE)


def _loglog_slope(x: Tensor, y: Tensor) -> float:
    lx, ly = torch.log10(x), torch.log10(y)
    lx, ly = lx - lx.mean(), ly - ly.mean()
    return float((lx * ly).sum() / (lx * lx).sum())


@dataclass(frozen=True)
class ScaleInvarianceCertificate(Certificate):
    """Proposition 2's certificate: its numbers, checks and rounded summary. Chapter: p2_scale_invariance."""

    scales: tuple[float, ...]
    steps: int
    n_frames: int
    eps: float
    max_deviation: float  # max over scales and steps of ‖W_t(c) - W_t(1)‖_F / ‖W_t(1)‖_F
    displacement: float  # ‖W_T(1) - W_0‖_F / ‖W_0‖_F: how far the reference trajectory went
    fixed_slope: float  # slope of log ‖W_1 - W_0‖ against log c for step_rule="fixed"
    fixed_fit_range: tuple[float, float]  # the scales that slope is fitted over
    fixed_ratio: float  # fixed rule: displacement at the largest over the smallest fitted scale
    tolerance: float = TOLERANCE

    def checks(self) -> dict[str, bool]:
        return {
            "trajectories unchanged by scale": self.max_deviation <= self.tolerance,
            "reference trajectory moved": self.displacement > 0.1,
            "fixed rule is degree one (slope 1 ± 0.01)": abs(self.fixed_slope - 1.0) < 0.01,
            "fixed rule: displacement grows by the range's factor (± 1%)": abs(
                self.fixed_ratio / self.fixed_range_factor - 1.0
            )
            < 0.01,
        }

    @property
    def fixed_range_factor(self) -> float:
        """``hi / lo`` of the fitted scales: what a degree-one rule's displacement grows by."""
        lo, hi = self.fixed_fit_range
        return hi / lo

    def summary(self) -> dict[str, object]:
        lo, hi = self.fixed_fit_range
        return {
            "gradient scales c": f"{min(self.scales):.0e} ... {max(self.scales):.0e} ({len(self.scales)} factors)",
            "trajectory": f"{self.steps} steps, {self.n_frames} frames, eps = {self.eps:g}",
            "max_c,t ‖W_t(c) - W_t(1)‖ / ‖W_t(1)‖": _at_most(self.max_deviation, self.tolerance),
            "‖W_T(1) - W_0‖ / ‖W_0‖ (it moved)": _sig(self.displacement, 3),
            "fixed rule: slope of log displacement vs log c": f"{self.fixed_slope:.3f}",
            "fixed rule: fitted over c in": f"[{lo:.0e}, {hi:.0e}]",
            # the factor is the configuration's (a printed ratio of measured floats would sit at a
            # rounding boundary, 9.99e+11 or 1.00e+12 by the CPU); the measured one is checked
            "fixed rule: factor by which that range grows c": f"{self.fixed_range_factor:.0e}",
        }


@single_threaded
def certify_scale_invariance(
    scales: Iterable[float] = P2_SCALES,
    *,
    steps: int = 50,
    n_frames: int = 4,
    d: int = 16,
    r: int = 4,
    seed: int = 0,
    fixed_lr: float = 1e-6,
    fixed_fit_range: tuple[float, float] = (1e-8, 1e4),
    **options,
) -> ScaleInvarianceCertificate:
    """Proposition 2: multiplying the loss by ``c`` leaves StiefelAdam's trajectory unchanged.

    ``steps`` steps of StiefelAdam (``eps = 0``, ``lr = 0.05``, trust radius 0.5) on a noisy
    quadratic loss over ``n_frames`` frames, for every ``c`` in ``scales``, against ``c = 1``.
    Contrast: one step of the fixed-step rule (``step_rule="fixed"``, no trust region,
    ``lr = fixed_lr``) moves ``∝ c``; the slope of log displacement against log c is fitted over
    ``fixed_fit_range``, where the step is small enough for the retraction to be linear (above,
    any retraction saturates: a frame moves at most ``2‖W‖_F``). ``options`` go to the
    scale-free runs (``eps=1e-8`` makes it fail at small scales).
    """
    scales = tuple(float(c) for c in scales)
    opts = _stiefel_options(options)
    problem, W0 = problem_and_start(n_frames, d, r, steps, seed=seed)
    reference = run_trajectory(W0, problem.gradient, steps, **opts)
    norm = torch.linalg.vector_norm(reference, dim=(-3, -2, -1))  # (steps + 1,) = √(F r)
    max_deviation = 0.0
    for c in scales:
        path = run_trajectory(W0, problem.scaled(c).gradient, steps, **opts)
        max_deviation = max(
            max_deviation, float((torch.linalg.vector_norm(path - reference, dim=(-3, -2, -1)) / norm).max())
        )
    displacement = float(torch.linalg.vector_norm(reference[-1] - W0) / norm[0])

    lo, hi = fixed_fit_range
    fitted = [c for c in scales if lo <= c <= hi]
    cs, moved = displacement_by_scale(
        fitted, seed=seed, d=d, r=r, n_frames=n_frames, step_rule="fixed", trust_radius=None, lr=fixed_lr, eps=0.0
    )
    return ScaleInvarianceCertificate(
        scales=scales,
        steps=steps,
        n_frames=n_frames,
        eps=float(opts["eps"]),
        max_deviation=max_deviation,
        displacement=displacement,
        fixed_slope=_loglog_slope(cs, moved),
        fixed_fit_range=(min(fitted), max(fitted)),
        fixed_ratio=float(moved[-1] / moved[0]),
    )
