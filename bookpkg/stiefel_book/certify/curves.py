"""What the proposition chapters' figures and explorers draw, computed here (float64, fixed seeds)
and handed to :mod:`stiefel_book.plots.propositions`, which only draws. Chapters:
p1_steepest_descent to p5_weight_decay."""

from __future__ import annotations

import numpy as np
import torch

from stiefel_core.manifold import project_tangent, random_frame

from ..threads import one_thread
from .base import DTYPE
from .p1_steepest_descent import sampled_decrease_ratios, steepest_tangent_direction
from .p2_scale_invariance import P2_SCALES, displacement_by_scale
from .p3_conditioning import condition_history
from .p4_equivariance import equivariance_deviation, haar_orthogonal
from .p5_weight_decay import weight_decay_training_run
from .trajectory import QuadraticProblem, inverse_retract_polar, run_trajectory

__all__ = [
    "decrease_samples",
    "scale_run",
    "scale_invariance_curves",
    "condition_curves",
    "equivariance_run",
    "sphere_paths",
    "weight_decay_runs",
]


def decrease_samples(d: int = 16, r: int = 4, seed: int = 0, n_samples: int = 4000) -> dict:
    """The first-order decrease ``-⟨G, η⟩ / ‖P_W G‖`` of ``n_samples`` random unit tangent
    directions ``η`` at a random ``(W, G)`` in St(d, r) (``"ratios"``), and StiefelAdam's first
    step's (``"step_ratio"``, 1 at the optimum) with its direction's error."""
    r = min(r, d)
    with one_thread():
        g = torch.Generator().manual_seed(seed)
        W = random_frame(d, r, generator=g, dtype=DTYPE)
        G = torch.randn(d, r, generator=g, dtype=DTYPE)
        ratios = sampled_decrease_ratios(W, G, n_samples, seed=seed + 1).numpy()
        W1 = run_trajectory(W, lambda _W, _t: G, 1, lr=0.05, eps=0.0, trust_radius=None)[1]
        xi = inverse_retract_polar(W, W1)
        unit = xi / torch.linalg.matrix_norm(xi)
        optimum = float(torch.linalg.matrix_norm(project_tangent(W, G)))
        step_ratio = float(-(G * unit).sum()) / optimum
        error = float(torch.linalg.matrix_norm(unit - steepest_tangent_direction(W, G)))
    return {
        "d": d,
        "r": r,
        "ratios": ratios,
        "best_sample": float(ratios.max()),
        "step_ratio": step_ratio,
        "direction_error": error,
        "tangent_dim": d * r - r * (r + 1) // 2,
    }


def scale_run(
    log10_scale: float = 0.0, step_rule: str = "scale_free", eps: float = 0.0, steps: int = 50, lr: float = 0.05
) -> dict:
    """A StiefelAdam run (trust radius 0.5) on the quadratic test loss times ``c = 10**log10_scale``:
    its ``"loss"`` divided by ``c`` and the run's at ``c = 1`` (``"loss_reference"``), and the
    largest relative deviation of its frames from that run's (``"deviation"``)."""
    c = 10.0**log10_scale
    with one_thread():
        problem = QuadraticProblem.random(4, 16, 4, steps, seed=0)
        W0 = random_frame(16, 4, 4, generator=torch.Generator().manual_seed(1), dtype=DTYPE)
        opts = dict(lr=lr, eps=eps, step_rule=step_rule, trust_radius=0.5)
        reference = run_trajectory(W0, problem.gradient, steps, **opts)
        path = run_trajectory(W0, problem.scaled(c).gradient, steps, **opts)
        loss_ref = np.array([float(problem.loss(W).sum()) for W in reference])
        loss = np.array([float(problem.loss(W).sum()) for W in path])
        norm = torch.linalg.vector_norm(reference, dim=(-3, -2, -1))
        deviation = float((torch.linalg.vector_norm(path - reference, dim=(-3, -2, -1)) / norm).max())
    return {
        "log10_scale": log10_scale,
        "step_rule": step_rule,
        "loss": loss,
        "loss_reference": loss_ref,
        "deviation": deviation,
    }


