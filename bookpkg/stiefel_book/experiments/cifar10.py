"""The CIFAR-10 patches experiments (their task, model and training: :mod:`stiefel_book.tasks.cifar10`):
``cifar10`` (the four arms on the full training set) and ``cifar10_sweep`` (baseline and Stiefel on nested,
class-balanced subsets of 10 %, 20 %, 40 % and 100 % of it, each trained for the same number of steps). Their
arms and profiles are light (no torch: the task loads when a run starts), so that the findings read them.
Chapter: cifar10_patches."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from .. import preprint
from ..engine.registry import Experiment
from ..tasks.cifar10_config import CIFAR10Config

__all__ = [
    "ARMS",
    "SWEEP_ARMS",
    "SWEEP_FRACTIONS",
    "SWEEP_ARM_NAMES",
    "PROFILES",
    "ENTRIES",
    "run",
    "run_sweep",
    "PREPRINT",
]

ARMS = ("baseline", "stiefel", "fixed_step", "frozen")
CONTROL_ONLY_ARMS = ("no_decay_qk", "fixed_step_matched")  # the mechanism's other controls, run on request
SWEEP_ARMS = ("baseline", "stiefel")
SWEEP_FRACTIONS = (0.1, 0.2, 0.4, 1.0)  # of the training pool: 5k, 10k, 20k, 50k images at full scale
SWEEP_ARM_NAMES = tuple(f"{arm}@{round(100 * f)}%" for f in SWEEP_FRACTIONS for arm in SWEEP_ARMS)


PROFILES = {
    "full": CIFAR10Config(),
    # The chapter's live run: 2,000 training and 1,000 test images, two starts, seconds a run.
    "ci": CIFAR10Config(
        train_size=2_000, test_size=1_000, batch_size=64, epochs=2, checkpoint_every=1_000, seeds=(0, 1)
    ),
}
SWEEP_PROFILES = {
    "full": replace(PROFILES["full"], seeds=tuple(range(4))),  # 4 starts x 8 runs: ~40 min on one core
    "ci": replace(PROFILES["ci"], seeds=(0, 1)),
}


def run(
    config: CIFAR10Config, arm: str, seed: int, device, checkpoint: Path | None = None, progress: bool = True
) -> dict:
    """One run of the ``cifar10`` experiment: ``arm`` from start ``seed`` on the whole pool.
    Chapter: cifar10_patches."""
    if arm not in ARMS + CONTROL_ONLY_ARMS:
        raise ValueError(f"unknown arm {arm!r}; cifar10 has {ARMS}, and on request {CONTROL_ONLY_ARMS}")
    from ..tasks.cifar10 import train_arm

    return train_arm(config, arm, seed, device, checkpoint, progress)


def sweep_arm(name: str) -> tuple[str, float]:
    """``"stiefel@20%"`` -> ``("stiefel", 0.2)``. Chapter: cifar10_patches."""
    if name not in SWEEP_ARM_NAMES:
        raise ValueError(f"unknown arm {name!r}; cifar10_sweep has {SWEEP_ARM_NAMES}")
    arm, percent = name.split("@")
    return arm, int(percent.rstrip("%")) / 100


def run_sweep(
    config: CIFAR10Config, arm: str, seed: int, device, checkpoint: Path | None = None, progress: bool = True
) -> dict:
    """One run of ``cifar10_sweep``: ``arm`` is ``"<arm>@<percent>%"``. A fraction f of the pool
    trains for ``epochs / f`` epochs, so every size takes the same number of steps (and logs and
    checkpoints after the same numbers of steps).
    Chapter: cifar10_patches."""
    from ..tasks.cifar10 import train

    base, fraction = sweep_arm(arm)
    return train(
        config,
        base,
        seed,
        device,
        checkpoint,
        progress,
        train_size=round(config.train_size * fraction),
        epochs=round(config.epochs / fraction),
        log_every=max(1, round(config.log_every / fraction)),
        checkpoint_every=max(1, round(config.checkpoint_every / fraction)),
        description=f"cifar10 sweep {arm} start {seed}",
    )


PREPRINT = preprint.CIFAR10  # the chapter's first cell reads the abstract's numbers here; they live in preprint


ENTRIES = (  # this module's experiments, collected by the runner
    Experiment(
        "cifar10",
        PROFILES,
        ARMS,
        run,
        "CIFAR-10 patches, 4 arms x 12 paired starts",
        optional_arms=CONTROL_ONLY_ARMS,
    ),
    Experiment(
        "cifar10_sweep",
        SWEEP_PROFILES,
        SWEEP_ARM_NAMES,
        run_sweep,
        "CIFAR-10 patches, baseline vs Stiefel over 4 training-set sizes",
    ),
)
