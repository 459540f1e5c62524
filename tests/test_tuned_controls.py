"""The p = 31 controls at tuned lrs (findings.regimes.tuned_control_rows): the fair fight's family
rows turned into the controls' pairs, and the readings they decide stated before the task-rate ones."""

from types import SimpleNamespace

from stiefel_book import claim_verdicts
from stiefel_book.findings import regimes

TASK = SimpleNamespace(lr=3e-3, warmup_epochs=10)
RULE = SimpleNamespace(margin=2.0, alpha=0.05, count_past=0.9)  # a declared family's rule (protocol.Family)
RULES = dict.fromkeys(("decay_map", "decay_map_tuned", "controls_p31"), RULE)


def _row(arm, reference, mean, verdict, past=(12, 10)):
    return {
        "arm": arm,
        "reference": reference,
        "n": 20,
        "mean_pp": mean,
        "ci_pp": (mean - 1, mean + 2),
        "p_holm": 0.01,
        "tost_p_holm": 1.0,
        "verdict": verdict,
        "past": past,
    }


FAMILY = [  # as the fair fight judges them: every arm against AdamW, then against the Stiefel rule
    _row("stiefel", "baseline", 5.0, "higher"),
    _row("frozen", "baseline", 4.0, "higher"),
    _row("no_decay_qk", "baseline", 0.1, "equivalent"),
    _row("frozen", "stiefel", -6.0, "lower", past=(9, 15)),
    _row("no_decay_qk", "stiefel", -7.0, "lower"),
    _row("muon", "stiefel", 1.0, "inconclusive"),
]


def test_rows_judged_the_other_way_round_are_mirrored():
    rows = {(r["a"], r["b"]): r for r in regimes.tuned_control_rows(FAMILY)}
    assert set(rows) == {
        ("stiefel", "baseline"),
        ("no_decay_qk", "baseline"),
        ("stiefel", "no_decay_qk"),
        ("stiefel", "frozen"),
        ("frozen", "baseline"),
    }
    headroom = rows[("stiefel", "frozen")]
    assert headroom["verdict"] == "higher" and headroom["mean_pp"] == 6.0 and headroom["ci_pp"] == (4.0, 7.0)
    assert headroom["past"] == (15, 9) and "headroom" in headroom["meaning"]
    assert rows[("no_decay_qk", "baseline")]["verdict"] == "equivalent"
    assert regimes.tuned_control_rows([]) == []


def test_the_tuned_readings_decide_the_claim_and_lead_the_takeaways():
    readings = regimes.supported_readings(regimes.tuned_control_rows(FAMILY))
    assert readings["geometry"] is True  # the Stiefel rule above frozen frames and above AdamW without decay
    runs = {
        f"{arm}@wd={wd:g}/{s}": {"history": [{"epoch": 1500, "val_acc": 0.5 + 0.01 * (s % 3)}]}
        for wd in (0.0, 1.0)
        for arm in ("baseline", "stiefel")
        for s in range(10)
    }
    dmap = {"config": {"weight_decays": [0.0, 1.0], "seeds": list(range(10))}, "runs": runs}
    controls = {
        "runs": {
            f"{arm}/{s}": {"history": [{"epoch": 1500, "val_acc": 0.5}]}
            for arm in ("stiefel", "frozen")
            for s in range(5)
        }
    }
    verdict = claim_verdicts.regimes_verdict(controls, dmap, TASK, RULES, fair_rows=FAMILY)
    assert verdict.word == "reproduced" and "tuned rates" in verdict.sentence
    assert claim_verdicts.regimes_verdict(controls, dmap, TASK, RULES).word == "not reproduced"  # task rate: undecided
