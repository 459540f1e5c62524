"""Paired statistics for comparing two optimizers run from the same starts.

``paired_comparison(a, b)`` treats ``a[i]`` and ``b[i]`` as one pair (same seed, same
initialisation) and reports the differences ``a - b``: mean, spread, paired t test,
win counts and a t-based confidence interval. ``mean_and_spread`` summarises one sample.
``direction`` is the book's first verdict rule (interval above, below or holding zero); the
four-word rule of :mod:`stiefel_book.stats.equivalence` replaces it as chapters move over.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["PairedComparison", "Spread", "paired_comparison", "mean_and_spread", "direction", "MIN_PAIRS_FOR_VERDICT"]

MIN_PAIRS_FOR_VERDICT = 3  # two equal differences give a zero-width interval that would read as significant


def _sample(values: Sequence[float] | np.ndarray, name: str) -> np.ndarray:
    x = np.asarray(values, dtype=np.float64)  # accepts lists, arrays, CPU tensors
    if x.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} holds NaN or infinite values")
    return x


@dataclass(frozen=True)
class PairedComparison:
    """Paired differences ``a - b``; a positive mean difference means ``a`` is larger.
    Chapters: cifar10_patches, ablation, regimes."""

    n: int
    mean_difference: float
    std_difference: float  # sample standard deviation (ddof = 1) of a - b
    t_statistic: float  # +-inf when all differences are equal and nonzero, nan when all zero
    p_value: float  # two-sided; 0.0 and nan in those two cases
    wins: int  # pairs with a > b
    ties: int  # pairs with a == b
    losses: int  # pairs with a < b
    confidence: float
    ci_low: float
    ci_high: float

    def summary(self, digits: int = 4) -> str:
        """One line with rounded numbers, for printing in a chapter."""
        g = f".{digits}g"
        return (
            f"a - b = {self.mean_difference:{g}} (sd {self.std_difference:{g}}, n = {self.n}), "
            f"{self.confidence:.0%} CI [{self.ci_low:{g}}, {self.ci_high:{g}}], "
            f"t({self.n - 1}) = {self.t_statistic:.3g}, p = {self.p_value:.3g}, "
            f"a wins {self.wins}, ties {self.ties}, b wins {self.losses}"
        )


def paired_comparison(
    a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, confidence: float = 0.95
) -> PairedComparison:
    """Paired t test (``scipy.stats.ttest_rel``), wins and confidence interval of ``mean(a - b)``.

    Needs at least two pairs (``ValueError`` otherwise). When every difference is the
    same, the spread is zero: then ``t = ±inf``, ``p = 0`` and the interval is the single
    point (differences all equal and nonzero), or ``t = p = nan`` (all zero).
    Chapters: cifar10_patches, ablation, regimes.
    """
    x, y = _sample(a, "a"), _sample(b, "b")
    if x.shape != y.shape:
        raise ValueError(f"a and b must pair up, got lengths {len(x)} and {len(y)}")
    if len(x) < 2:
        raise ValueError(f"a paired comparison needs at least 2 pairs, got {len(x)}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")

    d = x - y
    n, mean, sd = len(d), float(d.mean()), float(d.std(ddof=1))
    if np.all(d == d[0]):  # zero spread: scipy would warn and return version-dependent values
        mean, sd = float(d[0]), 0.0
        t = math.copysign(math.inf, mean) if mean else math.nan
        p = 0.0 if mean else math.nan
        low = high = mean
    else:
        from scipy import stats  # here, not at the top: a run's process starts without scipy

        test = stats.ttest_rel(x, y)
        t, p = float(test.statistic), float(test.pvalue)
        half = float(stats.t.ppf(0.5 + confidence / 2, df=n - 1)) * sd / math.sqrt(n)
        low, high = mean - half, mean + half
    return PairedComparison(
        n=n,
        mean_difference=mean,
        std_difference=sd,
        t_statistic=t,
        p_value=p,
        wins=int((d > 0).sum()),
        ties=int((d == 0).sum()),
        losses=int((d < 0).sum()),
        confidence=confidence,
        ci_low=low,
        ci_high=high,
    )


@dataclass(frozen=True)
class Spread:
    """Mean, sample standard deviation (ddof = 1; nan when n = 1), min, max and count.
    Chapters: cifar10_patches, ablation, regimes."""

    mean: float
    std: float
    min: float
    max: float
    n: int

    def summary(self, digits: int = 4) -> str:
        g = f".{digits}g"
        return f"{self.mean:{g}} ± {self.std:{g}} (min {self.min:{g}}, max {self.max:{g}}, n = {self.n})"


def mean_and_spread(values: Sequence[float] | np.ndarray) -> Spread:
    """Summary of one sample; ``ValueError`` when it is empty. Chapters: cifar10_patches, ablation, regimes."""
    x = _sample(values, "values")
    if len(x) == 0:
        raise ValueError("mean_and_spread needs at least one value")
    std = float(x.std(ddof=1)) if len(x) > 1 else math.nan
    return Spread(float(x.mean()), std, float(x.min()), float(x.max()), len(x))


def direction(c: PairedComparison | None, min_pairs: int = MIN_PAIRS_FOR_VERDICT) -> str:
    """The verdict rule on a paired comparison ``a - b``: ``"higher"`` when its interval lies
    above zero, ``"lower"`` when below, ``"tie"`` when it holds zero, ``"untested"`` with fewer
    than ``min_pairs`` pairs (or none).
    Chapters: cifar10_patches, ablation, regimes."""
    if c is None or c.n < min_pairs:
        return "untested"
    if c.ci_low > 0:
        return "higher"
    if c.ci_high < 0:
        return "lower"
    return "tie"
