"""CIFAR-10 where decay acts: the decay its 12 paired starts are read at, the data-size sweep at
matched epochs (its arms, its pairing, its choice of decay), on known numbers and tiny runs."""

import dataclasses

import pytest
from tiny import TINY

from stiefel_core.experiments import EXPERIMENTS, cifar10_size, get_config, run_experiment
from stiefel_core.findings.long_training import largest_gap_decay, paired_gain_at, parse_size_arm, size_arm, size_gains


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
    config = get_config(
        "cifar10_size",
        "ci",
        sizes=(80, 160),
        seeds=(0,),
        task=dataclasses.replace(get_config("cifar10_long", "ci").task, **small),
    )
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
        for arm, acc, step in (
            ("baseline", 0.50, 2.0),
            ("stiefel", 0.53, 1.0),
            ("frozen", 0.48, 0.0),
            ("no_decay_qk", 0.51, 2.0),
        ):
            history = [{"step/blocks.0.W_Q": step, "step/blocks.0.W_K": step}]
            results["runs"][f"{arm}@wd=0.3/{seed}"] = {
                "final": {"test_acc": acc + 0.001 * seed, "train_acc": 0.9},
                "history": history,
            }
    (row,) = regime_rows(results)
    assert row["budget"] == pytest.approx(0.3 * config.task.lr * sum(cifar10.lr_factors(config.task)))
    assert row["gain"].mean_difference == pytest.approx(3.0) and row["freezing_cost"].mean_difference == pytest.approx(
        5.0
    )
    assert row["decay_on_qk"].mean_difference == pytest.approx(1.0)
    assert row["movement_ratio"] == pytest.approx(2.0) and row["starts"] == [0, 1]
    from stiefel_core.findings.long_training import regime_table

    line = regime_table([row]).splitlines()[2]
    assert line.startswith("| 0.3 |") and "+3.00 [" in line and ", 2/2: untested" in line and "2.00x" in line


def test_the_preprints_protocol_reads_every_start_at_the_decay_chosen_on_the_first_three():
    from stiefel_core.experiments import _as_json
    from stiefel_core.findings.long_training import claim_gain, claim_movement, protocol_comparison

    config = get_config("cifar10_long", "full")
    results = grid({0.05: [0.01, 0.02, 0.0], 1.0: [0.03, 0.02, 0.04, 0.01, 0.02]}, seeds=range(5))
    results["config"] = {**_as_json(config), "weight_decays": [0.05, 1.0]}
    for key, run in results["runs"].items():
        run["final"]["train_acc"] = 0.8
        arm = key.split("@")[0]
        run["history"] = [{"step/blocks.0.W_Q": 1.0 if arm == "stiefel" else 3.0}]
    assert protocol_comparison(None) == (None, None)
    decay, c = protocol_comparison(results)
    assert (
        decay == 1.0 and c.n == 5 and c.mean_difference == pytest.approx(2.4)
    )  # chosen on starts 0-2, read on all five
    line = claim_gain(results)
    assert (
        line.startswith("100-epoch protocol at λ = 1 (Σ lr·λ = ")
        and "5 of 12 paired starts: Stiefel − AdamW +2.40 pp" in line
    )
    assert "5/5 (higher)" in line and line.endswith("data size at matched epochs: not yet measured")
    assert "an AdamW step moves W_Q, W_K 3.00x as far as a Stiefel step; Stiefel − frozen untested" in claim_movement(
        results
    )


def test_the_gap_widens_when_the_gain_at_the_largest_size_exceeds_the_smallest_in_pairs():
    from stiefel_core.findings.long_training import claim_gain, widening

    runs = {}
    for seed in range(3):
        for size, gain in ((2_500, 0.01), (10_000, 0.02), (20_000, 0.04 + 0.001 * seed)):
            runs[f"baseline@wd=0.3@n={size}/{seed}"] = {"final": {"test_acc": 0.5}}
            runs[f"stiefel@wd=0.3@n={size}/{seed}"] = {"final": {"test_acc": 0.5 + gain}}
    sizes = {"runs": runs}
    wide = widening(sizes)
    assert (wide["small"], wide["large"], wide["n"], wide["verdict"]) == (2_500, 20_000, 3, "higher")
    assert wide["comparison"].mean_difference == pytest.approx(3.1)
    assert widening(None) is None and widening({"runs": {k: v for k, v in runs.items() if "/0" in k}}) is None
    long = grid({1.0: [0.03, 0.02, 0.04]})
    long["config"] = {**dataclasses.asdict(get_config("cifar10_long", "full")), "weight_decays": [1.0]}
    for run in long["runs"].values():
        run["final"]["train_acc"], run["history"] = 0.8, [{}]
    assert "gain at 20,000 minus gain at 2,500 images (100 epochs each): +3.10 pp" in claim_gain(long, sizes)
    assert claim_gain(long, sizes).endswith("3 starts (widens)")


