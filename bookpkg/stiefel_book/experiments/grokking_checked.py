"""Grokking at p = 31 at the model lr its declared check chose (issue 52, item 5; ``book/protocol.yml``,
sweeps ``grokking_model_lr`` and ``grokking_checked_qk_lr``, family ``grokking_checked``).

The check moved the task's model lr (every parameter but W_Q, W_K) from 3e-3 to :data:`CHECKED_LR`:
AdamW's late validation accuracy there beat 3e-3's by more than the 2 pp margin. So the fair fight
is made again there, by the same rules:

- ``grokking_checked_qk_lr``: AdamW's, AdamW's without decay on W_Q, W_K, the Stiefel rule's and
  QK-norm's W_Q, W_K lr swept on selection seeds 100-104 by grokking_qk_lr's rule (four first rungs
  around the model lr, grown to an interior choice; lr 0 is frozen frames; diverged runs score 0);
- ``grokking_checked``: those arms and frozen frames at their choices on judged seeds 0-39.

Both refuse to run unless ``grokking_model_lr``'s file has chosen :data:`CHECKED_LR` by its rule.
The runs at 3e-3 (``grokking_qk_lr``, ``grokking_fair``) stay as they are, labelled with their setting.
"""

from __future__ import annotations

import dataclasses

from . import fair_fight
from .checked_lr import at_checked_lr, check_choice
from .study import Study, judged_entry, sweep_entry

__all__ = ["CHECKED_LR", "ARMS", "SWEEP_PROFILES", "PROFILES", "study", "resolve", "ENTRIES"]

CHECKED_LR = 1e-2  # grokking_model_lr's choice (tests/test_checked_lrs.py ties it to the committed file)
MARGIN = 0.02  # grokking_model_lr's margin (2 pp of validation accuracy)
ARMS = ("baseline", "no_decay_qk", "stiefel", "qk_norm")


def _task(**changes):
    return dataclasses.replace(fair_fight.SWEEP_PROFILES["full"].task, lr=CHECKED_LR, **changes)


SWEEP_PROFILES = {
    "full": fair_fight.SweepConfig(task=_task()),
    "ci": fair_fight.SweepConfig(task=_task(epochs=100), seeds=(100,), start_below=1, start_above=0),
}
PROFILES = {
    "full": fair_fight.FairConfig(task=_task(), arms=ARMS, seeds=tuple(range(40))),
    "ci": fair_fight.FairConfig(task=_task(epochs=100), arms=ARMS, sweep_profile="ci", seeds=(0,)),
}


def study(config: fair_fight.SweepConfig) -> Study:
    """``grokking_checked_qk_lr`` at a profile: grokking_qk_lr's rule at the checked model lr."""
    start = (config.start_below, config.start_above)
    return Study(
        "grokking_checked_qk_lr", config.task, ARMS, config.seeds, fair_fight.train, start=start, diverged=True
    )


_guard = at_checked_lr("grokking_model_lr", SWEEP_PROFILES["full"].task, choose=check_choice(MARGIN))


def resolve(config: fair_fight.FairConfig, directory=None) -> fair_fight.FairConfig:
    """The judged runs' rates, read from the sweep's file, once the check has chosen the model lr."""
    return _guard(study(SWEEP_PROFILES[config.sweep_profile]).resolve(config, directory), directory)


ENTRIES = (
    dataclasses.replace(
        sweep_entry(
            "grokking_checked_qk_lr",
            SWEEP_PROFILES,
            study,
            "grokking at p = 31 at its checked model lr 1e-2, four arms' W_Q, W_K lr on 5 selection seeds "
            "until interior",
            with_frozen=True,
        ),
        resolve=_guard,
    ),
    judged_entry(
        "grokking_checked",
        PROFILES,
        (*ARMS, "frozen"),
        fair_fight.train,
        "grokking at p = 31 at its checked model lr 1e-2, four arms at their tuned W_Q, W_K lrs and frozen frames, "
        "40 paired seeds",
        resolve,
    ),
)
