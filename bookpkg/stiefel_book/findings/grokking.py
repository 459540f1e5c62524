"""What the grokking results say (the grokking chapter): validation accuracy at the horizon per seed
and arm, before any verdict (:func:`endpoint_accuracies`, :func:`report`; one run's log and the
frames are read in the chapter), and the declared family ``grokking_p97`` in numbers and verdict
words (:func:`family_rows`; the chapter writes its sentences). Pure functions of the ``grokking``
results dicts they are handed."""

from __future__ import annotations

import math

import numpy as np

ARMS = ("baseline", "stiefel")  # experiments.grokking.ARMS (a test holds them equal; this module loads no torch)

__all__ = ["ARMS", "endpoint_accuracies", "family_rows"]


def endpoint_accuracies(results: dict, epoch: int | None = None) -> dict[str, dict[int, float]]:
    """Validation accuracy per arm and seed at ``epoch`` (default: each run's last record). Chapter: grokking."""
    table: dict[str, dict[int, float]] = {}
    for key, run in sorted(results["runs"].items()):
        arm, seed = key.split("/")
        records = [r for r in run["history"] if epoch is None or r["epoch"] == epoch]
        if records:
            table.setdefault(arm, {})[int(seed)] = records[-1]["val_acc"]
    return table


def family_rows(results: dict | None, family, epoch: int = 20_000, threshold: float = 0.9) -> dict | None:
    """The family ``grokking_p97``: the Stiefel rule − AdamW over the seeds both finished, on
    validation accuracy at ``epoch`` (paired t test and TOST within the family's margin) and on
    time to ``threshold`` (paired permutation log-rank, runs that never get there censored), the
    two p-values Holm-adjusted together. ``None`` with fewer than 2 paired seeds. Returns
    ``{"seeds", "endpoint": {...}, "time": {...}}``, each with its word (higher, lower,
    equivalent, inconclusive; time: higher when the Stiefel rule gets there sooner) and p-values.
    Chapter: grokking."""
    from ..stats import holm, paired_t_p, tost, word
    from ..stats.paired import MIN_PAIRS_FOR_VERDICT
    from .regimes import survival, time_test

    table = endpoint_accuracies(results, epoch) if results else {}
    seeds = sorted(set(table.get("stiefel", {})) & set(table.get("baseline", {})))
    if len(seeds) < 2:
        return None
    d = np.array([table["stiefel"][k] - table["baseline"][k] for k in seeds])
    margin = family.margin / 100
    equivalence = tost(d, margin, family.alpha)
    lr = time_test(results, "stiefel", "baseline", threshold, seeds)
    curves = {arm: survival(results, arm, threshold, seeds) for arm in ARMS[::-1]}  # Kaplan-Meier: Stiefel first
    tested = len(seeds) >= MIN_PAIRS_FOR_VERDICT
    p = np.array([paired_t_p(d), lr.p_value]) if tested else np.array([np.nan, np.nan])
    p_holm = holm(p, nan="one")
    alpha = family.alpha
    return {
        "seeds": seeds,
        "endpoint": {
            "mean_pp": 100 * float(d.mean()),
            "tost_ci_pp": (100 * equivalence.ci_low, 100 * equivalence.ci_high),
            "p": float(p[0]),
            "p_holm": float(p_holm[0]),
            "tost_p": equivalence.p_value,
            "verdict": word(d.mean(), p_holm[0], equivalence.p_value if tested else math.nan, alpha),
            "past": tuple(sum(table[arm][k] >= threshold for k in seeds) for arm in ARMS[::-1]),
        },
        "time": {
            "statistic": lr.statistic,
            "p": lr.p_value,
            "p_holm": float(p_holm[1]),
            "exact": lr.exact,
            "arrangements": lr.arrangements,
            "verdict": word(lr.statistic, p_holm[1], math.nan, alpha),
            "never": tuple(c.censored for c in curves.values()),
            "median": tuple(c.median for c in curves.values()),
        },
    }
