"""The routing decay map (issue 30): induction heads (:mod:`.routing`'s ``induction``, its ``full``
setting) over a grid of weight decays λ, for the AdamW baseline, the Stiefel rule, frozen frames
and AdamW without decay on W_Q, W_K; each run's history (every 100 steps) gives the map's second
axis, training length. Each arm trains W_Q, W_K at the lr its sweep (``induction_qk_lr``, at the
task's λ = 0.1) chose, resolved before the runs as the judged experiment's are; λ is the decoupled
decay of every decayed parameter (and of W_Q, W_K in the baseline).

An arm is ``"<arm>@wd=<λ>"`` (``"stiefel@wd=0.3"``). Its λ = 0.1 cells are the judged ``induction``
runs' configuration exactly (seeds 0 of the three arms checked bit-identical, history included), so
the findings read those runs there and the sweep skips them. Cost on one core: 4 arms x 4 decays
x 10 seeds = 160 induction runs of about 1.5 minutes (:mod:`.routing`), about 4 core-hours; the
``ci`` profile, 8 runs of a second or less.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from .grid import decay_cell, grid_arms
from .routing import INDUCTION_PROFILES, InductionConfig, run_induction
from .routing_sweep import resolver

__all__ = ["MAP_ARMS", "WEIGHT_DECAYS", "RoutingDecayMapConfig", "PROFILES", "ARMS", "arm_names", "resolve", "run"]

MAP_ARMS = ("baseline", "stiefel", "frozen", "no_decay_qk")
WEIGHT_DECAYS = (0.0, 0.1, 0.3, 1.0, 3.0)  # none, the task's 0.1, up to thirty times it (grokking's map's grid)


@dataclass(frozen=True)
class RoutingDecayMapConfig:
    task: InductionConfig = field(default_factory=lambda: INDUCTION_PROFILES["full"])
    weight_decays: tuple[float, ...] = WEIGHT_DECAYS
    seeds: tuple[int, ...] = tuple(range(10))  # the judged seeds, paired with the induction experiment's


PROFILES = {
    "full": RoutingDecayMapConfig(),
    "ci": RoutingDecayMapConfig(task=INDUCTION_PROFILES["ci"], weight_decays=(0.0, 1.0), seeds=(0,)),
}


def arm_names(config: RoutingDecayMapConfig) -> tuple[str, ...]:
    """Every ``"<arm>@wd=<λ>"`` of a profile."""
    return grid_arms(MAP_ARMS, "wd", config.weight_decays)


ARMS = tuple(dict.fromkeys(name for profile in PROFILES.values() for name in arm_names(profile)))


def resolve(config: RoutingDecayMapConfig, directory=None) -> RoutingDecayMapConfig:
    """``config`` with its task's per-arm W_Q, W_K lrs from ``induction_qk_lr`` (refused until settled)."""
    task = dataclasses.replace(config.task, seeds=config.seeds)
    return dataclasses.replace(config, task=resolver("induction_qk_lr")(task, directory))


def run(config: RoutingDecayMapConfig, arm: str, seed: int, device, checkpoint=None, progress=True) -> dict:
    """One run: ``arm`` (``"<arm>@wd=<λ>"``) from ``seed`` on the map's task at decay λ."""
    base, weight_decay, task = decay_cell(config, arm, seed, MAP_ARMS)
    return {**run_induction(task, base, seed, device, checkpoint, progress), "weight_decay": weight_decay}
