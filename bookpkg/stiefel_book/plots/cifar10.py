"""Figures of the CIFAR-10 patches chapter, drawn from results files (or live runs in the same
format: ``{"runs": {"<arm>/<start>": {"history": [...], "final": {...}}}}``), read through
:mod:`stiefel_book.results_reading`; no finding or experiment is imported here."""

from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..labels import ARMS
from ..results_reading import arm_of, finished_starts, movement_ratios, paired, run_key
from . import ARM_COLORS, COLORS, figsize, style

__all__ = [
    "CHAPTER_ARMS",
    "ARM_LABELS",
    "draw_curves",
    "curves_figure",
    "gains_figure",
    "arms_figure",
    "sweep_figure",
    "movement_figure",
    "movement_lr_figure",
]

CHAPTER_ARMS = (
    "baseline",
    "stiefel",
    "fixed_step",
    "frozen",
)  # the cifar10 experiment's ARMS (a test holds them equal)
ARM_LABELS = {arm: text[:1].upper() + text[1:] for arm, text in ARMS.items()}  # labels.py, capitalised for legends
METRIC_LABELS = {"test_acc": "test accuracy (%)", "train_acc": "training accuracy (%)"}
UNDER = {"loc": "outside lower center", "fontsize": 8}  # a figure's one legend, under its panels


def _start_line(ax: Axes, steps: list, values: list, arm: str, labelled: bool) -> None:
    """One start's thin line in its arm's colour; ``labelled``: the arm's legend entry."""
    ax.plot(
        steps, values, "o-", ms=3, lw=1, color=ARM_COLORS[arm], alpha=0.7, label=ARM_LABELS[arm] if labelled else None
    )


def draw_curves(ax: Axes, runs: dict, arms=CHAPTER_ARMS, metric: str = "test_acc") -> None:
    """``metric`` (in %) against the step count, one thin line per start and arm. Chapter: cifar10_patches."""
    for arm in arms:
        keys = [k for k in runs if arm_of(k) == arm]
        for i, key in enumerate(sorted(keys)):
            history = runs[key]["history"]
            _start_line(ax, [r["steps_done"] for r in history], [100 * r[metric] for r in history], arm, i == 0)
    ax.set_xlabel("step")
    ax.set_ylabel(METRIC_LABELS.get(metric, f"{metric.replace('_', ' ')} (%)"))


def curves_figure(runs: dict, title: str = "") -> Figure:
    """Test and running training accuracy of every run, by step; one legend, under the panels.
    Chapter: cifar10_patches."""
    with style():
        fig, axes = plt.subplots(1, 2, figsize=figsize(1, 2, (4.2, 3.4)))
        draw_curves(axes[0], runs, metric="test_acc")
        draw_curves(axes[1], runs, metric="train_acc")
        fig.legend(handles=axes[0].get_legend_handles_labels()[0], ncol=4, **UNDER)
        if title:
            fig.suptitle(title)
    return fig


def _break_marks(upper: Axes, lower: Axes) -> None:
    """The two short slashes of a broken y axis, on the left spine where ``upper`` ends and
    ``lower`` begins."""
    marks = dict(marker=[(-1, -0.5), (1, 0.5)], markersize=8, linestyle="none", color="black", clip_on=False)
    upper.plot([0], [0], transform=upper.transAxes, **marks)
    lower.plot([0], [1], transform=lower.transAxes, **marks)


