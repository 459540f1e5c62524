"""Grokking at p = 97 at tuned rates (findings.p97_tuned, and its words: wording.p97), on constructed files."""

import math

import pytest

from stiefel_book.findings import p97_tuned as pt
from stiefel_book.wording import p97 as pw


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
    text = pw.row_text(gain)
    assert "**inconclusive**" in text and "against never" in text and "6 against 2" in text and "seen before" in text
    assert pw.row_text(None) == "not yet run"
    line = pw.takeaway(rows, {"baseline": 1e-3, "stiefel": 1e-3})
    assert "1e-3" in line and "read:" not in line  # no earlier reading given
    assert pw.scale_text(rows).endswith("not yet run.")
    assert pw.takeaway([], {}) == "At $p = 97$: not yet run."
    assert pt.fair_rows(None) == [] and not math.isnan(gain["p"])


def test_no_choice_is_read_while_no_rung_is_complete():
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


def test_the_floor_of_an_exact_paired_test_is_what_the_test_gives_and_holm_multiplies_it():
    from stiefel_book.stats import permutation_logrank
    from stiefel_book.stats.power import holm_floor

    # a gets there before b in every one of six pairs: the most extreme labelling there is
    extreme = permutation_logrank([1, 2, 3, 4, 5, 6], [True] * 6, [10] * 6, [False] * 6, paired=True)
    assert extreme.p_value == pytest.approx(2 / 64) == pytest.approx(holm_floor(6, 1))  # the floor is the test's
    assert holm_floor(6, 7) == pytest.approx(7 * 2 / 64) and holm_floor(9, 7) < 0.05 <= holm_floor(8, 7)


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
    assert "**equivalent**, +0.0 pp" in pw.row_text(found["stiefel", "baseline"])
    short = pw.short_text(found["stiefel", "baseline"])
    assert "4,000 against 3,000" in short and "equivalent (+0.0 pp)" in short
    assert pw.short_text(None) == "not yet run"
    assert pt.undecidable(rows) == (6, pytest.approx(7 * 2 / 64)) and pt.undecidable([]) is None
    text = pw.floor_text(rows)
    assert "no lower than p = 0.031" in text and "lifts the smallest to 0.22" in text and "at least 9 paired" in text
    assert "6 paired seeds" in pw.floor_note(rows)
    assert pw.floor_text([]) is None and pw.floor_note([]) == ""
    assert "final_word" not in pt.fair_rows({"runs": runs})[0]  # no margin given: no word
    before = {
        "endpoint": {"verdict": "inconclusive", "mean_pp": 13.5},
        "time": {"verdict": "inconclusive", "median": (4320.0, 14800.0)},
    }
    line = pw.takeaway(rows, {"baseline": 3e-6, "stiefel": 3e-4}, before)
    assert "(+13.5 pp)" in line and "4,320 against 14,800" in line and line.endswith("its lag is gone.")
    ahead = {**runs, **{f"stiefel/{s}": _run(2000) for s in range(6)}}
    line = pw.takeaway(pt.fair_rows({"runs": ahead}, 0.05, 0.02), {}, before)
    assert line.endswith("1,000 epochs.")


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


def test_the_primary_comparison_is_tested_alone_and_its_final_accuracy_only_behind_it():
    """grokking_p97_checked's gatekeeping order: time first at the full α (no correction), then the final accuracy."""
    sooner = {"runs": {}}
    for s in range(12):
        sooner["runs"][f"baseline/{s}"] = _run(None, 10_000)
        sooner["runs"][f"stiefel/{s}"] = _run(2000 + 100 * s, 10_000)
    row = pt.primary_row(sooner, 0.05, 0.02)
    assert (row["a"], row["b"]) == ("stiefel", "baseline") and row["seeds"] == 12
    assert row["verdict"] == "higher" and row["p_holm"] == row["p"] < 0.05  # alone: no correction
    assert row["gate"] and row["final_word"] == "higher" and row["past"] == (12, 0)
    tied = {"runs": {f"{arm}/{s}": _run(3000, 10_000) for arm in ("baseline", "stiefel") for s in range(12)}}
    row = pt.primary_row(tied, 0.05, 0.02)
    assert row["verdict"] == "inconclusive" and not row["gate"] and "final_word" not in row  # the gate stays shut
    assert row["final"].mean_difference == 0  # the final accuracy is still shown beside it
    one = {"runs": {"baseline/0": _run(3000), "stiefel/0": _run(2000)}}
    assert pt.primary_row(one) is None and pt.primary_row(None) is None


def test_the_gatekeeping_order_is_said_with_the_final_accuracy_tested_only_behind_time():
    sooner = {"runs": {}}
    for s in range(12):
        sooner["runs"][f"baseline/{s}"] = _run(None, 10_000)
        sooner["runs"][f"stiefel/{s}"] = _run(2000 + 100 * s, 10_000)
    text = pw.gate_text(pt.primary_row(sooner, 0.05, 0.02))
    assert text.startswith("time to 90 % sooner (median epoch 3,000 against never; 12 paired seeds, p = 0.00049)")
    assert text.endswith("the final accuracy behind it reads higher (+59.0 pp)")
    tied = {"runs": {f"{arm}/{s}": _run(3000, 10_000) for arm in ("baseline", "stiefel") for s in range(12)}}
    text = pw.gate_text(pt.primary_row(tied, 0.05, 0.02))
    assert "inconclusive" in text and text.endswith("so the final accuracy behind it was not tested (+0.0 pp)")
    assert pw.gate_text(None) == "not yet run"
