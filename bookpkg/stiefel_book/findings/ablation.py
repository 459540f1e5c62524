"""What the ablation's results say (the ablation chapter): the full rule minus each variant,
paired by start, each component's share of the gain, the verdicts and the claims table's line.
Pure functions of the results dicts they are handed (``cifar10_ablation`` merged with
``cifar10``, and ``grokking_ablation``).

Every comparison is paired by start: the full rule minus the variant, so a positive
difference is what the removed component was worth.
"""

from __future__ import annotations

import numpy as np

from ..arms.variants import ABLATION_ARMS, COMPONENTS, VARIANTS
from ..results_reading import arm_of, without_seeds
from ..stats import mean_and_spread, paired_comparison
from . import fair_fight, tuned
from .regimes import never_binds
from .runs import finished_starts, unpaired_starts

__all__ = [
    "METRIC",
    "merged_results",
    "ablation_rows",
    "shares",
    "family_rows",
    "family_shares",
    "tuned_rows",
    "cap_idle",
]

METRIC = {"cifar10_ablation": "test_acc", "grokking_ablation": "val_acc"}


def merged_results(ablation: dict, reference: dict | None) -> dict:
    """``ablation``'s runs with the arms it lacks taken from ``reference`` (``cifar10-full``).

    Refuses (``ValueError``) when the two files were run with different configurations, or when
    a start's runs did not share initial weights and data order: a merged comparison must be as
    paired as one file's.
    Chapter: ablation.
    """
    if reference is None:
        return ablation
    if without_seeds(ablation["config"]) != without_seeds(reference["config"]):
        raise ValueError(
            "the ablation and the reference results were run with different configurations; "
            "rerun the missing arms in the ablation itself (`python -m stiefel_book run cifar10_ablation`)"
        )
    runs = dict(ablation["runs"])
    for key, run in reference["runs"].items():
        if arm_of(key) in ABLATION_ARMS:
            runs.setdefault(key, run)
    for seed, marks in unpaired_starts(runs).items():
        raise ValueError(f"start {seed}: the merged runs began from different weights or data orders ({marks})")
    return {**ablation, "runs": runs}


def ablation_rows(results: dict, metric: str) -> list[dict]:
    """One row per arm other than the full rule, over the starts where every arm finished:
    its mean accuracy (percent) and the paired comparison full rule − arm (percentage points).
    Chapter: ablation."""
    starts = finished_starts(results, ABLATION_ARMS)
    acc = {
        arm: np.array([100 * results["runs"][f"{arm}/{s}"]["final"][metric] for s in starts]) for arm in ABLATION_ARMS
    }
    component = {variant: name for name, variant in COMPONENTS.items()}
    rows = []
    for arm in ABLATION_ARMS:
        if arm == "stiefel":
            continue
        rows.append(
            {
                "arm": arm,
                "removes": component.get(arm, "the whole rule"),
                "starts": starts,
                "accuracy": mean_and_spread(acc[arm]) if starts else None,
                "full_minus_arm": paired_comparison(acc["stiefel"], acc[arm]) if len(starts) >= 2 else None,
            }
        )
    return rows


def shares(rows: list[dict]) -> dict[str, float] | None:
    """Each component's share of the baseline-to-full-rule gain: (full − variant) / (full −
    baseline), on the mean differences. ``None`` unless the gain itself is significant and
    positive (its 95 % interval above zero): there is nothing to apportion otherwise.
    Chapter: ablation."""
    gain = next(r["full_minus_arm"] for r in rows if r["arm"] == "baseline")
    if gain is None or gain.ci_low <= 0:
        return None
    return {
        r["removes"]: r["full_minus_arm"].mean_difference / gain.mean_difference for r in rows if r["arm"] in VARIANTS
    }


