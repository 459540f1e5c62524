"""The tuning budget's engine (experiments.lr_sensitivity) and its findings (findings.lr_sensitivity)."""

import dataclasses
import math

import pytest
import torch

from stiefel_book import experiments
from stiefel_book.experiments import decay_sensitivity, lr_sensitivity, run_experiment
from stiefel_book.findings import lr_sensitivity as ls
from stiefel_book.nanogpt import GPT, GPTConfig, recording_logits
from stiefel_book.results import load_results
from stiefel_book.results_reading import parse_grid_arm

NAME = "induction_lr_sensitivity"


def test_the_ci_profile_runs_end_to_end_logs_logits_and_a_rerun_resumes(tmp_path, monkeypatch):
    folders = dict(directory=tmp_path, checkpoints=tmp_path / "ck", progress=False)
    arms = ["baseline@lr=0.001", "stiefel@lr=0.1"]
    results = run_experiment(NAME, "ci", arms=arms[:1], **folders)
    assert sorted(results["runs"]) == ["baseline@lr=0.001/200"]
    first = results["runs"]["baseline@lr=0.001/200"]
    results = run_experiment(NAME, "ci", arms=arms, **folders)  # resumes: the first run is kept as it was
    assert results["runs"]["baseline@lr=0.001/200"] == first
    config = results["config"]
    for arm, lr in (("baseline", 1e-3), ("stiefel", 1e-1)):
        run = results["runs"][f"{arm}@lr={lr:g}/200"]
        assert run["model_lr"] == lr
        assert run["qk_lr"] == pytest.approx(lr * 1e-2 / config["tuned_at"])  # the arm's ratio kept
        assert run["initial_loss"] == pytest.approx(math.log(config["task"]["vocab_size"]))
        assert run["history"][-1]["epoch"] == config["task"]["steps"]
        for record in run["history"]:
            assert {"max_logit/0", "max_logit/1"} <= set(record)
    calls = []
    experiment = experiments.EXPERIMENTS[NAME]
    monkeypatch.setitem(experiments.EXPERIMENTS, NAME, dataclasses.replace(experiment, run=lambda *a: calls.append(a)))
    run_experiment(NAME, "ci", arms=arms, **folders)
    assert calls == []
    assert load_results(NAME, "ci", tmp_path)["runs"] == results["runs"]


def test_a_rate_off_the_declared_ladder_or_an_unknown_arm_is_refused(tmp_path):
    folders = dict(directory=tmp_path, checkpoints=tmp_path / "ck", progress=False)
    with pytest.raises(ValueError, match="unknown arm"):
        run_experiment(NAME, "ci", arms=["baseline@lr=0.002"], **folders)
    config = experiments.get_config(NAME, "ci")
    run = experiments.EXPERIMENTS[NAME].run
    with pytest.raises(ValueError, match="not a declared rung"):
        run(config, "baseline@lr=0.0003", 200, torch.device("cpu"))
    with pytest.raises(ValueError, match="expected"):
        run(config, "frozen@lr=0.001", 200, torch.device("cpu"))


def test_the_full_profiles_read_each_arms_ratio_from_the_committed_sweeps():
    declared = {  # book/protocol.yml: the sweeps' choices over the task's lr
        "charlm_lr_sensitivity": {"baseline": 10, "muon": 10, "stiefel": 10, "qk_norm": 30},
        "induction_lr_sensitivity": {"baseline": 10, "muon": 10, "stiefel": 10 / 3, "qk_norm": 1},
    }
    for name, ratios in declared.items():
        config = experiments.EXPERIMENTS[name].resolve(experiments.get_config(name, "full"), None)
        assert config.rungs == (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1) and config.seeds == (200, 201, 202)
        assert {arm: config.qk_lr(arm, 1.0) for arm in config.arms} == pytest.approx(ratios)


