"""CIFAR-10's held-out choices (issue 52): the validation split carved from the training images
(disjoint from the training prefix, balanced, normalised with its statistics; absent by default,
so a run and its stored config are what they were), the sweep that scores it, QK-norm on the
patch model, and the judged runs that take the validation choices, adopting the runs that a
test-scored choice already made at the same rate."""

import dataclasses

import numpy as np
import pytest
import torch

from stiefel_book.data import channel_stats, load_cifar10, normalize_images
from stiefel_book.experiments import cifar10_val, get_config, run_experiment
from stiefel_book.experiments.cifar10 import PROFILES as CIFAR10_PROFILES
from stiefel_book.experiments.runner import _as_json
from stiefel_book.results import write_results
from stiefel_book.tasks import cifar10
from stiefel_book.tasks.cifar10_config import with_validation
from stiefel_book.tasks.cifar10_data import split_indices

from tiny import TINY

SHRUNK = {k: v for k, v in TINY.items() if k not in ("seeds", "train_size")}  # 100 training images each


def test_the_validation_images_follow_the_training_prefix_disjoint_and_balanced():
    labels = np.repeat(np.arange(10), 50)  # 500 images, 50 a class
    train, val = split_indices(labels, 200, 100, subset_seed=0)
    assert len(train) == 200 and len(val) == 100 and not set(train) & set(val)
    assert np.bincount(labels[val], minlength=10).tolist() == [10] * 10
    assert np.bincount(labels[train], minlength=10).tolist() == [20] * 10
    bigger_train, _ = split_indices(labels, 300, 0, subset_seed=0)
    assert not set(bigger_train[:200]) ^ set(train)  # the training prefix does not depend on val_size
    assert set(val) == set(bigger_train[200:300])  # the validation images are the next of the same order


@pytest.mark.parametrize("train_size, val_size", [(400, 101), (0, 10), (10, -1)])
def test_a_split_that_does_not_fit_the_pool_is_one_clear_error(train_size, val_size):
    with pytest.raises(ValueError, match="must fit in CIFAR-10's 500 training images"):
        split_indices(np.repeat(np.arange(10), 50), train_size, val_size, subset_seed=0)


def test_the_validation_data_are_the_next_images_normalised_with_the_training_prefixs_statistics(isolated):
    config = with_validation(dataclasses.replace(CIFAR10_PROFILES["ci"], **SHRUNK, train_size=100), 50)
    train_x, *_ = cifar10.prepared_data(config)
    val_x, val_y = cifar10.validation_data(config)
    assert len(val_x) == 50 and np.bincount(val_y.numpy(), minlength=10).tolist() == [5] * 10
    raw = load_cifar10(progress=False)
    train_idx, val_idx = split_indices(raw.train_labels, 100, 50, 0)
    mean, std = channel_stats(raw.train_images[train_idx])
    assert torch.equal(val_x, normalize_images(raw.train_images[val_idx], mean, std))
    assert not any(torch.equal(v, t) for v in val_x for t in train_x)  # no training image among them
    unsplit = dataclasses.replace(config, val_size=0)
    assert torch.equal(cifar10.prepared_data(unsplit)[0], train_x) and len(cifar10.validation_data(unsplit)[0]) == 0
    with pytest.raises(ValueError, match="must fit"):
        cifar10.validation_data(dataclasses.replace(config, val_size=61))  # 160 images in the tiny copy


def test_a_run_with_a_split_records_validation_beside_an_unchanged_history_and_the_default_stores_none(isolated):
    config = dataclasses.replace(CIFAR10_PROFILES["ci"], **SHRUNK, train_size=100)
    plain = cifar10.train(config, "stiefel", 0, progress=False)
    split = cifar10.train(with_validation(config, 50), "stiefel", 0, progress=False)
    for before, after in zip(plain["history"], split["history"], strict=True):
        assert {k: v for k, v in after.items() if not k.startswith("val_")} == before
        assert 0 <= after["val_acc"] <= 1 and after["val_loss"] > 0 and "val_acc" not in before
    assert "val_size" not in _as_json(config) and config.val_size == 0  # the fields (and stored configs) as before
    assert _as_json(with_validation(config, 50)) == {**_as_json(config), "val_size": 50}


