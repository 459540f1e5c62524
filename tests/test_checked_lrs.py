"""Runs made at a model lr a declared check chose (issue 52): the character model's 4,500-step sweep
and judged runs start only once charlm_long_model_lr has chosen, by its rule, the lr they are set at."""

import dataclasses

import pytest

from stiefel_book import results_files
from stiefel_book.experiments import EXPERIMENTS, get_config, load_results
from stiefel_book.experiments import routing_sweep as profiles
from stiefel_book.model_lr import ladder_choice


def _check_file(folder, means: dict[float, float]):
    runs = {
        f"baseline@lr={lr}/{seed}": {"history": [{"step": 4500, "val_bpc": v}]}
        for lr, v in means.items()
        for seed in (100, 101, 102)
    }
    config = get_config("charlm_long_model_lr", "full")
    header = {"metric": "val_bpc", "task": {"lr": 1e-3, "steps": 4500}, "seeds": [100, 101, 102]}
    header["rungs"] = list(config.rungs)
    results_files.write(
        {"experiment": "charlm_long_model_lr", "profile": "full", "config": header, "runs": runs},
        results_files.target(folder, "charlm_long_model_lr-full"),
    )


@pytest.mark.parametrize("name", ["charlm_long_qk_lr", "charlm_long"])
def test_the_long_runs_wait_for_the_check_and_follow_its_choice(tmp_path, name):
    entry = EXPERIMENTS[name]
    config = get_config(name, "full")
    with pytest.raises(ValueError, match="has not chosen"):
        entry.resolve(config, tmp_path)
    _check_file(tmp_path, {1e-3: 2.50, 3e-3: 2.50, 1e-2: 2.42, 3e-2: 2.58})
    if name == "charlm_long_qk_lr":
        assert entry.resolve(config, tmp_path) == config  # chosen 1e-2, the lr the runs are set at
    else:
        with pytest.raises(ValueError, match="charlm_long_qk_lr"):  # then the sweep's choices are needed
            entry.resolve(config, tmp_path)
    _check_file(tmp_path, {1e-3: 2.50, 3e-3: 2.43, 1e-2: 2.42, 3e-2: 2.58})  # ties within 0.02: 3e-3
    with pytest.raises(ValueError, match="chose model lr 0.003"):
        entry.resolve(config, tmp_path)


def test_a_smaller_profile_runs_without_the_check(tmp_path):
    config = get_config("charlm_long_qk_lr", "ci")
    assert EXPERIMENTS["charlm_long_qk_lr"].resolve(config, tmp_path) == config


def test_the_long_lr_is_the_committed_checks_choice():
    results = load_results("charlm_long_model_lr", "full")
    pick = ladder_choice(results, 0.02) if results else {"interior": False}
    if not pick["interior"]:
        pytest.skip("charlm_long_model_lr has not finished in book/results yet")
    assert pick["lr"] == profiles.CHARLM_LONG_LR == dataclasses.asdict(profiles.CHARLM_LONG_PROFILES["full"])["lr"]


def test_grokking_runs_at_the_lr_its_check_chose():
    """grokking_model_lr moved the model lr (by its rule, from the committed file); grokking_checked's
    sweep and judged runs are set there and refuse a file that chose otherwise."""
    from stiefel_book.experiments import fair_fight
    from stiefel_book.model_lr import check_choice

    results = load_results("grokking_model_lr", "full")
    assert check_choice(fair_fight.CHECKED_MARGIN)(results) == fair_fight.CHECKED_LR
    assert fair_fight.CHECKED_LR != get_config("grokking_fair", "full").task.lr  # it moved
    config = get_config("grokking_checked_qk_lr", "full")
    entry = EXPERIMENTS["grokking_checked_qk_lr"]
    assert entry.resolve(config) == config and entry.study(config).task.lr == fair_fight.CHECKED_LR


def test_mqar_runs_at_the_lr_its_check_chose():
    """mqar_model_lr moved MQAR's model lr down (by its rule, from the committed file); its new sweep, the
    2x2's MQAR half and mqar_fresh are set there."""
    from stiefel_book.experiments import routing_judged
    from stiefel_book.model_lr import check_choice

    assert check_choice(0.02)(load_results("mqar_model_lr", "full")) == profiles.MQAR_CHECKED_LR
    assert profiles.MQAR_CHECKED_LR < profiles.MQAR_PROFILES["full"].lr
    checked = profiles.MQAR_CHECKED_LR
    assert routing_judged.MQAR_2X2_PROFILES["full"].lr == get_config("mqar_fresh", "full").lr == checked
    config = get_config("mqar_checked_qk_lr", "full")
    assert EXPERIMENTS["mqar_checked_qk_lr"].resolve(config) == config


def test_cifar10s_held_out_sweep_and_judged_runs_wait_for_the_check_and_run_at_its_choice(tmp_path):
    """cifar10_model_lr moved CIFAR-10's model lr (by its rule, on held-out images); the validation sweep
    and its judged runs are set there, refused until the check's file chose it, and adopt no run of the
    test-scored files (trained at the task's 1e-3)."""
    from stiefel_book.experiments import cifar10_val
    from stiefel_book.model_lr import check_choice

    results = load_results("cifar10_model_lr", "full")
    if results is None or check_choice(cifar10_val.CHECKED_MARGIN)(results) is None:
        pytest.skip("cifar10_model_lr has not finished in book/results yet")
    assert check_choice(cifar10_val.CHECKED_MARGIN)(results) == cifar10_val.CHECKED_LR
    assert cifar10_val.CHECKED_LR != get_config("cifar10_fair", "full").task.lr  # it moved
    for name in ("cifar10_val_qk_lr", "cifar10_val_controls", "cifar10_val_fair"):
        config = get_config(name, "full")
        assert config.task.lr == cifar10_val.CHECKED_LR
        with pytest.raises(ValueError, match="cifar10_model_lr has not chosen"):
            EXPERIMENTS[name].resolve(config, tmp_path)  # an empty folder: no check yet
    sweep = get_config("cifar10_val_qk_lr", "full")
    assert EXPERIMENTS["cifar10_val_qk_lr"].resolve(sweep) == sweep