def test_logits_are_recorded_only_inside_the_context_and_are_the_largest_pre_softmax_entry():
    torch.manual_seed(0)
    model = GPT(GPTConfig(16, 8, 1, 2, 8, mlp=False))
    x = torch.randint(16, (3, 8))
    model(x)
    attn = model.attentions()[0]
    assert attn.max_logit is None
    seen = {}
    attn.c_attn.register_forward_hook(lambda m, i, out: seen.update(qkv=out.detach()))
    with recording_logits():
        model(x)
    q, k, _ = seen["qkv"].split(8, dim=2)
    q, k = (t.view(3, 8, 2, 4).transpose(1, 2) for t in (q, k))
    logits = (q @ k.transpose(-2, -1) / 2.0).masked_fill(~torch.ones(8, 8, dtype=torch.bool).tril(), -math.inf)
    assert attn.max_logit.item() == pytest.approx(logits.max().item(), rel=1e-6)


def _results(losses: dict, initial: float = 5.0, logits: dict | None = None) -> dict:
    """A hand-made results file: ``losses[arm][lr] = [loss per seed 200, 201, ...]``."""
    runs = {}
    for arm, by_lr in losses.items():
        for lr, values in by_lr.items():
            for i, loss in enumerate(values):
                peak = (logits or {}).get((arm, lr), 1.0)
                history = [{"epoch": 1, "max_logit/0": peak / 2, "max_logit/1": 0.5}, {"epoch": 2, "max_logit/0": peak}]
                run = {"final": {"val_loss": loss}, "initial_loss": initial, "history": history}
                runs[f"{arm}@lr={lr:g}/{200 + i}"] = run
    rungs = sorted({lr for by_lr in losses.values() for lr in by_lr})
    seeds = [200 + i for i in range(max(len(v) for by_lr in losses.values() for v in by_lr.values()))]
    config = {"arms": ["baseline", "stiefel"], "metric": "val_loss", "rungs": rungs, "seeds": seeds}
    return {"config": {**config, "task": {"lr": 1e-3}}, "runs": runs}


def test_sensitivity_scores_a_diverged_run_at_the_initial_loss_and_gives_a_t_interval():
    # seed 200: losses 4, 3, nan (diverged -> 5): mean 4 - best 3 = 1; seed 201: 6 (capped at 5), 2, 3: 10/3 - 2
    results = _results({"stiefel": {1e-4: [4.0, 6.0], 1e-3: [3.0, 2.0], 1e-2: [math.nan, 3.0]}})
    s = ls.sensitivity(results, "stiefel")
    assert s.per_seed == pytest.approx({200: 1.0, 201: 4 / 3})
    assert s.mean == pytest.approx(7 / 6)
    half = 12.706 * (math.sqrt(2) * (1 / 6)) / math.sqrt(2)  # t(0.975, 1) x sd / sqrt(n)
    assert (s.low, s.high) == pytest.approx((7 / 6 - half, 7 / 6 + half), rel=1e-3)
    assert ls.scores(results, "stiefel")[1e-2] == {200: 5.0, 201: 3.0}


def test_a_seed_missing_a_rung_does_not_count_and_none_is_refused():
    results = _results({"stiefel": {1e-4: [4.0, 4.0], 1e-3: [3.0, 2.0]}})
    del results["runs"]["stiefel@lr=0.001/201"]
    assert set(ls.sensitivity(results, "stiefel").per_seed) == {200}
    assert math.isnan(ls.sensitivity(results, "stiefel").low)
    del results["runs"]["stiefel@lr=0.001/200"]
    with pytest.raises(ValueError, match="every rung"):
        ls.sensitivity(results, "stiefel")


def test_the_model_lr_check_moves_only_to_an_interior_rung_better_by_more_than_the_margin():
    base = {1e-4: [4.0, 4.0], 1e-3: [3.0, 3.1], 1e-2: [2.9, 2.9], 1e-1: [math.nan, 9.0]}
    check = ls.model_lr_check(_results({"baseline": base}), margin=0.02)
    assert check["best"] == 1e-2 and check["interior"] and check["moves"] and check["lr"] == 1e-2
    assert check["gain"] == pytest.approx(0.15)
    assert check["means"][1e-1] == 5.0  # diverged and above-initial runs score the initial loss
    assert not ls.model_lr_check(_results({"baseline": base}), margin=0.2)["moves"]  # within the margin: stays
    edge = {**base, 1e-1: [2.0, 2.0]}
    check = ls.model_lr_check(_results({"baseline": edge}), margin=0.02)
    assert check["best"] == 1e-1 and not check["interior"] and check["lr"] == 1e-3
    unfinished = _results({"baseline": base})
    del unfinished["runs"]["baseline@lr=0.0001/201"]
    with pytest.raises(ValueError, match="missing"):
        ls.model_lr_check(unfinished, margin=0.02)


