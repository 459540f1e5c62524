"""A fair fight on CIFAR-10 (issue 28): the AdamW baseline's and the Stiefel rule's W_Q, W_K
learning rate swept by :mod:`.study` in the long protocol of :mod:`.maps` (``cifar10_long``) (100 epochs, 10,000
images), a cell ``"<arm>@wd=<λ>"`` at each weight decay λ, on selection starts 100-102, scored by the
late test accuracy, three first rungs. A run takes ~6-7 minutes on one core.
"""

from __future__ import annotations

from . import cifar10, maps
from .grid import grid_arms
from .maps import MapConfig
from .relatives import without_parametrized_steps
from .study import Study, cell_run_names, in_cells, sweep_entry

__all__ = ["ENTRIES", "SWEPT", "PROFILES", "ARMS", "study", "train"]

SWEPT = ("baseline", "stiefel")


PROFILES = {  # λ = 1 first (the decay of the preprint's 12 starts); selection starts apart from the judged 0-11
    "full": MapConfig(maps.long_task("full"), (1.0, 0.3, 0.05), (100, 101, 102)),
    "ci": MapConfig(maps.long_task("ci"), (1.0,), (100,)),
}


def train(task, arm, seed, device, checkpoint, progress, qk_lr, *, what: str = "W_Q, W_K lr sweep") -> dict:
    """One CIFAR-10 run of ``arm`` with W_Q, W_K at ``qk_lr`` (0: frozen frames, below the ladder's foot)."""
    frozen = qk_lr == 0.0
    outcome = cifar10.train_arm(
        task,
        "frozen" if frozen else arm,
        seed,
        device,
        checkpoint,
        progress,
        qk_lr=None if frozen else qk_lr,
        description=f"cifar10 {what} {arm} start {seed}",
    )
    return outcome if frozen else without_parametrized_steps(arm, outcome)


def study(config: MapConfig) -> Study:
    """``cifar10_qk_lr`` at a profile: each (arm, λ) cell, the late test accuracy, three first rungs."""
    return Study(
        "cifar10_qk_lr",
        config.task,
        grid_arms(SWEPT, "wd", config.weight_decays),
        config.seeds,
        in_cells(train, SWEPT),
        "test_acc",
        start=(1, 1),
        frozen=None,
    )


ARMS = cell_run_names(study, SWEPT, PROFILES)  # lr 0: frozen frames


ENTRIES = (  # this module's experiments, collected by the runner
    sweep_entry(
        "cifar10_qk_lr",
        PROFILES,
        study,
        "CIFAR-10 long protocol, AdamW's and the Stiefel rule's W_Q, W_K lr swept at each λ on 3 selection starts",
        arms=ARMS,
    ),
)
