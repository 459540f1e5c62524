"""Statistics against SciPy, statsmodels and hand-computed values."""

import gc
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from stiefel_book.stats import (
    VERDICTS,
    binomial_two_sided,
    family_verdicts,
    holm,
    logrank_statistic,
    mcnemar_exact,
    mean_and_spread,
    paired_comparison,
    paired_t_p,
    permutation_logrank,
    sign_test,
    tost,
    verdict,
)


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
    [
        ([1.0], [2.0], {}, "at least 2"),
        ([1, 2], [1, 2, 3], {}, "pair up"),
        ([1, 2], [1, 2], {"confidence": 1.0}, "confidence"),
        ([1, math.nan], [1, 2], {}, "NaN"),
        ([[1, 2]], [[1, 2]], {}, "one-dimensional"),
    ],
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


# ---------------------------------------------------------------------------------------------
# Holm's adjustment: statsmodels' multipletests, and a case worked by hand


def test_holm_by_hand():
    # sorted: 0.005 x 4 = 0.02, 0.01 x 3 = 0.03, 0.03 x 2 = 0.06, 0.04 x 1 = 0.04 -> running max 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])  # capped at 1
    assert holm([0.02]) == pytest.approx([0.02])  # a family of one is not adjusted


def test_holm_matches_statsmodels(monkeypatch):
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    monkeypatch.setattr(gc, "collect", lambda *generation: 0)  # its holm runs one, ~0.5 s on a test run's heap
    rng = np.random.default_rng(0)
    families = [rng.uniform(0, 1, size=m) ** 3 for m in (1, 2, 5, 10, 25)]
    families += [[0.0, 0.0, 1.0], [0.01, 0.01, 0.01, 0.04], [1.0, 1.0], [0.2, 0.001, 0.049, 0.6, 0.02]]
    for pvalues in families:
        assert holm(pvalues) == pytest.approx(multitest.multipletests(pvalues, method="holm")[1], abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=25))
def test_holm_is_monotone_and_bounded(pvalues):
    p, adjusted = np.array(pvalues), holm(pvalues)
    assert np.all(adjusted >= p) and np.all(adjusted <= 1.0)
    order = np.argsort(p, kind="stable")
    assert np.all(np.diff(adjusted[order]) >= 0)


def test_holm_nan_is_explicit():
    with pytest.raises(ValueError, match='nan="one"'):
        holm([0.01, math.nan])
    assert holm([0.01, math.nan, 0.02], nan="one") == pytest.approx(holm([0.01, 1.0, 0.02]))
    omitted = holm([0.01, math.nan, 0.02], nan="omit")
    assert math.isnan(omitted[1]) and omitted[[0, 2]] == pytest.approx(holm([0.01, 0.02]))
    assert np.isnan(holm([math.nan], nan="omit")).all()
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        holm([0.1, 1.5])
    with pytest.raises(ValueError, match="nan must be"):
        holm([0.1], nan="drop")


# ---------------------------------------------------------------------------------------------
# TOST: SciPy's one-sided one-sample t tests, and the closed form of Student's t with 2 df


def t2_cdf(t):
    return 0.5 + t / (2 * math.sqrt(2 + t * t))  # Student's t, 2 degrees of freedom


def test_tost_by_hand():
    r = tost([1.0, 2.0, 3.0], margin=3.0, alpha=0.05)  # mean 2, se 1 / sqrt 3
    assert r.p_upper == pytest.approx(t2_cdf(-math.sqrt(3)))  # (2 - 3) sqrt 3
    assert r.p_lower == pytest.approx(1 - t2_cdf(5 * math.sqrt(3)))  # (2 + 3) sqrt 3
    assert r.p_value == r.p_upper and not r.equivalent  # 0.113 > 0.05
    half = 2.919985580355516 / math.sqrt(3)  # t_{0.95, 2}
    assert (r.ci_low, r.ci_high) == pytest.approx((2 - half, 2 + half))


