"""The explorers of the five proposition chapters (P1-P5).

Each ``*_view(**values)`` is the plain function behind a widget: it returns the figure, a
text readout and the numbers it drew (an explorer's ``result``), so tests call it without a
kernel. Each ``*_explorer()`` wraps its view in controls (:func:`stiefel_book.widgets.explorer`).
The panels themselves are drawn by :mod:`stiefel_book.plots.propositions`.
"""

from __future__ import annotations

import ipywidgets as widgets
import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from ..certify import TOLERANCE
from ..plots import figsize, style
from ..plots import propositions as panels
from . import Explorer, explorer, slider

__all__ = [
    "steepest_descent_view",
    "steepest_descent_explorer",
    "scale_view",
    "scale_explorer",
    "conditioning_view",
    "conditioning_explorer",
    "equivariance_view",
    "equivariance_explorer",
    "weight_decay_view",
    "weight_decay_explorer",
]

PANEL = (5.0, 3.4)  # inches: one panel per explorer
RULES = {"scale_free": "scale-free", "fixed": "fixed step"}  # what the menus and readouts call each choice
MOMENTS = {"frame": "one per frame", "entry": "one per entry"}
PROJECTORS = {"tangent": "tangent", "euclidean": "Euclidean"}


def _readout(rows: list[tuple[str, str]]) -> str:
    width = max(len(label) for label, _ in rows)
    return "\n".join(f"{label:<{width}}  {value}" for label, value in rows)


def _exact(x: float) -> str:
    return f"{x:.1e} (≤ 1e-12: {x <= TOLERANCE})"


def _panel(draw, **setting) -> tuple[Figure, dict]:
    with style():
        fig, ax = plt.subplots(figsize=figsize(1, 1, PANEL))
        data = draw(ax, **setting)
    return fig, data


# P1 -------------------------------------------------------------------------------------------


def steepest_descent_view(d: int = 16, r: int = 4, seed: int = 0) -> tuple[Figure, str, dict]:
    """Random unit tangent directions at a random ``(W, G)`` in St(d, r) against StiefelAdam's
    first step: how much first-order decrease each buys, as a fraction of the optimum."""
    r = min(r, d)
    fig, data = _panel(panels.draw_decrease_samples, d=d, r=r, seed=seed)
    text = _readout(
        [
            (f"St({d}, {r}), tangent dimension", str(data["tangent_dim"])),
            ("the rule's first step / optimum", f"{data['step_ratio']:.15f}"),
            ("‖ξ/‖ξ‖ - η*‖_F", _exact(data["direction_error"])),
            ("best random direction / optimum", f"{data['best_sample']:.4f}"),
        ]
    )
    return fig, text, data


def steepest_descent_explorer(d: int = 16, r: int = 4, seed: int = 0) -> Explorer:
    """Sliders for ``d``, ``r`` (clipped to ``d``) and the random draw."""
    return explorer(
        steepest_descent_view,
        d=widgets.IntSlider(value=d, min=1, max=64, description="rows d", continuous_update=False),
        r=widgets.IntSlider(value=r, min=1, max=16, description="columns r", continuous_update=False),
        seed=widgets.IntSlider(value=seed, min=0, max=20, description="random draw", continuous_update=False),
    )


# P2 -------------------------------------------------------------------------------------------


def scale_view(log10_scale: float = 0.0, step_rule: str = "scale_free", eps: float = 0.0) -> tuple[Figure, str, dict]:
    """A 50-step run on the loss multiplied by ``10**log10_scale``, against the run at scale 1."""
    fig, data = _panel(panels.draw_scale_run, log10_scale=log10_scale, step_rule=step_rule, eps=eps)
    text = _readout(
        [
            (
                "gradient scale c",
                f"1e{log10_scale:+.0f}" if float(log10_scale).is_integer() else f"{10**log10_scale:.3g}",
            ),
            ("step rule, Adam's ε", f"{RULES[step_rule]}, {eps:g}"),
            ("max_t ‖W_t(c) - W_t(1)‖ / ‖W_t(1)‖", _exact(data["deviation"])),
            ("final loss / c (at c = 1)", f"{data['final_loss']:.4f} ({data['final_loss_reference']:.4f})"),
        ]
    )
    return fig, text, data


def scale_explorer(log10_scale: float = 0.0, step_rule: str = "scale_free", eps: float = 0.0) -> Explorer:
    """A slider for ``log10 c`` from -8 to 8, the step rule, and ``eps`` (0 or Adam's 1e-8)."""
    return explorer(
        scale_view,
        log10_scale=slider(-8.0, 8.0, 1.0, log10_scale, "log₁₀ gradient scale", readout_format=".0f"),
        step_rule=widgets.Dropdown(
            options=[(label, rule) for rule, label in RULES.items()], value=step_rule, description="step rule"
        ),
        eps=widgets.Dropdown(options=[("0", 0.0), ("1e-8", 1e-8)], value=eps, description="Adam's ε"),
    )