def test_costs_are_each_values_mean_minus_the_best_over_the_values_every_seed_ran():
    results = _results({"stiefel": {1e-3: [3.0, 3.2], 1e-2: [2.0, 2.2], 3e-2: [math.nan, 2.5]}})
    del results["runs"]["stiefel@lr=0.03/201"]  # a value not every seed has run does not count
    out = ls.costs(results, "stiefel")
    assert out["best_at"] == 1e-2 and out["best"] == pytest.approx(2.1)
    assert out["cost"] == {1e-3: pytest.approx(1.0), 1e-2: 0.0}
    with pytest.raises(ValueError, match="'baseline'"):
        ls.costs({**results, "runs": {}}, "baseline")


def test_off_best_is_the_loss_some_rungs_under_and_over_the_best_rung_minus_the_best():
    losses = {
        1e-4: [4.0, 4.2],
        3e-4: [3.5, 3.5],
        1e-3: [3.0, 3.2],
        3e-3: [2.0, 2.2],
        1e-2: [2.5, 2.5],
        3e-2: [math.nan, 9.0],
    }
    results = _results({"stiefel": losses})
    off = ls.off_best(results, "stiefel")  # a decade: two rungs
    assert off["best_lr"] == 3e-3 and off["best"] == pytest.approx(2.1)
    assert off["below"] == pytest.approx(1.4)  # 3e-4, a decade under 3e-3: 3.5 - 2.1
    assert off["above"] == pytest.approx(2.9)  # 3e-2: diverged and above-initial runs score the initial loss, 5
    assert ls.off_best(results, "stiefel", steps=1)["below"] == pytest.approx(1.0)  # 1e-3: 3.1 - 2.1
    edge = ls.off_best(results, "stiefel", steps=3)
    assert math.isnan(edge["above"]) and edge["below"] == pytest.approx(2.0)  # 1e-4: 4.1 - 2.1; none 3 rungs above
    with pytest.raises(ValueError, match="positive"):
        ls.off_best(results, "stiefel", steps=0)


def test_logit_peaks_take_the_largest_finite_logit_over_layers_and_records():
    results = _results({"baseline": {1e-3: [3.0], 1e-1: [math.nan]}}, logits={("baseline", 1e-3): 7.0})
    results["runs"]["baseline@lr=0.1/200"]["history"][1]["max_logit/0"] = math.inf
    peaks = ls.logit_peaks(results, "baseline")
    assert peaks == {1e-3: {200: 7.0}, 1e-1: {200: 0.5}}
    assert math.isnan(ls.logit_peak({"history": [{"epoch": 1}]}))


def test_the_engine_has_one_entry_per_sensitivity_task_and_per_model_lr_check():
    names = {e.name for e in (*lr_sensitivity.ENTRIES, *decay_sensitivity.ENTRIES)}
    checks = {"charlm_long_model_lr", "grokking_model_lr", "mqar_model_lr", "cifar10_model_lr", "grokking_p97_model_lr"}
    sweeps = {f"{task}_{over}_sensitivity" for task in lr_sensitivity.SENSITIVITY for over in ("lr", "decay")}
    assert names == sweeps | checks


def test_every_model_lr_check_is_declared_before_its_runs():
    from stiefel_book.protocol import load

    sweeps = load().sweeps
    for check in lr_sensitivity.CHECKS:
        entry = sweeps[check.name]
        assert f"before any run of {check.name}" in entry["declared"]
        assert list(entry["seeds"]) == list(check.seeds)
        assert entry.get("margin", 0) > 0 or "ties within" in entry["choice"]


