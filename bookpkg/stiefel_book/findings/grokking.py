"""What the grokking results say: the declared family ``grokking_p97`` in numbers and verdict words
(:func:`family_rows`; the chapter writes its sentences) and the claims table's line. The endpoints
per seed are :mod:`.grokking_runs`, whose report the chapter reads here too. Pure functions of the
``grokking`` results dicts they are handed."""

from __future__ import annotations

import numpy as np

from ..stats import mean_and_spread
from . import grokking_runs, regimes
from .grokking_runs import ARMS, endpoint_accuracies
from .grokking_runs import report as report  # re-exported: the chapter reads it here

__all__ = [
    *grokking_runs.__all__,  # read here by the chapter
    "family_rows",
    "claim",
]


def claim(results: dict | None, config, family=None) -> str:
    """One line for the book's claims table from ``grokking-full`` and its configuration: the
    validation accuracy at epoch 20,000 per arm, the censored time to 90 %, and the regime. With
    ``family`` (``grokking_p97``), the two verdicts of :func:`family_rows` (the time by the paired
    permutation log-rank, Holm across the family) instead of the asymptotic log-rank p.
    Chapter: grokking."""
    if not results or not results.get("runs"):
        return "not yet measured (no finished full run)"
    table = endpoint_accuracies(results, 20_000)
    parts = []
    for arm, name in (("stiefel", "Stiefel"), ("baseline", "baseline")):
        values = [100 * v for v in table.get(arm, {}).values()]
        if len(values) >= 2:
            s = mean_and_spread(values)
            parts.append(f"{name} {s.mean:.1f}% ± {s.std:.1f} (n = {s.n}, range {s.min:.1f}-{s.max:.1f})")
        elif values:
            parts.append(f"{name} {values[0]:.1f}% (n = 1)")
        else:
            parts.append(f"{name}: no finished run")
    line = "validation accuracy at epoch 20,000: " + "; ".join(parts)
    seeds = regimes.paired_seeds(results, "stiefel", "baseline")
    rows = family_rows(results, family) if family is not None else None
    if rows is not None:
        e, t = rows["endpoint"], rows["time"]
        line += (
            f"; under the declared family (Holm): accuracy {e['verdict']} ({e['mean_pp']:+.1f} pp, Holm p = "
            f"{e['p_holm']:.2g}); time to 90 %, median epoch (Kaplan-Meier, censored runs kept): Stiefel "
            f"{t['median'][0]:,.0f}, baseline {t['median'][1]:,.0f} ({t['never'][1]} of {len(rows['seeds'])} never), "
            f"{t['verdict']} (paired permutation log-rank p = {t['p']:.2g}, Holm p = {t['p_holm']:.2g})"
        )
    elif len(seeds) >= 2:
        s_, b_ = (regimes.survival(results, arm, seeds=seeds) for arm in ("stiefel", "baseline"))
        _, p = regimes.logrank(results, "stiefel", "baseline")
        line += (
            f"; time to 90 %, median epoch (Kaplan-Meier, censored runs kept): Stiefel {s_.median:,.0f}, "
            f"baseline {b_.median:,.0f} ({b_.censored} of {len(seeds)} never), log-rank p = {p:.2g}"
        )
    budget = regimes.decay_budget(
        config.lr, config.weight_decay, regimes.grokking_lr_factors(config.warmup_epochs, config.epochs)
    )
    return line + f"; regime: p = {config.p}, Σ lr·λ = {budget:.3g}, {config.epochs:,} epochs (a CPU-sized model)"


# --- the declared family (book/protocol.yml: grokking_p97) -------------------------------------


def family_rows(results: dict | None, family, epoch: int = 20_000, threshold: float = 0.9) -> dict | None:
    """The family ``grokking_p97``: the Stiefel rule − AdamW over the seeds both finished, on
    validation accuracy at ``epoch`` (paired t test and TOST within the family's margin) and on
    time to ``threshold`` (paired permutation log-rank, runs that never get there censored), the
    two p-values Holm-adjusted together. ``None`` with fewer than 2 paired seeds. Returns
    ``{"seeds", "endpoint": {...}, "time": {...}}``, each with its word (higher, lower,
    equivalent, inconclusive; time: higher when the Stiefel rule gets there sooner) and p-values.
    Chapter: grokking."""
    from ..stats import holm, paired_t_p, permutation_logrank, tost
    from ..stats.paired import MIN_PAIRS_FOR_VERDICT
    from .regimes import survival, time_to_threshold

    table = endpoint_accuracies(results, epoch) if results else {}
    seeds = sorted(set(table.get("stiefel", {})) & set(table.get("baseline", {})))
    if len(seeds) < 2:
        return None
    d = np.array([table["stiefel"][k] - table["baseline"][k] for k in seeds])
    margin = family.margin / 100
    equivalence = tost(d, margin, family.alpha)
    times = {arm: [time_to_threshold(results["runs"][f"{arm}/{k}"], threshold) for k in seeds] for arm in ARMS}
    lr = permutation_logrank(*zip(*times["stiefel"]), *zip(*times["baseline"]), paired=True)
    tested = len(seeds) >= MIN_PAIRS_FOR_VERDICT
    p = np.array([paired_t_p(d), lr.p_value]) if tested else np.array([np.nan, np.nan])
    p_holm = holm(p, nan="one")
    alpha = family.alpha

    def word(p_adj: float, sign: float, equivalent: bool) -> str:
        if p_adj < alpha:
            return "higher" if sign > 0 else "lower"
        return "equivalent" if equivalent else "inconclusive"

    half = float(equivalence.ci_high - equivalence.ci_low) / 2  # the (1 - 2 alpha) interval, as TOST reads it
    return {
        "seeds": seeds,
        "endpoint": {
            "mean_pp": 100 * float(d.mean()),
            "tost_ci_pp": (100 * equivalence.ci_low, 100 * equivalence.ci_high),
            "half_pp": 100 * half,
            "p": float(p[0]),
            "p_holm": float(p_holm[0]),
            "tost_p": equivalence.p_value,
            "verdict": word(p_holm[0], d.mean(), tested and equivalence.p_value < alpha),
            "past": tuple(sum(table[arm][k] >= threshold for k in seeds) for arm in ARMS[::-1]),
        },
        "time": {
            "statistic": lr.statistic,
            "p": lr.p_value,
            "p_holm": float(p_holm[1]),
            "exact": lr.exact,
            "arrangements": lr.arrangements,
            "verdict": word(p_holm[1], lr.statistic, False),
            "never": tuple(sum(not ok for _, ok in times[arm]) for arm in ARMS[::-1]),
            "median": tuple(survival(results, arm, threshold, seeds).median for arm in ARMS[::-1]),
        },
    }
