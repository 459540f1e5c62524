"""The fair fight at p = 97 (issue 28), on the task of ``grokking``'s full profile (Nanda et al.'s
one-layer model, task lr 1e-3, weight decay 1):

- ``grokking_p97_qk_lr``: AdamW's, AdamW's without decay on W_Q, W_K, the Stiefel rule's and
  QK-norm's W_Q, W_K lr at the task's lr, a third and a tenth of it (1e-3, 3e-4, 1e-4), on selection
  seeds 100-101, 10,000 epochs a run at most. A run's score is how fast it groks: minus the epochs to
  90 % validation accuracy, a run that never gets there counted at 10,000; a run stops once it gets
  there (its score is fixed). An lr's score is the mean
  over the seeds, and the rule of :mod:`.selection` (highest score; ties to the task's lr; grow
  while the choice is at an edge) picks it.
- ``grokking_p97_fair``: those arms and frozen frames at the chosen lrs (resolved before the runs
  by :func:`resolve`), 20,000 epochs, judged seeds 0-5.

A p = 97 run takes ~20 minutes (10,000 epochs) or ~40 (20,000) on one CPU core, a sweep run that
groks early less: these runs are for a lent GPU or a long background run; 24 sweep runs, then 30
judged.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field

from stiefel_core.step_checks import NonFiniteGradientError

from ..choices import LADDER, epochs_to, ladder_around, pending_rungs, settled_or_none, time_scores
from ..results_reading import grid_arm, parse_grid_arm, without_seeds
from . import grokking
from .fair_fight import compact
from .fair_fight import run as run_judged
from .registry import Experiment
from .resolving import resolve_lrs
from .results import load_results
from .selection import grow

__all__ = [
    "ENTRIES",
    "ARMS",
    "THRESHOLD",
    "SweepConfig",
    "SWEEP_PROFILES",
    "SWEEP_ARMS",
    "start_arms",
    "run_sweep",
    "epochs_to",
    "sweep_scores",
    "chosen",
    "sweep",
    "pending_arms",
    "FairConfig",
    "PROFILES",
    "resolve",
    "run",
    "adopt",
]

ARMS = ("baseline", "no_decay_qk", "stiefel", "qk_norm")  # swept; frozen frames are judged beside them
THRESHOLD = 0.9
KEY = "qklr"


def _task(epochs: int) -> grokking.GrokkingConfig:
    return dataclasses.replace(grokking.PROFILES["full"], epochs=epochs)


@dataclass(frozen=True)
class SweepConfig:
    task: grokking.GrokkingConfig = field(
        default_factory=lambda: dataclasses.replace(grokking.PROFILES["full"], epochs=10_000)
    )
    arms: tuple[str, ...] = ARMS
    seeds: tuple[int, ...] = (100, 101)  # selection seeds, apart from the judged 0-5
    threshold: float = THRESHOLD


_CI_TASK = dataclasses.replace(grokking.PROFILES["ci"], epochs=200)
SWEEP_PROFILES = {"full": SweepConfig(), "ci": SweepConfig(task=_CI_TASK, seeds=(100,))}
SWEEP_ARMS = (*(grid_arm(arm, KEY, lr) for arm in ARMS for lr in LADDER), "frozen")  # frozen: every arm's lr 0


def _run_name(arm: str, lr: float) -> str:
    return grid_arm(arm, KEY, lr) if lr else "frozen"  # lr 0, below the ladder: frozen frames (as grokking_qk_lr)


def _start(config: SweepConfig) -> tuple[float, ...]:
    return ladder_around(config.task.lr, 2, 0)  # the task's lr, a third and a tenth of it


def start_arms(config: SweepConfig) -> tuple[str, ...]:
    return tuple(grid_arm(arm, KEY, lr) for arm in config.arms for lr in _start(config))


def run_sweep(config: SweepConfig, arm: str, seed: int, device, checkpoint=None, progress=True) -> dict:
    """One run of the sweep: ``"<arm>@qklr=<lr>"`` (or ``frozen``, every arm's lr 0) from ``seed`` (a
    diverged run never groks). It stops at its first logged epoch past the threshold, where its score
    is fixed."""
    if arm == "frozen":
        task = dataclasses.replace(config.task, seeds=(seed,))
        return compact(grokking.run(task, "frozen", seed, device, checkpoint, progress, stop_at=config.threshold))
    base, lr = parse_grid_arm(arm, KEY, ARMS)
    if lr not in LADDER:
        raise ValueError(f"{arm!r}: lr {lr:g} is not on the ladder {LADDER}")
    task = dataclasses.replace(config.task, seeds=(seed,))
    try:
        return compact(
            grokking.run(task, base, seed, device, checkpoint, progress, frame_lr=lr, stop_at=config.threshold)
        )
    except NonFiniteGradientError as error:
        if checkpoint is not None:
            checkpoint.unlink(missing_ok=True)
        record = {"epoch": task.epochs, "train_acc": 0.0, "val_acc": 0.0}
        return {"history": [record], "final": record, "diverged": str(error).split(":")[0]}


def sweep_scores(sweep: dict, arm: str) -> dict[float, list[float]]:
    """``{lr: [-(epochs to the threshold) per finished seed]}``: higher is faster (:func:`choices.time_scores`)."""
    return time_scores(sweep, arm, KEY)


def chosen(sweep: dict, arm: str) -> dict | None:
    """``{"lr", "score", "interior", "scores"}``: the rule's choice (``None`` before a complete rung)."""
    return settled_or_none(sweep_scores(sweep, arm), len(sweep["config"]["seeds"]), sweep["config"]["task"]["lr"])