def test_the_grokking_check_keeps_adamw_at_its_tuned_ratio(tmp_path):
    """W_Q, W_K's lr follows the model lr at grokking_qk_lr's ratio for AdamW, read from the sweep's file."""
    from stiefel_book.experiments import EXPERIMENTS, get_config

    entry, config = EXPERIMENTS["grokking_model_lr"], get_config("grokking_model_lr", "full")
    assert config.task.p == 31 and config.seeds == (100, 101, 102, 103, 104)
    with pytest.raises(ValueError, match="no W_Q, W_K lr sweep"):
        entry.resolve(config, tmp_path)
    resolved = entry.resolve(config)  # the committed sweep
    assert resolved.qk_lr("baseline", resolved.tuned_at) == dict(resolved.qk_lrs)["baseline"]
    assert resolved.qk_lr("baseline", 10 * resolved.tuned_at) == pytest.approx(10 * dict(resolved.qk_lrs)["baseline"])


def _check_file(means: dict[float, list[float]], lr: float = 3e-3) -> dict:
    runs = {
        f"baseline@lr={rung}/{seed}": {"history": [{"epoch": e, "val_acc": acc} for e in (80, 100)]}
        for rung, accs in means.items()
        for seed, acc in zip((100, 101), accs)
    }
    task = {"lr": lr, "epochs": 100}
    return {"config": {"metric": "val_acc", "task": task, "seeds": [100, 101], "rungs": list(ls_rungs())}, "runs": runs}


def ls_rungs():
    return lr_sensitivity.RUNGS


def test_the_ladder_check_moves_only_past_the_margin_and_grows_at_an_edge():
    read = ls.ladder_check
    # best interior at 1e-2, 5 pp over the task's 3e-3: moves
    out = read(_check_file({1e-3: [0.7, 0.7], 3e-3: [0.9, 0.9], 1e-2: [0.95, 0.95], 3e-2: [0.5, 0.5]}), 0.02)
    assert out["best"] == 1e-2 and out["interior"] and out["moves"] and out["lr"] == 1e-2
    assert out["gain"] == pytest.approx(0.05)
    # within the margin: stays
    out = read(_check_file({1e-3: [0.7, 0.7], 3e-3: [0.9, 0.9], 1e-2: [0.91, 0.91], 3e-2: [0.5, 0.5]}), 0.02)
    assert out["best"] == 1e-2 and not out["moves"] and out["lr"] == 3e-3
    # best at the top of the rungs run: the grid grows, nothing moves yet
    out = read(_check_file({1e-3: [0.7, 0.7], 3e-3: [0.8, 0.8], 1e-2: [0.9, 0.9], 3e-2: [0.95, 0.95]}), 0.02)
    assert out["grow"] == (1e-1,) and not out["interior"] and not out["moves"]
    with pytest.raises(ValueError, match="task's lr"):
        read(_check_file({1e-3: [0.7, 0.7], 1e-2: [0.9, 0.9]}), 0.02)


def test_the_long_check_runs_adamw_at_the_declared_length_rungs_and_ratio():
    """charlm_long_model_lr (book/protocol.yml): AdamW alone over 4,500 steps on selection seeds 100-102,
    four rungs first and the ladder's others on demand, W_Q, W_K at 10x the model lr."""
    from stiefel_book.experiments import EXPERIMENTS, get_config

    entry, config = EXPERIMENTS["charlm_long_model_lr"], get_config("charlm_long_model_lr", "full")
    assert config.task.steps == 4500 and config.seeds == (100, 101, 102) and config.arms == ("baseline",)
    assert [parse_grid_arm(a, "lr", ("baseline",))[1] for a in entry.default_arms(config)] == [1e-3, 3e-3, 1e-2, 3e-2]
    assert {parse_grid_arm(a, "lr", ("baseline",))[1] for a in entry.optional_arms} == {1e-4, 3e-4, 1e-1}
    assert config.qk_lr("baseline", 3e-3) == pytest.approx(3e-2)
    with pytest.raises(ValueError, match="no tuned"):
        config.qk_lr("stiefel", 3e-3)


