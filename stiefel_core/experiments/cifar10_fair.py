"""A fair fight on CIFAR-10 (issue 28): the AdamW baseline's and the Stiefel rule's W_Q, W_K
learning rate swept in the long protocol of :mod:`.cifar10_long` (100 epochs, 10,000 images), at
each weight decay λ, on selection starts 100-102, apart from the judged starts 0-11.

An arm is ``"<arm>@wd=<λ>@qklr=<lr>"``; every other parameter keeps the task's lr (1e-3). Each
(arm, λ) grid starts at three rungs of :data:`.selection.LADDER` around the task's lr and grows by
the rule of :mod:`.selection` (score: a run's mean test accuracy over the last 20 % of its
epochs), as the grokking sweep does. A run takes ~6-7 minutes on one core.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ..results_reading import grid_arm, parse_grid_arm
from . import cifar10, cifar10_long
from .selection import LADDER, choice, is_interior, ladder_around, late_score, next_rungs, rung_scores

__all__ = ["SWEPT", "CifarSweepConfig", "PROFILES", "ARMS", "start_arms", "run", "sweep_scores", "pending", "chosen"]

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
ARMS = tuple(f"{cell}@{KEY}={lr:g}" for cell in _CELLS for lr in LADDER)


def _cells(config: CifarSweepConfig) -> tuple[str, ...]:
    return tuple(grid_arm(arm, "wd", wd) for wd in config.weight_decays for arm in SWEPT)


def start_arms(config: CifarSweepConfig) -> tuple[str, ...]:
    """Every cell's first grid: the task's lr and its two neighbours on the ladder."""
    return tuple(f"{cell}@{KEY}={lr:g}" for cell in _cells(config) for lr in ladder_around(config.task.lr, 1, 1))


def run(config: CifarSweepConfig, arm: str, seed: int, device, checkpoint=None, progress=True) -> dict:
    """One run: ``"<arm>@wd=<λ>@qklr=<lr>"`` from start ``seed``."""
    cell, lr = parse_grid_arm(arm, KEY, _CELLS)
    base, weight_decay = parse_grid_arm(cell, "wd", SWEPT)
    if lr not in LADDER or weight_decay not in config.weight_decays:
        raise ValueError(f"{arm!r}: lr must lie on the ladder and λ in {config.weight_decays}")
    task = dataclasses.replace(config.task, weight_decay=weight_decay, seeds=(seed,))
    return cifar10.train_arm(
        task,
        base,
        seed,
        device,
        checkpoint,
        progress,
        frame_lr=lr,
        description=f"cifar10 W_Q, W_K lr sweep {arm} start {seed}",
    )


def sweep_scores(sweep: dict, cell: str) -> dict[float, list[float]]:
    """``{lr: [late test accuracy per finished start]}`` of one ``"<arm>@wd=<λ>"`` cell."""
    epochs = sweep["config"]["task"]["epochs"]
    out: dict[float, list[float]] = {}
    for key, outcome in sorted(sweep["runs"].items()):
        name, _, _ = key.rpartition("/")
        if name.startswith(cell + "@"):
            out.setdefault(parse_grid_arm(name, KEY, _CELLS)[1], []).append(
                late_score(outcome["history"], epochs, metric="test_acc")
            )
    return out


def pending(sweep: dict | None, config: CifarSweepConfig, cell: str) -> tuple[float, ...]:
    """The rungs ``cell`` still needs: unfinished rungs of its grid, else the rule's next ones."""
    n = len(config.seeds)
    scores = sweep_scores(sweep, cell) if sweep else {}
    wanted = set(ladder_around(config.task.lr, 1, 1)) | set(scores)
    unfinished = tuple(lr for lr in sorted(wanted) if len(scores.get(lr, [])) < n)
    return unfinished or next_rungs(rung_scores(scores, n), scores, config.task.lr)


def chosen(sweep: dict, cell: str) -> dict:
    """``{"lr", "score", "interior", "scores"}``: the rule's choice for one cell."""
    complete = rung_scores(sweep_scores(sweep, cell), len(sweep["config"]["seeds"]))
    lr = choice(complete, sweep["config"]["task"]["lr"])
    return {"lr": lr, "score": complete[lr], "interior": is_interior(complete, lr), "scores": complete}


def sweep(run_experiment, profile: str, cells: tuple[str, ...] | None = None, **options) -> dict:
    """Grow the sweep of ``cells`` (default every cell of the profile) until each choice is final."""
    from .results import load_results

    config = PROFILES[profile]
    cells = cells or _cells(config)
    while True:
        results = load_results("cifar10_qk_lr", profile, options.get("directory"))
        names = [f"{cell}@{KEY}={lr:g}" for cell in cells for lr in pending(results, config, cell)]
        if not names:
            return results
        run_experiment("cifar10_qk_lr", profile, arms=names, **options)
