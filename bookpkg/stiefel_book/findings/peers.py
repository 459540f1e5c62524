"""The Stiefel rule among its relatives (chapter "Among its relatives"): the learning rate each
arm's sweep chose, how far each arm moves its frames and how far it fits CIFAR-10, and the
relatives under the declared families (``book/protocol.yml``: ``grokking_fair``, ``peers_grokking``,
``peers_cifar10``) read from the families' rows: the arms in the chapter's order, the peers and the
references they are measured against, and the ingredient comparisons (what each difference a − b
isolates). Pure functions of the results dicts of ``grokking_peers_lr``, ``grokking_peers`` and
``cifar10_peers`` and of the rows they are handed."""

from __future__ import annotations

import numpy as np

from ..choices import SWEEP_CRITERION, chosen_lr, sweep_scores
from ..results_reading import arm_of
from . import tuned

__all__ = ["sweep_scores", "chosen_lr", "SWEEP_CRITERION", "sweep_rows", "arms_in", "movement_rows"]
__all__ += ["ARMS", "PEERS", "REFERENCES", "TUNED_PEERS", "INGREDIENTS", "merged", "family_peer_rows"]
__all__ += ["family_ingredient_rows"]

ARMS = ("baseline", "stiefel", "muon", "muon_no_decay", "geoopt_radam", "per_entry", "orthogonal_param")  # the
# chapter's order: experiments.peers.PEER_ARMS (a test holds them equal; this module loads no torch)
PEERS = ("per_entry", "muon", "muon_no_decay", "geoopt_radam", "orthogonal_param")
REFERENCES = ("stiefel", "baseline")
TUNED_PEERS = (*PEERS, "cayley_adam")  # the relatives judged at their tuned W_Q, W_K lrs (grokking_fair_peers)
INGREDIENTS = (  # (a, b, what a − b isolates)
    ("stiefel", "per_entry", "scalar (per-frame) against per-entry second moments, the rest of the rule the same"),
    (
        "stiefel",
        "geoopt_radam",
        "the Stiefel rule against the standard Riemannian Adam (canonical metric, Cayley retraction, no trust region)",
    ),
    ("muon", "baseline", "orthogonalised updates on unconstrained weights against AdamW (both decayed)"),
    ("stiefel", "muon_no_decay", "a constraint on the weights against orthogonal updates alone, neither decayed"),
    ("muon_no_decay", "muon", "weight decay off an orthogonal-update optimizer's W_Q, W_K"),
    ("orthogonal_param", "baseline", "the constraint by parametrization, stepped by AdamW, against AdamW"),
    ("stiefel", "orthogonal_param", "the Stiefel rule against the same constraint stepped through a parametrization"),
)


def merged(*results: dict | None) -> dict:
    """The runs of several files of one comparison (same seeds, same initial weights) as one
    results dict, the first file's config kept."""
    present = [r for r in results if r]
    return {
        "config": present[0]["config"] if present else {},
        "runs": {k: v for r in present for k, v in r["runs"].items()},
    }


def family_peer_rows(rows: list[dict], results: dict | None = None, peers: tuple[str, ...] = PEERS) -> list[dict]:
    """Each peer − each reference (the Stiefel rule, AdamW) read from a family's rows
    (:func:`fair_fight.family_rows`: four words, Holm across the family), in the chapter's order;
    with ``results``, the Kaplan-Meier median epochs to 90 % of both arms over the same seeds
    (described, not tested). A pair the family lacks is left out."""
    from .regimes import paired_seeds, survival

    out = []
    for peer in peers:
        for ref in REFERENCES:
            row = tuned.find(rows, peer, ref)
            if row is None:
                continue
            if results is not None:
                seeds = paired_seeds(results, peer, ref)
                row = {
                    **row,
                    "median": survival(results, peer, 0.9, seeds).median,
                    "reference_median": survival(results, ref, 0.9, seeds).median,
                }
            out.append(row)
    return out


def family_ingredient_rows(rows: list[dict]) -> list[dict]:
    """:data:`INGREDIENTS` read from a family's rows (``row`` ``None`` where the family does not
    hold that comparison: it is outside the declared family and gets no verdict)."""
    return [{"a": a, "b": b, "meaning": meaning, "row": tuned.find(rows, a, b)} for a, b, meaning in INGREDIENTS]


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
