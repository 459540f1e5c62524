"""The declared model-lr checks' rules (issue 52; ``book/protocol.yml``, sweeps ``*_model_lr``): a
task's model lr (every parameter's rate scaled together, W_Q, W_K's at its tuned ratio) run for
AdamW on selection seeds over rungs of the half-decade ladder grown at an edge, then read by the
rule its declaration states. Pure functions of a results dict; the experiments read them before
later runs (the lr a check chose), the findings to report them."""

from __future__ import annotations

import math

from . import choices

__all__ = ["KEY", "ladder_check", "ladder_choice", "TIES", "long_choice", "check_choice"]

KEY = "lr"  # a check's run name: "<arm>@lr=<model lr>"


def _ladder(results: dict, arm: str, late: bool) -> tuple[dict[float, float], list[float], float]:
    """``(means, tried, sign)`` of a model-lr check's file: each rung's mean score over the seeds (in
    the sign that makes higher better), the rungs tried, and that sign."""
    config = results["config"]
    metric = config["metric"]
    sign = 1.0 if metric.endswith("acc") else -1.0  # accuracies are higher-better, losses lower-better
    horizon = "steps" if "steps" in config["task"] else "epochs"
    length = config["task"][horizon]

    def score(history: list[dict]) -> float:
        value = choices.late_score(history, length, metric) if late else history[-1].get(metric, math.nan)
        return sign * value if math.isfinite(value) else -math.inf

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
    last 20 % of training, else its final record), the best rung (ties to the task's lr, then the
    smaller), ``grow``: the rungs to run next while the best is at an edge of the rungs tried short of
    the ladder's (``()`` once settled), ``interior``, ``gain`` (the best's score minus the task's lr's,
    in the metric's unit, positive: better) and ``moves`` (interior and ``gain`` over ``margin``):
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
