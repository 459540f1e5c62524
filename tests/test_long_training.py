"""CIFAR-10 where decay acts: the decay its 12 paired starts are read at, the data-size sweep at
matched epochs (its arms, its pairing, its choice of decay), on known numbers and tiny runs."""

import dataclasses

import pytest

from stiefel_core.experiments import EXPERIMENTS, cifar10_size, get_config, run_experiment
from stiefel_core.findings.long_training import largest_gap_decay, paired_gain_at, parse_size_arm, size_arm, size_gains
from test_cifar10_experiment import TINY, isolated, jpeg_copy  # noqa: F401  (fixtures)


def grid(gains: dict[float, list[float]], seeds=(0, 1, 2)) -> dict:
    """A long-training results file whose Stiefel arm beats the baseline by ``gains[λ][seed]``."""
    runs = {}
    for decay, per_seed in gains.items():
        for seed, gain in zip(seeds, per_seed):
            runs[f"baseline@wd={decay:g}/{seed}"] = {"final": {"test_acc": 0.5}}
            runs[f"stiefel@wd={decay:g}/{seed}"] = {"final": {"test_acc": 0.5 + gain}}
    return {"config": {"weight_decays": sorted(gains)}, "runs": runs}


def test_the_decay_of_largest_gap_is_chosen_on_complete_starts_only():
    results = grid({0.05: [0.01, 0.02, 0.0], 0.3: [-0.05, -0.04, -0.06], 1.0: [0.03, 0.02, 0.04]})
    assert largest_gap_decay(results) == 0.3  # the largest in size, whatever its sign
    assert paired_gain_at(results, 0.3).mean_difference == pytest.approx(-5.0)
    del results["runs"]["stiefel@wd=1/2"]
    assert largest_gap_decay(results) is None  # a decay of the grid short of its three starts
    assert largest_gap_decay(None) is None


def test_size_arms_name_their_decay_and_size():
    assert size_arm("stiefel", 0.3, 2500) == "stiefel@wd=0.3@n=2500"
    assert parse_size_arm("stiefel@wd=0.3@n=2500", ("baseline", "stiefel")) == ("stiefel", 0.3, 2500)
    with pytest.raises(ValueError, match="expected '<arm>@wd=<λ>@n=<images>'"):
        parse_size_arm("stiefel@n=2500", ("baseline", "stiefel"))


def test_the_size_sweep_refuses_to_guess_its_decay(isolated):
    config = get_config("cifar10_size", "full")
    with pytest.raises(ValueError, match="run `python -m stiefel_core run cifar10_long --profile full` first"):
        cifar10_size.chosen_decay(config, long_results={"config": {"weight_decays": [0.05]}, "runs": {}})
    assert cifar10_size.chosen_decay(config, grid({0.05: [0.01] * 3, 1.0: [0.1] * 3})) == 1.0


def test_the_size_sweep_trains_every_size_for_the_same_epochs_from_paired_starts(isolated, monkeypatch):
    small = {k: v for k, v in TINY.items() if k not in ("seeds", "train_size")}
    config = get_config("cifar10_size", "ci", sizes=(80, 160), seeds=(0,),
                        task=dataclasses.replace(get_config("cifar10_long", "ci").task, **small))
    tiny_arms = tuple(size_arm(a, 1.0, n) for n in (80, 160) for a in ("baseline", "stiefel"))
    monkeypatch.setitem(EXPERIMENTS, "cifar10_size", dataclasses.replace(EXPERIMENTS["cifar10_size"], arms=tiny_arms))
    results = run_experiment("cifar10_size", "ci", progress=False, config=config)
    assert sorted(results["runs"]) == sorted(f"{a}@wd=1@n={n}/0" for a in ("baseline", "stiefel") for n in (80, 160))
    finals = {k: r["final"] for k, r in results["runs"].items()}
    assert {f["epochs"] for f in finals.values()} == {config.task.epochs}  # matched epochs, so steps scale with size
    assert finals["stiefel@wd=1@n=160/0"]["steps"] == 2 * finals["stiefel@wd=1@n=80/0"]["steps"]
    for n in (80, 160):  # a size's two arms: one start, one data order
        a, b = finals[f"baseline@wd=1@n={n}/0"], finals[f"stiefel@wd=1@n={n}/0"]
        assert (a["init_fingerprint"], a["order_checksum"]) == (b["init_fingerprint"], b["order_checksum"])
    rows = size_gains(results)
    assert [(r["train_size"], r["n"]) for r in rows] == [(80, 1), (160, 1)]


def test_regime_rows_give_each_decay_its_budget_and_comparisons():
    from stiefel_core.experiments import _as_json, cifar10
    from stiefel_core.findings.long_training import regime_rows

    config = get_config("cifar10_long", "full")
    results = {"config": {**_as_json(config), "weight_decays": [0.3]}, "runs": {}}
    for seed in (0, 1):
        for arm, acc, step in (("baseline", 0.50, 2.0), ("stiefel", 0.53, 1.0), ("frozen", 0.48, 0.0), ("no_decay_qk", 0.51, 2.0)):
            history = [{"step/blocks.0.W_Q": step, "step/blocks.0.W_K": step}]
            results["runs"][f"{arm}@wd=0.3/{seed}"] = {"final": {"test_acc": acc + 0.001 * seed, "train_acc": 0.9}, "history": history}
    (row,) = regime_rows(results)
    assert row["budget"] == pytest.approx(0.3 * config.task.lr * sum(cifar10.lr_factors(config.task)))
    assert row["gain"].mean_difference == pytest.approx(3.0) and row["freezing_cost"].mean_difference == pytest.approx(5.0)
    assert row["decay_on_qk"].mean_difference == pytest.approx(1.0)
    assert row["movement_ratio"] == pytest.approx(2.0) and row["starts"] == [0, 1]
    from stiefel_core.findings.long_training import regime_table

    line = regime_table([row]).splitlines()[2]
    assert line.startswith("| 0.3 |") and "+3.00 [" in line and ", 2/2: untested" in line and "2.00x" in line
