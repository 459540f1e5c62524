"""The 2x2 of update direction and constraint on the routing tasks (issue 49; family
``routing_2x2`` of ``book/protocol.yml``, declared before its runs): {Adam's direction, Muon's} x
{free W_Q, W_K, frames}, that is AdamW (``baseline``), Muon (``muon``), the Stiefel rule
(``stiefel``) and manifold Muon (``manifold_muon``), the rest of the model AdamW at the task's lr
as in :mod:`.routing_arms`.

``mqar_2x2`` and ``induction_2x2`` are the routing tasks' own runs (:func:`.routing.run_mqar`,
:func:`.routing.run_induction`) on fresh judged seeds 50-59, each arm at the W_Q, W_K lr its task's
sweep chose (:func:`.routing_sweep.resolver`, manifold Muon's included): they refuse to start, with
the command to run, until manifold Muon's sweep has settled on the task.
"""

from __future__ import annotations

import dataclasses

from . import checked_lr, routing, routing_sweep
from .registry import Experiment

__all__ = ["ARMS", "SEEDS", "MQAR_PROFILES", "INDUCTION_PROFILES", "ENTRIES"]

ARMS = ("baseline", "muon", "stiefel", "manifold_muon")  # {Adam, Muon} x {free, frames}
SEEDS = tuple(range(50, 60))  # fresh: none of 0-9, 20-49, 100-104, 200-202 (routing_2x2's judged seeds)


def _profiles(task_profiles: dict) -> dict:
    return {
        "full": dataclasses.replace(task_profiles["full"], seeds=SEEDS),
        "ci": dataclasses.replace(task_profiles["ci"], seeds=SEEDS[:1]),
    }


MQAR_PROFILES = _profiles(routing.MQAR_CHECKED_PROFILES)  # at MQAR's checked model lr (routing_2x2, amended)
INDUCTION_PROFILES = _profiles(routing.INDUCTION_PROFILES)

ENTRIES = (
    Experiment(
        "mqar_2x2",
        MQAR_PROFILES,
        ARMS,
        routing.run_mqar,
        "MQAR's 2x2 of update direction and constraint on W_Q, W_K, four arms at their tuned lrs, 10 fresh seeds",
        resolve=checked_lr.guarded(
            routing_sweep.checked("mqar_checked_qk_lr"), routing_sweep.resolver("mqar_checked_qk_lr", ARMS)
        ),
    ),
    Experiment(
        "induction_2x2",
        INDUCTION_PROFILES,
        ARMS,
        routing.run_induction,
        "induction's 2x2 of update direction and constraint on W_Q, W_K, four arms at their tuned lrs, 10 fresh seeds",
        resolve=routing_sweep.resolver("induction_qk_lr", ARMS),
    ),
)
