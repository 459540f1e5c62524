"""Figures of the grokking chapter: curves over seeds, the collapse window, the step-size grid."""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from . import arm_color, figsize, style

__all__ = ["accuracy_curves", "collapse_window", "draw_explore"]

LABELS = {"baseline": "AdamW baseline", "stiefel": "Stiefel W_Q, W_K"}


def _series(history: list[dict], key: str) -> tuple[list[int], list[float]]:
    return [r["epoch"] for r in history], [r[key] for r in history]


def accuracy_curves(runs: dict[str, dict], title: str = "") -> Figure:
    """Train (dashed) and validation (solid) accuracy of every baseline and Stiefel run. Chapter: grokking."""
    with style():
        fig, axes = plt.subplots(1, 2, figsize=figsize(1, 2, (4.6, 3.2)), sharey=True)
        runs = {
            key: run for key, run in runs.items() if key.split("/")[0] in LABELS
        }  # the two arms; controls have their own chapter
        for key, run in sorted(runs.items()):
            arm = key.split("/")[0]
            ax = axes[0] if arm == "baseline" else axes[1]
            ax.plot(*_series(run["history"], "val_acc"), color=arm_color(arm), lw=1, alpha=0.8)
            ax.plot(*_series(run["history"], "train_acc"), color=arm_color(arm), lw=0.8, ls="--", alpha=0.5)
        for ax, arm in zip(axes, ("baseline", "stiefel")):
            ax.set_title(f"{LABELS[arm]} ({sum(k.startswith(arm) for k in runs)} runs)")
            ax.set_xlabel("epoch")
        axes[0].set_ylabel("accuracy (solid: validation, dashed: train)")
        if title:
            fig.suptitle(title)
    return fig


def collapse_window(baseline: list[dict], stiefel: list[dict], start: int, stop: int) -> Figure:
    """Over epochs ``[start, stop]``: training loss, total weight norm and validation accuracy
    of both arms, beside the frames' geometry (principal angle to initialisation, step size).
    Chapter: grokking."""
    window = {
        arm: [r for r in h if start <= r["epoch"] <= stop] for arm, h in (("baseline", baseline), ("stiefel", stiefel))
    }
    panels = [  # row by row: the model on the left, the frames on the right
        ("train_loss", "training loss", True),
        ("angle_mean/W_Q", "W_Q: angle to init (deg)", False),
        ("norm/total", "weight norm (all parameters)", False),
        ("step/W_Q", "W_Q: ‖ΔW‖ of one step", True),
        ("val_acc", "validation accuracy", False),
        ("norm/attn.W_Q", "‖W_Q‖_F", False),
    ]
    with style():
        fig, axes = plt.subplots(3, 2, figsize=figsize(3, 2, (3.4, 2.2)), sharex=True)
        for ax, (key, label, log) in zip(axes.flat, panels):
            for arm, history in window.items():
                if history and key in history[0]:
                    ax.plot(*_series(history, key), color=arm_color(arm), lw=1, label=LABELS[arm])
            ax.set_title(label)
            if log:
                ax.set_yscale("log")
        for ax in axes[-1]:
            ax.set_xlabel("epoch")
        axes[0, 0].legend(loc="best")
    return fig


def draw_explore(ax: Axes, histories: dict[str, list[dict]]) -> None:
    """One panel of the step-size explorer: validation (solid) and train (dashed) accuracy. Chapter: grokking."""
    for arm, history in histories.items():
        ax.plot(*_series(history, "val_acc"), color=arm_color(arm), label=LABELS[arm])
        ax.plot(*_series(history, "train_acc"), color=arm_color(arm), ls="--", alpha=0.6)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("epoch")
    ax.set_ylabel("accuracy")