# P3 -------------------------------------------------------------------------------------------


def conditioning_view(log10_lr: float = 0.0, trust_radius: float | None = 0.5) -> tuple[Figure, str, dict]:
    """The condition number of the retraction's ``I + ξᵀξ`` along a run at ``lr = 10**log10_lr``."""
    with style():
        fig, (ax, loss_ax) = plt.subplots(1, 2, figsize=figsize(1, 2, PANEL))
        data = panels.draw_condition_history(ax, log10_lr=log10_lr, trust_radius=trust_radius, loss_ax=loss_ax)
    text = _readout(
        [
            ("learning rate", f"{10**log10_lr:.3g}"),
            ("trust radius Δ", "none" if trust_radius is None else f"{trust_radius:g}"),
            ("longest step ‖ξ‖_F", f"{data['max_step_norm']:.4g}"),
            ("largest condition number", f"{data['max_condition']:.4g}"),
            ("bound 1 + Δ²", "none" if trust_radius is None else f"{data['bound']:.4g}"),
            ("loss at the start, at the end", f"{data['loss'][0]:.4g}, {data['final_loss']:.4g}"),
        ]
    )
    return fig, text, data


def conditioning_explorer(log10_lr: float = 0.0, trust_radius: float | None = 0.5) -> Explorer:
    """A slider for ``log10 lr`` from -3 to 1.5 and a choice of trust radius (or none)."""
    return explorer(
        conditioning_view,
        log10_lr=slider(-3.0, 1.5, 0.25, log10_lr, "log₁₀ learning rate", readout_format=".2f"),
        trust_radius=widgets.Dropdown(
            options=[("0.1", 0.1), ("0.25", 0.25), ("0.5", 0.5), ("1", 1.0), ("2", 2.0), ("none", None)],
            value=trust_radius,
            description="trust radius",
        ),
    )


# P4 -------------------------------------------------------------------------------------------


def equivariance_view(
    second_moment: str = "frame", projector: str = "tangent", seed: int = 0
) -> tuple[Figure, str, dict]:
    """How far the run from ``(QW, QG_t)`` is from ``Q`` times the run from ``(W, G_t)``."""
    fig, data = _panel(panels.draw_equivariance, second_moment=second_moment, projector=projector, seed=seed)
    text = _readout(
        [
            ("second moment, projector", f"{MOMENTS[second_moment]}, {PROJECTORS[projector]}"),
            ("max_t ‖W'_t - Q W_t‖ / ‖W_t‖", _exact(data["max_deviation"])),
        ]
    )
    return fig, text, data


def equivariance_explorer(second_moment: str = "frame", projector: str = "tangent", seed: int = 0) -> Explorer:
    """Choices of second moment and projector, and a slider for the random rotation ``Q``."""
    return explorer(
        equivariance_view,
        second_moment=widgets.Dropdown(
            options=[(label, m) for m, label in MOMENTS.items()], value=second_moment, description="second moment"
        ),
        projector=widgets.Dropdown(
            options=[(label, p) for p, label in PROJECTORS.items()], value=projector, description="projector"
        ),
        seed=widgets.IntSlider(value=seed, min=0, max=20, description="rotation", continuous_update=False),
    )


# P5 -------------------------------------------------------------------------------------------


def weight_decay_view(weight_decay: float = 1.0, teacher_sharpness: float = 0.0) -> tuple[Figure, str, dict]:
    """``‖W_Q‖_F`` of a Euclidean and a Stiefel attention layer trained with decoupled decay."""
    fig, data = _panel(panels.draw_weight_decay, weight_decay=weight_decay, teacher_sharpness=teacher_sharpness)
    e, s = data["euclidean"], data["stiefel"]
    text = _readout(
        [
            ("weight decay, teacher sharpness", f"{weight_decay:g}, {teacher_sharpness:g}"),
            ("final ‖W_Q‖_F, Euclidean", f"{e['final_norm']:.4f}"),
            ("final ‖W_Q‖_F, Stiefel (√(H r))", f"{s['final_norm']:.4f} ({data['orthonormal_norm']:.4f})"),
            ("final loss, Euclidean / Stiefel", f"{e['final_loss']:.3g} / {s['final_loss']:.3g}"),
        ]
    )
    return fig, text, data


def weight_decay_explorer(weight_decay: float = 1.0, teacher_sharpness: float = 0.0) -> Explorer:
    """Sliders for AdamW's decoupled weight decay and for how sharp the teacher's attention is."""
    return explorer(
        weight_decay_view,
        weight_decay=slider(0.0, 3.0, 0.1, weight_decay, "weight decay", readout_format=".1f"),
        teacher_sharpness=slider(0.0, 3.0, 0.5, teacher_sharpness, "teacher sharpness", readout_format=".1f"),
    )
