"""Rules that pick a setting from earlier results: the W_Q, W_K lr each relative's sweep chose
(``grokking_peers_lr``) and the weight decay the size sweep trains at (``cifar10_long``'s decay
of largest paired gain). Pure and light (:mod:`.results_reading`, no torch): the experiments
that train at a chosen setting and the findings that report it both read it here, so an
experiment never imports a finding. (The fair fight's rule: ``experiments/selection.py``.)"""

from __future__ import annotations

import numpy as np

from .results_reading import grid_arm, paired, parse_grid_arm, split_key
from .stats import PairedComparison

__all__ = [
    "SWEEP_CRITERION",
    "swept_lrs",
    "sweep_scores",
    "chosen_lr",
    "MIN_PAIRS",
    "decays_of",
    "paired_gain_at",
    "largest_gap_decay",
]

# --- the relatives' lr sweep (grokking_peers_lr) ---------------------------------------------

SWEEP_CRITERION = (
    "mean validation accuracy over the logged epochs (the area under the curve), averaged over the sweep's seeds"
)


def swept_lrs(config: dict, arm: str) -> tuple[float, ...]:
    """The lrs the sweep ``config`` (a results file's ``config``) tries for ``arm``."""
    scale = dict(map(tuple, config.get("lr_scales", ()))).get(arm, 1.0)
    return tuple(float(f"{lr * scale:.6g}") for lr in config["frame_lrs"])


def _sweep_grid(sweep: dict, arm: str) -> tuple[tuple[float, ...], tuple[int, ...]]:
    config = sweep["config"]
    if arm not in config["arms"]:
        raise ValueError(f"the lr sweep has no arm {arm!r}; it sweeps {config['arms']}")
    return swept_lrs(config, arm), tuple(config["seeds"])


def sweep_scores(sweep: dict, arm: str) -> dict[float, list[float]]:
    """``{lr: [score per finished seed]}`` of one arm, the score being :data:`SWEEP_CRITERION`
    for one run: it rewards reaching high accuracy early and holding it."""
    lrs, _ = _sweep_grid(sweep, arm)
    out: dict[float, list[float]] = {lr: [] for lr in lrs}
    for key, run in sorted(sweep["runs"].items()):
        name, _seed = split_key(key)
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
        raise ValueError(
            f"the lr sweep of {arm!r} is incomplete (lrs {missing} lack seeds of {list(seeds)}); "
            "finish it with `python -m stiefel_core run grokking_peers_lr --profile full`"
        )
    return min(lrs, key=lambda lr: (-float(np.mean(scores[lr])), lr))


# --- the decay of the size sweep (cifar10_long -> cifar10_size) -------------------------------

MIN_PAIRS = 3  # the "at least 3 paired starts" before a decay can be chosen


def decays_of(results: dict) -> list[float]:
    """The weight decays of a grid results file: its configuration's grid, or else those its
    ``"<arm>@wd=<λ>/<seed>"`` keys name; ascending.
    Chapter: regimes."""
    grid = results.get("config", {}).get("weight_decays")
    if grid:
        return sorted(float(d) for d in grid)
    arms = {split_key(key)[0] for key in results["runs"]}
    return sorted({float(arm.split("@wd=")[1].split("@")[0]) for arm in arms if "@wd=" in arm})


def paired_gain_at(
    results: dict, weight_decay: float, a: str = "stiefel", b: str = "baseline", metric: str = "test_acc", seeds=None
) -> PairedComparison | None:
    """Paired ``a - b`` of the final ``metric`` (points for accuracies) at ``weight_decay``, over the
    starts both finished (of ``seeds``, when given); ``None`` with fewer than two pairs.
    Chapter: CIFAR-10 patches."""
    return paired(
        results, grid_arm(a, "wd", weight_decay), grid_arm(b, "wd", weight_decay), metric, seeds=seeds
    ).comparison


def largest_gap_decay(
    results: dict | None, a: str = "stiefel", b: str = "baseline", metric: str = "test_acc", seeds=(0, 1, 2)
) -> float | None:
    """The decay at which the mean paired gain ``a - b`` over ``seeds`` is largest in absolute
    value: where the preprint's 12-start protocol is run. ``None`` until every decay of the grid
    has those seeds for both arms (the choice is made on them alone, and said so where reported).
    Chapter: regimes."""
    if not results:
        return None
    gains = {}
    for decay in decays_of(results):
        comparison = paired_gain_at(results, decay, a, b, metric, seeds=seeds)
        if comparison is None or comparison.n < min(MIN_PAIRS, len(seeds)):
            return None
        gains[decay] = comparison.mean_difference
    return max(gains, key=lambda decay: abs(gains[decay])) if gains else None
