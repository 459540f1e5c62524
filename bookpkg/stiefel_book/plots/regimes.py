"""Figures of the regimes chapter: paired gains over training time, time-to-threshold curves,
the decay map, and one cell of it. Each draws only what it is handed (findings' outputs)."""

from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..labels import ARMS
from . import ARM_COLORS, COLORS, figsize, style, survival_steps

__all__ = ["ARM_COLORS", "ARM_LABELS", "gain_curves", "survival_curves", "decay_map_figure", "draw_cell"]

ARM_LABELS = {arm: text[:1].upper() + text[1:] for arm, text in ARMS.items()}  # labels.py, capitalised for legends


def gain_curves(
    gains: dict[str, list[dict]], title: str = "", ylabel: str = "Stiefel − arm, validation accuracy (pp)"
) -> Figure:
    """One line per compared arm: the mean paired gain over epochs with its 95 % band
    (``gains[arm]`` is :func:`findings.regimes.gain_over_time`'s list); the legend under the panel.
    Chapter: regimes."""
    with style():
        fig, ax = plt.subplots(figsize=figsize(1, 1, (6.9, 3.8)))
        for arm, series in gains.items():
            if not series:
                continue
            epochs = [g["epoch"] for g in series]
            mean = np.array([g["comparison"].mean_difference for g in series])
            low, high = (np.array([getattr(g["comparison"], k) for g in series]) for k in ("ci_low", "ci_high"))
            color = ARM_COLORS.get(arm, COLORS["reference"])
            ax.plot(
                epochs,
                mean,
                color=color,
                lw=1.5,
                label=f"− {ARM_LABELS.get(arm, arm)} (n = {series[0]['comparison'].n})",
            )
            ax.fill_between(epochs, low, high, color=color, alpha=0.18, lw=0)
        ax.axhline(0, color=COLORS["reference"], lw=0.8)
        ax.set_xlabel("epoch")
        ax.set_ylabel(ylabel)
        if title:
            ax.set_title(title)
        # under the panel: the bands fill the axes from top to bottom, so no corner is free
        fig.legend(loc="outside lower center", ncol=2, fontsize=8)
    return fig


def survival_curves(panels: dict[str, list], title: str = "") -> Figure:
    """Kaplan-Meier curves, one panel per task: ``panels[name]`` is a list of
    :class:`findings.regimes.Survival`; a run that never reaches the threshold is a censored
    tick at its last epoch. Each panel's legend sits under it, within the column's width.
    Chapter: regimes."""
    with style():
        n = len(panels)
        fig, axes = plt.subplots(n, 1, figsize=figsize(n, 1, (6.9, 3.4)), squeeze=False)
        for ax, (name, curves) in zip(axes[:, 0], panels.items()):
            survival_steps(ax, curves, ARM_COLORS, ARM_LABELS)
            ax.set_title(name)
            ax.legend(
                loc="upper center",
                bbox_to_anchor=(0.5, -0.2),
                fontsize=8,
                frameon=False,
                ncol=2,
                handlelength=1.5,
                columnspacing=1.2,
            )
            ax.set_ylabel("not yet at 90 %")
        if title:
            fig.suptitle(title)
    return fig


def _cell_row_label(cell) -> str:
    return "\n".join(textwrap.wrap(f"{ARM_LABELS.get(cell.a, cell.a)} − {ARMS.get(cell.b, cell.b)}", 16))


