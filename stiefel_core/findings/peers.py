"""The Stiefel rule among its relatives (chapter "Among its relatives"): the learning rate each
arm's sweep chose, and the paired comparisons of the peers against the Stiefel rule and against
AdamW. Pure functions of the results dicts of ``grokking_peers_lr`` and ``grokking_peers``."""

from __future__ import annotations

import numpy as np

from ..experiments.grid import parse_grid_arm

__all__ = ["sweep_scores", "chosen_lr", "sweep_rows", "SWEEP_CRITERION"]

SWEEP_CRITERION = "mean validation accuracy over the logged epochs (the area under the curve), averaged over the sweep's seeds"


def _sweep_grid(sweep: dict, arm: str) -> tuple[tuple[float, ...], tuple[int, ...]]:
    config = sweep["config"]
    if arm not in config["arms"]:
        raise ValueError(f"the lr sweep has no arm {arm!r}; it sweeps {config['arms']}")
    return tuple(config["frame_lrs"]), tuple(config["seeds"])


def sweep_scores(sweep: dict, arm: str) -> dict[float, list[float]]:
    """``{lr: [score per finished seed]}`` of one arm, the score being :data:`SWEEP_CRITERION`
    for one run: it rewards reaching high accuracy early and holding it."""
    lrs, _ = _sweep_grid(sweep, arm)
    out: dict[float, list[float]] = {lr: [] for lr in lrs}
    for key, run in sorted(sweep["runs"].items()):
        name, _, _seed = key.rpartition("/")
        if not name.startswith(arm + "@"):
            continue
        base, lr = parse_grid_arm(name, "flr", tuple(sweep["config"]["arms"]))
        if base == arm and lr in out:
            out[lr].append(float(np.mean([r["val_acc"] for r in run["history"]])))
    return out


def chosen_lr(sweep: dict | None, arm: str) -> float:
    """The lr of ``arm`` with the highest mean score over the sweep's seeds (ties to the smaller
    lr). Refuses an incomplete sweep: every arm must have the same budget."""
    if not sweep or not sweep.get("runs"):
        raise ValueError("no lr sweep results: run `python -m stiefel_core run grokking_peers_lr --profile full` first")
    lrs, seeds = _sweep_grid(sweep, arm)
    scores = sweep_scores(sweep, arm)
    missing = [lr for lr in lrs if len(scores[lr]) < len(seeds)]
    if missing:
        raise ValueError(f"the lr sweep of {arm!r} is incomplete (lrs {missing} lack seeds of {list(seeds)}); "
                         "finish it with `python -m stiefel_core run grokking_peers_lr --profile full`")
    return min(lrs, key=lambda lr: (-float(np.mean(scores[lr])), lr))


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
        rows.append({"arm": arm, "scores": {lr: float(np.mean(v)) if v else None for lr, v in scores.items()}, "chosen": chosen,
                     "edge": chosen is not None and chosen in (min(scores), max(scores))})
    return rows
