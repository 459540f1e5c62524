"""The decay map: grokking at the ``ci`` task (p = 31, 1,500 epochs) over a grid of weight
decays λ, for the AdamW baseline, the Stiefel rule and two of the mechanism's controls. The
logged history of each run gives the map's second axis, training length.

An arm of this experiment is ``"<arm>@wd=<λ>"`` (``"stiefel@wd=0.3"``); λ is the decoupled
weight decay of every non-frame parameter (and of W_Q, W_K in the baseline).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import ablation, grokking
from .grid import decay_cell, grid_arms
from .registry import Experiment

__all__ = ["ENTRIES", "DecayMapConfig", "PROFILES", "MAP_ARMS", "arm_names", "run"]

MAP_ARMS = ("baseline", "stiefel", "frozen", "no_decay_qk")
WEIGHT_DECAYS = (0.0, 0.1, 0.3, 1.0, 3.0)  # the grid: none, up to three times grokking's usual 1


@dataclass(frozen=True)
class DecayMapConfig:
    """The decay map: its grokking task, the grid of weight decays, the seeds. Chapter: regimes."""

    # the grokking ablation's task, so the λ = 1 column repeats its setting on seeds 0-9
    task: grokking.GrokkingConfig = field(default_factory=lambda: ablation.GROKKING_PROFILES["full"])
    weight_decays: tuple[float, ...] = WEIGHT_DECAYS
    seeds: tuple[int, ...] = tuple(range(10))  # 10 paired seeds a cell: 5 left intervals wide


def arm_names(config: DecayMapConfig) -> tuple[str, ...]:
    """Every ``"<arm>@wd=<λ>"`` of a profile. Chapter: regimes."""
    return grid_arms(MAP_ARMS, "wd", config.weight_decays)


PROFILES = {
    "full": DecayMapConfig(),
    # the chapter's live cell: two decays, one seed, a short horizon (seconds a run)
    "ci": DecayMapConfig(task=ablation.GROKKING_PROFILES["ci"], weight_decays=(0.0, 1.0), seeds=(0,)),
}
ARMS = tuple(dict.fromkeys(name for profile in PROFILES.values() for name in arm_names(profile)))


def run(config: DecayMapConfig, arm: str, seed: int, device, checkpoint=None, progress=True) -> dict:
    """One run: ``arm`` (``"<arm>@wd=<λ>"``) from ``seed`` on the map's task at decay λ. Chapter: regimes."""
    base, _, task = decay_cell(config, arm, seed, MAP_ARMS)
    return grokking.run(task, base, seed, device, checkpoint, progress)


ENTRIES = (  # this module's experiments, collected by the runner
    Experiment(
        "grokking_decay_map",
        PROFILES,
        ARMS,
        run,
        "grokking at ci scale over weight decays 0-3, four arms, 10 seeds",
        arms_of=arm_names,
    ),
)