def test_tost_matches_scipy():
    rng = np.random.default_rng(1)
    for n, shift, margin, alpha in [(20, 0.3, 2.0, 0.05), (8, -1.0, 1.5, 0.1), (40, 0.0, 0.5, 0.01)]:
        d = rng.normal(shift, 1.0, size=n)
        r = tost(d, margin, alpha)
        assert r.p_lower == pytest.approx(stats.ttest_1samp(d, -margin, alternative="greater").pvalue)
        assert r.p_upper == pytest.approx(stats.ttest_1samp(d, margin, alternative="less").pvalue)
        ci = stats.ttest_1samp(d, 0.0).confidence_interval(1 - 2 * alpha)
        assert (r.ci_low, r.ci_high) == pytest.approx((ci.low, ci.high))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-10, 10), min_size=2, max_size=30), st.floats(0.1, 5.0))
def test_tost_equivalent_iff_interval_inside_margin(d, margin):
    r = tost(d, margin)
    inside = -margin < r.ci_low and r.ci_high < margin
    if abs(abs(r.ci_low) - margin) > 1e-9 and abs(abs(r.ci_high) - margin) > 1e-9:
        assert r.equivalent == inside


def test_tost_zero_spread_and_errors():
    assert tost([0.5, 0.5, 0.5], margin=1.0).equivalent
    outside = tost([1.5, 1.5], margin=1.0)
    assert (outside.p_upper, outside.p_lower, outside.equivalent) == (1.0, 0.0, False)
    for kwargs, message in [({"margin": 0.0}, "margin"), ({"margin": 1.0, "alpha": 0.5}, "alpha")]:
        with pytest.raises(ValueError, match=message):
            tost([1.0, 2.0], **kwargs)
    with pytest.raises(ValueError, match="at least 2"):
        tost([1.0], margin=1.0)


# ---------------------------------------------------------------------------------------------
# Exact binomial tests: SciPy's binomtest, and cases worked by hand


def test_binomial_matches_scipy():
    for n in range(0, 31):
        for k in range(n + 1):
            expected = stats.binomtest(k, n, 0.5).pvalue if n else 1.0
            assert binomial_two_sided(k, n) == pytest.approx(expected, rel=1e-12)


def test_sign_test_by_hand():
    r = sign_test([1.0, 2.0, -1.0, 0.0, 3.0])  # the zero is dropped: 3 of 4 positive
    assert (r.n, r.positives, r.negatives, r.zeros) == (4, 3, 1, 1)
    assert r.p_value == pytest.approx(2 * (1 + 4) / 16)
    assert sign_test([0.0, 0.0]).p_value == 1.0
    assert sign_test([1.0] * 6).p_value == pytest.approx(2 / 64)


def test_mcnemar_eleven_against_eight():
    # The case: 11 of 20 seeds past 90 % against 8. With 6 pairs where both get there and
    # 7 where neither does, the discordant pairs are 5 against 2: p = 2 (1 + 7 + 21) / 128.
    a = [True] * 6 + [True] * 5 + [False] * 2 + [False] * 7
    b = [True] * 6 + [False] * 5 + [True] * 2 + [False] * 7
    r = mcnemar_exact(a, b)
    assert (r.n, r.a_successes, r.b_successes, r.a_only, r.b_only) == (20, 11, 8, 5, 2)
    assert r.p_value == pytest.approx(58 / 128) == pytest.approx(stats.binomtest(5, 7).pvalue)
    assert r.p_value > 0.45
    assert mcnemar_exact([1, 0], [1, 0]).p_value == 1.0  # no discordant pair


def test_mcnemar_errors():
    with pytest.raises(ValueError, match="pair up"):
        mcnemar_exact([True, False], [True])
    with pytest.raises(ValueError, match="booleans"):
        mcnemar_exact([0.3, 1.0], [1, 0])


# ---------------------------------------------------------------------------------------------
# Log-rank with a permutation p: scipy.stats.logrank for the statistic, scipy.stats.permutation_test
# for the exact p, a case worked by hand


