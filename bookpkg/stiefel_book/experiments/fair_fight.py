"""A fair fight (issue 28): every arm at its own tuned W_Q, W_K learning rate.

- ``grokking_qk_lr``: the sweep, on the ablation's task (p = 31, 1,500 epochs), on selection
  seeds 100-104, apart from the judged seeds 0-19. An arm is ``"<arm>@qklr=<lr>"``; every other
  parameter keeps the task's lr (3e-3). The grid starts at four rungs of the half-decade ladder
  around the task's lr (geoopt's around 30x it: its second moment sums a frame's d r = 1,024
  squares where the others average them) and grows by the rule of :mod:`stiefel_book.choices` until each
  arm's choice is interior; ``frozen`` is every arm's lr 0. :func:`sweep` drives that growth.
- ``grokking_fair`` (AdamW, AdamW without decay on W_Q, W_K, the Stiefel rule, frozen frames),
  ``grokking_fair_scale`` (the scale controls) and ``grokking_fair_peers`` (the ablation's variants,
  the relatives, Cayley Adam): the comparison at 20 paired seeds, each arm at the lr the sweep
  chose, resolved before the runs by :func:`resolve` and written into the results file's config.
- ``grokking_fair_ablation``: the ablation's two variants the first sweep left out (no tangent
  projector, no trust region), swept and judged the same way, on the same seeds, in a family of
  their own (declared after the other files had been read, before any run of these arms).

Histories keep the metrics the book reads (accuracy, loss, W_Q, W_K's norm, movement), so that
hundreds of runs stay a few MB.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from stiefel_core.step_checks import NonFiniteGradientError

from .. import choices
from ..choices import LADDER, ladder_around, late_scores
from ..results_reading import grid_arm, parse_grid_arm
from . import ablation, grokking
from .registry import Experiment
from .resolving import resolve_lrs
from .selection import grow

__all__ = [
    "ENTRIES",
    "FAIR_ARMS",
    "SCALE_ARMS",
    "PEER_ARMS",
    "VARIANT_ARMS",
    "SWEPT_ARMS",
    "SCALE_PROFILES",
    "PEER_PROFILES",
    "VARIANT_PROFILES",
    "SweepConfig",
    "SWEEP_PROFILES",
    "SWEEP_ARMS",
    "FairConfig",
    "PROFILES",
    "run_sweep",
    "run",
    "sweep_scores",
    "chosen",
    "resolve",
    "pending_rungs",
    "KEPT_METRICS",
]

FAIR_ARMS = ("baseline", "no_decay_qk", "stiefel")  # the headline and the preprint's mechanism control
SCALE_ARMS = ("qk_norm", "sphere", "stiefel_temp")  # scale without orthonormality; a frame's scale made free
PEER_ARMS = ("fixed_step", "per_entry", "muon", "muon_no_decay", "geoopt_radam", "orthogonal_param", "cayley_adam")
VARIANT_ARMS = ("no_projector", "no_trust_region")  # the ablation's other variants, swept later
SWEPT_ARMS = (*FAIR_ARMS, *SCALE_ARMS, *PEER_ARMS, *VARIANT_ARMS)
CENTERS = {"geoopt_radam": 1e-1, "cayley_adam": 1e-1}  # sums of squares, not means: ~sqrt(d r) = 32x the others' lr
KEY = "qklr"
KEPT_METRICS = (
    "epoch",
    "train_acc",
    "val_acc",
    "train_loss",
    "val_loss",
    "norm/attn.W_Q",
    "norm/attn.W_K",
    "angle_mean/W_Q",
    "step/W_Q",
    "ortho/W_Q",
)


def _task() -> grokking.GrokkingConfig:
    return ablation.GROKKING_PROFILES["full"]  # the ablation's task: p = 31, 1,500 epochs


@dataclass(frozen=True)
class SweepConfig:
    task: grokking.GrokkingConfig = field(default_factory=_task)
    seeds: tuple[int, ...] = (100, 101, 102, 103, 104)  # selection seeds, apart from the judged 0-19
    start_below: int = 2  # the first grid: two rungs under the center, one over it
    start_above: int = 1


SWEEP_PROFILES = {
    "full": SweepConfig(),
    "ci": SweepConfig(task=dataclasses.replace(_task(), epochs=100), seeds=(100,), start_below=1, start_above=0),
}
SWEEP_ARMS = (*(grid_arm(arm, KEY, lr) for arm in SWEPT_ARMS for lr in LADDER), "frozen")


def center(arm: str, task_lr: float) -> float:
    return CENTERS.get(arm, task_lr)


def start_rungs(config: SweepConfig, arm: str) -> tuple[float, ...]:
    return ladder_around(center(arm, config.task.lr), config.start_below, config.start_above)


def start_arms(config: SweepConfig) -> tuple[str, ...]:
    """The first grid of every arm, then ``frozen`` (lr 0)."""
    return (*(grid_arm(arm, KEY, lr) for arm in SWEPT_ARMS for lr in start_rungs(config, arm)), "frozen")


def compact(outcome: dict) -> dict:
    """``outcome`` with its history cut to :data:`KEPT_METRICS`."""
    history = [{k: r[k] for k in KEPT_METRICS if k in r} for r in outcome["history"]]
    return {**outcome, "history": history, "final": history[-1]}


def run_sweep(config: SweepConfig, arm: str, seed: int, device, checkpoint=None, progress=True) -> dict:
    """One run of the sweep: ``"<arm>@qklr=<lr>"`` (or ``frozen``) from ``seed``."""
    task = dataclasses.replace(config.task, seeds=(seed,))
    if arm == "frozen":
        return compact(grokking.run(task, "frozen", seed, device, checkpoint, progress))
    base, lr = parse_grid_arm(arm, KEY, SWEPT_ARMS)
    if lr not in LADDER:
        raise ValueError(f"{arm!r}: lr {lr:g} is not on the ladder {LADDER}")
    try:
        return compact(grokking.run(task, base, seed, device, checkpoint, progress, frame_lr=lr))
    except NonFiniteGradientError as error:  # an lr too large for the arm: a result of the sweep, scored 0
        if checkpoint is not None:
            checkpoint.unlink(missing_ok=True)
        record = {"epoch": task.epochs, "train_acc": 0.0, "val_acc": 0.0}
        return {"history": [record], "final": record, "diverged": str(error).split(":")[0]}


def sweep_scores(sweep: dict, arm: str) -> dict[float, list[float]]:
    """``{lr: [late score per finished selection seed]}`` of ``arm`` (lr 0: ``frozen``)."""
    return late_scores(sweep, arm, key=KEY)


def pending_rungs(sweep: dict | None, config: SweepConfig, arm: str) -> tuple[float, ...]:
    """The rungs ``arm`` still needs: its first grid's unfinished rungs, else the rule's next ones."""
    scores = sweep_scores(sweep, arm) if sweep else {}
    return choices.pending_rungs(scores, len(config.seeds), start_rungs(config, arm), center(arm, config.task.lr))


def chosen(sweep: dict, arm: str) -> dict | None:
    """``{"lr", "score", "interior", "scores"}``: the rule's choice for ``arm`` from the sweep
    (``None`` before a rung holds every selection seed)."""
    config = sweep["config"]
    return choices.settled_or_none(sweep_scores(sweep, arm), len(config["seeds"]), center(arm, config["task"]["lr"]))


@dataclass(frozen=True)
class FairConfig:
    task: grokking.GrokkingConfig = field(default_factory=_task)
    arms: tuple[str, ...] = FAIR_ARMS  # the swept arms it judges (beside frozen)
    sweep_profile: str = "full"  # the profile of grokking_qk_lr whose choices the arms take
    qk_lrs: tuple[tuple[str, float], ...] = ()  # resolved before the runs (:func:`resolve`)
    seeds: tuple[int, ...] = tuple(range(20))


PROFILES = {
    "full": FairConfig(),
    "ci": FairConfig(task=ablation.GROKKING_PROFILES["ci"], seeds=(0,)),
}
# The scale controls, and the ablation's variants with the relatives, judged on the same seeds (so paired with
# grokking_fair's runs): three files, so that each starts once its own arms' choices are final
SCALE_PROFILES = {name: dataclasses.replace(config, arms=SCALE_ARMS) for name, config in PROFILES.items()}
PEER_PROFILES = {name: dataclasses.replace(config, arms=PEER_ARMS) for name, config in PROFILES.items()}
VARIANT_PROFILES = {name: dataclasses.replace(config, arms=VARIANT_ARMS) for name, config in PROFILES.items()}


def resolve(config: FairConfig, directory=None) -> FairConfig:
    """``config`` with every arm's W_Q, W_K lr chosen from the sweep's file (refused until each
    choice is final: interior, or lr 0)."""
    return resolve_lrs(config, "grokking_qk_lr", chosen, directory)


def run(config: FairConfig, arm: str, seed: int, device, checkpoint=None, progress=True) -> dict:
    """One judged run: ``arm`` from ``seed`` at its resolved W_Q, W_K lr (``frozen``: none)."""
    task = dataclasses.replace(config.task, seeds=(seed,))
    if arm == "frozen":
        return {**compact(grokking.run(task, arm, seed, device, checkpoint, progress)), "qk_lr": 0.0}
    lrs = dict(config.qk_lrs)
    if arm not in lrs:
        raise ValueError(f"{arm!r} has no resolved W_Q, W_K lr in this config; it has {sorted(lrs)}")
    lr = lrs[arm]
    if lr == 0.0:  # the sweep chose lr 0: the arm is frozen frames
        return {**compact(grokking.run(task, "frozen", seed, device, checkpoint, progress)), "qk_lr": 0.0}
    return {**compact(grokking.run(task, arm, seed, device, checkpoint, progress, frame_lr=lr)), "qk_lr": lr}


def sweep(run_experiment, profile: str, arms: tuple[str, ...] = SWEPT_ARMS, **options) -> dict:
    """Grow the sweep for ``arms`` until every choice is final (:func:`.selection.grow`).
    ``run_experiment`` is the experiments' runner."""
    config = SWEEP_PROFILES[profile]

    def pending(results: dict | None) -> list[str]:
        return [
            grid_arm(arm, KEY, lr) if lr else "frozen" for arm in arms for lr in pending_rungs(results, config, arm)
        ]

    return grow(run_experiment, "grokking_qk_lr", profile, pending, **options)


