"""The routing decay map read (``induction_decay_map``): at each weight decay, the Stiefel rule
against AdamW and against frozen frames on the induction task's loss on the repeat at the final
step, the ten cells one family (``routing_decay_map`` in ``book/protocol.yml``: Holm, the paired
TOST at its margin) on the seeds every arm finished. The steps before the last are drawn, not
tested. The cell at the task's own decay is the judged induction runs themselves when their
configuration is the map's task (:func:`with_judged`: the same runs, bit for bit, so they are
not trained twice). Pure functions of results dicts; the chapter hands in the task's lr schedule.
"""

from __future__ import annotations

import numpy as np

from ..results_reading import finished_starts, grid_arm, run_key, seed_of, split_key, without_seeds
from .decay_map import MapCell, final_cells
from .regimes import decay_budget

__all__ = ["PAIRS", "ARMS", "METRIC", "with_judged", "map_cells", "seeds_read", "mean_rows"]

PAIRS = (("stiefel", "baseline"), ("stiefel", "frozen"))  # the declared family's two rows
METRIC = "val_loss"  # loss on the repeated half (nats per token); lower is better
ARMS = ("baseline", "stiefel", "no_decay_qk", "frozen")  # the map's arms, in the book's order


def with_judged(results: dict | None, judged: dict | None) -> dict | None:
    """The map with its cell at the judged runs' decay filled from ``judged`` (``induction-full``)
    where the map has no run of its own, only when the judged configuration is the map's task
    (every setting but the seeds): then ``arm@wd=λ/seed`` is the run ``arm/seed``. Else the map."""
    if not results or not judged or without_seeds(judged["config"]) != without_seeds(results["config"]["task"]):
        return results
    wd = judged["config"]["weight_decay"]
    if wd not in results["config"]["weight_decays"]:
        return results
    runs = dict(results["runs"])
    for key, run in judged["runs"].items():
        arm, seed = split_key(key)
        runs.setdefault(run_key(grid_arm(arm, "wd", wd), seed), run)
    return {**results, "runs": runs}


def seeds_read(results: dict | None) -> list[int]:
    """The seeds whose runs every cell of the map has (the seeds its verdicts read)."""
    if not results:
        return []
    names = [grid_arm(arm, "wd", wd) for pair in PAIRS for arm in pair for wd in results["config"]["weight_decays"]]
    return finished_starts(results, names)


def map_cells(results: dict, family, lr: float, lr_factors) -> list[MapCell]:
    """The map's cells (:func:`decay_map.final_cells`) on the seeds that finished every cell:
    ``family`` is the declared ``protocol.Family``, ``lr`` the task's lr and ``lr_factors`` its
    schedule's factor at each step (a cell's decay budget is Σ lr·λ up to its final step)."""
    factors = np.asarray(lr_factors, dtype=float)
    seeds = set(seeds_read(results))
    kept = {**results, "runs": {k: r for k, r in results["runs"].items() if seed_of(k) in seeds}}
    return final_cells(
        kept,
        PAIRS,
        family,
        metric=METRIC,
        budget_at=lambda wd, step: decay_budget(lr, wd, factors[:step]),
    )


def mean_rows(results: dict, seeds: list[int], arms: tuple[str, ...] = ARMS) -> list[tuple[str, list[float | None]]]:
    """Per arm, its mean final loss on the repeat at each decay of the map over ``seeds`` (``None``
    where a seed is missing): what each arm reached, beside the family's differences."""
    runs, decays = results["runs"], results["config"]["weight_decays"]
    out = []
    for arm in arms:
        means = []
        for wd in decays:
            values = [runs.get(run_key(grid_arm(arm, "wd", wd), s), {}).get("final", {}).get(METRIC) for s in seeds]
            means.append(None if not values or None in values else float(np.mean(values)))
        out.append((arm, means))
    return out
