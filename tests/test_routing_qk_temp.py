"""QK-norm's initial temperature on the routing tasks (issue 52, item 5): the temperature reaches the
model and scales its logits, 1 is the computation every stored run made, a grid of temperatures is
parsed or refused in one error, each temperature's cell sweeps its lr apart and the rule grows the
temperatures past an edge, the judged runs read the (temperature, lr) from the sweep before their
first run (refusing, with the command, until it is settled), and the families read them paired with
the task's judged runs at the declared power. At ci scale."""

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from stiefel_book import families, protocol, results_files
from stiefel_book.__main__ import main
from stiefel_book.arms import key, parse
from stiefel_book.arms.routing_arms import build
from stiefel_book.engine.study import SweepError
from stiefel_book.experiments import routing_qk_temp, run_experiment
from stiefel_book.experiments.routing_qk_temp import (
    SWEEPS,
    TUNED_PROFILES,
    TemperatureStudy,
    TempSweepConfig,
    adopter,
    cell,
    parse_cell,
    resolver,
    temperature_grid,
)
from stiefel_book.experiments.routing_sweep import MQAR_CHECKED_LR, MQAR_PROFILES, task_setting
from stiefel_book.nanogpt import GPTConfig, recording_logits
from stiefel_book.results import load_results, results_path, write_results
from stiefel_book.tasks import routing

RESULTS = Path(__file__).resolve().parents[1] / "book" / "results"
CPU = torch.device("cpu")


# --- the temperature in the model ---------------------------------------------------------------


def test_the_initial_temperature_reaches_every_head_and_scales_the_logits():
    config = MQAR_PROFILES["ci"]
    x = config.batch(4, torch.Generator().manual_seed(0)).x
    peaks = {}
    for t in (None, 1.0, 3.0):
        model = build(config.model(), "qk_norm", 0, qk_temperature=t)
        assert all(torch.equal(a.temperature, torch.full((a.n_head,), t or 1.0)) for a in model.attentions())
        with torch.no_grad(), recording_logits():
            model(x)
        peaks[t] = model.attentions()[0].max_logit.item()  # layer 0 sees the same input at every τ
    assert peaks[None] == peaks[1.0]
    assert peaks[3.0] == pytest.approx(3 * peaks[1.0], rel=1e-5)


def test_a_temperature_is_refused_where_it_means_nothing():
    with pytest.raises(ValueError, match="only QK-norm"):
        build(MQAR_PROFILES["ci"].model(), "stiefel", 0, qk_temperature=3.0)
    for bad in (0.0, -1.0, math.inf, True):
        with pytest.raises(ValueError, match="positive finite"):
            build(GPTConfig(16, 8, qk_temperature=bad), "qk_norm", 0)


def test_temperature_one_is_the_default_run_and_a_run_records_its_temperature():
    config = dataclasses.replace(MQAR_PROFILES["ci"], steps=20, log_every=10, warmup_steps=5)
    default = routing.run_mqar(config, "qk_norm", 0, CPU, progress=False, qk_lr=3e-3)
    one = routing.run_mqar(config, "qk_norm", 0, CPU, progress=False, qk_lr=3e-3, qk_temperature=1.0)
    three = routing.run_mqar(config, "qk_norm", 0, CPU, progress=False, qk_lr=3e-3, qk_temperature=3.0)
    assert one["history"] == default["history"] and "qk_temperature" not in default
    assert (one["qk_temperature"], three["qk_temperature"]) == (1.0, 3.0)
    assert three["history"][0]["temperature/0"] == pytest.approx(3.0, abs=0.05) != one["history"][0]["temperature/0"]


def test_the_run_key_spells_the_temperature_and_reads_back():
    assert key("qk_norm", qk_temperature=3.0, qk_lr=1e-3) == "qk_norm@temp=3@qklr=0.001"
    assert parse("qk_norm@temp=3@qklr=0.001")[1] == {"qk_temperature": 3.0, "qk_lr": 1e-3}
    assert parse("qk_norm_tuned")[0].label


# --- the grid -----------------------------------------------------------------------------------


