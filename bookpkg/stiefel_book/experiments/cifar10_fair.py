"""A fair fight on CIFAR-10 (issue 28): the AdamW baseline's and the Stiefel rule's W_Q, W_K
learning rate swept in the long protocol of :mod:`.cifar10_long` (100 epochs, 10,000 images), at
each weight decay λ, on selection starts 100-102, apart from the judged starts 0-11.

An arm is ``"<arm>@wd=<λ>@qklr=<lr>"``; every other parameter keeps the task's lr (1e-3). Each
(arm, λ) grid starts at three rungs of :data:`stiefel_book.choices.LADDER` around the task's lr and grows by
the rule of :mod:`stiefel_book.choices` (score: a run's mean test accuracy over the last 20 % of its
epochs), as the grokking sweep does. A run takes ~6-7 minutes on one core.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..results_reading import grid_arm
from . import cifar10, cifar10_long
from .registry import Experiment
from .relatives import without_parametrized_steps
from .study import Study, in_cells

__all__ = [
    "ENTRIES",
    "SWEPT",
    "CifarSweepConfig",
    "PROFILES",
    "ARMS",
    "study",
    "train",
    "start_arms",
    "run",
    "sweep_scores",
    "pending",
    "chosen",
]

SWEPT = ("baseline", "stiefel")


@dataclass(frozen=True)
class CifarSweepConfig:
    task: cifar10.CIFAR10Config = field(default_factory=lambda: cifar10_long.PROFILES["full"].task)
    weight_decays: tuple[float, ...] = (1.0, 0.3, 0.05)  # λ = 1 first: the decay of the preprint's 12 starts
    seeds: tuple[int, ...] = (100, 101, 102)  # selection starts, apart from the judged 0-11


PROFILES = {
    "full": CifarSweepConfig(),
    "ci": CifarSweepConfig(task=cifar10_long.PROFILES["ci"].task, weight_decays=(1.0,), seeds=(100,)),
}


def train(task, arm, seed, device, checkpoint, progress, qk_lr, *, what: str = "W_Q, W_K lr sweep") -> dict:
    """One CIFAR-10 run of ``arm`` with W_Q, W_K at ``qk_lr`` (0: frozen frames, below the ladder's foot)."""
    frozen = qk_lr == 0.0
    outcome = cifar10.train_arm(
        task,
        "frozen" if frozen else arm,
        seed,
        device,
        checkpoint,
        progress,
        qk_lr=None if frozen else qk_lr,
        description=f"cifar10 {what} {arm} start {seed}",
    )
    return outcome if frozen else without_parametrized_steps(arm, outcome)


def _cells(config: CifarSweepConfig) -> tuple[str, ...]:
    return tuple(grid_arm(arm, "wd", wd) for wd in config.weight_decays for arm in SWEPT)


def study(config: CifarSweepConfig) -> Study:
    """``cifar10_qk_lr`` at a profile: each (arm, λ) cell, the late test accuracy, three first rungs."""
    return Study(
        "cifar10_qk_lr",
        config.task,
        _cells(config),
        config.seeds,
        in_cells(train, SWEPT),
        "test_acc",
        start=(1, 1),
        frozen=None,
    )


_CELLS = tuple(
    grid_arm(arm, "wd", wd) for arm in SWEPT for wd in sorted({w for p in PROFILES.values() for w in p.weight_decays})
)
ARMS = study(PROFILES["full"]).run_names(_CELLS)  # lr 0: frozen frames


def start_arms(config: CifarSweepConfig) -> tuple[str, ...]:
    """Every cell's first grid: the task's lr and its two neighbours on the ladder."""
    return study(config).start_arms()


def run(config: CifarSweepConfig, arm: str, seed: int, device, checkpoint=None, progress=True) -> dict:
    """One run: ``"<arm>@wd=<λ>@qklr=<lr>"`` from start ``seed``."""
    return study(config).run(arm, seed, device, checkpoint, progress)


def sweep_scores(sweep: dict, cell: str) -> dict[float, list[float]]:
    """``{lr: [late test accuracy per finished start]}`` of one ``"<arm>@wd=<λ>"`` cell."""
    return study(PROFILES["full"]).scores(sweep, cell)


def pending(sweep: dict | None, config: CifarSweepConfig, cell: str) -> tuple[float, ...]:
    """The rungs ``cell`` still needs: unfinished rungs of its grid, else the rule's next ones."""
    return study(config).pending_rungs(sweep, cell)


def chosen(sweep: dict, cell: str) -> dict:
    """``{"lr", "score", "interior", "scores"}``: the rule's choice for one cell (refused before a complete rung)."""
    return study(PROFILES["full"]).chosen(sweep, cell, required=True)


def sweep(run_experiment, profile: str, cells: tuple[str, ...] | None = None, **options) -> dict:
    """Grow the sweep of ``cells`` (default every cell of the profile) until each choice is final."""
    return study(PROFILES[profile]).grow(run_experiment, profile, cells, **options)


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
