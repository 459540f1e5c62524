"""The judged routing experiments take each arm's W_Q, W_K lr from their sweep's file before their
runs, record it, and refuse (with the command to run) a sweep that is missing, unsettled, of
another setting, or whose selection seeds they would judge on. At ci scale."""

import dataclasses
import json

import pytest

from stiefel_book.engine.study import SweepError
from stiefel_book.experiments import routing_sweep, run_experiment
from stiefel_book.experiments.routing_sweep import SWEEPS, SWEPT_ARMS, resolver
from stiefel_book.results import results_path, write_results

TASKS = {"mqar": "mqar_qk_lr", "induction": "induction_qk_lr", "charlm": "charlm_qk_lr"}
SETTLED = {1e-3: 0.5, 3e-3: 0.9, 1e-2: 0.4}  # each arm's choice 3e-3, interior


def fake_sweep(sweep_name: str, profile: str = "ci", scores: dict | None = None, **task_changes) -> dict:
    """A sweep file of ``sweep_name``'s profile with ``scores`` ({arm: {lr: score}}, default every
    swept arm :data:`SETTLED`) on its one selection seed."""
    config = SWEEPS[sweep_name][0][profile]
    task = dataclasses.replace(config.task, **task_changes)
    scores = scores if scores is not None else {arm: SETTLED for arm in SWEPT_ARMS}
    metric = config.metric.lstrip("-")
    sign = -1 if config.metric.startswith("-") else 1
    runs = {
        f"{arm}@qklr={lr:g}/{seed}": {"history": [{"epoch": task.steps, metric: sign * score}]}
        for arm, rungs in scores.items()
        for lr, score in rungs.items()
        for seed in config.seeds
    }
    stored = json.loads(json.dumps(dataclasses.asdict(dataclasses.replace(config, task=task))))
    return {"experiment": sweep_name, "profile": profile, "config": stored, "runs": runs}


def write_sweep(tmp_path, sweep_name, **kwargs):
    write_results(fake_sweep(sweep_name, **kwargs), results_path(sweep_name, "ci", tmp_path))


@pytest.mark.parametrize("task", ["mqar", "induction", "charlm"])
def test_each_judged_profile_is_swept_on_other_seeds_with_enough_of_them(task):
    sweep_profiles, _ = SWEEPS[TASKS[task]]
    from stiefel_book.experiments.runner import EXPERIMENTS

    judged = EXPERIMENTS[task].profiles
    assert set(judged) <= set(sweep_profiles)
    for profile, config in judged.items():
        assert not set(config.seeds) & set(sweep_profiles[profile].seeds)
    assert len(judged["full"].seeds) >= (5 if task == "charlm" else 10)


@pytest.mark.parametrize("task", ["mqar", "induction", "charlm"])
def test_resolve_reads_every_arms_choice_from_the_sweep(task, tmp_path):
    from stiefel_book.experiments.runner import get_config

    write_sweep(tmp_path, TASKS[task])
    resolved = resolver(TASKS[task])(get_config(task, "ci"), tmp_path)
    assert dict(resolved.qk_lrs) == {arm: 3e-3 for arm in SWEPT_ARMS}


def test_resolve_refuses_a_missing_an_unsettled_or_a_foreign_sweep(tmp_path):
    from stiefel_book.experiments.runner import get_config

    resolve, config = resolver("mqar_qk_lr"), get_config("mqar", "ci")
    with pytest.raises(SweepError, match=r"run `python -m stiefel_book sweep mqar_qk_lr --profile ci` first"):
        resolve(config, tmp_path)
    edge = {arm: SETTLED for arm in SWEPT_ARMS} | {"muon": {1e-3: 0.5, 3e-3: 0.9}}  # muon's best is its top rung
    write_sweep(tmp_path, "mqar_qk_lr", scores=edge)
    with pytest.raises(SweepError, match=r"has not settled \['muon'\].*grow it with `python -m stiefel_book sweep"):
        resolve(config, tmp_path)
    write_sweep(tmp_path, "mqar_qk_lr", kv_pairs=config.kv_pairs - 1)
    with pytest.raises(SweepError, match="another setting"):
        resolve(config, tmp_path)
    with pytest.raises(SweepError, match=r"judged seeds \[100\] are mqar_qk_lr's selection seeds"):
        resolve(dataclasses.replace(config, seeds=(0, 100)), tmp_path)
    with pytest.raises(SweepError, match="no profile of mqar_qk_lr sweeps this setting"):
        resolve(dataclasses.replace(config, steps=config.steps + 1), tmp_path)


def test_a_judged_run_records_the_resolved_lrs_and_trains_each_arm_at_its_own(tmp_path):
    scores = {arm: SETTLED for arm in SWEPT_ARMS} | {"stiefel": {3e-3: 0.5, 1e-2: 0.9, 3e-2: 0.4}}
    write_sweep(tmp_path, "induction_qk_lr", scores=scores)
    results = run_experiment(
        "induction",
        "ci",
        arms=["baseline", "stiefel", "frozen"],
        directory=tmp_path,
        checkpoints=tmp_path / "ck",
        progress=False,
    )
    assert dict(map(tuple, results["config"]["qk_lrs"]))["stiefel"] == 1e-2
    assert results["runs"]["stiefel/0"]["qk_lr"] == 1e-2 and results["runs"]["baseline/0"]["qk_lr"] == 3e-3
    assert routing_sweep.load_results("induction", "ci", tmp_path)["config"]["qk_lrs"] == results["config"]["qk_lrs"]


def test_the_decay_map_runs_each_arm_at_each_decay_at_its_resolved_lr(tmp_path):
    write_sweep(tmp_path, "induction_qk_lr")
    results = run_experiment(
        "induction_decay_map",
        "ci",
        arms=["stiefel@wd=0", "stiefel@wd=1", "frozen@wd=1"],
        directory=tmp_path,
        checkpoints=tmp_path / "ck",
        progress=False,
    )
    assert dict(map(tuple, results["config"]["task"]["qk_lrs"]))["stiefel"] == 3e-3
    runs = results["runs"]
    assert [runs[f"stiefel@wd={wd}/0"]["weight_decay"] for wd in (0, 1)] == [0.0, 1.0]
    assert runs["stiefel@wd=0/0"]["history"] != runs["stiefel@wd=1/0"]["history"]  # λ reaches the optimizer
    steps = results["config"]["task"]["steps"]
    assert all(r["history"][-1]["epoch"] == steps for r in runs.values())
