"""The tuning budget (issue 49): how much each arm loses when its model lr is off, read from the
results of ``charlm_lr_sensitivity`` and ``induction_lr_sensitivity`` (the declared sweeps of those
names in ``book/protocol.yml``). Pure functions of a results dict.

- A run's score is its final endpoint (``config["metric"]``: bits per character, or nats), lower
  better; a diverged run (non-finite loss) and any run above the task's initial loss (a uniform
  prediction, recorded by each run) score the initial loss.
- Wortsman et al. (2023)'s LR sensitivity of an arm, per seed: the mean over the rungs of the
  score minus the seed's best score over the rungs; per arm, the mean over seeds with a 95 % t
  interval, unadjusted for multiplicity (:func:`sensitivity`). A seed counts once every rung has run.
- The model-lr check (issue 52): AdamW's mean final loss per rung; its best rung, if interior and
  better than the task's current model lr by more than the declared margin, becomes the task's
  model lr (:func:`model_lr_check`).
- Each run's largest attention logit over layers and logged steps (:func:`logit_peaks`).
- What a rate a half-decade or a decade off its best costs an arm (:func:`off_best`): a
  description chosen after the runs (labelled so where a page prints it), with no verdict drawn.
- The same readings of a decay-sensitivity file (``*_decay_sensitivity``), over its decays instead of its
  rungs: :func:`sensitivity`, what each decay costs against the arm's best (:func:`costs`), and the rates its
  runs trained at (:func:`rates`: each arm at its own best model lr, so the decay's pull, rate x decay, differs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..model_lr import by_value, grid_of, ladder_check, ladder_choice, rung_means, scores
from ..stats import paired_comparison

__all__ = [
    "Sensitivity",
    "scores",
    "rung_means",
    "sensitivity",
    "model_lr_check",
    "ladder_check",
    "ladder_choice",
    "logit_peak",
    "logit_peaks",
    "top_rung",
    "off_best",
    "costs",
    "rates",
]

CONFIDENCE = 0.95


@dataclass(frozen=True)
class Sensitivity:
    """An arm's LR sensitivity: the mean over seeds, its 95 % t interval (unadjusted; nan with one
    seed) and each seed's value."""

    mean: float
    low: float
    high: float
    per_seed: dict[int, float]

    @property
    def n(self) -> int:
        return len(self.per_seed)


def sensitivity(results: dict, arm: str) -> Sensitivity:
    """Wortsman et al.'s LR sensitivity of ``arm`` over the file's declared rungs (a decay-sensitivity file: its
    decays), per seed that has them all; refused while no seed has."""
    rungs = grid_of(results)[1]
    by_rung = scores(results, arm)
    seeds = sorted({s for runs in by_rung.values() for s in runs})
    per_seed = {}
    for seed in seeds:
        row = [by_rung.get(lr, {}).get(seed) for lr in rungs]
        if all(v is not None for v in row):
            per_seed[seed] = float(np.mean(row) - np.min(row))
    if not per_seed:
        raise ValueError(f"no seed of {arm!r} has run every rung {rungs} yet")
    x = np.array(list(per_seed.values()))
    if len(x) < 2:
        return Sensitivity(float(x.mean()), math.nan, math.nan, per_seed)
    c = paired_comparison(x, np.zeros_like(x), CONFIDENCE)
    return Sensitivity(c.mean_difference, c.ci_low, c.ci_high, per_seed)


def model_lr_check(results: dict, margin: float, arm: str = "baseline") -> dict:
    """The declared model-lr check on ``arm``'s rung means: ``{"current", "best", "gain",
    "interior", "moves", "lr", "means"}``. ``gain`` is the current lr's mean minus the best's
    (positive: the best is lower); ``lr`` is the task's model lr after the rule. Refused while
    the current lr's rung or an edge rung lacks a seed (the rule needs the whole ladder)."""
    config = results["config"]
    rungs = [float(r) for r in config["rungs"]]
    current = float(config["task"]["lr"])
    means = rung_means(results, arm)
    missing = [lr for lr in (*rungs, current) if lr not in means]
    if missing:
        raise ValueError(f"the model-lr check needs every rung of {arm!r} on every seed; missing {missing}")
    best = min(means, key=means.get)
    interior = rungs[0] < best < rungs[-1]
    gain = means[current] - means[best]
    moves = interior and gain > margin
    return {
        "current": current,
        "best": best,
        "gain": gain,
        "interior": interior,
        "moves": moves,
        "lr": best if moves else current,
        "means": means,
    }


