"""The device check (``make device-check``, issue 33): its dry run end to end (the p = 97 job of
issue 28 and the character model's 2x2 job of issue 49 at tiny sizes), so that the script a lent
GPU gets cannot rot, and the parts a dry run cannot reach (the guard, the plan at paper scale, the
file-size cap, the merge)."""

import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

from stiefel_book import results_files  # noqa: E402
from stiefel_book.experiments import get_config, p97_fair  # noqa: E402

import device_charlm  # noqa: E402
import device_check  # noqa: E402
import device_job  # noqa: E402
import device_plan  # noqa: E402
import device_pool  # noqa: E402


def test_the_dry_run_passes_and_returns_what_a_lent_machine_brings_back(tmp_path):
    out = tmp_path / "device-results"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}  # not a worker of this run's xdist
    env.update(DEVICE_CHECK_DRY="1", OUT=str(out), OMP_NUM_THREADS="1")
    done = subprocess.run(
        ["make", "--no-print-directory", "device-check", f"DEVICE_PY={sys.executable}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert [s["status"] for s in summary["steps"]] == ["passed"] * 6
    assert summary["tests"]["passed"] > 0 and not summary["tests"]["failed"]
    assert summary["returned_files_problems"] == []
    returned = [
        "device-check.log",
        "summary.json",
        "runs/grokking_p97_qk_lr-ci.json.gz",
        "runs/grokking_p97_fair-ci.json.gz",
        "runs/charlm_gpu_qk_lr-ci.json.gz",  # the dry run makes its sweep's first runs only
        "benchmarks.tar",
    ]
    assert {f["path"] for f in summary["files"]} == set(returned)
    bench = ["grokking_epoch-ci-cpu.json", "peers_step-tiny-cpu.json", "step_time-tiny-cpu.json"]
    assert sorted(tarfile.open(out / "benchmarks.tar").getnames()) == bench
    charlm = results_files.read(out / "runs" / "charlm_gpu_qk_lr-ci.json.gz")
    assert len(charlm["runs"]) == device_charlm.DRY_RUNS
    assert all(key.split("@")[0] in device_charlm.DRY_ARMS for key in charlm["runs"])
    steps = get_config("charlm_gpu_qk_lr", "ci").task.steps
    assert all(run["final"]["epoch"] == steps and run["final"]["val_bpc"] > 0 for run in charlm["runs"].values())
    # the sweep grown by its own rule until every choice is final, then the judged runs at those choices
    sweep = results_files.read(out / "runs" / "grokking_p97_qk_lr-ci.json.gz")
    swept = device_plan.config(device_plan.SWEEP, "ci", dry=True)  # the dry run's arms: two of the four
    assert set(swept.arms) < set(p97_fair.ARMS) and len(swept.arms) == 2
    assert p97_fair.study(swept).pending(sweep) == []
    chosen = {arm: p97_fair.study(swept).chosen(sweep, arm) for arm in swept.arms}
    assert all(c is not None and c["interior"] for c in chosen.values())
    fair = results_files.read(out / "runs" / "grokking_p97_fair-ci.json.gz")
    assert sorted(fair["runs"]) == sorted(f"{arm}/0" for arm in (*swept.arms, "frozen"))
    assert dict(map(tuple, fair["config"]["qk_lrs"])) == {arm: c["lr"] for arm, c in chosen.items()}
    for results in (sweep, fair):
        assert all(run["final"]["epoch"] == device_plan.DRY_TASK["epochs"] for run in results["runs"].values())
        assert all(run["provenance"]["device"].startswith("cpu") for run in results["runs"].values())
    merge = "F/runs/grokking_p97_qk_lr-ci.json.gz F/runs/grokking_p97_fair-ci.json.gz"
    assert "Into the repository" in done.stdout and merge in done.stdout and "tar -xf F/benchmarks.tar" in done.stdout


A, B, C = ("baseline", 0), ("stiefel", 0), ("frozen", 0)


def sleeper(seconds):
    return lambda key: subprocess.Popen(["sleep", str(seconds)], start_new_session=True)


def test_the_guard_stops_runs_at_the_deadline_and_starts_none_expected_to_miss_it():
    quick = device_pool.Estimate(ms_per_epoch=1.0, source="test", epochs=1, startup_s=0.5)
    started = time.monotonic()
    outcome = device_pool.supervise(
        [A, B, C], sleeper(60), started + 2.0, quick, most=2, say=lambda _: None, poll_s=0.1
    )
    assert outcome["stopped"] == [A, B] and outcome["not_started"] == [C] and outcome["finished"] == []
    assert time.monotonic() - started < 15

    slow = device_pool.Estimate(ms_per_epoch=1.0, source="test", epochs=1, startup_s=100)
    outcome = device_pool.supervise([A], sleeper(60), time.monotonic() + 5, slow, most=2, say=lambda _: None)
    assert outcome["not_started"] == [A] and outcome["processes"] == 0


def test_later_runs_start_only_when_the_slowest_finished_run_still_fits():
    estimate = device_pool.Estimate(ms_per_epoch=1.0, source="test", epochs=1, startup_s=0.1)
    outcome = device_pool.supervise(
        [A, B, C], sleeper(3), time.monotonic() + 5, estimate, most=1, say=lambda _: None, poll_s=0.1
    )
    assert outcome["finished"] == [A] and outcome["not_started"] == [B, C]  # 3 s more would pass the guard


def test_the_estimate_fits_as_many_processes_as_the_time_left_allows():
    safe = device_pool.Estimate(ms_per_epoch=3.0, source="test", epochs=20_000)  # 60 s + 78 s x n: no gain assumed
    assert safe.run_seconds(1) == pytest.approx(60 + 78) and safe.run_seconds(3) == pytest.approx(60 + 78 * 3)
    assert safe.processes(300, most=7) == 3 and safe.processes(100, most=7) == 0
    measured = device_pool.Estimate(ms_per_epoch=3.0, source="test", epochs=20_000, sharing=2.0)
    assert measured.run_seconds(6) == pytest.approx(60 + 78 * 3) and measured.processes(300, most=7) == 6


def test_the_pool_asks_the_plan_again_as_runs_end_and_paces_longer_runs_by_their_epochs():
    ended = []

    def plan(busy):  # A first; once it has ended, B (a sweep round grown) and C, eight times as long
        return [B, C] if ended else [A]

    estimate = device_pool.Estimate(ms_per_epoch=1.0, source="test", epochs=1, startup_s=0.1)
    outcome = device_pool.supervise(
        plan,
        sleeper(1),
        time.monotonic() + 6,
        estimate,
        most=1,
        epochs_of={A: 1, B: 1, C: 8}.get,
        on_exit=lambda key, rc: ended.append(key),
        say=lambda _: None,
        poll_s=0.1,
    )
    assert outcome["finished"] == [A, B] and outcome["not_started"] == [C]  # C: ~8 s at A's pace


def sweep_file(times: dict, seeds=(100, 101)) -> dict:
    """``grokking_p97_qk_lr-full``: ``times`` {(arm, lr): [epoch at 90 % per seed, None: never]}."""

    def run(epoch):
        history = [{"epoch": e, "val_acc": 0.95 if epoch and e >= epoch else 0.5} for e in range(0, 10_001, 500)]
        return {"history": history, "final": history[-1]}

    runs = {f"{arm}@qklr={lr:g}/{s}": run(t) for (arm, lr), ts in times.items() for s, t in zip(seeds, ts)}
    config = {"task": {"lr": 1e-3, "epochs": 10_000}, "seeds": list(seeds), "threshold": 0.9}
    return {"experiment": device_plan.SWEEP, "profile": "full", "config": config, "runs": runs}


def test_the_plan_sweeps_by_the_rule_then_judges_at_the_settled_choices_from_the_committed_files(tmp_path, monkeypatch):
    committed, work = tmp_path / "book-results", tmp_path / "work"
    committed.mkdir()
    monkeypatch.setattr(device_plan, "COMMITTED", committed)  # holding only the files the job reads
    assert device_plan.results_read("full") == ["grokking_p97_qk_lr-full", "grokking_p97_fair-full"]
    device_plan.seed_work(work, "full")
    said = []
    plan = device_plan.Plan(work, "full", dry=False, say=said.append)
    queue = plan()  # the sweep's first grid: four arms x 1e-4, 3e-4, 1e-3 x seeds 100, 101
    Run = device_plan.Run
    assert len(queue) == 24 and {run.experiment for run in queue} == {device_plan.SWEEP}
    first = "baseline@qklr=0.0001"
    assert queue[:2] == [Run(device_plan.SWEEP, first, 100), Run(device_plan.SWEEP, first, 101)]
    assert plan({queue[0]}) == queue[1:]  # a running one is not named again
    assert plan.epochs_of(queue[0]) == 10_000

    times = {(arm, lr): [3000 if lr == 3e-4 else 6000] * 2 for arm in p97_fair.ARMS for lr in (1e-4, 3e-4, 1e-3)}
    times[("baseline", 1e-3)] = [1000, 1000]  # fastest at the grid's top: the rule grows it
    (committed / "grokking_p97_qk_lr-full.json").write_text(json.dumps(sweep_file(times)))
    runs = device_plan.seed_work(work, "full")
    assert len(runs[device_plan.SWEEP]["committed"]) == 24 and runs[device_plan.SWEEP]["earlier"] == set()
    assert plan() == [Run(device_plan.SWEEP, "baseline@qklr=0.003", s) for s in (100, 101)]  # no judged run yet

    times[("baseline", 3e-3)] = [6000, 6000]  # the round's runs, written by the job's workers
    (work / "grokking_p97_qk_lr-full.json").write_text(json.dumps(sweep_file(times)))
    queue = plan()
    assert {run.experiment for run in queue} == {device_plan.FAIR} and len(queue) == 5 * 6
    assert queue[:5] == [Run(device_plan.FAIR, arm, 0) for arm in (*p97_fair.ARMS, "frozen")]  # seed by seed
    assert plan.epochs_of(queue[0]) == 20_000
    assert any("baseline 0.001" in line and "no_decay_qk 0.0003" in line for line in said)  # the choices stated

    per_run = plan.bytes_per_run(device_plan.FAIR)  # the prior: 1,001 records of ~400 bytes
    monkeypatch.setattr(device_plan, "MAX_FILE_BYTES", per_run * 3 + 1)
    assert plan({Run(device_plan.FAIR, "baseline", 0)}) == queue[1:3]  # 2 more fit beside the one running
    assert any("the plan is cut" in line for line in said)


def results_file(runs, lr=1e-3, seeds=(0,)):
    return {
        "experiment": "grokking",
        "profile": "full",
        "config": {"lr": lr, "seeds": list(seeds)},
        "runs": {key: {"final": {"val_acc": value}} for key, value in runs.items()},
    }


def test_merge_adds_the_new_runs_keeps_the_committed_ones_and_refuses_another_configuration(tmp_path):
    target, source = tmp_path / "grokking-full.json", tmp_path / "returned.json"
    target.write_text(json.dumps(results_file({"baseline/0": 0.5})))
    source.write_text(json.dumps(results_file({"baseline/0": 0.9, "frozen/3": 0.7}, seeds=(3,))))
    merged = device_job.merge(source, target)
    assert merged == {"added": ["frozen/3"], "already_there": ["baseline/0"]}
    assert not target.exists()  # written as gzip, the plain form removed
    results = results_files.read(target.with_name("grokking-full.json.gz"))
    assert results["runs"]["baseline/0"]["final"]["val_acc"] == 0.5 and "frozen/3" in results["runs"]
    assert results["config"]["seeds"] == [0, 3]
    source.write_text(json.dumps(results_file({"frozen/4": 0.7}, lr=3e-3)))
    with pytest.raises(ValueError, match="another configuration"):
        device_job.merge(source, target)


def test_merge_takes_an_arms_new_setting_where_the_committed_file_holds_none_of_its_runs(tmp_path):
    """An arm's runs dropped (a library fault) and made again after its sweep chose another lr: the
    returned runs merge, and the file then records the lr they were made at; a changed setting of an
    arm with committed runs is still refused."""
    def with_lrs(runs, lrs):
        return {**results_file(runs), "config": {"lr": 1e-3, "seeds": [0], "qk_lrs": [list(p) for p in lrs]}}

    target, source = tmp_path / "grokking-full.json", tmp_path / "returned.json"
    target.write_text(json.dumps(with_lrs({"baseline/0": 0.5}, [("baseline", 1e-3), ("manifold_muon", 3e-3)])))
    source.write_text(json.dumps(with_lrs({"manifold_muon/0": 0.9}, [("baseline", 1e-3), ("manifold_muon", 1e-2)])))
    assert device_job.merge(source, target)["added"] == ["manifold_muon/0"]
    results = results_files.read(target.with_name("grokking-full.json.gz"))
    assert results["config"]["qk_lrs"] == [["baseline", 1e-3], ["manifold_muon", 1e-2]]
    source.write_text(json.dumps(with_lrs({"baseline/1": 0.9}, [("baseline", 3e-3), ("manifold_muon", 1e-2)])))
    with pytest.raises(ValueError, match="another configuration"):
        device_job.merge(source, target)


def test_merge_takes_both_experiments_returned_files_each_into_its_own(tmp_path, capsys):
    returned, into = tmp_path / "runs", tmp_path / "results"
    returned.mkdir()
    for experiment in device_plan.EXPERIMENTS:
        file = {**results_file({"stiefel/0": 0.9}), "experiment": experiment}
        (returned / f"{experiment}-full.json").write_text(json.dumps(file))
    sources = [str(returned / f"{experiment}-full.json") for experiment in device_plan.EXPERIMENTS]
    assert device_job.main(["merge", *sources, "--into", str(into)]) == 0
    for experiment in device_plan.EXPERIMENTS:
        assert results_files.read(into / f"{experiment}-full.json.gz")["experiment"] == experiment
    assert capsys.readouterr().out.count("added 1 runs (stiefel/0)") == 2


def test_files_a_lent_machine_would_not_return_are_named(tmp_path):
    (tmp_path / "a" / "b" / "c").mkdir(parents=True)
    (tmp_path / "a" / "b" / "c" / "deep.json").write_text("{}")
    for i in range(8):
        (tmp_path / f"f{i}.log").write_text("x")
    _, problems = device_check.returned_files(tmp_path)
    assert len(problems) == 2 and problems[0].startswith("9 files (at most 8)")
    assert problems[1].startswith("a/b/c/deep.json: 3 folders")


def test_stopped_runs_checkpoints_return_as_many_as_fit_one_file(tmp_path, monkeypatch):
    monkeypatch.setattr(device_job, "MAX_FILE_BYTES", 250)
    stopped = [
        device_plan.Run(device_plan.SWEEP, "stiefel@qklr=0.001", 100),
        device_plan.Run(device_plan.FAIR, "frozen", 3),
        device_plan.Run(device_plan.FAIR, "stiefel", 3),
    ]
    for run in stopped:
        (tmp_path / f"{run.experiment}-full").mkdir(exist_ok=True)
        (tmp_path / f"{run.experiment}-full" / f"{run.arm}-{run.seed}.pt").write_bytes(b"x" * 100)
    said = []
    bundle = device_job.bundle_checkpoints(tmp_path, "full", stopped, tmp_path / "checkpoints.tar", said.append)
    kept = [f"{run.experiment}-full/{run.arm}-{run.seed}.pt" for run in stopped[:2]]  # the third does not fit
    assert tarfile.open(bundle).getnames() == kept
    assert said[0].startswith("1 stopped") and "do not fit" in said[0]
