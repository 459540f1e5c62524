"""The mechanism's control arms, the decay map's arms, and what they log."""

import dataclasses
import math

import pytest
import torch

from stiefel_book.arms import arm
from stiefel_book.arms.calibration import calibration_epochs, matched_lr, median_step
from stiefel_book.arms.variants import CONTROL_ARMS
from stiefel_book.experiments import EXPERIMENTS, get_config
from stiefel_book.models import ModularTransformer
from stiefel_book.tasks import grokking
from stiefel_book.tasks.metrics import bilinear_change, principal_angles
from stiefel_core.combined import configure_optimizer
from stiefel_core.manifold import random_frame

TINY = dict(
    p=7, train_fraction=0.5, d_model=16, n_heads=2, d_mlp=32, epochs=40, log_every=10, seeds=(0,), cpu_threads=1
)
CPU = torch.device("cpu")


def test_no_decay_routes_the_named_parameters_to_a_decay_free_group():
    model = ModularTransformer(9, 7, 16, 2, 32, stiefel=False)
    opt = configure_optimizer(model, lr=1e-3, weight_decay=1.0, no_decay=("attn.W_Q", "attn.W_K"))
    decay = {id(p): g["weight_decay"] for g in opt.param_groups for p in g["params"]}
    assert decay[id(model.attn.W_Q)] == decay[id(model.attn.W_K)] == 0.0
    assert decay[id(model.attn.W_V.weight)] == decay[id(model.embed.weight)] == 1.0
    with pytest.raises(ValueError, match="attn.W_X"):
        configure_optimizer(model, no_decay=("attn.W_X",))


def test_bilinear_change_sees_rotations_inside_a_subspace_that_principal_angles_miss():
    gen = torch.Generator().manual_seed(0)
    Q, K = (
        random_frame(12, 3, 2, generator=gen, dtype=torch.float64),
        random_frame(12, 3, 2, generator=gen, dtype=torch.float64),
    )
    R = torch.linalg.qr(torch.randn(3, 3, generator=gen, dtype=torch.float64))[0]
    assert principal_angles(Q, Q @ R).max() < 1e-6  # the subspace did not move
    assert bilinear_change(Q @ R, K, Q, K).min() > 0.1  # the scores did
    assert bilinear_change(Q @ R, K @ R, Q, K).max() < 1e-12  # the gauge (W_Q R, W_K R) changes nothing


def test_matched_lr_solves_for_the_target_step_and_records_every_trial():
    def measure(arm, lr):
        return 0.02 if arm == "stiefel" else 3.0 * lr**0.9  # nearly degree one, as the fixed step

    found = matched_lr(measure, 1e-3)
    assert abs(found["ratio"] - 1) <= 0.02 and len(found["trials"]) >= 2
    assert abs(3.0 * found["lr"] ** 0.9 / 0.02 - 1) <= 0.02
    with pytest.raises(ValueError, match="did not move"):
        matched_lr(lambda arm, lr: 0.0, 1e-3)
    assert calibration_epochs(1500) == 75 and calibration_epochs(3) == 1
    assert median_step([{"step/W_Q": 3.0, "step/W_K": 4.0}]) == 5.0


def test_arm_predicates():
    assert set(CONTROL_ARMS) == {"frozen", "no_decay_qk", "fixed_step_matched"}
    assert not arm("no_decay_qk").holds_frames and arm("frozen").holds_frames
    assert arm("fixed_step_matched").trains_qk and not arm("frozen").trains_qk


def test_control_arms_start_where_the_others_do_and_do_what_they_say():
    config = get_config("grokking", "ci", **TINY)
    runs = {arm: grokking.run(config, arm, 0, CPU, progress=False) for arm in ("baseline", "stiefel", *CONTROL_ARMS)}
    first = {arm: run["history"][0] for arm, run in runs.items()}
    frozen = runs["frozen"]["history"]
    assert all(
        r["qk_change_max/attn"] == 0.0 and r["step/W_Q"] == 0.0 and r["angle_max/W_Q"] < 1e-3 for r in frozen
    )  # never moved
    assert first["no_decay_qk"]["qk_change_mean/attn"] > 0 and "trust_capped" not in first["no_decay_qk"]
    assert 0.0 <= runs["stiefel"]["final"]["trust_capped"] <= 1.0
    calibration = runs["fixed_step_matched"]["calibration"]
    assert calibration["epochs"] == calibration_epochs(config.epochs) and abs(calibration["ratio"] - 1) < 0.05
    assert calibration["lr"] > config.lr  # the fixed step needs a larger lr to move as far
    # the baseline decays W_Q; no_decay_qk does not: from the same start, its W_Q stays larger
    assert runs["no_decay_qk"]["final"]["norm/attn.W_Q"] > runs["baseline"]["final"]["norm/attn.W_Q"]