def logit_peak(run: dict) -> float:
    """A run's largest attention logit over its layers and logged records (finite values only;
    nan when none was logged or all diverged)."""
    values = [
        v
        for record in run["history"]
        for k, v in record.items()
        if k.startswith("max_logit/") and v is not None and math.isfinite(v)
    ]
    return max(values) if values else math.nan


def logit_peaks(results: dict, arm: str) -> dict[float, dict[int, float]]:
    """``{model lr: {seed: the run's logit peak}}`` of ``arm``."""
    return by_value(results, arm, logit_peak)


def top_rung(results: dict, arm: str) -> dict:
    """What the ladder's highest rate does to ``arm`` against its best rate: ``{"best_lr", "best"
    (its mean score there), "top" (the highest rung), "at_top" (the mean score there), "peak"
    (the largest attention logit of any seed there)}``, over the rungs every seed has run."""
    means = rung_means(results, arm)
    best_lr = min(means, key=means.get)
    top = max(float(r) for r in results["config"]["rungs"])
    if top not in means:
        raise ValueError(f"{arm!r} has not run the highest rung {top} on every seed yet")
    peaks = [v for v in logit_peaks(results, arm)[top].values() if math.isfinite(v)]
    return {
        "best_lr": best_lr,
        "best": means[best_lr],
        "top": top,
        "at_top": means[top],
        "peak": max(peaks) if peaks else math.nan,
    }


def off_best(results: dict, arm: str, steps: int = 2) -> dict:
    """What a model lr ``steps`` rungs off ``arm``'s best costs it (on the half-decade ladder one
    rung is about 3x, two a decade): ``{"best_lr", "best", "below", "above"}``, where ``below``
    (``above``) is the mean score that many rungs under (over) the best minus the best's, over the
    rungs every seed has run; ``nan`` where that rung is off the ladder or not run. The best rung
    is the one of lowest mean, as in :func:`top_rung`."""
    if steps < 1:
        raise ValueError(f"steps must be a positive number of rungs, got {steps}")
    means = rung_means(results, arm)
    best_lr = min(means, key=means.get)
    rungs = sorted(float(r) for r in results["config"]["rungs"])
    i = rungs.index(best_lr)

    def cost(j: int) -> float:
        return means[rungs[j]] - means[best_lr] if 0 <= j < len(rungs) and rungs[j] in means else math.nan

    return {"best_lr": best_lr, "best": means[best_lr], "below": cost(i - steps), "above": cost(i + steps)}


def costs(results: dict, arm: str) -> dict:
    """What each value of the file's grid (its rungs, or a decay file's decays) costs ``arm``: ``{"best_at"
    (the value of lowest mean score), "best" (that mean), "cost": {value: its mean minus the best}}``, over the
    values every declared seed has run; refused while none has."""
    means = rung_means(results, arm)
    if not means:
        raise ValueError(f"no value of {arm!r}'s grid has run on every seed {results['config']['seeds']} yet")
    best_at = min(means, key=means.get)
    return {"best_at": best_at, "best": means[best_at], "cost": {v: m - means[best_at] for v, m in means.items()}}


def rates(results: dict, arm: str) -> dict:
    """``{"model_lr", "qk_lr"}``: the rates every run of ``arm`` recorded (a decay-sensitivity file runs an arm at
    one pair); refused where its runs disagree or recorded none."""
    runs = by_value(results, arm, lambda run: (run.get("model_lr"), run.get("qk_lr")))
    pairs = {pair for by_seed in runs.values() for pair in by_seed.values()}
    if len(pairs) != 1 or None in next(iter(pairs), (None,)):
        raise ValueError(f"{arm!r}'s runs do not share one recorded (model lr, W_Q, W_K lr): {sorted(pairs, key=str)}")
    model_lr, qk_lr = pairs.pop()
    return {"model_lr": float(model_lr), "qk_lr": float(qk_lr)}
