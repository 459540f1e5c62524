"""CIFAR-10 where decay acts: the decay its 12 paired starts are read at, the data-size sweep at
matched epochs (its arms, its pairing, its choice of decay), and the verdicts of both under their
declared families (four words, Holm within the family, TOST within the margin), on known numbers
and tiny runs."""

import dataclasses
from types import SimpleNamespace

import pytest

from stiefel_book.experiments import EXPERIMENTS, cifar10_size, get_config, run_experiment
from stiefel_book.findings import cifar10_family, long_sizes, long_training
from stiefel_book.findings.long_training import largest_gap_decay, paired_gain_at, parse_size_arm, size_arm, size_gains
from stiefel_book.stats import VERDICTS
from stiefel_book.wording.cifar10 import departures_from_stated

from tiny import TINY

FAMILY = SimpleNamespace(margin=0.5, alpha=0.05)  # the CIFAR-10 margin (pp) and α of cifar10_long and cifar10_size


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
    with pytest.raises(ValueError, match="run `python -m stiefel_book run cifar10_long --profile full` first"):
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
    from stiefel_book.experiments import _as_json
    from stiefel_book.findings.long_training import regime_rows
    from stiefel_book.tasks.cifar10_config import lr_factors
    from stiefel_book.wording.long_training import regime_table

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
    assert row["budget"] == pytest.approx(0.3 * config.task.lr * sum(lr_factors(config.task)))
    assert row["gain"].mean_difference == pytest.approx(3.0) and row["freezing_cost"].mean_difference == pytest.approx(
        5.0
    )
    assert row["decay_on_qk"].mean_difference == pytest.approx(1.0)
    assert row["movement_ratio"] == pytest.approx(2.0) and row["starts"] == [0, 1]
    line = regime_table([row]).splitlines()[2]  # no family: numbers and wins, no verdict
    assert line.startswith("| 0.3 |") and "+3.00 [" in line and ", 2/2 |" in line and "2.00x" in line
    assert not any(word in line for word in (*VERDICTS, "tie"))


def long_grid(config_decays=(0.05, 1.0)) -> dict:
    """A long grid whose verdicts are known: at λ = 1, twelve starts within ±0.2 pp of each other
    around zero (equivalent within ±0.5 pp), frozen frames 2 pp behind the Stiefel rule by a
    spread of 0.1 pp (higher); at λ = 0.05, three starts at +1, -1, 0 pp (inconclusive), frozen
    frames equal to the Stiefel rule in every start (equivalent)."""
    from stiefel_book.experiments import _as_json

    at_one = [0.002, -0.001, 0.001, -0.001, 0.001, -0.002, 0.002, 0.0, 0.0005, -0.0005, -0.001, -0.001]
    results = grid({0.05: [0.01, -0.01, 0.0], 1.0: at_one}, seeds=range(12))
    results["config"] = {**_as_json(get_config("cifar10_long", "full")), "weight_decays": list(config_decays)}
    for key, run in list(results["runs"].items()):
        run["final"]["train_acc"] = 1.0 if "wd=0.05" in key else 0.6
        run["history"] = [{"step/blocks.0.W_Q": 1.0 if key.startswith("stiefel") else 1.1}]
        if key.startswith("stiefel") and key.split("/")[1] in "012":
            seed = int(key.split("/")[1])
            cost = 0.02 + 0.001 * (seed - 1) if "wd=1/" in key else 0.0
            results["runs"][key.replace("stiefel", "frozen")] = {
                **run,
                "final": {**run["final"], "test_acc": run["final"]["test_acc"] - cost},
            }
    return results


def test_the_long_family_reads_equivalent_and_inconclusive_where_the_numbers_say_so():
    results = long_grid()
    rows = cifar10_family.long_family(results, FAMILY)
    assert all(r["verdict"] in VERDICTS for r in rows)
    cells = long_training.long_cells(rows)
    every = cells[("gain", 1.0)]
    assert every["key"] == ("stiefel", "baseline", 1.0, "every start") and every["n"] == 12
    assert every["verdict"] == "equivalent"  # twelve starts within ±0.2 pp: inside ±0.5 pp
    assert cells[("gain", 0.05)]["verdict"] == "inconclusive"  # three starts at +1, -1, 0 pp
    assert cells[("freezing_cost", 1.0)]["verdict"] == "higher"
    assert cells[("freezing_cost", 0.05)]["verdict"] == "equivalent"  # frozen = Stiefel in every start
    assert ("decay_on_qk", 1.0) not in cells  # no such arm ran
    from stiefel_book.wording.long_training import regime_table

    line = regime_table(long_training.regime_rows(results), rows).splitlines()[3]
    assert line.startswith("| 1 |") and ", 12 starts, Holm TOST p = " in line and ": equivalent |" in line
    assert ": higher |" in line and line.count(" | - |") == 1  # the missing control reads "-"


