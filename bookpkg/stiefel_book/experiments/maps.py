"""The maps: a task over a grid of one setting (:class:`..engine.grid.Grid`), arm names ``"<arm>@wd=<λ>"``
(``"stiefel@wd=0.3"``; λ the decoupled decay of every decayed parameter, and of W_Q, W_K in the
baseline) or ``"<arm>@flr=<qk_lr>"``, each run's logged history the map's second axis, training length.

- ``grokking_decay_map``: grokking at the ``ci`` task (p = 31, 1,500 epochs) over λ 0-3, the AdamW
  baseline, the Stiefel rule and two of the mechanism's controls, seeds 0-9.
- ``grokking_decay_map_tuned`` (issue 28): the same grid, each swept arm training W_Q, W_K at the lr the
  p = 31 sweep (``grokking_qk_lr``, at the task's λ = 1) chose for it, resolved before the runs and
  written into the config. Where an arm's chosen lr is the task's (the Stiefel rule's 3e-3), and for
  frozen frames (no lr), its cell is ``grokking_decay_map``'s run: the same computation (a frame lr
  equal to the task's is the task's lr), adopted rather than rerun, and marked so.
- ``cifar10_long``: CIFAR-10 where weight decay can act. The ``cifar10`` protocol trains 2 epochs with a
  decay budget Σ lr·λ of about 0.02: decay cannot act there, and every arm underfits. Here the same
  model trains 100 epochs on 10,000 images (7,800 steps), long enough for its train accuracy to pass its
  test accuracy, at λ ∈ {0.05, 0.3, 1}: budgets of about 0.2, 1.2 and 3.9; each run records the lr
  schedule's budget beside its metrics.
- ``induction_decay_map`` (issue 30): induction heads (:mod:`stiefel_book.tasks.routing`'s ``induction``, its ``full``
  setting) over λ 0-3, four arms each at the lr its sweep (``induction_qk_lr``, at the task's λ = 0.1)
  chose, resolved before the runs. Its λ = 0.1 cells are the judged ``induction`` runs' configuration
  exactly (seeds 0 of the three arms checked bit-identical, history included), so the findings read
  those runs there and the sweep skips them. About 4 core-hours (160 runs of ~1.5 minutes).
- ``grokking_trust_region``: the trust region where it binds, grokking at the ``ci`` task with the
  frames' lr raised until the cap ``‖ξ‖_F ≤ Δ`` acts, the full rule against ``no_trust_region`` at each
  W_Q, W_K lr. At the book's lr (3e-3) the scale-free step is about lr·sqrt(d r) ≈ 0.1 per frame against
  a radius of 0.5, so the cap never binds and the ablation's ``no_trust_region`` cannot differ. Every
  other parameter keeps the task's lr; each run records the share of frame-steps the trust region
  capped (``trust_capped``).

Chapter: regimes.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

from ..engine.grid import Grid
from ..engine.study import at_task_rate
from ..results_reading import grid_arm
from ..tasks import cifar10, grokking
from ..tasks.routing import run_induction
from . import ablation, fair_fight
from .cifar10 import PROFILES as CIFAR10_PROFILES
from .routing_sweep import INDUCTION_PROFILES, resolver

__all__ = [
    "MapConfig",
    "WEIGHT_DECAYS",
    "DECAY_MAP_PROFILES",
    "LONG_ARMS",
    "LONG_WEIGHT_DECAYS",
    "long_task",
    "DECAY_MAP_ENTRIES",
    "LONG_ENTRIES",
    "TRUST_REGION_ENTRIES",
    "INDUCTION_ENTRIES",
    "long_tasks",
]


@dataclass(frozen=True)
class MapConfig:
    """A map: its task, the grid of weight decays, the seeds. Chapter: regimes."""

    task: object
    weight_decays: tuple[float, ...]
    seeds: tuple[int, ...]


# --- grokking's decay map, at the task's lr and at tuned lrs --------------------------------------------------

MAP_ARMS = ("baseline", "stiefel", "frozen", "no_decay_qk")
WEIGHT_DECAYS = (0.0, 0.1, 0.3, 1.0, 3.0)  # the grid: none, up to three times grokking's usual 1
MAP = Grid(MAP_ARMS)
DECAY_MAP_PROFILES = {
    # the grokking ablation's task, so the λ = 1 column repeats its setting on seeds 0-9 (5 left intervals wide)
    "full": MapConfig(ablation.GROKKING_PROFILES["full"], WEIGHT_DECAYS, tuple(range(10))),
    # the chapter's live cell: two decays, one seed, a short horizon (seconds a run)
    "ci": MapConfig(ablation.GROKKING_PROFILES["ci"], (0.0, 1.0), (0,)),
}


TUNED_SWEPT = ("baseline", "stiefel", "no_decay_qk")  # the map's arms with a W_Q, W_K lr (frozen frames have none)


@dataclass(frozen=True)
class DecayMapTunedConfig:
    task: grokking.GrokkingConfig
    weight_decays: tuple[float, ...] = WEIGHT_DECAYS
    seeds: tuple[int, ...] = tuple(range(10))  # paired with grokking_decay_map's
    arms: tuple[str, ...] = TUNED_SWEPT
    sweep_profile: str = "full"  # the profile of grokking_qk_lr whose choices the arms take
    qk_lrs: tuple[tuple[str, float], ...] = ()  # resolved before the runs (fair_fight.resolve)


TUNED_PROFILES = {
    name: DecayMapTunedConfig(p.task, p.weight_decays, p.seeds, sweep_profile=name)
    for name, p in DECAY_MAP_PROFILES.items()
}


DECAY_MAP_ENTRIES = (
    MAP.entry(
        "grokking_decay_map",
        DECAY_MAP_PROFILES,
        grokking.run,
        "grokking at ci scale over weight decays 0-3, four arms, 10 seeds",
    ),
    MAP.entry(
        "grokking_decay_map_tuned",
        TUNED_PROFILES,
        fair_fight.train,
        "grokking's decay map (p = 31, λ 0-3, 10 seeds) with each arm's W_Q, W_K at its lr tuned at λ = 1",
        rate="arm",  # W_Q, W_K at the arm's resolved lr (frozen frames: none)
        resolve=fair_fight.resolve,  # each swept arm's lr chosen by grokking_qk_lr (refused until final)
        # grokking_decay_map's run where it is this one's computation: frozen frames, or an arm at the task's lr
        adopt=at_task_rate("grokking_decay_map", fair_fight.compact, base=lambda c, a, seed: MAP.cell(c, a, seed).base),
    ),
)


# --- CIFAR-10's long training ---------------------------------------------------------------------------------

LONG_ARMS = ("baseline", "stiefel", "frozen", "no_decay_qk")
LONG_WEIGHT_DECAYS = (0.05, 0.3, 1.0)  # DeiT's 0.05, then budgets at which decay shrinks weights by e^-1 and more
LONG_TASK = dataclasses.replace(
    CIFAR10_PROFILES["full"],
    train_size=10_000,  # class balanced (a prefix of the balanced order): ~4 s an epoch on one core
    epochs=100,  # 7,800 steps: the model fits its training set past its test accuracy
    log_every=5,  # a test pass over 10,000 images costs a third of an epoch: every 5th epoch
    checkpoint_every=10,  # at most ~40 s lost to an interruption
    seeds=(0, 1, 2),
)
LONG_PROFILES = {
    "full": MapConfig(LONG_TASK, LONG_WEIGHT_DECAYS, (0, 1, 2)),  # the "at least 3 paired starts"
    # the machinery in seconds: 1,000 images, 4 epochs, one decay, one start
    "ci": MapConfig(
        dataclasses.replace(CIFAR10_PROFILES["ci"], train_size=1_000, test_size=500, epochs=4, log_every=2),
        (1.0,),
        (0,),
    ),
}


def long_task(profile: str, **changes) -> cifar10.CIFAR10Config:
    """The long protocol's task at ``profile``, ``changes`` applied: every CIFAR-10 sweep and judged run's."""
    return dataclasses.replace(LONG_PROFILES[profile].task, **changes)


def long_tasks(**changes) -> dict:
    """``{profile: its long task, changes applied}`` (:func:`long_task`)."""
    return {profile: long_task(profile, **changes) for profile in LONG_PROFILES}


def _long_run(task, arm: str, seed: int, device, checkpoint, progress) -> dict:
    description = f"cifar10 long {grid_arm(arm, 'wd', task.weight_decay)} start {seed}"
    return cifar10.train_arm(task, arm, seed, device, checkpoint, progress, description=description)


LONG_ENTRIES = (
    Grid(LONG_ARMS).entry(
        "cifar10_long",
        LONG_PROFILES,
        _long_run,
        "CIFAR-10 patches, 100 epochs on 10,000 images, λ 0.05-1, four arms, 3 paired starts",
    ),
)


# --- induction heads' decay map ---------------------------------------------------------------------------------

INDUCTION_PROFILES_MAP = {
    # none, the task's 0.1, up to thirty times it (grokking's map's grid); the judged seeds, paired with induction's
    "full": MapConfig(INDUCTION_PROFILES["full"], WEIGHT_DECAYS, tuple(range(10))),
    "ci": MapConfig(INDUCTION_PROFILES["ci"], (0.0, 1.0), (0,)),
}


def _resolve_induction(config: MapConfig, directory=None) -> MapConfig:
    """``config`` with its task's per-arm W_Q, W_K lrs from ``induction_qk_lr`` (refused until settled)."""
    task = dataclasses.replace(config.task, seeds=config.seeds)
    return dataclasses.replace(config, task=resolver("induction_qk_lr")(task, directory))


