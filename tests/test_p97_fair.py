"""The fair fight at p = 97: a sweep scored by how fast a run groks, and judged runs that take its
choices, resolved before they run."""

import dataclasses

import pytest

from stiefel_book.choices import epochs_to
from stiefel_book.engine.study import judged_run
from stiefel_book.experiments import fair_fight, get_config, p97_fair, run_experiment
from stiefel_book.results import write_results

FULL = p97_fair.study(p97_fair.SWEEP_PROFILES["full"])  # the sweep as the judged runs read it


def _run(epoch_at_90: int | None, horizon: int = 10_000) -> dict:
    """A run's history that passes 90 % at ``epoch_at_90`` (never, if ``None``)."""
    history = [
        {"epoch": e, "val_acc": 0.95 if epoch_at_90 and e >= epoch_at_90 else 0.5} for e in range(0, horizon + 1, 500)
    ]
    return {"history": history}


def _sweep(times: dict) -> dict:
    """``times``: {(arm, lr): [epoch at 90 % per seed]}."""
    runs = {f"{arm}@qklr={lr:g}/{100 + i}": _run(t) for (arm, lr), ts in times.items() for i, t in enumerate(ts)}
    return {"config": {"task": {"lr": 1e-3, "epochs": 10_000}, "seeds": [100, 101], "threshold": 0.9}, "runs": runs}


def test_the_sweep_chooses_the_fastest_lr_and_counts_a_run_that_never_groks_at_the_horizon():
    sweep = _sweep({("stiefel", 1e-4): [None, None], ("stiefel", 3e-4): [3000, 4000], ("stiefel", 1e-3): [None, 2000]})
    assert FULL.scores(sweep, "stiefel")[1e-3] == [-10_000.0, -2000.0]
    c = FULL.chosen(sweep, "stiefel")
    assert c["lr"] == 3e-4 and c["interior"]  # 3,500 epochs on average beats 6,000 and 10,000
    edge = _sweep(
        {("baseline", 1e-4): [9000, 9000], ("baseline", 3e-4): [8000, 8000], ("baseline", 1e-3): [7000, 7000]}
    )
    assert not FULL.chosen(edge, "baseline")["interior"]  # fastest at the top rung: the grid must grow
    assert FULL.pending_rungs(edge, "baseline") == (3e-3,)
    others = [f"{arm}@qklr={lr:g}" for arm in p97_fair.ARMS[1:] for lr in (1e-4, 3e-4, 1e-3)]
    assert FULL.pending(edge) == ["baseline@qklr=0.003", *others]
    assert FULL.chosen(_sweep({("qk_norm", 1e-3): [5000]}), "qk_norm") is None  # one of two seeds: no choice


def test_the_judged_runs_refuse_an_unsettled_sweep_and_take_a_settled_one(tmp_path):
    config = get_config("grokking_p97_fair", "ci")
    with pytest.raises(ValueError, match="sweep grokking_p97_qk_lr --profile ci"):
        p97_fair.resolve(config, tmp_path)
    times = {(arm, lr): [3000 if lr == 3e-4 else 6000] * 2 for arm in p97_fair.ARMS for lr in (1e-4, 3e-4, 1e-3)}
    times[("qk_norm", 1e-3)] = [1000, 1000]  # fastest at the edge
    write_results(_sweep(times), tmp_path / "grokking_p97_qk_lr-ci.json")
    with pytest.raises(ValueError, match=r"not settled \['qk_norm'\]"):
        p97_fair.resolve(config, tmp_path)
    times[("qk_norm", 1e-3)] = [6000, 6000]
    write_results(_sweep(times), tmp_path / "grokking_p97_qk_lr-ci.json")
    assert dict(p97_fair.resolve(config, tmp_path).qk_lrs) == dict.fromkeys(p97_fair.ARMS, 3e-4)


def test_a_judged_run_records_its_resolved_lr(tmp_path):
    base = get_config("grokking_p97_fair", "ci")
    config = dataclasses.replace(base, task=dataclasses.replace(base.task, epochs=30), qk_lrs=(("stiefel", 1e-3),))
    out = run_experiment(
        "grokking_p97_fair",
        "ci",
        config=config,
        arms=["stiefel", "frozen"],
        directory=tmp_path,
        checkpoints=tmp_path / "ckpt",
        progress=False,
    )
    assert out["config"]["qk_lrs"] == [["stiefel", 1e-3]]
    assert out["runs"]["stiefel/0"]["qk_lr"] == 1e-3 and out["runs"]["frozen/0"]["qk_lr"] == 0.0


