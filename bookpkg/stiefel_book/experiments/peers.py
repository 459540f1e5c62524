"""The Stiefel rule among its relatives (chapter "Among its relatives"): grokking at the
ablation's task (p = 31, 1,500 epochs) with W_Q, W_K trained by Muon, geoopt's Riemannian Adam,
the per-entry Stiefel rule or torch's orthogonal parametrization (:mod:`stiefel_book.arms.relatives`), beside
the Stiefel rule and the AdamW baseline, 20 seeds paired as in ``grokking_ablation``.

Two experiments:

- ``grokking_peers_lr``: the learning-rate sweep, on the ``ci`` task (the same model and data,
  600 epochs). Every arm that trains W_Q, W_K apart from AdamW (the Stiefel rule included) gets
  the same budget: 4 W_Q, W_K lrs x 2 seeds, on seeds 100 and 101, apart from the comparison's
  0-19, so that no arm's lr is chosen on the seeds it is judged on. geoopt's grid is the others'
  times sqrt(d r) = 32: its second moment sums a frame's squares where the others average them.
  An arm is ``"<arm>@flr=<lr>"``; every other parameter keeps the task's lr.
- ``grokking_peers``: the comparison. Each arm trains at the lr that
  :func:`stiefel_book.choices.chosen_lr` reads from the sweep's results file (a recorded
  function of it, never a typed-in number), and records it in each run (``frame_lr``, its stored key,
  ``lr_from``). The lr is read when a run starts rather than written into the config: the
  committed ``grokking_peers-full`` file's config has no lrs, and resuming it must not change it.
  The baseline is the task's AdamW (its lr is the task's, tuned with the task).
- ``cifar10_peers``: the same arms in the long CIFAR-10 protocol of ``cifar10_long`` (100
  epochs on 10,000 images) at λ = 1, where decay acts most there, 3 paired starts. Each arm's
  W_Q, W_K lr is the task's lr times the multiple of the grokking task's lr that its sweep
  chose (no sweep of its own: a CIFAR-10 run is ~7 minutes on a core).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import ClassVar

from ..arms.relatives import RELATIVES, without_parametrized_steps
from ..choices import chosen_lr, swept_lrs
from ..engine.registry import Experiment, profiles, stored_config
from ..results import load_results
from ..results_reading import grid_arm, parse_grid_arm
from ..tasks import cifar10, grokking
from . import ablation, maps

__all__ = ["ENTRIES", "PEER_ARMS", "sweep_arm_names", "run_sweep"]

SWEPT_ARMS = ("stiefel", *RELATIVES)  # every arm whose W_Q, W_K lr is chosen by the sweep
PEER_ARMS = ("baseline", *SWEPT_ARMS)
STORED_QK_LR = "frame_lr"  # these files' key of a run's W_Q, W_K lr (stored, kept)
QK_LRS = (1e-3, 3e-3, 1e-2, 3e-2)  # around the task's 3e-3; Muon's match_rms_adamw scaling takes AdamW's lrs


@dataclass(frozen=True)
class LrSweepConfig:
    task: grokking.GrokkingConfig = field(default_factory=lambda: ablation.GROKKING_PROFILES["ci"])  # 600 epochs
    arms: tuple[str, ...] = SWEPT_ARMS
    qk_lrs: tuple[float, ...] = QK_LRS
    # geoopt's second moment is a frame's Riemannian ‖g‖², a sum over its d·r entries where the
    # others' are means (or per entry): the same per-entry step takes sqrt(d r) = 32 times the lr
    lr_scales: tuple[tuple[str, float], ...] = (("geoopt_radam", 32.0),)
    seeds: tuple[int, ...] = (100, 101)  # not the comparison's seeds
    STORED_NAMES: ClassVar[dict] = {"qk_lrs": "frame_lrs"}  # the results file's name of a field


@dataclass(frozen=True)
class PeersConfig:
    """A comparison's config (``grokking_peers``, ``cifar10_peers``)."""

    task: object
    sweep_profile: str = "full"  # the profile of grokking_peers_lr whose file picks the lrs
    seeds: tuple[int, ...] = tuple(range(20))  # grokking_ablation's seeds


def sweep_arm_names(config: LrSweepConfig) -> tuple[str, ...]:
    lrs = {arm: swept_lrs(stored_config(config), arm) for arm in config.arms}
    return tuple(grid_arm(arm, "flr", lrs[arm][i]) for i in range(len(config.qk_lrs)) for arm in config.arms)


