"""Exact tests on counts: the sign test on paired differences and McNemar's test on paired
successes, both the two-sided binomial test with success probability 1/2."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .paired import _sample

__all__ = ["binomial_two_sided", "SignTest", "sign_test", "McNemar", "mcnemar_exact"]


def binomial_two_sided(k: int, n: int) -> float:
    """Exact two-sided p of ``k`` successes in ``n`` fair trials: the probability of a count at
    least as far from ``n / 2`` as ``k``, i.e. ``min(1, 2 P(X <= min(k, n - k)))``, computed in
    exact fractions. ``n = 0`` gives 1 (no trial, no evidence). Chapters: ablation, regimes, peers."""
    if not (isinstance(k, int | np.integer) and isinstance(n, int | np.integer)) or not 0 <= k <= n:
        raise ValueError(f"need integers 0 <= k <= n, got k = {k!r}, n = {n!r}")
    tail = sum(math.comb(n, i) for i in range(min(k, n - k) + 1))
    return float(min(Fraction(1), Fraction(2 * tail, 2**n)))


@dataclass(frozen=True)
class SignTest:
    """Signs of paired differences ``a - b``; zeros are dropped before the test. Chapters: ablation, regimes, peers."""

    n: int  # nonzero differences, the test's trials
    positives: int
    negatives: int
    zeros: int
    p_value: float  # exact two-sided binomial; 1 when every difference is zero


def sign_test(differences: Sequence[float] | np.ndarray) -> SignTest:
    """Exact two-sided sign test of paired differences (median zero), zeros dropped.
    Chapters: ablation, regimes, peers."""
    d = _sample(differences, "differences")
    positives, negatives = int((d > 0).sum()), int((d < 0).sum())
    n = positives + negatives
    return SignTest(n, positives, negatives, len(d) - n, binomial_two_sided(positives, n))


@dataclass(frozen=True)
class McNemar:
    """Paired successes of ``a`` and ``b`` (for example, seeds past 90 %). Chapters: ablation, regimes, peers."""

    n: int  # pairs
    a_successes: int
    b_successes: int
    a_only: int  # discordant pairs: a succeeded, b did not
    b_only: int  # discordant pairs: b succeeded, a did not
    p_value: float  # exact two-sided binomial on the discordant pairs; 1 when there are none


def _booleans(values, name: str) -> np.ndarray:
    x = np.asarray(values)
    if x.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {x.shape}")
    if x.dtype != bool and not np.isin(x, (0, 1)).all():
        raise ValueError(f"{name} must hold booleans (or 0 and 1), one per pair; got {x.tolist()[:6]}...")
    return x.astype(bool)


def mcnemar_exact(a_success: Sequence[bool] | np.ndarray, b_success: Sequence[bool] | np.ndarray) -> McNemar:
    """McNemar's exact test: pair ``i`` is ``(a_success[i], b_success[i])`` (same seed); under
    no difference a discordant pair is as likely to favour ``a`` as ``b``, so ``a_only`` is
    binomial(``a_only + b_only``, 1/2). Chapters: ablation, regimes, peers."""
    a, b = _booleans(a_success, "a_success"), _booleans(b_success, "b_success")
    if a.shape != b.shape:
        raise ValueError(f"a_success and b_success must pair up, got lengths {len(a)} and {len(b)}")
    a_only, b_only = int((a & ~b).sum()), int((b & ~a).sum())
    return McNemar(len(a), int(a.sum()), int(b.sum()), a_only, b_only, binomial_two_sided(a_only, a_only + b_only))
