"""CIFAR-10's fair fight, judged: the relatives' own lr sweep, and the judged runs that take each
arm's lr from a settled sweep, recorded in their config before the runs."""

import dataclasses

import pytest

from stiefel_book.choices import ladder_around
from stiefel_book.experiments import EXPERIMENTS, get_config, run_experiment
from stiefel_book.experiments import cifar10_fair as judged
from stiefel_book.results import write_results

from tiny import TINY

SHRUNK = {k: v for k, v in TINY.items() if k != "seeds"}  # the task's own: one start per run


def _center(arm: str, task_lr: float) -> float:
    return judged.peer_study(judged.PEER_SWEEP_PROFILES["full"]).center(arm, task_lr)


def _history(acc: float) -> list[dict]:
    return [{"epoch": e, "test_acc": acc} for e in range(1, 101)]


def _fake_sweep(arms, best: dict, seeds=(100,), task_lr=1e-3) -> dict:
    """A peers' sweep whose every arm scores best at ``best[arm]`` among its start rungs."""
    runs = {}
    for arm in arms:
        for lr in ladder_around(_center(arm, task_lr), 1, 1):
            for s in seeds:
                runs[f"{arm}@qklr={lr:g}/{s}"] = {"history": _history(0.6 if lr == best.get(arm) else 0.5)}
    return {"config": {"task": {"lr": task_lr, "epochs": 100}, "seeds": list(seeds)}, "runs": runs}


def test_the_judged_relatives_refuse_to_run_until_their_sweep_has_settled(isolated):
    config = get_config("cifar10_fair_peers", "ci")
    with pytest.raises(ValueError, match="sweep cifar10_peers_qk_lr --profile ci"):
        judged.resolve(config)
    middle = {arm: _center(arm, 1e-3) for arm in judged.PEERS}
    edge = {**middle, "muon": ladder_around(_center("muon", 1e-3), 1, 1)[-1]}  # best at the top rung
    write_results(_fake_sweep(judged.PEERS, edge), isolated / "results" / "cifar10_peers_qk_lr-ci.json")
    with pytest.raises(ValueError, match=r"not settled \['muon'\]"):
        judged.resolve(config)
    write_results(_fake_sweep(judged.PEERS, middle), isolated / "results" / "cifar10_peers_qk_lr-ci.json")
    assert dict(judged.resolve(config).qk_lrs) == middle


def test_the_core_arms_take_their_lambda_1_cell_of_the_core_sweep(isolated):
    runs = {}
    for arm, best in (("baseline", 3e-4), ("stiefel", 3e-3)):
        for lr in (1e-4, 3e-4, 1e-3, 3e-3, 1e-2):
            runs[f"{arm}@wd=1@qklr={lr:g}/100"] = {"history": _history(0.6 if lr == best else 0.5)}
    sweep = {"config": {"task": {"lr": 1e-3, "epochs": 100}, "seeds": [100]}, "runs": runs}
    write_results(sweep, isolated / "results" / "cifar10_qk_lr-ci.json")
    assert dict(judged.resolve(get_config("cifar10_fair", "ci")).qk_lrs) == {"baseline": 3e-4, "stiefel": 3e-3}


def test_a_judged_run_trains_at_its_resolved_lr_and_records_it_in_the_results(isolated):
    base = get_config("cifar10_fair_peers", "ci")
    config = dataclasses.replace(
        base, task=dataclasses.replace(base.task, **SHRUNK), qk_lrs=(("muon", 3e-3), ("geoopt_radam", 1e-1))
    )
    out = run_experiment("cifar10_fair_peers", "ci", config=config, arms=["muon", "geoopt_radam"], progress=False)
    assert out["config"]["qk_lrs"] == [["muon", 3e-3], ["geoopt_radam", 1e-1]]
    assert out["runs"]["muon/0"]["qk_lr"] == 3e-3 and out["runs"]["geoopt_radam/0"]["qk_lr"] == 1e-1
    assert not any(k.startswith("step/") for k in out["runs"]["muon/0"]["final"])  # a parametrization's W_Q, W_K
    assert any(k.startswith("step/") for k in out["runs"]["geoopt_radam/0"]["final"])
    with pytest.raises(ValueError, match="no resolved W_Q, W_K lr"):
        EXPERIMENTS["cifar10_fair_peers"].run(config, "per_entry", 0, "cpu")


def test_the_relatives_sweep_starts_at_three_rungs_and_asks_for_what_is_missing(isolated):
    base = get_config("cifar10_peers_qk_lr", "ci")
    config = dataclasses.replace(base, task=dataclasses.replace(base.task, **SHRUNK), arms=("muon",))
    assert judged.peer_study(config).start_arms() == ("muon@qklr=0.0003", "muon@qklr=0.001", "muon@qklr=0.003")
    out = run_experiment("cifar10_peers_qk_lr", "ci", config=config, arms=["muon@qklr=0.001"], progress=False)
    assert list(judged.peer_study(config).scores(out, "muon")) == [1e-3]
    assert judged.peer_study(config).pending_rungs(out, "muon") == (3e-4, 3e-3)
    with pytest.raises(ValueError, match="lie on the ladder"):
        judged.peer_study(config).run("muon@qklr=0.002", 100, "cpu")


def test_the_core_sweep_grows_below_its_ladder_to_lr_0_as_frozen_frames(isolated):
    base = get_config("cifar10_qk_lr", "ci")
    config = dataclasses.replace(base, task=dataclasses.replace(base.task, **SHRUNK))
    assert "stiefel@wd=1@qklr=0" in judged.SWEEP_ARMS
    out = run_experiment("cifar10_qk_lr", "ci", config=config, arms=["stiefel@wd=1@qklr=0"], progress=False)
    run = out["runs"]["stiefel@wd=1@qklr=0/100"]
    assert run["final"].get("step/W_Q", 0.0) == 0.0  # the frames never move
