"""The declared model-lr checks' rules (issue 52; ``book/protocol.yml``, sweeps ``*_model_lr``): a
task's model lr (every parameter's rate scaled together, W_Q, W_K's at its tuned ratio) run for
AdamW on selection seeds over rungs of the half-decade ladder grown at an edge, then read by the
rule its declaration states. Pure functions of a results dict; the experiments read them before
later runs (the lr a check chose), the findings to report them."""

from __future__ import annotations

import math

from . import choices, results_reading

__all__ = [
    "KEY",
    "DECAY_KEY",
    "grid_of",
    "run_score",
    "by_value",
    "scores",
    "rung_means",
    "best_rung",
    "ladder_check",
    "ladder_choice",
    "TIES",
    "long_choice",
    "check_choice",
]

KEY = "lr"  # a check's run name: "<arm>@lr=<model lr>"
DECAY_KEY = "wd"  # a decay-sensitivity run's: "<arm>@wd=<λ>"


# --- the tuning budget's scores (charlm_lr_sensitivity and the sweeps declared as it) ------------


def grid_of(results: dict) -> tuple[str, list[float]]:
    """``(the run names' key, the declared values)`` of a tuning-budget file: over the model lr
    (``"lr"``, its ``rungs``) or, a decay-sensitivity file, over the weight decay (``"wd"``, its ``decays``)."""
    config = results["config"]
    if "decays" in config:
        return DECAY_KEY, [float(v) for v in config["decays"]]
    return KEY, [float(r) for r in config["rungs"]]


def run_score(run: dict, metric: str) -> float:
    """A tuning-budget run's score, lower better: its final ``metric``, capped at the task's initial loss
    (a uniform prediction, which the run records); a diverged run (not finite) scores the initial loss."""
    initial = float(run["initial_loss"])
    loss = float(run["final"].get(metric, math.nan))
    return min(loss, initial) if math.isfinite(loss) else initial


def by_value(results: dict, arm: str, value) -> dict[float, dict[int, float]]:
    """``{grid value: {seed: value(run)}}`` of ``arm``'s runs, values in order."""
    key, _ = grid_of(results)
    out: dict[float, dict[int, float]] = {}
    for name, run in results["runs"].items():
        cell, seed = results_reading.split_key(name)
        if cell.partition(f"@{key}=")[0] == arm:  # the file's arms and those added after (manifold Muon)
            at = results_reading.parse_grid_arm(cell, key, (arm,))[1]
            out.setdefault(at, {})[seed] = value(run)
    return dict(sorted(out.items()))


def scores(results: dict, arm: str) -> dict[float, dict[int, float]]:
    """``{grid value: {seed: score}}`` of ``arm`` (``"baseline"``, ...) (:func:`run_score`); refused without runs."""
    out = by_value(results, arm, lambda run: run_score(run, results["config"]["metric"]))
    if not out:
        raise ValueError(f"no runs of arm {arm!r} in this results file (arms: {results['config']['arms']})")
    return out


def rung_means(results: dict, arm: str) -> dict[float, float]:
    """``{grid value: mean score over its seeds}`` for the values every declared seed has run."""
    seeds = set(results["config"]["seeds"])
    return {at: sum(s.values()) / len(s) for at, s in scores(results, arm).items() if seeds <= set(s)}


def best_rung(results: dict, arm: str) -> float | None:
    """The declared "best model lr" of ``arm`` in a tuning-budget file (charlm_decay_sensitivity's task): the rung
    of lowest mean score over the declared seeds (ties to the smaller), once every rung holds every seed; else
    ``None``."""
    _, rungs = grid_of(results)
    try:
        means = rung_means(results, arm)
    except ValueError:
        return None
    if any(r not in means for r in rungs):
        return None
    return min(rungs, key=lambda r: (means[r], r))


def _ladder(results: dict, arm: str, late: bool) -> tuple[dict[float, float], list[float], float]:
    """``(means, tried, sign)`` of a model-lr check's file: each rung's mean score over the seeds (in
    the sign that makes higher better), the rungs tried, and that sign. A file whose metric is ``"time"``
    (``grokking_p97_model_lr``) scores a run as its task's W_Q, W_K sweep does, minus its epochs to the
    file's ``threshold`` (the task's epochs if never: :func:`stiefel_book.choices.time_scores`), ``late``
    aside; its means are epochs (sign -1)."""
    config = results["config"]
    metric = config["metric"]
    sign = 1.0 if metric.endswith("acc") else -1.0  # accuracies are higher-better, losses and times lower-better
    horizon = "steps" if "steps" in config["task"] else "epochs"
    length = config["task"][horizon]

    def score(history: list[dict]) -> float:
        value = choices.late_score(history, length, metric) if late else history[-1].get(metric, math.nan)
        return sign * value if math.isfinite(value) else -math.inf

    if metric == "time":
        scores = choices.time_scores(results, arm, key=KEY)
    else:
        scores = choices.ladder_scores(results, arm, score, key=KEY)
    return choices.rung_scores(scores, len(config["seeds"])), sorted(scores), sign


