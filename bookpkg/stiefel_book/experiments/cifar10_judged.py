"""CIFAR-10's fair fight, judged (issue 28), in the long protocol of :mod:`.maps` (``cifar10_long``) (100
epochs, 10,000 images) at the preprint's weight decay λ = 1:

- ``cifar10_peers_qk_lr``: the relatives' W_Q, W_K lr tuned on CIFAR-10 itself (not taken from
  grokking) by :mod:`.study`, on selection starts 100-101, three first rungs (geoopt's around 1e-1).
- ``cifar10_fair``: AdamW, the Stiefel rule and frozen frames on the judged starts 0-11 (the
  preprint's twelve), each swept arm at the lr its cell ``"<arm>@wd=1"`` of ``cifar10_qk_lr``
  chose.
- ``cifar10_fair_peers``: the relatives at their CIFAR-10 lrs on the same starts, paired.

A run takes ~6-7 minutes on one core: ``cifar10_fair`` is 36 runs (~4 core-hours), the
relatives' sweep at least 30, their judged runs 60.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field

from ..results_reading import grid_arm
from . import cifar10, cifar10_fair, maps
from .fair_fight import CENTERS
from .relatives import RELATIVES
from .study import Study, judged_entry, judged_run, sweep_entry

__all__ = [
    "ENTRIES",
    "PEERS",
    "CORE",
    "PeerSweepConfig",
    "PEER_SWEEP_PROFILES",
    "peer_study",
    "CifarFairConfig",
    "PROFILES",
    "PEER_PROFILES",
    "resolve",
    "run",
]

PEERS = tuple(RELATIVES)  # muon, muon_no_decay, geoopt_radam, per_entry, orthogonal_param
CORE = ("baseline", "stiefel")  # the swept arms of cifar10_qk_lr; frozen frames beside them
WEIGHT_DECAY = 1.0  # the decay of the preprint's twelve starts


# --- the relatives' sweep ---------------------------------------------------------------------


@dataclass(frozen=True)
class PeerSweepConfig:
    task: cifar10.CIFAR10Config = field(default_factory=lambda: maps.long_task("full", weight_decay=WEIGHT_DECAY))
    arms: tuple[str, ...] = PEERS
    seeds: tuple[int, ...] = (100, 101)  # selection starts, apart from the judged 0-11


PEER_SWEEP_PROFILES = {
    "full": PeerSweepConfig(),
    "ci": PeerSweepConfig(task=maps.long_task("ci", weight_decay=WEIGHT_DECAY), seeds=(100,)),
}


def peer_study(config: PeerSweepConfig) -> Study:
    """``cifar10_peers_qk_lr`` at a profile: three first rungs around each relative's center, the late
    test accuracy; no lr 0 (the relatives have no frozen run of their own)."""
    train = functools.partial(cifar10_fair.train, what="relatives' W_Q, W_K lr sweep")
    centers = tuple(CENTERS.items())
    return Study(
        "cifar10_peers_qk_lr",
        config.task,
        config.arms,
        config.seeds,
        train,
        "test_acc",
        start=(1, 1),
        centers=centers,
        frozen=None,
        floor=False,
    )


# --- the judged runs --------------------------------------------------------------------------


@dataclass(frozen=True)
class CifarFairConfig:
    task: cifar10.CIFAR10Config = field(default_factory=lambda: maps.long_task("full", weight_decay=WEIGHT_DECAY))
    arms: tuple[str, ...] = CORE  # the swept arms it judges (frozen frames run beside the core)
    sweep: str = "cifar10_qk_lr"  # the sweep whose choices the arms take
    sweep_profile: str = "full"
    qk_lrs: tuple[tuple[str, float], ...] = ()  # resolved before the runs (:func:`resolve`)
    seeds: tuple[int, ...] = tuple(range(12))  # the judged starts, the preprint's twelve


PROFILES = {
    "full": CifarFairConfig(),
    "ci": CifarFairConfig(task=maps.long_task("ci", weight_decay=WEIGHT_DECAY), sweep_profile="ci", seeds=(0,)),
}
PEER_PROFILES = {name: dataclasses.replace(c, arms=PEERS, sweep="cifar10_peers_qk_lr") for name, c in PROFILES.items()}


def resolve(config: CifarFairConfig, directory=None) -> CifarFairConfig:
    """``config`` with each arm's W_Q, W_K lr chosen from its sweep's file (the core arms: their
    λ = 1 cell of ``cifar10_qk_lr``); refused until every choice is final: interior, or lr 0."""
    if config.sweep == "cifar10_qk_lr":
        core = cifar10_fair.study(cifar10_fair.PROFILES["full"])
        return core.resolve(config, directory, lambda sweep, arm: core.chosen(sweep, grid_arm(arm, "wd", WEIGHT_DECAY)))
    return peer_study(PEER_SWEEP_PROFILES["full"]).resolve(config, directory)


def run(config: CifarFairConfig, arm: str, seed: int, device, checkpoint=None, progress=True) -> dict:
    """One judged run: ``arm`` from start ``seed`` at its resolved W_Q, W_K lr (``frozen``, or lr 0: none)."""
    return judged_run(train_judged, config, arm, seed, device, checkpoint, progress)


train_judged = functools.partial(cifar10_fair.train, what="fair fight")  # one judged run's training
ENTRIES = (  # this module's experiments, collected by the runner
    sweep_entry(
        "cifar10_peers_qk_lr",
        PEER_SWEEP_PROFILES,
        peer_study,
        "CIFAR-10 long protocol at λ = 1, the relatives' W_Q, W_K lr swept on 2 selection starts until interior",
        arms=peer_study(PEER_SWEEP_PROFILES["full"]).run_names(PEERS),
    ),
    judged_entry(
        "cifar10_fair",
        PROFILES,
        (*CORE, "frozen"),
        train_judged,
        "CIFAR-10 long protocol at λ = 1, AdamW, the Stiefel rule (each at its tuned W_Q, W_K lr) and frozen "
        "frames, 12 paired starts",
        resolve,
    ),
    judged_entry(
        "cifar10_fair_peers",
        PEER_PROFILES,
        PEERS,
        train_judged,
        "CIFAR-10 long protocol at λ = 1, the relatives at their CIFAR-10 W_Q, W_K lrs, 12 starts paired with "
        "cifar10_fair",
        resolve,
    ),
)