def test_the_size_table_gives_each_size_its_fit_and_its_gain():
    from stiefel_core.findings.long_training import size_table

    runs = {
        f"{arm}@wd=1@n={n}/{s}": {"final": {"train_acc": 0.9, "test_acc": 0.5 + 0.01 * (arm == "stiefel")}}
        for arm in ("baseline", "stiefel")
        for n in (2_500, 20_000)
        for s in range(3)
    }
    lines = size_table({"runs": runs}).splitlines()
    assert lines[2].startswith("| 2,500 | 1 | 90.0 / 50.0 | 90.0 / 51.0 | 3 | +1.00 [") and lines[3].startswith(
        "| 20,000 |"
    )


def test_the_cifar10_panel_lays_decay_against_size():
    from stiefel_core.findings.long_training import panel_table

    long = grid({0.05: [0.01, 0.02, 0.0], 1.0: [0.03, 0.02, 0.04]})
    long["config"]["task"] = {"train_size": 10_000}
    runs = {f"{arm}@wd=1@n=2500/{s}": {"final": {"test_acc": 0.5}} for arm in ("baseline", "stiefel") for s in range(3)}
    lines = panel_table(long, {"runs": runs}).splitlines()
    assert lines[0] == "| λ | 2,500 images | 10,000 images |"
    assert (
        lines[2].startswith("| 0.05 | - | +1.00 [") and lines[3].startswith("| 1 | +0.00 [") and "+3.00 [" in lines[3]
    )
    assert panel_table(None, None).splitlines()[0] == "| λ |"


def test_the_readings_split_the_decays_by_whether_the_arms_fit_their_training_set():
    from stiefel_core.experiments import _as_json
    from stiefel_core.findings.long_training import readings, readings_text

    config = get_config("cifar10_long", "full")
    results = grid({0.05: [0.01, 0.02, 0.015], 1.0: [-0.01, -0.011, -0.009]})
    results["config"] = {**_as_json(config), "weight_decays": [0.05, 1.0]}
    for key, run in results["runs"].items():
        run["final"]["train_acc"] = 1.0 if "wd=0.05" in key else 0.6
        run["history"] = [{"step/blocks.0.W_Q": 1.0 if key.startswith("stiefel") else 1.5}]
    r = readings(results)
    assert r["fitting"] == {0.05: "higher"} and r["held"] == {1.0: "lower"}
    assert r["protocol"] == (0.05, "higher", 3)  # the larger gap: +1.5 pp against -1.0 pp
    assert r["movement"] == pytest.approx((1.5, 1.5)) and r["freezing"] == {0.05: "untested", 1.0: "untested"}
    text = readings_text(r)
    assert (
        "(train ≥ 95 %): λ = 0.05: higher" in text
        and "below it: λ = 1: lower" in text
        and "3 of 12 starts: higher" in text
    )


def test_a_run_that_changes_a_stated_reading_is_named():
    from stiefel_core.experiments import _as_json
    from stiefel_core.findings.long_training import departures_from_stated

    config = get_config("cifar10_long", "full")
    results = grid({0.05: [0.01, -0.01, 0.0], 0.3: [0.005, -0.002, 0.0], 1.0: [-0.01, -0.011, -0.009]})
    results["config"] = {**_as_json(config), "weight_decays": [0.05, 0.3, 1.0]}
    for key, run in results["runs"].items():
        run["final"]["train_acc"] = 0.6 if "wd=1/" in key else 1.0
        if "wd=1/" in key:
            run["final"]["test_acc"] += 0.1  # the best test accuracy, at the largest decay
        run["history"] = [{"step/blocks.0.W_Q": 1.0 if key.startswith("stiefel") else 1.1}]
    for decay, costs in (
        (0.05, (0.01, -0.01, 0.0)),
        (0.3, (-0.01, -0.012, -0.011)),
        (1.0, (0.01, 0.012, 0.011)),
    ):  # freezing: a tie, a gain, a cost
        for seed, cost in enumerate(costs):
            stiefel = results["runs"][f"stiefel@wd={decay:g}/{seed}"]
            results["runs"][f"frozen@wd={decay:g}/{seed}"] = {
                **stiefel,
                "final": {**stiefel["final"], "test_acc": stiefel["final"]["test_acc"] - cost},
            }
    for decay in (0.05, 0.3, 1.0):  # sparing W_Q, W_K the decay: a tie everywhere
        for seed, change in enumerate((0.01, -0.01, 0.0)):
            base = results["runs"][f"baseline@wd={decay:g}/{seed}"]
            results["runs"][f"no_decay_qk@wd={decay:g}/{seed}"] = {
                **base,
                "final": {**base["final"], "test_acc": base["final"]["test_acc"] + change},
            }
    assert departures_from_stated(results) == []
    for seed in (0, 1, 2):  # the Stiefel rule now gains at λ = 1
        results["runs"][f"stiefel@wd=1/{seed}"]["final"]["test_acc"] += 0.05
    wrong = departures_from_stated(results)
    assert (
        len(wrong) == 2
        and wrong[0].startswith("Stiefel behind where decay holds")
        and "preprint's protocol" in wrong[1]
    )
    for seed in (0, 1, 2):  # frozen frames now trail at λ = 0.3, and sparing W_Q, W_K the decay pays there
        results["runs"][f"frozen@wd=0.3/{seed}"]["final"]["test_acc"] -= 0.05
        results["runs"][f"no_decay_qk@wd=0.3/{seed}"]["final"]["test_acc"] += 0.05
    wrong = departures_from_stated(results)
    assert (
        len(wrong) == 4
        and wrong[2].startswith("Stiefel − frozen above zero")
        and wrong[3].startswith("no decay on W_Q, W_K ties")
    )