SWEEP_PROFILES = {
    "full": LrSweepConfig(),
    # the machinery in seconds: two arms at one lr, 100 epochs, one seed
    "ci": LrSweepConfig(
        task=dataclasses.replace(ablation.GROKKING_PROFILES["ci"], epochs=100),
        arms=("stiefel", "muon"),
        qk_lrs=(3e-3,),
        seeds=(100,),
    ),
}
SWEEP_ARMS = tuple(dict.fromkeys(name for profile in SWEEP_PROFILES.values() for name in sweep_arm_names(profile)))

# the very task of grokking_ablation; ci: one seed at 600 epochs, at the full sweep's lrs (the chapter's live run)
PROFILES = profiles(PeersConfig, ablation.GROKKING_PROFILES, {"seeds": (0,)})
# the "at least 3 paired starts"
CIFAR10_PROFILES = profiles(PeersConfig, maps.long_tasks(weight_decay=1.0), {"seeds": (0,)}, seeds=(0, 1, 2))


def run_sweep(config: LrSweepConfig, arm: str, seed: int, device, checkpoint=None, progress=True) -> dict:
    """One run of the sweep: ``arm`` (``"<arm>@flr=<lr>"``) from ``seed`` with W_Q, W_K at that lr."""
    base, qk_lr = parse_grid_arm(arm, "flr", config.arms)
    grid = swept_lrs(stored_config(config), base)
    if qk_lr not in grid:
        raise ValueError(f"W_Q, W_K lr {qk_lr:g} is not on this profile's grid for {base} {grid}")
    task = dataclasses.replace(config.task, seeds=(seed,))
    return grokking.run(task, base, seed, device, checkpoint, progress, qk_lr=qk_lr)


def _cifar10_train(task, arm, seed, device, checkpoint, progress, **qk_lr) -> dict:
    outcome = cifar10.train_arm(
        task, arm, seed, device, checkpoint, progress, description=f"cifar10 peers {arm} start {seed}", **qk_lr
    )
    return without_parametrized_steps(arm, outcome) if qk_lr else outcome


def comparison(name: str, train, scaled: bool):
    """The run of comparison ``name``: ``arm`` from ``seed`` by ``train``, the baseline at the task's lr, every
    other arm at the lr the sweep chose for it (``scaled``: at the task's lr times the multiple of the grokking
    task's lr it chose), recorded in the run beside where it came from."""

    def run(config: PeersConfig, arm: str, seed: int, device, checkpoint=None, progress=True) -> dict:
        if arm not in PEER_ARMS:
            raise ValueError(f"unknown arm {arm!r}; {name} has {PEER_ARMS}")
        task = dataclasses.replace(config.task, seeds=(seed,))
        if arm == "baseline":
            return train(task, arm, seed, device, checkpoint, progress)
        sweep = load_results("grokking_peers_lr", config.sweep_profile)
        multiple = chosen_lr(sweep, arm) / sweep["config"]["task"]["lr"]
        qk_lr = task.lr * multiple if scaled else chosen_lr(sweep, arm)
        outcome = train(task, arm, seed, device, checkpoint, progress, qk_lr=qk_lr)
        scale = {"lr_multiple": multiple} if scaled else {}
        return {**outcome, STORED_QK_LR: qk_lr, **scale, "lr_from": f"grokking_peers_lr-{config.sweep_profile}"}

    return run


run = comparison("grokking_peers", grokking.run, scaled=False)
run_cifar10 = comparison("cifar10_peers", _cifar10_train, scaled=True)


ENTRIES = (  # this module's experiments, collected by the runner
    Experiment(
        "grokking_peers_lr",
        SWEEP_PROFILES,
        SWEEP_ARMS,
        run_sweep,
        "grokking at ci scale, the lr sweep of the Stiefel rule and its relatives: 4 W_Q, W_K lrs x 2 seeds each, 600 "
        "epochs",
        arms_of=sweep_arm_names,
    ),
    Experiment(
        "grokking_peers",
        PROFILES,
        PEER_ARMS,
        run,
        "grokking at ci scale, the Stiefel rule against Muon, geoopt, per-entry moments and the orthogonal "
        "parametrization, 20 seeds",
    ),
    Experiment(
        "cifar10_peers",
        CIFAR10_PROFILES,
        PEER_ARMS,
        run_cifar10,
        "CIFAR-10 patches, long protocol at λ = 1, the Stiefel rule against its relatives, 3 paired starts",
    ),
)
