"""The power of a family: the smallest detectable effect, the smallest equivalence margin, the floor
of an exact test, McNemar's power. Each is checked against a simulation or an exact enumeration,
not against its own formula."""

import math

import numpy as np
import pytest
from scipy import stats

from stiefel_book.stats import power as P
from stiefel_book.stats import sign_test, tost

DRAWS = 40_000


def _t_detects(rng, effect, n, m, alpha=0.05, draws=DRAWS):
    d = rng.normal(effect, 1.0, size=(draws, n))
    t = d.mean(axis=1) / (d.std(axis=1, ddof=1) / math.sqrt(n))
    return float(np.mean(2 * stats.t.sf(np.abs(t), n - 1) < alpha / m))


@pytest.mark.parametrize("n, m", [(6, 7), (10, 9), (20, 19)])
def test_a_simulated_family_detects_its_smallest_detectable_effect_80_percent_of_the_time(n, m):
    rng = np.random.default_rng(n)
    sde = P.smallest_detectable_effect(n, 1.0, m)
    assert 0.78 < _t_detects(rng, sde, n, m) < 0.82
    assert _t_detects(rng, 0.8 * sde, n, m) < 0.7  # a smaller effect is detected less often


def test_the_effect_scales_with_the_spread_and_shrinks_with_pairs_and_grows_with_comparisons():
    base = P.smallest_detectable_effect(10, 1.0)
    assert P.smallest_detectable_effect(10, 3.0) == pytest.approx(3 * base)
    assert P.smallest_detectable_effect(40, 1.0) < base < P.smallest_detectable_effect(10, 1.0, m=7)
    assert P.smallest_detectable_effect(10, 0.0) == 0.0
    # large n: the normal approximation (z_{1-a/2} + z_power) sd / sqrt(n)
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    assert P.smallest_detectable_effect(2000, 1.0) == pytest.approx(z / math.sqrt(2000), rel=1e-3)


def test_the_equivalence_margin_is_established_80_percent_of_the_time_between_equal_arms():
    n, m, rng = 10, 3, np.random.default_rng(0)
    margin = P.smallest_equivalence_margin(n, 1.0, m)
    d = rng.normal(0.0, 1.0, size=(4000, n))
    shown = np.mean([tost(row, margin, 0.05 / m).equivalent for row in d])
    assert 0.77 < shown < 0.83
    assert P.smallest_equivalence_margin(n, 2.0, m) == pytest.approx(2 * margin, rel=1e-5)


def test_an_exact_test_has_a_floor_and_holms_step_can_put_it_above_alpha():
    assert sign_test([1.0] * 6).p_value == P.floor_p(6) == pytest.approx(0.03125)  # every sign the same
    assert P.holm_floor(6, 7) == pytest.approx(0.21875) and P.holm_floor(6, 7) > 0.05  # p = 97's 6 seeds, Holm over 7
    assert P.holm_floor(12, 1) < 0.001  # 12 seeds, one primary comparison at the full alpha
    assert P.pairs_for_floor(0.05, 1) == 6 and P.pairs_for_floor(0.05, 7) == 9
    assert P.holm_floor(1, 3) == 1.0


def test_mcnemar_power_matches_a_simulation():
    n, pa, pb, rng = 30, 0.7, 0.3, np.random.default_rng(1)
    a, b = rng.random((20_000, n)) < pa, rng.random((20_000, n)) < pb
    from stiefel_book.stats import binomial_two_sided

    ao, bo = (a & ~b).sum(1), (b & ~a).sum(1)
    simulated = np.mean([binomial_two_sided(int(i), int(i + j)) <= 0.05 for i, j in zip(ao, bo)])
    assert P.mcnemar_power(n, pa, pb) == pytest.approx(simulated, abs=0.015)
    diff = P.mcnemar_smallest_difference(n, 0.0)
    assert P.mcnemar_power(n, diff, 0.0) >= 0.8 > P.mcnemar_power(n, diff - 0.01, 0.0)
    assert P.mcnemar_smallest_difference(3, 0.0) == math.inf  # 3 pairs can never reach 0.05


def test_an_interval_gives_back_its_sd():
    d = np.array([0.3, -0.1, 0.5, 0.2, 0.9, 0.0])
    half = stats.t.ppf(0.975, 5) * d.std(ddof=1) / math.sqrt(6)
    assert P.sd_from_interval(d.mean() - half, d.mean() + half, 6) == pytest.approx(d.std(ddof=1))


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: P.smallest_detectable_effect(1, 1.0), "n >= 2"),
        (lambda: P.smallest_detectable_effect(10, -1.0), "sd"),
        (lambda: P.smallest_detectable_effect(10, math.nan), "sd"),
        (lambda: P.smallest_detectable_effect(10, 1.0, m=0), "m, the family"),
        (lambda: P.smallest_detectable_effect(10, 1.0, power=1.0), "power"),
        (lambda: P.floor_p(-1), "n, the number"),
        (lambda: P.mcnemar_power(10, 1.2, 0.1), "p_a"),
        (lambda: P.sd_from_interval(1.0, 0.0, 5), "low <= high"),
    ],
)
def test_bad_input_is_one_clear_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()
