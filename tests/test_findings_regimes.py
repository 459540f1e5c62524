"""The regimes findings: pure functions of synthetic results dicts."""

import math

import pytest

from stiefel_core.findings import regimes
from stiefel_core.stats import direction, paired_comparison


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


def test_time_rows_say_which_arm_gets_there_first_and_need_three_seeds():
    fast = {f"stiefel/{s}": run([0.2] * s + [0.95] * (12 - s)) for s in range(1, 7)}
    slow = {f"frozen/{s}": run([0.2] * (s + 5) + [0.95] * (7 - s)) for s in range(1, 7)}
    never = {f"baseline/{s}": run([0.2] * 12) for s in range(1, 7)}
    rows = {(r["a"], r["b"]): r for r in regimes.time_rows(results({**fast, **slow, **never}))}
    assert rows[("stiefel", "baseline")]["verdict"] == "higher"  # six reach 0.9 against none
    assert rows[("frozen", "baseline")]["verdict"] == "higher"
    assert rows[("stiefel", "frozen")]["verdict"] == "higher" and rows[("stiefel", "frozen")]["seeds"] == 6
    assert ("stiefel", "no_decay_qk") not in rows  # no runs of that arm: no row
    same = {f"frozen/{s}": run([0.2] * s + [0.95] * (12 - s)) for s in range(1, 7)}
    assert {(r["a"], r["b"]): r for r in regimes.time_rows(results({**fast, **same}))}[("stiefel", "frozen")][
        "verdict"
    ] == "tie"
    two = {k: v for k, v in {**fast, **slow}.items() if k.endswith(("/1", "/2"))}
    assert [r["verdict"] for r in regimes.time_rows(results(two))] == ["untested"]  # two seeds: shown, no verdict


def test_the_claim_adds_the_full_task_reading_only_once_its_controls_are_tested():
    from types import SimpleNamespace

    task = SimpleNamespace(p=31, lr=1e-3, warmup_epochs=10)
    map_runs = {
        f"{arm}@wd=1/{s}": run([0.5, 0.7, 0.9 if arm == "stiefel" else 0.6 + 0.01 * s], every=500)
        for arm in ("stiefel", "baseline")
        for s in range(3)
    }
    dmap = results(map_runs, weight_decays=[1.0])
    controls = results({f"{arm}/{s}": run([0.5, 0.9]) for arm in ("stiefel", "baseline") for s in range(3)})
    fast = {f"{arm}/{s}": run([0.2] * s + [0.95] * (12 - s)) for arm in ("stiefel", "frozen") for s in range(1, 7)}
    never = {f"{arm}/{s}": run([0.2] * 12) for arm in ("baseline", "no_decay_qk") for s in range(1, 7)}
    assert "p = 97" not in regimes.claim(
        controls, dmap, task, full_task=results({**fast, **{k: v for k, v in never.items() if "baseline" in k}})
    )
    line = regimes.claim(controls, dmap, task, full_task=results({**fast, **never}, p=97, epochs=20_000))
    assert line.endswith(
        "at p = 97 (20,000 epochs, ≥ 6 paired seeds), time to 90 % supports: a fixed orthonormal scale is what helps"
    )


def test_gain_over_time_and_map_cells_pair_by_seed():
    runs = {}
    for s in range(4):
        for wd in (0.0, 1.0):
            runs[f"stiefel@wd={wd:g}/{s}"] = run([0.5 + 0.1 * s, 0.9])
            runs[f"baseline@wd={wd:g}/{s}"] = run(
                [0.5 + 0.1 * s, 0.9 + 0.02 * (-1) ** s if wd == 0 else 0.6 + 0.01 * s]
            )
    res = results(runs, weight_decays=[0.0, 1.0])
    gains = regimes.gain_over_time(res, "stiefel@wd=1", "baseline@wd=1")
    assert [g["epoch"] for g in gains] == [25, 50] and gains[0]["comparison"].mean_difference == 0.0
    cells = regimes.map_cells(res, "stiefel", "baseline", (25, 50), lr=1e-3, warmup_epochs=10)
    by = {(c.weight_decay, c.epoch): c for c in cells}
    assert by[(1.0, 50)].verdict == "higher" and by[(0.0, 50)].verdict == "tie" and by[(0.0, 50)].budget == 0.0
    assert "λ = 1, 50 epochs" in regimes.cells_by_verdict(cells)["higher"]
    assert regimes.nearest_cell(cells, 1.0, by[(1.0, 50)].budget * 1.1) is by[(1.0, 50)]


def test_readings_follow_the_control_verdicts():
    rows = [
        {"a": a, "b": b, "verdict": v}
        for a, b, v in (
            ("stiefel", "frozen", "tie"),
            ("frozen", "baseline", "higher"),
            ("no_decay_qk", "baseline", "lower"),
            ("stiefel", "no_decay_qk", "higher"),
        )
    ]
    assert regimes.supported_readings(rows) == {"geometry": False, "decay_hurts": False, "fixed_scale": True}
    assert regimes.supported_readings(rows[:1])["decay_hurts"] is None  # a missing comparison is untested


def test_trust_rows_call_a_cap_that_never_binds_untested():
    runs = {}
    for s in range(3):
        runs[f"stiefel@flr=0.003/{s}"] = run([0.5, 0.8 + 0.01 * s], trust_capped=0.0)
        runs[f"no_trust_region@flr=0.003/{s}"] = run([0.5, 0.8], trust_capped=0.0)
        runs[f"stiefel@flr=0.1/{s}"] = run([0.5, 0.9 + 0.01 * s], trust_capped=0.4)
        runs[f"no_trust_region@flr=0.1/{s}"] = run([0.5, 0.5], trust_capped=0.0)
    rows = regimes.trust_rows(results(runs, frame_lrs=[0.003, 0.1]))
    assert rows[0]["verdict"].startswith("untested") and rows[0]["capped"] == 0.0
    assert rows[1]["verdict"] == "higher" and rows[1]["capped"] == pytest.approx(0.4)


def test_direction_is_the_one_verdict_rule():
    assert direction(paired_comparison([2, 3, 4], [0, 0, 0])) == "higher"
    assert direction(paired_comparison([0, 0, 0], [2, 3, 4])) == "lower"
    assert direction(paired_comparison([1, -1, 0.5], [0, 0, 0])) == "tie"
    assert direction(paired_comparison([2, 3], [0, 0])) == "untested" and direction(None) == "untested"
