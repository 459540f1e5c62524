"""Figures of the routing chapter: learning curves per arm with bands, and one cell of the lr x
decay explorer. They draw what they are handed (:mod:`stiefel_book.findings.routing`)."""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..labels import label
from . import ARM_COLORS, figsize, rates, style

__all__ = ["color", "learning_curves", "seed_curves", "draw_cell", "sweep_figure"]

ORDER = ("baseline", "stiefel", "frozen", "no_decay_qk", "qk_norm", "qk_norm_tuned", "muon", "manifold_muon")
MARKERS = {
    "baseline": "s",
    "stiefel": "o",
    "no_decay_qk": "X",
    "qk_norm": "*",
    "qk_norm_tuned": "v",
    "muon": "D",
    "manifold_muon": "P",
}


def color(arm: str) -> str:
    """The arm's colour of the book (Muon, which has none there, olive)."""
    return ARM_COLORS.get(arm, "#999933")


def learning_curves(panels: dict[str, tuple[dict, str]]) -> Figure:
    """One panel per task, side by side (``{title: (curves, metric label)}``, ``curves`` as
    ``findings.routing.curves`` gives them): each arm's mean over seeds, its band the smallest
    to the largest seed; one legend under the panels."""
    with style():
        width, height = figsize(1, len(panels), (2.3, 2.3))
        fig, axes = plt.subplots(1, len(panels), figsize=(width, height + 0.7), squeeze=False, layout="constrained")
        for ax, (title, (curves, ylabel)) in zip(axes[0], panels.items()):
            for arm in sorted(curves, key=lambda a: ORDER.index(a) if a in ORDER else len(ORDER)):
                c = curves[arm]
                ax.plot(c["steps"], c["mean"], color=color(arm), lw=1.4, label=label(arm))
                ax.fill_between(c["steps"], c["low"], c["high"], color=color(arm), alpha=0.15, lw=0)
            n = sorted({c["n"] for c in curves.values()})
            ax.set_title(f"{title}\n({'-'.join(map(str, n))} seed{'s' if n[-1] > 1 else ''} an arm)", fontsize=9)
            ax.set_ylabel(ylabel, fontsize=8)
            ax.set_xlabel("training step", fontsize=8)
            ax.tick_params(labelsize=7)
        handles, labels = axes[0, 0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncol=3, fontsize=7, frameon=False)
    return fig


def seed_curves(curves: dict, ylabel: str, title: str) -> Figure:
    """One small panel per arm (``curves`` as ``findings.routing.curves`` gives them): every seed's
    curve thin, their mean bold; the axes shared, so the panels compare at a glance."""
    arms = sorted(curves, key=lambda a: ORDER.index(a) if a in ORDER else len(ORDER))
    ncols = 3
    nrows = -(-len(arms) // ncols)
    with style():
        fig, axes = plt.subplots(
            nrows, ncols, figsize=figsize(nrows, ncols, (2.3, 1.9)), sharex=True, sharey=True, squeeze=False
        )
        for ax, arm in zip(axes.flat, arms):
            c = curves[arm]
            for values in c["seeds"]:
                ax.plot(c["steps"], values, color=color(arm), lw=0.8, alpha=0.45)
            ax.plot(c["steps"], c["mean"], color=color(arm), lw=2.0)
            ax.set_title(f"{label(arm)} ({c['n']})", fontsize=8)
        for ax in axes.flat[len(arms) :]:
            ax.set_visible(False)
        for ax in axes[:, 0]:
            ax.set_ylabel(ylabel, fontsize=8)
        for ax in axes[-1, :]:
            ax.set_xlabel("training step", fontsize=8)
        fig.suptitle(title, fontsize=10)
    return fig


def draw_cell(ax: Axes, cell: dict[str, list[tuple[list, list]]], ylabel: str, title: str) -> None:
    """Every seed's curve of every arm at one (lr, λ) cell: one thin line a seed, one colour an arm."""
    for arm in sorted(cell, key=lambda a: ORDER.index(a) if a in ORDER else len(ORDER)):
        for i, (steps, values) in enumerate(cell[arm]):
            ax.plot(steps, values, color=color(arm), lw=1, alpha=0.8, label=label(arm) if i == 0 else None)
    ax.set_xlabel("training step")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if cell:
        ax.legend(loc="best", fontsize=8)
    else:
        ax.text(0.5, 0.5, "no run at this cell", ha="center", va="center", transform=ax.transAxes)


def sweep_figure(panels: dict[str, tuple[list[dict], str, float]]) -> Figure:
    """One panel per task (``{title: (rows, score label, factor)}``, ``rows`` as
    ``findings.routing.sweep_rows`` gives them, each score times ``factor``): each swept arm's
    score against its W_Q, W_K lr, the chosen lr circled; one legend under the panels."""
    with style():
        panel = (5.6, 3.0) if len(panels) == 1 else (2.3, 2.6)
        width, height = figsize(1, len(panels), panel)
        fig, axes = plt.subplots(1, len(panels), figsize=(width, height + 0.7), squeeze=False, layout="constrained")
        for ax, (title, (rows, ylabel, factor)) in zip(axes[0], panels.items()):
            where = rates.position(lr for row in rows for lr in row["scores"])
            for row in rows:
                scores = {lr: factor * v for lr, v in row["scores"].items()}
                on_top = 3 if row["arm"] == "stiefel" else 2
                marker = MARKERS.get(row["arm"], "o")
                look = dict(color=color(row["arm"]), marker=marker, ms=4, zorder=on_top)
                rates.draw_ladder(ax, scores, where, lw=1.2, label=label(row["arm"]), **look)
                if row["chosen"] is not None:
                    chosen = row["chosen"]
                    ax.scatter(
                        [where[chosen]],
                        [scores[chosen]],
                        s=110,
                        facecolors="none",
                        edgecolors=color(row["arm"]),
                        lw=1.5,
                    )
            rates.set_rate_ticks(ax, where, fontsize=7)
            ax.set_xlabel("lr of W_Q, W_K", fontsize=8)
            ax.set_ylabel(ylabel, fontsize=8)
            ax.tick_params(axis="y", labelsize=7)
            ax.set_title(title, fontsize=9)
        handles, labels = axes[0, 0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncol=3, fontsize=7, frameon=False)
    return fig