def _pending(results: dict | None, config: SweepConfig, arm: str) -> tuple[float, ...]:
    scores = sweep_scores(results, arm) if results else {}
    return pending_rungs(scores, len(config.seeds), _start(config), config.task.lr)


def sweep(run_experiment, profile: str, arms: tuple[str, ...] | None = None, **options) -> dict:
    """Grow the sweep of ``arms`` (default all) until each choice is final (resumable)."""
    config = SWEEP_PROFILES[profile]
    return grow(run_experiment, "grokking_p97_qk_lr", profile, lambda r: _pending_names(r, config, arms), **options)


def _pending_names(results: dict | None, config: SweepConfig, arms: tuple[str, ...] | None) -> list[str]:
    return [_run_name(arm, lr) for arm in arms or config.arms for lr in _pending(results, config, arm)]


def pending_arms(results: dict | None, config: SweepConfig) -> list[str]:
    """The sweep's next round by :func:`sweep`'s rule, as run names ``"<arm>@qklr=<lr>"`` (``frozen``
    for lr 0; each for every selection seed the results lack); empty once every arm's choice is final."""
    return list(dict.fromkeys(_pending_names(results, config, None)))


@dataclass(frozen=True)
class FairConfig:
    task: grokking.GrokkingConfig = field(default_factory=lambda: grokking.PROFILES["full"])
    arms: tuple[str, ...] = ARMS  # the swept arms it judges (frozen frames run beside them)
    sweep_profile: str = "full"
    qk_lrs: tuple[tuple[str, float], ...] = ()  # resolved before the runs (:func:`resolve`)
    seeds: tuple[int, ...] = tuple(range(6))


PROFILES = {"full": FairConfig(), "ci": FairConfig(task=_CI_TASK, sweep_profile="ci", seeds=(0,))}


def resolve(config: FairConfig, directory=None) -> FairConfig:
    """``config`` with each arm's W_Q, W_K lr chosen from ``grokking_p97_qk_lr`` (refused until final)."""
    return resolve_lrs(config, "grokking_p97_qk_lr", chosen, directory)


run = run_judged  # one judged run: the arm at its resolved lr, frozen frames at none (as at p = 31)

ADOPTED_FROM = "grokking"  # the long runs of the grokking chapter: every arm at the task's W_Q, W_K lr


def adopt(config: FairConfig, arm: str, seed: int, directory=None) -> tuple[dict, str] | None:
    """A judged run that ``grokking-full`` already holds, as the issue allows ("existing runs count
    where their lr is the tuned one"): the same task config, and the arm at the task's lr (frozen
    frames at none), which trains bit for bit as the judged run would on one machine (a frame lr
    equal to the task's is the task's lr). ``(its outcome, cut as a judged run's, "grokking-<profile>")``,
    else ``None``."""
    source = load_results(ADOPTED_FROM, config.sweep_profile, directory)
    lr = dict(config.qk_lrs).get(arm)
    if source is None or (arm != "frozen" and lr != config.task.lr):
        return None
    if without_seeds(source["config"]) != without_seeds(json.loads(json.dumps(dataclasses.asdict(config.task)))):
        return None
    run = source["runs"].get(f"{arm}/{seed}")
    if run is None:
        return None
    return {**compact(run), "qk_lr": 0.0 if arm == "frozen" else lr}, f"{ADOPTED_FROM}-{config.sweep_profile}"


ENTRIES = (  # this module's experiments, collected by the runner
    Experiment(
        "grokking_p97_qk_lr",
        SWEEP_PROFILES,
        SWEEP_ARMS,
        run_sweep,
        "grokking at p = 97, four arms' W_Q, W_K lr at the task's lr, 1/3 and 1/10 of it, 2 selection seeds, "
        "scored by the epochs to 90 % within 10,000",
        arms_of=start_arms,
    ),
    Experiment(
        "grokking_p97_fair",
        PROFILES,
        (*ARMS, "frozen"),
        run,
        "grokking at p = 97, AdamW, AdamW without decay on W_Q, W_K, the Stiefel rule and QK-norm at their tuned "
        "W_Q, W_K lrs, and frozen frames, 6 paired seeds",
        resolve=resolve,
        adopt=adopt,
    ),
)
