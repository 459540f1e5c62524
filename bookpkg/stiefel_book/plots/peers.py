"""Figures of the chapter "Among its relatives": the lr sweep, time to 90 % (Kaplan-Meier) and the frames' movement over
training. Each draws only what it is handed (the outputs of :mod:`stiefel_book.findings.peers`)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from ..labels import label
from . import ARM_COLORS, COLORS, figsize, rates, style, survival_steps

__all__ = [
    "PEER_COLORS",
    "PEER_LABELS",
    "sweep_figure",
    "decay_sweep_figure",
    "survival_figure",
    "movement_figure",
]

PEER_COLORS = {  # the book's colours where the arm has one (plots.ARM_COLORS); the relatives from Tol's palette
    **{arm: ARM_COLORS[arm] for arm in ("baseline", "stiefel", "per_entry", "cayley_adam")},
    "muon": "#332288",
    "muon_no_decay": "#88CCEE",
    "geoopt_radam": "#882255",
    "orthogonal_param": "#999933",
}
PEER_LABELS = {
    "baseline": "AdamW",
    "stiefel": "Stiefel rule",
    "per_entry": "Per-entry moments",
    "muon": "Muon",
    "muon_no_decay": "Muon, no decay on $W_Q, W_K$",
    "geoopt_radam": "geoopt RiemannianAdam",
    "orthogonal_param": "Orthogonal parametrization",
    "cayley_adam": label("cayley_adam", capital=True),
}
MARKERS = {
    "baseline": "s",
    "stiefel": "o",
    "per_entry": "^",
    "muon": "D",
    "muon_no_decay": "d",
    "geoopt_radam": "v",
    "orthogonal_param": "P",
    "no_decay_qk": "x",
    "qk_norm": "*",
    "sphere": "h",
    "stiefel_temp": "p",
    "cayley_adam": "<",
}


def sweep_figure(
    rows: list[dict], criterion: str = "mean validation accuracy over training", scale: float = 100.0
) -> Figure:
    """Each arm's sweep score over the frame lr (``rows`` of ``findings.peers.sweep_rows``), its
    chosen lr circled. Scores are drawn times ``scale``: 100 for an accuracy in per cent (the
    axis says "%"), 1 for a score in its own unit (the criterion names it)."""
    with style():
        fig, ax = plt.subplots(figsize=figsize(1, 1, (6.4, 3.4)))
        _draw_sweep(ax, rows, scale)
        ax.set_ylabel(f"{criterion} (%)" if scale == 100 else criterion)
        if len(rows) > 3:  # many lines: the legend under the axes, off the data
            fig.legend(loc="outside lower center", ncol=3, fontsize=8, columnspacing=1.0, handlelength=1.5)
        else:
            ax.legend(fontsize=9, loc="best")
    return fig


def decay_sweep_figure(cells: list[dict], criterion: str) -> Figure:
    """One panel per weight decay (``cells`` of ``findings.cifar10_decays.decay_cells``), each the
    swept arms' scores over the frame lr, on a shared vertical axis; a decay not yet run says so."""
    with style():
        fig, axes = plt.subplots(1, len(cells), figsize=figsize(1, len(cells), (2.6, 3.0)), sharey=True, squeeze=False)
        for ax, cell in zip(axes[0], cells):
            _draw_sweep(ax, cell["rows"])  # a tick at every rate tried
            ax.set_title(f"λ = {cell['weight_decay']:g}", fontsize=10)
            if not cell["rows"]:
                ax.text(0.5, 0.5, "not yet run", transform=ax.transAxes, ha="center", va="center", color="0.4")
                ax.set_xticks([])
                ax.set_xlabel("")
        axes[0][0].set_ylabel(f"{criterion} (%)")
        handles = {h.get_label(): h for ax in axes[0] for h in ax.get_legend_handles_labels()[0]}
        if handles:
            fig.legend(handles.values(), handles.keys(), loc="outside lower center", ncol=len(handles), fontsize=9)
    return fig


def _draw_sweep(ax, rows: list[dict], scale: float = 100.0) -> None:
    where = rates.position(lr for row in rows for lr, v in row["scores"].items() if v is not None)
    for row in rows:
        scores = {lr: scale * v for lr, v in row["scores"].items() if v is not None}
        color = PEER_COLORS.get(row["arm"], ARM_COLORS.get(row["arm"], COLORS["reference"]))
        name = PEER_LABELS.get(row["arm"], label(row["arm"], capital=True))
        rates.draw_ladder(ax, scores, where, color=color, marker=MARKERS.get(row["arm"], "o"), lw=1.3, label=name)
        if row["chosen"] is not None:
            ax.scatter(
                [where[row["chosen"]]], [scores[row["chosen"]]], s=150, facecolors="none", edgecolors=color, lw=1.5
            )
    rates.set_rate_ticks(ax, where)
    ax.margins(y=0.15)  # the chosen rate's circle clear of the frame
    ax.set_xlabel("learning rate of $W_Q$, $W_K$")


def survival_figure(curves: list) -> Figure:
    """Kaplan-Meier curves of time to 90 % validation accuracy, one per arm
    (:class:`findings.regimes.Survival`); censored runs keep the curve up to their last epoch.
    The legend sits under the panel."""
    with style():
        fig, ax = plt.subplots(figsize=figsize(1, 1, (6.9, 4.4)))
        survival_steps(ax, curves, PEER_COLORS, PEER_LABELS)
        ax.set_ylabel("share of runs not yet at 90 %")
        if curves:  # under the panel: the curves cross every corner of it
            fig.legend(loc="outside lower center", ncol=2, fontsize=8)
    return fig


def movement_figure(series: dict[str, dict[str, np.ndarray]]) -> Figure:
    """Per arm, the mean over seeds of W_Q's mean principal angle to its start (left) and of its
    orthonormality error ``‖WᵀW − I‖_F`` (right, log scale) over epochs: ``series[arm]`` holds
    ``epoch``, ``angle`` and ``ortho`` arrays. One legend, under the panels."""
    with style():
        fig, (left, right) = plt.subplots(1, 2, figsize=figsize(1, 2, (3.6, 3.7)))
        for arm, s in series.items():
            color = PEER_COLORS.get(arm, COLORS["reference"])
            left.plot(s["epoch"], s["angle"], color=color, lw=1.3, label=PEER_LABELS.get(arm, arm))
            right.plot(s["epoch"], np.maximum(s["ortho"], 1e-8), color=color, lw=1.3)
        left.set_xlabel("epoch")
        left.set_ylabel("W_Q's angle to its start (deg)")
        right.set_xlabel("epoch")
        right.set_ylabel("‖W_Qᵀ W_Q − I‖_F, worst head")
        right.set_yscale("log")
        if series:  # one legend for both panels, under them: the curves fill the left panel's corners
            fig.legend(loc="outside lower center", ncol=3, fontsize=8)
    return fig