def _grow(results: dict, best: float, tried: list[float]) -> tuple[float, ...]:
    """The rungs to run next while ``best`` is at an edge of the rungs ``tried`` short of the ladder's."""
    ladder = [float(r) for r in results["config"]["rungs"]]
    grow = []
    if best == tried[-1] and best != ladder[-1]:
        grow.append(ladder[ladder.index(best) + 1])
    if best == tried[0] and best != ladder[0]:
        grow.append(ladder[ladder.index(best) - 1])
    return tuple(grow)


def ladder_check(results: dict, margin: float, arm: str = "baseline", *, late: bool = True) -> dict:
    """A declared model-lr check on a grown ladder (``*_model_lr`` in ``book/protocol.yml``): each
    rung's mean score over the selection seeds (``late``: a run's mean of the file's metric over the
    last 20 % of training, else its final record; a file scored by ``"time"``: minus the epochs to its
    threshold, :func:`_ladder`), the best rung (ties to the task's lr, then the smaller), ``grow``: the
    rungs to run next while the best is at an edge of the rungs tried short of the ladder's (``()`` once
    settled), ``interior``, ``gain`` (the best's score minus the task's lr's, in the metric's unit,
    positive: better; by time, the epochs saved) and ``moves`` (interior and ``gain`` over ``margin``):
    ``{"current", "best", "means", "grow", "interior", "gain", "moves", "lr"}``. Refused while no
    rung, or not the task's lr's, holds every seed."""
    current = float(results["config"]["task"]["lr"])
    means, tried, sign = _ladder(results, arm, late)
    if current not in means:
        raise ValueError(
            f"the model-lr check needs the task's lr {current:g} on every seed; rungs so far {sorted(means)}"
        )
    best = choices.choice(means, current)
    grow = _grow(results, best, tried)
    ladder = [float(r) for r in results["config"]["rungs"]]
    interior = ladder[0] < best < ladder[-1] and not grow
    gain = means[best] - means[current]
    moves = interior and gain > margin
    return {
        "current": current,
        "best": best,
        "means": {lr: sign * v for lr, v in means.items()},
        "grow": grow,
        "interior": interior,
        "gain": gain,
        "moves": moves,
        "lr": best if moves else current,
    }


def ladder_choice(results: dict, ties: float, arm: str = "baseline") -> dict:
    """The long check's rule (``charlm_long_model_lr``): the rung of best mean final score over the
    seeds, ties within ``ties`` to the smaller lr; it is the model lr at that length once interior:
    ``{"lr", "means", "grow", "interior"}`` (``lr`` None while no rung holds every seed)."""
    means, tried, sign = _ladder(results, arm, late=False)
    if not means:
        return {"lr": None, "means": {}, "grow": (), "interior": False}
    top = max(means.values())
    lr = min(r for r, v in means.items() if v >= top - ties)
    grow = _grow(results, max(means, key=means.get), tried) or _grow(results, lr, tried)
    ladder = [float(r) for r in results["config"]["rungs"]]
    return {
        "lr": lr,
        "means": {r: sign * v for r, v in means.items()},
        "grow": grow,
        "interior": ladder[0] < lr < ladder[-1] and not grow,
    }


TIES = 0.02  # charlm_long_model_lr's ties (routing_charlm's margin), in bits per character


def long_choice(results: dict) -> float | None:
    """charlm_long_model_lr's model lr by its declared rule (:func:`ladder_choice`), or None while undecided."""
    pick = ladder_choice(results, TIES)
    return pick["lr"] if pick["interior"] else None


def check_choice(margin: float):
    """A model-lr check's lr by the rule of grokking_model_lr (:func:`ladder_check`: kept unless a better rung
    passes the margin), as a function of its results file; None while undecided."""

    def choose(results: dict) -> float | None:
        try:
            out = ladder_check(results, margin)
        except ValueError:
            return None
        return None if out["grow"] else out["lr"]

    return choose