def family_rows(results: dict, metric: str, family) -> list[dict]:
    """The ablation's declared family on one task: the full rule − each other arm (the variants
    and AdamW), paired over the starts every arm finished, Holm across the family, one of the four
    words each (:func:`fair_fight.family_rows`; ``family`` from ``book/protocol.yml``). Each row
    adds ``variant``, ``removes`` (the component), ``accuracy`` (the arm's, percent) and
    ``identical`` (every start gave the full rule's number: the switch never acted).
    Chapter: ablation."""
    starts = finished_starts(results, ABLATION_ARMS)
    if len(starts) < 2:
        return []
    values = {arm: {s: results["runs"][f"{arm}/{s}"]["final"][metric] for s in starts} for arm in ABLATION_ARMS}
    others = tuple(arm for arm in ABLATION_ARMS if arm != "stiefel")
    rows = fair_fight.family_rows(values, ("stiefel",), others, family.margin / 100, family.alpha)
    component = {variant: name for name, variant in COMPONENTS.items()}
    for r in rows:
        arm = r["reference"]
        r["variant"], r["removes"] = arm, component.get(arm, "the whole rule")
        r["accuracy"] = mean_and_spread([100 * values[arm][s] for s in starts])
        r["identical"] = all(values[arm][s] == values["stiefel"][s] for s in starts)
    return rows


def family_shares(rows: list[dict]) -> dict[str, float] | None:
    """Each component's share of the full rule's gain over AdamW, (full − variant) / (full −
    AdamW) on the mean differences of :func:`family_rows`; ``None`` unless the full rule is
    *higher* than AdamW under the family's rule: there is nothing to apportion otherwise.
    Chapter: ablation."""
    gain = next((r for r in rows if r["variant"] == "baseline"), None)
    if gain is None or gain["verdict"] != "higher":
        return None
    return {r["removes"]: r["mean_pp"] / gain["mean_pp"] for r in rows if r["variant"] in VARIANTS}


# the ablation's arms that the W_Q, W_K lr sweep tuned: in the family grokking_fair, then (swept later)
# in grokking_fair_ablation
TUNED_VARIANTS = ("fixed_step", "per_entry", "no_projector", "no_trust_region", "baseline")
CAP_IDLE = (
    "the cap never binds at the full rule's tuned rate: the trust region is untested, and this row measures the "
    "two retractions"
)


def cap_idle(fair: dict | None, decay_map: dict | None) -> bool:
    """Whether the full rule's trust region never capped a step at its tuned lr (``fair``: the file
    ``grokking_fair``): the decay map's runs at λ = 1 (``grokking_decay_map``, the same task) record
    it at the task's lr, so this is known only where the tuned lr is the task's. Chapter: ablation."""
    if not fair or not decay_map:
        return False
    task = decay_map["config"]["task"]
    tuned_lr = dict(fair["config"].get("qk_lrs") or ()).get("stiefel")
    same_task = without_seeds(fair["config"]["task"]) == without_seeds(task)
    return same_task and tuned_lr == task["lr"] and bool(never_binds(decay_map, ("stiefel@wd=1",)))


def tuned_rows(
    fair_rows: list[dict], values: dict[str, dict[int, float]] | None = None, cap_idle: bool = False
) -> list[dict]:
    """The full rule − each variant the lr sweep tuned (:data:`TUNED_VARIANTS`), read from the
    families' rows it is handed (``grokking_fair``'s, :func:`tuned.fair_family`, and
    ``grokking_fair_ablation``'s, :func:`tuned.variant_family`), each at its own tuned lr; a variant
    whose runs are missing is left out; ``values`` (:func:`fair_fight.finals` of the same files)
    gives each arm's mean accuracy; ``cap_idle``: the full rule's trust region never capped a step
    at its tuned lr, so the trust region's row is marked untested (:data:`CAP_IDLE`). Chapter: ablation."""
    component = {variant: name for name, variant in COMPONENTS.items()}
    out = []
    for arm in TUNED_VARIANTS:
        row = tuned.find(fair_rows, "stiefel", arm)
        if row is not None:
            acc = mean_and_spread([100 * v for v in values[arm].values()]) if values and arm in values else None
            out.append(
                {
                    **row,
                    "variant": arm,
                    "removes": component.get(arm, "the whole rule"),
                    "identical": False,
                    "accuracy": acc,
                    "untested": CAP_IDLE if cap_idle and arm == "no_trust_region" else None,
                }
            )
    return out
