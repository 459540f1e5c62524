"""The routing tasks' judged experiments (their sweeps: :mod:`.routing_sweep`), rows of one table:
each task's run (:mod:`stiefel_book.tasks.routing`'s ``run_mqar``, ``run_induction``,
:func:`stiefel_book.tasks.charlm.run`) of its arms from paired seeds, each arm at the W_Q, W_K lr its
task's sweep chose (:func:`.routing_sweep.resolver`), refused, with the command to run, until that sweep
has settled; runs at a checked model lr wait for the check that chose it too.

The 2x2 of update direction and constraint (issue 49; family ``routing_2x2`` of ``book/protocol.yml``,
declared before its runs): {Adam's direction, Muon's} x {free W_Q, W_K, frames}, that is AdamW
(``baseline``), Muon (``muon``), the Stiefel rule (``stiefel``) and manifold Muon (``manifold_muon``),
the rest of the model AdamW at the task's lr as in :mod:`stiefel_book.arms.routing_arms`. ``mqar_2x2`` and
``induction_2x2`` run on fresh judged seeds 50-59, manifold Muon's rate included.
"""

from __future__ import annotations

import dataclasses

from ..engine.registry import Experiment, profiles
from ..engine.study import FROZEN
from ..tasks import charlm, routing
from .routing_sweep import (
    CHARLM_LONG_PROFILES,
    CHARLM_PROFILES,
    INDUCTION_PROFILES,
    MQAR_CHECKED_PROFILES,
    MQAR_PROFILES,
    resolver,
)

__all__ = ["ARMS_2X2", "MQAR_2X2_PROFILES", "INDUCTION_2X2_PROFILES", "ENTRIES", "ENTRIES_2X2"]

ARMS_2X2 = ("baseline", "muon", "stiefel", "manifold_muon")  # {Adam, Muon} x {free, frames}
SEEDS_2X2 = tuple(range(50, 60))  # fresh: none of 0-9, 20-49, 100-104, 200-202 (routing_2x2's judged seeds)


def _seeded(task_profiles: dict, seeds: tuple[int, ...]) -> dict:
    """``task_profiles`` judged on ``seeds`` (the ``ci`` profile on the first)."""
    return profiles(dataclasses.replace, task_profiles, {"seeds": seeds[:1]}, seeds=seeds)


MQAR_2X2_PROFILES = _seeded(MQAR_CHECKED_PROFILES, SEEDS_2X2)  # at MQAR's checked model lr (amended)
INDUCTION_2X2_PROFILES = _seeded(INDUCTION_PROFILES, SEEDS_2X2)
MQAR_FRESH_PROFILES = _seeded(MQAR_CHECKED_PROFILES, tuple(range(20, 50)))
SIX, OPTIONAL = routing.ARMS, routing.OPTIONAL_ARMS  # the optional arms run only when named
CHARLM_LONG_ARMS = (*charlm.ARMS, "manifold_muon")

# Each experiment: its profiles, its arms (then those run only when named), the task's run, and the sweep whose
# choices each arm but frozen frames takes. mqar_fresh (routing_mqar_fresh, amended): at MQAR's checked model lr,
# 30 fresh seeds; charlm_long (book/protocol.yml): 4,500 steps at the checked model lr, manifold Muon among the arms
JUDGED = {
    "mqar": (MQAR_PROFILES, SIX, OPTIONAL, routing.run_mqar, "mqar_qk_lr"),
    "mqar_fresh": (MQAR_FRESH_PROFILES, SIX, (), routing.run_mqar, "mqar_checked_qk_lr"),
    "induction": (INDUCTION_PROFILES, SIX, OPTIONAL, routing.run_induction, "induction_qk_lr"),
    "charlm": (CHARLM_PROFILES, charlm.ARMS, OPTIONAL, charlm.run, "charlm_qk_lr"),
    "charlm_long": (CHARLM_LONG_PROFILES, CHARLM_LONG_ARMS, (), charlm.run, "charlm_long_qk_lr"),
    "mqar_2x2": (MQAR_2X2_PROFILES, ARMS_2X2, (), routing.run_mqar, "mqar_checked_qk_lr"),
    "induction_2x2": (INDUCTION_2X2_PROFILES, ARMS_2X2, (), routing.run_induction, "induction_qk_lr"),
}
_TUNED = "at their tuned W_Q, W_K lrs"
_2X2 = "2x2 of update direction and constraint on W_Q, W_K, four arms at their tuned lrs, 10 fresh seeds"
DESCRIPTIONS = {
    "mqar": "multi-query associative recall, 2-layer nanoGPT-style model, six arms, 10 paired seeds",
    "mqar_fresh": f"multi-query associative recall at its checked model lr, the six arms of mqar {_TUNED}, "
    "30 fresh paired seeds",
    "induction": "induction heads on repeated random tokens, 2-layer attention-only, six arms, 10 paired seeds",
    "charlm": "character-level LM on Gutenberg texts (nanoGPT + stiefelize), six arms, 5 paired seeds",
    "charlm_long": f"character-level LM over 4,500 steps at its checked model lr, seven arms {_TUNED}, 10 paired seeds",
    "mqar_2x2": f"MQAR's {_2X2}",
    "induction_2x2": f"induction's {_2X2}",
}


def _entry(name: str, profiles: dict, arms: tuple, optional: tuple, run, sweep: str) -> Experiment:
    resolve = resolver(sweep, tuple(arm for arm in arms if arm != FROZEN))
    return Experiment(name, profiles, arms, run, DESCRIPTIONS[name], optional, resolve=resolve)


ENTRIES = tuple(_entry(name, *row) for name, row in JUDGED.items() if not name.endswith("_2x2"))
ENTRIES_2X2 = tuple(_entry(name, *row) for name, row in JUDGED.items() if name.endswith("_2x2"))
