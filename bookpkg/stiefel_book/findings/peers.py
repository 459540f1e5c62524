"""The Stiefel rule among its relatives (chapter "Among its relatives"): the learning rate each
arm's sweep chose, how far each arm moves its frames and how far it fits CIFAR-10. Pure functions
of the results dicts of ``grokking_peers_lr``, ``grokking_peers`` and ``cifar10_peers``. The arms
and the reading under the declared families live in :mod:`.peers_family`; the chapter reads all
of it here."""

from __future__ import annotations

import numpy as np

from ..choices import SWEEP_CRITERION, chosen_lr, sweep_scores
from ..results_reading import arm_of
from .peers_family import (
    ARMS,
    INGREDIENTS,
    PEERS,
    REFERENCES,
    TUNED_PEERS,
    family_ingredient_rows,
    family_peer_rows,
    merged,
)

__all__ = ["sweep_scores", "chosen_lr", "SWEEP_CRITERION", "sweep_rows", "arms_in", "movement_rows"]
# from peers_family, read here by the chapter:
__all__ += ["ARMS", "PEERS", "REFERENCES", "TUNED_PEERS", "INGREDIENTS", "merged", "family_peer_rows"]
__all__ += ["family_ingredient_rows"]


def sweep_rows(sweep: dict) -> list[dict]:
    """One row per swept arm: its mean score at each lr and the lr chosen (``None`` while the
    arm's sweep is incomplete)."""
    rows = []
    for arm in sweep["config"]["arms"]:
        scores = sweep_scores(sweep, arm)
        try:
            chosen = chosen_lr(sweep, arm)
        except ValueError:
            chosen = None
        rows.append(
            {
                "arm": arm,
                "scores": {lr: float(np.mean(v)) if v else None for lr, v in scores.items()},
                "chosen": chosen,
                "edge": chosen is not None and chosen in (min(scores), max(scores)),
            }
        )
    return rows


def arms_in(results: dict | None) -> list[str]:
    """The arms of ``results`` that finished at least one run, in the chapter's order."""
    present = {arm_of(key) for key in (results or {}).get("runs", {})}
    return [arm for arm in ARMS if arm in present]


def movement_rows(results: dict) -> list[dict]:
    """Per arm, over its runs, the means at the last record of: the mean principal angle of W_Q's
    heads to their start (degrees), the bilinear form's change ``qk_change_mean``, ``‖W_Q‖_F``,
    and the worst ``‖W_Qᵀ W_Q − I‖_F`` (NaN where a run predates that log)."""
    from .regimes import runs_of

    rows = []
    for arm in arms_in(results):
        last = [run["history"][-1] for run in runs_of(results, arm).values()]
        mean = lambda key: float(np.mean([r.get(key, np.nan) for r in last]))  # noqa: E731
        rows.append(
            {
                "arm": arm,
                "n": len(last),
                "angle": mean("angle_mean/W_Q"),
                "qk_change": mean("qk_change_mean/attn"),
                "norm": mean("norm/attn.W_Q"),
                "ortho": float(np.max([r.get("ortho/W_Q", np.nan) for r in last])),
            }
        )
    return rows


