"""The findings package reads results dicts it is handed, and the preprint's numbers and
wording live in one module: starts and pairing, the Markdown tables of the grokking and
ablation chapters, the chapters' preprint-against-ours text, and a chapter's live run."""

import numpy as np
import pytest

from stiefel_book import findings, preprint


def _run(acc, fingerprint="f", order=1):
    return {"final": {"test_acc": acc, "init_fingerprint": fingerprint, "order_checksum": order}}


def test_starts_and_pairing_come_from_the_runs():
    results = {
        "runs": {"a/0": _run(0.5), "b/0": _run(0.6), "a/1": _run(0.5, "g"), "b/1": _run(0.6, "g", 2), "a/2": _run(0.5)}
    }
    assert findings.runs.finished_starts(results, ("a", "b")) == [0, 1]
    assert findings.runs.finished_starts(None, ("a",)) == findings.runs.finished_starts({}, ("a",)) == []
    assert findings.runs.same_across_arms(results, ("a", "b"), [0, 1], "init_fingerprint")
    assert not findings.runs.same_across_arms(results, ("a", "b"), [0, 1], "order_checksum")
    assert list(findings.runs.unpaired_starts(results["runs"])) == ["1"]
    assert findings.regimes.paired_seeds(results, "a", "b") == [0, 1] and findings.regimes.paired_seeds(results) == []


def test_the_abstracts_numbers_are_formatted_from_one_place():
    assert preprint.cifar10_wins() == "12/12" and preprint.movement_range() == "24-40x"
    assert preprint.frozen_cost() == "0.28 pp" and preprint.frozen_cost_signed() == "+0.28"
    assert preprint.cifar10_gain() == "+8.98 pp, t = 60.6, 12/12"
    assert "97.0%" in preprint.grokking_endpoint() and "61.1%" in preprint.grokking_endpoint()
    assert preprint.cifar10_claim().startswith(preprint.cifar10_gain().split(",")[0])
    claim = preprint.movement_claim()
    assert preprint.movement_range() in claim and preprint.frozen_cost() in claim
    assert preprint.ABLATION.endswith(preprint.ABLATION_SHARE)


def test_the_ablation_verdicts_are_one_family_read_in_four_words_and_one_table_of_every_task():
    from types import SimpleNamespace

    full = [0.502, 0.504, 0.503, 0.501, 0.5025]
    offsets = {  # the full rule minus each arm, per start (accuracy fractions)
        "baseline": [0.05, 0.051, 0.049, 0.05, 0.0505],  # far above: higher
        "fixed_step": [-0.05, -0.051, -0.049, -0.05, -0.0495],  # the variant ahead: lower
        "no_projector": [0.0001, -0.0001, 0.0, 0.0002, -0.0002],  # within ±0.5 pp: equivalent
        "per_entry": [0.04, -0.04, 0.03, -0.035, 0.0],  # spread wide: inconclusive
        "no_trust_region": [0.0] * 5,  # identical runs: never acts
    }
    runs = {f"stiefel/{s}": {"final": {"test_acc": f}} for s, f in enumerate(full)}
    for arm, d in offsets.items():
        runs |= {f"{arm}/{s}": {"final": {"test_acc": f - x}} for s, (f, x) in enumerate(zip(full, d))}
    family = SimpleNamespace(margin=0.5, alpha=0.05)
    rows = findings.ablation.family_rows({"runs": runs}, "test_acc", family)
    words = {r["variant"]: ("never acts" if r["identical"] else r["verdict"]) for r in rows}
    assert words == {
        "baseline": "higher",
        "fixed_step": "lower",
        "no_projector": "equivalent",
        "per_entry": "inconclusive",
        "no_trust_region": "never acts",
    }
    assert findings.ablation.family_shares(rows)["scale-free step"] < 0  # the step costs more than the gain
    by = {r["variant"]: r for r in rows}
    assert round(by["baseline"]["mean_pp"], 2) == 5.01 and by["fixed_step"]["mean_pp"] < 0  # the full rule − each arm


def test_the_cifar10_findings_pair_the_gain_the_movement_and_the_cost_of_freezing():
    def run(acc, step, angle=1.0):
        return {
            "final": {"test_acc": acc, "angle_mean/blocks.0.W_Q": angle, "angle_mean/blocks.0.W_K": angle},
            "history": [{"step/blocks.0.W_Q": step}],
        }

    runs = {}
    for s, g in enumerate((0.01, 0.02, 0.04)):
        runs |= {
            f"baseline/{s}": run(0.5, 0.03),
            f"stiefel/{s}": run(0.5 + g, 0.03),
            f"fixed_step/{s}": run(0.5, 0.001),
            f"frozen/{s}": run(0.49, 0.0),
        }
    results = {"runs": runs}
    starts, a, b, c = findings.cifar10.paired_gain(results)
    assert starts == [0, 1, 2] and c.mean_difference == pytest.approx(7 / 3) and c.wins == 3
    ratios = np.concatenate(list(findings.cifar10.movement_ratios(results, "fixed_step").values()))
    assert ratios == pytest.approx(30.0)  # AdamW's step 0.03 against the fixed step's 0.001
    assert findings.cifar10.paired_gain(results, "fixed_step", "frozen")[3].mean_difference == pytest.approx(1.0)


def test_a_live_run_resumes_the_full_file_and_runs_elsewhere_in_a_temporary_folder(monkeypatch):
    import stiefel_book.experiments as experiments
    from stiefel_book.experiments import runner

    calls = []
    monkeypatch.setattr(runner, "run_experiment", lambda name, profile, **kw: calls.append((name, profile, kw)) or {})
    experiments.run_live("cifar10", "full", arms=["stiefel"])
    experiments.run_live("cifar10", "ci")
    (_, full, full_kw), (_, ci, ci_kw) = calls
    assert (
        full == "full"
        and "directory" not in full_kw
        and full_kw["arms"] == ["stiefel"]
        and full_kw["progress"] is False
    )
    assert (
        ci == "ci"
        and ci_kw["directory"].name.startswith("cifar10-ci-")
        and ci_kw["checkpoints"].parent == ci_kw["directory"]
    )
