"""The decay map tuned decay by decay (issue 28's fair fight, carried across the map's decays).

``grokking_decay_map_tuned`` gives each arm the W_Q, W_K lr that ``grokking_qk_lr`` chose at
λ = 1 and keeps it at every decay. On CIFAR-10, where the sweep ran at each decay, each arm's
best lr moves with the decay, so a map read at λ = 1's rates may compare arms at rates tuned
elsewhere. Here:

- ``grokking_decay_qk_lr``: AdamW's and the Stiefel rule's W_Q, W_K lr swept at each of the map's
  other decays (0, 0.1, 0.3, 3) as ``grokking_qk_lr`` sweeps an arm, a cell ``"<arm>@wd=<λ>"`` each.
- ``grokking_decay_map_per_decay``: the map's grid (λ 0-3, seeds 0-9) for those two arms, each
  cell at the lr its decay chose (λ = 1: ``grokking_qk_lr``'s choice), resolved before the runs
  and written into the config. A cell at the lr ``grokking_decay_map_tuned`` already ran is that
  file's run, adopted (the same computation).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..results_reading import parse_grid_arm
from ..tasks import grokking
from . import fair_fight
from .grid import Cell, Grid, grid_arms
from .maps import DECAY_MAP_PROFILES as MAP_PROFILES
from .maps import WEIGHT_DECAYS
from .study import Study, cell_run_names, in_cells, judged_run, resolve_lrs, same_rate, sweep_entry

__all__ = [
    "ENTRIES",
    "SWEPT",
    "DecaySweepConfig",
    "SWEEP_PROFILES",
    "PerDecayConfig",
    "PROFILES",
    "study",
    "resolve",
    "run_cell",
]

SWEPT = ("baseline", "stiefel")
AT_ONE = 1.0  # the decay whose choice grokking_qk_lr holds
ADOPTED_FROM = "grokking_decay_map_tuned"


@dataclass(frozen=True)
class DecaySweepConfig:
    task: grokking.GrokkingConfig = field(default_factory=lambda: MAP_PROFILES["full"].task)
    weight_decays: tuple[float, ...] = tuple(w for w in WEIGHT_DECAYS if w != AT_ONE)
    seeds: tuple[int, ...] = fair_fight.SWEEP_PROFILES["full"].seeds  # grokking_qk_lr's selection seeds
    start_below: int = 2  # the first grid, as grokking_qk_lr's: two rungs under the task's lr, one over
    start_above: int = 1


SWEEP_PROFILES = {
    "full": DecaySweepConfig(),
    "ci": DecaySweepConfig(
        task=MAP_PROFILES["ci"].task, weight_decays=(0.0,), seeds=(100,), start_below=1, start_above=0
    ),
}
_train = in_cells(fair_fight.train, SWEPT)  # a cell "<arm>@wd=<λ>" at W_Q, W_K lr qk_lr (0: frozen frames)


def study(config: DecaySweepConfig) -> Study:
    """``grokking_decay_qk_lr`` at a profile: each (arm, λ) cell as ``grokking_qk_lr`` sweeps an arm."""
    start = (config.start_below, config.start_above)
    return Study(
        "grokking_decay_qk_lr",
        config.task,
        grid_arms(SWEPT, "wd", config.weight_decays),
        config.seeds,
        _train,
        start=start,
        frozen=None,
        diverged=True,
    )


SWEEP_ARMS = cell_run_names(study, SWEPT, SWEEP_PROFILES)  # lr 0: frozen frames


@dataclass(frozen=True)
class PerDecayConfig:
    task: grokking.GrokkingConfig = field(default_factory=lambda: MAP_PROFILES["full"].task)
    weight_decays: tuple[float, ...] = WEIGHT_DECAYS
    seeds: tuple[int, ...] = tuple(range(10))  # paired with the map's
    sweep_profile: str = "full"
    qk_lrs: tuple[tuple[str, float], ...] = ()  # resolved before the runs: one per cell "<arm>@wd=<λ>"


PROFILES = {
    "full": PerDecayConfig(),
    "ci": PerDecayConfig(task=MAP_PROFILES["ci"].task, weight_decays=(0.0, 1.0), seeds=(0,), sweep_profile="ci"),
}


PER_DECAY = Grid(SWEPT)  # the map's cells "<arm>@wd=<λ>"


def resolve(config: PerDecayConfig, directory=None) -> PerDecayConfig:
    """``config`` with each cell's lr: its decay's choice in ``grokking_decay_qk_lr``, λ = 1's in
    ``grokking_qk_lr`` (:func:`.study.resolve_lrs`: refused, with the command that grows the sweep, while open)."""

    def sweep_of(cell: str) -> tuple[str, Callable, str]:
        base, weight_decay = parse_grid_arm(cell, "wd", SWEPT)
        if weight_decay == AT_ONE:
            return "grokking_qk_lr", fair_fight.study(fair_fight.SWEEP_PROFILES["full"]).chosen, base
        return "grokking_decay_qk_lr", study(SWEEP_PROFILES["full"]).chosen, cell

    return resolve_lrs(config, sweep_of, None, directory, arms=PER_DECAY.names(config))


def run_cell(config: PerDecayConfig, cell: Cell, device, checkpoint=None, progress=True) -> dict:
    """One judged run: a cell ``"<arm>@wd=<λ>"`` from its seed at its resolved lr (a run that
    diverges scores 0, as in the sweep)."""
    return judged_run(_train, config, cell.arm, cell.seed, device, checkpoint, progress, diverged=True)


ENTRIES = (  # this module's experiments, collected by the runner
    sweep_entry(
        "grokking_decay_qk_lr",
        SWEEP_PROFILES,
        study,
        "grokking's decay map (p = 31): AdamW's and the Stiefel rule's W_Q, W_K lr swept at each decay but λ = 1, "
        "5 selection seeds",
        arms=SWEEP_ARMS,
    ),
    PER_DECAY.entry(
        "grokking_decay_map_per_decay",
        PROFILES,
        run_cell,
        "grokking's decay map (p = 31, λ 0-3, 10 seeds), AdamW and the Stiefel rule each at its lr tuned at that decay",
        resolve=resolve,
        adopt=same_rate(ADOPTED_FROM),  # a cell at the lr grokking_decay_map_tuned already ran: its run
    ),
)