def test_a_grid_of_temperatures_is_parsed_or_refused_in_one_clear_error():
    assert temperature_grid("1,3,10,30") == temperature_grid([1, 3, 10, 30]) == (1.0, 3.0, 10.0, 30.0)
    for bad in ("1,x", (3, 1), (1, 1), (2,), (), "0", None):
        with pytest.raises(ValueError, match="temperature grid"):
            temperature_grid(bad)
    with pytest.raises(ValueError, match="temperature grid"):
        TempSweepConfig(MQAR_PROFILES["ci"], temperatures=(1.0, 2.0))
    assert parse_cell(cell(0.3)) == 0.3
    for bad in ("qk_norm@temp=2", "stiefel@temp=3", "qk_norm@temp=hot", "qk_norm@wd=3"):
        with pytest.raises(ValueError, match="qk_norm|temperature|number"):
            parse_cell(bad)


# --- the rule, on hand-made sweep files ---------------------------------------------------------

SWEEP = "induction_qk_temp"  # the rule is the same on both tasks; induction sweeps around the task lr 3e-3


def fake(scores: dict[float, dict[float, float]], seeds=(100,)) -> dict:
    """A ``induction_qk_temp`` ci file: each temperature's cell with ``{lr: score}`` on every seed."""
    config = SWEEPS[SWEEP][0]["ci"]
    runs = {
        f"{cell(t)}@qklr={lr:g}/{s}": {"history": [{"epoch": config.task.steps, "val_acc": v}]}
        for t, rungs in scores.items()
        for lr, v in rungs.items()
        for s in seeds
    }
    stored = json.loads(json.dumps(dataclasses.asdict(config)))
    return {"experiment": SWEEP, "profile": "ci", "config": stored, "runs": runs}


def study() -> TemperatureStudy:
    return TemperatureStudy.of(SWEEP, SWEEPS[SWEEP][0]["ci"])


PEAK = {1e-3: 0.2, 3e-3: 0.5, 1e-2: 0.3}  # an interior lr choice, 3e-3


def test_each_temperature_sweeps_its_lr_apart():
    s = study()
    # τ = 1 settled at 1e-3; τ = 3 has only its first rungs, best at its top: only τ = 3 grows
    results = fake({1.0: {3e-4: 0.1, 1e-3: 0.9, 3e-3: 0.2}, 3.0: {1e-3: 0.1, 3e-3: 0.4}})
    assert s.pending(results) == ["qk_norm@temp=3@qklr=0.01"]
    alone = fake({1.0: {3e-4: 0.1, 1e-3: 0.9, 3e-3: 0.2}})
    assert s.chosen(results, cell(1.0)) == s.chosen(alone, cell(1.0))  # τ = 3's runs do not move τ = 1's
    assert s.choice(results) is not None and not s.choice(results)["settled"]
    assert s.pending(results, arms=(cell(1.0),)) == []  # a shard of one cell: that cell's rungs alone


def test_the_temperature_grows_past_an_edge_and_settles_when_interior():
    s = study()
    top = fake({1.0: PEAK, 3.0: {k: v + 0.1 for k, v in PEAK.items()}})  # the largest τ tried is best
    assert s.choice(top)["next"] == (10.0,)
    assert s.pending(top) == ["qk_norm@temp=10@qklr=0.001", "qk_norm@temp=10@qklr=0.003"]
    settled = fake({1.0: PEAK, 3.0: {k: v + 0.1 for k, v in PEAK.items()}, 10.0: PEAK})
    pick = s.choice(settled)
    assert (pick["temperature"], pick["lr"], pick["interior"], pick["settled"]) == (3.0, 3e-3, True, True)
    assert s.pending(settled) == []
    bottom = fake({1.0: {k: v + 0.1 for k, v in PEAK.items()}, 3.0: PEAK})  # the smallest τ is best
    assert s.choice(bottom)["next"] == (0.3,)
    tied = fake({0.3: PEAK, 1.0: PEAK, 3.0: PEAK})  # a flat grid: the τ nearest 1
    assert (s.choice(tied)["temperature"], s.choice(tied)["settled"]) == (1.0, True)
    end = TemperatureStudy.of(SWEEP, dataclasses.replace(SWEEPS[SWEEP][0]["ci"], temperatures=(300.0, 1000.0)))
    at_end = fake({300.0: PEAK, 1000.0: {k: v + 0.1 for k, v in PEAK.items()}})
    assert end.choice(at_end)["next"] == () and end.choice(at_end)["settled"] and not end.choice(at_end)["interior"]


