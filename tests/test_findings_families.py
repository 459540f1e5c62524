"""The chapters' verdicts under their declared families: rows turned round keep their meaning,
a changed verdict is listed once, the movement ratio falls as one over the lr, and the CIFAR-10
families read four words with Holm's correction, on hand-made results whose answers are known."""

from types import SimpleNamespace

import numpy as np
import pytest

from stiefel_book.findings import cifar10_family, fair_fight, peers, tuned
from stiefel_book.labels import label
from stiefel_book.wording import cifar10 as cifar10_words
from stiefel_book.wording import tuned as tuned_words

FAMILY = SimpleNamespace(margin=2.0, alpha=0.05, name="grokking_fair", set_after_runs=False, after_runs=None)


def _values(offsets: dict[str, list[float]], base: list[float]) -> dict[str, dict[int, float]]:
    out = {"stiefel": dict(enumerate(base))}
    for arm, d in offsets.items():
        out[arm] = {s: b + x for s, (b, x) in enumerate(zip(base, d))}
    return out


def test_a_row_turned_round_swaps_its_sign_interval_counts_and_word():
    base = [0.95, 0.55, 1.0, 0.98, 0.6, 0.97]
    values = _values({"baseline": [-0.3, -0.31, -0.29, -0.3, -0.32, -0.3]}, base)
    rows = fair_fight.family_rows(values, ("baseline",), ("stiefel",), 0.02)
    ahead = tuned.find(rows, "stiefel", "baseline")
    assert rows[0]["verdict"] == "lower" and ahead["verdict"] == "higher"
    assert ahead["mean_pp"] == pytest.approx(-rows[0]["mean_pp"])
    assert ahead["ci_pp"] == pytest.approx((-rows[0]["ci_pp"][1], -rows[0]["ci_pp"][0]))
    assert ahead["past"] == rows[0]["past"][::-1] and tuned.find(rows, "stiefel", "muon") is None
    assert "beats AdamW by 30.3 pp" in tuned_words.beats(ahead, label, 2.0)
    assert tuned_words.beats(None, label, 2.0) == "not yet run"


def test_what_changed_lists_a_changed_verdict_once_and_leaves_a_tie_that_stays_unsettled():
    def row(lo, hi, word, arm="muon"):
        return {
            "arm": arm,
            "reference": "stiefel",
            "ci_pp": (lo, hi),
            "mean_pp": (lo + hi) / 2,
            "verdict": word,
            "p_holm": 0.2,
        }

    pairs = [
        ("was higher", row(0.5, 8.0, "higher"), row(-1.0, 9.0, "inconclusive")),  # listed
        ("still higher", row(0.5, 8.0, "higher"), row(0.4, 8.0, "higher")),  # not listed
        ("a tie, unsettled", row(-3.0, 3.0, "tie"), row(-3.0, 3.0, "inconclusive")),  # TIE_NOTE covers it
        ("a tie, now equivalent", row(-0.5, 0.5, "tie"), row(-0.5, 0.5, "equivalent")),  # listed
    ]
    lines = tuned_words.changed(pairs)
    assert len(lines) == 2 and lines[0].startswith("was higher: higher") and "**inconclusive**" in lines[0]
    assert lines[1].startswith("a tie, now equivalent: tie") and "**equivalent**" in lines[1]
    after = SimpleNamespace(name="peers_grokking", set_after_runs=True, after_runs="the margin on 2026-12-02")
    lines = tuned_words.after_runs_lines((FAMILY, after))
    assert len(lines) == 1 and "set after the runs" in lines[0] and lines[0].endswith("2026-12-02.")


def test_the_peers_read_their_family_and_an_ingredient_outside_it_gets_no_verdict():
    base = [0.95, 0.55, 1.0, 0.98, 0.6, 0.97]
    values = _values(
        {"muon": [-0.2, -0.21, -0.19, -0.2, -0.18, -0.22], "baseline": [0.001, -0.001, 0.0, 0.002, -0.002, 0.0]}, base
    )
    rows = fair_fight.family_rows(values, ("muon", "baseline"), ("stiefel",), 0.02)
    prows = peers.family_peer_rows(rows, peers=("muon",))
    assert [(r["arm"], r["reference"], r["verdict"]) for r in prows] == [("muon", "stiefel", "lower")]
    read = {(r["a"], r["b"]): r["row"] for r in peers.family_ingredient_rows(rows)}
    assert read[("muon_no_decay", "muon")] is None and read[("stiefel", "muon_no_decay")] is None


def test_the_cifar10_family_reads_four_words_with_holm():
    family = SimpleNamespace(margin=0.5, alpha=0.05)
    rows = cifar10_family.family_rows(
        [
            ("ahead", np.array([1.0, 1.1, 0.9, 1.05])),
            ("level", np.array([0.01, -0.01, 0.0, 0.02])),
            ("noise", np.array([2.0, -2.0, 1.5, -1.0])),
        ],
        family,
    )
    assert [r["verdict"] for r in rows] == ["higher", "equivalent", "inconclusive"]
    assert all(r["p_holm"] >= r["p"] for r in rows)
    assert cifar10_words.row_text(rows[0]).startswith("ahead: **higher**, +1.01 pp")


def test_the_movement_ratio_falls_as_one_over_the_fixed_steps_lr():
    def run(step):
        return {"history": [{"step/blocks.0.W_Q": step}], "final": {}}

    results = {"config": {"lr": 1e-3}, "runs": {"baseline/0": run(0.03), "fixed_step/0": run(0.0001)}}
    m = cifar10_family.movement_by_lr(results, lrs=np.array([1e-4, 1e-3, 1e-2]))
    assert m["ratio"] == pytest.approx(300.0) and m["ratios"] == pytest.approx([3000.0, 300.0, 30.0])
    low, high = m["lr_for_preprint"]  # the fixed-step lr at which the ratio would be the preprint's 40x and 24x
    assert 300.0 * 1e-3 / low == pytest.approx(40.0) and 300.0 * 1e-3 / high == pytest.approx(24.0)
    assert cifar10_family.movement_by_lr(None) is None
