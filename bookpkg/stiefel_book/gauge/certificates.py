"""The gauge chapter's certificates: symmetry, gauge-free gradients, projected runs, gauge-equivariant StiefelAdam
(chapter gauge)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
from torch import Tensor, nn

from ..certify.base import TOLERANCE, Certificate, _at_most, _sig
from ..threads import single_threaded
from .algebra import DTYPE, normality_error, orthogonal_generators, product_kernel, tangency_error
from .problem import GaugeProblem, attention_modules, loss_along, make_model, orbit_curves, task_loss
from .runs import gradient_components, moved_start_runs, projected_runs, trained_model

RUN_TOLERANCE = 1e-10  # projected and plain runs agree to this over >= 100 steps (rounding compounds)


@dataclass(frozen=True)
class SymmetryCertificate(Certificate):
    """The gauge orbits' certificate: the loss and the output are unchanged along them. Chapter: gauge."""

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
            "St x St loses r(r+1)/2 product directions": self.image_dims[0] - self.image_dims[1]
            == self.d_head * (self.d_head + 1) // 2,
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
    *,
    n_curves: int = 4,
    ts: tuple[float, ...] = (-2.0, -0.5, 0.3, 1.0, 3.0),
    seed: int = 0,
    trained_steps: int = 40,
    problem: GaugeProblem = GaugeProblem(),
    loss_fn: Callable[[nn.Module, Tensor, Tensor], Tensor] = task_loss,
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
    Chapter: gauge.
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
    normality = float(
        torch.maximum(normality_error(W_Q, W_Q.unsqueeze(-3) @ S), normality_error(W_K, -(W_K.unsqueeze(-3) @ S))).max()
    )

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
    """The gradient's certificate: no component along the gauge directions. Chapter: gauge."""

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
        return max(
            self.stiefel_random,
            self.stiefel_run,
            self.stiefel_gl,
            self.euclidean_random,
            self.euclidean_run,
            self.max_cosine,
        )

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


def certify_gauge_gradients(components: dict | None = None, **setting) -> GaugeGradientCertificate:
    """The gradient carries no gauge component: at ``n_random_points`` random points per arm and at
    every ``every``-th step of a ``steps``-step training run per arm (StiefelAdam + AdamW; AdamW),
    every head's gradient has a component along the span of its gauge directions of at most 1e-12
    of its norm. The Stiefel arm's Riemannian gradient is checked against O(r), its Euclidean one
    against GL(r), the Euclidean arm's gradient against GL(r). The control, the same check for
    the loss plus ``0.1 ⟨B, W_Q⟩`` (:func:`query_penalty`) at the random points, must fail it
    visibly. ``loss_fn`` replaces the task loss (tests pass a non-invariant one).

    ``components``: :func:`gradient_components`' output, when the chapter has computed it for its
    figure too; else ``setting`` (``n_random_points``, ``steps``, ``every``, ``seed``, ``problem``,
    ``loss_fn``) is handed to :func:`gradient_components`."""
    if components is None:
        components = gradient_components(**setting)
    found, control = components["found"], components["control"]
    worst = ("stiefel_random", "stiefel_run", "stiefel_gl", "euclidean_random", "euclidean_run")  # found's, by name
    return GaugeGradientCertificate(
        n_random_points=components["setting"]["n_random_points"],
        checkpoints=tuple(int(s) for s in found["steps"]),
        n_heads=found["stiefel_random"].shape[-1],
        **{key: float(found[key].max()) for key in worst},
        max_cosine=float(found["cosine"].max()),
        control_stiefel=float(control["stiefel_random"].min()),
        control_euclidean=float(control["euclidean_random"].min()),
    )


@dataclass(frozen=True)
class ProjectedRunCertificate(Certificate):
    """The projected run's certificate: removing the gauge from every gradient changes nothing. Chapter: gauge."""

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
            "both runs train (loss falls)": self.stiefel_loss[1] < self.stiefel_loss[0]
            and self.euclidean_loss[1] < self.euclidean_loss[0],
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
            "steps projected instead, Euclidean: max |L − L_plain|": _sig(
                self.euclidean_update_removed_loss_deviation, 2
            ),
        }


