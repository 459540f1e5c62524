"""What a family of paired comparisons could ever decide: its power.

- :func:`smallest_detectable_effect`: the true mean difference a two-sided paired t test detects
  with the given power (80 % by default) at Holm's strictest level ``alpha / m`` (the level the
  smallest of ``m`` p-values must meet), from the noncentral t distribution.
- :func:`smallest_equivalence_margin`: the smallest margin the paired TOST, at the same level,
  establishes with that power when the arms are truly equal.
- :func:`floor_p`, :func:`holm_floor`: the smallest two-sided p an exact paired test on ``n``
  pairs can return (a sign test, or a permutation test that swaps within pairs: ``2 / 2^n``), and
  that floor after Holm's strictest step; a family whose Holm floor is above α can never decide.
- :func:`mcnemar_power`, :func:`mcnemar_smallest_difference`: the same questions for the exact
  McNemar test on counts of paired successes (seeds solved).

Every function refuses bad input with one ``ValueError`` that says what was wrong. Chapters: all
that state a family's verdicts (through ``tools/detectable.py`` and the claims table).
"""

from __future__ import annotations

import functools
import math

from scipy import integrate, optimize, stats

from .exact import binomial_two_sided

__all__ = [
    "POWER",
    "smallest_detectable_effect",
    "smallest_equivalence_margin",
    "t_power",
    "floor_p",
    "holm_floor",
    "pairs_for_floor",
    "mcnemar_power",
    "mcnemar_smallest_difference",
    "sd_from_interval",
]

POWER = 0.8  # the conventional power at which a detectable effect is quoted


def _check(n: int, m: int, alpha: float, power: float | None = None) -> float:
    if isinstance(n, bool) or not isinstance(n, int) or n < 2:
        raise ValueError(f"a paired test needs an integer number of pairs n >= 2, got {n!r}")
    if isinstance(m, bool) or not isinstance(m, int) or m < 1:
        raise ValueError(f"m, the family's number of comparisons, must be an integer >= 1, got {m!r}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}")
    if power is not None and not 0 < power < 1:
        raise ValueError(f"power must lie in (0, 1), got {power!r}")
    return alpha / m


def _sd(sd: float) -> float:
    if not (isinstance(sd, int | float) and math.isfinite(sd) and sd >= 0):
        raise ValueError(f"sd, the spread of the paired differences, must be a finite number >= 0, got {sd!r}")
    return float(sd)


def t_power(effect: float, n: int, sd: float, m: int = 1, alpha: float = 0.05) -> float:
    """Power of the two-sided paired t test at level ``alpha / m`` when the paired differences have
    true mean ``effect`` and standard deviation ``sd``: P(|T| > t_crit), T noncentral t with
    ``n - 1`` degrees of freedom and noncentrality ``effect * sqrt(n) / sd``."""
    level, sd = _check(n, m, alpha), _sd(sd)
    if sd == 0:
        return 1.0 if effect else level
    df, crit = n - 1, stats.t.ppf(1 - level / 2, n - 1)
    nc = abs(effect) * math.sqrt(n) / sd
    # scipy's noncentral t returns NaN far in a tail; the far tail (against the effect's sign) is then
    # below P(Z < -nc), and the near one is 1 - cdf
    far = float(stats.nct.cdf(-crit, df, nc))
    if math.isnan(far):
        far = float(stats.norm.cdf(-nc))
    return min(1.0, float(1 - stats.nct.cdf(crit, df, nc)) + far)


def smallest_detectable_effect(n: int, sd: float, m: int = 1, alpha: float = 0.05, power: float = POWER) -> float:
    """The smallest true mean difference (in ``sd``'s unit) that a two-sided paired t test on ``n``
    pairs detects with probability ``power`` at Holm's strictest level ``alpha / m`` (``m``: the
    family's comparisons; with ``m = 1`` the uncorrected test). ``sd``: the standard deviation of
    the paired differences (a family's own, or the selection seeds')."""
    _check(n, m, alpha, power)
    sd = _sd(sd)
    return 0.0 if sd == 0 else _detectable_in_sds(n, m, alpha, power) * sd


@functools.lru_cache(maxsize=256)
def _detectable_in_sds(n: int, m: int, alpha: float, power: float) -> float:
    """:func:`smallest_detectable_effect` in units of the sd (it scales with the sd): solved once per design."""

    def short(e: float) -> float:
        return t_power(e, n, 1.0, m, alpha) - power

    high = 1.0
    while short(high) < 0:
        high *= 2
    return float(optimize.brentq(short, 0.0, high, xtol=1e-10))


def _tost_power(margin: float, n: int, level: float) -> float:
    """Power of the paired TOST at ``level`` (each one-sided test) for a true difference of zero,
    ``margin`` in units of the differences' sd: E over the sample sd of P(|mean| < margin - t s / sqrt(n))."""
    df = n - 1
    crit = stats.t.ppf(1 - level, df)

    def given(v: float) -> float:  # v ~ chi-square(df); the sample sd is sqrt(v / df) (in sd units)
        reach = math.sqrt(n) * margin - crit * math.sqrt(v / df)
        return (2 * stats.norm.cdf(reach) - 1) * stats.chi2.pdf(v, df) if reach > 0 else 0.0

    top = df * (math.sqrt(n) * margin / crit) ** 2  # beyond it the TOST cannot reject
    return float(integrate.quad(given, 0, top, limit=200)[0])


