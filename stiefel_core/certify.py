"""Float64 numerical certificates for the five propositions about ``StiefelAdam``.

Each ``certify_*`` function runs the real optimizer (:class:`~stiefel_core.optim.StiefelAdam`)
in float64 with fixed seeds and returns a small frozen dataclass of numbers. Its ``passed``
property says whether every check held; ``checks()`` names them; ``summary()`` gives the
numbers rounded (or as ``"≤ 1e-12"``), so a notebook prints the same text on every machine.
``print(certificate)`` prints that summary.

The five propositions, in our words (the preprint's full text is not available to us):

1. **Steepest descent in the embedded metric.** The direction of the step, ``ξ/‖ξ‖``, is
   ``η* = -P_W(G)/‖P_W(G)‖``, the unit tangent vector of fastest first-order decrease
   ``-⟨G, η⟩``, and that decrease is ``‖P_W G‖_F`` (:func:`certify_steepest_descent`).
2. **Independent of gradient scale.** With ``eps = 0``, multiplying the loss by any ``c > 0``
   leaves whole trajectories unchanged (:func:`certify_scale_invariance`).
3. **Well conditioned.** The retraction solves with ``I + ξᵀξ``, whose condition number is at
   most ``1 + Δ²`` under a trust radius ``Δ`` (:func:`certify_conditioning`).
4. **Exactly O(d)-equivariant.** The trajectory from ``(QW, QG_t)`` is ``Q`` times the trajectory
   from ``(W, G_t)`` (:func:`certify_equivariance`).
5. **Weight decay has identically zero Riemannian gradient.** ``P_W(λW) = 0`` on St(d, r), so
   decay cannot move a frame, while it shrinks a Euclidean ``W_Q`` (:func:`certify_weight_decay`).

The optimizer never exposes its tangent step ``ξ``; the certificates recover it from two
consecutive frames with :func:`inverse_retract_polar`, so what is certified is the step the
optimizer actually took.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Callable, Iterable

import numpy as np
import scipy.linalg
import torch
from torch import Tensor, nn
from torch.optim import Optimizer

from .attention import SelfAttention
from .manifold import (
    newton_schulz_steps,
    orthonormality_error,
    orthonormalize,
    project_tangent,
    random_frame,
    retract_polar,
)
from .optim import FrameParameter, StiefelAdam, configure_optimizer, is_frame
from .train import one_thread, single_threaded

__all__ = [
    "TOLERANCE",
    "Certificate",
    "SteepestDescentCertificate",
    "ScaleInvarianceCertificate",
    "ConditioningCertificate",
    "EquivarianceCertificate",
    "WeightDecayCertificate",
    "certify_steepest_descent",
    "certify_scale_invariance",
    "certify_conditioning",
    "certify_equivariance",
    "certify_weight_decay",
    "certify_all",
    "QuadraticProblem",
    "run_trajectory",
    "inverse_retract_polar",
    "steepest_tangent_direction",
    "sampled_decrease_ratios",
    "retraction_condition",
    "condition_history",
    "displacement_by_scale",
    "haar_orthogonal",
    "equivariance_deviation",
    "normal_ratio",
    "weight_decay_training_run",
    "one_thread",
]

DTYPE = torch.float64
TOLERANCE = 1e-12  # every "exact" claim is checked to this, in float64 (unit roundoff 1.1e-16)


# --------------------------------------------------------------------------------------------
# Rounded, machine-stable text
# --------------------------------------------------------------------------------------------


def _at_most(x: float, tol: float) -> str:
    """``"≤ 1e-12"`` when ``x`` is within ``tol`` (the exact value is rounding noise that differs
    between machines), else the value itself, so a failure shows how far off it is."""
    return f"≤ {tol:.0e}" if x <= tol else f"{x:.2e} (> {tol:.0e})"


def _sig(x: float, digits: int = 3) -> float:
    """``x`` rounded to ``digits`` significant digits (0 stays 0)."""
    if x == 0 or not math.isfinite(x):
        return x
    return round(x, digits - 1 - int(math.floor(math.log10(abs(x)))))


@dataclass(frozen=True)
class Certificate:
    """Base of the certificates: numbers, named checks, a rounded summary."""

    def checks(self) -> dict[str, bool]:  # pragma: no cover - every subclass overrides it
        raise NotImplementedError

    @property
    def passed(self) -> bool:
        """True when every check of :meth:`checks` holds."""
        return all(self.checks().values())

    def summary(self) -> dict[str, object]:  # pragma: no cover - every subclass overrides it
        raise NotImplementedError

    def __str__(self) -> str:
        rows = [(name, value) for name, value in self.summary().items()]
        rows += [(f"check: {name}", ok) for name, ok in self.checks().items()]
        rows.append(("passed", self.passed))
        width = max(len(name) for name, _ in rows)
        return f"{type(self).__name__}\n" + "\n".join(f"  {name:<{width}}  {value}" for name, value in rows)


# --------------------------------------------------------------------------------------------
# A test problem, a trajectory runner and the inverse of the polar retraction
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class QuadraticProblem:
    """A loss on a bank of ``F`` frames, with noisy gradients, that transforms under O(d).

    ``f(W) = scale · Σ_f [ -½ tr(W_fᵀ C_f W_f N) - ⟨B_f, W_f⟩ ]`` (a Brockett cost plus a linear
    term), ``C_f`` symmetric ``(d, d)``, ``N = diag(1, ..., r)``; the gradient at step ``t`` is
    ``scale · (-C W N - B + E_t)`` with a fixed noise sequence ``E_t`` standing in for minibatch
    noise. Rotating the data (``C → Q C Qᵀ``, ``B → Q B``, ``E_t → Q E_t``) rotates the gradient:
    ``∇f'(QW) = Q ∇f(W)``, which is what an O(d)-symmetric model does.
    """

    C: Tensor  # (F, d, d) symmetric
    N: Tensor  # (r,) diagonal weights
    B: Tensor  # (F, d, r)
    E: Tensor  # (steps, F, d, r) gradient noise
    scale: float = 1.0

    @staticmethod
    def random(n_frames: int, d: int, r: int, steps: int, *, seed: int = 0, noise: float = 0.3) -> "QuadraticProblem":
        g = torch.Generator().manual_seed(seed)
        A = torch.randn(n_frames, d, d, generator=g, dtype=DTYPE)
        C = (A + A.mT) / (2 * math.sqrt(d))  # (F, d, d)
        N = torch.arange(1, r + 1, dtype=DTYPE) / r  # (r,)
        B = torch.randn(n_frames, d, r, generator=g, dtype=DTYPE) / math.sqrt(d)
        E = noise * torch.randn(steps, n_frames, d, r, generator=g, dtype=DTYPE)
        return QuadraticProblem(C, N, B, E)

    def scaled(self, c: float) -> "QuadraticProblem":
        """The same problem with the loss multiplied by ``c``."""
        return QuadraticProblem(self.C, self.N, self.B, self.E, self.scale * c)

    def rotated(self, Q: Tensor) -> "QuadraticProblem":
        """The problem seen in coordinates rotated by ``Q`` (``(F, d, d)`` or ``(d, d)``)."""
        return QuadraticProblem(Q @ self.C @ Q.mT, self.N, Q @ self.B, Q @ self.E, self.scale)

    def gradient(self, W: Tensor, t: int) -> Tensor:
        return self.scale * (-(self.C @ W) * self.N - self.B + self.E[t % len(self.E)])  # (F, d, r)

    def loss(self, W: Tensor) -> Tensor:
        """Per-frame loss ``(F,)`` (without noise)."""
        quad = -0.5 * ((W * (self.C @ W)) * self.N).sum((-2, -1))
        return self.scale * (quad - (self.B * W).sum((-2, -1)))


def _stiefel_options(options: dict) -> dict:
    defaults = dict(lr=0.05, betas=(0.9, 0.999), eps=0.0, trust_radius=0.5)
    return {**defaults, **options}


@single_threaded
def run_trajectory(
    W0: Tensor,
    gradient: Callable[[Tensor, int], Tensor],
    steps: int,
    *,
    make_optimizer: Callable[[list[Tensor]], Optimizer] | None = None,
    **options,
) -> Tensor:
    """Frames ``(steps + 1, *W0.shape)`` visited by an optimizer from ``W0``.

    ``gradient(W, t)`` gives the Euclidean gradient at the current frames. The optimizer is
    ``StiefelAdam(**options)`` (defaults here: ``lr=0.05``, ``eps=0``, ``trust_radius=0.5``), or
    ``make_optimizer([param])`` for any other ``torch.optim`` optimizer.
    """
    p = FrameParameter(W0.clone())
    opt = make_optimizer([p]) if make_optimizer is not None else StiefelAdam([p], **_stiefel_options(options))
    path = [p.detach().clone()]
    for t in range(steps):
        p.grad = gradient(p.detach().clone(), t)
        opt.step()
        path.append(p.detach().clone())
    return torch.stack(path)


def inverse_retract_polar(W: Tensor, W_next: Tensor) -> Tensor:
    """The tangent step ``ξ`` with ``W_next = (W + ξ)(I + ξᵀξ)^(-1/2)``, frames ``(..., d, r)``.

    With ``S = (I + ξᵀξ)^(1/2)`` symmetric, ``W + ξ = W_next S``, and ``ξ`` tangent means
    ``sym(Wᵀ(W + ξ)) = I``; so ``S`` solves the Lyapunov equation ``M S + S Mᵀ = 2 I`` with
    ``M = WᵀW_next``, which has one solution (the eigenvalues of ``M`` have positive real part).
    Then ``ξ = W_next S - W``. Computed in float64 with SciPy, frame by frame.
    """
    Wn, Vn = W.detach().to(DTYPE).cpu().numpy(), W_next.detach().to(DTYPE).cpu().numpy()
    flat_W, flat_V = Wn.reshape(-1, *Wn.shape[-2:]), Vn.reshape(-1, *Vn.shape[-2:])
    r = Wn.shape[-1]
    out = np.empty_like(flat_W)
    for i, (w, v) in enumerate(zip(flat_W, flat_V)):
        S = scipy.linalg.solve_continuous_lyapunov(w.T @ v, 2.0 * np.eye(r))
        out[i] = v @ (0.5 * (S + S.T)) - w
    return torch.from_numpy(out.reshape(Wn.shape))


def steepest_tangent_direction(W: Tensor, G: Tensor) -> Tensor:
    """``η* = -P_W(G) / ‖P_W(G)‖_F``, the unit tangent direction of fastest first-order decrease."""
    g = project_tangent(W, G)
    return -g / torch.linalg.matrix_norm(g)[..., None, None]


def sampled_decrease_ratios(W: Tensor, G: Tensor, n: int, *, seed: int = 0, around: Tensor | None = None) -> Tensor:
    """First-order decreases ``-⟨G, η⟩ / ‖P_W G‖`` of ``n`` sampled unit tangent directions ``η``
    at one frame ``W`` ``(d, r)``: uniform on the unit sphere of the tangent space, or, with
    ``around``, perturbations ``around + δ z`` with ``δ`` log-spaced in ``[1e-6, 10]``."""
    g = torch.Generator().manual_seed(seed)
    Z = project_tangent(W, torch.randn(n, *W.shape, generator=g, dtype=DTYPE))  # (n, d, r)
    if around is not None:
        Z = Z / torch.linalg.matrix_norm(Z)[:, None, None]
        deltas = torch.logspace(-6, 1, n, dtype=DTYPE)
        Z = around + deltas[:, None, None] * Z
    eta = Z / torch.linalg.matrix_norm(Z)[:, None, None]
    decrease = -(G * eta).sum((-2, -1))  # (n,)
    return decrease / torch.linalg.matrix_norm(project_tangent(W, G))


# --------------------------------------------------------------------------------------------
# Proposition 1: steepest descent in the embedded metric
# --------------------------------------------------------------------------------------------

P1_SHAPES = ((3, 1), (5, 2), (8, 8), (16, 4), (64, 8))


@dataclass(frozen=True)
class SteepestDescentCertificate(Certificate):
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
            direction_error = max(direction_error, float(torch.linalg.matrix_norm(xi / torch.linalg.matrix_norm(xi) - eta)))
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


# --------------------------------------------------------------------------------------------
# Proposition 2: independent of gradient scale
# --------------------------------------------------------------------------------------------

P2_SCALES = tuple(10.0**k for k in range(-8, 9))


@single_threaded
def displacement_by_scale(
    scales: Iterable[float] = P2_SCALES, *, steps: int = 1, seed: int = 0, d: int = 16, r: int = 4, n_frames: int = 4, **options
) -> tuple[Tensor, Tensor]:
    """``(scales, displacement)``: ``‖W_steps - W_0‖_F`` after ``steps`` steps on the loss scaled by
    each factor, from one start; ``options`` go to StiefelAdam."""
    scales = torch.tensor(list(scales), dtype=DTYPE)
    problem = QuadraticProblem.random(n_frames, d, r, max(steps, 1), seed=seed)
    W0 = random_frame(d, r, n_frames, generator=torch.Generator().manual_seed(seed + 1), dtype=DTYPE)
    moved = [
        float(torch.linalg.vector_norm(run_trajectory(W0, problem.scaled(float(c)).gradient, steps, **options)[-1] - W0))
        for c in scales
    ]
    return scales, torch.tensor(moved, dtype=DTYPE)


def _loglog_slope(x: Tensor, y: Tensor) -> float:
    lx, ly = torch.log10(x), torch.log10(y)
    lx, ly = lx - lx.mean(), ly - ly.mean()
    return float((lx * ly).sum() / (lx * lx).sum())


@dataclass(frozen=True)
class ScaleInvarianceCertificate(Certificate):
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
            "fixed rule: displacement grows by the range's factor (± 1%)": abs(self.fixed_ratio / self.fixed_range_factor - 1.0) < 0.01,
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
    problem = QuadraticProblem.random(n_frames, d, r, steps, seed=seed)
    W0 = random_frame(d, r, n_frames, generator=torch.Generator().manual_seed(seed + 1), dtype=DTYPE)
    reference = run_trajectory(W0, problem.gradient, steps, **opts)
    norm = torch.linalg.vector_norm(reference, dim=(-3, -2, -1))  # (steps + 1,) = √(F r)
    max_deviation = 0.0
    for c in scales:
        path = run_trajectory(W0, problem.scaled(c).gradient, steps, **opts)
        max_deviation = max(max_deviation, float((torch.linalg.vector_norm(path - reference, dim=(-3, -2, -1)) / norm).max()))
    displacement = float(torch.linalg.vector_norm(reference[-1] - W0) / norm[0])

    lo, hi = fixed_fit_range
    fitted = [c for c in scales if lo <= c <= hi]
    cs, moved = displacement_by_scale(fitted, seed=seed, d=d, r=r, n_frames=n_frames, step_rule="fixed", trust_radius=None, lr=fixed_lr, eps=0.0)
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


# --------------------------------------------------------------------------------------------
# Proposition 3: well conditioned
# --------------------------------------------------------------------------------------------


def retraction_condition(xi: Tensor) -> Tensor:
    """Condition number ``(1 + σ_max²) / (1 + σ_min²)`` of ``I + ξᵀξ``, per frame (``σ`` the
    singular values of ``ξ``; ``σ_min = 0`` when ``ξ`` has rank below ``r``)."""
    s = torch.linalg.svdvals(xi.to(DTYPE))  # (..., r), descending
    return (1 + s[..., 0] ** 2) / (1 + s[..., -1] ** 2)


@single_threaded
def condition_history(
    lr: float, trust_radius: float | None, *, steps: int = 30, d: int = 16, r: int = 4, n_frames: int = 4, seed: int = 0, scale: float = 1.0, **options
) -> dict[str, Tensor]:
    """One StiefelAdam run on the quadratic test loss (scaled by ``scale``); per step, the
    recovered ``ξ``'s Frobenius norm and the condition number of ``I + ξᵀξ`` (max over frames),
    and the orthonormality error of the frames (max over frames)."""
    problem = QuadraticProblem.random(n_frames, d, r, steps, seed=seed).scaled(scale)
    W0 = random_frame(d, r, n_frames, generator=torch.Generator().manual_seed(seed + 1), dtype=DTYPE)
    opts = {"lr": lr, "trust_radius": trust_radius, "eps": 0.0, **options}
    path = run_trajectory(W0, problem.gradient, steps, **opts)
    xis = torch.stack([inverse_retract_polar(path[t], path[t + 1]) for t in range(steps)])  # (steps, F, d, r)
    return {
        "condition": retraction_condition(xis).amax(-1),  # (steps,)
        "step_norm": torch.linalg.matrix_norm(xis).amax(-1),  # (steps,)
        "orthonormality_error": orthonormality_error(path[1:]).amax(-1),  # (steps,)
    }


@dataclass(frozen=True)
class ConditioningCertificate(Certificate):
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
    trust_radius: float | None = 0.5, *, lr: float = 1.0, steps: int = 40, seed: int = 0, bound_radius: float | None = None, **options
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


# --------------------------------------------------------------------------------------------
# Proposition 4: exactly O(d)-equivariant
# --------------------------------------------------------------------------------------------


def haar_orthogonal(d: int, *batch: int, generator: torch.Generator | None = None) -> Tensor:
    """Haar-distributed ``Q`` in O(d), shape ``(*batch, d, d)``: QR of a Gaussian matrix with the
    signs of ``R``'s diagonal moved into ``Q`` (Mezzadri 2007), in float64."""
    return random_frame(d, d, *batch, generator=generator, dtype=DTYPE)


