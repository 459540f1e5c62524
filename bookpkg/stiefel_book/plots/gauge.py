"""Figures of the gauge chapter.

Every number drawn here is computed by :mod:`stiefel_book.gauge` in float64 with fixed seeds.
``draw_orbit(ax, t, group)`` is the panel behind the chapter's widget
(:mod:`stiefel_book.widgets.gauge`); :func:`orbit_grid` lays a few of its settings side by side
for the static book.
"""

from __future__ import annotations

import functools

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from .. import gauge
from ..threads import one_thread
from . import COLORS, arm_color, figsize, grid_figure, style

__all__ = [
    "FLOOR",
    "T_MAX",
    "GROUP_LABELS",
    "orbit_losses",
    "draw_orbit",
    "orbit_grid",
    "gauge_components_figure",
    "projected_run_figure",
    "update_projection_figure",
    "moved_start_figure",
]

FLOOR = 1e-18  # exact zeros are drawn here on log axes
T_MAX = 2.0  # curves run over t in [-T_MAX, T_MAX]
GROUP_LABELS = {
    "orthogonal": "O(r) on St × St (the Stiefel model)",
    "gl": "GL(r), Euclidean (AdamW model)",
}


def _floor(x) -> np.ndarray:
    return np.maximum(np.asarray(x, dtype=float), FLOOR)


@functools.lru_cache(maxsize=4)
def _orbit_setup(group: str, seed: int):
    """The trained model (40 steps of its arm's optimizer), the data and the two curves."""
    with one_thread():
        model = gauge.trained_model(group == "orthogonal", steps=40)
    return model, gauge.GaugeProblem().data(), gauge.orbit_curves(model, group, seed=seed)


def _losses_at(group: str, seed: int, ts) -> dict[str, np.ndarray]:
    model, data, curves = _orbit_setup(group, seed)
    with one_thread():
        return {kind: gauge.loss_along(model, data, curves[kind], ts).numpy() for kind in ("gauge", "off")}


@functools.lru_cache(maxsize=8)
def _orbit_losses(group: str, seed: int, n: int) -> dict[str, np.ndarray]:
    model, data, _ = _orbit_setup(group, seed)
    ts = np.linspace(-T_MAX, T_MAX, n)
    with torch.no_grad(), one_thread():
        base = gauge.task_loss(model, data.train_x, data.train_y).item()
    return {"t": ts, "base": np.array(base), **_losses_at(group, seed, ts)}


def orbit_losses(group: str = "orthogonal", seed: int = 0, n: int = 81) -> dict[str, np.ndarray]:
    """The task loss along the two curves of :func:`stiefel_book.gauge.orbit_curves` (the gauge
    orbit, and the same motion of ``W_Q`` alone) through the problem's model after 40 training
    steps, at ``n`` values of ``t`` in ``[-T_MAX, T_MAX]``; and the loss at ``t = 0``. Remembered.
    Chapter: gauge."""
    gauge._check_group(group)
    return {k: v.copy() for k, v in _orbit_losses(group, int(seed), int(n)).items()}


def _curve_at(group: str, seed: int, t: float) -> tuple[float, float, float]:
    """Loss at ``t`` on the orbit and off it, and at ``t = 0``, computed afresh (not interpolated)."""
    at = _losses_at(group, seed, [t])
    return float(at["gauge"][0]), float(at["off"][0]), float(orbit_losses(group, seed)["base"])


def draw_orbit(ax: Axes, t: float = 1.0, group: str = "orthogonal", seed: int = 0) -> dict:
    """The loss along a gauge orbit through a trained model (flat) and along a curve that moves
    ``W_Q`` the same way but leaves ``W_K`` alone (not a symmetry), with both points at ``t``
    marked (gids ``"current_gauge"`` and ``"current_off"``). Returns the two losses at ``t``,
    the loss at ``t = 0`` and the relative changes.
    Chapter: gauge."""
    curves = orbit_losses(group, seed)
    on, off, base = _curve_at(group, seed, float(t))
    color = arm_color("stiefel" if group == "orthogonal" else "euclidean")
    ax.plot(curves["t"], curves["off"], color=COLORS["reference"], linestyle="--", label=r"off the orbit: $W_Q$ alone")
    ax.plot(curves["t"], curves["gauge"], color=color, linewidth=2.2, label="along the gauge orbit")
    ax.plot([t], [off], "o", color=COLORS["reference"], markersize=7, gid="current_off")
    ax.plot([t], [on], "o", color=COLORS["highlight"], markersize=8, gid="current_gauge")
    ax.axvline(t, color=COLORS["highlight"], linewidth=0.8, alpha=0.6)
    ax.set_xlabel("$t$ along the curve")
    ax.set_ylabel("training loss")
    ax.set_xlim(-T_MAX, T_MAX)
    ax.legend(loc="upper center", fontsize=9)
    return {
        "t": float(t),
        "loss_gauge": on,
        "loss_off": off,
        "loss_start": base,
        "change_gauge": abs(on - base) / abs(base),
        "change_off": abs(off - base) / abs(base),
        "group": group,
    }