def smallest_equivalence_margin(n: int, sd: float, m: int = 1, alpha: float = 0.05, power: float = POWER) -> float:
    """The smallest equivalence margin (in ``sd``'s unit) that the paired TOST on ``n`` pairs, at
    Holm's strictest level ``alpha / m``, establishes with probability ``power`` when the two arms
    are truly equal: a family whose declared margin is below it will rarely read "equivalent"."""
    level = _check(n, m, alpha, power)
    sd = _sd(sd)
    return 0.0 if sd == 0 else _equivalence_in_sds(n, level, power) * sd


@functools.lru_cache(maxsize=256)
def _equivalence_in_sds(n: int, level: float, power: float) -> float:
    """:func:`smallest_equivalence_margin` in units of the sd (it scales with the sd): solved once per design."""
    high = 1.0
    while _tost_power(high, n, level) < power:
        high *= 2
    return float(optimize.brentq(lambda x: _tost_power(x, n, level) - power, 1e-9, high, xtol=1e-8))


def floor_p(n: int) -> float:
    """The smallest two-sided p an exact paired test can return on ``n`` pairs: a sign test, or a
    permutation test that swaps within pairs (``2^n`` arrangements, two of them as extreme as the
    most extreme one): ``2 / 2^n``, at most 1."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n, the number of pairs, must be an integer >= 0, got {n!r}")
    return min(1.0, 2.0 ** (1 - n))


def holm_floor(n: int, m: int = 1) -> float:
    """:func:`floor_p` after Holm's strictest step (times ``m``, at most 1): the smallest adjusted p
    any comparison of an ``m``-comparison family on ``n`` pairs can reach with an exact test."""
    _check(max(n, 2), m, 0.05)
    return min(1.0, m * floor_p(n))


def pairs_for_floor(alpha: float = 0.05, m: int = 1) -> int:
    """The fewest pairs whose exact test can reach ``alpha`` after Holm's strictest step."""
    _check(2, m, alpha)
    n = 1
    while holm_floor(n, m) > alpha:
        n += 1
    return n


def mcnemar_power(n: int, p_a: float, p_b: float, alpha: float = 0.05, m: int = 1) -> float:
    """Power of the exact two-sided McNemar test at level ``alpha / m`` on ``n`` pairs when arm a
    succeeds (solves a seed) with probability ``p_a`` and arm b with ``p_b``, independently within
    a pair (a pair is a-only with probability ``p_a (1 - p_b)``, b-only with ``p_b (1 - p_a)``)."""
    level = _check(n, m, alpha)
    for name, p in (("p_a", p_a), ("p_b", p_b)):
        if not 0 <= p <= 1:
            raise ValueError(f"{name} must be a probability in [0, 1], got {p!r}")
    qa, qb = p_a * (1 - p_b), p_b * (1 - p_a)
    total = 0.0
    for k in range(n + 1):  # k discordant pairs, i of them a-only
        pk = stats.binom.pmf(k, n, qa + qb)
        if pk == 0 or k == 0:
            continue
        share = qa / (qa + qb)
        total += pk * sum(stats.binom.pmf(i, k, share) for i in range(k + 1) if binomial_two_sided(i, k) <= level)
    return float(total)


def mcnemar_smallest_difference(
    n: int, p_b: float, alpha: float = 0.05, m: int = 1, power: float = POWER, step: float = 0.005
) -> float:
    """The smallest ``p_a - p_b`` (a difference of success rates, ``p_a > p_b``) that the exact
    McNemar test on ``n`` pairs detects with probability ``power`` at level ``alpha / m``
    (:func:`mcnemar_power`); ``math.inf`` when no ``p_a`` up to 1 reaches it. Multiply by ``n`` for
    a count of seeds. The discrete test's power is not monotone; the first ``p_a`` on a grid of
    ``step`` that reaches ``power`` is returned."""
    _check(n, m, alpha, power)
    if not 0 <= p_b < 1:
        raise ValueError(f"p_b must be a probability in [0, 1), got {p_b!r}")
    p_a = p_b
    while p_a < 1:
        p_a = min(1.0, p_a + step)
        if mcnemar_power(n, p_a, p_b, alpha, m) >= power:
            return p_a - p_b
    return math.inf


def sd_from_interval(low: float, high: float, n: int, confidence: float = 0.95) -> float:
    """The standard deviation of ``n`` paired differences from their two-sided ``confidence`` t
    interval of the mean, ``[low, high]`` (the families' rows keep the interval, not the sd)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 2:
        raise ValueError(f"an interval from a t test needs n >= 2 pairs, got {n!r}")
    if not (math.isfinite(low) and math.isfinite(high) and high >= low):
        raise ValueError(f"the interval must be finite with low <= high, got [{low!r}, {high!r}]")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    return (high - low) / 2 * math.sqrt(n) / float(stats.t.ppf(0.5 + confidence / 2, n - 1))
