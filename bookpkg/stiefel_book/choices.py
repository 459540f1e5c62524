"""Rules that pick a setting from earlier results: the W_Q, W_K lr each relative's sweep chose
(``grokking_peers_lr``) and the weight decay the size sweep trains at (``cifar10_long``'s decay
of largest paired gain). Pure and light (:mod:`.results_reading`, no torch): the experiments
that train at a chosen setting and the findings that report it both read it here, so an
experiment never imports a finding; and the fair fight's rule, which grows a W_Q, W_K lr sweep
along a ladder until its choice is interior (``grokking_qk_lr``, ``cifar10_qk_lr``, the routing
sweeps), with the reading of such a sweep's rungs that the sweeps and the fair fight's findings share."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from .results_reading import arm_of, grid_arm, paired, parse_grid_arm, split_key
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
    "LADDER",
    "LATE_FRACTION",
    "late_score",
    "metric_sign",
    "ladder_around",
    "ladder_scores",
    "late_scores",
    "epochs_to",
    "time_scores",
    "rung_scores",
    "choice",
    "is_interior",
    "next_rungs",
    "pending_rungs",
    "settled",
    "settled_or_none",
    "sweep_row",
    "cell_choices",
    "widest",
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
        raise ValueError("no lr sweep results: run `python -m stiefel_book run grokking_peers_lr --profile full` first")
    lrs, seeds = _sweep_grid(sweep, arm)
    scores = sweep_scores(sweep, arm)
    missing = [lr for lr in lrs if len(scores[lr]) < len(seeds)]
    if missing:
        raise ValueError(
            f"the lr sweep of {arm!r} is incomplete (lrs {missing} lack seeds of {list(seeds)}); "
            "finish it with `python -m stiefel_book run grokking_peers_lr --profile full`"
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
    return widest(gains) if gains else None


# --- the fair fight's rule: a W_Q, W_K lr sweep along a ladder ---------------------------------
# Sweeps resolve the choice *before* the runs that train at it and write it into their config.
#
# The rule, declared before the sweep ran (``book/protocol.yml`` states it in words):
#
# - **Grid**: the half-decade ladder 1, 3 x 10^k (steps of 3x and 3.3x) from 1e-6 to 30, and lr 0
#   below it (lr 0 is frozen frames: W_Q, W_K never move).
# - **Score** of one run: its mean validation accuracy over the last 20 % of training (robust to
#   the bimodal endpoint of grokking at p = 31, where a run ends near 55 % or near 100 %: a late
#   grokker and a run that groks and holds score apart). An lr's score is its mean over the
#   selection seeds; every rung needs every seed before anything is chosen. A run whose gradients
#   turn non-finite (an lr too large for its arm) scores 0.
# - **Choice**: the rung of highest score; ties go to the rung nearest the arm's starting lr (on a
#   plateau the sweep does not walk), then to the smaller lr. **Growth**: while the choice is
#   the largest rung tried, the next rung up is added; while it is the smallest, the next rung down
#   (below 1e-6, lr 0). The sweep stops when the choice is interior (both neighbours tried, neither
#   higher) or at lr 0 (a true boundary) or at the ladder's top.

LADDER = tuple(float(f"{m}e{k}") for k in range(-6, 2) for m in (1, 3))  # 1e-06 ... 30.0
LATE_FRACTION = 0.2  # the score's window: the last 20 % of training


def late_score(history: list[dict], epochs: int, metric: str = "val_acc", fraction: float = LATE_FRACTION) -> float:
    """Mean ``metric`` over the records of the last ``fraction`` of ``epochs`` (one run's score)."""
    start = epochs * (1.0 - fraction)
    late = [r[metric] for r in history if r["epoch"] > start]
    if not late:
        raise ValueError(f"no record after epoch {start:g} of {epochs}: the run's history is too short to score")
    return float(np.mean(late))


def metric_sign(metric: str) -> tuple[float, str]:
    """``(1.0, metric)`` for a metric where higher is better; ``(-1.0, name)`` for one written
    ``"-name"``, where lower is (``-val_bpc``)."""
    return (-1.0, metric[1:]) if metric.startswith("-") else (1.0, metric)


def ladder_around(center: float, below: int = 2, above: int = 1) -> tuple[float, ...]:
    """The rungs from ``below`` under ``center`` to ``above`` over it (``center`` on the ladder)."""
    if center not in LADDER:
        raise ValueError(f"{center:g} is not on the ladder {LADDER}")
    i = LADDER.index(center)
    return LADDER[max(0, i - below) : i + above + 1]


def rung_scores(scores: dict[float, list[float]], n_seeds: int) -> dict[float, float]:
    """``{lr: mean score}`` over the rungs that hold all ``n_seeds`` selection seeds."""
    return {lr: float(np.mean(s)) for lr, s in sorted(scores.items()) if len(s) >= n_seeds}


def choice(complete: dict[float, float], center: float) -> float:
    """The rung of highest mean score; ties to the rung nearest ``center`` (log scale), then the smaller."""
    if not complete:
        raise ValueError("no rung has all its selection seeds yet: nothing to choose from")
    distance = lambda lr: abs(np.log(lr / center)) if lr > 0 else np.inf  # noqa: E731
    return min(complete, key=lambda lr: (-complete[lr], distance(lr), lr))


def next_rungs(complete: dict[float, float], tried: Iterable[float], center: float) -> tuple[float, ...]:
    """The rungs to add next (empty when the choice is interior or at a true boundary)."""
    tried = sorted(set(tried) | set(complete))
    best = choice(complete, center)
    out = []
    if best == max(tried) and best in LADDER and best != LADDER[-1]:
        out.append(LADDER[LADDER.index(best) + 1])
    if best == min(tried) and best != 0.0:
        out.append(0.0 if best == LADDER[0] else LADDER[LADDER.index(best) - 1])
    return tuple(out)


def is_interior(complete: dict[float, float], lr: float) -> bool:
    """Whether ``lr`` has a tried neighbour on each side scoring no higher, or is lr 0."""
    rungs = sorted(complete)
    i = rungs.index(lr)
    if lr == 0.0:
        return True
    return 0 < i < len(rungs) - 1 and complete[rungs[i - 1]] <= complete[lr] >= complete[rungs[i + 1]]


def ladder_scores(
    sweep: dict, arm: str, score: Callable[[list[dict]], float], key: str = "qklr"
) -> dict[float, list[float]]:
    """``{lr: [score(history) per finished run]}`` of ``arm``'s runs ``"<arm>@<key>=<lr>/<seed>"``
    in the sweep's results file; lr 0 (the runs ``"frozen/<seed>"``) counts once the arm's grid has
    reached the ladder's bottom, its neighbour."""
    out: dict[float, list[float]] = {}
    for run, outcome in sorted(sweep["runs"].items()):
        name = arm_of(run)
        base, sep, lr = name.partition(f"@{key}=")
        if name == "frozen":
            rung = 0.0
        elif sep and base == arm:
            rung = float(lr)
        else:
            continue
        out.setdefault(rung, []).append(score(outcome["history"]))
    if LADDER[0] not in out:
        out.pop(0.0, None)
    return out


def late_scores(
    sweep: dict, arm: str, metric: str = "val_acc", *, key: str = "qklr", horizon: str = "epochs"
) -> dict[float, list[float]]:
    """:func:`ladder_scores` of ``arm``, a run's score being its :func:`late_score` of ``metric``
    over the sweep task's ``horizon`` (``"epochs"`` or ``"steps"``), in the sign that makes higher
    better (:func:`metric_sign`)."""
    sign, name = metric_sign(metric)
    length = sweep["config"]["task"][horizon]
    return ladder_scores(sweep, arm, lambda history: sign * late_score(history, length, name), key)


def epochs_to(history: list[dict], threshold: float, horizon: int) -> int:
    """The first logged epoch with validation accuracy ≥ ``threshold``, else ``horizon`` (censored)."""
    return next((r["epoch"] for r in history if r["val_acc"] >= threshold), horizon)


def time_scores(sweep: dict, arm: str, key: str = "qklr") -> dict[float, list[float]]:
    """:func:`ladder_scores` of ``arm``, a run's score being minus its epochs to the sweep's
    ``threshold`` (a run that never gets there counts the task's epochs): higher is faster."""
    horizon, threshold = sweep["config"]["task"]["epochs"], sweep["config"]["threshold"]
    return ladder_scores(sweep, arm, lambda history: -float(epochs_to(history, threshold, horizon)), key)


def pending_rungs(
    scores: dict[float, list[float]], n_seeds: int, first: Iterable[float], center: float
) -> tuple[float, ...]:
    """The rungs an arm still needs, from its ``scores`` so far (:func:`ladder_scores`): the
    unfinished rungs of its ``first`` grid and of those it tried, else the rule's next ones."""
    unfinished = tuple(lr for lr in sorted(set(first) | set(scores)) if len(scores.get(lr, [])) < n_seeds)
    return unfinished or next_rungs(rung_scores(scores, n_seeds), scores, center)


def settled(scores: dict[float, list[float]], n_seeds: int, center: float) -> dict:
    """``{"lr", "score", "interior", "scores"}``: the rule's choice from an arm's ``scores``
    (:func:`ladder_scores`) over the rungs that hold all ``n_seeds`` seeds."""
    complete = rung_scores(scores, n_seeds)
    lr = choice(complete, center)
    return {"lr": lr, "score": complete[lr], "interior": is_interior(complete, lr), "scores": complete}


def settled_or_none(scores: dict[float, list[float]], n_seeds: int, center: float) -> dict | None:
    """:func:`settled`, or ``None`` while no rung holds all ``n_seeds`` seeds (nothing to choose from)."""
    return settled(scores, n_seeds, center) if rung_scores(scores, n_seeds) else None


def sweep_row(arm: str, scores: dict[float, list[float]], n_seeds: int, center: float, sign: float = 1.0) -> dict:
    """A findings row of one swept arm: ``scores`` (lr -> mean over the rungs all ``n_seeds`` seeds
    finished, times ``sign``: -1 turns minus-epochs back into epochs), ``n``, ``chosen`` (the rule's lr,
    ``None`` while no rung is complete) and ``interior``."""
    pick = settled_or_none(scores, n_seeds, center)
    return {
        "arm": arm,
        "scores": {lr: sign * v for lr, v in pick["scores"].items()} if pick else {},
        "n": n_seeds,
        "chosen": pick["lr"] if pick else None,
        "interior": bool(pick and pick["interior"]),
    }


def cell_choices(sweep: dict, arms: Iterable[str], weight_decay: float, metric: str = "test_acc") -> dict:
    """``{arm: its choice}`` (:func:`settled_or_none` of the late ``metric``) in the cells
    ``"<arm>@wd=<weight_decay>"`` of a sweep over lr x λ, such as CIFAR-10's ``cifar10_qk_lr``."""
    n, center = len(sweep["config"]["seeds"]), sweep["config"]["task"]["lr"]
    cell = {arm: late_scores(sweep, grid_arm(arm, "wd", weight_decay), metric) for arm in arms}
    return {arm: settled_or_none(scores, n, center) for arm, scores in cell.items()}


def widest(gaps: dict[float, float]) -> float:
    """The key of ``gaps`` whose value is largest in absolute value (ties: the first in order)."""
    return max(gaps, key=lambda k: abs(gaps[k]))
