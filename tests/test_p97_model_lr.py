"""p = 97's model-lr check (``grokking_p97_model_lr`` in book/protocol.yml): AdamW alone over the model lr at
grokking_p97_qk_lr's ratio, scored by how fast a run groks, read by the ladder rule with a margin in epochs."""

import dataclasses
import shutil
from pathlib import Path

import pytest

from stiefel_book import advice
from stiefel_book.engine.study import SweepError, diverged_outcome
from stiefel_book.experiments import EXPERIMENTS, fair_fight, get_config, p97_fair, run_experiment
from stiefel_book.findings.lr_sensitivity import ladder_check
from stiefel_book.results import write_results
from stiefel_book.results_reading import parse_grid_arm

NAME = "grokking_p97_model_lr"
RESULTS = Path(__file__).resolve().parents[1] / "book" / "results"
MARGIN = 1000  # epochs, as declared
HORIZON = 10_000


def _history(epoch_at_90: int | None) -> list[dict]:
    """A run logged every 500 epochs that passes 90 % at ``epoch_at_90`` and stops there (never: to the horizon)."""
    before = [{"epoch": e, "val_acc": 0.5} for e in range(0, epoch_at_90 or HORIZON + 1, 500)]
    return before + [{"epoch": epoch_at_90, "val_acc": 0.95}] * (epoch_at_90 is not None)


def _check(times: dict[float, list[int | None]], seeds=(100, 101, 102)) -> dict:
    """A check's results file: ``times`` {model lr: [epoch at 90 % per seed]}."""
    runs = {
        f"baseline@lr={lr:g}/{seed}": {"history": _history(t)} for lr, ts in times.items() for seed, t in zip(seeds, ts)
    }
    config = get_config(NAME, "full")
    header = {"metric": "time", "threshold": 0.9, "task": {"lr": 1e-3, "epochs": HORIZON}, "seeds": list(seeds)}
    return {"config": {**header, "rungs": list(config.rungs)}, "runs": runs}


FIRST = {3e-4: [8000, 7000, 6000], 1e-3: [5000, 5000, 5000], 1e-2: [9000, None, 9000]}


def test_the_time_score_picks_the_faster_rung_and_moves_only_past_the_margin():
    out = ladder_check(_check({**FIRST, 3e-3: [3000, 3500, 4000]}), MARGIN)
    assert out["means"][1e-3] == 5000 and out["means"][3e-3] == pytest.approx(3500)  # epochs, not minus epochs
    assert out["best"] == 3e-3 and out["interior"] and out["gain"] == pytest.approx(1500)
    assert out["moves"] and out["lr"] == 3e-3
    out = ladder_check(_check({**FIRST, 3e-3: [4000, 4200, 4400]}), MARGIN)  # 800 epochs faster: within the margin
    assert out["best"] == 3e-3 and out["interior"] and not out["moves"] and out["lr"] == 1e-3
    tied = ladder_check(_check({**FIRST, 3e-3: [5000, 5000, 5000]}), MARGIN)
    assert tied["best"] == 1e-3 and tied["gain"] == 0  # a tie goes to the task's lr


def test_a_run_that_never_reaches_90_percent_counts_the_horizon():
    out = ladder_check(_check({**FIRST, 3e-3: [None, None, None]}), MARGIN)
    assert out["means"][3e-3] == HORIZON and out["means"][1e-2] == pytest.approx((9000 + HORIZON + 9000) / 3)
    results = _check({**FIRST, 3e-3: [3000, 3000, 3000]})
    results["runs"]["baseline@lr=0.003/102"] = diverged_outcome(HORIZON, ValueError("AdamW: non-finite"))
    assert ladder_check(results, MARGIN)["means"][3e-3] == pytest.approx((3000 + 3000 + HORIZON) / 3)