def test_logrank_statistic_by_hand():
    # a: events at 1 and 3; b: an event at 2, censored at 4. Event times 1, 2, 3:
    # O - E = (1 - 2/4) + (0 - 1/3) + (1 - 1/2) = 2/3; V = 1/4 + 2/9 + 1/4 = 13/18.
    r = permutation_logrank([1.0, 3.0], [True, True], [2.0, 4.0], [True, False])
    assert r.observed_minus_expected == pytest.approx(2 / 3)
    assert r.variance == pytest.approx(13 / 18)
    assert r.statistic == pytest.approx((2 / 3) / math.sqrt(13 / 18))
    assert r.exact and r.arrangements == r.resamples == 6


def censored_sample(rng, n, scale, horizon=10.0):
    t = np.round(rng.exponential(scale, size=n), 1) + 0.1  # rounded: tied times
    return np.minimum(t, horizon), t < horizon


def test_logrank_statistic_matches_scipy():
    rng = np.random.default_rng(2)
    for n_a, n_b in [(5, 7), (10, 10), (3, 12)]:
        ta, ea = censored_sample(rng, n_a, 4.0)
        tb, eb = censored_sample(rng, n_b, 6.0)
        ref = stats.logrank(
            stats.CensoredData(uncensored=ta[ea], right=ta[~ea]), stats.CensoredData(uncensored=tb[eb], right=tb[~eb])
        )
        r = permutation_logrank(ta, ea, tb, eb, n_resamples=10)
        assert r.statistic == pytest.approx(ref.statistic)
        assert r.p_asymptotic == pytest.approx(ref.pvalue)
        assert logrank_statistic(ta, ea, tb, eb) == pytest.approx(ref.statistic)


def abs_logrank(x, y):
    """|Z| of samples encoded as time (event) or -time (censored), through SciPy's own log-rank."""
    cx = stats.CensoredData(uncensored=x[x > 0], right=-x[x < 0])
    cy = stats.CensoredData(uncensored=y[y > 0], right=-y[y < 0])
    return abs(stats.logrank(cx, cy).statistic)


@pytest.mark.parametrize("paired, n_a, n_b", [(False, 4, 5), (False, 6, 6), (True, 7, 7)])
def test_exact_permutation_p_matches_scipy(paired, n_a, n_b):
    rng = np.random.default_rng(3 + n_a)
    ta, ea = censored_sample(rng, n_a, 3.0, horizon=6.0)
    tb, eb = censored_sample(rng, n_b, 5.0, horizon=6.0)
    ta[0], ea[0] = 0.05, True  # the earliest time an event: every relabeling has V > 0
    r = permutation_logrank(ta, ea, tb, eb, paired=paired)
    ref = stats.permutation_test(
        (np.where(ea, ta, -ta), np.where(eb, tb, -tb)),
        abs_logrank,
        alternative="greater",
        permutation_type="samples" if paired else "independent",
        n_resamples=np.inf,
    )
    assert r.exact and r.p_value == pytest.approx(ref.pvalue, rel=1e-9)
    assert r.arrangements == (2**n_a if paired else math.comb(n_a + n_b, n_a))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(0.1, 100), st.booleans()), min_size=6, max_size=6))
def test_three_against_three_never_below_a_tenth(runs):
    (ta, ea), (tb, eb) = (np.array(runs[:3], dtype=object).T, np.array(runs[3:], dtype=object).T)
    r = permutation_logrank(ta.astype(float), ea.astype(bool), tb.astype(float), eb.astype(bool))
    assert r.arrangements == 20 and r.p_value >= 2 / 20 - 1e-12


def test_three_against_three_at_its_most_separated():
    r = permutation_logrank([1.0, 2.0, 3.0], [True] * 3, [4.0, 5.0, 6.0], [True] * 3)
    assert r.p_value == pytest.approx(0.10) and r.p_asymptotic < 0.05  # the normal p overstates
    paired = permutation_logrank([1.0, 2.0, 3.0], [True] * 3, [4.0, 5.0, 6.0], [True] * 3, paired=True)
    assert paired.arrangements == 8 and paired.p_value == pytest.approx(2 / 8)


