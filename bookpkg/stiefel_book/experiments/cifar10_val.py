"""CIFAR-10's W_Q, W_K rates chosen on held-out images (issue 52), in the long protocol of
:mod:`.maps` (``cifar10_long``) (100 epochs, 10,000 images).

``cifar10_qk_lr`` scored its sweep on the test images that then judged the choices. Here:

- ``cifar10_val_qk_lr``: the same study (:mod:`..engine.study`, three first rungs) on selection starts 100-102,
  scored on a validation split of :data:`VAL_SIZE` images carved from the training images (the next ones of
  the balanced order after the 10,000 the runs train on): the cells λ = 1 and λ = 0.05 of AdamW
  and the Stiefel rule, the decay grid past its edges (λ = 3, λ = 0.01), and at λ = 0.05 the
  controls QK-norm and AdamW without decay on W_Q, W_K. Every cell's ladder starts around
  :data:`QK_CENTER`, whatever the model lr.
- ``cifar10_val_controls``: at λ = 0.05, judged starts 0-11, test accuracy: the controls at their
  validation choices, frozen frames, and AdamW and the Stiefel rule at theirs (a run that
  ``cifar10_fair_decay`` holds at the same rate is the same computation: adopted, not rerun).
- ``cifar10_val_fair``: the λ = 1 cell re-judged where a validation choice differs from the
  test-scored one (``cifar10_fair``'s), the unmoved arm adopted; refused when neither moved.

The model lr (every parameter but W_Q, W_K) is :data:`CHECKED_LR`, the rate ``cifar10_model_lr`` chose
by its declared rule (the task's 1e-3 moved to 3e-4); the full profiles' runs are refused until that
check's file holds the choice (:func:`.checked_lr.at_checked_lr`). The judged runs hold no validation
images: they train on the same images and the test set judges them. Runs of the test-scored files, at
the task's 1e-3, are another computation: none is adopted, and every λ = 1 choice is re-judged.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from ..engine.grid import in_cells
from ..engine.registry import JUDGED_CI, profiles
from ..engine.study import Study, adopted, judged_entry, sweep_entry
from ..model_lr import check_choice
from ..results import load_results
from ..results_reading import grid_arm
from ..tasks import cifar10
from ..tasks.cifar10_config import with_validation
from . import cifar10_fair, maps
from .checked_lr import at_checked_lr

__all__ = ["ENTRIES", "CHECKED_LR", "VAL_SIZE", "study", "cells", "resolve", "adopt", "CHECKED_MARGIN"]

VAL_SIZE = 10_000  # as many images as the test set: the validation score is as precise as the test score it replaces
QK_CENTER = 1e-3  # every cell's first rungs: 3e-4, 1e-3, 3e-3 (the task's lr and its neighbours, as cifar10_qk_lr)
SWEPT = cifar10_fair.SWEPT  # AdamW, the Stiefel rule
CONTROLS = ("no_decay_qk", "qk_norm")  # the λ = 0.05 controls with a rate to tune; frozen frames have none
LOW = 0.05  # the decay at which the gain appeared (cifar10_fair_decay)
HIGH = 1.0  # the preprint's decay (cifar10_fair)
SWEEP = "cifar10_val_qk_lr"
CHECKED_LR = 3e-4  # cifar10_model_lr's choice (tests/test_checked_lrs.py ties it to the committed file)
CHECKED_MARGIN = 0.005  # cifar10_model_lr's margin (0.5 pp of validation accuracy)


VERDICT_CELLS = ((HIGH, SWEPT), (LOW, (*SWEPT, *CONTROLS)))  # (λ, the arms swept apart at λ)


@dataclass(frozen=True)
class ValSweepConfig:
    task: cifar10.CIFAR10Config
    # the cells that decided a verdict, the controls, the grid past its edges
    cells: tuple[tuple[float, tuple[str, ...]], ...] = (*VERDICT_CELLS, (3.0, SWEPT), (0.01, SWEPT))
    seeds: tuple[int, ...] = (100, 101, 102)  # selection starts, apart from the judged 0-11


VAL_TASKS = {  # ci: the machinery in seconds, 1,000 training and 500 validation images, 4 epochs, one start
    "full": with_validation(maps.long_task("full", lr=CHECKED_LR), VAL_SIZE),
    "ci": with_validation(maps.long_task("ci"), 500),
}
SWEEP_PROFILES = profiles(ValSweepConfig, VAL_TASKS, {"cells": VERDICT_CELLS, "seeds": (100,)})


def cells(config: ValSweepConfig) -> tuple[str, ...]:
    """Every cell ``"<arm>@wd=<λ>"`` of a profile, in its order."""
    return tuple(grid_arm(arm, "wd", decay) for decay, arms in config.cells for arm in arms)


def study(config: ValSweepConfig) -> Study:
    """``cifar10_val_qk_lr`` at a profile: each cell scored by its late validation accuracy, every
    ladder starting at three rungs around :data:`QK_CENTER`, lr 0 (frozen frames) per cell."""
    names, train = cells(config), in_cells(cifar10_fair.train, (*SWEPT, *CONTROLS))
    options = dict(
        start=(1, 1), centers={name: QK_CENTER for name in names}, frozen=None, judged_seeds=tuple(range(12))
    )
    return Study.at(SWEEP, config, names, train, metric="val_acc", **options)


# --- the judged runs --------------------------------------------------------------------------


@dataclass(frozen=True)
class ValJudgedConfig:
    task: cifar10.CIFAR10Config
    arms: tuple[str, ...] = (*SWEPT, *CONTROLS)  # judged at their cells' validation choices; frozen frames beside
    source: str = "cifar10_fair_decay"  # the judged runs of these cells chosen on test images: adopted where unmoved
    rejudge_only: bool = False  # refused when no arm's choice moved (a re-judgement with nothing to re-judge)
    sweep_profile: str = "full"
    qk_lrs: tuple[tuple[str, float], ...] = ()  # resolved before the runs (:func:`resolve`)
    seeds: tuple[int, ...] = tuple(range(12))  # the judged starts, paired with the source's


LOW_TASKS = {
    "full": maps.long_task("full", weight_decay=LOW, lr=CHECKED_LR),
    "ci": maps.long_task("ci", weight_decay=LOW),
}
CONTROL_PROFILES = profiles(ValJudgedConfig, LOW_TASKS, JUDGED_CI)
FAIR_PROFILES = {
    name: dataclasses.replace(
        c, task=dataclasses.replace(c.task, weight_decay=HIGH), arms=SWEPT, source="cifar10_fair", rejudge_only=True
    )
    for name, c in CONTROL_PROFILES.items()
}


def _test_scored(config: ValJudgedConfig, directory=None) -> dict[str, float]:
    """``{arm: lr}`` the source's judged runs took (chosen on test images) at ``config``'s model lr; empty
    without its file or where the source ran at another model lr."""
    source = (load_results(config.source, config.sweep_profile, directory) or {}).get("config", {})
    if source.get("task", {}).get("lr", config.task.lr) != config.task.lr:
        return {}
    return {arm: float(lr) for arm, lr in source.get("qk_lrs", [])}


def _checked(then: Callable) -> Callable:
    """``then`` (a resolve) once ``cifar10_model_lr`` has chosen, by its declared rule, the model lr a run
    at :data:`CHECKED_LR` is set at (a smaller profile, at the task's lr, passes)."""
    choose = check_choice(CHECKED_MARGIN)

    def resolve(config, directory=None):
        if config.task.lr == CHECKED_LR:
            at_checked_lr("cifar10_model_lr", config.task, choose=choose)(config, directory)
        return then(config, directory)

    return resolve


def resolve(config: ValJudgedConfig, directory=None) -> ValJudgedConfig:
    """``config`` with each arm's rate chosen on validation in its cell (at the task's decay) of
    ``cifar10_val_qk_lr``; refused until every choice is final, and, for a re-judgement, when
    every choice equals the test-scored one (its verdict then stands as it was read)."""
    decay = config.task.weight_decay
    sweep = study(SWEEP_PROFILES[config.sweep_profile])
    resolved = sweep.resolve(config, directory, sweep.in_cells("wd", decay))
    old = _test_scored(config, directory)
    if config.rejudge_only and old and all(old.get(arm) == lr for arm, lr in resolved.qk_lrs):  # same model lr
        raise ValueError(
            f"at λ = {decay:g} every validation choice equals the test-scored one ({old}): nothing to re-judge; "
            f"the verdict of {config.source} stands"
        )
    return resolved


def adopt(config: ValJudgedConfig, arm: str, seed: int, directory=None) -> tuple[dict, str] | None:
    """A judged run the source already holds, the same computation: the same task (seeds aside) and
    the same rate (frozen frames: none); ``(its record, "<source>-<profile>")``, else ``None``."""
    if arm != "frozen" and _test_scored(config, directory).get(arm) != dict(config.qk_lrs).get(arm):
        return None
    return adopted(config.source, config, f"{arm}/{seed}", directory)  # its own provenance kept


_train = cifar10_fair.train  # one judged run: the arm at its rate (lr 0: frozen frames)
ENTRIES = (  # this module's experiments, collected by the runner
    sweep_entry(
        SWEEP,
        SWEEP_PROFILES,
        study,
        "CIFAR-10 long protocol at its checked model lr 3e-4, W_Q, W_K lr chosen on 10,000 validation images: "
        "AdamW and the Stiefel rule at λ = 1, 0.05, 3 and 0.01, QK-norm and AdamW without decay on W_Q, W_K at "
        "λ = 0.05, 3 selection starts",
        resolve=_checked(lambda config, directory=None: config),
    ),
    judged_entry(
        "cifar10_val_controls",
        CONTROL_PROFILES,
        (*SWEPT, *CONTROLS, "frozen"),
        _train,
        "CIFAR-10 long protocol at λ = 0.05, AdamW, the Stiefel rule, QK-norm and AdamW without decay on W_Q, W_K "
        "at their validation-chosen W_Q, W_K lrs, and frozen frames, 12 paired starts",
        _checked(resolve),
        adopt=adopt,
    ),
    judged_entry(
        "cifar10_val_fair",
        FAIR_PROFILES,
        SWEPT,
        _train,
        "CIFAR-10 long protocol at λ = 1, AdamW and the Stiefel rule re-judged at their validation-chosen W_Q, W_K "
        "lrs where a choice moved, 12 paired starts",
        _checked(resolve),
        adopt=adopt,
    ),
)
