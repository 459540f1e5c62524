"""The routing chapter's explorer: pick a W_Q, W_K learning rate and a weight decay and see every
seed's learning curve of every arm run there (frozen frames, lr 0, at every lr of their decay).
It reads results (:func:`stiefel_book.findings.routing.lr_decay_cells`); nothing trains."""

from __future__ import annotations

import ipywidgets as widgets
import matplotlib.pyplot as plt

from ..findings.routing import cell_curves
from ..labels import label, rate_text
from ..plots import figsize, style
from ..plots.routing import draw_cell
from . import Explorer, explorer

__all__ = ["draw_lr_decay_cell", "lr_decay_explorer"]


def draw_lr_decay_cell(cells: dict, lr: float, weight_decay: float, metric: str, ylabel: str):
    """The figure of one cell and a readout: each arm's final metric, mean over its seeds there."""
    cell = cell_curves(cells, lr, weight_decay, metric)
    with style():
        fig, ax = plt.subplots(figsize=figsize(1, 1, (5.6, 3.2)))
        draw_cell(ax, cell, ylabel, f"W_Q, W_K learning rate {rate_text(lr)}, weight decay {weight_decay:g}")
    finals = {arm: [values[-1] for _, values in runs if values] for arm, runs in cell.items()}
    text = "; ".join(
        f"{label(arm, capital=True)}: final {sum(v) / len(v):.3g} ({len(v)} seeds)" for arm, v in finals.items() if v
    )
    return fig, text or "no run at this cell"


def lr_decay_explorer(cells: dict, metric: str, ylabel: str, lr: float | None = None,
                      weight_decay: float | None = None) -> Explorer:
    """Menus over the learning rates (lr 0 left out: frozen frames show in every cell) and decays
    that ``cells`` holds, opening at ``lr`` and ``weight_decay`` (default: the first of each); the
    menus wrap onto a second line on a narrow screen."""
    lrs = sorted({lr for lr, _ in cells if lr > 0})
    decays = sorted({decay for _, decay in cells})
    for name, value, options in (("lr", lr, lrs), ("weight_decay", weight_decay, decays)):
        if value is not None and value not in options:
            raise ValueError(f"{name} {value:g} is not among the cells' values {[f'{o:g}' for o in options]}")
    ex = explorer(
        lambda lr, weight_decay: draw_lr_decay_cell(cells, lr, weight_decay, metric, ylabel),
        lr=widgets.Dropdown(options={rate_text(v): v for v in lrs}, value=lrs[0] if lr is None else lr,
                            description="W_Q, W_K rate"),
        weight_decay=widgets.Dropdown(options={f"{d:g}": d for d in decays},
                                      value=decays[0] if weight_decay is None else weight_decay,
                                      description="weight decay"),
    )
    ex.children[0].layout.flex_flow = "row wrap"  # the menus' row wraps at 390 px
    ex.dpi = 150  # 1.5 image pixels a CSS pixel (the browser test asks it of every image): sharp, and still light
    ex.update()
    return ex
