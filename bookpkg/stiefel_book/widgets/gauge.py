"""The gauge chapter's explorer: move along a gauge orbit and watch the loss stay flat, while the
same motion of ``W_Q`` alone changes it.

``orbit_view(t, group)`` is the plain function behind the widget (callable without a kernel);
``orbit_explorer()`` wraps it in a slider for ``t`` and a menu for the group.
"""

from __future__ import annotations

import ipywidgets as widgets
import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from ..gauge import TOLERANCE
from ..plots import style
from ..plots.gauge import GROUP_LABELS, T_MAX, draw_orbit
from . import Explorer, explorer, slider

__all__ = ["readout", "orbit_view", "orbit_explorer"]


def readout(data: dict) -> str:
    """The explorer's text: the loss at ``t`` on the orbit and off it, each against ``t = 0``."""
    rows = [
        ("t", f"{data['t']:.2f}"),
        ("loss at t = 0", f"{data['loss_start']:.6f}"),
        ("loss on the gauge orbit", f"{data['loss_gauge']:.6f}"),
        ("  relative change ≤ 1e-12", str(data["change_gauge"] <= TOLERANCE)),
        ("loss off the orbit (W_Q alone)", f"{data['loss_off']:.6f}"),
        ("  relative change", f"{data['change_off']:.3g}"),
    ]
    width = max(len(label) for label, _ in rows)
    return "\n".join(f"{label:<{width}}  {value}" for label, value in rows)


def orbit_view(t: float = 1.0, group: str = "orthogonal") -> tuple[Figure, str, dict]:
    """One panel (:func:`stiefel_book.plots.gauge.draw_orbit`), its readout, and the numbers."""
    with style():
        fig, ax = plt.subplots(figsize=(5.6, 3.8))
        data = draw_orbit(ax, t=t, group=group)
        ax.set_title(GROUP_LABELS[group])
    return fig, readout(data), data


def orbit_explorer(t: float = 1.0, group: str = "orthogonal") -> Explorer:
    """The widget: ``t`` in ``[-T_MAX, T_MAX]`` and the group (O(r) for the Stiefel model, GL(r) for
    the Euclidean one)."""
    menu = widgets.Dropdown(
        options=[(label, key) for key, label in GROUP_LABELS.items()], value=group, description="group"
    )
    return explorer(orbit_view, t=slider(-T_MAX, T_MAX, 0.05, t, "t", readout_format=".2f"), group=menu)