def size_sweep(gains: dict[int, list[float]], train: dict[int, float]) -> dict:
    """A size-sweep results file at λ = 1: the Stiefel arm beats the baseline by ``gains[n][seed]``
    at ``n`` images, both arms at final train accuracy ``train[n]``."""
    runs = {}
    for size, per_seed in gains.items():
        for seed, gain in enumerate(per_seed):
            runs[f"baseline@wd=1@n={size}/{seed}"] = {"final": {"train_acc": train[size], "test_acc": 0.5}}
            runs[f"stiefel@wd=1@n={size}/{seed}"] = {"final": {"train_acc": train[size], "test_acc": 0.5 + gain}}
    return {"runs": runs}


def test_the_size_readings_say_where_the_arms_fit_and_whether_the_gap_narrows():
    from stiefel_core.findings.long_training import claim_gain, size_readings, size_readings_text, widening

    sizes = size_sweep({2_500: [0.0, 0.001, -0.001], 20_000: [-0.02, -0.021, -0.019]}, {2_500: 0.96, 20_000: 0.55})
    r = size_readings(sizes)
    assert r == {"gain": {2_500: "tie", 20_000: "lower"}, "fitting_arms": {2_500: 2, 20_000: 0}, "widening": "lower"}
    assert widening(sizes)["differences"] == pytest.approx([-2.0, -2.2, -1.8])
    text = size_readings_text(r)
    assert "2,500 images (2 of 2 arms fit): tie" in text and text.endswith("smallest): lower")
    long = grid({1.0: [0.03, 0.02, 0.04]})
    long["config"] = {**dataclasses.asdict(get_config("cifar10_long", "full")), "weight_decays": [1.0]}
    for run in long["runs"].values():
        run["final"]["train_acc"], run["history"] = 0.8, [{}]
    assert claim_gain(long, sizes).endswith("3 starts (narrows)")
    assert size_readings({"runs": {}}) == {"gain": {}, "fitting_arms": {}, "widening": None}


def test_a_size_run_that_changes_a_stated_reading_is_named(monkeypatch):
    from stiefel_core.findings import long_training

    monkeypatch.setattr(
        long_training,
        "readings",
        lambda results: {  # the long grid as stated
            "fitting": {0.05: "tie", 0.3: "tie"},
            "held": {1.0: "lower"},
            "protocol": (1.0, "lower", 12),
            "movement": (1.0, 1.0),
            "freezing": {0.05: "tie", 0.3: "lower", 1.0: "higher"},
            "decay_on_qk": {0.05: "tie", 0.3: "tie", 1.0: "tie"},
        },
    )
    monkeypatch.setattr(
        long_training,
        "regime_rows",
        lambda results: [
            {"weight_decay": d, "accuracy": {arm: {"test_acc": 50.0 + d} for arm in ("baseline", "stiefel")}}
            for d in (0.05, 0.3, 1.0)
        ],
    )
    train = {2_500: 0.96, 20_000: 0.55}
    stated = size_sweep({2_500: [0.0, 0.001, -0.001], 20_000: [-0.02, -0.021, -0.019]}, train)
    assert long_training.departures_from_stated({}, stated) == []
    assert (
        long_training.departures_from_stated({}, {"runs": {}}) == long_training.departures_from_stated({}, None) == []
    )  # no size run yet
    widens = size_sweep({2_500: [0.0, 0.001, -0.001], 20_000: [0.02, 0.021, 0.019]}, train)
    wrong = long_training.departures_from_stated({}, widens)
    assert (
        len(wrong) == 2
        and wrong[0].startswith("the Stiefel rule ahead at no size")
        and wrong[1].startswith("the gap narrows")
    )
    fits_everywhere = size_sweep(
        {2_500: [0.0, 0.001, -0.001], 20_000: [-0.02, -0.021, -0.019]}, {2_500: 0.96, 20_000: 0.97}
    )
    assert long_training.departures_from_stated({}, fits_everywhere) == [
        "both arms fit at the smallest size, neither at the largest: {2500: 2, 20000: 2}"
    ]