@single_threaded
def equivariance_deviation(
    Q: Tensor, *, steps: int = 50, d: int = 16, r: int = 4, n_frames: int = 4, seed: int = 0,
    make_optimizer: Callable[[list[Tensor]], Optimizer] | None = None, **options,
) -> Tensor:
    """Per step ``t``, ``‖W'_t - Q W_t‖_F / ‖W_t‖_F``: ``W'`` is the trajectory from ``(QW_0, QG_t)``,
    ``W`` the one from ``(W_0, G_t)``, on the quadratic test loss (``Q`` acts frame by frame)."""
    problem = QuadraticProblem.random(n_frames, d, r, steps, seed=seed)
    W0 = random_frame(d, r, n_frames, generator=torch.Generator().manual_seed(seed + 1), dtype=DTYPE)
    path = run_trajectory(W0, problem.gradient, steps, make_optimizer=make_optimizer, **options)
    rotated = run_trajectory(Q @ W0, problem.rotated(Q).gradient, steps, make_optimizer=make_optimizer, **options)
    return torch.linalg.vector_norm(rotated - Q @ path, dim=(-3, -2, -1)) / torch.linalg.vector_norm(path, dim=(-3, -2, -1))


@dataclass(frozen=True)
class EquivarianceCertificate(Certificate):
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
    n_rotations: int = 5, *, steps: int = 50, seed: int = 0,
    make_optimizer: Callable[[list[Tensor]], Optimizer] | None = None, **options,
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