def gains_figure(results: dict, preprint_gain: float | None = None, title: str = "") -> Figure:
    """Left: each start's test accuracy in both arms, joined. Right: the per-start gain (bars),
    the mean with its 95 % interval and, dashed, the preprint's gain. Where the preprint's gain is
    far outside the bars' range, it is drawn in a strip of its own above them, at the same scale,
    the y axis broken between the two, so that the bars keep their height. One legend, under the
    panels. Chapter: cifar10_patches."""
    starts, a, b, comparison = paired(results, "stiefel", "baseline", "test_acc")
    gains = a - b
    shown = [0.0, *gains] + ([comparison.ci_low, comparison.ci_high] if comparison is not None else [])
    low, high = min(shown), max(shown)
    apart = preprint_gain is not None and not (low - (high - low) <= preprint_gain <= high + (high - low))
    with style():
        fig = plt.figure(figsize=figsize(1, 2, (4.2, 3.6)))
        if apart:
            axes = fig.subplot_mosaic([["left", "far"], ["left", "right"]], height_ratios=[1, 4])
            far = axes["far"]
        else:
            axes, far = fig.subplot_mosaic([["left", "right"]]), None
        left, right = axes["left"], axes["right"]
        for s, x, y in zip(starts, b, a):
            left.plot([0, 1], [x, y], "-", color=COLORS["reference"], lw=0.8, alpha=0.6)
        left.scatter(np.zeros(len(b)), b, color=ARM_COLORS["baseline"], zorder=3)
        left.scatter(np.ones(len(a)), a, color=ARM_COLORS["stiefel"], zorder=3)
        left.set_xticks([0, 1], [ARM_LABELS["baseline"], ARM_LABELS["stiefel"]])
        left.set_xlim(-0.4, 1.4)
        left.set_ylabel("test accuracy (%)")
        right.bar(
            range(len(starts)), gains, color=[ARM_COLORS["stiefel"] if g > 0 else ARM_COLORS["baseline"] for g in gains]
        )
        right.set_xticks(range(len(starts)), [str(s) for s in starts])
        right.axhline(0, color="black", lw=0.8)
        if comparison is not None:
            right.axhline(
                comparison.mean_difference,
                color=COLORS["stiefel"],
                lw=1.2,
                label=f"mean {comparison.mean_difference:+.2f} pp",
            )
            right.axhspan(
                comparison.ci_low, comparison.ci_high, color=COLORS["stiefel"], alpha=0.15, label="its 95 % interval"
            )
        if preprint_gain is not None:
            (far or right).axhline(
                preprint_gain,
                color=COLORS["highlight"],
                ls="--",
                lw=1.2,
                label=f"the preprint: {preprint_gain:+.2f} pp",
            )
        if far is not None:
            bottom, top = right.get_ylim()
            half = (top - bottom) / 8  # the strip is a quarter of the bars' height: the same pp per inch
            far.set_ylim(preprint_gain - half, preprint_gain + half)
            far.set_yticks([preprint_gain], [f"{preprint_gain:+.2f}"])
            far.set_xlim(right.get_xlim())
            far.tick_params(axis="x", bottom=False, labelbottom=False)
            far.spines["bottom"].set_visible(False)
            far.grid(False)
            _break_marks(far, right)
        right.set_xlabel("start")
        right.set_ylabel("Stiefel rule − AdamW (pp)")
        handles = [h for ax in (far, right) if ax is not None for h in ax.get_legend_handles_labels()[0]]
        fig.legend(handles=handles, ncol=3, **UNDER)
        if title:
            fig.suptitle(title)
    return fig


def arms_figure(
    results: dict, title: str = "", arms=CHAPTER_ARMS, metric: str = "test_acc", ylabel: str = "test accuracy (%)"
) -> Figure:
    """Final ``metric`` of every arm, one line per start across the arms; an arm's name is broken
    into lines where the arms' share of the width is too narrow for it. Chapter: cifar10_patches."""
    starts = finished_starts(results, arms)
    with style():
        fig, ax = plt.subplots(figsize=figsize(1, 1, (1.0 + 1.25 * len(arms), 3.4)))
        for s in starts:
            ax.plot(
                range(len(arms)),
                [100 * results["runs"][run_key(arm, s)]["final"][metric] for arm in arms],
                "-",
                color=COLORS["reference"],
                lw=0.8,
                alpha=0.5,
            )
        for i, arm in enumerate(arms):
            ax.scatter(
                [i] * len(starts),
                [100 * results["runs"][run_key(arm, s)]["final"][metric] for s in starts],
                color=ARM_COLORS[arm],
                zorder=3,
            )
        # an arm's name in lines as wide as its share of the figure holds at 9 pt (~5.4 pt a character)
        width = max(8, int(0.85 * 72 * fig.get_figwidth() / len(arms) / 5.4))
        ax.set_xticks(range(len(arms)), [textwrap.fill(ARM_LABELS[a], width) for a in arms], fontsize=9)
        ax.set_ylabel(ylabel)
        if title:
            ax.set_title(title)
    return fig


