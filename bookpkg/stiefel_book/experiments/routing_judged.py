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

from ..tasks import charlm, routing
from .registry import Experiment
from .routing_sweep import (
    CHARLM_LONG_PROFILES,
    CHARLM_PROFILES,
    INDUCTION_PROFILES,
    MQAR_CHECKED_PROFILES,
    MQAR_PROFILES,
    SWEPT_ARMS,
    resolver,
)

__all__ = ["ARMS_2X2", "SEEDS_2X2", "MQAR_2X2_PROFILES", "INDUCTION_2X2_PROFILES", "ENTRIES", "ENTRIES_2X2"]

ARMS_2X2 = ("baseline", "muon", "stiefel", "manifold_muon")  # {Adam, Muon} x {free, frames}
SEEDS_2X2 = tuple(range(50, 60))  # fresh: none of 0-9, 20-49, 100-104, 200-202 (routing_2x2's judged seeds)


def _seeded(task_profiles: dict, seeds: tuple[int, ...]) -> dict:
    """``task_profiles`` judged on ``seeds`` (the ``ci`` profile on the first)."""
    return {
        "full": dataclasses.replace(task_profiles["full"], seeds=seeds),
        "ci": dataclasses.replace(task_profiles["ci"], seeds=seeds[:1]),
    }


MQAR_2X2_PROFILES = _seeded(MQAR_CHECKED_PROFILES, SEEDS_2X2)  # at MQAR's checked model lr (amended)
INDUCTION_2X2_PROFILES = _seeded(INDUCTION_PROFILES, SEEDS_2X2)
OPTIONAL = routing.OPTIONAL_ARMS  # run only when named


ENTRIES = (
    Experiment(
        "mqar",
        MQAR_PROFILES,
        routing.ARMS,
        routing.run_mqar,
        "multi-query associative recall, 2-layer nanoGPT-style model, six arms, 10 paired seeds",
        OPTIONAL,
        resolve=resolver("mqar_qk_lr"),
    ),
    Experiment(  # routing_mqar_fresh (book/protocol.yml, amended): at MQAR's checked model lr, 30 fresh seeds
        "mqar_fresh",
        _seeded(MQAR_CHECKED_PROFILES, tuple(range(20, 50))),
        routing.ARMS,
        routing.run_mqar,
        "multi-query associative recall at its checked model lr, the six arms of mqar at their tuned W_Q, W_K lrs, "
        "30 fresh paired seeds",
        resolve=resolver("mqar_checked_qk_lr"),
    ),
    Experiment(
        "induction",
        INDUCTION_PROFILES,
        routing.ARMS,
        routing.run_induction,
        "induction heads on repeated random tokens, 2-layer attention-only, six arms, 10 paired seeds",
        OPTIONAL,
        resolve=resolver("induction_qk_lr"),
    ),
    Experiment(
        "charlm",
        CHARLM_PROFILES,
        charlm.ARMS,
        charlm.run,
        "character-level LM on Gutenberg texts (nanoGPT + stiefelize), six arms, 5 paired seeds",
        OPTIONAL,
        resolve=resolver("charlm_qk_lr"),
    ),
    Experiment(  # charlm_long (book/protocol.yml): 4,500 steps at the checked model lr, manifold Muon among the arms
        "charlm_long",
        CHARLM_LONG_PROFILES,
        (*charlm.ARMS, "manifold_muon"),
        charlm.run,
        "character-level LM over 4,500 steps at its checked model lr, seven arms at their tuned W_Q, W_K lrs, "
        "10 paired seeds",
        resolve=resolver("charlm_long_qk_lr", (*SWEPT_ARMS, "manifold_muon")),
    ),
)
ENTRIES_2X2 = (
    Experiment(
        "mqar_2x2",
        MQAR_2X2_PROFILES,
        ARMS_2X2,
        routing.run_mqar,
        "MQAR's 2x2 of update direction and constraint on W_Q, W_K, four arms at their tuned lrs, 10 fresh seeds",
        resolve=resolver("mqar_checked_qk_lr", ARMS_2X2),
    ),
    Experiment(
        "induction_2x2",
        INDUCTION_2X2_PROFILES,
        ARMS_2X2,
        routing.run_induction,
        "induction's 2x2 of update direction and constraint on W_Q, W_K, four arms at their tuned lrs, 10 fresh seeds",
        resolve=resolver("induction_qk_lr", ARMS_2X2),
    ),
)
