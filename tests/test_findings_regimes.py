"""The regimes findings: pure functions of synthetic results dicts."""

import math
from types import SimpleNamespace

import pytest

from stiefel_book.findings import decay_map, regimes
from stiefel_book.labels import label
from stiefel_book.stats import VERDICTS, direction, paired_comparison
from stiefel_book.wording.regimes import count_text, readings_text

RULE = SimpleNamespace(margin=2.0, alpha=0.05, count_past=0.9)  # a declared family's rule (protocol.Family)
RULES = {"decay_map": RULE, "controls_p31": RULE, "controls_p97_time": SimpleNamespace(margin=None, alpha=0.05)}


def run(accuracies, every=25, **final):
    history = [{"epoch": every * (i + 1), "val_acc": a} for i, a in enumerate(accuracies)]
    return {"history": history, "final": {**history[-1], **final}}


def results(runs, **config):
    return {"config": config, "runs": runs}


def test_decay_budget_counts_the_warm_up():
    factors = regimes.grokking_lr_factors(warmup_epochs=10, epochs=100)
    assert factors[0] == 0.1 and factors[9] == 1.0 and len(factors) == 100
    assert regimes.decay_budget(1e-2, 2.0, factors) == pytest.approx(1e-2 * 2.0 * (5.5 + 90))


def test_time_to_threshold_censors_a_run_that_never_gets_there():
    assert regimes.time_to_threshold(run([0.1, 0.95, 0.5])) == (50, True)
    assert regimes.time_to_threshold(run([0.1, 0.5, 0.8])) == (75, False)


def test_survival_and_logrank_keep_censored_runs():
    fast = {f"a/{s}": run([0.2] * s + [0.95] * (10 - s)) for s in range(1, 6)}
    slow = {f"b/{s}": run([0.2] * 10) for s in range(1, 6)}  # never reach 0.9: all censored
    res = results({**fast, **slow})
    a, b = regimes.survival(res, "a"), regimes.survival(res, "b")
    assert (a.reached, a.censored, b.reached, b.censored) == (5, 0, 0, 5)
    assert a.probabilities[-1] == 0.0 and a.median == 100 and math.isinf(b.median)
    statistic, p = regimes.logrank(res, "a", "b")
    assert p < 0.05  # five against none reaching it is a difference; dropping the censored runs would hide it


def test_time_rows_use_the_paired_permutation_test_with_holm():
    fast = {f"stiefel/{s}": run([0.2] * (s % 3) + [0.95] * (12 - s % 3)) for s in range(1, 11)}
    never = {f"baseline/{s}": run([0.2] * 12) for s in range(1, 11)}
    rows = {(r["a"], r["b"]): r for r in regimes.time_rows(results({**fast, **never}))}
    row = rows[("stiefel", "baseline")]
    # ten against none reaching 0.9: every swap within a seed flips the sign, so the exact paired p is 2 / 2^10
    assert row["verdict"] == "higher" and row["exact"] and row["p"] == pytest.approx(2 / 2**10)
    three = {k: v for k, v in {**fast, **never}.items() if k.endswith(("/1", "/2", "/3"))}
    row = regimes.time_rows(results(three))[0]
    assert row["p"] == pytest.approx(0.25) and row["verdict"] == "inconclusive"  # 3 seeds can never reach 0.05
    slow = {f"frozen/{s}": run([0.2] * 12) for s in range(1, 11)}
    rows = regimes.time_rows(results({**fast, **never, **slow}))
    assert {r["verdict"] for r in rows if r["b"] in ("baseline", "frozen") and r["a"] == "stiefel"} == {"higher"}
    assert all(r["p_holm"] >= r["p"] for r in rows) and all(r["verdict"] in VERDICTS for r in rows)


def test_the_claim_quotes_the_map_count_and_the_readings():

    from stiefel_book import claim_measures

    task = SimpleNamespace(p=31, lr=1e-3, warmup_epochs=10)
    map_runs = {
        f"{arm}@wd=1/{s}": run([0.5, 0.7, 0.9 if arm == "stiefel" else 0.6 + 0.01 * s], every=500)
        for arm in ("stiefel", "baseline")
        for s in range(3)
    }
    dmap = results(map_runs, weight_decays=[1.0])
    controls = results({f"{arm}/{s}": run([0.5, 0.9 - 0.01 * s]) for arm in ("stiefel", "baseline") for s in range(3)})
    line = claim_measures.regimes(controls, dmap, task, RULES)
    assert (
        count_text(decay_map.final_cells(dmap, (("stiefel", "baseline"),), RULE, lr=1e-3, warmup_epochs=10))
        in line
    )
    assert "higher at 1 (λ = 1)" in line and "untuned" in line
    assert "undecided: " + label("geometry") in line  # no frozen arm: nothing decided
    assert "p = 97" not in line


