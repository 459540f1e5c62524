"""Paired statistics against SciPy and hand-computed values."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from stiefel_core.stats import mean_and_spread, paired_comparison


def test_hand_computed_example():
    # differences 1, 2, 3: mean 2, sd 1, t = 2 / (1 / sqrt 3) = 2 sqrt 3
    r = paired_comparison([2.0, 4.0, 6.0], [1.0, 2.0, 3.0])
    assert (r.n, r.mean_difference, r.std_difference) == (3, 2.0, 1.0)
    assert r.t_statistic == pytest.approx(2 * math.sqrt(3))
    assert (r.wins, r.ties, r.losses) == (3, 0, 0)
    half = 4.302652729911275 / math.sqrt(3)  # t_{0.975, 2} = 4.3027
    assert (r.ci_low, r.ci_high) == pytest.approx((2 - half, 2 + half))


def test_matches_scipy():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=12), rng.normal(size=12)
    r = paired_comparison(a, b, confidence=0.9)
    ref = stats.ttest_rel(a, b)
    assert r.t_statistic == pytest.approx(ref.statistic)
    assert r.p_value == pytest.approx(ref.pvalue)
    assert (r.ci_low, r.ci_high) == pytest.approx(tuple(ref.confidence_interval(0.9)))
    assert r.std_difference == pytest.approx(np.std(a - b, ddof=1))


def test_wins_ties_losses():
    r = paired_comparison([1, 2, 3, 4, 5], [0, 2, 4, 3, 5])
    assert (r.wins, r.ties, r.losses) == (2, 2, 1)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.floats(-1e3, 1e3), st.floats(-1e3, 1e3)), min_size=2, max_size=30))
def test_properties(pairs):
    a, b = np.array(pairs).T
    r = paired_comparison(a, b)
    assert r.wins + r.ties + r.losses == r.n == len(pairs)
    assert r.ci_low <= r.mean_difference <= r.ci_high
    if r.std_difference > 0:
        assert 0.0 <= r.p_value <= 1.0
        swapped = paired_comparison(b, a)
        assert swapped.t_statistic == pytest.approx(-r.t_statistic, abs=1e-9)
        assert swapped.p_value == pytest.approx(r.p_value)
        assert (swapped.wins, swapped.losses) == (r.losses, r.wins)


def test_zero_spread():
    shifted = paired_comparison([1.5, 2.5, 3.5], [1.0, 2.0, 3.0])
    assert shifted.t_statistic == math.inf and shifted.p_value == 0.0
    assert shifted.ci_low == shifted.ci_high == 0.5
    equal = paired_comparison([1.0, 2.0], [1.0, 2.0])
    assert math.isnan(equal.t_statistic) and math.isnan(equal.p_value)
    assert equal.ties == 2 and equal.ci_low == equal.ci_high == 0.0


def test_summary_is_rounded():
    text = paired_comparison([0.912345678, 0.93, 0.95], [0.9, 0.91, 0.905]).summary()
    assert "n = 3" in text and "95% CI" in text and "a wins 3" in text
    assert "0.912345678" not in text


@pytest.mark.parametrize(
    "a, b, kwargs, message",
    [([1.0], [2.0], {}, "at least 2"), ([1, 2], [1, 2, 3], {}, "pair up"),
     ([1, 2], [1, 2], {"confidence": 1.0}, "confidence"), ([1, math.nan], [1, 2], {}, "NaN"),
     ([[1, 2]], [[1, 2]], {}, "one-dimensional")],
)
def test_invalid_input(a, b, kwargs, message):
    with pytest.raises(ValueError, match=message):
        paired_comparison(a, b, **kwargs)


def test_mean_and_spread():
    s = mean_and_spread([1.0, 2.0, 4.0])
    assert (s.mean, s.min, s.max, s.n) == (7 / 3, 1.0, 4.0, 3)
    assert s.std == pytest.approx(np.std([1, 2, 4], ddof=1))
    assert "n = 3" in s.summary()
    assert math.isnan(mean_and_spread([2.0]).std)
    with pytest.raises(ValueError, match="at least one"):
        mean_and_spread([])