def sweep_figure(
    rows: list[dict], preprint_note: str = "preprint: the gap widens with data", title: str = ""
) -> Figure:
    """Left: test accuracy of both arms against the training-set size (mean ± sd over starts).
    Right: the paired gain with its 95 % interval, per size. One legend, under the panels.
    Chapter: cifar10_patches."""
    rows = [r for r in rows if r["stiefel"] is not None and r["baseline"] is not None]
    with style():
        fig, (left, right) = plt.subplots(1, 2, figsize=figsize(1, 2, (4.2, 3.6)))
        sizes = [r["train_size"] for r in rows]
        for arm in ("baseline", "stiefel"):
            left.errorbar(
                sizes,
                [r[arm].mean for r in rows],
                yerr=[0 if np.isnan(r[arm].std) else r[arm].std for r in rows],
                fmt="o-",
                color=ARM_COLORS[arm],
                capsize=3,
                label=f"{ARM_LABELS[arm]}, mean ± sd",
            )
        left.set_xscale("log")
        left.set_xlabel("training images")
        left.set_ylabel("test accuracy (%)")
        paired = [r for r in rows if r["comparison"] is not None]
        if paired:
            means = np.array([r["comparison"].mean_difference for r in paired])
            low = means - np.array([r["comparison"].ci_low for r in paired])
            high = np.array([r["comparison"].ci_high for r in paired]) - means
            right.errorbar(
                [r["train_size"] for r in paired],
                means,
                yerr=[low, high],
                fmt="o-",
                color=COLORS["stiefel"],
                capsize=3,
                label="the gain, with its 95 % interval",
            )
        right.axhline(0, color="black", lw=0.8)
        right.set_xscale("log")
        for ax in (left, right):
            ax.set_xticks(sizes, [f"{n // 1000:g}k" if n >= 1000 else str(n) for n in sizes])
            ax.minorticks_off()
        right.set_xlabel("training images")
        right.set_ylabel("Stiefel rule − AdamW (pp)")
        right.set_title(preprint_note, fontsize=9)
        fig.legend(ncol=3, **UNDER)
        if title:
            fig.suptitle(title)
    return fig


def movement_figure(results: dict, band: tuple[float, float] | None = (24.0, 40.0), title: str = "") -> Figure:
    """Left: mean per-step ``‖ΔW‖_F`` of W_Q and W_K (every block) by step, per arm (log scale).
    Right: how many times less than the baseline's identically shaped matrices each arm's frames
    move a step, per projection and start; shaded, the preprint's range. One legend, under the
    panels. Chapter: cifar10_patches."""
    runs = results["runs"]
    with style():
        fig, (left, right) = plt.subplots(1, 2, figsize=figsize(1, 2, (4.2, 3.6)))
        for arm in ("baseline", "stiefel", "fixed_step"):
            keys = sorted(k for k in runs if arm_of(k) == arm)
            for i, key in enumerate(keys):
                history = runs[key]["history"]
                names = [k for k in history[0] if k.startswith("step/")]
                steps = [r["steps_done"] for r in history]
                mean = [np.mean([r[n] for n in names]) for r in history]
                _start_line(left, steps, mean, arm, i == 0)
        left.set_yscale("log")
        left.set_xlabel("step")
        left.set_ylabel(r"mean $\|\Delta W\|_F$ of a step")
        for j, arm in enumerate(("stiefel", "fixed_step")):
            ratios = movement_ratios(results, arm)
            values = np.concatenate(list(ratios.values())) if ratios else np.array([])
            if len(values):
                jitter = np.linspace(-0.15, 0.15, len(values))
                right.scatter(j + jitter, values, s=12, color=ARM_COLORS[arm], alpha=0.8)
        if band is not None:
            right.axhspan(
                *band,
                color=COLORS["highlight"],
                alpha=0.2,
                label=f"the preprint: {band[0]:g}–{band[1]:g}x (fixed step)",
            )
        fig.legend(ncol=4, **UNDER)
        right.axhline(1, color="black", lw=0.8)
        right.set_yscale("log")
        right.set_xticks([0, 1], [ARM_LABELS["stiefel"], ARM_LABELS["fixed_step"]])
        right.set_xlim(-0.6, 1.6)
        right.set_ylabel("times less than AdamW")
        if title:
            fig.suptitle(title)
    return fig


def movement_lr_figure(lrs, ratios, lr: float, ratio: float, band: tuple[float, float] | None = None) -> Figure:
    """How many times less a fixed step moves W_Q, W_K than AdamW (``ratios``) against the fixed
    step's lr (``lrs``), log-log; the measured point (``lr``, ``ratio``) marked, the preprint's
    range shaded. Draws what it is handed (``findings.cifar10_family.movement_by_lr``).
    Chapter: cifar10_patches."""
    with style():
        fig, ax = plt.subplots(figsize=figsize(1, 1, (6.4, 3.4)))
        ax.plot(lrs, ratios, color=ARM_COLORS["fixed_step"], lw=1.5, label="AdamW step / fixed step, ∝ 1 / lr")
        ax.scatter([lr], [ratio], s=60, color=ARM_COLORS["fixed_step"], zorder=3, label=f"measured at lr {lr:g}")
        if band is not None:
            ax.axhspan(*band, color=COLORS["highlight"], alpha=0.25, label=f"the preprint: {band[0]:g}–{band[1]:g}x")
        ax.axhline(1, color="black", lw=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("the fixed step's learning rate")
        ax.set_ylabel("how many times less it moves")
        ax.legend(fontsize=9)
    return fig
