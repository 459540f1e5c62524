"""The grokking chapter's explorer: the learning rate of each arm on a run of a few seconds.

Each arm trains alone (:func:`arm_history`, kept per process), so moving one arm's slider
trains that arm only, and a static copy of the explorer (:mod:`stiefel_book.widgets.static`)
trains each arm once per learning rate, not once per pair."""

from __future__ import annotations

import functools

import matplotlib.pyplot as plt

from ..experiments.grokking import explore
from ..plots import figsize, style
from ..plots.grokking import LABELS, draw_explore
from . import Explorer, explorer, log_slider

__all__ = ["arm_history", "draw_step_sizes", "step_size_explorer"]


@functools.lru_cache(maxsize=256)
def arm_history(arm: str, lr: float) -> tuple[dict, ...]:
    """One arm's history on the explorer problem at ``lr``: :func:`~stiefel_book.experiments.grokking.explore`
    of that arm alone (the arms of a pair train independently, each from its own seed)."""
    return tuple(explore(lr, lr, arms=(arm,))[arm])


def draw_step_sizes(lr_baseline: float, lr_stiefel: float):
    """Train both arms at the given learning rates; a figure and a one-line readout."""
    histories = {
        "baseline": list(arm_history("baseline", lr_baseline)),
        "stiefel": list(arm_history("stiefel", lr_stiefel)),
    }
    with style():
        fig, ax = plt.subplots(figsize=figsize(1, 1, (5.0, 3.2)))
        draw_explore(ax, histories)
        ax.legend(loc="lower right")
    text = "final validation accuracy: " + ", ".join(
        f"{LABELS[arm]} {h[-1]['val_acc']:.2f}" for arm, h in histories.items()
    )
    return fig, text


def step_size_explorer() -> Explorer:
    return explorer(
        draw_step_sizes,
        lr_baseline=log_slider(-4, -1, 3e-3, "AdamW's learning rate"),
        lr_stiefel=log_slider(-4, -1, 3e-3, "Stiefel rule's learning rate"),
    )
