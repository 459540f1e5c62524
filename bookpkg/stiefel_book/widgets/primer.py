"""The primer's explorer: move the step size ``t`` and watch ``W + t ξ`` leave the manifold
while the retracted point ``R_W(t ξ)`` stays on it.

``draw_retraction(t, r)`` is the plain function behind the widget (callable without a
kernel); ``retraction_explorer()`` wraps it in a slider and a manifold menu.
"""

from __future__ import annotations

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from ..plots import COLORS, figsize, style
from ..plots.primer import Step, box_limit, draw_step, example, retraction_gap, take_step
from . import Explorer, explorer, slider

__all__ = ["T_MAX", "readout", "draw_retraction", "retraction_explorer"]

T_MAX = 2.0  # the slider's range is [0, T_MAX]


def readout(step: Step) -> str:
    """The explorer's text: the step, how far ``W + t ξ`` is from St(3, r), and how orthonormal
    the retracted frame is (float64 rounding, about 1e-16)."""
    rows = [
        ("step size t (‖tξ‖_F)", f"{step.t:.2f}"),
        (f"distance of W + tξ from St(3, {step.r})", f"{step.distance:.4f}"),
        ("orthonormality error of W + tξ", f"{step.error_euclidean:.4f}"),
        ("orthonormality error of R_W(tξ)", f"{step.error_retracted:.1e}"),
    ]
    return "\n".join(f"{label:<36} {value}" for label, value in rows)


def draw_retraction(t: float = 0.5, r: int = 1) -> tuple[Figure, str, Step]:
    """Left: the step in St(3, r) (the box fits the largest step, so pictures compare).
    Right: the distance of ``W + s ξ`` from the manifold for ``s`` in [0, T_MAX], with the
    current ``t`` marked (the marker's line has gid ``"current"``). Returns the figure, the
    readout and the :class:`~stiefel_book.plots.primer.Step` it shows (an explorer's ``result``)."""
    W, xi = example(r)
    ss = np.linspace(0.0, T_MAX, 81)
    gap = retraction_gap(W, xi, ss)
    with style():
        fig = plt.figure(figsize=figsize(1, 1, (9.0, 4.2)))
        grid = fig.add_gridspec(1, 2, width_ratios=(1.25, 1.0))
        ax3d = fig.add_subplot(grid[0], projection="3d")
        step = draw_step(ax3d, t, r, limit=box_limit(take_step(T_MAX, r)), legend=True)
        ax3d.set_title(f"St(3, {r}): step $t = {t:.2f}$")
        ax = fig.add_subplot(grid[1])
        ax.plot(ss, gap, color=COLORS["euclidean"], label=r"distance of $W + s\xi$ from the manifold")
        ax.plot(
            [step.t],
            [step.distance],
            "o",
            color=COLORS["highlight"],
            markersize=8,
            gid="current",
            label=f"$s = t = {t:.2f}$",
        )
        ax.axhline(0.0, color=COLORS["stiefel"], linewidth=2, label=r"$R_W(s\xi)$: on the manifold")
        ax.set_xlabel("step size $s$")
        ax.set_ylabel("Frobenius distance")
        ax.legend(loc="upper left")
    return fig, readout(step), step


def retraction_explorer(t: float = 0.5, r: int = 1) -> Explorer:
    """The widget: a step-size slider (0 to :data:`T_MAX`) and a choice of St(3, 1) or St(3, 2)."""
    manifold = widgets.Dropdown(
        options=[("St(3, 1): the sphere", 1), ("St(3, 2): frames", 2)], value=r, description="manifold"
    )
    return explorer(draw_retraction, t=slider(0.0, T_MAX, 0.05, t, "step t", readout_format=".2f"), r=manifold)