def test_qk_norm_runs_on_the_patch_model_from_the_baselines_weights_with_its_scores_rms(isolated):
    config = dataclasses.replace(CIFAR10_PROFILES["ci"], **SHRUNK, train_size=100)
    images = cifar10.prepared_data(config)[0][:50]
    plain, normed = cifar10.build_model(config, "baseline", 3), cifar10.build_model(config, "qk_norm", 3, images)
    base = plain.state_dict()
    assert all(torch.equal(base[k], v) for k, v in normed.state_dict().items() if k in base)
    assert all(type(b.attn).__name__ == "TemperedAttention" and b.attn.qk_norm for b in normed.blocks)
    assert all(not torch.equal(b.attn.base_scale, torch.ones_like(b.attn.base_scale)) for b in normed.blocks)
    out = cifar10_val.study(_tiny_sweep()).run("qk_norm@wd=0.05@qklr=0.001", 100, "cpu", progress=False)
    assert "val_acc" in out["final"] and out["final"]["epoch"] == SHRUNK["epochs"]


def _tiny_sweep(**changes):
    base = get_config("cifar10_val_qk_lr", "ci")
    return dataclasses.replace(
        base, task=dataclasses.replace(base.task, **SHRUNK, train_size=100, val_size=50), **changes
    )


def test_the_sweep_scores_validation_accuracy_starting_every_cell_at_the_same_rungs_whatever_the_model_lr():
    full = cifar10_val.study(get_config("cifar10_val_qk_lr", "full"))
    assert full.metric == "val_acc" and full.task.val_size == cifar10_val.VAL_SIZE and full.seeds == (100, 101, 102)
    assert full.task.train_size + full.task.val_size <= 50_000 and full.task.weight_decay == 0.05
    assert {"qk_norm@wd=0.05", "no_decay_qk@wd=0.05", "stiefel@wd=3", "baseline@wd=0.01", "stiefel@wd=1"} <= set(
        full.arms
    )
    config = get_config("cifar10_val_qk_lr", "full")
    moved = cifar10_val.study(dataclasses.replace(config, task=dataclasses.replace(config.task, lr=1e-3)))
    assert moved.task.lr == 1e-3 and moved.start_arms() == full.start_arms()
    assert full.start_rungs("qk_norm@wd=0.05") == (3e-4, 1e-3, 3e-3)
    runs = {}
    for lr in (3e-4, 1e-3, 3e-3):  # test accuracy best at 3e-4 (an edge), validation accuracy at 1e-3 (interior)
        history = [
            {"epoch": e, "test_acc": 0.6 if lr == 3e-4 else 0.5, "val_acc": 0.6 if lr == 1e-3 else 0.5}
            for e in range(1, 101)
        ]
        for s in (100, 101, 102):
            runs[f"stiefel@wd=1@qklr={lr:g}/{s}"] = {"history": history}
    sweep = {"config": {"task": {"lr": 1e-3, "epochs": 100}, "seeds": [100, 101, 102]}, "runs": runs}
    chosen = full.chosen(sweep, "stiefel@wd=1")
    assert chosen["lr"] == 1e-3 and chosen["interior"] and chosen["score"] == pytest.approx(0.6)


def _val_sweep(best: dict[str, float]) -> dict:
    """A settled ci validation sweep: each cell best at ``best[cell]`` among its first rungs."""
    runs = {}
    for cell in cifar10_val.cells(get_config("cifar10_val_qk_lr", "ci")):
        for lr in (3e-4, 1e-3, 3e-3, 1e-2) if best[cell] == 3e-3 else (3e-4, 1e-3, 3e-3):  # grown past 3e-3
            runs[f"{cell}@qklr={lr:g}/100"] = {"history": [{"epoch": 4, "val_acc": 0.6 if lr == best[cell] else 0.5}]}
    return {"config": {"task": {"lr": 1e-3, "epochs": 4}, "seeds": [100]}, "runs": runs}