def scale_invariance_curves(scales=P2_SCALES) -> dict:
    """Against the gradient scale (``"scales"``): one step's displacement of the frames by the
    scale-free rule (``"scale_free"``, lr 0.05) and the fixed-step rule (``"fixed"``, lr 1e-6, no
    cap); and ``"deviation"``, ``{eps: [largest relative deviation of a 50-step scale-free run
    from the run at c = 1]}`` for eps 0 and 1e-8."""
    with one_thread():
        cs, free = displacement_by_scale(scales, lr=0.05, eps=0.0)
        _, fixed = displacement_by_scale(scales, step_rule="fixed", trust_radius=None, lr=1e-6, eps=0.0)
        problem = QuadraticProblem.random(4, 16, 4, 50, seed=0)
        W0 = random_frame(16, 4, 4, generator=torch.Generator().manual_seed(1), dtype=DTYPE)
        deviations = {}
        for eps in (0.0, 1e-8):
            ref = run_trajectory(W0, problem.gradient, 50, eps=eps)
            norm = torch.linalg.vector_norm(ref, dim=(-3, -2, -1))
            deviations[eps] = [
                float(
                    (
                        torch.linalg.vector_norm(
                            run_trajectory(W0, problem.scaled(float(c)).gradient, 50, eps=eps) - ref, dim=(-3, -2, -1)
                        )
                        / norm
                    ).max()
                )
                for c in cs
            ]
    return {"scales": cs, "scale_free": free, "fixed": fixed, "deviation": deviations}


def condition_curves(
    lrs=tuple(10.0**k for k in np.arange(-3, 1.01, 0.5)),
    radii=(0.25, 0.5, 1.0, None),
    scales=tuple(10.0**k for k in range(-4, 5)),
) -> dict:
    """The largest condition number of ``I + ξᵀξ`` over a 30-step run: ``"by_lr"`` ``{radius:
    [per lr]}`` (the scale-free rule), ``"by_scale"`` ``{radius: [per gradient scale]}`` (the
    fixed-step rule at lr 0.05, trust radius 0.5 and none); with ``"lrs"`` and ``"scales"``."""
    by_lr = {radius: [float(condition_history(lr, radius)["condition"].max()) for lr in lrs] for radius in radii}
    by_scale = {
        radius: [float(condition_history(0.05, radius, scale=c, step_rule="fixed")["condition"].max()) for c in scales]
        for radius in (0.5, None)
    }
    return {"lrs": lrs, "by_lr": by_lr, "scales": scales, "by_scale": by_scale}


def equivariance_run(second_moment: str = "frame", projector: str = "tangent", seed: int = 0, steps: int = 50):
    """Per step, ``‖W'_t - Q W_t‖ / ‖W_t‖`` for one Haar-random ``Q`` (chosen by ``seed``): ``W'``
    from ``(QW, QG_t)``, ``W`` from ``(W, G_t)`` (a numpy array of ``steps + 1``)."""
    Q = haar_orthogonal(16, 4, generator=torch.Generator().manual_seed(1000 + seed))
    with one_thread():
        return equivariance_deviation(Q, steps=steps, second_moment=second_moment, projector=projector).numpy()


def sphere_paths(second_moment: str, steps: int = 40, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """On St(3, 1): ``(the run from Qw on the rotated problem, Q × the run from w)``, each
    ``(steps + 1, 3)``."""
    with one_thread():
        problem = QuadraticProblem.random(1, 3, 1, steps, seed=seed, noise=0.5)
        g = torch.Generator().manual_seed(seed)
        W0 = random_frame(3, 1, 1, generator=g, dtype=DTYPE)
        Q = haar_orthogonal(3, generator=g)
        opts = dict(lr=0.1, second_moment=second_moment)
        path = run_trajectory(W0, problem.gradient, steps, **opts)
        rotated = run_trajectory(Q @ W0, problem.rotated(Q).gradient, steps, **opts)
        return rotated[:, 0, :, 0].numpy(), (Q @ path)[:, 0, :, 0].numpy()


def weight_decay_runs(
    settings=(("euclidean", 1.0), ("euclidean", 0.0), ("stiefel", 1.0)),
    teacher_sharpness: float = 0.0,
    steps: int = 300,
    lr: float = 1e-2,
) -> dict:
    """``{(arm, weight decay): weight_decay_training_run(...)}`` for each of ``settings``."""
    return {
        (arm, wd): weight_decay_training_run(
            arm == "stiefel", weight_decay=wd, lr=lr, steps=steps, teacher_sharpness=teacher_sharpness
        )
        for arm, wd in settings
    }