def orbit_grid(ts=(0.5, 1.5), groups=gauge.GROUPS) -> Figure:
    """The static counterpart of the orbit widget: one panel per ``(group, t)``. Chapter: gauge."""
    settings = [{"group": g, "t": float(t)} for g in groups for t in ts]

    def label(setting: dict) -> str:
        name = "O(r), Stiefel" if setting["group"] == "orthogonal" else "GL(r), Euclidean"
        return f"{name}: t = {setting['t']:g}"

    return grid_figure(draw_orbit, settings, ncols=len(ts), label=label, panel=(4.0, 3.2))


def gauge_components_figure(components: dict) -> Figure:
    """Every relative gauge component of the gradient checked by the certificate (one dot per head
    and point; exact zeros at :data:`FLOOR`), by kind of point, against the 1e-12 threshold; and the
    same for the loss with a ``W_Q``-only term (:func:`stiefel_book.gauge.query_penalty`).
    ``components``: :func:`stiefel_book.gauge.gradient_components`' output.
    Chapter: gauge."""
    components, control = components["found"], components["control"]
    # three short lines a group, so that seven groups fit side by side in the column
    rows = [
        ("Stiefel, O(r)\nrandom\npoints", components["stiefel_random"], "stiefel"),
        ("Stiefel, O(r)\nStiefel rule\nrun", components["stiefel_run"], "stiefel"),
        ("Stiefel\nmodel, GL(r)\nEucl. grad.", components["stiefel_gl"], "stiefel"),
        ("Euclidean\nGL(r), random\npoints", components["euclidean_random"], "euclidean"),
        ("Euclidean\nGL(r)\nAdamW run", components["euclidean_run"], "euclidean"),
        ("control\nStiefel, O(r)\n+ ⟨B, W_Q⟩", control["stiefel_random"], "stiefel"),
        ("control\nEucl., GL(r)\n+ ⟨B, W_Q⟩", control["euclidean_random"], "euclidean"),
    ]
    rng = np.random.default_rng(0)
    with style():
        fig, ax = plt.subplots(figsize=figsize(1, 1, (6.9, 3.4)))
        for k, (name, values, arm) in enumerate(rows):
            v = _floor(values.reshape(-1).numpy())
            x = k + rng.uniform(-0.18, 0.18, size=v.shape)
            marker = "x" if name.startswith("control") else "o"
            ax.semilogy(x, v, marker, color=arm_color(arm), markersize=4, alpha=0.8, linestyle="none")
        ax.axhline(gauge.TOLERANCE, color=COLORS["reference"], linestyle="--", label="1e-12: the certificate's bar")
        ax.axhline(np.finfo(float).eps, color=COLORS["reference"], linestyle=":", label="float64 machine epsilon")
        ax.set_xticks(range(len(rows)), [name for name, _, _ in rows], fontsize=8)
        ax.set_ylabel(r"$\|P_{\mathrm{gauge}}\, g\| \,/\, \|g\|$ per head")
        ax.set_ylim(FLOOR / 3, 10)
        ax.legend(loc="center left", fontsize=9)
    return fig


def projected_run_figure(runs: dict) -> Figure:
    """Left and middle: per step, the largest parameter deviation and the loss deviation between
    the run with gauge directions removed from every gradient and the plain run (exact zeros at
    :data:`FLOOR`), for each arm, with 1e-10 and the level of float64 rounding. Right: the two
    arms' loss curves, plain (lines) and projected (dots), which coincide. One legend, under the
    panels. ``runs``: :func:`stiefel_book.gauge.projected_runs`' output.
    Chapter: gauge."""
    steps = runs["setting"]["steps"]
    runs = {arm: runs[arm]["gradient"] for arm in ("stiefel", "euclidean")}
    step = np.arange(steps + 1)
    names = {"stiefel": "the Stiefel rule", "euclidean": "AdamW"}
    with style():
        fig, axes = plt.subplots(1, 3, figsize=figsize(1, 1, (6.9, 3.2)))
        for ax, key, ylabel in (
            (axes[0], "params", r"$\max_i |\theta_i^{\mathrm{proj}} - \theta_i^{\mathrm{plain}}|$"),
            (axes[1], "loss", r"$|L^{\mathrm{proj}} - L^{\mathrm{plain}}|$"),
        ):
            for arm, run in runs.items():
                ax.semilogy(step, _floor(run[key].numpy()), ".-", markersize=3, color=arm_color(arm), label=names[arm])
            ax.axhline(gauge.RUN_TOLERANCE, color=COLORS["reference"], linestyle="--", label="1e-10")
            ax.axhline(np.finfo(float).eps / 2, color=COLORS["reference"], linestyle=":", label="unit roundoff")
            ax.set_ylim(FLOOR / 3, 1e-6)
            ax.set_xlabel("step")
            ax.set_ylabel(ylabel)
        axes[0].set_title("parameters")
        axes[1].set_title("loss")
        for arm, run in runs.items():
            plain, projected = run["plain_loss"].numpy(), run["projected_loss"].numpy()
            axes[2].semilogy(step, plain, color=arm_color(arm))
            axes[2].semilogy(step[::4], projected[::4], "o", markersize=3, color=arm_color(arm), markerfacecolor="none")
        axes[2].set_xlabel("step")
        axes[2].set_ylabel("training loss")
        axes[2].set_title("the runs")
        handles, labels = axes[0].get_legend_handles_labels()
        handles += [
            Line2D([], [], color="black", lw=1.5),
            Line2D([], [], color="black", marker="o", markersize=3, markerfacecolor="none", linestyle="none"),
        ]
        labels += ["right: plain run", "right: gradients projected"]
        fig.legend(handles, labels, loc="outside lower center", ncol=3, fontsize=8)
    return fig


