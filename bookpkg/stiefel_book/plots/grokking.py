"""Figures of the grokking chapter: curves over seeds, the collapse window, the step-size grid."""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ..labels import label
from . import COLORS, arm_color, figsize, style

__all__ = ["LABELS", "accuracy_curves", "collapse_window", "draw_explore"]

LABELS = {arm: label(arm) for arm in ("baseline", "stiefel")}  # "AdamW", "the Stiefel rule"


def _series(history: list[dict], key: str) -> tuple[list[int], list[float]]:
    return [r["epoch"] for r in history], [r[key] for r in history]


def _runs(n: int) -> str:
    return f"{n} run" if n == 1 else f"{n} runs"


def accuracy_curves(runs: dict[str, dict], title: str = "") -> Figure:
    """Train (dashed) and validation (solid) accuracy of every baseline and Stiefel run, one panel
    per arm titled with its number of runs; one legend, for the two line styles, under the panels.
    Chapter: grokking."""
    with style():
        fig, axes = plt.subplots(1, 2, figsize=figsize(1, 2, (3.45, 2.9)), sharey=True)
        runs = {
            key: run for key, run in runs.items() if key.split("/")[0] in LABELS
        }  # the two arms; controls have their own chapter
        for key, run in sorted(runs.items()):
            arm = key.split("/")[0]
            ax = axes[0] if arm == "baseline" else axes[1]
            ax.plot(*_series(run["history"], "val_acc"), color=arm_color(arm), lw=1, alpha=0.8)
            ax.plot(*_series(run["history"], "train_acc"), color=arm_color(arm), lw=0.8, ls="--", alpha=0.5)
        for ax, arm in zip(axes, ("baseline", "stiefel")):
            ax.set_title(f"{LABELS[arm]} ({_runs(sum(k.split('/')[0] == arm for k in runs))})")
            ax.set_xlabel("epoch")
        axes[0].set_ylabel("accuracy")
        styles = [
            Line2D([], [], color=COLORS["reference"], lw=1, label="validation accuracy"),
            Line2D([], [], color=COLORS["reference"], lw=0.8, ls="--", label="training accuracy"),
        ]
        fig.legend(handles=styles, loc="outside lower center", ncol=2, fontsize=9)
        if title:
            fig.suptitle(title)
    return fig


def collapse_window(baseline: list[dict], stiefel: list[dict], start: int, stop: int) -> Figure:
    """Over epochs ``[start, stop]``, both arms: training loss, total weight norm and validation
    accuracy (the model, top row), beside the frames' geometry (bottom row: W_Q's principal angle
    to its initialisation, its step size and its norm). One legend, under the panels.
    Chapter: grokking."""
    window = {
        arm: [r for r in h if start <= r["epoch"] <= stop] for arm, h in (("baseline", baseline), ("stiefel", stiefel))
    }
    panels = [  # row by row: the model on top, the frames below
        ("train_loss", "training loss", True),
        ("norm/total", "weight norm, all parameters", False),
        ("val_acc", "validation accuracy", False),
        ("angle_mean/W_Q", "$W_Q$: angle to its start (°)", False),
        ("step/W_Q", r"$W_Q$: size of a step, $\|\Delta W\|_F$", True),
        ("norm/attn.W_Q", r"$W_Q$: norm, $\|W_Q\|_F$", False),
    ]
    with style():
        fig, axes = plt.subplots(2, 3, figsize=figsize(2, 3, (2.3, 1.9)), sharex=True)
        for ax, (key, title, log) in zip(axes.flat, panels):
            for arm, history in window.items():
                if history and key in history[0]:
                    ax.plot(*_series(history, key), color=arm_color(arm), lw=1, label=LABELS[arm])
            ax.set_title(title, fontsize=9)
            if log:
                ax.set_yscale("log")
        for ax in axes[-1]:
            ax.set_xlabel("epoch")
            ax.xaxis.get_major_locator().set_params(nbins=4)
        handles = [Line2D([], [], color=arm_color(arm), lw=1.5, label=LABELS[arm]) for arm in window]
        fig.legend(handles=handles, loc="outside lower center", ncol=2, fontsize=9)
    return fig


def draw_explore(ax: Axes, histories: dict[str, list[dict]]) -> None:
    """One panel of the step-size explorer: validation (solid) and train (dashed) accuracy. Chapter: grokking."""
    for arm, history in histories.items():
        ax.plot(*_series(history, "val_acc"), color=arm_color(arm), label=LABELS[arm])
        ax.plot(*_series(history, "train_acc"), color=arm_color(arm), ls="--", alpha=0.6)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("epoch")
    ax.set_ylabel("accuracy")
