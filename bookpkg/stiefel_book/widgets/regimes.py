"""The regimes chapter's explorer: pick a weight decay and a training length of the decay map and
see every seed of every arm there. It reads a results file; nothing trains. The map's verdicts are
read at the final epoch (``findings.decay_map``); the explorer's earlier epochs are looked at, not
tested, so its readout gives numbers and no verdict word."""

from __future__ import annotations

import ipywidgets as widgets
import matplotlib.pyplot as plt

from ..findings.regimes import endpoint_comparison
from ..labels import interval, label
from ..plots import figsize, style
from ..plots.regimes import draw_cell
from ..results_reading import metric_at, runs_of
from . import Explorer, explorer

__all__ = ["cell_accuracies", "draw_map_cell", "map_explorer"]

MAP_ARMS = ("baseline", "stiefel", "frozen", "no_decay_qk")


def cell_accuracies(results: dict, weight_decay: float, epoch: int) -> dict[str, list[float]]:
    """Validation accuracy (percent) of every seed of every arm at one cell of the map."""
    out = {}
    for arm in MAP_ARMS:
        runs = runs_of(results, f"{arm}@wd={weight_decay:g}")
        out[arm] = [100 * metric_at(runs[s], epoch) for s in sorted(runs)]
    return out


def draw_map_cell(results: dict, weight_decay: float, epoch: int):
    """The figure and a readout of one cell: the Stiefel rule against each other arm there."""
    accuracies = cell_accuracies(results, weight_decay, epoch)
    with style():
        fig, ax = plt.subplots(figsize=figsize(1, 1, (5.6, 3.2)))
        draw_cell(ax, accuracies, title=f"λ = {weight_decay:g}, after {epoch:,} epochs")
    parts = []
    for arm in MAP_ARMS[:1] + MAP_ARMS[2:]:
        c = endpoint_comparison(results, f"stiefel@wd={weight_decay:g}", f"{arm}@wd={weight_decay:g}", epoch)
        if c is not None:
            parts.append(
                f"{label('stiefel', capital=True)} − {label(arm)}: {c.mean_difference:+.1f} pp, "
                f"{interval(c.ci_low, c.ci_high)}, {c.wins} of {c.n} seeds ahead"
            )
    return fig, "; ".join(parts) or "no paired seeds in this cell yet"


def map_explorer(results: dict, lengths: tuple[int, ...]) -> Explorer:
    """Dropdowns over the map's weight decays and training lengths, labelled in words."""
    decays = [(f"λ = {wd:g}", wd) for wd in results["config"]["weight_decays"]]
    epochs = [(f"{e:,} epochs", e) for e in lengths]
    return explorer(
        lambda weight_decay, epoch: draw_map_cell(results, weight_decay, epoch),
        weight_decay=widgets.Dropdown(options=decays, description="weight decay"),
        epoch=widgets.Dropdown(options=epochs, value=lengths[-1], description="trained for"),
    )