def test_monte_carlo_is_seeded_and_near_the_exact_p(monkeypatch):
    rng = np.random.default_rng(4)
    ta, ea = censored_sample(rng, 8, 3.0)
    tb, eb = censored_sample(rng, 8, 5.0)
    exact = permutation_logrank(ta, ea, tb, eb, paired=True)
    monkeypatch.setattr("stiefel_book.stats.logrank.MAX_EXACT", 10)
    for paired, reference in [(True, exact), (False, None)]:
        first = permutation_logrank(ta, ea, tb, eb, paired=paired, n_resamples=20_000, seed=7)
        again = permutation_logrank(ta, ea, tb, eb, paired=paired, n_resamples=20_000, seed=7)
        assert not first.exact and first.resamples == 20_000 and first.p_value == again.p_value
        if reference is not None:
            assert abs(first.p_value - reference.p_value) < 4 * math.sqrt(0.25 / 20_000)


def test_logrank_errors():
    with pytest.raises(ValueError, match="one run of each group per seed"):
        permutation_logrank([1.0, 2.0], [True, True], [1.0], [True], paired=True)
    with pytest.raises(ValueError, match="one flag per time"):
        permutation_logrank([1.0, 2.0], [True], [1.0], [True])
    with pytest.raises(ValueError, match="at least one run"):
        permutation_logrank([], [], [1.0], [True])


# ---------------------------------------------------------------------------------------------
# The four verdict words


def test_the_four_words():
    rng = np.random.default_rng(5)
    noise = rng.normal(0, 0.2, size=20)
    assert verdict(3.0 + noise, margin=2.0) == "higher"
    assert verdict(-3.0 + noise, margin=2.0) == "lower"
    assert verdict(noise - noise.mean(), margin=2.0) == "equivalent"
    assert verdict([-20.0, 15.0, -5.0, 12.0, -8.0, 6.0], margin=2.0) == "inconclusive"  # mean 0, wide
    assert verdict([1.0, 2.0], margin=2.0) == "inconclusive"  # fewer than MIN_PAIRS_FOR_VERDICT


def test_verdict_takes_corrected_p_values():
    d = 0.5 + np.random.default_rng(6).normal(0, 0.8, size=20)
    raw = paired_t_p(d)
    assert raw < 0.05 and verdict(d, margin=2.0) == "higher"
    assert raw == pytest.approx(stats.ttest_1samp(d, 0.0).pvalue)
    assert verdict(d, margin=2.0, p_value=0.2) == "equivalent"  # the family's Holm p keeps it
    assert verdict(d, margin=2.0, p_value=0.2, tost_p_value=0.3) == "inconclusive"


def test_family_verdicts_adjust_within_the_family():
    rng = np.random.default_rng(7)
    family = {
        "large": 2.5 + rng.normal(0, 1, 20),
        "small": 0.45 + rng.normal(0, 1, 20),
        "none": rng.normal(0, 0.5, 20),
        "untested": [1.0, 2.0],
    }
    out = family_verdicts(family, margin=2.0)
    p = [stats.ttest_1samp(np.asarray(d), 0.0).pvalue if len(d) > 2 else 1.0 for d in family.values()]
    assert [v.p_adjusted for v in out.values()] == pytest.approx(list(holm(p)))
    for name, v in out.items():
        assert v.word in VERDICTS
        if v.tost is not None:
            assert v.word == verdict(family[name], 2.0, p_value=v.p_adjusted, tost_p_value=v.tost_p_adjusted)
    assert out["large"].word == "higher" and out["untested"].word == "inconclusive"
    uncorrected = family_verdicts(family, margin=2.0, correction="none")
    assert all(u.p_adjusted == u.p_value or math.isnan(u.p_value) for u in uncorrected.values())


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-100, 100), min_size=0, max_size=25), st.floats(0.1, 10.0))
def test_verdict_is_always_one_of_four(d, margin):
    assert verdict(d, margin) in VERDICTS