def test_a_fastest_rung_at_an_edge_grows_the_ladder_and_moves_nothing():
    top = ladder_check(_check({**FIRST, 3e-3: [4000] * 3, 1e-2: [2000] * 3}), MARGIN)
    assert top["best"] == 1e-2 and top["grow"] == (3e-2,) and not top["interior"] and not top["moves"]
    assert top["lr"] == 1e-3
    bottom = ladder_check(_check({**FIRST, 3e-4: [1000] * 3, 3e-3: [4000] * 3}), MARGIN)
    assert bottom["grow"] == (1e-4,) and not bottom["moves"]
    grown = ladder_check(_check({**FIRST, 3e-4: [1000] * 3, 3e-3: [4000] * 3, 1e-4: [3000] * 3}), MARGIN)
    assert grown["best"] == 3e-4 and grown["grow"] == () and grown["interior"] and grown["moves"]
    with pytest.raises(ValueError, match="task's lr"):  # the task's lr not on every seed yet
        ladder_check(_check({3e-4: [1000] * 3, 1e-3: [5000, 5000]}), MARGIN)


def test_the_full_profile_is_grokking_p97_qk_lrs_task_on_its_declared_rungs_and_seeds():
    entry, config = EXPERIMENTS[NAME], get_config(NAME, "full")
    sweep = p97_fair.SWEEP_PROFILES["full"]
    assert config.task == sweep.task and config.task.p == 97 and config.task.epochs == HORIZON
    assert (config.metric, config.threshold, config.seeds, config.arms) == ("time", 0.9, (100, 101, 102), ("baseline",))
    rungs = lambda arms: [parse_grid_arm(a, "lr", ("baseline",))[1] for a in arms]  # noqa: E731
    assert rungs(entry.default_arms(config)) == [3e-4, 1e-3, 3e-3, 1e-2]
    assert set(rungs(entry.optional_arms)) == {1e-4, 3e-2, 1e-1}  # the ladder's growth, run when named


def test_the_check_reads_adamws_ratio_from_the_p97_sweeps_file(tmp_path):
    entry, config = EXPERIMENTS[NAME], get_config(NAME, "full")
    with pytest.raises(SweepError, match="sweep grokking_p97_qk_lr --profile full"):
        entry.resolve(config, tmp_path)

    def sweep(times: dict[float, int]) -> dict:
        runs = {f"baseline@qklr={lr:g}/{s}": {"history": _history(t)} for lr, t in times.items() for s in (100, 101)}
        config = {"task": {"lr": 1e-3, "epochs": HORIZON}, "seeds": [100, 101], "threshold": 0.9}
        return {"config": config, "runs": runs}

    write_results(sweep({1e-4: 6000, 3e-4: 7000, 1e-3: 8000}), tmp_path / "grokking_p97_qk_lr-full.json")
    with pytest.raises(SweepError, match="not settled"):  # fastest at the grid's edge
        entry.resolve(config, tmp_path)
    write_results(sweep({1e-4: 6000, 3e-4: 3000, 1e-3: 8000}), tmp_path / "grokking_p97_qk_lr-full.json")
    resolved = entry.resolve(config, tmp_path)
    assert resolved.qk_lrs == (("baseline", 3e-4),) and resolved.tuned_at == 1e-3
    assert resolved.qk_lr("baseline", 1e-2) == pytest.approx(3e-3)  # the ratio kept at every rung
    committed = entry.resolve(config)  # the committed sweep: AdamW at 3e-6 over the task's 1e-3
    assert committed.qk_lr("baseline", 1e-3) == pytest.approx(3e-6)


def test_a_run_stops_at_90_percent_and_the_ci_profile_runs_end_to_end(tmp_path, monkeypatch):
    folders = dict(directory=tmp_path, checkpoints=tmp_path / "ck", progress=False)
    results = run_experiment(NAME, "ci", **folders)
    assert sorted(results["runs"]) == ["baseline@lr=0.001/100", "baseline@lr=0.1/100"]
    run = results["runs"]["baseline@lr=0.1/100"]
    assert (run["model_lr"], run["qk_lr"]) == (0.1, pytest.approx(1.0))  # the ci profile's fixed ratio, 10x
    epochs = results["config"]["task"]["epochs"]
    at = {**results, "config": {**results["config"], "task": {**results["config"]["task"], "lr": 1e-3}}}
    out = ladder_check(at, MARGIN)  # (read against a rung: the ci task's lr is none) no run reaches 90 % in 20 epochs
    assert out["means"] == {1e-3: epochs, 1e-1: epochs} and out["best"] == 1e-3

    stops = []

    def train(task, arm, seed, device, checkpoint, progress, qk_lr, stop_at=None):
        stops.append(stop_at)
        return {"history": [{"epoch": 1, "val_acc": 1.0}], "final": {"epoch": 1, "val_acc": 1.0}}

    monkeypatch.setattr(fair_fight, "train", train)
    config = get_config(NAME, "ci")
    EXPERIMENTS[NAME].run(dataclasses.replace(config, seeds=(7,)), "baseline@lr=0.001", 7, "cpu")
    assert stops == [config.threshold] == [0.9]


