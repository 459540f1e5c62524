"""Runs made at the model lr a declared check chose (issue 52, item 5): the checks' choice read by
their declared rules (:mod:`stiefel_book.model_lr`) from their results files, and the ``resolve``
step that refuses to start runs set at any other lr. Used by the character model's 4,500-step sweep
and judged runs and by grokking's runs at its checked lr."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from ..model_lr import ladder_check, ladder_choice
from .results import load_results

__all__ = ["TIES", "long_choice", "check_choice", "at_checked_lr", "guarded"]

TIES = 0.02  # charlm_long_model_lr's ties (routing_charlm's margin), in bits per character


def long_choice(results: dict) -> float | None:
    """charlm_long_model_lr's model lr by its declared rule, or None while undecided."""
    pick = ladder_choice(results, TIES)
    return pick["lr"] if pick["interior"] else None


def check_choice(margin: float) -> Callable[[dict], float | None]:
    """A model-lr check's lr by the rule of grokking_model_lr (kept unless a better rung passes the margin),
    or None while undecided."""

    def choose(results: dict) -> float | None:
        try:
            out = ladder_check(results, margin)
        except ValueError:
            return None
        return None if out["grow"] else out["lr"]

    return choose


def at_checked_lr(check: str, task, then: Callable | None = None, choose: Callable = long_choice) -> Callable:
    """The ``resolve`` of runs made at the model lr a check chose: a config whose task is ``task``
    (seeds aside) is refused unless the check's results file has chosen ``task.lr`` by its declared
    rule (``choose``: the file -> its lr, None while undecided); then ``then`` (the sweep's resolve)
    applies. Other settings (a smaller profile) pass."""

    def resolve(config, directory=None):
        run_task = getattr(config, "task", config)
        if dataclasses.replace(run_task, seeds=task.seeds) == task:
            results = load_results(check, "full", directory)
            lr = choose(results) if results else None
            if lr is None:
                raise ValueError(
                    f"{check} has not chosen the model lr yet: run `python -m stiefel_book run {check} "
                    "--profile full` (and the rungs it names) first"
                )
            if lr != task.lr:
                raise ValueError(f"{check} chose model lr {lr:g}, these runs are set at {task.lr:g}: fix the task")
        return then(config, directory) if then else config

    return resolve


def guarded(guard: Callable, then: Callable) -> Callable:
    """``then`` (a judged experiment's resolve) after ``guard`` (:func:`at_checked_lr` of its sweep's task):
    judged runs at a checked lr wait for the same check as their sweep."""

    def resolve(config, directory=None):
        task = dataclasses.replace(config, seeds=(), qk_lrs=()) if hasattr(config, "qk_lrs") else config
        guard(task, directory)
        return then(config, directory)

    return resolve
