"""The ablation chapter's explorer: the full Stiefel rule against one variant, on the grokking
problem of a few seconds, at a learning rate of your choice."""

from __future__ import annotations

import matplotlib.pyplot as plt

from ..arms.variants import VARIANTS
from ..labels import label
from ..plots import figsize, style
from ..plots.ablation import draw_variant
from . import Explorer, explorer, log_slider
from .grokking import arm_history

__all__ = ["compare_variant", "variant_explorer"]


def compare_variant(variant: str, lr: float):
    """Train the full rule and ``variant`` at ``lr``; a figure and a one-line readout."""
    histories = {arm: list(arm_history(arm, lr)) for arm in ("stiefel", variant)}
    with style():
        fig, ax = plt.subplots(figsize=figsize(1, 1, (5.0, 3.2)))
        draw_variant(ax, histories)
    finals = ", ".join(f"{label(arm)} {h[-1]['val_acc']:.2f}" for arm, h in histories.items())
    text = "final validation accuracy: " + finals
    return fig, text


def variant_explorer() -> Explorer:
    return explorer(
        compare_variant, variant=[v for v in VARIANTS if v != "stiefel"], lr=log_slider(-4, -1, 3e-3, "learning rate")
    )