def test_the_preprints_protocol_reads_every_start_at_the_decay_chosen_on_the_first_three():
    from stiefel_book.experiments import _as_json
    from stiefel_book.findings.long_training import protocol_comparison

    config = get_config("cifar10_long", "full")
    results = grid({0.05: [0.01, 0.02, 0.0], 1.0: [0.03, 0.02, 0.04, 0.01, 0.02]}, seeds=range(5))
    results["config"] = {**_as_json(config), "weight_decays": [0.05, 1.0]}
    assert protocol_comparison(None) == (None, None)
    decay, c = protocol_comparison(results)
    assert (
        decay == 1.0 and c.n == 5 and c.mean_difference == pytest.approx(2.4)
    )  # chosen on starts 0-2, read on all five
    (first,) = [r for r in cifar10_family.long_family(results, FAMILY) if r["key"][3] == "every start"]
    assert first["key"][2] == 1.0 and first["n"] == 5 and first["verdict"] == "higher"


def size_sweep(gains: dict[int, list[float]], train: dict[int, float]) -> dict:
    """A size-sweep results file at λ = 1: the Stiefel arm beats the baseline by ``gains[n][seed]``
    at ``n`` images, both arms at final train accuracy ``train[n]``."""
    runs = {}
    for size, per_seed in gains.items():
        for seed, gain in enumerate(per_seed):
            runs[f"baseline@wd=1@n={size}/{seed}"] = {"final": {"train_acc": train[size], "test_acc": 0.5}}
            runs[f"stiefel@wd=1@n={size}/{seed}"] = {"final": {"train_acc": train[size], "test_acc": 0.5 + gain}}
    return {"runs": runs}


def test_the_gap_widens_when_the_family_reads_the_gain_at_the_largest_size_higher():
    runs = {}
    for seed in range(3):
        for size, gain in ((2_500, 0.01), (10_000, 0.02), (20_000, 0.04 + 0.001 * seed)):
            runs[f"baseline@wd=0.3@n={size}/{seed}"] = {"final": {"test_acc": 0.5, "train_acc": 0.9}}
            runs[f"stiefel@wd=0.3@n={size}/{seed}"] = {"final": {"test_acc": 0.5 + gain, "train_acc": 0.9}}
    sizes = {"runs": runs}
    wide = long_sizes.widening(sizes)
    assert (wide["small"], wide["large"], wide["n"]) == (2_500, 20_000, 3) and "verdict" not in wide
    assert wide["comparison"].mean_difference == pytest.approx(3.1)
    assert long_sizes.widening(None) is None
    assert long_sizes.widening({"runs": {k: v for k, v in runs.items() if "/0" in k}}) is None
    rows = cifar10_family.size_family(sizes, FAMILY)
    assert [r["key"] for r in rows] == [("widening",), ("gain", 2_500), ("gain", 10_000), ("gain", 20_000)]
    assert long_sizes.size_readings(sizes, rows)["widening"] == "higher"


def test_the_readings_split_the_decays_by_whether_the_arms_fit_their_training_set():
    results = long_grid()
    r = long_training.readings(results, cifar10_family.long_family(results, FAMILY))
    assert r["fitting"] == {0.05: "inconclusive"} and r["held"] == {1.0: "equivalent"}
    assert r["protocol"] == (1.0, "equivalent", 12)
    assert r["movement"] == pytest.approx((1.1, 1.1))
    assert r["freezing_cost"] == {0.05: "equivalent", 1.0: "higher"}
    assert r["decay_on_qk"] == {0.05: "not yet run", 1.0: "not yet run"}


