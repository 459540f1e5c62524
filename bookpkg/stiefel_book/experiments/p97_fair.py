"""The fair fight at p = 97 (issue 28), on the task of ``grokking``'s full profile (Nanda et al.'s
one-layer model, task lr 1e-3, weight decay 1):

- ``grokking_p97_qk_lr``: AdamW's, AdamW's without decay on W_Q, W_K, the Stiefel rule's and
  QK-norm's W_Q, W_K lr at the task's lr, a third and a tenth of it (1e-3, 3e-4, 1e-4), on selection
  seeds 100-101, 10,000 epochs a run at most, by :mod:`..engine.study`. A run's score is how fast it groks:
  minus the epochs to 90 % validation accuracy (never: 10,000); a run stops once its score is fixed.
- ``grokking_p97_fair``: those arms and frozen frames at the chosen lrs, 20,000 epochs, judged seeds 0-5.
- ``grokking_p97_primary``: the fight sized to decide (issue 52; family ``grokking_p97_primary``): AdamW
  and the Stiefel rule at their chosen lrs, judged seeds 0-11, the Stiefel rule − AdamW on time to 90 %
  first and alone at the full α (gatekeeping). Seeds 0-5 are ``grokking_p97_fair``'s runs of the same two
  arms, the same computation (task, lr, seed), adopted rather than rerun.

At the model lr p = 97's declared check chose (issue 52, item 5; ``grokking_p97_model_lr``) the primary
fight is made again, one setting apart (:data:`CHECKED_LR` for every parameter but W_Q, W_K):
``grokking_p97_checked_qk_lr`` sweeps AdamW's and the Stiefel rule's W_Q, W_K lr there by the same rule
(each arm's first grid centred on its choice above carried at its ratio to the model lr,
:data:`CHECKED_CENTERS`), ``grokking_p97_checked`` judges them on seeds 0-11, 10,000 epochs; both refuse
to run unless that check's file chose :data:`CHECKED_LR`.

A p = 97 run takes ~20 minutes (10,000 epochs) or ~40 (20,000) on one CPU core, a sweep run that
groks early less: these runs are for a lent GPU or a long background run; 24 sweep runs, then 30
judged.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

from ..engine.registry import JUDGED_CI, profiles
from ..engine.study import Study, at_task_rate, judged_entry, same_rate, sweep_entry
from ..model_lr import check_choice
from . import fair_fight, grokking
from .checked_lr import at_checked_lr

__all__ = [
    "ENTRIES",
    "ARMS",
    "SWEEP_PROFILES",
    "study",
    "resolve",
    "adopt",
    "CHECKED_LR",
    "CHECKED_MARGIN",
    "CHECKED_CENTERS",
    "CHECKED_EPOCHS",
]

ARMS = ("baseline", "no_decay_qk", "stiefel", "qk_norm")  # swept; frozen frames are judged beside them
THRESHOLD = 0.9


@dataclass(frozen=True)
class SweepConfig:
    task: grokking.GrokkingConfig
    arms: tuple[str, ...] = ARMS
    seeds: tuple[int, ...] = (100, 101)  # selection seeds, apart from the judged 0-5
    threshold: float = THRESHOLD


_CI_TASK = dataclasses.replace(grokking.PROFILES["ci"], epochs=200)
SWEEP_PROFILES = {
    "full": SweepConfig(dataclasses.replace(grokking.PROFILES["full"], epochs=10_000)),
    "ci": SweepConfig(_CI_TASK, seeds=(100,)),
}


def study(config: SweepConfig) -> Study:
    """``grokking_p97_qk_lr`` at a profile: scored by time to the threshold, the first grid the task's
    lr, a third and a tenth of it; a run stops where its score is fixed; diverged runs never grok."""
    stopping = functools.partial(fair_fight.train, stop_at=config.threshold)
    return Study.at("grokking_p97_qk_lr", config, config.arms, stopping, metric="time", start=(2, 0), diverged=True)


FairConfig = fair_fight.FairConfig  # the judged runs' config, as at p = 31: the swept arms, frozen frames beside
TASKS = {"full": grokking.PROFILES["full"], "ci": _CI_TASK}
PROFILES = profiles(FairConfig, TASKS, JUDGED_CI, arms=ARMS, seeds=tuple(range(6)))


resolve = study(SWEEP_PROFILES["full"]).resolve  # (config, directory) -> config with every arm's chosen lr


ADOPTED_FROM = "grokking"  # the long runs of the grokking chapter: every arm at the task's W_Q, W_K lr


# a judged run that grokking-full already holds, as the issue allows ("existing runs count where their lr is the
# tuned one"): the same task config (the whole of it), the arm at the task's lr or frozen frames, cut as a judged run's
adopt = at_task_rate(ADOPTED_FROM, fair_fight.compact, whole_config=True)


PRIMARY_ARMS = ("baseline", "stiefel")
PRIMARY_PROFILES = profiles(dataclasses.replace, PROFILES, {"seeds": (0,)}, arms=PRIMARY_ARMS, seeds=tuple(range(12)))


# --- the primary fight at the model lr grokking_p97_model_lr's check chose ----------------------------------------

CHECKED_LR = 1e-2  # grokking_p97_model_lr's choice (tests/test_p97_model_lr.py ties it to the committed file)
CHECKED_MARGIN = 1000  # grokking_p97_model_lr's margin, epochs to 90 %
CHECKED_EPOCHS = 10_000  # Σ lr·λ = 100 at CHECKED_LR, past the 20 of 20,000 epochs at 1e-3
# each arm's first grid: its choice at model lr 1e-3 (grokking_p97_qk_lr) at the same ratio to CHECKED_LR (tested)
CHECKED_CENTERS = {"baseline": 3e-5, "stiefel": 3e-3}
CHECKED_TASKS = {
    "full": dataclasses.replace(grokking.PROFILES["full"], lr=CHECKED_LR, epochs=CHECKED_EPOCHS),
    "ci": _CI_TASK,
}
CHECKED_SWEEP_PROFILES = {
    "full": SweepConfig(CHECKED_TASKS["full"], arms=PRIMARY_ARMS, seeds=(100, 101, 102)),
    "ci": SweepConfig(_CI_TASK, arms=PRIMARY_ARMS, seeds=(100,)),
}
CHECKED_PROFILES = profiles(FairConfig, CHECKED_TASKS, JUDGED_CI, arms=PRIMARY_ARMS, seeds=tuple(range(12)))
_guard = at_checked_lr("grokking_p97_model_lr", CHECKED_TASKS["full"], choose=check_choice(CHECKED_MARGIN))


def checked_study(config: SweepConfig) -> Study:
    """``grokking_p97_checked_qk_lr`` at a profile: :func:`study`'s rule, each arm's first grid a rung either side
    of its centre (:data:`CHECKED_CENTERS`)."""
    stopping = functools.partial(fair_fight.train, stop_at=config.threshold)
    return Study.at(
        "grokking_p97_checked_qk_lr",
        config,
        config.arms,
        stopping,
        metric="time",
        start=(1, 1),
        centers=CHECKED_CENTERS,
        diverged=True,
    )


def _checked_resolve(config: FairConfig, directory=None) -> FairConfig:
    """The judged runs' rates, read from the sweep's file, once the check has chosen the model lr."""
    return checked_study(CHECKED_SWEEP_PROFILES[config.sweep_profile]).resolve(_guard(config, directory), directory)


ENTRIES = (  # this module's experiments, collected by the runner
    sweep_entry(
        "grokking_p97_qk_lr",
        SWEEP_PROFILES,
        study,
        "grokking at p = 97, four arms' W_Q, W_K lr at the task's lr, 1/3 and 1/10 of it, 2 selection seeds, "
        "scored by the epochs to 90 % within 10,000",
    ),
    judged_entry(
        "grokking_p97_fair",
        PROFILES,
        (*ARMS, "frozen"),
        fair_fight.train,
        "grokking at p = 97, AdamW, AdamW without decay on W_Q, W_K, the Stiefel rule and QK-norm at their tuned "
        "W_Q, W_K lrs, and frozen frames, 6 paired seeds",
        resolve,
        adopt=adopt,
    ),
    judged_entry(
        "grokking_p97_primary",
        PRIMARY_PROFILES,
        PRIMARY_ARMS,
        fair_fight.train,
        "grokking at p = 97, AdamW and the Stiefel rule at their tuned W_Q, W_K lrs, 12 paired seeds "
        "(0-5 adopted from grokking_p97_fair)",
        resolve,
        adopt=same_rate("grokking_p97_fair"),
    ),
    sweep_entry(
        "grokking_p97_checked_qk_lr",
        CHECKED_SWEEP_PROFILES,
        checked_study,
        "grokking at p = 97 at its checked model lr 1e-2, AdamW's and the Stiefel rule's W_Q, W_K lr on 3 selection "
        "seeds, scored by the epochs to 90 % within 10,000",
        resolve=_guard,
    ),
    judged_entry(
        "grokking_p97_checked",
        CHECKED_PROFILES,
        PRIMARY_ARMS,
        fair_fight.train,
        "grokking at p = 97 at its checked model lr 1e-2, AdamW and the Stiefel rule at their tuned W_Q, W_K lrs, "
        "10,000 epochs, 12 paired seeds",
        _checked_resolve,
    ),
)