def test_the_judged_runs_take_the_validation_choices_adopt_unmoved_runs_and_a_rejudgement_with_none_moved_is_refused(
    isolated,
):
    results = isolated / "results"
    controls, fair = get_config("cifar10_val_controls", "ci"), get_config("cifar10_val_fair", "ci")
    with pytest.raises(ValueError, match="sweep cifar10_val_qk_lr --profile ci"):
        cifar10_val.resolve(controls)
    best = {cell: 1e-3 for cell in cifar10_val.cells(get_config("cifar10_val_qk_lr", "ci"))}
    write_results(_val_sweep({**best, "stiefel@wd=0.05": 3e-3}), results / "cifar10_val_qk_lr-ci.json")
    resolved = cifar10_val.resolve(controls)
    assert dict(resolved.qk_lrs) == {"baseline": 1e-3, "stiefel": 3e-3, "no_decay_qk": 1e-3, "qk_norm": 1e-3}
    assert dict(cifar10_val.resolve(fair).qk_lrs) == {"baseline": 1e-3, "stiefel": 1e-3}  # no test-scored file yet

    stored = {"history": [{"epoch": 4, "test_acc": 0.5}], "final": {"test_acc": 0.5}, "qk_lr": 1e-3}
    task = _as_json(resolved.task)
    source = {
        "config": {"task": task, "qk_lrs": [["baseline", 1e-3], ["stiefel", 1e-1]], "seeds": [0]},
        "runs": {"baseline/0": {**stored, "provenance": {"date": "2026-12-03"}}, "stiefel/0": stored},
    }
    write_results(source, results / "cifar10_fair_decay-ci.json")
    record, where = cifar10_val.adopt(resolved, "baseline", 0)
    assert where == "cifar10_fair_decay-ci" and record["qk_lr"] == 1e-3 and record["provenance"]["date"] == "2026-12-03"
    assert cifar10_val.adopt(resolved, "stiefel", 0) is None  # its choice moved: judged anew
    assert cifar10_val.adopt(resolved, "baseline", 1) is None and cifar10_val.adopt(resolved, "frozen", 0) is None
    other_task = dataclasses.replace(resolved, task=dataclasses.replace(resolved.task, lr=3e-4))
    assert cifar10_val.adopt(other_task, "baseline", 0) is None  # another model lr is another computation

    fair_source = {
        "config": {"task": _as_json(fair.task), "qk_lrs": [["baseline", 1e-3], ["stiefel", 1e-3]]},
        "runs": {},
    }
    write_results(fair_source, results / "cifar10_val_fair-ci.json".replace("val_fair", "fair"))
    with pytest.raises(ValueError, match="nothing to re-judge"):
        cifar10_val.resolve(fair)


def test_every_new_entry_has_profiles_and_a_ci_judged_run_trains_and_records_test_accuracy(isolated):
    from stiefel_book.experiments import EXPERIMENTS

    for name in ("cifar10_val_qk_lr", "cifar10_val_controls", "cifar10_val_fair"):
        assert set(EXPERIMENTS[name].profiles) == {"ci", "full"}
    judged = get_config("cifar10_val_controls", "full")
    assert judged.task.val_size == 0 and judged.seeds == tuple(range(12)) and judged.task.weight_decay == 0.05
    assert "frozen" in EXPERIMENTS["cifar10_val_controls"].arms
    base = get_config("cifar10_val_controls", "ci")
    config = dataclasses.replace(
        base, task=dataclasses.replace(base.task, **SHRUNK, train_size=100), qk_lrs=(("qk_norm", 1e-3),)
    )
    out = run_experiment("cifar10_val_controls", "ci", config=config, arms=["qk_norm", "frozen"], progress=False)
    assert out["runs"]["qk_norm/0"]["qk_lr"] == 1e-3 and out["runs"]["frozen/0"]["qk_lr"] == 0.0
    assert "test_acc" in out["runs"]["qk_norm/0"]["final"] and "val_acc" not in out["runs"]["qk_norm/0"]["final"]
