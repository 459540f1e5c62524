"""Figures of the ablation chapter: the paired differences of every variant, per task, and the
explorer's panel (the full rule against one variant on a run of seconds)."""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from . import ARM_COLORS, COLORS, figsize, style
from .cifar10 import ARM_LABELS

__all__ = ["differences_figure", "draw_variant"]


def differences_figure(tables: dict[str, list[dict]], title: str = "") -> Figure:
    """One panel per task (``{task: ablation_rows(...)}``): for each arm, the paired difference
    full rule − arm with its 95 % interval. Right of zero: the removed part was worth accuracy.
    Chapter: ablation."""
    with style():
        fig, axes = plt.subplots(1, len(tables), figsize=figsize(1, len(tables), (4.4, 3.0)), squeeze=False)
        for ax, (task, rows) in zip(axes[0], tables.items()):
            rows = [r for r in rows if r["full_minus_arm"] is not None]
            for y, r in enumerate(rows):
                c = r["full_minus_arm"]
                ax.errorbar(
                    [c.mean_difference],
                    [y],
                    xerr=[[c.mean_difference - c.ci_low], [c.ci_high - c.mean_difference]],
                    fmt="o",
                    color=ARM_COLORS[r["arm"]],
                    capsize=3,
                )
            ax.axvline(0, color=COLORS["reference"], lw=1)
            ax.set_yticks(range(len(rows)), [f"− {ARM_LABELS[r['arm']]}" for r in rows], fontsize=9)
            ax.invert_yaxis()
            n = rows[0]["full_minus_arm"].n if rows else 0
            ax.set_title(f"{task} ({n} paired starts)")
            ax.set_xlabel("full rule − arm (pp), 95% CI")
        if title:
            fig.suptitle(title)
    return fig


def draw_variant(ax: Axes, histories: dict[str, list[dict]]) -> None:
    """One panel of the variant explorer: validation (solid) and train (dashed) accuracy. Chapter: ablation."""
    for arm, history in histories.items():
        epochs = [r["epoch"] for r in history]
        ax.plot(epochs, [r["val_acc"] for r in history], color=ARM_COLORS[arm], label=ARM_LABELS[arm])
        ax.plot(epochs, [r["train_acc"] for r in history], color=ARM_COLORS[arm], ls="--", alpha=0.6)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("epoch")
    ax.set_ylabel("accuracy (solid: validation, dashed: train)", fontsize=9)
    ax.legend(loc="lower right", fontsize=9)
