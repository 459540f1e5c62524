"""Grokking at p = 97 at tuned rates (findings.p97_tuned), on constructed files."""

import math

import pytest

from stiefel_book.findings import p97_tuned as pt


def _run(epoch_at_90: int | None, horizon: int = 20_000, adopted: bool = False) -> dict:
    history = [
        {"epoch": e, "val_acc": 0.99 if epoch_at_90 and e >= epoch_at_90 else 0.4} for e in range(0, horizon + 1, 1000)
    ]
    provenance = {"date": "2026-12-04T00:00:00+00:00"} | ({"adopted_from": "grokking-full"} if adopted else {})
    return {"history": history, "final": history[-1], "provenance": provenance}


def test_the_sweep_rows_read_epochs_to_90_and_the_fastest_rate():
    runs = {
        f"{arm}@qklr={lr:g}/{s}": _run(t, 10_000)
        for arm in ("baseline", "stiefel")
        for lr, t in ((1e-4, None), (3e-4, 3000), (1e-3, 5000))
        for s in (100, 101)
    }
    sweep = {"config": {"task": {"lr": 1e-3, "epochs": 10_000}, "seeds": [100, 101], "threshold": 0.9}, "runs": runs}
    rows = pt.sweep_rows(sweep)
    assert [r["arm"] for r in rows] == ["baseline", "stiefel"]
    assert rows[0]["scores"] == {1e-4: 10_000.0, 3e-4: 3000.0, 1e-3: 5000.0}  # never: counted at the horizon
    assert rows[0]["chosen"] == 3e-4 and rows[0]["interior"]
    assert pt.sweep_rows(None) == []
    text = pt.sweep_text(rows)
    assert text.startswith("The sweep is still running") and "not yet run: AdamW without decay on W_Q, W_K" in text
    edge = [{**rows[0], "chosen": 1e-4, "interior": False}]
    assert "1e-4 (at its grid's edge: still growing)" in pt.sweep_text(edge)
    assert pt.sweep_text([]) == "The sweep is still running: no rate has run on every selection seed yet."
    done = [{**rows[0], "arm": arm} for arm in pt.SWEPT]
    assert pt.sweep_text(done).startswith("The rates chosen: AdamW 3e-4,")


def test_the_family_reads_time_first_and_counts_its_unrun_comparisons_with_p_one():
    runs = {}
    for s in range(6):
        runs[f"baseline/{s}"] = _run(None if s < 4 else 15_000, adopted=True)
        runs[f"stiefel/{s}"] = _run(3000 + 200 * s, adopted=True)
        runs[f"frozen/{s}"] = _run(2500 + 100 * s, adopted=s < 3)
    rows = pt.fair_rows({"runs": runs})
    found = {(r["a"], r["b"]): r for r in rows}
    assert set(found) == {("stiefel", "baseline"), ("frozen", "baseline"), ("frozen", "stiefel")}
    gain = found[("stiefel", "baseline")]
    assert gain["past"] == (6, 2) and gain["seen_before"]  # both arms' runs all adopted
    assert not found[("frozen", "stiefel")]["seen_before"]
    assert gain["final"].mean_difference == pytest.approx(100 * (0.99 - (4 * 0.4 + 2 * 0.99) / 6))
    # Holm over the declared 7: the smallest p is multiplied by 7, not by the 3 that ran
    smallest = min(rows, key=lambda r: r["p"])
    assert smallest["p_holm"] == pytest.approx(min(1.0, 7 * smallest["p"]))
    text = pt.row_text(gain)
    assert (
        "time to 90 % **inconclusive**, median epoch 4,000 against never" in text
        and "seeds past 90 %: 6 against 2" in text
    )
    assert text.endswith("its runs were seen before the rule was declared")
    assert pt.row_text(None) == "not yet run"
    line = pt.takeaway(rows, {"baseline": 1e-3, "stiefel": 1e-3})
    assert line.startswith(
        "At $p = 97$ (rates AdamW 1e-3, the Stiefel rule 1e-3; 20,000 epochs), the Stiefel rule against AdamW: time"
    )
    assert "With both at the task's rate" not in line  # no earlier reading given
    assert pt.scale_text(rows) == "At $p = 97$, QK-norm with a learned scale against the Stiefel rule: not yet run."
    assert pt.takeaway([], {}) == "At $p = 97$: not yet run."
    assert pt.fair_rows(None) == [] and not math.isnan(gain["p"])


def test_the_runs_so_far_are_read_one_by_one_while_no_rung_is_complete():
    from stiefel_book.findings import p97_tuned

    def run(reach_at, end):
        history = [
            {"epoch": e, "val_acc": (0.95 if reach_at and e >= reach_at else end)} for e in range(20, 10_001, 20)
        ]
        return {"history": history}

    sweep = {
        "config": {"task": {"epochs": 10_000, "lr": 1e-3}, "threshold": 0.9, "seeds": [100, 101]},
        "runs": {
            "stiefel@qklr=0.0003/100": run(5400, 0.1),
            "baseline@qklr=0.001/100": run(None, 0.02),
            "baseline@qklr=0.0001/100": run(7240, 0.1),
            "frozen/100": run(3000, 0.1),
        },
    }
    assert p97_tuned.sweep_rows(sweep) == []
    assert p97_tuned.runs_so_far_text(sweep) == (
        "AdamW, seed 100: 1e-4 at epoch 7,240, 1e-3 not within 10,000 epochs (2 % at the end). "
        "The Stiefel rule, seed 100: 3e-4 at epoch 5,400."
    )
    assert p97_tuned.runs_so_far_text({"config": sweep["config"], "runs": {}}) is None


