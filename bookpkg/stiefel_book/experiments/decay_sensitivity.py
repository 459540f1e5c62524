"""The tuning budget over weight decay (issue 49, item 3; ``book/protocol.yml``, sweeps
``*_decay_sensitivity``): each arm at its best model lr in its task's lr sensitivity sweep
(:mod:`.lr_sensitivity`; W_Q, W_K at its ratio there), the decay λ of every decayed parameter over
:data:`DECAYS`, on that sweep's seeds; the task's own λ (0.1) is that sweep's run at the arm's best
rung, adopted. An arm's best rung is read from the file at its first run and recorded in every run."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

from ..engine.registry import Experiment, profiles
from ..engine.study import SweepError
from ..model_lr import best_rung
from ..results import json_safe, load_results
from ..results_reading import grid_arm, parse_grid_arm, without_seeds
from .lr_sensitivity import ADDED, ARMS, KEY, RUNGS, SENSITIVITY, SWEEPS, TASKS, Task, recorded, task_arm

__all__ = ["DECAYS", "DECAY_KEY", "DecaySensitivityConfig", "ENTRIES", "at_best", "decay_runner"]

DECAYS = (0.0, 0.1, 0.3, 1.0, 3.0)
DECAY_KEY = "wd"


@dataclass(frozen=True)
class DecaySensitivityConfig:
    task: object  # the task's config (the source sweep's task); a run sets the arm's best model lr and its λ
    metric: str  # as the source sweep's
    source: str  # the tuning-budget sweep over the model lr whose best rung and W_Q, W_K lr each arm takes
    decays: tuple[float, ...] = DECAYS
    arms: tuple[str, ...] = ARMS
    seeds: tuple[int, ...] = (200, 201, 202)
    sweep_profile: str = "full"
    fixed: tuple[tuple[str, float, float], ...] = ()  # (arm, model lr, W_Q, W_K lr) fixed here (ci), else read


def at_best(config: DecaySensitivityConfig, arm: str, directory=None) -> tuple[float, float, dict]:
    """``(model lr, W_Q, W_K lr, the source file)`` of ``arm``: its best rung in ``config.source`` (the rung of
    lowest mean final score over the declared seeds, :func:`stiefel_book.model_lr.best_rung`) and the W_Q, W_K lr
    its run there had. Refused, with the command, while that file lacks a rung or seed of the arm."""
    fixed = {a: (lr, qk_lr) for a, lr, qk_lr in config.fixed}
    if fixed:
        if arm not in fixed:
            raise ValueError(f"no fixed model lr for {arm!r} in this profile: it has {sorted(fixed)}")
        return (*fixed[arm], {})
    source = load_results(config.source, config.sweep_profile, directory)
    best = best_rung(source, arm) if source else None
    if best is None:
        named = f" --arms {' '.join(grid_arm(arm, KEY, lr) for lr in RUNGS)}" * (arm in ADDED)
        command = f"python -m stiefel_book run {config.source} --profile {config.sweep_profile}{named}"
        raise SweepError(f"{config.source} does not hold every rung of {arm!r} on every seed yet: run `{command}`")
    if without_seeds(source["config"]["task"]) != without_seeds(json_safe(dataclasses.asdict(config.task))):
        raise SweepError(f"{config.source} ({config.sweep_profile}) ran another task than this sweep's")
    run = source["runs"][f"{grid_arm(arm, KEY, best)}/{config.seeds[0]}"]
    return best, float(run["qk_lr"]), source


def decay_runner(task: Task) -> Callable:
    """The run of ``"<arm>@wd=<λ>"`` from a seed: the task's run at the arm's best model lr and W_Q, W_K lr
    (:func:`at_best`) and decay λ, logits recorded; the outcome adds ``weight_decay`` to :func:`recorded`'s."""

    def run(config: DecaySensitivityConfig, arm: str, seed: int, device, checkpoint=None, progress=True) -> dict:
        base, decay = parse_grid_arm(arm, DECAY_KEY, config.arms + ADDED)
        if decay not in config.decays:
            raise ValueError(f"{arm!r}: λ = {decay:g} is not a declared decay {config.decays}")
        lr, qk_lr, source = at_best(config, base)
        there = source.get("runs", {}).get(f"{grid_arm(base, KEY, lr)}/{config.seeds[0]}", {})
        extra = {"qk_temperature": there["qk_temperature"]} if "qk_temperature" in there else {}  # the tuned QK-norm's
        task_config = dataclasses.replace(config.task, lr=lr, weight_decay=decay, seeds=(seed,))
        outcome = recorded(task, task_config, task_arm(base, extra), seed, device, checkpoint, progress, qk_lr, **extra)
        return {**outcome, "weight_decay": decay}

    return run


def decay_adopter(config: DecaySensitivityConfig, arm: str, seed: int, directory=None) -> tuple[dict, str] | None:
    """The cell at the task's own λ is the source sweep's run of the arm at its best rung, the same computation:
    ``({**that run, "weight_decay": λ}, "<source>-<profile>")``; another cell, or a fixed profile: ``None``."""
    base, decay = parse_grid_arm(arm, DECAY_KEY, config.arms + ADDED)
    if config.fixed or decay != config.task.weight_decay:
        return None
    lr, _, source = at_best(config, base, directory)
    run = source["runs"].get(f"{grid_arm(base, KEY, lr)}/{seed}")
    return run and ({**run, "weight_decay": decay}, f"{config.source}-{config.sweep_profile}")


def decay_entry(task_name: str) -> Experiment:
    """``<task>_decay_sensitivity``: its full profile on the source sweep's task and seeds; a ci one of two decays,
    one seed and 20 steps at fixed rates (it reads no file)."""
    task, source = TASKS[task_name], f"{task_name}_lr_sensitivity"
    sweep = {c.name: c for c in SWEEPS}[source].profiles()
    ci = {"decays": (0.0, 0.3), "seeds": (200,), "fixed": tuple((a, 1e-3, 1e-2) for a in ARMS)}
    profiles_ = {p: c.task for p, c in sweep.items()}
    profiles_ = profiles(DecaySensitivityConfig, profiles_, ci, metric=task.metric, source=source)
    names = lambda config, arms=ARMS: tuple(grid_arm(a, DECAY_KEY, d) for a in arms for d in config.decays)  # noqa: E731
    return Experiment(
        f"{task_name}_decay_sensitivity",
        profiles_,
        names(profiles_["full"]),
        decay_runner(task),
        f"{task_name}: the weight decay over 0 ... 3 (5 values), four arms at their best model lr and W_Q, W_K ratio "
        "in its lr sensitivity sweep, seeds 200-202",
        optional_arms=names(profiles_["full"], ADDED),
        arms_of=names,
        adopt=decay_adopter,
    )


ENTRIES = tuple(decay_entry(task) for task in SENSITIVITY)