def certify_projected_run(runs: dict | None = None, **setting) -> ProjectedRunCertificate:
    """Removing the gauge directions from every gradient changes nothing: the problem's model
    trained ``steps`` steps in float64, once plainly and once with :func:`remove_gauge_from_grads_`
    before every step, for the Stiefel arm (StiefelAdam on the frames, its Riemannian gradient
    projected; AdamW on the rest) and the Euclidean arm (AdamW, GL(r)). Parameters and losses
    must agree to 1e-10 at every step.

    Recorded beside the checks, from the same plain runs: the gauge component of the steps the
    optimizers take (not of their gradients), and how far a run drifts from the plain one when
    those *steps* are projected instead (:meth:`ProjectedRunCertificate.update_summary`).
    ``runs``: :func:`projected_runs`' output, when the chapter has trained them for its figures too;
    else ``setting`` (``steps``, ``seed``, ``lr``, ``weight_decay``, ``problem``) is handed to it.
    """
    if runs is None:
        runs = projected_runs(**setting)
    per_arm: dict[str, object] = {}  # the fields each arm's runs fill, under the arm's prefix
    for arm in ("stiefel", "euclidean"):
        gradient, update = runs[arm]["gradient"], runs[arm]["update"]
        for field, value in (
            ("param_deviation", gradient["params"].max()),
            ("loss_deviation", gradient["loss"].max()),
            ("update_component", gradient["update_component"].max()),
            ("update_removed_deviation", update["params"].max()),
            ("update_removed_loss_deviation", update["loss"].max()),
        ):
            per_arm[f"{arm}_{field}"] = float(value)
        per_arm[f"{arm}_loss"] = (float(gradient["plain_loss"][0]), float(gradient["plain_loss"][-1]))
    return ProjectedRunCertificate(
        **{key: runs["setting"][key] for key in ("steps", "lr", "weight_decay")},
        max_removed=float(max(runs[arm]["gradient"]["removed"].max() for arm in ("stiefel", "euclidean"))),
        **per_arm,
    )


@dataclass(frozen=True)
class GaugeEquivarianceCertificate(Certificate):
    """The moved-start certificate: StiefelAdam does not care where on its orbit a run starts. Chapter: gauge."""

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
            "AdamW from a rotated gauge: visibly different losses (> 1e-6)": self.euclidean_orthogonal_loss_deviation
            > 1e-6,
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


def certify_gauge_equivariance(runs: dict | None = None, **setting) -> GaugeEquivarianceCertificate:
    """Where on its orbit a run starts does not matter to StiefelAdam, and does matter to AdamW.

    ``P_{WR}(GR) = P_W(G) R``, ``‖gR‖ = ‖g‖`` and ``R_{WR}(ξR) = R_W(ξ) R`` for ``R`` in O(r): a run
    from ``(W_Q R, W_K R)`` is the original run with every frame multiplied by ``R``, and computes
    the same function at every step. AdamW's per-entry second moment is not invariant under
    ``W → W R``, so its run from a rotated (or GL-moved) start computes a different function.
    ``n_draws`` random ``R`` (and ``A``) per head, ``steps`` steps each (:func:`moved_start_runs`;
    ``runs``: its output, when the chapter has trained them for its figure too; else ``setting``
    (``n_draws``, ``steps``, ``seed``, ``lr``, ``weight_decay``, ``problem``) is handed to it).
    """
    if runs is None:
        runs = moved_start_runs(**setting)
    s, e, e_gl = runs["stiefel"], runs["euclidean"], runs["euclidean_gl"]
    worst = lambda runs, key: max(float(run[key].max()) for run in runs)  # noqa: E731
    return GaugeEquivarianceCertificate(
        steps=runs["setting"]["steps"],
        n_draws=runs["setting"]["n_draws"],
        stiefel_loss_deviation=worst(s, "loss"),
        stiefel_frame_deviation=worst(s, "frames"),
        stiefel_rest_deviation=worst(s, "rest"),
        euclidean_orthogonal_loss_deviation=worst(e, "loss"),
        euclidean_gl_loss_deviation=worst(e_gl, "loss"),
    )