def test_the_long_choice_takes_the_smaller_lr_within_the_ties_and_grows_at_an_edge():
    """charlm_long_model_lr's rule: the lowest mean final loss, ties within 0.02 to the smaller lr."""

    def file(means: dict[float, float]) -> dict:
        runs = {f"baseline@lr={lr}/100": {"history": [{"step": 10, "val_bpc": v}]} for lr, v in means.items()}
        config = {"metric": "val_bpc", "task": {"lr": 1e-3, "steps": 10}, "seeds": [100], "rungs": list(ls_rungs())}
        return {"config": config, "runs": runs}

    out = ls.ladder_choice(file({1e-3: 2.50, 3e-3: 2.43, 1e-2: 2.42, 3e-2: 2.58}), 0.02)
    assert out["lr"] == 3e-3 and out["interior"] and out["means"][1e-2] == pytest.approx(2.42)
    out = ls.ladder_choice(file({1e-3: 2.50, 3e-3: 2.45, 1e-2: 2.40, 3e-2: 2.38}), 0.02)
    assert out["grow"] == (1e-1,) and not out["interior"]
    assert ls.ladder_choice({"config": file({})["config"], "runs": {}}, 0.02)["lr"] is None


def test_the_cifar10_check_chooses_on_held_out_images_at_adamws_tuned_ratio():
    """cifar10_model_lr: λ = 1, the validation split, W_Q, W_K at cifar10_qk_lr's 1x for AdamW."""
    from stiefel_book.choices import cell_choices
    from stiefel_book.experiments import get_config

    config = get_config("cifar10_model_lr", "full")
    assert config.task.val_size == 10_000 and config.task.weight_decay == 1.0 and config.seeds == (100, 101, 102)
    sweep = load_results("cifar10_qk_lr", "full")
    assert config.qk_lr("baseline", config.tuned_at) == cell_choices(sweep, ["baseline"], 1.0)["baseline"]["lr"]


# --- the tuning budget over weight decay (charlm_decay_sensitivity, induction_decay_sensitivity) ------------

DECAY = "induction_decay_sensitivity"


def _source(tmp_path, losses: dict, qk_ratio: float = 10.0) -> dict:
    """``induction_lr_sensitivity-full`` in ``tmp_path``, hand-made on the full task: ``losses[arm][lr]``."""
    from stiefel_book.experiments import _as_json
    from stiefel_book.results import results_path, write_results

    results = _results(losses)
    results["config"]["task"] = _as_json(experiments.get_config(DECAY, "full").task)
    for key, run in results["runs"].items():
        run["qk_lr"] = parse_grid_arm(key.split("/")[0], "lr", ("baseline", "stiefel"))[1] * qk_ratio
    write_results(results, results_path("induction_lr_sensitivity", "full", tmp_path))
    return results


