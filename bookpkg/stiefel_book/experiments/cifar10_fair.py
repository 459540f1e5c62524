"""CIFAR-10's fair fight (issue 28), by :mod:`..engine.study`, in the long protocol of :mod:`.maps`
(``cifar10_long``: 100 epochs, 10,000 images):

- ``cifar10_qk_lr``: the AdamW baseline's and the Stiefel rule's W_Q, W_K learning rate swept in a
  cell ``"<arm>@wd=<λ>"`` at each weight decay λ, on selection starts 100-102, scored by the late
  test accuracy, three first rungs.
- ``cifar10_peers_qk_lr``: the relatives' W_Q, W_K lr tuned on CIFAR-10 itself (not taken from
  grokking) at the preprint's weight decay λ = 1, on selection starts 100-101, three first rungs
  (geoopt's around 1e-1).
- ``cifar10_fair``: AdamW, the Stiefel rule and frozen frames on the judged starts 0-11 (the
  preprint's twelve) at λ = 1, each swept arm at the lr its cell ``"<arm>@wd=1"`` of ``cifar10_qk_lr``
  chose; ``cifar10_fair_peers``: the relatives at their CIFAR-10 lrs on the same starts, paired.
- ``cifar10_fair_decay``: the fight at the decay of largest gap (issue 28: "12 paired starts at the
  tuned lrs and the decay of largest gap"). Once every cell of ``cifar10_qk_lr`` is final, the decay
  of largest gap is the λ at which the Stiefel rule's sweep score at its chosen lr minus AdamW's at
  its chosen lr is largest in absolute value, on the selection starts; both arms run there, at those
  lrs, on the judged starts 0-11, paired. At λ = 1 it has nothing to run: ``cifar10_fair`` holds
  those judged runs. The decay and the lrs are resolved before the first run (:func:`resolve_decay`)
  and written into the results file's config; ``book/protocol.yml`` declared the rule (family
  ``cifar10_fair_decay``) before it.

A run takes ~6-7 minutes on one core: ``cifar10_fair`` is 36 runs (~4 core-hours), the relatives'
sweep at least 30, their judged runs 60.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

from ..arms.relatives import RELATIVES, without_parametrized_steps
from ..choices import cell_choices, widest
from ..engine.grid import cell_run_names, grid_arms, in_cells
from ..engine.registry import JUDGED_CI, profiles
from ..engine.study import Study, at_rate, judged_entry, sweep_entry
from ..results import load_results
from ..tasks import cifar10
from . import maps
from .fair_fight import CENTERS
from .maps import MapConfig

__all__ = [
    "ENTRIES",
    "SWEPT",
    "SWEEP_PROFILES",
    "SWEEP_ARMS",
    "study",
    "train",
    "PEERS",
    "PEER_SWEEP_PROFILES",
    "peer_study",
    "resolve",
    "decay_choices",
    "resolve_decay",
]

SWEPT = ("baseline", "stiefel")  # the core arms, swept at each λ; frozen frames judged beside them
PEERS = tuple(RELATIVES)  # muon, muon_no_decay, geoopt_radam, per_entry, orthogonal_param
WEIGHT_DECAY = 1.0  # the decay of the preprint's twelve starts
SWEEP = "cifar10_qk_lr"
AT_ONE = maps.long_tasks(weight_decay=WEIGHT_DECAY)  # the long protocol at the preprint's decay


# --- the core sweep ---------------------------------------------------------------------------

SWEEP_PROFILES = {  # λ = 1 first (the decay of the preprint's 12 starts); selection starts apart from the judged 0-11
    "full": MapConfig(maps.long_task("full"), (1.0, 0.3, 0.05), (100, 101, 102)),
    "ci": MapConfig(maps.long_task("ci"), (1.0,), (100,)),
}


def train(task, arm, seed, device, checkpoint, progress, qk_lr, *, what: str = "W_Q, W_K lr sweep") -> dict:
    """One CIFAR-10 run of ``arm`` with W_Q, W_K at ``qk_lr`` (0: frozen frames, below the ladder's foot)."""
    run = at_rate(cifar10.train_arm, description=f"cifar10 {what} {arm} start {seed}")
    return without_parametrized_steps(arm, run(task, arm, seed, device, checkpoint, progress, qk_lr))


def study(config: MapConfig) -> Study:
    """``cifar10_qk_lr`` at a profile: each (arm, λ) cell, the late test accuracy, three first rungs."""
    cells = grid_arms(SWEPT, "wd", config.weight_decays)
    return Study.at(SWEEP, config, cells, in_cells(train, SWEPT), metric="test_acc", start=(1, 1), frozen=None)


SWEEP_ARMS = cell_run_names(study, SWEPT, SWEEP_PROFILES)  # lr 0: frozen frames


# --- the relatives' sweep ---------------------------------------------------------------------


@dataclass(frozen=True)
class PeerSweepConfig:
    task: cifar10.CIFAR10Config
    arms: tuple[str, ...] = PEERS
    seeds: tuple[int, ...] = (100, 101)  # selection starts, apart from the judged 0-11


PEER_SWEEP_PROFILES = profiles(PeerSweepConfig, AT_ONE, {"seeds": (100,)})


def peer_study(config: PeerSweepConfig) -> Study:
    """``cifar10_peers_qk_lr`` at a profile: three first rungs around each relative's center, the late
    test accuracy; no lr 0 (the relatives have no frozen run of their own)."""
    train_peer = functools.partial(train, what="relatives' W_Q, W_K lr sweep")
    options = dict(metric="test_acc", start=(1, 1), centers=CENTERS, frozen=None, floor=False)
    return Study.at("cifar10_peers_qk_lr", config, config.arms, train_peer, **options)


# --- the judged runs at λ = 1 -----------------------------------------------------------------


@dataclass(frozen=True)
class CifarFairConfig:
    task: cifar10.CIFAR10Config
    arms: tuple[str, ...] = SWEPT  # the swept arms it judges (frozen frames run beside the core)
    sweep: str = SWEEP  # the sweep whose choices the arms take
    sweep_profile: str = "full"
    qk_lrs: tuple[tuple[str, float], ...] = ()  # resolved before the runs (:func:`resolve`)
    seeds: tuple[int, ...] = tuple(range(12))  # the judged starts, the preprint's twelve


PROFILES = profiles(CifarFairConfig, AT_ONE, JUDGED_CI)
PEER_PROFILES = profiles(dataclasses.replace, PROFILES, arms=PEERS, sweep="cifar10_peers_qk_lr")


def resolve(config: CifarFairConfig, directory=None) -> CifarFairConfig:
    """``config`` with each arm's W_Q, W_K lr chosen from its sweep's file (the core arms: their
    λ = 1 cell of ``cifar10_qk_lr``); refused until every choice is final: interior, or lr 0."""
    if config.sweep == SWEEP:
        core = study(SWEEP_PROFILES["full"])
        return core.resolve(config, directory, core.in_cells("wd", WEIGHT_DECAY))
    return peer_study(PEER_SWEEP_PROFILES["full"]).resolve(config, directory)


train_judged = functools.partial(train, what="fair fight")  # one judged run's training


# --- the judged runs at the decay of largest gap ----------------------------------------------


def decay_choices(sweep: dict | None) -> dict[float, dict[str, dict]] | None:
    """``{λ: {arm: its cell's choice}}`` (``{"lr", "score", "interior", "scores"}``) for every decay
    of the sweep, or ``None`` while a cell has no choice or one at its grid's edge."""
    if not sweep:
        return None
    out = {float(decay): cell_choices(sweep, SWEPT, decay) for decay in sweep["config"]["weight_decays"]}
    final = all(pick and pick["interior"] for picks in out.values() for pick in picks.values())
    return out if final else None


def largest_gap(choices: dict[float, dict[str, dict]]) -> tuple[float, dict[float, float]]:
    """``(λ, {λ: gap})``: each decay's Stiefel − AdamW gap of chosen scores (fractions), and the λ
    whose gap is largest in absolute value (ties: the first decay of the sweep's order)."""
    gaps = {decay: picks["stiefel"]["score"] - picks["baseline"]["score"] for decay, picks in choices.items()}
    return widest(gaps), gaps


@dataclass(frozen=True)
class DecayFairConfig:
    task: cifar10.CIFAR10Config
    arms: tuple[str, ...] = SWEPT
    sweep_profile: str = "full"
    gaps: tuple[tuple[float, float], ...] = ()  # resolved: each decay's gap on the selection starts
    qk_lrs: tuple[tuple[str, float], ...] = ()  # resolved: each arm's lr in the chosen decay's cell
    seeds: tuple[int, ...] = tuple(range(12))  # the judged starts, paired with cifar10_fair's


DECAY_PROFILES = profiles(DecayFairConfig, maps.long_tasks(), JUDGED_CI)


def resolve_decay(config: DecayFairConfig, directory=None) -> DecayFairConfig:
    """``config`` at the decay of largest gap (``task.weight_decay``), with each arm's lr there and
    every decay's gap. Refused while a cell of the sweep is open, and at λ = 1 (nothing to run)."""
    if config.qk_lrs:
        return config
    choices = decay_choices(load_results(SWEEP, config.sweep_profile, directory))
    if choices is None:
        grow = f"`python -m stiefel_book sweep {SWEEP} --profile full`"
        raise ValueError(f"not every cell of {SWEEP} has a final choice yet (interior, or lr 0): run {grow}")
    decay, gaps = largest_gap(choices)
    if decay == WEIGHT_DECAY:
        raise ValueError(
            f"the decay of largest gap at tuned lrs is λ = {decay:g}, whose 12 judged starts cifar10_fair "
            "already holds: cifar10_fair_decay has nothing to run"
        )
    return dataclasses.replace(
        config,
        task=dataclasses.replace(config.task, weight_decay=decay),
        gaps=tuple(gaps.items()),
        qk_lrs=tuple((arm, choices[decay][arm]["lr"]) for arm in config.arms),
    )


ENTRIES = (  # this module's experiments, collected by the runner
    sweep_entry(
        SWEEP,
        SWEEP_PROFILES,
        study,
        "CIFAR-10 long protocol, AdamW's and the Stiefel rule's W_Q, W_K lr swept at each λ on 3 selection starts",
        arms=SWEEP_ARMS,
    ),
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
        (*SWEPT, "frozen"),
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
    judged_entry(  # each arm at its resolved lr, in the resolved decay's task
        "cifar10_fair_decay",
        DECAY_PROFILES,
        SWEPT,
        train_judged,
        "CIFAR-10 long protocol at the decay of largest gap at tuned lrs (when it is not λ = 1), AdamW and the "
        "Stiefel rule at their tuned W_Q, W_K lrs, 12 paired starts",
        resolve_decay,
    ),
)
