"""The W_Q, W_K lr sweeps of the routing tasks (``mqar_qk_lr``, ``induction_qk_lr``,
``charlm_qk_lr``): the rule of :mod:`.selection`, as ``grokking_qk_lr`` applies it
(:mod:`.fair_fight`), on each task's ``full`` setting and on selection seeds 100-104, apart from
the judged seeds. An arm is ``"<arm>@qklr=<lr>"``, every other parameter at the task's lr; the
grid starts at four rungs around the task's lr and grows until each arm's choice is interior;
``frozen`` is every arm's lr 0. A run's score is its mean of ``metric`` over the last 20 % of
training (validation accuracy; for the language model, minus the bits per character).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

from ..results_reading import grid_arm, parse_grid_arm
from .results import load_results
from .selection import LADDER, choice, is_interior, ladder_around, late_score, next_rungs, rung_scores

__all__ = [
    "SWEPT_ARMS",
    "KEY",
    "RoutingSweepConfig",
    "sweep_arms",
    "start_arms",
    "runner",
    "sweep_scores",
    "pending_rungs",
    "chosen",
    "sweep",
]

SWEPT_ARMS = ("baseline", "stiefel", "no_decay_qk", "qk_norm", "muon")
KEY = "qklr"


@dataclass(frozen=True)
class RoutingSweepConfig:
    task: object  # the task's config (its ``steps`` is the score's horizon)
    metric: str = "val_acc"  # higher is better; a leading "-" negates (``-val_bpc``)
    seeds: tuple[int, ...] = (100, 101, 102, 103, 104)  # selection seeds, apart from the judged 0-19
    start_below: int = 2  # the first grid: two rungs under the task's lr, one over it
    start_above: int = 1


def sweep_arms() -> tuple[str, ...]:
    """Every name a sweep may run: each swept arm at each rung, and ``frozen``."""
    return (*(grid_arm(arm, KEY, lr) for arm in SWEPT_ARMS for lr in LADDER), "frozen")


def start_rungs(config: RoutingSweepConfig) -> tuple[float, ...]:
    return ladder_around(config.task.lr, config.start_below, config.start_above)


def start_arms(config: RoutingSweepConfig) -> tuple[str, ...]:
    """The first grid of every swept arm, then ``frozen`` (lr 0)."""
    return (*(grid_arm(arm, KEY, lr) for arm in SWEPT_ARMS for lr in start_rungs(config)), "frozen")


def runner(run_task: Callable) -> Callable:
    """The sweep's run of one ``"<arm>@qklr=<lr>"`` (or ``frozen``) from a seed, by ``run_task``
    (the task's run function, which takes ``qk_lr``)."""

    def run(config: RoutingSweepConfig, arm: str, seed: int, device, checkpoint=None, progress=True) -> dict:
        task = dataclasses.replace(config.task, seeds=(seed,))
        if arm == "frozen":
            return run_task(task, "frozen", seed, device, checkpoint, progress)
        base, lr = parse_grid_arm(arm, KEY, SWEPT_ARMS)
        if lr not in LADDER:
            raise ValueError(f"{arm!r}: lr {lr:g} is not on the ladder {LADDER}")
        return run_task(task, base, seed, device, checkpoint, progress, qk_lr=lr)

    return run


def _score(history: list[dict], steps: int, metric: str) -> float:
    sign, name = (-1.0, metric[1:]) if metric.startswith("-") else (1.0, metric)
    return sign * late_score(history, steps, name)


def sweep_scores(results: dict, arm: str) -> dict[float, list[float]]:
    """``{lr: [score per finished selection seed]}`` of ``arm``; lr 0 (``frozen``) counts once
    the arm's grid has reached the ladder's bottom."""
    config = results["config"]
    out: dict[float, list[float]] = {}
    for key, outcome in sorted(results["runs"].items()):
        name = key.rpartition("/")[0]
        if name == "frozen":
            lr = 0.0
        elif name.startswith(arm + "@"):
            lr = parse_grid_arm(name, KEY, SWEPT_ARMS)[1]
        else:
            continue
        out.setdefault(lr, []).append(_score(outcome["history"], config["task"]["steps"], config["metric"]))
    if LADDER[0] not in out:
        out.pop(0.0, None)
    return out


def pending_rungs(results: dict | None, config: RoutingSweepConfig, arm: str) -> tuple[float, ...]:
    """The rungs ``arm`` still needs: its first grid's unfinished rungs, else the rule's next ones."""
    n = len(config.seeds)
    scores = sweep_scores(results, arm) if results else {}
    unfinished = tuple(lr for lr in sorted(set(start_rungs(config)) | set(scores)) if len(scores.get(lr, [])) < n)
    if unfinished:
        return unfinished
    return next_rungs(rung_scores(scores, n), scores, config.task.lr)


def chosen(results: dict, arm: str) -> dict:
    """``{"lr", "score", "interior", "scores"}``: the rule's choice for ``arm``."""
    complete = rung_scores(sweep_scores(results, arm), len(results["config"]["seeds"]))
    lr = choice(complete, results["config"]["task"]["lr"])
    return {"lr": lr, "score": complete[lr], "interior": is_interior(complete, lr), "scores": complete}


def sweep(
    run_experiment: Callable,
    name: str,
    profile: str,
    config: RoutingSweepConfig,
    arms: tuple[str, ...] = SWEPT_ARMS,
    **options,
) -> dict:
    """Grow sweep ``name`` for ``arms`` until every choice is final, one round of pending rungs at
    a time (resumable: each round reads the file)."""
    directory = options.get("directory")
    while True:
        results = load_results(name, profile, directory)
        names = [
            grid_arm(arm, KEY, lr) if lr else "frozen" for arm in arms for lr in pending_rungs(results, config, arm)
        ]
        names = list(dict.fromkeys(names))
        if not names:
            return results
        run_experiment(name, profile, arms=names, **options)


def _profiles(task_profiles: dict, metric: str) -> dict:
    return {
        "full": RoutingSweepConfig(task_profiles["full"], metric),
        "ci": RoutingSweepConfig(task_profiles["ci"], metric, seeds=(100,), start_below=1, start_above=0),
    }


def _tasks() -> dict[str, tuple[dict, Callable]]:
    from . import charlm, routing

    return {
        "mqar_qk_lr": (_profiles(routing.MQAR_PROFILES, "val_acc"), routing.run_mqar),
        "induction_qk_lr": (_profiles(routing.INDUCTION_PROFILES, "val_acc"), routing.run_induction),
        "charlm_qk_lr": (_profiles(charlm.PROFILES, "-val_bpc"), charlm.run),
    }


SWEEPS = _tasks()  # sweep name -> (its profiles, the task's run)
