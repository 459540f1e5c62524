"""The decay map at tuned lrs: each arm at its resolved lr; frozen frames and an arm whose lr is the
task's are the decay map's own runs, adopted (and the same computation as a fresh run)."""

import dataclasses

import pytest
import torch

from stiefel_book.experiments import EXPERIMENTS, get_config, run_experiment

tuned = EXPERIMENTS["grokking_decay_map_tuned"]


def test_adopted_cells_are_the_maps_runs_and_the_others_train_at_their_lr(isolated):
    short = dataclasses.replace(get_config("grokking_decay_map", "ci").task, epochs=60, log_every=20)
    map_config = dataclasses.replace(get_config("grokking_decay_map", "ci"), task=short)
    the_map = run_experiment("grokking_decay_map", "ci", config=map_config, progress=False)  # 2 decays x 4 arms
    base = dataclasses.replace(get_config("grokking_decay_map_tuned", "ci"), task=short)
    lr = base.task.lr
    config = dataclasses.replace(base, qk_lrs=(("baseline", lr / 3), ("stiefel", lr), ("no_decay_qk", lr / 3)))
    out = run_experiment("grokking_decay_map_tuned", "ci", config=config, progress=False)
    assert sorted(out["runs"]) == sorted(the_map["runs"])
    for key, run in out["runs"].items():
        adopted = (run["provenance"] or {}).get("adopted_from")
        if key.startswith(("stiefel@", "frozen@")):
            assert adopted == "grokking_decay_map-ci"
            assert [r["val_acc"] for r in run["history"]] == [r["val_acc"] for r in the_map["runs"][key]["history"]]
        else:
            assert adopted is None and run["qk_lr"] == pytest.approx(lr / 3)
    fresh = tuned.run(config, "stiefel@wd=1", 0, torch.device("cpu"), progress=False)  # the same computation
    assert fresh["history"] == out["runs"]["stiefel@wd=1/0"]["history"]


def test_the_lrs_come_from_a_settled_sweep_before_the_runs(isolated):
    with pytest.raises(ValueError, match="sweep grokking_qk_lr --profile ci"):
        tuned.resolve(get_config("grokking_decay_map_tuned", "ci"))
    config = dataclasses.replace(get_config("grokking_decay_map_tuned", "ci"), qk_lrs=(("stiefel", 1e-3),))
    with pytest.raises(ValueError, match="'baseline' has no resolved W_Q, W_K lr"):
        tuned.run(config, "baseline@wd=0", 0, torch.device("cpu"), progress=False)
