"""CIFAR-10's fair fight, judged (issue 28), in the long protocol of :mod:`.cifar10_long` (100
epochs, 10,000 images) at the preprint's weight decay λ = 1:

- ``cifar10_peers_qk_lr``: the relatives' W_Q, W_K lr tuned on CIFAR-10 itself (not taken from
  grokking), on selection starts 100-101: a smaller grid than the core arms', three rungs of
  :data:`stiefel_book.choices.LADDER` around the task's lr (geoopt's around 1e-1, as on grokking) grown
  by the rule of :mod:`.selection` until the choice is interior.
- ``cifar10_fair``: AdamW, the Stiefel rule and frozen frames on the judged starts 0-11 (the
  preprint's twelve), each swept arm at the lr its cell ``"<arm>@wd=1"`` of ``cifar10_qk_lr``
  chose.
- ``cifar10_fair_peers``: the relatives at their CIFAR-10 lrs on the same starts, paired.

Each judged experiment resolves its lrs before the runs (:func:`resolve`) and writes them into its
results file's config; a sweep that has not settled stops it with the command that grows the
sweep. A run takes ~6-7 minutes on one core: ``cifar10_fair`` is 36 runs (~4 core-hours), the
relatives' sweep at least 30, their judged runs 60.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ..choices import LADDER, ladder_around, late_scores, pending_rungs, settled_or_none
from ..results_reading import grid_arm, parse_grid_arm
from . import cifar10, cifar10_fair, cifar10_long
from .fair_fight import center
from .registry import Experiment
from .relatives import RELATIVES, without_parametrized_steps
from .resolving import resolve_lrs
from .selection import grow_arms

__all__ = [
    "ENTRIES",
    "PEERS",
    "CORE",
    "PeerSweepConfig",
    "PEER_SWEEP_PROFILES",
    "PEER_SWEEP_ARMS",
    "peer_start_arms",
    "run_peer_sweep",
    "peer_sweep_scores",
    "peer_chosen",
    "sweep_peers",
    "CifarFairConfig",
    "PROFILES",
    "PEER_PROFILES",
    "resolve",
    "run",
]

PEERS = tuple(RELATIVES)  # muon, muon_no_decay, geoopt_radam, per_entry, orthogonal_param
CORE = ("baseline", "stiefel")  # the swept arms of cifar10_qk_lr; frozen frames beside them
WEIGHT_DECAY = 1.0  # the decay of the preprint's twelve starts
KEY = "qklr"


def _task(profile: str) -> cifar10.CIFAR10Config:
    return dataclasses.replace(cifar10_long.PROFILES[profile].task, weight_decay=WEIGHT_DECAY)


# --- the relatives' sweep ---------------------------------------------------------------------


@dataclass(frozen=True)
class PeerSweepConfig:
    task: cifar10.CIFAR10Config = field(default_factory=lambda: _task("full"))
    arms: tuple[str, ...] = PEERS
    seeds: tuple[int, ...] = (100, 101)  # selection starts, apart from the judged 0-11


PEER_SWEEP_PROFILES = {"full": PeerSweepConfig(), "ci": PeerSweepConfig(task=_task("ci"), seeds=(100,))}
PEER_SWEEP_ARMS = tuple(grid_arm(arm, KEY, lr) for arm in PEERS for lr in LADDER)


def _start_rungs(config: PeerSweepConfig, arm: str) -> tuple[float, ...]:
    return ladder_around(center(arm, config.task.lr), 1, 1)


def peer_start_arms(config: PeerSweepConfig) -> tuple[str, ...]:
    """Every relative's first grid: three rungs around its center."""
    return tuple(grid_arm(arm, KEY, lr) for arm in config.arms for lr in _start_rungs(config, arm))


def run_peer_sweep(config: PeerSweepConfig, arm: str, seed: int, device, checkpoint=None, progress=True) -> dict:
    """One run of the relatives' sweep: ``"<relative>@qklr=<lr>"`` from start ``seed``."""
    peer, lr = parse_grid_arm(arm, KEY, PEERS)
    if lr not in LADDER:
        raise ValueError(f"{arm!r}: the lr must lie on the ladder {LADDER}")
    task = dataclasses.replace(config.task, seeds=(seed,))
    description = f"cifar10 relatives' W_Q, W_K lr sweep {arm} start {seed}"
    outcome = cifar10.train_arm(task, peer, seed, device, checkpoint, progress, frame_lr=lr, description=description)
    return without_parametrized_steps(peer, outcome)


def peer_sweep_scores(sweep: dict, arm: str) -> dict[float, list[float]]:
    """``{lr: [late test accuracy per finished start]}`` of one relative."""
    return late_scores(sweep, arm, "test_acc", key=KEY)


