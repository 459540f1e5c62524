"""The device check (``make device-check``, issue 33): its dry run end to end, so that the
script a lent GPU gets cannot rot, and the parts a dry run cannot reach (the guard, the merge)."""

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

import device_check  # noqa: E402
import device_job  # noqa: E402


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
    assert [s["status"] for s in summary["steps"]] == ["passed"] * 5
    assert summary["tests"]["passed"] > 0 and not summary["tests"]["failed"]
    assert summary["returned_files_problems"] == []
    files = {f["path"] for f in summary["files"]}
    assert {
        "device-check.log",
        "summary.json",
        "runs/grokking-ci.json",
        "benchmarks/results/step_time-tiny-cpu.json",
        "benchmarks/results/peers_step-tiny-cpu.json",
        "benchmarks/results/grokking_epoch-ci-cpu.json",
    } == files
    runs = json.loads((out / "runs" / "grokking-ci.json").read_text())["runs"]
    assert sorted(runs) == sorted(f"{arm}/0" for arm in device_job.runnable_arms())
    assert all(run["final"]["epoch"] == device_job.DRY_CONFIG["epochs"] for run in runs.values())
    assert all(run["provenance"]["device"].startswith("cpu") for run in runs.values())
    assert "Into the repository" in done.stdout and "tools/device_job.py merge F/runs/grokking-ci.json" in done.stdout


A, B, C = ("baseline", 0), ("stiefel", 0), ("frozen", 0)


def sleeper(seconds):
    return lambda key: subprocess.Popen(["sleep", str(seconds)], start_new_session=True)


def test_the_guard_stops_runs_at_the_deadline_and_starts_none_expected_to_miss_it():
    quick = device_job.Estimate(ms_per_epoch=1.0, source="test", epochs=1, startup_s=0.5)
    started = time.monotonic()
    outcome = device_job.supervise([A, B, C], sleeper(60), started + 2.0, quick, most=2, say=lambda _: None, poll_s=0.1)
    assert outcome["stopped"] == [A, B] and outcome["not_started"] == [C] and outcome["finished"] == []
    assert time.monotonic() - started < 15

    slow = device_job.Estimate(ms_per_epoch=1.0, source="test", epochs=1, startup_s=100)
    outcome = device_job.supervise([A], sleeper(60), time.monotonic() + 5, slow, most=2, say=lambda _: None)
    assert outcome["not_started"] == [A] and outcome["processes"] == 0


def test_later_runs_start_only_when_the_slowest_finished_run_still_fits():
    estimate = device_job.Estimate(ms_per_epoch=1.0, source="test", epochs=1, startup_s=0.1)
    outcome = device_job.supervise(
        [A, B, C], sleeper(3), time.monotonic() + 5, estimate, most=1, say=lambda _: None, poll_s=0.1
    )
    assert outcome["finished"] == [A] and outcome["not_started"] == [B, C]  # 3 s more would pass the guard


def test_the_estimate_fits_as_many_processes_as_the_time_left_allows():
    safe = device_job.Estimate(ms_per_epoch=3.0, source="test", epochs=20_000)  # 60 s + 78 s x n: no gain assumed
    assert safe.run_seconds(1) == pytest.approx(60 + 78) and safe.run_seconds(3) == pytest.approx(60 + 78 * 3)
    assert safe.processes(300, most=7) == 3 and safe.processes(100, most=7) == 0
    measured = device_job.Estimate(ms_per_epoch=3.0, source="test", epochs=20_000, sharing=2.0)
    assert measured.run_seconds(6) == pytest.approx(60 + 78 * 3) and measured.processes(300, most=7) == 6


def test_the_plan_completes_six_paired_seeds_before_adding_more():
    done = {f"{arm}/{seed}" for arm in ("baseline", "stiefel") for seed in range(6)}
    done |= {f"{arm}/{seed}" for arm in ("frozen", "no_decay_qk") for seed in range(3)}
    arms = ("baseline", "stiefel", "frozen", "no_decay_qk")
    queue = device_job.plan(done, arms)
    assert queue[:6] == [(arm, seed) for seed in (3, 4, 5) for arm in ("frozen", "no_decay_qk")]
    assert queue[6:] == [(arm, seed) for seed in (6, 7) for arm in arms]
    assert set(device_job.runnable_arms()) >= set(arms)  # the grokking experiment runs each of them


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
    results = json.loads(target.read_text())
    assert results["runs"]["baseline/0"]["final"]["val_acc"] == 0.5 and "frozen/3" in results["runs"]
    assert results["config"]["seeds"] == [0, 3]
    source.write_text(json.dumps(results_file({"frozen/4": 0.7}, lr=3e-3)))
    with pytest.raises(ValueError, match="another configuration"):
        device_job.merge(source, target)


def test_files_a_lent_machine_would_not_return_are_named(tmp_path):
    (tmp_path / "a" / "b" / "c").mkdir(parents=True)
    (tmp_path / "a" / "b" / "c" / "deep.json").write_text("{}")
    for i in range(8):
        (tmp_path / f"f{i}.log").write_text("x")
    _, problems = device_check.returned_files(tmp_path)
    assert problems == ["9 files (at most 8)", "a/b/c/deep.json: 3 folders down (at most 2)"]


def test_stopped_runs_checkpoints_return_as_many_as_fit_one_file(tmp_path, monkeypatch):
    monkeypatch.setattr(device_job, "MAX_FILE_BYTES", 250)
    for arm in ("frozen", "no_decay_qk", "stiefel"):
        (tmp_path / f"{arm}-3.pt").write_bytes(b"x" * 100)
    said = []
    bundle = device_job.bundle_checkpoints(
        tmp_path, [("frozen", 3), ("no_decay_qk", 3), ("stiefel", 3)], tmp_path / "checkpoints.tar", said.append
    )
    assert tarfile.open(bundle).getnames() == ["frozen-3.pt", "no_decay_qk-3.pt"]
    assert "1 stopped runs' checkpoints do not fit" in said[0]
