"""A fair fight on CIFAR-10 (issue 28): the AdamW baseline's and the Stiefel rule's W_Q, W_K
learning rate swept in the long protocol of :mod:`.cifar10_long` (100 epochs, 10,000 images), at
each weight decay λ, on selection starts 100-102, apart from the judged starts 0-11.

An arm is ``"<arm>@wd=<λ>@qklr=<lr>"``; every other parameter keeps the task's lr (1e-3). Each
(arm, λ) grid starts at three rungs of :data:`stiefel_book.choices.LADDER` around the task's lr and grows by
the rule of :mod:`stiefel_book.choices` (score: a run's mean test accuracy over the last 20 % of its
epochs), as the grokking sweep does. A run takes ~6-7 minutes on one core.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from .. import choices
from ..choices import LADDER, ladder_around, late_scores
from ..results_reading import grid_arm, parse_grid_arm
from . import cifar10, cifar10_long
from .registry import Experiment
from .selection import grow_arms

__all__ = [
    "ENTRIES",
    "SWEPT",
    "CifarSweepConfig",
    "PROFILES",
    "ARMS",
    "start_arms",
    "run",
    "sweep_scores",
    "pending",
    "chosen",
]

SWEPT = ("baseline", "stiefel")
KEY = "qklr"


@dataclass(frozen=True)
class CifarSweepConfig:
    task: cifar10.CIFAR10Config = field(default_factory=lambda: cifar10_long.PROFILES["full"].task)
    weight_decays: tuple[float, ...] = (1.0, 0.3, 0.05)  # λ = 1 first: the decay of the preprint's 12 starts
    seeds: tuple[int, ...] = (100, 101, 102)  # selection starts, apart from the judged 0-11


PROFILES = {
    "full": CifarSweepConfig(),
    "ci": CifarSweepConfig(task=cifar10_long.PROFILES["ci"].task, weight_decays=(1.0,), seeds=(100,)),
}
_CELLS = tuple(
    grid_arm(arm, "wd", wd) for arm in SWEPT for wd in sorted({w for p in PROFILES.values() for w in p.weight_decays})
)
ARMS = tuple(f"{cell}@{KEY}={lr:g}" for cell in _CELLS for lr in (0.0, *LADDER))  # lr 0: frozen frames


def _cells(config: CifarSweepConfig) -> tuple[str, ...]:
    return tuple(grid_arm(arm, "wd", wd) for wd in config.weight_decays for arm in SWEPT)


def start_arms(config: CifarSweepConfig) -> tuple[str, ...]:
    """Every cell's first grid: the task's lr and its two neighbours on the ladder."""
    return tuple(f"{cell}@{KEY}={lr:g}" for cell in _cells(config) for lr in ladder_around(config.task.lr, 1, 1))


def run(config: CifarSweepConfig, arm: str, seed: int, device, checkpoint=None, progress=True) -> dict:
    """One run: ``"<arm>@wd=<λ>@qklr=<lr>"`` from start ``seed``."""
    cell, lr = parse_grid_arm(arm, KEY, _CELLS)
    base, weight_decay = parse_grid_arm(cell, "wd", SWEPT)
    if lr not in (0.0, *LADDER) or weight_decay not in config.weight_decays:
        raise ValueError(f"{arm!r}: lr must be 0 or lie on the ladder, and λ in {config.weight_decays}")
    task = dataclasses.replace(config.task, weight_decay=weight_decay, seeds=(seed,))
    return cifar10.train_arm(
        task,
        "frozen" if lr == 0.0 else base,  # below the ladder's foot, lr 0: the frames never move
        seed,
        device,
        checkpoint,
        progress,
        frame_lr=None if lr == 0.0 else lr,
        description=f"cifar10 W_Q, W_K lr sweep {arm} start {seed}",
    )


def sweep_scores(sweep: dict, cell: str) -> dict[float, list[float]]:
    """``{lr: [late test accuracy per finished start]}`` of one ``"<arm>@wd=<λ>"`` cell."""
    return late_scores(sweep, cell, "test_acc", key=KEY)


def pending(sweep: dict | None, config: CifarSweepConfig, cell: str) -> tuple[float, ...]:
    """The rungs ``cell`` still needs: unfinished rungs of its grid, else the rule's next ones."""
    scores = sweep_scores(sweep, cell) if sweep else {}
    return choices.pending_rungs(scores, len(config.seeds), ladder_around(config.task.lr, 1, 1), config.task.lr)


def chosen(sweep: dict, cell: str) -> dict:
    """``{"lr", "score", "interior", "scores"}``: the rule's choice for one cell."""
    return choices.settled(sweep_scores(sweep, cell), len(sweep["config"]["seeds"]), sweep["config"]["task"]["lr"])


def sweep(run_experiment, profile: str, cells: tuple[str, ...] | None = None, **options) -> dict:
    """Grow the sweep of ``cells`` (default every cell of the profile) until each choice is final."""
    config = PROFILES[profile]
    return grow_arms(run_experiment, "cifar10_qk_lr", profile, config, cells or _cells(config), pending, KEY, **options)


ENTRIES = (  # this module's experiments, collected by the runner
    Experiment(
        "cifar10_qk_lr",
        PROFILES,
        ARMS,
        run,
        "CIFAR-10 long protocol, AdamW's and the Stiefel rule's W_Q, W_K lr swept at each λ on 3 selection starts",
        arms_of=start_arms,
    ),
)