# --------------------------------------------------------------------------------------------
# Proposition 5: weight decay has identically zero Riemannian gradient
# --------------------------------------------------------------------------------------------

P5_SHAPES = tuple((d, r) for d in (1, 2, 3, 5, 8, 16, 32, 64, 128) for r in (1, 2, 4, 8, 16, 64, 128) if r <= d)


def normal_ratio(W: Tensor, weight_decay: float = 0.1) -> Tensor:
    """``‖P_W(λW)‖_F / ‖λW‖_F`` per frame: the part of the decay gradient ``λW`` the manifold sees."""
    D = weight_decay * W
    return torch.linalg.matrix_norm(project_tangent(W, D)) / torch.linalg.matrix_norm(D)


def _frame_norms(model: nn.Module) -> float:
    return float(torch.linalg.vector_norm(model.W_Q.detach()))


def weight_decay_training_run(
    stiefel: bool, *, weight_decay: float = 1.0, lr: float = 1e-2, steps: int = 300, seed: int = 0,
    teacher_sharpness: float = 0.0, d_model: int = 16, n_heads: int = 2, d_head: int = 4, tokens: int = 8, batch: int = 32,
) -> dict[str, object]:
    """A tiny self-attention model trained by ``configure_optimizer`` in float64 on a teacher task.

    The student is ``SelfAttention(d_model, n_heads, d_head, stiefel=stiefel)``; the teacher is
    another one whose query and key weights are multiplied by ``teacher_sharpness``: at the
    default 0 the teacher attends uniformly, so the target is the average of the value vectors,
    a task that needs no particular attention pattern; larger values make the target depend
    on a sharp pattern. Inputs are Gaussian tokens, the loss the mean squared error to the
    teacher's output, a fresh batch every step. With ``stiefel=True`` the frames ``W_Q``, ``W_K``
    go to StiefelAdam and the rest to AdamW with decoupled ``weight_decay``; with
    ``stiefel=False`` every parameter goes to AdamW with that decay. Both arms start from the
    same weights. Returns the histories of ``‖W_Q‖_F`` (the start, then one entry per step) and
    of the loss (one per step), and ``√(n_heads · d_head)``, the norm of orthonormal frames.
    Runs are deterministic and remembered: a second call with the same arguments is free.
    """
    run = _cached_training_run(
        stiefel, float(weight_decay), float(lr), int(steps), int(seed), float(teacher_sharpness), d_model, n_heads, d_head, tokens, batch
    )
    return {key: value.clone() if isinstance(value, Tensor) else value for key, value in run.items()}


