"""The grokking experiment (Power et al. 2022; Nanda et al. 2023): the AdamW baseline against Stiefel
W_Q, W_K on modular addition, its profiles (the task itself, its model and training:
:mod:`stiefel_book.tasks.grokking`), and the explorer's small problem. What the runs say is read by
:mod:`stiefel_book.findings.grokking`."""

from __future__ import annotations

import dataclasses

import torch

from ..engine.registry import Experiment
from ..tasks.grokking import GrokkingConfig, run

ARMS = ("baseline", "stiefel")

PROFILES = {
    "full": GrokkingConfig(),
    # Small enough for two arms in about a minute on two cores; a larger train fraction and lr
    # bring generalisation within 1,500 epochs, so the page still shows the phenomenon.
    "ci": GrokkingConfig(
        p=31,
        train_fraction=0.6,
        d_model=64,
        n_heads=4,
        d_mlp=256,
        lr=3e-3,
        epochs=1500,
        log_every=25,
        seeds=(0,),
        cpu_threads=1,
    ),
}

EXPLORE = GrokkingConfig(
    p=13, train_fraction=0.6, d_model=32, n_heads=2, d_mlp=64, epochs=200, log_every=10, seeds=(0,), cpu_threads=1
)


def explore(
    lr_baseline: float,
    lr_stiefel: float,
    epochs: int = 200,
    seed: int = 0,
    *,
    arms: tuple[str, str] = ("baseline", "stiefel"),
) -> dict[str, list[dict]]:
    """Two arms (default the baseline and the Stiefel rule; any of the ablation's) on a problem
    small enough for a widget (seconds), at their own learning rates: histories by arm."""
    base = dataclasses.replace(EXPLORE, epochs=epochs, seeds=(seed,))
    cpu = torch.device("cpu")
    return {
        arm: run(dataclasses.replace(base, lr=lr), arm, seed, cpu, progress=False)["history"]
        for arm, lr in zip(arms, (lr_baseline, lr_stiefel))
    }


ENTRIES = (  # this module's experiments, collected by the runner
    Experiment(
        "grokking",
        PROFILES,
        ARMS,
        run,
        "modular addition, 20,000 epochs",
        optional_arms=("frozen", "no_decay_qk"),
    ),
)