def test_final_cells_read_each_decay_once_at_its_last_epoch_under_holm():
    runs = {}
    for s in range(6):
        for wd in (0.0, 1.0, 3.0):
            late = {0.0: 0.9 + 0.01 * s, 1.0: 0.5 + 0.001 * (-1) ** s, 3.0: 0.5 + 0.1 * (-1) ** s}[wd]
            runs[f"stiefel@wd={wd:g}/{s}"] = run([0.9, 0.5 + 0.001 * s, late])  # the middle epoch is not tested
            runs[f"baseline@wd={wd:g}/{s}"] = run([0.5, 0.5, 0.5])
    res = results(runs, weight_decays=[0.0, 1.0, 3.0])
    cells = decay_map.final_cells(res, (("stiefel", "baseline"),), RULE, lr=1e-3, warmup_epochs=10)
    assert [(c.weight_decay, c.epoch) for c in cells] == [(0.0, 75), (1.0, 75), (3.0, 75)]
    by = {c.weight_decay: c for c in cells}
    assert by[0.0].verdict == "higher" and by[0.0].past == (5, 0)  # past: above 90 %, seed 0 ends at it
    assert by[1.0].verdict == "equivalent"  # within the 2 pp margin, and shown to be
    assert by[3.0].verdict == "inconclusive"  # ±10 pp around zero: neither a difference nor within the margin
    assert all(c.p_holm >= c.comparison.p_value for c in cells)
    groups = decay_map.count(cells)
    assert [len(groups[w]) for w in ("higher", "lower", "equivalent", "inconclusive")] == [1, 0, 1, 1]
    assert {w: [c.weight_decay for c in got] for w, got in decay_map.count(cells).items()} == {
        "higher": [0],
        "lower": [],
        "equivalent": [1],
        "inconclusive": [3],
    }
    assert count_text(cells).endswith("inconclusive at 1 (λ = 3)")
    curves = decay_map.curves(res, "stiefel", "baseline")
    assert [g["epoch"] for g in curves[1.0]] == [25, 50, 75]  # every epoch drawn


def test_gain_over_time_pairs_by_seed():
    runs = {}
    for s in range(4):
        runs[f"stiefel@wd=1/{s}"] = run([0.5 + 0.1 * s, 0.9])
        runs[f"baseline@wd=1/{s}"] = run([0.5 + 0.1 * s, 0.6 + 0.01 * s])
    gains = regimes.gain_over_time(results(runs), "stiefel@wd=1", "baseline@wd=1")
    assert [g["epoch"] for g in gains] == [25, 50] and gains[0]["comparison"].mean_difference == 0.0


def test_readings_need_equivalence_for_doing_as_well():
    def rows(**words):
        pairs = {
            "sf": ("stiefel", "frozen"),
            "fb": ("frozen", "baseline"),
            "nb": ("no_decay_qk", "baseline"),
            "sn": ("stiefel", "no_decay_qk"),
        }
        return [{"a": pairs[k][0], "b": pairs[k][1], "verdict": v} for k, v in words.items()]

    # an interval that holds zero is not "frozen does as well": the fixed scale is undecided, not supported
    got = regimes.supported_readings(rows(sf="inconclusive", fb="higher", nb="lower", sn="higher"))
    assert got == {"geometry": None, "decay_hurts": False, "fixed_scale": None}
    got = regimes.supported_readings(rows(sf="equivalent", fb="higher", nb="lower", sn="higher"))
    assert got == {"geometry": False, "decay_hurts": False, "fixed_scale": True}
    got = regimes.supported_readings(rows(sf="higher", fb="inconclusive", nb="inconclusive", sn="higher"))
    assert got == {"geometry": True, "decay_hurts": False, "fixed_scale": False}
    assert regimes.supported_readings(rows(sf="higher"))["decay_hurts"] is None  # a missing comparison is undecided
    text = readings_text({"geometry": True, "decay_hurts": False, "fixed_scale": None})
    assert [part.split(": ")[0] for part in text.split("; ")] == ["supported", "contradicted", "undecided"]
    assert text.startswith("supported: " + label("geometry"))


def test_control_rows_are_one_holm_family():
    runs = {}
    for s in range(8):
        runs[f"stiefel/{s}"] = run([0.5, 0.9 + 0.005 * s])
        runs[f"baseline/{s}"] = run([0.5, 0.6 + 0.01 * (-1) ** s])
        runs[f"frozen/{s}"] = run([0.5, 0.9 + 0.005 * s + 0.002 * (-1) ** s])
    rows = {(r["a"], r["b"]): r for r in regimes.control_rows(results(runs), margin=2.0)}
    assert set(rows) == {("stiefel", "baseline"), ("stiefel", "frozen"), ("frozen", "baseline")}
    assert rows[("stiefel", "baseline")]["verdict"] == "higher" and rows[("stiefel", "baseline")]["past"] == (7, 0)
    assert rows[("stiefel", "frozen")]["verdict"] == "equivalent"
    assert all(r["p_holm"] >= r["comparison"].p_value for r in rows.values())


def test_trust_rows_leave_a_cap_that_never_binds_untested():
    runs = {}
    for s in range(3):
        runs[f"stiefel@flr=0.003/{s}"] = run([0.5, 0.8 + 0.01 * s], trust_capped=0.0)
        runs[f"no_trust_region@flr=0.003/{s}"] = run([0.5, 0.8], trust_capped=0.0)
        runs[f"stiefel@flr=0.1/{s}"] = run([0.5, 0.9 + 0.01 * s], trust_capped=0.4)
        runs[f"no_trust_region@flr=0.1/{s}"] = run([0.5, 0.5], trust_capped=0.0)
    rows = regimes.trust_rows(results(runs, frame_lrs=[0.003, 0.1]), margin=2.0)
    assert rows[0]["verdict"] is None and rows[0]["capped"] == 0.0
    assert rows[1]["verdict"] == "higher" and rows[1]["capped"] == pytest.approx(0.4)


def test_direction_is_kept_for_the_chapters_not_yet_moved():
    assert direction(paired_comparison([2, 3, 4], [0, 0, 0])) == "higher"
    assert direction(paired_comparison([2, 3], [0, 0])) == "untested" and direction(None) == "untested"
