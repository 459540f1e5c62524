"""An interrupted run resumes bit-identically: killed after a checkpoint, run again from it, it
logs the very history (and final record) of a run never interrupted; the checkpoint is gone
once it finishes. One test over the experiments' training paths, older checkpoints included."""

import pytest
import torch

from stiefel_book.experiments import get_config
from stiefel_book.tasks import cifar10, grokking

from tiny import tiny

GROKKING = dict(
    p=7, train_fraction=0.5, d_model=16, n_heads=2, d_mlp=32, epochs=30, log_every=10, checkpoint_every=10, seeds=(0,)
)


def _without_scheduler(checkpoint):
    """As the CIFAR-10 runs saved checkpoints before they had a scheduler (lr set by hand each step)."""
    state = torch.load(checkpoint, weights_only=True)
    state["scheduler"] = None
    torch.save(state, checkpoint)


CASES = {  # name -> (task module, its run, config, arm, epoch to interrupt at, a change to the checkpoint)
    "grokking": (grokking, "run", lambda: get_config("grokking", "ci", **GROKKING), "stiefel", 15, None),
    "grokking-baseline": (grokking, "run", lambda: get_config("grokking", "ci", **GROKKING), "baseline", 15, None),
    "cifar10": (cifar10, "train_arm", lambda: tiny(epochs=3), "fixed_step", 2, None),
    "cifar10-older-checkpoint": (cifar10, "train_arm", lambda: tiny(epochs=3), "stiefel", 2, _without_scheduler),
}


@pytest.mark.parametrize("case", list(CASES))
def test_an_interrupted_run_resumes_bit_identically(case, isolated, interrupt):
    module, run_name, make_config, arm, epoch, change = CASES[case]
    config, run = make_config(), getattr(module, run_name)
    cpu = torch.device("cpu")
    whole = run(config, arm, 0, cpu, None, progress=False)
    checkpoint = isolated / "run.pt"
    with interrupt(module, epoch):
        run(config, arm, 0, cpu, checkpoint, progress=False)
    assert checkpoint.exists() and torch.load(checkpoint, weights_only=True)["epoch"] < config.epochs
    if change is not None:
        change(checkpoint)
    resumed = run(config, arm, 0, cpu, checkpoint, progress=False)
    assert resumed["history"] == whole["history"] and resumed["final"] == whole["final"]
    assert not checkpoint.exists()


def test_a_resume_that_loses_the_optimizers_moments_is_caught(isolated, interrupt):
    """Negative control: the comparison above can fail. Resumed from a checkpoint whose
    optimizer state was dropped (fresh moments), the run's history is not the whole run's."""
    config = get_config("grokking", "ci", **GROKKING)
    cpu = torch.device("cpu")
    whole = grokking.run(config, "stiefel", 0, cpu, None, progress=False)
    checkpoint = isolated / "run.pt"
    with interrupt(grokking, 15):
        grokking.run(config, "stiefel", 0, cpu, checkpoint, progress=False)
    state = torch.load(checkpoint, weights_only=True)
    for optimizer in state["optimizer"]["optimizers"]:
        optimizer["state"] = {}
    torch.save(state, checkpoint)
    resumed = grokking.run(config, "stiefel", 0, cpu, checkpoint, progress=False)
    assert resumed["history"][0] == whole["history"][0] and resumed["history"] != whole["history"]
