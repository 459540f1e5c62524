"""A W_Q, W_K learning-rate sweep's horizontal axis: the ladder's rungs on a log scale, and lr 0
(frozen frames, the ladder's true bottom) drawn one rung below the smallest rate tried, joined to
it by a dotted segment, with the tick "0", so that a sweep which chose lr 0 shows its choice
instead of dropping it off the log axis. Chapters: fair fight, CIFAR-10, routing, peers."""

from __future__ import annotations

import numpy as np

from ..labels import rate_text

__all__ = ["rung_label", "position", "draw_ladder", "set_rate_ticks"]

STEP_BELOW = 3.0  # where lr 0 sits: this factor under the smallest positive rate


def rung_label(lr: float) -> str:
    """A rung written short (:func:`labels.rate_text`): ``3e-4``, ``1``; lr 0 is ``0``."""
    return rate_text(lr)


def position(rates) -> dict[float, float]:
    """``{rate: x}`` on a log axis for every rate in ``rates``: each positive rate at itself, lr 0
    at :data:`STEP_BELOW` under the smallest positive one (at 1e-6 when there is none)."""
    rates = sorted({float(r) for r in rates})
    if any(r < 0 for r in rates):
        raise ValueError(f"a learning rate cannot be negative: {rates}")
    positive = [r for r in rates if r > 0]
    bottom = (positive[0] if positive else 1e-6) / STEP_BELOW
    return {r: (r if r > 0 else bottom) for r in rates}


def draw_ladder(ax, scores: dict[float, float], where: dict[float, float], **line) -> None:
    """One arm's scores against its rates (``where``: :func:`position` of every rate on ``ax``): a
    solid line through the positive rates, dotted from lr 0 to the first of them."""
    rates = sorted(r for r, v in scores.items() if v is not None)
    positive = [r for r in rates if r > 0]
    ax.plot([where[r] for r in positive], [scores[r] for r in positive], **line)
    if rates and rates[0] == 0:
        to = positive[:1]
        style = {k: v for k, v in line.items() if k in ("color", "marker", "ms", "zorder")}
        ax.plot([where[0.0], *(where[r] for r in to)], [scores[0.0], *(scores[r] for r in to)], ls=":", **style)


def set_rate_ticks(ax, where: dict[float, float], fontsize: float = 8) -> None:
    """A log axis with a tick at every rate of ``where`` (:func:`position`), labelled by :func:`rung_label`."""
    ax.set_xscale("log")
    rates = sorted(where)
    crowded = len(rates) > 5  # slanted, so that neighbouring labels do not run into each other
    ax.set_xticks(
        [where[r] for r in rates],
        [rung_label(r) for r in rates],
        fontsize=fontsize,
        rotation=45 if crowded else 0,
        ha="right" if crowded else "center",
        rotation_mode="anchor",
    )
    ax.minorticks_off()
    if rates:
        span = np.log10(max(where.values()) / min(where.values()))
        pad = 10 ** max(0.15, 0.08 * span)
        ax.set_xlim(min(where.values()) / pad, max(where.values()) * pad)