def update_projection_figure(runs: dict) -> Figure:
    """Left: the gauge component of every step the optimizers take on the plain runs, relative
    to the step. Right: how far the loss drifts from the plain run when the gauge part is removed
    from the *steps* instead of the gradients (solid), against the gradient projection (dotted).
    One legend, under the panels. ``runs``: :func:`stiefel_book.gauge.projected_runs`' output.
    Chapter: gauge."""
    steps = runs["setting"]["steps"]
    grad, upd = ({arm: runs[arm][remove] for arm in ("stiefel", "euclidean")} for remove in ("gradient", "update"))
    names = {"stiefel": "the Stiefel rule", "euclidean": "AdamW"}
    with style():
        fig, (a, b) = plt.subplots(1, 2, figsize=figsize(1, 2, (4.6, 3.6)))
        for arm in ("stiefel", "euclidean"):
            a.plot(np.arange(steps), grad[arm]["update_component"].numpy(), color=arm_color(arm), label=names[arm])
            b.semilogy(np.arange(steps + 1), _floor(upd[arm]["loss"].numpy()), color=arm_color(arm))
            b.semilogy(np.arange(steps + 1), _floor(grad[arm]["loss"].numpy()), ":", color=arm_color(arm))
        a.set_ylim(0, 1)
        a.set_xlabel("step")
        a.set_ylabel("gauge part of the step taken\n" r"$\|P_{\mathrm{gauge}}\, \xi\| \,/\, \|\xi\|$")
        b.set_xlabel("step")
        b.set_ylabel(r"$|L - L^{\mathrm{plain}}|$")
        b.set_ylim(FLOOR / 3, 1)
        handles, labels = a.get_legend_handles_labels()
        handles += [Line2D([], [], color="black"), Line2D([], [], color="black", linestyle=":")]
        labels += ["right: steps projected", "right: gradients projected"]
        fig.legend(handles, labels, loc="outside lower center", ncol=4, fontsize=8)
    return fig


def moved_start_figure(runs: dict) -> Figure:
    """Per step, the loss deviation between a run started from a point moved along its gauge orbit
    and the run from the point itself (exact zeros at :data:`FLOOR`): the Stiefel rule from
    ``(W_Q R, W_K R)``, AdamW from ``(W_Q R, W_K R)`` and from ``(W_Q A, W_K A⁻ᵀ)``; one line per random
    draw. One legend, under the axes (inside, it covered AdamW's late curve and the 1e-10 line).
    ``runs``: :func:`stiefel_book.gauge.moved_start_runs`' output.
    Chapter: gauge."""
    draws = len(runs["stiefel"])
    each = f" ({draws} draws)" if draws > 1 else ""
    cases = [
        ("stiefel", "stiefel", "-", f"the Stiefel rule from $(W_Q R, W_K R)${each}"),
        ("euclidean", "euclidean", "-", f"AdamW from $(W_Q R, W_K R)${each}"),
        ("euclidean_gl", "euclidean", ":", rf"AdamW from $(W_Q A, W_K A^{{-\top}})${each}"),
    ]
    steps = runs["setting"]["steps"]
    with style():
        fig, ax = plt.subplots(figsize=(6.4, 3.9))
        for name, arm, line, label in cases:
            for k, run in enumerate(runs[name]):
                ax.semilogy(
                    np.arange(steps + 1),
                    _floor(run["loss"].numpy()),
                    line,
                    color=arm_color(arm),
                    label=label if k == 0 else None,
                )
        ax.axhline(gauge.RUN_TOLERANCE, color=COLORS["reference"], linestyle="--", label="1e-10")
        ax.set_ylim(FLOOR / 3, 1)
        ax.set_xlabel("step")
        ax.set_ylabel(r"$|L'_t - L_t|$, moved start vs. original")
        fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncol=2, fontsize=8)
    return fig
