"""The CIFAR-10 chapter's explorer: one learning rate for both arms, on a subset small enough
that a trial finishes in seconds on a CPU (512 training images, 4 epochs of 8 steps, the
``ci`` profile's model and 1,000 test images)."""

from __future__ import annotations

import functools
from dataclasses import replace

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..experiments.cifar10 import PROFILES
from ..plots import figsize, style
from ..plots.cifar10 import ARM_COLORS, ARM_LABELS
from ..tasks import cifar10
from . import Explorer, explorer, log_slider

__all__ = ["TRIAL_IMAGES", "trial", "draw_trial", "draw_lr", "lr_explorer"]

TRIAL_IMAGES = 512  # 8 steps of 64 an epoch


@functools.lru_cache(maxsize=64)
def trial(lr: float, arm: str, seed: int = 0, epochs: int = 4) -> dict:
    """One small run of ``arm`` at learning rate ``lr`` (every parameter; frames included)."""
    config = replace(PROFILES["ci"], lr=lr, epochs=epochs)
    return cifar10.train(config, arm, seed, "cpu", progress=False, train_size=TRIAL_IMAGES)


def draw_trial(ax: Axes, lr: float, arms=("baseline", "stiefel")) -> str:
    """Test accuracy by step of each arm at ``lr``; returns a one-line readout."""
    parts = []
    for arm in arms:
        history = trial(lr, arm)["history"]
        ax.plot(
            [r["steps_done"] for r in history],
            [100 * r["test_acc"] for r in history],
            "o-",
            color=ARM_COLORS[arm],
            label=ARM_LABELS[arm],
        )
        parts.append(f"{arm} {100 * history[-1]['test_acc']:.1f}%")
    ax.axhline(10, color="black", lw=0.6, ls=":")
    ax.set_xlabel("step")
    ax.set_ylabel("test accuracy (%)")
    return f"lr = {lr:.2g}: " + ", ".join(parts)


def draw_lr(lr: float = 1e-3) -> tuple[Figure, str]:
    """The explorer's drawing: both arms at ``lr``."""
    with style():
        fig, ax = plt.subplots(figsize=figsize(1, 1, (4.6, 3.2)))
        text = draw_trial(ax, lr)
        ax.legend()
        ax.set_title(f"lr = {lr:.2g}, {TRIAL_IMAGES} training images")
    return fig, text


def lr_explorer(lr: float = 1e-3) -> Explorer:
    """A log slider for the learning rate of both arms (1e-4 to 3e-2)."""
    return explorer(draw_lr, lr=log_slider(-4, -1.5, lr, "learning rate", step=0.25))
