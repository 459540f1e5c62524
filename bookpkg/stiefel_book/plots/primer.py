"""Figures of the primer: St(3, 1) is the unit sphere, St(3, 2) its orthonormal pairs.

Every picture shows one step: a frame ``W``, a tangent step ``t ξ``, the Euclidean point
``W + t ξ`` (off the manifold) and the retracted frame ``R_W(t ξ)`` (back on it). The
``draw_*`` functions draw into a given axes, so that a widget, a single figure and
:func:`stiefel_book.plots.grid_figure` share them. All arithmetic is float64.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from torch import Tensor

from stiefel_core.manifold import orthonormality_error, orthonormalize, project_tangent, retract_polar

from . import COLORS, figsize, grid_figure, style

__all__ = [
    "VIEW",
    "example",
    "Step",
    "take_step",
    "retraction_gap",
    "box_limit",
    "draw_step",
    "step_figure",
    "retraction_grid",
    "first_order_figure",
]

VIEW = (22.0, 35.0)  # (elevation, azimuth) of every 3-D picture, in degrees


def _viewer() -> np.ndarray:
    """Unit vector from the origin towards the camera of :data:`VIEW`."""
    elev, azim = np.radians(VIEW)
    return np.array([np.cos(elev) * np.cos(azim), np.cos(elev) * np.sin(azim), np.sin(elev)])


def example(r: int = 1) -> tuple[Tensor, Tensor]:
    """The primer's fixed example in St(3, r), r in {1, 2}: a frame ``W`` facing the camera and a
    tangent direction ``ξ`` with ``‖ξ‖_F = 1`` that moves across the picture (float64)."""
    if r == 1:  # W near the top, so the tangent plane is seen at an angle; ξ across the line of sight
        W = torch.tensor([0.30, 0.12, 0.95], dtype=torch.float64)
        W = (W / W.norm()).reshape(3, 1)
        G = torch.linalg.cross(W[:, 0], torch.from_numpy(_viewer())).reshape(3, 1)
    elif r == 2:  # ξ = W A + w⊥ bᵀ: turns the pair within its plane (A skew) and tilts it out (b)
        W = orthonormalize(torch.tensor([[-0.18, -0.81], [0.96, -0.02], [-0.21, 0.59]], dtype=torch.float64))
        normal = torch.linalg.cross(W[:, 0], W[:, 1]).reshape(3, 1)
        A = torch.tensor([[0.0, -0.4], [0.4, 0.0]], dtype=torch.float64)
        G = W @ A + normal @ torch.tensor([[0.7, 0.5]], dtype=torch.float64)
    else:
        raise ValueError(f"the primer draws St(3, 1) and St(3, 2), not St(3, {r})")
    xi = project_tangent(W, G)
    return W, xi / torch.linalg.matrix_norm(xi)


@dataclass
class Step:
    """One step ``t ξ`` from ``W``: where it lands, where the retraction puts it, and how far apart. Chapter: primer."""

    t: float
    W: Tensor  # (3, r) the frame
    xi: Tensor  # (3, r) the unit tangent direction
    euclidean: Tensor  # (3, r) W + t ξ
    retracted: Tensor  # (3, r) R_W(t ξ)
    distance: float  # ‖W + t ξ − R_W(t ξ)‖_F: the distance of W + t ξ from the manifold
    error_euclidean: float  # ‖(W + t ξ)ᵀ(W + t ξ) − I‖_F
    error_retracted: float  # ‖R_W(t ξ)ᵀ R_W(t ξ) − I‖_F

    @property
    def r(self) -> int:
        return self.W.shape[-1]


def take_step(t: float, r: int = 1, W: Tensor | None = None, xi: Tensor | None = None) -> Step:
    """Step from ``W`` along ``t ξ`` (default: :func:`example` in St(3, r)) and retract polarly.

    The polar retraction returns the frame nearest to ``W + t ξ``, so the distance from
    ``W + t ξ`` to the manifold is ``‖W + t ξ − R_W(t ξ)‖_F``.
    Chapter: primer.
    """
    if W is None or xi is None:
        W, xi = example(r)
    euclidean = W + t * xi
    retracted = retract_polar(W, t * xi)
    return Step(
        t=float(t),
        W=W,
        xi=xi,
        euclidean=euclidean,
        retracted=retracted,
        distance=float(torch.linalg.matrix_norm(euclidean - retracted)),
        error_euclidean=float(orthonormality_error(euclidean)),
        error_retracted=float(orthonormality_error(retracted)),
    )


def retraction_gap(W: Tensor, xi: Tensor, ts) -> np.ndarray:
    """``‖R_W(t ξ) − (W + t ξ)‖_F`` for each ``t``: how far the retraction is from the straight step.
    Chapter: primer."""
    ts = torch.as_tensor(np.asarray(ts, dtype=np.float64))
    steps = ts[:, None, None] * xi  # (T, d, r)
    Ws = W.expand_as(steps)
    return torch.linalg.matrix_norm(retract_polar(Ws, steps) - (Ws + steps)).numpy()


def _sphere(ax: Axes) -> None:
    u, v = np.meshgrid(np.linspace(0, 2 * np.pi, 49), np.linspace(0, np.pi, 25))
    x, y, z = np.cos(u) * np.sin(v), np.sin(u) * np.sin(v), np.cos(v)
    ax.plot_surface(x, y, z, color=COLORS["reference"], alpha=0.06, linewidth=0, shade=False)
    ax.plot_wireframe(x, y, z, color=COLORS["reference"], alpha=0.18, linewidth=0.4, rstride=3, cstride=3)


def _frame_axes(ax: Axes, limit: float) -> None:
    ax.set_xlim(-limit, limit)
    ax.set_ylim(-limit, limit)
    ax.set_zlim(-limit, limit)
    ax.set_box_aspect((1, 1, 1), zoom=1.6)
    ax.view_init(*VIEW)
    ax.set_axis_off()


def _point(ax: Axes, p: np.ndarray, color: str, label: str, **kw) -> None:
    ax.scatter(*p, color=color, s=kw.pop("s", 28), depthshade=False, label=label, zorder=5, **kw)


def _arrow(ax: Axes, start: np.ndarray, vector: np.ndarray, color: str, **kw) -> None:
    ax.quiver(
        *start, *vector, color=color, arrow_length_ratio=kw.pop("ratio", 0.12), linewidth=kw.pop("linewidth", 1.8), **kw
    )


def _draw_sphere_step(ax: Axes, step: Step, limit: float, legend: bool) -> None:
    W, xi = step.W[:, 0].numpy(), step.xi[:, 0].numpy()
    E, R = step.euclidean[:, 0].numpy(), step.retracted[:, 0].numpy()
    _sphere(ax)
    # A patch of the tangent plane at W, spanned by ξ (along the step) and W x ξ.
    a, b = xi, np.cross(W, xi)
    corners = np.array([W + sa * a + sb * b for sa in (-0.35, step.t + 0.3) for sb in (-0.45, 0.45)])  # (4, 3)
    ax.plot_surface(
        *(corners[:, k].reshape(2, 2) for k in range(3)), color=COLORS["tangent"], alpha=0.18, linewidth=0, shade=False
    )
    # The geodesic arc from W to R (on the sphere) and the ray from the origin through R to W + tξ.
    angle = math.atan(step.t)
    s = np.linspace(0.0, angle, 40)[:, None]
    arc = np.cos(s) * W + np.sin(s) * xi
    ax.plot(*arc.T, color=COLORS["stiefel"], linewidth=1.2, alpha=0.8)
    ax.plot(*np.stack([np.zeros(3), E]).T, color=COLORS["reference"], linestyle=":", linewidth=1.0)
    if step.t > 0:
        _arrow(ax, W, step.t * xi, COLORS["tangent"])
    _point(ax, W, "black", "$W$")
    _point(ax, E, COLORS["euclidean"], r"$W + t\xi$ (off the sphere)")
    _point(ax, R, COLORS["stiefel"], r"$R_W(t\xi)$ (on the sphere)", marker="D")
    _frame_axes(ax, limit)
    if legend:
        ax.plot([], [], color=COLORS["tangent"], label=r"step $t\xi$ in the tangent plane")
        ax.legend(loc="lower left", fontsize=9, frameon=False)


def _draw_frame_step(ax: Axes, step: Step, limit: float, legend: bool) -> None:
    W, E, R = step.W.numpy(), step.euclidean.numpy(), step.retracted.numpy()
    _sphere(ax)
    origin = np.zeros(3)
    for j in range(2):
        _arrow(ax, origin, W[:, j], "black", linewidth=1.4, alpha=0.7)
        _arrow(ax, origin, E[:, j], COLORS["euclidean"], linewidth=1.4, linestyle="--")
        _arrow(ax, origin, R[:, j], COLORS["stiefel"], linewidth=2.2)
        if step.t > 0:  # the tangent step moves the tip of each column
            ax.plot(*np.stack([W[:, j], E[:, j]]).T, color=COLORS["tangent"], linewidth=1.2)
        ax.text(*(1.08 * W[:, j]), f"$w_{j + 1}$", fontsize=9)
    _frame_axes(ax, limit)
    if legend:
        for color, style_, label in (
            ("black", "-", "$W$: two orthonormal columns"),
            (COLORS["euclidean"], "--", r"$W + t\xi$: longer, not orthogonal"),
            (COLORS["stiefel"], "-", r"$R_W(t\xi)$: orthonormal again"),
        ):
            ax.plot([], [], color=color, linestyle=style_, label=label)
        ax.legend(loc="lower left", fontsize=9, frameon=False)


def box_limit(step: Step) -> float:
    """Half-width of a 3-D box that shows the unit sphere and every point of ``step``. Chapter: primer."""
    return max(1.05, 1.03 * float(step.euclidean.norm(dim=0).max()))


def draw_step(ax: Axes, t: float = 1.0, r: int = 1, *, limit: float | None = None, legend: bool = False) -> Step:
    """Draw one step of size ``t`` in St(3, r) (r = 1: the sphere; r = 2: a pair of columns)
    into the 3-D axes ``ax``; ``limit`` is the half-width of the box (default: fits the step).
    Chapter: primer."""
    step = take_step(t, r)
    if limit is None:
        limit = box_limit(step)
    (_draw_sphere_step if r == 1 else _draw_frame_step)(ax, step, limit, legend)
    return step


def step_figure(t: float = 1.0, r: int = 1) -> Figure:
    """One large picture of a step of size ``t`` in St(3, r), with a legend. Chapter: primer."""
    with style():
        fig = plt.figure(figsize=(5.6, 5.0))
        ax = fig.add_subplot(projection="3d")
        draw_step(ax, t, r, legend=True)
        where = "the unit sphere $S^2$" if r == 1 else "frames in St(3, 2)"
        ax.set_title(f"St(3, {r}), {where}: step $t = {t:g}$")
    return fig


def retraction_grid(ts=(0.25, 0.5, 1.0, 1.5), rs=(1, 2)) -> Figure:
    """The static counterpart of the primer's widget: one row per manifold, one column per step size.

    Every panel of a row shares the box, so the panels compare at one scale; each title gives
    the distance of ``W + t ξ`` from the manifold.
    """
    settings = [{"t": float(t), "r": r} for r in rs for t in ts]
    limits = {r: box_limit(take_step(max(ts), r)) for r in rs}

    def panel(ax: Axes, t: float, r: int) -> None:
        step = draw_step(ax, t, r, limit=limits[r])
        ax.set_title(f"St(3, {r}), $t = {t:g}$\ndistance {step.distance:.3f}", fontsize=9)

    fig = grid_figure(panel, settings, ncols=len(ts), panel=(2.6, 2.4), subplot_kw={"projection": "3d"}, label=None)
    fig.suptitle(r"$W$ (black), $W + t\xi$ (vermilion, off the manifold), $R_W(t\xi)$ (blue, on it)", fontsize=10)
    return fig


def first_order_figure(examples: dict[str, tuple[Tensor, Tensor]] | None = None, ts=None) -> Figure:
    """Log-log plot of ``‖R_W(t ξ) − (W + t ξ)‖_F`` against ``t``, beside ``t²/2``, for the frames
    ``examples`` (label -> ``(W, ξ)``) and the primer's St(3, 1) and St(3, 2) examples.

    The retraction agrees with the straight step to first order: the gap falls like ``t²``.
    """
    ts = np.logspace(-5, 0, 26) if ts is None else np.asarray(ts, dtype=np.float64)
    curves = dict(examples or {})
    curves.update({f"St(3, {r})": example(r) for r in (1, 2)})
    colors = [COLORS["stiefel"], COLORS["tangent"], COLORS["normal"], COLORS["highlight"]]
    with style():
        fig, ax = plt.subplots(figsize=figsize(1, 1, (5.0, 3.6)))
        for i, (label, (W, xi)) in enumerate(curves.items()):
            ax.loglog(
                ts,
                retraction_gap(W, xi, ts),
                marker="osd^v"[i % 5],
                markersize=3.5,
                linewidth=1.2,
                color=colors[i % len(colors)],
                label=label,
            )
        ax.loglog(ts, 0.5 * ts**2, color=COLORS["reference"], linestyle="--", label=r"$t^2/2$ (slope 2)")
        ax.set_xlabel("step size $t$")
        ax.set_ylabel(r"$\|R_W(t\xi) - (W + t\xi)\|_F$")
        ax.set_title("The retraction agrees with $W + t\\xi$ to first order")
        ax.legend()
    return fig