def decay_map_figure(
    cells: list,
    curves: dict[float, list[dict]] | None = None,
    title: str = "",
    *,
    unit: str = "pp",
    digits: int = 1,
    lower_is_better: bool = False,
    step_name: str = "epoch",
    quantity: str = "validation accuracy",
) -> Figure:
    """The decay map as a reader reads it, the full width of the page. On top, one row of cells per
    comparison (``a − b``, :class:`findings.decay_map.MapCell`) and one column per weight decay,
    each read at its runs' final epoch: the mean paired difference (pp), its 95 % interval, the
    family's verdict word and the seeds past 90 % in each arm; an inconclusive cell is hatched.
    Under it, when ``curves`` (:func:`findings.decay_map.curves`) are given: the first row's paired
    difference at every logged epoch, one line per decay, drawn, not tested. ``unit`` and
    ``digits`` write the differences (a loss: ``unit="nats"``, ``digits=2``, ``lower_is_better``
    turns the colours so that blue is always ``a`` doing better); ``step_name`` names the time axis
    and ``quantity`` what is compared.
    Chapters: regimes, intro, routing."""
    rows = list(dict.fromkeys((c.a, c.b) for c in cells))
    decays = sorted({c.weight_decay for c in cells})
    grid = np.full((len(rows), len(decays)), np.nan)
    for c in cells:
        if c.comparison is not None:
            grid[rows.index((c.a, c.b)), decays.index(c.weight_decay)] = c.comparison.mean_difference
    floor = 10.0 ** (1 - digits)  # the colour scale never narrower than the written precision
    bound = max(floor, float(np.nanmax(np.abs(grid)))) if np.isfinite(grid).any() else floor
    with style():
        heights = [1.2 * len(rows)] + ([2.6] if curves else [])
        fig, axes = plt.subplots(
            len(heights),
            1,
            figsize=(6.9, sum(heights) + 1.0),
            gridspec_kw={"height_ratios": heights},
            squeeze=False,
            layout="constrained",
        )
        ax = axes[0, 0]
        ax.imshow(grid, cmap="RdBu_r" if lower_is_better else "RdBu", vmin=-bound, vmax=bound, aspect="auto")
        for c in cells:
            i, j = rows.index((c.a, c.b)), decays.index(c.weight_decay)
            if c.comparison is None:
                ax.text(j, i, "no runs", ha="center", va="center", fontsize=9)
                continue
            m = c.comparison
            text = f"{m.mean_difference:+.{digits}f}\n[{m.ci_low:+.{digits}f}, {m.ci_high:+.{digits}f}]\n{c.verdict}"
            if c.past is not None:
                text += f"\n{c.past[0]} vs {c.past[1]} > 90 %"
            if c.verdict == "inconclusive":
                ax.add_patch(
                    plt.Rectangle(
                        (j - 0.5, i - 0.5), 1, 1, fill=False, hatch="//", lw=0, edgecolor="#bbbbbb", alpha=0.6
                    )
                )
            dark = abs(m.mean_difference) > 0.6 * bound  # white text on the saturated end of the map
            ax.text(j, i, text, ha="center", va="center", fontsize=9, color="white" if dark else "black")
        ax.set_xticks(range(len(decays)), [f"λ = {d:g}" for d in decays])
        ax.xaxis.tick_top()
        ax.set_yticks(range(len(rows)), [_cell_row_label(next(c for c in cells if (c.a, c.b) == r)) for r in rows])
        ax.tick_params(length=0)
        ax.grid(False)
        epoch = max(c.epoch for c in cells)
        ax.set_title(title or f"At the final {step_name} ({epoch:,}): paired difference in {quantity} ({unit})")
        if curves:
            ax = axes[1, 0]
            shades = plt.get_cmap("viridis")(np.linspace(0.0, 0.85, len(curves)))
            for color, (wd, series) in zip(shades, sorted(curves.items())):
                if series:
                    ax.plot(
                        [g["epoch"] for g in series],
                        [g["comparison"].mean_difference for g in series],
                        color=color,
                        lw=1.5,
                        label=f"λ = {wd:g}",
                    )
            ax.axhline(0, color=COLORS["reference"], lw=0.8)
            ax.set_xlabel(step_name)
            ax.set_ylabel(f"{ARM_LABELS.get(rows[0][0])} −\n{ARMS.get(rows[0][1])} ({unit})")
            ax.set_title(f"Every {step_name} before: the same difference, the seeds' mean (drawn, not tested)")
            low, high = ax.get_ylim()
            ax.set_ylim(min(low, 0) - 0.3 * (high - low), high)  # room for the legend under the curves
            ax.legend(loc="lower center", fontsize=9, ncol=len(curves), frameon=False)
    return fig


def draw_cell(ax: Axes, accuracies: dict[str, list[float]], title: str = "") -> None:
    """One cell of the map: every seed's validation accuracy per arm (dots), paired seeds joined. Chapter: regimes."""
    arms = list(accuracies)
    for j, arm in enumerate(arms):
        values = accuracies[arm]
        ax.scatter(
            np.full(len(values), j) + np.linspace(-0.12, 0.12, len(values)),
            values,
            s=14,
            color=ARM_COLORS.get(arm, COLORS["reference"]),
            zorder=3,
        )
        if values:
            ax.hlines(np.mean(values), j - 0.3, j + 0.3, color=ARM_COLORS.get(arm, COLORS["reference"]), lw=2)
    ax.set_xticks(range(len(arms)), [ARM_LABELS.get(a, a).replace(", ", ",\n") for a in arms], fontsize=9)
    ax.set_ylabel("validation accuracy (%)")
    ax.set_ylim(0, 102)
    if title:
        ax.set_title(title)
