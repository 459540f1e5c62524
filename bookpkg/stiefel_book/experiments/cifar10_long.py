"""CIFAR-10 where weight decay can act: long training on a class-balanced subset, over a grid of
weight decays, with the mechanism's controls.

The ``cifar10`` protocol trains 2 epochs with a decay budget Σ lr·λ of about 0.02: decay cannot
act there, and every arm underfits. Here the same model trains 100 epochs on 10,000 images
(7,800 steps), long enough for its train accuracy to pass its test accuracy, at λ ∈ {0.05, 0.3,
1}: budgets of about 0.2, 1.2 and 3.9. An arm is ``"<arm>@wd=<λ>"``; each run records the lr
schedule's budget beside its metrics.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from . import cifar10
from .grid import decay_cell, grid_arms
from .registry import Experiment

__all__ = ["ENTRIES", "LongConfig", "PROFILES", "LONG_ARMS", "ARMS", "arm_names", "run"]

LONG_ARMS = ("baseline", "stiefel", "frozen", "no_decay_qk")
WEIGHT_DECAYS = (0.05, 0.3, 1.0)  # DeiT's 0.05, then budgets at which decay shrinks weights by e^-1 and more


def _base() -> cifar10.CIFAR10Config:
    return replace(
        cifar10.PROFILES["full"],
        train_size=10_000,  # class balanced (a prefix of the balanced order): ~4 s an epoch on one core
        epochs=100,  # 7,800 steps: the model fits its training set past its test accuracy
        log_every=5,  # a test pass over 10,000 images costs a third of an epoch: every 5th epoch
        checkpoint_every=10,  # at most ~40 s lost to an interruption
        seeds=(0, 1, 2),
    )


@dataclass(frozen=True)
class LongConfig:
    """The long CIFAR-10 runs: their task, the grid of weight decays, the starts. Chapter: regimes."""

    task: cifar10.CIFAR10Config = field(default_factory=_base)
    weight_decays: tuple[float, ...] = WEIGHT_DECAYS
    seeds: tuple[int, ...] = (0, 1, 2)  # the "at least 3 paired starts"


def arm_names(config: LongConfig) -> tuple[str, ...]:
    """Every ``"<arm>@wd=<λ>"`` of a profile. Chapter: regimes."""
    return grid_arms(LONG_ARMS, "wd", config.weight_decays)


PROFILES = {
    "full": LongConfig(),
    # the machinery in seconds: 1,000 images, 4 epochs, one decay, one start
    "ci": LongConfig(
        task=replace(cifar10.PROFILES["ci"], train_size=1_000, test_size=500, epochs=4, log_every=2),
        weight_decays=(1.0,),
        seeds=(0,),
    ),
}
ARMS = tuple(dict.fromkeys(name for profile in PROFILES.values() for name in arm_names(profile)))


def run(config: LongConfig, arm: str, seed: int, device, checkpoint=None, progress=True) -> dict:
    """One run: ``arm`` (``"<arm>@wd=<λ>"``) from start ``seed`` at decay λ. Chapter: regimes."""
    base, _, task = decay_cell(config, arm, seed, LONG_ARMS)
    return cifar10.train_arm(
        task, base, seed, device, checkpoint, progress, description=f"cifar10 long {arm} start {seed}"
    )


ENTRIES = (  # this module's experiments, collected by the runner
    Experiment(
        "cifar10_long",
        PROFILES,
        ARMS,
        run,
        "CIFAR-10 patches, 100 epochs on 10,000 images, λ 0.05-1, four arms, 3 paired starts",
        arms_of=arm_names,
    ),
)
