"""The facts behind "Should I use it?" (findings.advice, advice): each reads a family's own word in
the reader's direction, and a committed benchmark record the way its script writes it."""

import json

import pytest

from stiefel_book import advice
from stiefel_book.findings import advice as found


def test_a_verdict_reads_better_or_worse_by_its_endpoints_direction():
    assert found.reading("higher") == "better" and found.reading("lower") == "worse"
    assert found.reading("higher", higher_is_better=False) == "worse"  # a loss: higher is worse
    assert found.reading("equivalent") == "equivalent" and found.reading(None) is None


def test_tuned_readings_take_each_tasks_own_row_and_direction():
    tuned31 = [{"arm": "stiefel", "reference": "baseline", "verdict": "inconclusive"}]
    # at p = 97 a time verdict of *higher* (sooner) is a gain even where the final accuracy ties
    p97 = [{"a": "stiefel", "b": "baseline", "verdict": "higher", "final_word": "equivalent"}]
    cifar = [{"arm": "frozen", "reference": "baseline", "verdict": "lower"}]  # not the rule's row
    routing = {"charlm": [{"arm": "stiefel", "reference": "baseline", "verdict": "higher", "reading": "worse"}]}
    got = found.tuned_readings(tuned31, p97, cifar, routing)
    assert got == {"grokking": "inconclusive", "grokking_p97": "better", "charlm": "worse"}
    p97[0]["verdict"] = "inconclusive"
    assert found.tuned_readings(tuned31, p97, cifar, routing)["grokking_p97"] == "equivalent"


def test_flat_tops_read_the_rates_every_arm_ran():
    rows = [
        {"arm": "a", "scores": {1e-3: 0.9, 1e-2: 0.3, 1e-1: 0.1}},
        {"arm": "b", "scores": {1e-4: 0.5, 1e-3: 0.8, 1e-2: 0.8}},
    ]
    got = found.flat_tops(rows, ("a", "b"))
    assert got["rates"] == (1e-3, 1e-2)  # 1e-1 and 1e-4 are not common
    assert got["top"] == {"a": pytest.approx(1 / 3), "b": 1.0} and got["kept"]["b"] == 1.0
    assert found.flat_tops(rows, ("a", "b", "c")) == {}  # an arm not swept: no reading


def test_reach_counts_seeds_sizes_and_devices():
    runs = {"baseline/0": {"provenance": {"device": "cpu: x86_64"}}, "baseline/1": {"provenance": {"device": "cuda:0"}}}
    got = found.reach({"mqar": {"config": {"n_layer": 2, "n_embd": 64}, "runs": runs}, "charlm": None})
    assert got["sizes"] == {"mqar": (2, 64)} and got["seeds"] == {"mqar": 2} and got["devices"] == {"cpu", "cuda"}


def test_reach_counts_the_seeds_of_the_runs_the_verdicts_read():
    from stiefel_book import declared

    seeds = advice.facts()["reach"]["seeds"]
    for task, rows in declared.routing().items():  # a task judged again at its checked rate reads that judgement
        row = next(r for r in rows if (r["arm"], r["reference"]) == ("stiefel", "baseline"))
        assert seeds[task] == row["n"], (task, seeds[task], row["n"])


def test_step_cost_reads_the_committed_record_and_refuses_a_changed_one(tmp_path, monkeypatch):
    cost = advice.step_cost()
    assert cost is not None and cost["ratio"] > 0 and cost["frames"] > 0
    record = tmp_path / "benchmarks" / "results" / advice.BENCHMARK
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({"device": "cpu", "date": "today", "lines": ["something else"]}))
    monkeypatch.setattr(advice, "checkout_root", lambda: tmp_path)
    with pytest.raises(ValueError, match="the benchmark's output changed"):
        advice.step_cost()


def test_the_two_by_two_reads_each_family_once_all_its_judged_runs_are_in(tmp_path, monkeypatch):
    import shutil

    from stiefel_book import advice
    from stiefel_book.findings import two_by_two
    from stiefel_book.results import results_dir

    got = advice.two_by_two()  # the committed files: both families complete
    assert set(got) == {"mqar", "induction", "charlm"}
    assert all(set(v) == set(two_by_two.CONTRASTS) for v in got.values())
    for row in (r for v in got.values() for r in v.values()):
        assert row["verdict"] in ("higher", "lower", "equivalent", "inconclusive")
    assert got["charlm"]["direction"]["better"] == (got["charlm"]["direction"]["estimate"] < 0)  # bits: lower is better
    # the character model's file alone: the routing family is left out, not read on what it has
    shutil.copy(results_dir() / "charlm_long-full.json.gz", tmp_path)
    monkeypatch.setenv("STIEFEL_RESULTS", str(tmp_path))
    assert set(advice.two_by_two()) == {"charlm"}