def test_an_arm_runs_its_decays_at_its_best_rung_and_adopts_the_tasks_own_decay(tmp_path, monkeypatch):
    losses = {"stiefel": {1e-3: [3.0, 3.2, 3.1], 3e-3: [2.0, 2.6, 2.1], 1e-2: [2.5, 2.4, 2.3]}}
    source = _source(tmp_path, losses)
    config = dataclasses.replace(experiments.get_config(DECAY, "full"), seeds=(200,))
    lr, qk_lr, _ = decay_sensitivity.at_best(config, "stiefel", tmp_path)
    assert (lr, qk_lr) == (3e-3, pytest.approx(3e-2))  # lowest mean over the seeds, not the best single run
    seen = []

    def fake_run(task, arm, seed, device, checkpoint, progress, *, qk_lr):
        seen.append((arm, task.lr, task.weight_decay, qk_lr))
        return {"final": {"val_loss": 1.0}, "history": [{"epoch": task.steps, "val_loss": 1.0}]}

    task = dataclasses.replace(lr_sensitivity.TASKS["induction"], run=fake_run)
    monkeypatch.setitem(lr_sensitivity.TASKS, "induction", task)
    monkeypatch.setenv("STIEFEL_RESULTS", str(tmp_path))
    experiment = dataclasses.replace(experiments.EXPERIMENTS[DECAY], run=decay_sensitivity.decay_runner(task))
    monkeypatch.setitem(experiments.EXPERIMENTS, DECAY, experiment)
    folders = dict(directory=tmp_path, checkpoints=tmp_path / "ck", progress=False, config=config)
    results = run_experiment(DECAY, "full", arms=["stiefel@wd=0", "stiefel@wd=0.1"], **folders)
    assert seen == [("stiefel", 3e-3, 0.0, pytest.approx(3e-2))]  # λ = 0.1 is not rerun
    made, adopted = results["runs"]["stiefel@wd=0/200"], results["runs"]["stiefel@wd=0.1/200"]
    initial = math.log(config.task.vocab_size)
    assert (made["model_lr"], made["weight_decay"], made["initial_loss"]) == (3e-3, 0.0, pytest.approx(initial))
    assert adopted["final"] == source["runs"]["stiefel@lr=0.003/200"]["final"] and adopted["weight_decay"] == 0.1
    assert adopted["provenance"]["adopted_from"] == "induction_lr_sensitivity-full"


def test_a_best_rung_is_read_only_from_a_complete_ladder_of_the_same_task(tmp_path):
    losses = {"stiefel": {1e-3: [3.0, 3.2, 3.1], 3e-3: [2.0, 2.6, 2.1]}}
    source = _source(tmp_path, losses)
    config = experiments.get_config(DECAY, "full")
    from stiefel_book.engine.study import SweepError
    from stiefel_book.results import results_path, write_results

    with pytest.raises(SweepError, match="every rung of 'baseline'.*run `python -m stiefel_book run"):
        decay_sensitivity.at_best(config, "baseline", tmp_path)
    del source["runs"]["stiefel@lr=0.003/202"]
    write_results(source, results_path("induction_lr_sensitivity", "full", tmp_path))
    with pytest.raises(SweepError, match="every rung of 'stiefel'"):
        decay_sensitivity.at_best(config, "stiefel", tmp_path)
    with pytest.raises(SweepError, match="--arms manifold_muon@lr=0.0001"):  # an added arm is named in the command
        decay_sensitivity.at_best(config, "manifold_muon", tmp_path)
    source = _source(tmp_path, losses)
    source["config"]["task"]["steps"] += 1
    write_results(source, results_path("induction_lr_sensitivity", "full", tmp_path))
    with pytest.raises(SweepError, match="another task"):
        decay_sensitivity.at_best(config, "stiefel", tmp_path)


def test_the_decay_ci_profile_runs_end_to_end_at_its_fixed_rates(tmp_path):
    folders = dict(directory=tmp_path, checkpoints=tmp_path / "ck", progress=False)
    results = run_experiment(DECAY, "ci", arms=["stiefel@wd=0.3"], **folders)
    run = results["runs"]["stiefel@wd=0.3/200"]
    assert (run["model_lr"], run["qk_lr"], run["weight_decay"]) == (1e-3, 1e-2, 0.3)
    assert all("max_logit/0" in record for record in run["history"])
    with pytest.raises(ValueError, match="not a declared decay"):
        experiments.EXPERIMENTS[DECAY].run(
            experiments.get_config(DECAY, "ci"), "stiefel@wd=1", 200, torch.device("cpu")
        )


def test_the_decay_sensitivity_is_the_mean_over_decays_minus_the_best():
    results = _results({"stiefel": {1e-3: [3.0], 1e-2: [2.0]}})
    runs = {key.replace("@lr=0.001", "@wd=0").replace("@lr=0.01", "@wd=1"): run for key, run in results["runs"].items()}
    decays = {"config": {**results["config"], "decays": [0.0, 1.0]}, "runs": runs}
    del decays["config"]["rungs"]
    assert ls.sensitivity(decays, "stiefel").per_seed == {200: pytest.approx(0.5)}
    from stiefel_book.model_lr import best_rung

    assert best_rung(decays, "stiefel") == 1.0 and best_rung(decays, "baseline") is None


