"""Runs made at the model lr a declared check chose (issue 52, item 5): the ``resolve`` step that refuses
to start runs set at any other lr, the check's choice read by its declared rule
(:mod:`stiefel_book.model_lr`) from its results file. Used by the sweeps at a checked model lr
(grokking, MQAR, the character model at 4,500 steps, CIFAR-10 on held-out images) and by their judged runs."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from ..model_lr import long_choice
from ..results import load_results

__all__ = ["at_checked_lr"]


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
