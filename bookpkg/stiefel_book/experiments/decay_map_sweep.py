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
from dataclasses import dataclass

from ..engine.grid import Grid, cell_run_names, grid_arms, in_cells
from ..engine.registry import JUDGED_CI, SWEEP_CI, profiles
from ..engine.study import Study, resolve_lrs, same_rate, sweep_entry
from ..results_reading import parse_grid_arm
from ..tasks import grokking
from . import fair_fight
from .maps import DECAY_MAP_PROFILES as MAP_PROFILES
from .maps import WEIGHT_DECAYS

__all__ = ["ENTRIES", "SWEEP_PROFILES", "study", "resolve"]

SWEPT = ("baseline", "stiefel")
AT_ONE = 1.0  # the decay whose choice grokking_qk_lr holds
ADOPTED_FROM = "grokking_decay_map_tuned"


@dataclass(frozen=True)
class DecaySweepConfig:
    task: grokking.GrokkingConfig
    weight_decays: tuple[float, ...] = tuple(w for w in WEIGHT_DECAYS if w != AT_ONE)
    seeds: tuple[int, ...] = fair_fight.SWEEP_PROFILES["full"].seeds  # grokking_qk_lr's selection seeds
    start_below: int = 2  # the first grid, as grokking_qk_lr's: two rungs under the task's lr, one over
    start_above: int = 1


MAP_TASKS = {profile: config.task for profile, config in MAP_PROFILES.items()}
SWEEP_PROFILES = profiles(DecaySweepConfig, MAP_TASKS, {**SWEEP_CI, "weight_decays": (0.0,)})
_train = in_cells(fair_fight.train, SWEPT)  # a cell "<arm>@wd=<λ>" at W_Q, W_K lr qk_lr (0: frozen frames)


def study(config: DecaySweepConfig) -> Study:
    """``grokking_decay_qk_lr`` at a profile: each (arm, λ) cell as ``grokking_qk_lr`` sweeps an arm."""
    cells = grid_arms(SWEPT, "wd", config.weight_decays)
    return Study.at("grokking_decay_qk_lr", config, cells, _train, frozen=None, diverged=True)


SWEEP_ARMS = cell_run_names(study, SWEPT, SWEEP_PROFILES)  # lr 0: frozen frames


@dataclass(frozen=True)
class PerDecayConfig:
    task: grokking.GrokkingConfig
    weight_decays: tuple[float, ...] = WEIGHT_DECAYS
    seeds: tuple[int, ...] = tuple(range(10))  # paired with the map's
    sweep_profile: str = "full"
    qk_lrs: tuple[tuple[str, float], ...] = ()  # resolved before the runs: one per cell "<arm>@wd=<λ>"


PROFILES = profiles(PerDecayConfig, MAP_TASKS, {**JUDGED_CI, "weight_decays": (0.0, 1.0)})


PER_DECAY = Grid(SWEPT)  # the map's cells "<arm>@wd=<λ>"


def resolve(config: PerDecayConfig, directory=None) -> PerDecayConfig:
    """``config`` with each cell's lr: its decay's choice in ``grokking_decay_qk_lr``, λ = 1's in
    ``grokking_qk_lr`` (:func:`..engine.study.resolve_lrs`: refused, with the command that grows the sweep,
    while open)."""

    def sweep_of(cell: str) -> tuple[str, Callable, str]:
        base, weight_decay = parse_grid_arm(cell, "wd", SWEPT)
        if weight_decay == AT_ONE:
            return "grokking_qk_lr", fair_fight.study(fair_fight.SWEEP_PROFILES["full"]).chosen, base
        return "grokking_decay_qk_lr", study(SWEEP_PROFILES["full"]).chosen, cell

    return resolve_lrs(config, sweep_of, None, directory, arms=PER_DECAY.names(config))


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
        fair_fight.train,
        "grokking's decay map (p = 31, λ 0-3, 10 seeds), AdamW and the Stiefel rule each at its lr tuned at that decay",
        rate="cell",  # a cell from its seed at its resolved lr
        diverged=True,  # a run that diverges scores 0, as in the sweep
        resolve=resolve,
        adopt=same_rate(ADOPTED_FROM),  # a cell at the lr grokking_decay_map_tuned already ran: its run
    ),
)