def test_an_added_arm_reads_its_ratio_from_the_sweep_at_its_run(tmp_path):
    config = experiments.EXPERIMENTS[NAME].resolve(experiments.get_config(NAME, "full"), None)
    from stiefel_book.engine.study import SweepError

    with pytest.raises(SweepError, match="no interior choice for 'manifold_muon'.*--arms manifold_muon"):
        config.qk_lr("manifold_muon", 1e-3, tmp_path)  # an empty folder: no sweep of it
    assert "manifold_muon@lr=0.001" in experiments.EXPERIMENTS[NAME].optional_arms


def test_the_tuned_qk_norm_runs_as_qk_norm_at_its_temperature_sweeps_choice(tmp_path, monkeypatch):
    from stiefel_book.engine.study import SweepError

    config = experiments.EXPERIMENTS[NAME].resolve(experiments.get_config(NAME, "full"), None)
    with pytest.raises(SweepError, match="induction_qk_temp has not settled.*sweep induction_qk_temp"):
        lr_sensitivity.added_setting(config, "qk_norm_tuned", tmp_path)  # no temperature sweep in this folder
    charlm = experiments.EXPERIMENTS["charlm_lr_sensitivity"].resolve(
        experiments.get_config("charlm_lr_sensitivity", "full"), None
    )
    with pytest.raises(ValueError, match="needs a temperature sweep"):
        charlm.qk_lr("qk_norm_tuned", 1e-3)
    ratio, extra = lr_sensitivity.added_setting(config, "qk_norm_tuned")  # the committed sweep
    from stiefel_book.experiments.routing_qk_temp import SWEEPS, TemperatureStudy

    sweep = experiments.load_results("induction_qk_temp", "full")
    pick = TemperatureStudy.of("induction_qk_temp", SWEEPS["induction_qk_temp"][0]["full"]).choice(sweep)
    assert pick["settled"] and extra == {"qk_temperature": pick["temperature"]}
    assert ratio == pytest.approx(pick["lr"] / sweep["config"]["task"]["lr"])
    seen = []

    def fake_run(task, arm, seed, device, checkpoint, progress, *, qk_lr, qk_temperature=None):
        seen.append((arm, task.lr, qk_lr, qk_temperature))
        return {"final": {"val_loss": 1.0}, "history": [{"epoch": task.steps, "val_loss": 1.0}]}

    task = dataclasses.replace(lr_sensitivity.TASKS["induction"], run=fake_run)
    out = lr_sensitivity.runner(task)(config, "qk_norm_tuned@lr=0.001", 200, torch.device("cpu"))
    assert seen == [("qk_norm", 1e-3, pytest.approx(1e-3 * ratio), pick["temperature"])]
    assert (
        out["qk_temperature"] == pick["temperature"]
        and "qk_norm_tuned@lr=0.001" in experiments.EXPERIMENTS[NAME].optional_arms
    )
    with pytest.raises(ValueError, match="runs at its chosen temperature"):
        lr_sensitivity.task_arm("qk_norm_tuned", {})


def test_rates_are_the_one_pair_an_arms_runs_recorded_and_a_mixed_arm_is_refused():
    results = _results({"stiefel": {1e-3: [3.0, 3.2], 1e-2: [2.0, 2.2]}})
    for run in results["runs"].values():
        run.update(model_lr=3e-2, qk_lr=1e-1)
    assert ls.rates(results, "stiefel") == {"model_lr": 3e-2, "qk_lr": 1e-1}
    results["runs"]["stiefel@lr=0.01/201"]["model_lr"] = 3e-3
    with pytest.raises(ValueError, match="do not share one"):
        ls.rates(results, "stiefel")
    del results["runs"]["stiefel@lr=0.01/201"]["model_lr"]
    with pytest.raises(ValueError, match="do not share one"):
        ls.rates(results, "stiefel")