def test_judged_progress_counts_the_planned_runs_a_file_holds(tmp_path, monkeypatch):
    from stiefel_book.results import write_results

    monkeypatch.setenv("STIEFEL_RESULTS", str(tmp_path))
    assert advice.judged_progress("grokking_p97_checked") == (0, 24)  # no file: two arms, twelve seeds, none in
    runs = {"baseline/0": {}, "stiefel/0": {}, "stiefel/99": {}, "frozen/1": {}}  # the last two are not planned
    write_results({"config": {}, "runs": runs}, tmp_path / "grokking_p97_checked-full.json")
    assert advice.judged_progress("grokking_p97_checked") == (2, 24)
    done, planned = advice.judged_progress("grokking_p97_fair")  # the committed file: five arms, six seeds
    assert planned == 30 and done == 0  # (this folder holds no such file)


def test_a_task_reads_its_judgement_at_the_checked_rate_only_once_complete(tmp_path, monkeypatch):
    import shutil

    from stiefel_book.results import load_results, results_dir, write_results

    assert advice.judged_runs("grokking") == "grokking_checked"  # committed: complete
    assert advice.judged_runs("mqar") == "mqar_fresh" and advice.judged_runs("induction") == "induction"
    shutil.copy(results_dir() / "grokking_fair-full.json.gz", tmp_path)
    checked = load_results("grokking_checked", "full")
    monkeypatch.setenv("STIEFEL_RESULTS", str(tmp_path))
    one_short = dict(list(checked["runs"].items())[1:])
    write_results({**checked, "runs": one_short}, tmp_path / "grokking_checked-full.json")
    assert advice.judged_runs("grokking") == "grokking_fair"  # a judgement still running is not read
    write_results(checked, tmp_path / "grokking_checked-full.json")
    assert advice.judged_runs("grokking") == "grokking_checked"


def test_rate_ratios_read_adamws_rate_for_wq_wk_over_the_models():
    def results(model_lr, qk_lr):
        runs = {"baseline/0": {"qk_lr": qk_lr}, "stiefel/0": {"qk_lr": 1.0}}
        return {"config": {"task": {"lr": model_lr}}, "runs": runs}

    got = advice.rate_ratios({"a": results(1e-2, 3e-2), "b": results(1e-3, 3e-6), "c": None})
    assert got["a"] == pytest.approx(3) and got["b"] == pytest.approx(0.003) and "c" not in got


def test_p97_at_its_checked_rate_is_read_by_its_gatekeeping_order_once_complete(tmp_path, monkeypatch):
    import shutil

    from stiefel_book.results import results_dir, write_results

    def run(epoch_at_90):
        history = [{"epoch": e, "val_acc": 1.0 if e >= epoch_at_90 else 0.4} for e in range(0, 10_001, 500)]
        return {"history": history, "final": history[-1], "qk_lr": 1e-3}

    shutil.copy(results_dir() / "grokking_p97_fair-full.json.gz", tmp_path)
    monkeypatch.setenv("STIEFEL_RESULTS", str(tmp_path))
    runs = {f"{arm}/{s}": run(1000 if arm == "stiefel" else 3000) for arm in ("baseline", "stiefel") for s in range(12)}
    write_results({"config": {"task": {"lr": 1e-2}}, "runs": dict(list(runs.items())[1:])},
                  tmp_path / "grokking_p97_checked-full.json")
    assert advice.p97_checked() is None and advice.judged_runs("grokking_p97") == "grokking_p97_fair"
    write_results({"config": {"task": {"lr": 1e-2}}, "runs": runs}, tmp_path / "grokking_p97_checked-full.json")
    row = advice.p97_checked()
    assert advice.judged_runs("grokking_p97") == "grokking_p97_checked"
    assert (row["a"], row["b"], row["seeds"], row["verdict"]) == ("stiefel", "baseline", 12, "higher")
    assert row["gate"] and row["final_word"] == "equivalent"  # both end at 100 %: within the 2 pp margin
