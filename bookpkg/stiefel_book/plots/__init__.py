"""Shared figure conventions, so every chapter's figures look alike.

- :data:`COLORS` and :func:`arm_color`: one colour per arm of a comparison, from the
  colour-blind-safe Okabe-Ito palette. The Stiefel arm is always blue, the Euclidean/AdamW
  arm always vermilion. :data:`ARM_COLORS`: the one colour of every experiment arm (the
  ablation's variants and the mechanism's controls too), in every chapter.
- :data:`RC`, :func:`style` and :func:`use_style`: matplotlib settings (size, fonts, grid).
- :func:`figsize`: the size of a figure of ``nrows x ncols`` panels.
- :func:`grid_figure`: a small grid of a widget's settings, one panel each, so the static
  book shows what the widget explores.
- :func:`survival_steps`: Kaplan-Meier curves of time to a threshold, one step line per arm.

Chapter-specific figures live in ``stiefel_book.plots.<chapter>`` (for example
``stiefel_book.plots.primer``); this package imports none of them.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterable

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

__all__ = [
    "COLORS",
    "ARM_COLORS",
    "RC",
    "PANEL_SIZE",
    "arm_color",
    "style",
    "use_style",
    "figsize",
    "grid_figure",
    "setting_label",
    "survival_steps",
]

# Okabe and Ito's colour-blind-safe palette.
COLORS = {
    "stiefel": "#0072B2",  # blue: the Stiefel arm (frames, StiefelAdam, retracted points)
    "euclidean": "#D55E00",  # vermilion: the Euclidean arm (AdamW, unconstrained steps)
    "tangent": "#009E73",  # bluish green: tangent vectors and tangent spaces
    "normal": "#CC79A7",  # reddish purple: normal directions
    "reference": "#555555",  # grey: reference lines, slopes, the manifold itself
    "highlight": "#E69F00",  # orange: the point a widget moves
}

# Every arm of the experiments (arms.variants), one colour each, in every chapter's figures.
ARM_COLORS = {
    "baseline": COLORS["euclidean"],
    "stiefel": COLORS["stiefel"],
    "fixed_step": COLORS["tangent"],
    "frozen": COLORS["reference"],
    "no_projector": COLORS["normal"],
    "per_entry": COLORS["highlight"],
    "no_trust_region": "#56B4E9",  # Okabe-Ito sky blue
    "no_decay_qk": "#000000",  # Okabe-Ito black
    "fixed_step_matched": "#005A41",  # a darker bluish green: the fixed step, at the matched step size
    # scale against orthonormality (arms.scale_arms), from Tol's palette; stiefel_temp a darker Stiefel blue
    "qk_norm": "#CC6677",
    "qk_norm_tuned": "#882255",  # Tol's wine: QK-norm at its tuned initial temperature
    "sphere": "#44AA99",
    "stiefel_temp": "#003F72",
    "cayley_adam": "#AA4499",
    "manifold_muon": "#117733",  # Tol's green: Muon's direction on frames
}

# Names under which chapters refer to the two arms of a comparison.
_ARMS = {
    "stiefel": "stiefel",
    "stiefeladam": "stiefel",
    "riemannian": "stiefel",
    "euclidean": "euclidean",
    "adamw": "euclidean",
    "adam": "euclidean",
    "baseline": "euclidean",
}

PANEL_SIZE = (3.4, 3.0)  # inches per panel: two across fill the book's text column
# The book's content column (_static/book.css: 44rem at 16 px) in inches at the figure dpi below:
# a figure is drawn at most this wide, so that it is shown at its own size, fonts and all.
COLUMN_WIDTH = 6.9
RC = {
    "figure.figsize": (6.4, 4.0),
    "figure.dpi": 100,  # 100 px an inch: shown 1:1 in the column; stored at twice that (retina)
    "savefig.dpi": 200,
    "font.size": 10,
    "axes.titlesize": 10,
    "axes.labelsize": 10,
    "legend.fontsize": 9,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "figure.constrained_layout.use": True,
}


def arm_color(name: str) -> str:
    """The colour of an arm: ``"stiefel"`` (also StiefelAdam) or ``"euclidean"`` (also AdamW).
    For every chapter's figures."""
    key = _ARMS.get(name.replace("-", "").replace("_", "").replace(" ", "").lower())
    if key is None:
        raise ValueError(f"unknown arm {name!r}: use one of {sorted(_ARMS)}")
    return COLORS[key]