def _pending(sweep: dict | None, config: PeerSweepConfig, arm: str) -> tuple[float, ...]:
    scores = peer_sweep_scores(sweep, arm) if sweep else {}
    return pending_rungs(scores, len(config.seeds), _start_rungs(config, arm), center(arm, config.task.lr))


def peer_chosen(sweep: dict, arm: str) -> dict | None:
    """``{"lr", "score", "interior", "scores"}``: the rule's choice for one relative (``None``
    before any rung holds every selection start)."""
    n, around = len(sweep["config"]["seeds"]), center(arm, sweep["config"]["task"]["lr"])
    return settled_or_none(peer_sweep_scores(sweep, arm), n, around)


def sweep_peers(run_experiment, profile: str, arms: tuple[str, ...] | None = None, **options) -> dict:
    """Grow the relatives' sweep of ``arms`` (default all) until each choice is interior (resumable)."""
    config = PEER_SWEEP_PROFILES[profile]
    return grow_arms(run_experiment, "cifar10_peers_qk_lr", profile, config, arms, _pending, KEY, **options)


# --- the judged runs --------------------------------------------------------------------------


@dataclass(frozen=True)
class CifarFairConfig:
    task: cifar10.CIFAR10Config = field(default_factory=lambda: _task("full"))
    arms: tuple[str, ...] = CORE  # the swept arms it judges (frozen frames run beside the core)
    sweep: str = "cifar10_qk_lr"  # the sweep whose choices the arms take
    sweep_profile: str = "full"
    qk_lrs: tuple[tuple[str, float], ...] = ()  # resolved before the runs (:func:`resolve`)
    seeds: tuple[int, ...] = tuple(range(12))  # the judged starts, the preprint's twelve


PROFILES = {"full": CifarFairConfig(), "ci": CifarFairConfig(task=_task("ci"), sweep_profile="ci", seeds=(0,))}
PEER_PROFILES = {name: dataclasses.replace(c, arms=PEERS, sweep="cifar10_peers_qk_lr") for name, c in PROFILES.items()}


def _choice(sweep: dict, name: str, arm: str) -> dict | None:
    if name == "cifar10_qk_lr":
        scores = cifar10_fair.sweep_scores(sweep, grid_arm(arm, "wd", WEIGHT_DECAY))
        return settled_or_none(scores, len(sweep["config"]["seeds"]), sweep["config"]["task"]["lr"])
    return peer_chosen(sweep, arm)


def resolve(config: CifarFairConfig, directory=None) -> CifarFairConfig:
    """``config`` with each arm's W_Q, W_K lr chosen from its sweep's file (refused until every
    choice is final: interior, or lr 0)."""
    return resolve_lrs(config, config.sweep, lambda sweep, arm: _choice(sweep, config.sweep, arm), directory)


def run(config: CifarFairConfig, arm: str, seed: int, device, checkpoint=None, progress=True) -> dict:
    """One judged run: ``arm`` from start ``seed`` at its resolved W_Q, W_K lr (``frozen``: none)."""
    task = dataclasses.replace(config.task, seeds=(seed,))
    description = f"cifar10 fair fight {arm} start {seed}"
    lrs = dict(config.qk_lrs)
    if arm == "frozen" or lrs.get(arm) == 0.0:  # the sweep may choose lr 0: the arm is frozen frames
        return {
            **cifar10.train_arm(task, "frozen", seed, device, checkpoint, progress, description=description),
            "qk_lr": 0.0,
        }
    if arm not in lrs:
        raise ValueError(f"{arm!r} has no resolved W_Q, W_K lr in this config; it has {sorted(lrs)}")
    outcome = cifar10.train_arm(
        task, arm, seed, device, checkpoint, progress, frame_lr=lrs[arm], description=description
    )
    return {**without_parametrized_steps(arm, outcome), "qk_lr": lrs[arm]}


ENTRIES = (  # this module's experiments, collected by the runner
    Experiment(
        "cifar10_peers_qk_lr",
        PEER_SWEEP_PROFILES,
        PEER_SWEEP_ARMS,
        run_peer_sweep,
        "CIFAR-10 long protocol at λ = 1, the relatives' W_Q, W_K lr swept on 2 selection starts until interior",
        arms_of=peer_start_arms,
    ),
    Experiment(
        "cifar10_fair",
        PROFILES,
        (*CORE, "frozen"),
        run,
        "CIFAR-10 long protocol at λ = 1, AdamW, the Stiefel rule (each at its tuned W_Q, W_K lr) and frozen "
        "frames, 12 paired starts",
        resolve=resolve,
    ),
    Experiment(
        "cifar10_fair_peers",
        PEER_PROFILES,
        PEERS,
        run,
        "CIFAR-10 long protocol at λ = 1, the relatives at their CIFAR-10 W_Q, W_K lrs, 12 starts paired with "
        "cifar10_fair",
        resolve=resolve,
    ),
)