@functools.lru_cache(maxsize=32)
@single_threaded
def _cached_training_run(
    stiefel: bool, weight_decay: float, lr: float, steps: int, seed: int, teacher_sharpness: float,
    d_model: int, n_heads: int, d_head: int, tokens: int, batch: int,
) -> dict[str, object]:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        teacher = SelfAttention(d_model, n_heads, d_head, stiefel=False).to(DTYPE)
        torch.manual_seed(seed + 1)
        model = SelfAttention(d_model, n_heads, d_head, stiefel=stiefel).to(DTYPE)
    with torch.no_grad():
        teacher.W_Q.mul_(teacher_sharpness)
        teacher.W_K.mul_(teacher_sharpness)
        for p in (model.W_Q, model.W_K):  # float32 frames, cast: orthonormal again in float64
            p.copy_(orthonormalize(p))
    opt = configure_optimizer(model, lr=lr, weight_decay=weight_decay)
    g = torch.Generator().manual_seed(seed + 2)
    norms, losses = [_frame_norms(model)], []
    for _ in range(steps):
        x = torch.randn(batch, tokens, d_model, generator=g, dtype=DTYPE)
        with torch.no_grad():
            y = teacher(x)
        loss = (model(x) - y).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        norms.append(_frame_norms(model))
        losses.append(loss.item())
    return {
        "W_Q_norm": torch.tensor(norms, dtype=DTYPE),
        "loss": torch.tensor(losses, dtype=DTYPE),
        "orthonormal_norm": math.sqrt(n_heads * d_head),
        "stiefel": stiefel,
        "frames_are_frames": all(is_frame(p) for p in (model.W_Q, model.W_K)) if stiefel else False,
    }