@pytest.mark.parametrize(
    "name, off",
    [
        ("grokking_decay_map", "stiefel@wd=0.7"),
        ("grokking_decay_map_per_decay", "stiefel@wd=0.7"),
        ("cifar10_long", "stiefel@wd=0.3"),
        ("induction_decay_map", "stiefel@wd=0.3"),
        ("grokking_trust_region", "stiefel@flr=0.5"),
    ],
)
def test_a_grid_names_each_arm_at_each_value_and_refuses_what_is_off_it(name, off):
    experiment = EXPERIMENTS[name]
    config = experiment.profiles["ci"]
    assert set(experiment.default_arms(config)) <= set(experiment.arms)
    with pytest.raises(ValueError, match="expected"):
        experiment.run(config, "stiefel", 0, CPU, progress=False)
    with pytest.raises(ValueError, match="not on this profile's grid"):
        experiment.run(config, off, 0, CPU, progress=False)


def test_a_decay_map_cell_trains_at_its_decay():
    config = get_config("grokking_decay_map", "ci")
    tiny = dataclasses.replace(
        config, task=dataclasses.replace(config.task, **{k: v for k, v in TINY.items() if k != "seeds"})
    )
    out = EXPERIMENTS["grokking_decay_map"].run(tiny, "baseline@wd=0", 0, CPU, progress=False)
    assert math.isfinite(out["final"]["val_loss"])


def test_trust_region_experiment_binds_at_a_raised_frame_lr_and_not_at_the_books():
    trust_region = EXPERIMENTS["grokking_trust_region"]
    config = get_config("grokking_trust_region", "ci")
    task = dataclasses.replace(config.task, **{k: v for k, v in TINY.items() if k != "seeds"})
    tiny = dataclasses.replace(config, task=task, qk_lrs=(1e-3, 1.0))
    capped = {
        arm: trust_region.run(tiny, arm, 0, CPU, progress=False)["final"]["trust_capped"]
        for arm in trust_region.default_arms(tiny)
    }
    assert capped["stiefel@flr=1"] > 0.5 and capped["stiefel@flr=0.001"] == 0.0
    assert capped["no_trust_region@flr=1"] == 0.0  # no radius, nothing to cap
    with pytest.raises(ValueError, match="qk_lr"):
        grokking.run(task, "frozen", 0, CPU, progress=False, qk_lr=0.1)  # no W_Q, W_K to train


def test_cifar10_controls_build_what_they_say():
    from stiefel_book.experiments import maps
    from stiefel_book.tasks import cifar10
    from stiefel_book.tasks.cifar10_config import lr_factors

    config = get_config("cifar10", "ci")
    model = cifar10.build_model(config, "no_decay_qk", 0)
    opt = cifar10.build_optimizer(model, config, "no_decay_qk")
    decay = {id(p): g["weight_decay"] for g in opt.param_groups for p in g["params"]}
    assert all(decay[id(b.attn.W_Q)] == decay[id(b.attn.W_K)] == 0.0 for b in model.blocks)
    assert decay[id(model.head.weight)] == config.weight_decay
    same = cifar10.build_model(config, "baseline", 0)
    assert all(
        torch.equal(a, b) for a, b in zip(model.state_dict().values(), same.state_dict().values())
    )  # one start, one init
    with pytest.raises(ValueError, match="unknown arm"):
        cifar10.build_model(config, "lion", 0)
    long = get_config("cifar10_long", "full")
    assert long.task.epochs >= 100 and long.task.train_size == 10_000 and len(long.seeds) >= 3
    assert set(EXPERIMENTS["cifar10_long"].default_arms(long)) == {
        f"{a}@wd={w:g}" for a in maps.LONG_ARMS for w in (0.05, 0.3, 1.0)
    }
    factors = lr_factors(long.task)
    assert len(factors) == 100 * (10_000 // 128) and max(factors) == 1.0