ENTRIES = (  # this module's experiments, collected by the runner
    Experiment(
        "grokking_qk_lr",
        SWEEP_PROFILES,
        SWEEP_ARMS,
        run_sweep,
        "grokking at p = 31, every arm's W_Q, W_K lr swept on 5 selection seeds until interior",
        arms_of=start_arms,
    ),
    Experiment(
        "grokking_fair",
        PROFILES,
        (*FAIR_ARMS, "frozen"),
        run,
        "grokking at p = 31, every arm at its tuned W_Q, W_K lr, 20 paired seeds",
        resolve=resolve,
    ),
    Experiment(
        "grokking_fair_scale",
        SCALE_PROFILES,
        (*SCALE_ARMS,),
        run,
        "grokking at p = 31, the scale controls at their tuned W_Q, W_K lrs, 20 seeds paired with grokking_fair",
        resolve=resolve,
    ),
    Experiment(
        "grokking_fair_peers",
        PEER_PROFILES,
        (*PEER_ARMS,),
        run,
        "grokking at p = 31, the ablation's variants, the relatives and Cayley Adam at their tuned "
        "W_Q, W_K lrs, 20 seeds paired with grokking_fair",
        resolve=resolve,
    ),
    Experiment(
        "grokking_fair_ablation",
        VARIANT_PROFILES,
        VARIANT_ARMS,
        run,
        "grokking at p = 31, the ablation's variants without the tangent projector and without the trust region "
        "at their tuned W_Q, W_K lrs, 20 seeds paired with grokking_fair",
        resolve=resolve,
    ),
)