def test_the_rates_are_read_against_the_tasks_slowest_first_and_only_once_settled():
    rows = [
        {"arm": "stiefel", "chosen": 3e-4, "interior": True},
        {"arm": "baseline", "chosen": 3e-6, "interior": True},
        {"arm": "qk_norm", "chosen": 1e-4, "interior": False},  # still growing: not read
    ]
    text = pt.rates_text(rows, 1e-3)
    assert text.index("AdamW 3e-6, 1/333 of it") < text.index("the Stiefel rule 3e-4, 1/3 of it")
    assert "QK-norm" not in text
    assert "never move" in pt.rates_text([{"arm": "baseline", "chosen": 0.0, "interior": True}], 1e-3)
    assert pt.rates_text(rows[2:], 1e-3) is None


def test_the_floor_of_an_exact_paired_test_is_what_the_test_gives_and_holm_multiplies_it():
    from stiefel_book.stats import permutation_logrank

    # a gets there before b in every one of six pairs: the most extreme labelling there is
    extreme = permutation_logrank([1, 2, 3, 4, 5, 6], [True] * 6, [10] * 6, [False] * 6, paired=True)
    assert extreme.p_value == pytest.approx(2 / 64) == pytest.approx(pt.floor_p(6, 1))
    assert pt.floor_p(6, 7) == pytest.approx(7 * 2 / 64) and pt.floor_p(2, 7) == 1.0
    assert pt.seeds_needed(7) == 9 and pt.floor_p(9, 7) < 0.05 <= pt.floor_p(8, 7)
    assert pt.seeds_needed(1) == 6


def test_the_final_accuracy_reads_four_words_and_the_floor_is_said_where_it_binds():
    runs = {}
    for s in range(6):
        runs[f"baseline/{s}"] = _run(3000)
        runs[f"stiefel/{s}"] = _run(4000)
        runs[f"qk_norm/{s}"] = _run(None if s < 3 else 5000)  # three seeds end at 40 %
    rows = pt.fair_rows({"runs": runs}, 0.05, 0.02)
    found = {(r["a"], r["b"]): r for r in rows}
    assert found["stiefel", "baseline"]["final_word"] == "equivalent"  # every run ends at 99 %
    assert found["qk_norm", "stiefel"]["final_word"] == "inconclusive"  # -29.5 pp, spread wide
    assert all(r["verdict"] == "inconclusive" for r in rows)  # below the floor, whatever the runs
    assert "final accuracy **equivalent**, +0.0 pp" in pt.row_text(found["stiefel", "baseline"])
    short = pt.short_text(found["stiefel", "baseline"])
    assert short == "time to 90 % inconclusive (median epoch 4,000 against 3,000), final accuracy equivalent (+0.0 pp)"
    assert pt.short_text(None) == "not yet run"
    text = pt.floor_text(rows)
    assert "no lower than p = 0.031" in text and "lifts the smallest to 0.22" in text and "at least 9 paired" in text
    assert pt.floor_note(rows) == " (with 6 paired seeds and 7 comparisons no difference of time could be decided)"
    assert pt.floor_text([]) is None and pt.floor_note([]) == ""
    assert "final_word" not in pt.fair_rows({"runs": runs})[0]  # no margin given: no word
    before = {
        "endpoint": {"verdict": "inconclusive", "mean_pp": 13.5},
        "time": {"verdict": "inconclusive", "median": (4320.0, 14800.0)},
    }
    line = pt.takeaway(rows, {"baseline": 3e-6, "stiefel": 3e-4}, before)
    assert line.endswith(
        "With both at the task's rate it read: final accuracy inconclusive (+13.5 pp), time to 90 % inconclusive, "
        "median epoch 4,320 against 14,800; at its own rate AdamW gets there no later than the Stiefel rule: its lag "
        "is gone."
    )
    ahead = {**runs, **{f"stiefel/{s}": _run(2000) for s in range(6)}}
    line = pt.takeaway(pt.fair_rows({"runs": ahead}, 0.05, 0.02), {}, before)
    assert line.endswith("at tuned rates the Stiefel rule's lead in median time is 1,000 epochs.")


def test_the_controls_are_turned_to_the_regimes_orientation_with_their_words():
    runs = {}
    for s in range(6):
        runs[f"baseline/{s}"] = _run(5000)
        runs[f"stiefel/{s}"] = _run(4000)
        runs[f"frozen/{s}"] = _run(3000)
    rows = pt.fair_rows({"runs": runs}, 0.05, 0.02)
    turned = {(r["a"], r["b"]): r for r in pt.control_rows(rows)}
    assert set(turned) == {("stiefel", "baseline"), ("stiefel", "frozen"), ("frozen", "baseline")}
    row = turned["stiefel", "frozen"]  # the family holds frozen against the Stiefel rule
    assert row["a_survival"].median == 4000 and row["b_survival"].median == 3000 and "final" not in row
    forced = [{**r, "verdict": "lower", "final_word": "higher"} for r in rows]
    flipped = {(r["a"], r["b"]): r for r in pt.control_rows(forced)}["stiefel", "frozen"]
    assert (flipped["verdict"], flipped["final_word"]) == ("higher", "lower")
    assert pt.control_rows([]) == []
