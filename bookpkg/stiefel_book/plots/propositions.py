"""Figures of the five proposition chapters (P1-P5).

Every ``draw_*(ax, **setting)`` draws one panel of what :mod:`stiefel_book.certify.curves`
computes for that setting (float64, fixed seeds) and returns those numbers as a dict: the
chapters' widgets call them through :mod:`stiefel_book.widgets.propositions`, and
:func:`stiefel_book.plots.grid_figure` lays a few settings side by side for the static book.
The ``*_figure(curves)`` functions are the chapters' other figures: they draw the curves the
chapter computed with :mod:`stiefel_book.certify.curves` and handed them.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..certify import TOLERANCE, condition_history, curves
from . import COLORS, arm_color, figsize, grid_figure, style

__all__ = [
    "FLOOR",
    "steepest_descent_grid",
    "scale_grid",
    "conditioning_grid",
    "equivariance_grid",
    "weight_decay_grid",
    "draw_decrease_samples",
    "draw_scale_run",
    "scale_invariance_figure",
    "draw_condition_history",
    "conditioning_figure",
    "draw_equivariance",
    "equivariance_sphere_figure",
    "draw_weight_decay",
    "weight_decay_figure",
]

FLOOR = 1e-17  # exact zeros are drawn here on log axes


# --------------------------------------------------------------------------------------------
# P1: steepest descent
# --------------------------------------------------------------------------------------------


def draw_decrease_samples(ax: Axes, d: int = 16, r: int = 4, seed: int = 0, n_samples: int = 4000) -> dict:
    """Histogram of the first-order decrease ``-⟨G, η⟩ / ‖P_W G‖`` of ``n_samples`` random unit
    tangent directions ``η`` at a random ``(W, G)`` in St(d, r), against StiefelAdam's first
    step (at exactly 1: the optimum). Returns the best sample, the optimizer's ratio and the
    optimizer's direction error.
    Chapters: p1_steepest_descent to p5_weight_decay."""
    found = curves.decrease_samples(d, r, seed, n_samples)
    d, r, ratios, step_ratio = found["d"], found["r"], found["ratios"], found["step_ratio"]
    ax.hist(ratios, bins=60, range=(-1, 1), color=COLORS["reference"], alpha=0.7, label="random unit tangents")
    ax.axvline(step_ratio, color=arm_color("stiefel"), linewidth=2.5, label="StiefelAdam's step")
    ax.set_xlim(-1.05, 1.1)
    ax.set_xlabel(r"decrease $-\langle G, \eta\rangle \,/\, \|P_W G\|_F$")
    ax.set_ylabel("directions")
    ax.legend(loc="upper left", fontsize=9)
    ax.text(0.02, 0.70, f"St({d}, {r}): tangent dim {found['tangent_dim']}", transform=ax.transAxes, fontsize=9)
    return {k: found[k] for k in ("best_sample", "step_ratio", "direction_error", "tangent_dim")}


# --------------------------------------------------------------------------------------------
# P2: scale invariance
# --------------------------------------------------------------------------------------------


def draw_scale_run(
    ax: Axes,
    log10_scale: float = 0.0,
    step_rule: str = "scale_free",
    eps: float = 0.0,
    steps: int = 50,
    lr: float = 0.05,
) -> dict:
    """Loss along a StiefelAdam run (default trust radius 0.5) on the quadratic test loss
    multiplied by ``c = 10**log10_scale``, drawn as ``loss / c`` so every scale shares one axis,
    against the run at ``c = 1`` (dashed). Returns the largest relative deviation of the frames
    from the ``c = 1`` run and the final losses.
    Chapters: p1_steepest_descent to p5_weight_decay."""
    run = curves.scale_run(log10_scale, step_rule, eps, steps, lr)
    loss, loss_ref = run["loss"], run["loss_reference"]
    t = np.arange(steps + 1)
    ax.plot(t, loss_ref, "--", color=COLORS["reference"], label="$c = 1$")
    ax.plot(
        t,
        loss,
        color=arm_color("stiefel" if step_rule == "scale_free" else "euclidean"),
        label=f"$c = 10^{{{log10_scale:g}}}$",
    )
    ax.set_xlabel("step")
    ax.set_ylabel("loss / c")
    ax.legend(loc="upper right", fontsize=9)
    return {"deviation": run["deviation"], "final_loss": float(loss[-1]), "final_loss_reference": float(loss_ref[-1])}


def _power_of_ten(x: float) -> str:
    """``0`` as "0", ``1e-08`` as ``$10^{-8}$`` (mathtext)."""
    return "0" if x == 0 else f"$10^{{{round(math.log10(x))}}}$"


def scale_invariance_figure(found: dict) -> Figure:
    """Left: how far one step moves the frames, against the gradient scale ``c``, for the
    scale-free rule (flat) and the fixed-step rule (slope 1, until the retraction saturates).
    Right: the largest relative deviation of a 50-step scale-free trajectory from the one at
    ``c = 1`` (exact zeros drawn at the floor), and the same with ``eps = 1e-8``. Each panel's
    legend sits under it. ``found``: :func:`stiefel_book.certify.curves.scale_invariance_curves`.
    Chapters: p1_steepest_descent to p5_weight_decay."""
    cs, free, fixed, deviations = found["scales"], found["scale_free"], found["fixed"], found["deviation"]
    under = dict(loc="upper center", bbox_to_anchor=(0.5, -0.22), fontsize=8, frameon=False, handlelength=1.8)
    with style():
        fig, (a, b) = plt.subplots(1, 2, figsize=figsize(1, 2, (4.4, 3.9)))
        a.loglog(cs, free, "o-", color=arm_color("stiefel"), label="scale free (lr 0.05)")
        a.loglog(cs, fixed, "s-", color=arm_color("euclidean"), label="fixed step (lr 1e-6, no cap)")
        a.loglog(cs, 1e-6 * cs * float(fixed[8] / (1e-6 * cs[8])), ":", color=COLORS["reference"], label="slope 1")
        a.set_xlabel("gradient scale $c$")
        a.set_ylabel(r"$\|W_1 - W_0\|_F$ after one step")
        a.legend(ncol=2, **under)
        for eps, marker, color in ((0.0, "o-", arm_color("stiefel")), (1e-8, "s-", arm_color("euclidean"))):
            b.loglog(
                cs,
                np.maximum(deviations[eps], FLOOR),
                marker,
                color=color,
                label=rf"$\varepsilon$ = {_power_of_ten(eps)}",
            )
        b.axhline(TOLERANCE, linestyle="--", color=COLORS["reference"], label=f"tolerance {_power_of_ten(TOLERANCE)}")
        b.set_xlabel("gradient scale $c$")
        b.set_ylabel(r"$\max_t \|W_t(c) - W_t(1)\| / \|W_t(1)\|$")
        b.legend(ncol=2, **under)
    return fig


# --------------------------------------------------------------------------------------------
# P3: conditioning
# --------------------------------------------------------------------------------------------


def draw_condition_history(
    ax: Axes, log10_lr: float = 0.0, trust_radius: float | None = 0.5, steps: int = 30, loss_ax: Axes | None = None
) -> dict:
    """The condition number of ``I + ξᵀξ`` at every step of a StiefelAdam run at
    ``lr = 10**log10_lr`` (max over 4 frames), with the bound ``1 + Δ²`` when there is a trust
    region; on ``loss_ax`` (if given) the run's loss after every step, which is what the
    learning rate changes most. Returns the run's maximum, the bound (``inf`` without a cap)
    and the loss per step.
    Chapters: p1_steepest_descent to p5_weight_decay."""
    history = condition_history(10.0**log10_lr, trust_radius, steps=steps)
    kappa = history["condition"].numpy()
    loss = history["loss"].numpy()
    bound = math.inf if trust_radius is None else 1 + trust_radius**2
    color = arm_color("stiefel" if trust_radius else "euclidean")
    ax.semilogy(np.arange(1, steps + 1), kappa, "o-", markersize=3, color=color, label=r"cond$(I + \xi^\top\xi)$")
    if trust_radius is not None:
        ax.axhline(bound, linestyle="--", color=COLORS["reference"], label=rf"$1 + \Delta^2 = {bound:g}$")
    ax.set_ylim(0.9, max(2.0, 1.5 * float(kappa.max())))
    ax.set_xlabel("step")
    ax.set_ylabel("condition number")
    ax.legend(loc="upper right", fontsize=9)
    if loss_ax is not None:
        loss_ax.plot(np.arange(steps + 1), loss, "o-", markersize=3, color=color)
        loss_ax.set_xlabel("step")
        loss_ax.set_ylabel("loss (test problem)")
    return {
        "max_condition": float(kappa.max()),
        "bound": bound,
        "max_step_norm": float(history["step_norm"].max()),
        "loss": [float(v) for v in loss],
        "final_loss": float(loss[-1]),
    }


def conditioning_figure(found: dict) -> Figure:
    """Left: the largest condition number of ``I + ξᵀξ`` over a 30-step run against ``lr`` for
    several trust radii (dashed: their bounds ``1 + Δ²``) and none. Right: the fixed-step rule
    against the gradient scale, with a trust radius of 0.5 and without. ``found``:
    :func:`stiefel_book.certify.curves.condition_curves`.
    Chapters: p1_steepest_descent to p5_weight_decay."""
    lrs, by_lr, scales, by_scale = found["lrs"], found["by_lr"], found["scales"], found["by_scale"]
    shades = {0.25: "#56B4E9", 0.5: COLORS["stiefel"], 1.0: "#004165", None: COLORS["euclidean"]}
    with style():
        fig, (a, b) = plt.subplots(1, 2, figsize=figsize(1, 2, (4.4, 3.4)))
        for radius, kappa in by_lr.items():
            label = "no trust region" if radius is None else rf"$\Delta = {radius:g}$"
            a.loglog(lrs, kappa, "o-", color=shades[radius], label=label)
            if radius is not None:
                a.axhline(1 + radius**2, linestyle="--", linewidth=1, color=shades[radius])
        a.set_xlabel("learning rate (scale-free rule)")
        a.set_ylabel(r"max cond$(I + \xi^\top\xi)$ over the run")
        a.legend(fontsize=9)
        for radius, kappa in by_scale.items():
            label = "no trust region" if radius is None else rf"$\Delta = {radius:g}$"
            b.loglog(scales, kappa, "o-", color=shades[radius], label=label)
        b.axhline(1.25, linestyle="--", linewidth=1, color=shades[0.5])
        b.set_xlabel("gradient scale $c$ (fixed-step rule, lr 0.05)")
        b.set_ylabel(r"max cond$(I + \xi^\top\xi)$ over the run")
        b.legend(fontsize=9)
    return fig


# --------------------------------------------------------------------------------------------
# P4: equivariance
# --------------------------------------------------------------------------------------------


def draw_equivariance(
    ax: Axes, second_moment: str = "frame", projector: str = "tangent", seed: int = 0, steps: int = 50
) -> dict:
    """Per step, ``‖W'_t - Q W_t‖ / ‖W_t‖`` for one Haar-random ``Q`` (chosen by ``seed``): ``W'``
    from ``(QW, QG_t)``, ``W`` from ``(W, G_t)``. Exact zeros are drawn at :data:`FLOOR`.
    Chapters: p1_steepest_descent to p5_weight_decay."""
    deviation = curves.equivariance_run(second_moment, projector, seed, steps)
    equivariant = second_moment == "frame"
    ax.semilogy(
        np.arange(steps + 1),
        np.maximum(deviation, FLOOR),
        "o-",
        markersize=3,
        color=arm_color("stiefel" if equivariant else "euclidean"),
    )
    ax.axhline(TOLERANCE, linestyle="--", color=COLORS["reference"], label="1e-12")
    ax.set_ylim(FLOOR / 2, 10.0)
    ax.set_xlabel("step")
    ax.set_ylabel(r"$\|W'_t - Q W_t\| / \|W_t\|$")
    ax.legend(loc="center right", fontsize=9)
    return {"max_deviation": float(deviation.max())}


def equivariance_sphere_figure(paths: dict) -> Figure:
    """On St(3, 1), the unit sphere: the three coordinates of ``Q w_t`` (lines; ``w_t`` the run
    from ``w``) and of the run from ``Qw`` on the rotated problem (dots). With one second
    moment per frame the dots sit on the lines; with a per-entry one they leave them. ``paths``:
    ``{second moment: stiefel_book.certify.curves.sphere_paths(second moment)}`` for ``"frame"`` and ``"entry"``.
    Chapters: p1_steepest_descent to p5_weight_decay."""
    colors = (COLORS["stiefel"], COLORS["highlight"], COLORS["tangent"])
    with style():
        fig, axes = plt.subplots(1, 2, figsize=figsize(1, 2, (4.4, 3.4)), sharey=True)
        for ax, moment, title in zip(
            axes, ("frame", "entry"), ("one second moment per frame", "per-entry second moment (Adam's)")
        ):
            rotated, expected = paths[moment]
            t = np.arange(len(expected))
            for i in range(3):
                ax.plot(t, expected[:, i], color=colors[i], linewidth=1.5, label=f"$(Q w_t)_{i + 1}$")
                ax.plot(
                    t,
                    rotated[:, i],
                    "o",
                    color=colors[i],
                    markersize=3,
                    markerfacecolor="none",
                    label=f"$(w'_t)_{i + 1}$",
                )
            ax.set_title(title)
            ax.set_xlabel("step")
        axes[0].set_ylabel("coordinate")
        fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=6, fontsize=9)
    return fig


# --------------------------------------------------------------------------------------------
# P5: weight decay
# --------------------------------------------------------------------------------------------


def draw_weight_decay(
    ax: Axes, weight_decay: float = 1.0, teacher_sharpness: float = 0.0, steps: int = 300, lr: float = 1e-2
) -> dict:
    """``‖W_Q‖_F`` while a tiny attention model trains with AdamW's decoupled ``weight_decay``
    (:func:`stiefel_book.certify.weight_decay_training_run`): the Euclidean arm and the
    Stiefel arm, with the orthonormal norm ``√(H r)`` dotted. Returns both final norms and
    losses (mean of the last 10 steps).
    Chapters: p1_steepest_descent to p5_weight_decay."""
    found = curves.weight_decay_runs(
        (("euclidean", weight_decay), ("stiefel", weight_decay)), teacher_sharpness, steps, lr
    )
    runs = {arm: run for (arm, _), run in found.items()}
    expected = runs["stiefel"]["orthonormal_norm"]
    for arm, run in runs.items():
        ax.plot(run["W_Q_norm"].numpy(), color=arm_color(arm), linewidth=2, label=f"{arm.capitalize()} $W_Q$")
    ax.axhline(expected, linestyle=":", color=COLORS["reference"], label=r"$\sqrt{H r}$")
    ax.set_ylim(0, max(3.2, 1.1 * max(float(r["W_Q_norm"].max()) for r in runs.values())))
    ax.set_xlabel("step")
    ax.set_ylabel(r"$\|W_Q\|_F$")
    ax.legend(loc="lower left", fontsize=9)
    return {
        arm: {"final_norm": float(run["W_Q_norm"][-1]), "final_loss": float(run["loss"][-10:].mean())}
        for arm, run in runs.items()
    } | {"orthonormal_norm": expected}


def weight_decay_figure(runs: dict) -> Figure:
    """Left: ``‖W_Q‖_F`` of the Euclidean arm with decay and without, and of the Stiefel arm with
    decay. Right: their training losses (log scale). ``runs``:
    :func:`stiefel_book.certify.curves.weight_decay_runs` (the Stiefel arm's decay drawn last).
    Chapters: p1_steepest_descent to p5_weight_decay."""
    stiefel = next(run for (arm, _), run in runs.items() if arm == "stiefel")
    with style():
        fig, (a, b) = plt.subplots(1, 2, figsize=figsize(1, 2, (4.4, 3.4)))
        for (arm, wd), run in runs.items():
            style_ = "-" if wd > 0 else "--"
            label = f"{arm.capitalize()}, weight decay {wd:g}"
            a.plot(run["W_Q_norm"].numpy(), style_, color=arm_color(arm), linewidth=2, label=label)
            b.semilogy(run["loss"].numpy(), style_, color=arm_color(arm), linewidth=1, label=label)
        a.axhline(
            stiefel["orthonormal_norm"],
            linestyle=":",
            color=COLORS["reference"],
            label=r"$\sqrt{H r}$",
        )
        a.set_xlabel("step")
        a.set_ylabel(r"$\|W_Q\|_F$")
        a.set_ylim(0, 3.2)
        a.legend(fontsize=9)
        b.set_xlabel("step")
        b.set_ylabel("training loss (MSE)")
    return fig


# --------------------------------------------------------------------------------------------
# The static counterparts of the explorers: a few settings side by side
# --------------------------------------------------------------------------------------------


def steepest_descent_grid(shapes=((3, 1), (8, 2), (16, 4), (64, 8))) -> Figure:
    """:func:`draw_decrease_samples` for a few shapes St(d, r). Chapters: p1_steepest_descent to p5_weight_decay."""
    return grid_figure(
        draw_decrease_samples, [dict(d=d, r=r) for d, r in shapes], label=lambda s: f"St({s['d']}, {s['r']})"
    )


def scale_grid(log10_scales=(-8.0, 0.0, 8.0), rules=("scale_free", "fixed")) -> Figure:
    """:func:`draw_scale_run` for a few gradient scales (columns) and both step rules (rows).
    Chapters: p1_steepest_descent to p5_weight_decay."""
    settings = [dict(log10_scale=k, step_rule=rule) for rule in rules for k in log10_scales]
    return grid_figure(
        draw_scale_run,
        settings,
        ncols=len(log10_scales),
        label=lambda s: f"{s['step_rule'].replace('_', '-')}, c = 1e{s['log10_scale']:+.0f}",
    )


def conditioning_grid(log10_lrs=(-2.0, 0.0), radii=(0.5, None)) -> Figure:
    """:func:`draw_condition_history` for a small and a large learning rate, with and without a cap.
    Chapters: p1_steepest_descent to p5_weight_decay."""
    settings = [dict(log10_lr=k, trust_radius=radius) for radius in radii for k in log10_lrs]

    def label(s):
        cap = "no trust region" if s["trust_radius"] is None else f"Δ = {s['trust_radius']:g}"
        return f"lr = {10 ** s['log10_lr']:g}, {cap}"

    return grid_figure(draw_condition_history, settings, ncols=len(log10_lrs) * len(radii), label=label)


def equivariance_grid() -> Figure:
    """:func:`draw_equivariance` for both second moments and both projectors.
    Chapters: p1_steepest_descent to p5_weight_decay."""
    settings = [dict(second_moment=m, projector=p) for p in ("tangent", "euclidean") for m in ("frame", "entry")]
    return grid_figure(
        draw_equivariance, settings, label=lambda s: f"v per {s['second_moment']}, {s['projector']} projector"
    )


def weight_decay_grid(settings=((0.0, 0.0), (1.0, 0.0), (1.0, 2.0))) -> Figure:
    """:func:`draw_weight_decay` for a few ``(weight_decay, teacher_sharpness)`` pairs.
    Chapters: p1_steepest_descent to p5_weight_decay."""
    return grid_figure(
        draw_weight_decay,
        [dict(weight_decay=w, teacher_sharpness=t) for w, t in settings],
        label=lambda s: f"weight decay {s['weight_decay']:g}, teacher sharpness {s['teacher_sharpness']:g}",
    )