def test_temperature_one_is_adopted_from_the_tasks_lr_sweep(tmp_path):
    config = SWEEPS[SWEEP][0]["ci"]
    source = {"history": [{"epoch": 60, "val_acc": 0.5}], "final": {"val_acc": 0.5}, "qk_lr": 1e-3}
    stored = {"config": {"task": json.loads(json.dumps(dataclasses.asdict(config.task)))}, "runs": {}}
    stored["runs"] = {"qk_norm@qklr=0.001/100": source, "frozen/100": {**source, "qk_lr": 0.0}}
    write_results(stored, results_path("induction_qk_lr", "ci", tmp_path))
    adopt = adopter(SWEEP)
    run, origin = adopt(config, "qk_norm@temp=1@qklr=0.001", 100, tmp_path)
    assert origin == "induction_qk_lr-ci" and run["history"] == source["history"] and run["qk_temperature"] == 1.0
    assert adopt(config, "frozen", 100, tmp_path)[0]["qk_lr"] == 0.0
    assert adopt(config, "qk_norm@temp=3@qklr=0.001", 100, tmp_path) is None  # another computation
    assert adopt(config, "qk_norm@temp=1@qklr=0.003", 100, tmp_path) is None  # not run there
    other = dataclasses.replace(config, task=dataclasses.replace(config.task, steps=61))
    assert adopt(other, "qk_norm@temp=1@qklr=0.001", 100, tmp_path) is None  # another setting


# --- the judged runs ----------------------------------------------------------------------------


def test_the_judged_runs_wait_for_a_settled_sweep_then_run_at_its_choice(tmp_path):
    from stiefel_book.experiments.runner import get_config

    config = get_config("induction_qk_norm_tuned", "ci")
    with pytest.raises(SweepError, match="sweep induction_qk_temp --profile ci"):
        resolver("induction_qk_norm_tuned")(config, tmp_path)
    write_results(fake({1.0: PEAK, 3.0: {k: v + 0.1 for k, v in PEAK.items()}}), results_path(SWEEP, "ci", tmp_path))
    with pytest.raises(SweepError, match="not settled"):  # τ = 3 at the grid's top: 10 is still to sweep
        resolver("induction_qk_norm_tuned")(config, tmp_path)
    settled = fake({1.0: PEAK, 3.0: {k: v + 0.1 for k, v in PEAK.items()}, 10.0: PEAK})
    write_results(settled, results_path(SWEEP, "ci", tmp_path))
    results = run_experiment(
        "induction_qk_norm_tuned", "ci", directory=tmp_path, checkpoints=tmp_path / "ck", progress=False
    )
    assert (results["config"]["qk_temperature"], results["config"]["qk_lr"]) == (3.0, 3e-3)
    run = results["runs"]["qk_norm_tuned/0"]
    assert (run["qk_temperature"], run["qk_lr"]) == (3.0, 3e-3) and math.isfinite(run["final"]["val_loss"])


# task -> (the judged experiment the tuned runs pair with, a stored file made at its setting, where its task sits)
JUDGED = {"mqar": ("mqar_fresh", "mqar_checked_qk_lr-full", "task"), "induction": ("induction", "induction-full", None)}


@pytest.mark.parametrize("task", ["mqar", "induction"])
def test_the_judged_runs_pair_with_the_tasks_judged_runs_apart_from_the_selection_seeds(task):
    from stiefel_book.experiments.runner import EXPERIMENTS

    experiment, stored_file, field = JUDGED[task]
    tuned, judged = TUNED_PROFILES[f"{task}_qk_norm_tuned"]["full"], EXPERIMENTS[experiment].profiles["full"]
    assert task_setting(tuned.task) == task_setting(judged) and tuned.seeds == judged.seeds
    sweep = SWEEPS[f"{task}_qk_temp"][0]["full"]
    assert task_setting(sweep.task) == task_setting(judged) and not set(sweep.seeds) & set(tuned.seeds)
    stored = results_files.read(results_files.find(RESULTS, stored_file))["config"]
    assert task_setting(stored[field] if field else stored) == task_setting(judged)  # runs made at this setting
    family = protocol.family(f"routing_{task}_qk_norm_tuned")
    assert family.judged_seeds == tuned.seeds and family.reads == (f"{experiment}-full",)
    assert set(family.selection_seeds) == set(sweep.seeds) and sweep.temperatures == routing_qk_temp.TEMPERATURES