@dataclass(frozen=True)
class WeightDecayCertificate(Certificate):
    n_shapes: int
    n_frames: int
    max_normal_ratio: float  # max ‖P_W(λW)‖ / ‖λW‖ over random frames of many shapes
    argument_bit_identical: bool  # StiefelAdam(weight_decay=λ) == StiefelAdam(weight_decay=0), bit for bit
    coupled_deviation: float  # trajectory with gradients G + λW against G: max relative deviation
    decoupled_retracted_error: float  # ‖polar((1 - ηλ) W) - W‖_F / ‖W‖_F: AdamW's shrink, retracted
    steps: int  # training run
    weight_decay: float
    orthonormal_norm: float  # √(n_heads · d_head)
    stiefel_norm_error: float  # max_t |‖W_Q‖_F - √(H r)| in the Stiefel arm
    euclidean_norms: tuple[float, ...]  # ‖W_Q‖_F of the Euclidean arm at checkpoints
    stiefel_norms: tuple[float, ...]
    no_decay_norms: tuple[float, ...]  # the Euclidean arm again, weight_decay = 0 (control)
    checkpoints: tuple[int, ...]
    euclidean_final_loss: float
    stiefel_final_loss: float
    tolerance: float = TOLERANCE

    def checks(self) -> dict[str, bool]:
        e = self.euclidean_norms
        return {
            "‖P_W(λW)‖ / ‖λW‖ ≤ 1e-12": self.max_normal_ratio <= self.tolerance,
            "weight_decay argument: bit-identical": self.argument_bit_identical,
            "coupled decay G + λW: trajectory unchanged": self.coupled_deviation <= self.tolerance,
            "decoupled shrink, retracted: frame unchanged": self.decoupled_retracted_error <= self.tolerance,
            "Stiefel W_Q norm = √(H r) throughout": self.stiefel_norm_error <= self.tolerance,
            "Euclidean W_Q shrinks at every checkpoint": all(b < a for a, b in zip(e, e[1:])),
            "decay, not the loss, shrinks it (final < ½ of no-decay)": e[-1] < 0.5 * self.no_decay_norms[-1],
        }

    def summary(self) -> dict[str, object]:
        return {
            "random frames / shapes": f"{self.n_frames} / {self.n_shapes}",
            "max ‖P_W(λW)‖ / ‖λW‖": _at_most(self.max_normal_ratio, self.tolerance),
            "StiefelAdam(weight_decay=0.1) vs 0: bit-identical": self.argument_bit_identical,
            "trajectory with G + λW vs G": _at_most(self.coupled_deviation, self.tolerance),
            "polar((1 - ηλ) W) vs W": _at_most(self.decoupled_retracted_error, self.tolerance),
            "training run": f"{self.steps} steps, AdamW weight decay {self.weight_decay:g}",
            "steps at checkpoints": ", ".join(str(c) for c in self.checkpoints),
            "Euclidean ‖W_Q‖_F": ", ".join(f"{x:.3f}" for x in self.euclidean_norms),
            "Euclidean ‖W_Q‖_F, no decay": ", ".join(f"{x:.3f}" for x in self.no_decay_norms),
            "Stiefel ‖W_Q‖_F": ", ".join(f"{x:.3f}" for x in self.stiefel_norms),
            "max_t |Stiefel ‖W_Q‖_F - √(H r)|": _at_most(self.stiefel_norm_error, self.tolerance),
            "final loss, Euclidean / Stiefel": f"{self.euclidean_final_loss:.3g} / {self.stiefel_final_loss:.3g}",
        }