def test_a_sweep_run_stops_where_its_score_is_fixed_and_scores_as_the_full_run(tmp_path):
    import torch

    from stiefel_book.experiments import grokking

    task = dataclasses.replace(grokking.PROFILES["ci"], epochs=400, log_every=10, checkpoint_every=50)
    cpu = torch.device("cpu")
    full = grokking.run(task, "stiefel", 0, cpu, progress=False)["history"]
    crossing = epochs_to(full, 0.3, 400)
    assert 10 <= crossing < 400  # the tiny task passes 30 % partway: a threshold it crosses
    checkpoint = tmp_path / "run.pt"
    stopped = grokking.run(task, "stiefel", 0, cpu, checkpoint, progress=False, stop_at=0.3)["history"]
    assert stopped[-1]["epoch"] == crossing and stopped == full[: len(stopped)]  # the same run, cut where it crosses
    assert not checkpoint.exists()  # a finished run leaves no checkpoint
    config = dataclasses.replace(p97_fair.SWEEP_PROFILES["ci"], task=task, threshold=0.3)
    run = p97_fair.study(config).run("stiefel@qklr=0.003", 0, cpu, progress=False)
    assert run["final"]["epoch"] == crossing
    with pytest.raises(ValueError, match="stop_at is a validation accuracy"):
        grokking.run(task, "stiefel", 0, cpu, progress=False, stop_at=90)


def test_a_judged_run_the_long_runs_already_hold_is_adopted_and_is_that_run_bit_for_bit(tmp_path):
    import json

    import torch

    from stiefel_book.experiments import grokking

    base = get_config("grokking_p97_fair", "ci")
    task = dataclasses.replace(base.task, epochs=30)
    lr = task.lr  # the Stiefel rule at the task's lr: the long runs' computation; AdamW at another lr: not
    config = dataclasses.replace(base, task=task, qk_lrs=(("stiefel", lr), ("baseline", lr / 3)))
    cpu = torch.device("cpu")
    long_runs = {
        f"{arm}/0": grokking.run(task, arm, 0, cpu, progress=False) for arm in ("stiefel", "frozen", "baseline")
    }
    for run in long_runs.values():
        run.pop("compiled", None)
    source = {"config": json.loads(json.dumps(dataclasses.asdict(task))), "runs": long_runs}
    write_results(source, tmp_path / "grokking-ci.json")
    out = run_experiment(
        "grokking_p97_fair",
        "ci",
        config=config,
        arms=["stiefel", "frozen", "baseline"],
        directory=tmp_path,
        checkpoints=tmp_path / "ckpt",
        progress=False,
    )["runs"]
    assert out["stiefel/0"]["provenance"]["adopted_from"] == "grokking-ci"
    assert out["frozen/0"]["provenance"]["adopted_from"] == "grokking-ci"
    assert "adopted_from" not in out["baseline/0"]["provenance"]  # its lr is not the task's: it ran
    fresh = judged_run(fair_fight.train, config, "stiefel", 0, cpu, progress=False)
    assert out["stiefel/0"]["history"] == fresh["history"]  # the adopted run is the judged run, bit for bit
    assert out["stiefel/0"]["qk_lr"] == fresh["qk_lr"] == lr and out["frozen/0"]["qk_lr"] == 0.0
    other = dataclasses.replace(config, task=dataclasses.replace(task, weight_decay=0.5))
    assert p97_fair.adopt(other, "stiefel", 0, tmp_path) is None  # another task's runs are never adopted


def test_a_grid_that_falls_to_the_ladders_bottom_asks_for_frozen_frames_and_runs_them(tmp_path):
    import torch

    from stiefel_book.choices import LADDER
    from stiefel_book.experiments import grokking

    slower = {("baseline", lr): [4000 + 1e7 * lr] * 2 for lr in (1e-4, 3e-4, 1e-3)}  # the first grid: slower
    bottom = _sweep({**slower, ("baseline", LADDER[0]): [2000, 2000], ("baseline", LADDER[1]): [3000, 3000]})
    config = p97_fair.SWEEP_PROFILES["full"]
    assert p97_fair.study(config).pending_rungs(bottom, "baseline") == (0.0,)  # lr 0, below the ladder: frozen frames
    assert p97_fair.study(config).pending(bottom)[0] == "frozen"
    frozen = {**bottom, "runs": {**bottom["runs"], "frozen/100": _run(1000), "frozen/101": _run(1500)}}
    choice = FULL.chosen(frozen, "baseline")
    assert choice["lr"] == 0.0 and choice["interior"]  # lr 0 is a true boundary
    assert "frozen" not in p97_fair.study(config).pending(frozen)
    task = dataclasses.replace(grokking.PROFILES["ci"], epochs=40, log_every=10, checkpoint_every=50)
    swept = dataclasses.replace(p97_fair.SWEEP_PROFILES["ci"], task=task)
    run = p97_fair.study(swept).run("frozen", 0, torch.device("cpu"), progress=False)
    assert run["final"]["epoch"] == 40  # the tiny task never reaches 90 %: it runs to its end
    assert "frozen" in FULL.run_names()
