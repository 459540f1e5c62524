"""The log-rank test on right-censored times, with a permutation p-value.

With few runs the normal approximation of the log-rank statistic is far off: with 3 runs
against 3 only 20 relabelings exist, so no p-value below 2/20 = 0.10 can be honest, whatever the
asymptotic p says. ``permutation_logrank`` refers the statistic to its permutation distribution:
all relabelings of the pooled runs (unpaired), or all ``2^n`` swaps within the pairs (paired:
run ``i`` of ``a`` and of ``b`` share a seed), exactly when they number at most
:data:`MAX_EXACT`, else ``n_resamples`` random ones drawn with a fixed seed.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .paired import _sample

__all__ = ["MAX_EXACT", "LogRank", "logrank_statistic", "permutation_logrank"]

MAX_EXACT = 100_000  # enumerate every arrangement up to this many
_CHUNK = 8192  # arrangements scored at once


@dataclass(frozen=True)
class LogRank:
    """Log-rank comparison of ``a`` and ``b``; a positive statistic means ``a``'s events come
    sooner than under no difference. Chapters: regimes, grokking."""

    statistic: float  # Z = (O_a - E_a) / sqrt(V), scipy.stats.logrank's statistic; 0 when V = 0
    observed_minus_expected: float  # O_a - E_a
    variance: float  # V
    p_value: float  # two-sided permutation p: P(|Z*| >= |Z|)
    p_asymptotic: float  # two-sided normal p, for comparison only
    exact: bool  # every arrangement enumerated (else Monte Carlo)
    arrangements: int  # how many arrangements exist: C(n_a + n_b, n_a), or 2^n paired
    resamples: int  # how many were scored (all of them when exact)
    paired: bool


def _censored(times, events, name: str) -> tuple[np.ndarray, np.ndarray]:
    t = _sample(times, f"times_{name}")
    e = np.asarray(events)
    if e.shape != t.shape:
        raise ValueError(f"events_{name} must give one flag per time: {e.shape} against {t.shape}")
    if e.dtype != bool and not np.isin(e, (0, 1)).all():
        raise ValueError(f"events_{name} must hold booleans: True where the event happened, False where censored")
    return t, e.astype(bool)


class _Scorer:
    """Scores many labelings of one pooled sample at once: row ``r`` of ``labels`` marks group a."""

    def __init__(self, t: np.ndarray, e: np.ndarray):
        event_times = np.unique(t[e])
        self.at_risk = (t[None, :] >= event_times[:, None]).astype(np.float64)  # (K, N)
        self.dies = ((t[None, :] == event_times[:, None]) & e[None, :]).astype(np.float64)  # (K, N)
        self.n = self.at_risk.sum(1)  # at risk, both groups
        self.d = self.dies.sum(1)  # events, both groups
        self.shape = self.d * (self.n - self.d) / (self.n**2 * np.maximum(self.n - 1, 1))  # 0 when n = 1

    def __call__(self, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        g = labels.astype(np.float64)
        n_a, d_a = g @ self.at_risk.T, g @ self.dies.T  # (R, K)
        o_minus_e = (d_a - n_a * self.d / self.n).sum(1)
        v = (n_a * (self.n - n_a) * self.shape).sum(1)
        z = np.divide(o_minus_e, np.sqrt(v), out=np.zeros_like(v), where=v > 0)
        return z, o_minus_e, v


def logrank_statistic(times_a, events_a, times_b, events_b) -> float:
    """The log-rank ``Z`` of ``a`` against ``b`` (``scipy.stats.logrank``'s statistic; 0 when no
    event leaves both groups at risk). Chapters: regimes, grokking."""
    ta, ea = _censored(times_a, events_a, "a")
    tb, eb = _censored(times_b, events_b, "b")
    labels = np.r_[np.ones(len(ta), bool), np.zeros(len(tb), bool)]
    return float(_Scorer(np.r_[ta, tb], np.r_[ea, eb])(labels[None])[0][0])


def _exact_labelings(n_a: int, n_b: int, paired: bool):
    """Every labeling, in chunks: unpaired, each choice of n_a of the pooled runs; paired, each
    subset of pairs whose two runs swap groups."""
    if paired:
        bits = np.arange(n_a)
        for start in range(0, 2**n_a, _CHUNK):
            masks = np.arange(start, min(start + _CHUNK, 2**n_a))
            swap = (masks[:, None] >> bits) & 1 == 1
            yield np.concatenate([~swap, swap], axis=1)
        return
    choices = itertools.combinations(range(n_a + n_b), n_a)
    while chunk := list(itertools.islice(choices, _CHUNK)):
        labels = np.zeros((len(chunk), n_a + n_b), bool)
        labels[np.arange(len(chunk))[:, None], np.array(chunk)] = True
        yield labels


def _random_labelings(n_a: int, n_b: int, paired: bool, n_resamples: int, rng: np.random.Generator):
    for start in range(0, n_resamples, _CHUNK):
        r = min(_CHUNK, n_resamples - start)
        if paired:
            swap = rng.integers(0, 2, size=(r, n_a)).astype(bool)
            yield np.concatenate([~swap, swap], axis=1)
        else:
            base = np.r_[np.ones(n_a, bool), np.zeros(n_b, bool)]
            yield rng.permuted(np.broadcast_to(base, (r, n_a + n_b)), axis=1)


def permutation_logrank(
    times_a: Sequence[float] | np.ndarray,
    events_a: Sequence[bool] | np.ndarray,
    times_b: Sequence[float] | np.ndarray,
    events_b: Sequence[bool] | np.ndarray,
    *,
    paired: bool = False,
    n_resamples: int = 20_000,
    seed: int = 0,
) -> LogRank:
    """Log-rank test of ``a`` against ``b`` on right-censored times (``events`` False: censored at
    that time), two-sided, with a permutation p-value.

    Unpaired, the arrangements are the ``C(n_a + n_b, n_a)`` ways to relabel the pooled runs;
    paired (``times_a[i]`` and ``times_b[i]`` from the same seed; equal lengths), the ``2^n`` ways
    to swap labels within pairs. Up to :data:`MAX_EXACT` arrangements the p-value is exact: the
    fraction with ``|Z*| >= |Z|`` (the observed one among them). Beyond, ``n_resamples`` random
    arrangements from ``numpy.random.default_rng(seed)`` give ``(1 + #{|Z*| >= |Z|}) / (1 + n_resamples)``.
    Chapters: regimes, grokking.
    """
    ta, ea = _censored(times_a, events_a, "a")
    tb, eb = _censored(times_b, events_b, "b")
    n_a, n_b = len(ta), len(tb)
    if n_a == 0 or n_b == 0:
        raise ValueError(f"each group needs at least one run, got {n_a} and {n_b}")
    if paired and n_a != n_b:
        raise ValueError(f"a paired test needs one run of each group per seed, got {n_a} and {n_b} runs")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be positive, got {n_resamples}")
    score = _Scorer(np.r_[ta, tb], np.r_[ea, eb])
    observed = np.r_[np.ones(n_a, bool), np.zeros(n_b, bool)][None]
    z, o_minus_e, v = (float(x[0]) for x in score(observed))
    threshold = abs(z) * (1 - 1e-9) - 1e-12  # ties in |Z| count as at least as extreme
    arrangements = 2**n_a if paired else math.comb(n_a + n_b, n_a)
    exact = arrangements <= MAX_EXACT
    if exact:
        labelings = _exact_labelings(n_a, n_b, paired)
    else:
        labelings = _random_labelings(n_a, n_b, paired, n_resamples, np.random.default_rng(seed))
    extreme = scored = 0
    for labels in labelings:
        z_star = score(labels)[0]
        extreme += int((np.abs(z_star) >= threshold).sum())
        scored += len(z_star)
    p = extreme / scored if exact else (1 + extreme) / (1 + scored)
    from scipy import stats  # here, not at the top: a run's process starts without scipy

    return LogRank(z, o_minus_e, v, p, float(2 * stats.norm.sf(abs(z))), exact, arrangements, scored, paired)
