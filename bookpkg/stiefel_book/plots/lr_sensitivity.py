"""Figures of the tuning budget (issue 49): each arm's final loss, and its largest attention logit,
against the model's learning rate over the declared ladder. They draw what they are handed: per
task, ``{arm: {lr: {seed: value}}}`` (:func:`stiefel_book.findings.lr_sensitivity.scores` and
:func:`~stiefel_book.findings.lr_sensitivity.logit_peaks` give it)."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from ..labels import label
from . import figsize, style
from .routing import MARKERS, ORDER, color

__all__ = ["against_rate"]


def _ordered(arms):
    return sorted(arms, key=lambda a: ORDER.index(a) if a in ORDER else len(ORDER))


def against_rate(
    panels: dict[str, dict], ylabel: str, *, log_y: bool = False, xlabel: str = "the model's learning rate"
) -> Figure:
    """One panel a task (``{title: {arm: {lr: {seed: value}}}}``), side by side: each arm's mean over
    its seeds at every rung, as a line with markers, its band the smallest to the largest seed. A
    rung with a non-finite value draws no point. One legend under the panels, naming every arm of any panel.
    The x axis is logarithmic; a grid that holds 0 (the weight decay) is drawn on a symmetric log axis,
    linear below its smallest positive value, so that 0 has a place."""
    with style():
        width, height = figsize(1, len(panels), (3.4, 2.6))
        fig, axes = plt.subplots(1, len(panels), figsize=(width, height + 0.5), squeeze=False, layout="constrained")
        for ax, (title, arms) in zip(axes[0], panels.items()):
            for arm in _ordered(arms):
                rungs = sorted(arms[arm])
                values = [[v for v in arms[arm][lr].values() if math.isfinite(v)] for lr in rungs]
                keep = [i for i, v in enumerate(values) if v]
                x = [rungs[i] for i in keep]
                mean = [float(np.mean(values[i])) for i in keep]
                ax.plot(x, mean, color=color(arm), lw=1.4, marker=MARKERS.get(arm, "o"), ms=4, label=label(arm))
                low = [min(values[i]) for i in keep]
                high = [max(values[i]) for i in keep]
                ax.fill_between(x, low, high, color=color(arm), alpha=0.15, lw=0)
            values = sorted({x for arm in arms.values() for x in arm})
            if values and values[0] <= 0:
                smallest = min(x for x in values if x > 0)
                ax.set_xscale("symlog", linthresh=smallest, linscale=0.5)
                ax.set_xticks(values, [f"{x:g}" for x in values])
            else:
                ax.set_xscale("log")
            if log_y:
                ax.set_yscale("log")
            ax.set_title(title, fontsize=9)
            ax.set_xlabel(xlabel, fontsize=8)
            ax.set_ylabel(ylabel, fontsize=8)
            ax.tick_params(labelsize=7)
        legend = {}  # every arm of any panel, once (an arm may be in one panel only)
        for ax in axes[0]:
            for handle, name in zip(*ax.get_legend_handles_labels()):
                legend.setdefault(name, handle)
        fig.legend(list(legend.values()), list(legend), loc="outside lower center", ncol=4, fontsize=7, frameon=False)
    return fig
