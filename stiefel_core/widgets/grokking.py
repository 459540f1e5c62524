"""The grokking chapter's explorer: the learning rate of each arm on a run of a few seconds."""

from __future__ import annotations

import matplotlib.pyplot as plt

from ..experiments.grokking import explore
from ..plots import figsize, style
from ..plots.grokking import draw_explore
from . import Explorer, explorer, log_slider

__all__ = ["draw_step_sizes", "step_size_explorer"]


def draw_step_sizes(lr_baseline: float, lr_stiefel: float):
    """Train both arms at the given learning rates; a figure and a one-line readout."""
    histories = explore(lr_baseline, lr_stiefel)
    with style():
        fig, ax = plt.subplots(figsize=figsize(1, 1, (5.0, 3.2)))
        draw_explore(ax, histories)
        ax.legend(loc="lower right")
    text = "final validation accuracy: " + ", ".join(f"{arm} {h[-1]['val_acc']:.2f}" for arm, h in histories.items())
    return fig, text


def step_size_explorer() -> Explorer:
    return explorer(
        draw_step_sizes,
        lr_baseline=log_slider(-4, -1, 3e-3, "lr AdamW"),
        lr_stiefel=log_slider(-4, -1, 3e-3, "lr Stiefel"),
    )