def stated_grid() -> dict:
    """A long grid as the chapters state it: both arms fit at two decays with the gain
    inconclusive there; at λ = 1 they do not fit, the Stiefel rule is behind over 12 starts, both
    reach their best test accuracy; the cost of freezing and decay on W_Q, W_K inconclusive everywhere."""
    from stiefel_book.experiments import _as_json

    behind = [-0.01, -0.011, -0.009, -0.01, -0.012, -0.008, -0.01, -0.011, -0.009, -0.01, -0.01, -0.01]
    results = grid({0.05: [0.01, -0.01, 0.0], 0.3: [0.005, -0.002, 0.0], 1.0: behind}, seeds=range(12))
    results["config"] = {**_as_json(get_config("cifar10_long", "full")), "weight_decays": [0.05, 0.3, 1.0]}
    for key, run in list(results["runs"].items()):
        run["final"]["train_acc"] = 0.6 if "wd=1/" in key else 1.0
        if "wd=1/" in key:
            run["final"]["test_acc"] += 0.1  # the best test accuracy, at the largest decay
        run["history"] = [{"step/blocks.0.W_Q": 1.0 if key.startswith("stiefel") else 1.1}]
    for decay in (0.05, 0.3, 1.0):  # freezing and sparing W_Q, W_K the decay: +1, -1, 0 pp
        for seed, change in enumerate((0.01, -0.01, 0.0)):
            for arm, against in (("frozen", "stiefel"), ("no_decay_qk", "baseline")):
                base = results["runs"][f"{against}@wd={decay:g}/{seed}"]
                results["runs"][f"{arm}@wd={decay:g}/{seed}"] = {
                    **base,
                    "final": {**base["final"], "test_acc": base["final"]["test_acc"] + change},
                }
    return results


def departures(results, sizes=None):
    long_rows = cifar10_family.long_family(results, FAMILY)
    size_rows = cifar10_family.size_family(sizes, FAMILY)
    return departures_from_stated(results, long_rows, sizes, size_rows)


def test_a_run_that_changes_a_stated_reading_is_named():
    results = stated_grid()
    assert departures(results) == []
    for seed in range(12):  # the Stiefel rule now gains at λ = 1
        results["runs"][f"stiefel@wd=1/{seed}"]["final"]["test_acc"] += 0.05
    wrong = departures(results)
    assert len(wrong) == 2 and "behind" in wrong[0] and "12 starts" in wrong[1]
    results = stated_grid()
    for seed in (0, 1, 2):  # frozen frames now trail at λ = 0.3 by 5 pp in every start: decided
        results["runs"][f"frozen@wd=0.3/{seed}"]["final"]["test_acc"] = (
            results["runs"][f"stiefel@wd=0.3/{seed}"]["final"]["test_acc"] - 0.05 - 0.001 * seed
        )
    wrong = departures(results)
    assert len(wrong) == 1 and "0.3: 'higher'" in wrong[0]


def test_the_size_readings_say_where_the_arms_fit_and_whether_the_gap_narrows():
    sizes = size_sweep({2_500: [0.0, 0.001, -0.001], 20_000: [-0.02, -0.021, -0.019]}, {2_500: 0.96, 20_000: 0.55})
    rows = cifar10_family.size_family(sizes, FAMILY)
    r = long_sizes.size_readings(sizes, rows)
    assert r == {  # at 2,500 images three starts within ±0.1 pp of zero: inside ±0.5 pp
        "gain": {2_500: "equivalent", 20_000: "lower"},
        "fitting_arms": {2_500: 2, 20_000: 0},
        "widening": "lower",
    }
    assert long_sizes.widening(sizes)["differences"] == pytest.approx([-2.0, -2.2, -1.8])
    assert long_sizes.size_readings({"runs": {}}, []) == {"gain": {}, "fitting_arms": {}, "widening": None}


def test_a_size_run_that_changes_a_stated_reading_is_named():
    results = stated_grid()
    train = {2_500: 0.96, 20_000: 0.55}
    stated = size_sweep({2_500: [0.0, 0.001, -0.001], 20_000: [-0.02, -0.021, -0.019]}, train)
    assert departures(results, stated) == []
    assert departures(results, {"runs": {}}) == departures(results, None) == []  # no size run yet
    widens = size_sweep({2_500: [0.0, 0.001, -0.001], 20_000: [0.02, 0.021, 0.019]}, train)
    wrong = departures(results, widens)
    assert len(wrong) == 2 and "at no size" in wrong[0] and "narrows" in wrong[1]
    fits_everywhere = size_sweep(
        {2_500: [0.0, 0.001, -0.001], 20_000: [-0.02, -0.021, -0.019]}, {2_500: 0.96, 20_000: 0.97}
    )
    wrong = departures(results, fits_everywhere)
    assert len(wrong) == 1 and wrong[0].endswith("{2500: 2, 20000: 2}")