@contextlib.contextmanager
def style():
    """A context manager applying :data:`RC`: ``with style(): fig, ax = plt.subplots()``.

    It restores only the keys of :data:`RC`, unlike ``matplotlib.rc_context``, which restores
    every setting: a notebook's inline backend, set up lazily by the first figure drawn inside
    the block, would otherwise be switched off again (``interactive`` reset) and later figures
    would not show.
    For every chapter's figures.
    """
    saved = {key: mpl.rcParams[key] for key in RC}
    mpl.rcParams.update(RC)
    try:
        yield
    finally:
        mpl.rcParams.update(saved)


def use_style() -> None:
    """Apply :data:`RC` for the rest of the session (a notebook's first cell), and store inline
    figures at twice their shown pixel size (retina). For every chapter's figures."""
    mpl.rcParams.update(RC)
    try:
        from matplotlib_inline.backend_inline import set_matplotlib_formats
    except ImportError:  # no Jupyter here: nothing is stored inline
        return
    set_matplotlib_formats("retina")


def figsize(nrows: int = 1, ncols: int = 1, panel: tuple[float, float] = PANEL_SIZE) -> tuple[float, float]:
    """The size in inches of a figure of ``nrows x ncols`` panels of size ``panel``, scaled down
    as a whole to the column's width (:data:`COLUMN_WIDTH`) when wider. For every chapter's figures."""
    width, height = panel[0] * ncols, panel[1] * nrows
    scale = min(1.0, COLUMN_WIDTH / width)
    return (width * scale, height * scale)


def setting_label(setting: Any) -> str:
    """A panel title for one setting: ``"t = 0.5, r = 2"`` for a dict, ``str(setting)`` otherwise.
    For every chapter's figures."""
    if isinstance(setting, dict):
        return ", ".join(
            f"{key} = {value:g}" if isinstance(value, float) else f"{key} = {value}" for key, value in setting.items()
        )
    return f"{setting:g}" if isinstance(setting, float) else str(setting)


def grid_figure(
    draw: Callable[..., Any],
    settings: Iterable[Any],
    *,
    ncols: int | None = None,
    panel: tuple[float, float] = PANEL_SIZE,
    subplot_kw: dict | None = None,
    title: str | None = None,
    label: Callable[[Any], str] | None = setting_label,
) -> Figure:
    """One panel per setting: ``draw(ax, **setting)`` for a dict, ``draw(ax, setting)`` otherwise.

    This is the static counterpart of a widget: pass the widget's drawing function for one
    panel and a few of its settings, and the page shows them side by side. Panels are filled
    row by row (``ncols`` per row, default two: the column's width); unused panels are
    hidden. Each panel is titled by ``label(setting)`` (``None`` leaves the title to ``draw``).
    Use ``subplot_kw={"projection": "3d"}`` for 3-D panels. Returns the (pyplot) figure.
    For every chapter's figures.
    """
    settings = list(settings)
    if not settings:
        raise ValueError("grid_figure needs at least one setting")
    ncols = min(len(settings), 2) if ncols is None else ncols
    nrows = -(-len(settings) // ncols)
    with style():
        fig, axes = plt.subplots(
            nrows, ncols, figsize=figsize(nrows, ncols, panel), squeeze=False, subplot_kw=subplot_kw
        )
        flat: list[Axes] = list(axes.flat)
        for ax, setting in zip(flat, settings):
            if isinstance(setting, dict):
                draw(ax, **setting)
            else:
                draw(ax, setting)
            if label is not None:
                ax.set_title(label(setting))
        for ax in flat[len(settings) :]:
            ax.set_visible(False)
        if title:
            fig.suptitle(title)
    return fig


def survival_steps(ax: Axes, curves: Iterable, colors: dict[str, str], labels: dict[str, str]) -> None:
    """Kaplan-Meier curves on ``ax``, each a step line from 1 at epoch 0, one per curve handed
    (:class:`findings.regimes.Survival`: ``arm``, ``times``, ``probabilities``, ``reached``,
    ``censored``): the arm's colour from ``colors`` (grey where it has none), its legend entry
    from ``labels`` (the arm's name where it has none) with the runs reached and censored. The
    y axis spans the shares 0 to 1, the x axis is the epoch. For every chapter's figures."""
    for s in curves:
        ax.step(
            np.concatenate([[0.0], s.times]),
            np.concatenate([[1.0], s.probabilities]),
            where="post",
            color=colors.get(s.arm, COLORS["reference"]),
            lw=1.5,
            label=f"{labels.get(s.arm, s.arm)}: {s.reached} reached, {s.censored} censored",
        )
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("epoch")