@single_threaded
def certify_weight_decay(
    *, weight_decay: float = 1.0, lr: float = 1e-2, steps: int = 300, frames_per_shape: int = 64, seed: int = 0, **options
) -> WeightDecayCertificate:
    """Proposition 5: the decay gradient ``λW`` is normal to St(d, r) at ``W``, so decay does not
    move a frame, in any of its three forms.

    - ``‖P_W(λW)‖ / ‖λW‖`` at ``frames_per_shape`` random frames of every shape in ``P5_SHAPES``;
    - StiefelAdam's ``weight_decay`` argument (accepted, ignored): trajectories bit-identical;
    - coupled L2 decay, ``G + λW`` fed as the gradient: the same trajectory to 1e-12;
    - decoupled decay ``W ← (1 - ηλ)W`` then the polar retraction: the same frame.
    Then a tiny attention model trained three times (:func:`weight_decay_training_run`): AdamW's
    decoupled decay shrinks a Euclidean ``W_Q`` at every checkpoint, far below where the same
    run without decay settles; the Stiefel ``W_Q`` keeps norm ``√(H r)`` to 1e-12.
    ``options`` go to the StiefelAdam runs (``projector="euclidean"`` makes coupled decay count).
    """
    g = torch.Generator().manual_seed(seed)
    ratio = decoupled = 0.0
    for d, r in P5_SHAPES:
        W = random_frame(d, r, frames_per_shape, generator=g, dtype=DTYPE)
        ratio = max(ratio, float(normal_ratio(W, 0.1).max()))
        shrunk = retract_polar(W, -lr * weight_decay * W, tangent=False)  # polar((1 - ηλ) W)
        decoupled = max(decoupled, float((torch.linalg.matrix_norm(shrunk - W) / math.sqrt(r)).max()))

    problem = QuadraticProblem.random(4, 16, 4, 50, seed=seed)
    W0 = random_frame(16, 4, 4, generator=g, dtype=DTYPE)
    plain = run_trajectory(W0, problem.gradient, 50, **options)
    with_argument = run_trajectory(W0, problem.gradient, 50, weight_decay=0.1, **options)
    coupled = run_trajectory(W0, lambda W, t: problem.gradient(W, t) + weight_decay * W, 50, **options)
    norm = torch.linalg.vector_norm(plain, dim=(-3, -2, -1))
    coupled_deviation = float((torch.linalg.vector_norm(coupled - plain, dim=(-3, -2, -1)) / norm).max())

    euclid = weight_decay_training_run(False, weight_decay=weight_decay, lr=lr, steps=steps, seed=seed)
    stief = weight_decay_training_run(True, weight_decay=weight_decay, lr=lr, steps=steps, seed=seed)
    control = weight_decay_training_run(False, weight_decay=0.0, lr=lr, steps=steps, seed=seed)
    checkpoints = tuple(range(0, steps + 1, max(steps // 6, 1)))
    expected = stief["orthonormal_norm"]
    return WeightDecayCertificate(
        n_shapes=len(P5_SHAPES),
        n_frames=len(P5_SHAPES) * frames_per_shape,
        max_normal_ratio=ratio,
        argument_bit_identical=bool(torch.equal(plain, with_argument)),
        coupled_deviation=coupled_deviation,
        decoupled_retracted_error=decoupled,
        steps=steps,
        weight_decay=weight_decay,
        orthonormal_norm=expected,
        stiefel_norm_error=float((stief["W_Q_norm"] - expected).abs().max()),
        euclidean_norms=tuple(round(float(euclid["W_Q_norm"][c]), 6) for c in checkpoints),
        stiefel_norms=tuple(round(float(stief["W_Q_norm"][c]), 6) for c in checkpoints),
        no_decay_norms=tuple(round(float(control["W_Q_norm"][c]), 6) for c in checkpoints),
        checkpoints=checkpoints,
        euclidean_final_loss=float(euclid["loss"][-10:].mean()),
        stiefel_final_loss=float(stief["loss"][-10:].mean()),
    )


def certify_all() -> dict[str, Certificate]:
    """All five certificates with their default settings, by proposition."""
    return {
        "P1": certify_steepest_descent(),
        "P2": certify_scale_invariance(),
        "P3": certify_conditioning(),
        "P4": certify_equivariance(),
        "P5": certify_weight_decay(),
    }