def _induction_run(task, arm: str, seed: int, device, checkpoint, progress) -> dict:
    return {**run_induction(task, arm, seed, device, checkpoint, progress), "weight_decay": task.weight_decay}


INDUCTION_ENTRIES = (
    MAP.entry(
        "induction_decay_map",
        INDUCTION_PROFILES_MAP,
        _induction_run,
        "induction heads over weight decays 0-3 and training length, four arms at their tuned W_Q, W_K lrs, "
        "10 paired seeds",
        resolve=_resolve_induction,
    ),
)


# --- the trust region where it binds ----------------------------------------------------------------------------


@dataclass(frozen=True)
class TrustRegionConfig:
    """The trust-region runs: their grokking task, the grid of W_Q, W_K lrs, the seeds. Chapter: regimes."""

    task: grokking.GrokkingConfig
    qk_lrs: tuple[float, ...]
    seeds: tuple[int, ...]
    STORED_NAMES: ClassVar[dict] = {"qk_lrs": "frame_lrs"}  # the results file's name of a field


TR_ARMS = ("stiefel", "no_trust_region")
TRUST_REGION_PROFILES = {
    # from the book's lr (never binds) up to ~30x the radius's lr; paired by seed, as the decay map
    "full": TrustRegionConfig(ablation.GROKKING_PROFILES["full"], (3e-3, 1e-2, 3e-2, 1e-1), tuple(range(10))),
    "ci": TrustRegionConfig(ablation.GROKKING_PROFILES["ci"], (1e-1,), (0,)),
}


TRUST_REGION_ENTRIES = (
    Grid(TR_ARMS, "flr", "qk_lrs", sets=None).entry(
        "grokking_trust_region",
        TRUST_REGION_PROFILES,
        grokking.run,
        "grokking at ci scale, frames at raised lrs where the trust region binds: full rule vs no trust region, 10 "
        "seeds",
        value_as="qk_lr",
    ),
)
