"""Equivalence and the four verdict words.

``tost`` is the paired two one-sided t tests of ``|mean(a - b)| < margin``. ``verdict`` reads
one comparison as one of :data:`VERDICTS`: ``"higher"`` or ``"lower"`` when the two-sided paired
t test rejects no difference, ``"equivalent"`` when TOST puts the difference within the declared
margin, ``"inconclusive"`` otherwise. ``family_verdicts`` does a declared family at once, with
both tests' p-values Holm-adjusted across it. A difference both detected and within the margin
reads as its direction: the direction is the stronger statement, and both p-values are kept.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from .multiple import holm
from .paired import MIN_PAIRS_FOR_VERDICT, _sample

__all__ = ["VERDICTS", "TOST", "tost", "paired_t_p", "word", "verdict", "Verdict", "family_verdicts"]

VERDICTS = ("higher", "lower", "equivalent", "inconclusive")


@dataclass(frozen=True)
class TOST:
    """Paired two one-sided tests of ``-margin < mean(d) < margin``. Chapters: all that state verdicts."""

    n: int
    mean_difference: float
    margin: float
    alpha: float
    p_lower: float  # H0: mean <= -margin, against mean > -margin
    p_upper: float  # H0: mean >= +margin, against mean < +margin
    p_value: float  # max(p_lower, p_upper): both one-sided nulls rejected at alpha iff p < alpha
    ci_low: float  # the (1 - 2 alpha) t interval of the mean
    ci_high: float
    equivalent: bool  # p < alpha, i.e. the (1 - 2 alpha) interval lies inside (-margin, margin)


def _checked(differences, margin: float, alpha: float) -> np.ndarray:
    d = _sample(differences, "differences")
    if len(d) < 2:
        raise ValueError(f"a paired test needs at least 2 differences, got {len(d)}")
    if not (math.isfinite(margin) and margin > 0):
        raise ValueError(f"margin must be a positive number in the differences' units, got {margin!r}")
    if not 0.0 < alpha < 0.5:
        raise ValueError(f"alpha must lie in (0, 0.5), got {alpha!r}")
    return d


def tost(differences: Sequence[float] | np.ndarray, margin: float, alpha: float = 0.05) -> TOST:
    """Paired TOST on ``differences = a - b`` with equivalence margin ``margin`` (same units).

    ``p_lower`` is ``ttest_1samp(d, -margin, alternative="greater")``, ``p_upper`` is
    ``ttest_1samp(d, +margin, alternative="less")``. Zero spread (every difference equal) makes
    each side's p 0 when the common value lies strictly inside that side's bound, else 1.
    Chapters: all that state verdicts.
    """
    d = _checked(differences, margin, alpha)
    n, mean, sd = len(d), float(d.mean()), float(d.std(ddof=1))
    if np.all(d == d[0]) or sd == 0.0:  # the second: a spread below the smallest float
        mean = float(d[0]) if np.all(d == d[0]) else mean
        p_lower, p_upper = float(mean <= -margin), float(mean >= margin)
        low = high = mean
    else:
        from scipy import stats  # here, not at the top: a run's process starts without scipy

        se, df = sd / math.sqrt(n), n - 1
        p_lower = float(stats.t.sf((mean + margin) / se, df))
        p_upper = float(stats.t.cdf((mean - margin) / se, df))
        half = float(stats.t.ppf(1 - alpha, df)) * se
        low, high = mean - half, mean + half
    p = max(p_lower, p_upper)
    return TOST(n, mean, float(margin), alpha, p_lower, p_upper, p, low, high, p < alpha)


def paired_t_p(differences: Sequence[float] | np.ndarray) -> float:
    """Two-sided p of the paired t test that ``mean(d) = 0`` (``ttest_1samp``); with zero spread
    0 when the common difference is nonzero and NaN when it is zero, as ``paired_comparison``.
    Chapters: all that state verdicts."""
    d = _sample(differences, "differences")
    if len(d) < 2:
        raise ValueError(f"a paired t test needs at least 2 differences, got {len(d)}")
    if np.all(d == d[0]) or d.std(ddof=1) == 0.0:  # the second: a spread below the smallest float
        return 0.0 if d.mean() else math.nan
    from scipy import stats  # here, not at the top: a run's process starts without scipy

    return float(stats.ttest_1samp(d, 0.0).pvalue)


def word(mean: float, p: float, tost_p: float, alpha: float) -> str:
    """The verdict word of a difference with mean ``mean`` from its (corrected) p and TOST p: higher or
    lower when ``p < alpha``, else equivalent when ``tost_p < alpha``, else inconclusive (NaN: untested)."""
    if p < alpha:  # NaN compares False: no test, no direction
        return "higher" if mean > 0 else "lower"
    return "equivalent" if tost_p < alpha else "inconclusive"


def verdict(
    differences: Sequence[float] | np.ndarray,
    margin: float,
    alpha: float = 0.05,
    *,
    p_value: float | None = None,
    tost_p_value: float | None = None,
    min_pairs: int = MIN_PAIRS_FOR_VERDICT,
) -> str:
    """One of :data:`VERDICTS` for paired ``differences = a - b``: ``"higher"`` (``"lower"``) when
    the two-sided p is below ``alpha`` and the mean is positive (negative), else ``"equivalent"``
    when the TOST p is below ``alpha``, else ``"inconclusive"``.

    ``p_value`` and ``tost_p_value`` replace this comparison's own p-values by the family's
    corrected ones (Holm-adjusted, as :func:`family_verdicts` computes them); by default both are
    this comparison's uncorrected p. Fewer than ``min_pairs`` differences read ``"inconclusive"``
    (nothing tested). Chapters: all that state verdicts.
    """
    d = _sample(differences, "differences")
    if len(d) < max(min_pairs, 2):
        _checked(np.zeros(2), margin, alpha)  # bad margin or alpha is still an error
        return "inconclusive"
    equivalence = tost(d, margin, alpha)
    p = paired_t_p(d) if p_value is None else p_value
    tost_p = equivalence.p_value if tost_p_value is None else tost_p_value
    return word(equivalence.mean_difference, p, tost_p, alpha)


@dataclass(frozen=True)
class Verdict:
    """One comparison of a family: its word, raw and adjusted p-values. Chapters: all that state verdicts."""

    word: str  # one of VERDICTS
    n: int
    mean_difference: float  # NaN with no differences
    p_value: float  # two-sided paired t; NaN when untested
    p_adjusted: float  # the same, corrected across the family
    tost: TOST | None  # None when untested (fewer than min_pairs)
    tost_p_adjusted: float


def family_verdicts(
    family: Mapping[str, Sequence[float] | np.ndarray],
    margin: float,
    alpha: float = 0.05,
    *,
    correction: Literal["holm", "none"] = "holm",
    min_pairs: int = MIN_PAIRS_FOR_VERDICT,
) -> dict[str, Verdict]:
    """The verdict of every comparison of one declared family (name -> paired differences), with
    the two-sided p-values Holm-adjusted across the family and the TOST p-values likewise. An
    untested comparison (fewer than ``min_pairs`` differences) keeps its place in the family with
    p = 1 (the family's size is the declared one) and reads ``"inconclusive"``.
    Chapters: all that state verdicts.
    """
    if correction not in ("holm", "none"):
        raise ValueError(f'correction must be "holm" or "none", got {correction!r}')
    names = list(family)
    samples = {k: _sample(family[k], f"differences of {k!r}") for k in names}
    _checked(np.zeros(2), margin, alpha)
    tested = {k: len(d) >= max(min_pairs, 2) for k, d in samples.items()}
    tests = {k: tost(d, margin, alpha) if tested[k] else None for k, d in samples.items()}
    p = np.array([paired_t_p(samples[k]) if tested[k] else math.nan for k in names])
    tost_p = np.array([tests[k].p_value if tested[k] else math.nan for k in names])
    if correction == "holm":
        p_adj, tost_adj = holm(p, nan="one"), holm(tost_p, nan="one")
    else:
        p_adj, tost_adj = p.copy(), tost_p.copy()
    out = {}
    for i, k in enumerate(names):
        mean = float(samples[k].mean()) if len(samples[k]) else math.nan
        said = word(mean, p_adj[i], tost_adj[i], alpha) if tested[k] else "inconclusive"
        out[k] = Verdict(said, len(samples[k]), mean, float(p[i]), float(p_adj[i]), tests[k], float(tost_adj[i]))
    return out