def test_a_ci_sweep_runs_from_the_command_line_and_settles(tmp_path):
    folders = ["--results", str(tmp_path), "--checkpoints", str(tmp_path / "ck")]
    assert main([*folders, "sweep", SWEEP, "--profile", "ci", "--no-progress"]) == 0
    results = load_results(SWEEP, "ci", tmp_path)
    pick = study().choice(results)
    assert pick["settled"] and {1.0, 3.0} <= set(pick["cells"])
    assert all(run["qk_temperature"] == parse_cell(k.split("@qklr=")[0]) for k, run in results["runs"].items())


# --- the families -------------------------------------------------------------------------------


@pytest.mark.parametrize("task, metric, scale", [("mqar", "val_acc", 100), ("induction", "val_loss", 1)])
def test_the_declared_power_is_what_the_stats_compute_from_the_judged_spread(task, metric, scale):
    from stiefel_book.stats import power

    family = protocol.family(f"routing_{task}_qk_norm_tuned")
    runs = results_files.read(results_files.find(RESULTS, f"{task}-full"))["runs"]

    def sd(a, b):
        return float(
            np.std(
                [scale * (runs[f"{a}/{s}"]["final"][metric] - runs[f"{b}/{s}"]["final"][metric]) for s in range(10)],
                ddof=1,
            )
        )

    spreads = [sd("qk_norm", "baseline"), sd("qk_norm", "stiefel"), sd("stiefel", "baseline")]
    effects = [power.smallest_detectable_effect(10, s, m=2) for s in spreads]
    declared = family.power
    assert declared["value"] == pytest.approx(max(effects), rel=0.03)
    assert declared["range"] == pytest.approx([min(effects), max(effects)], rel=0.03)
    assert declared["equivalence_margin"] == pytest.approx(
        power.smallest_equivalence_margin(10, max(spreads), m=2), rel=0.03
    )
    assert family.correction == "holm" and len(family.pairs) == 2
    assert family.margin == protocol.family(f"routing_{task}").margin


def test_the_family_reads_the_tuned_runs_against_the_tasks_judged_runs(tmp_path):
    runs = results_files.read(results_files.find(RESULTS, "mqar-full"))["runs"]
    # mqar_fresh's seeds 20-29 made up of mqar's runs of seeds 0-9 (the reader only pairs them)
    judged = {
        "config": {},
        "runs": {f"{a}/{20 + s}": runs[f"{a}/{s}"] for a in ("baseline", "stiefel") for s in range(10)},
    }
    tuned = {"config": {}, "runs": {f"qk_norm_tuned/{20 + s}": runs[f"stiefel/{s}"] for s in range(10)}}
    rows = families.read_family(
        "routing_mqar_qk_norm_tuned", {"mqar_qk_norm_tuned-full": tuned, "mqar_fresh-full": judged}
    )
    assert [(r.arm, r.reference, r.n) for r in rows] == [
        ("qk_norm_tuned", "baseline", 10),
        ("qk_norm_tuned", "stiefel", 10),
    ]
    assert rows[1].difference == 0.0  # the same runs as the Stiefel rule's
    assert rows[0].past == (9, 6)  # seeds past 90 %: the Stiefel rule's 9 and AdamW's 6


def test_mqars_sweep_waits_for_its_model_lr_check(tmp_path):
    """MQAR's temperature sweep is made at the model lr mqar_model_lr chose (routing_qk_temp,
    amended): without that check's file it is refused, with the command that makes it."""
    from stiefel_book.experiments.runner import EXPERIMENTS

    entry = EXPERIMENTS["mqar_qk_temp"]
    assert entry.profiles["full"].task.lr == MQAR_CHECKED_LR
    with pytest.raises(ValueError, match="run mqar_model_lr"):
        entry.resolve(entry.profiles["full"], tmp_path)
    assert entry.resolve(entry.profiles["ci"], tmp_path) == entry.profiles["ci"]  # a smaller profile passes