def test_the_check_is_listed_once_its_task_lr_has_every_seed(tmp_path, monkeypatch):
    monkeypatch.setenv("STIEFEL_RESULTS", str(tmp_path))
    for name in ("grokking_model_lr", "mqar_model_lr", "cifar10_model_lr"):
        shutil.copy(RESULTS / f"{name}-full.json.gz", tmp_path)
    assert set(advice.model_lr_checks()) == {"grokking", "MQAR", "CIFAR-10"}  # p = 97's not run: left out
    write_results(_check({1e-3: [5000, 5000]}), tmp_path / f"{NAME}-full.json")  # running: left out
    assert "grokking (p = 97)" not in advice.model_lr_checks()
    write_results(_check({**FIRST, 3e-3: [3000, 3500, 4000]}), tmp_path / f"{NAME}-full.json")
    check = advice.model_lr_checks()["grokking (p = 97)"]
    assert check["moves"] and check["lr"] == 3e-3 and check["current"] == 1e-3


CHECKED = ("grokking_p97_checked_qk_lr", "grokking_p97_checked")


@pytest.mark.parametrize("name", CHECKED)
def test_the_runs_at_the_checked_lr_wait_for_the_check_and_follow_its_choice(tmp_path, name):
    entry, config = EXPERIMENTS[name], get_config(name, "full")
    assert config.task.lr == p97_fair.CHECKED_LR and config.task.p == 97
    with pytest.raises(ValueError, match="has not chosen"):
        entry.resolve(config, tmp_path)
    write_results(_check({**FIRST, 1e-2: [400, 500, 450], 3e-2: [None] * 3}), tmp_path / f"{NAME}-full.json")
    if name == "grokking_p97_checked_qk_lr":
        assert entry.resolve(config, tmp_path) == config  # chosen 1e-2: the lr these runs are set at
    else:
        with pytest.raises(SweepError, match="grokking_p97_checked_qk_lr"):  # then the sweep's choices are needed
            entry.resolve(config, tmp_path)
    write_results(_check({**FIRST, 3e-3: [3000, 3500, 4000]}), tmp_path / f"{NAME}-full.json")  # chose 3e-3
    with pytest.raises(ValueError, match="chose model lr 0.003"):
        entry.resolve(config, tmp_path)
    if name == "grokking_p97_checked_qk_lr":  # a smaller profile runs without the check
        assert entry.resolve(get_config(name, "ci"), tmp_path) == get_config(name, "ci")


def test_the_checked_sweep_starts_each_arm_at_its_ratio_from_the_lr_it_chose_at_1e_3():
    from stiefel_book.findings.fair_fight import tuned_lrs
    from stiefel_book.results import load_results

    tuned = tuned_lrs(load_results("grokking_p97_fair", "full"))
    task_lr = get_config("grokking_p97_fair", "full").task.lr
    for arm, centre in p97_fair.CHECKED_CENTERS.items():
        assert centre == pytest.approx(tuned[arm] * p97_fair.CHECKED_LR / task_lr)
    study = EXPERIMENTS["grokking_p97_checked_qk_lr"].study(get_config("grokking_p97_checked_qk_lr", "full"))
    assert study.start_rungs("baseline") == (1e-5, 3e-5, 1e-4) and study.seeds == (100, 101, 102)
    assert study.metric == "time"


def test_the_checked_lr_is_the_committed_checks_choice():
    from stiefel_book.model_lr import check_choice
    from stiefel_book.results import load_results

    results = load_results(NAME, "full")
    lr = check_choice(p97_fair.CHECKED_MARGIN)(results) if results else None
    if lr is None:
        pytest.skip(f"{NAME} has not finished in book/results yet")
    assert lr == p97_fair.CHECKED_LR != get_config("grokking_p97_primary", "full").task.lr  # it moved
