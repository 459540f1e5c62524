"""A fair fight (issue 28): every arm at its own tuned W_Q, W_K learning rate, by :mod:`..engine.study`.

- ``grokking_qk_lr``: the sweep, on the ablation's task (p = 31, 1,500 epochs, model lr 3e-3), on
  selection seeds 100-104 (geoopt's and Cayley Adam's ladders centred 30x higher: their second moment
  sums a frame's d r = 1,024 squares where the others average them).
- ``grokking_fair`` (AdamW, AdamW without decay on W_Q, W_K, the Stiefel rule, frozen frames),
  ``grokking_fair_scale`` (the scale controls) and ``grokking_fair_peers`` (the ablation's variants,
  the relatives, Cayley Adam): the judged runs, 20 paired seeds.
- ``grokking_fair_ablation``: the ablation's two variants the first sweep left out (no tangent
  projector, no trust region), swept and judged the same way, on the same seeds, in a family of
  their own (declared after the other files had been read, before any run of these arms).

At the model lr its declared check chose (issue 52; ``book/protocol.yml``, sweep ``grokking_model_lr``) the
same study is made again, one setting apart (:data:`CHECKED_LR` for every parameter but W_Q, W_K):
``grokking_checked_qk_lr`` sweeps :data:`CHECKED_ARMS` by the same rule, ``grokking_checked`` judges them
and frozen frames on seeds 0-39; both refuse to run unless that check's file chose :data:`CHECKED_LR`.

Histories keep the metrics the book reads (accuracy, loss, W_Q, W_K's norm, movement), so that
hundreds of runs stay a few MB.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..engine.registry import JUDGED_CI, SWEEP_CI, profiles
from ..engine.study import Study, at_rate, judged_entry, sweep_entry
from ..model_lr import check_choice
from ..tasks import grokking
from . import ablation
from .checked_lr import at_checked_lr

__all__ = [
    "ENTRIES",
    "FAIR_ARMS",
    "SCALE_ARMS",
    "PEER_ARMS",
    "VARIANT_ARMS",
    "SWEEP_PROFILES",
    "FairConfig",
    "PROFILES",
    "study",
    "train",
    "compact",
    "resolve",
    "KEPT_METRICS",
    "CHECKED_LR",
    "CHECKED_MARGIN",
    "CENTERS",
]

FAIR_ARMS = ("baseline", "no_decay_qk", "stiefel")  # the headline and the preprint's mechanism control
SCALE_ARMS = ("qk_norm", "sphere", "stiefel_temp")  # scale without orthonormality; a frame's scale made free
PEER_ARMS = ("fixed_step", "per_entry", "muon", "muon_no_decay", "geoopt_radam", "orthogonal_param", "cayley_adam")
VARIANT_ARMS = ("no_projector", "no_trust_region")  # the ablation's other variants, swept later
SWEPT_ARMS = (*FAIR_ARMS, *SCALE_ARMS, *PEER_ARMS, *VARIANT_ARMS)
CENTERS = {"geoopt_radam": 1e-1, "cayley_adam": 1e-1}  # sums of squares, not means: ~sqrt(d r) = 32x the others' lr
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


def _task(lr: float | None = None) -> grokking.GrokkingConfig:
    """The ablation's task: p = 31, 1,500 epochs (at model lr ``lr`` where given)."""
    task = ablation.GROKKING_PROFILES["full"]
    return task if lr is None else dataclasses.replace(task, lr=lr)


@dataclass(frozen=True)
class SweepConfig:
    task: grokking.GrokkingConfig
    seeds: tuple[int, ...] = (100, 101, 102, 103, 104)  # selection seeds, apart from the judged 0-19
    start_below: int = 2  # the first grid: two rungs under the center, one over it
    start_above: int = 1


def _sweep_profiles(lr: float | None = None) -> dict:
    return profiles(SweepConfig, {"full": _task(lr), "ci": dataclasses.replace(_task(lr), epochs=100)}, SWEEP_CI)


SWEEP_PROFILES = _sweep_profiles()


def compact(outcome: dict) -> dict:
    """``outcome`` with its history cut to :data:`KEPT_METRICS`."""
    history = [{k: r[k] for k in KEPT_METRICS if k in r} for r in outcome["history"]]
    return {**outcome, "history": history, "final": history[-1]}


def train(task, arm: str, seed: int, device, checkpoint, progress, qk_lr: float, stop_at: float | None = None) -> dict:
    """One grokking run of ``arm`` with W_Q, W_K at ``qk_lr`` (0: frozen frames), its history compacted."""
    return compact(at_rate(grokking.run, stop_at=stop_at)(task, arm, seed, device, checkpoint, progress, qk_lr))


def study(config: SweepConfig, name: str = "grokking_qk_lr", arms: tuple[str, ...] = SWEPT_ARMS) -> Study:
    """Sweep ``name`` (of ``arms``) at a profile: the late validation accuracy, diverged runs scored 0."""
    return Study.at(name, config, arms, train, centers=CENTERS, diverged=True)


@dataclass(frozen=True)
class FairConfig:
    task: grokking.GrokkingConfig
    arms: tuple[str, ...] = FAIR_ARMS  # the swept arms it judges (beside frozen)
    sweep_profile: str = "full"  # the profile of grokking_qk_lr whose choices the arms take
    qk_lrs: tuple[tuple[str, float], ...] = ()  # resolved before the runs (:func:`resolve`)
    seeds: tuple[int, ...] = tuple(range(20))


PROFILES = profiles(FairConfig, ablation.GROKKING_PROFILES, {"seeds": (0,)})  # ci: at the full sweep's choices


resolve = study(SWEEP_PROFILES["full"]).resolve  # (config, directory) -> config with every arm's chosen lr


# --- the same study at the model lr grokking_model_lr's check chose ---------------------------------------------

CHECKED_LR = 1e-2  # grokking_model_lr's choice (tests/test_checked_lrs.py ties it to the committed file)
CHECKED_MARGIN = 0.02  # grokking_model_lr's margin (2 pp of validation accuracy)
CHECKED_ARMS = ("baseline", "no_decay_qk", "stiefel", "qk_norm")
CHECKED_SWEEP_PROFILES = _sweep_profiles(CHECKED_LR)
CHECKED_TASKS = {p: c.task for p, c in CHECKED_SWEEP_PROFILES.items()}
CHECKED_PROFILES = profiles(FairConfig, CHECKED_TASKS, JUDGED_CI, arms=CHECKED_ARMS, seeds=tuple(range(40)))
_guard = at_checked_lr("grokking_model_lr", _task(CHECKED_LR), choose=check_choice(CHECKED_MARGIN))


def _checked_study(config: SweepConfig) -> Study:
    return study(config, "grokking_checked_qk_lr", CHECKED_ARMS)


def _checked_resolve(config: FairConfig, directory=None) -> FairConfig:
    """The judged runs' rates, read from the sweep's file, once the check has chosen the model lr."""
    return _guard(_checked_study(CHECKED_SWEEP_PROFILES[config.sweep_profile]).resolve(config, directory), directory)


_PAIRED = "at their tuned W_Q, W_K lrs, 20 seeds paired with grokking_fair"
# The judged files: the headline, then the scale controls, the ablation's variants with the relatives, and the
# variants swept later, on the same seeds (so paired with grokking_fair's runs): a file each, so that each starts
# once its own arms' choices are final
JUDGED = (
    ("grokking_fair", FAIR_ARMS, ("frozen",), "every arm at its tuned W_Q, W_K lr, 20 paired seeds"),
    ("grokking_fair_scale", SCALE_ARMS, (), f"the scale controls {_PAIRED}"),
    ("grokking_fair_peers", PEER_ARMS, (), f"the ablation's variants, the relatives and Cayley Adam {_PAIRED}"),
    (
        "grokking_fair_ablation",
        VARIANT_ARMS,
        (),
        f"the ablation's variants without the tangent projector and without the trust region {_PAIRED}",
    ),
)
ENTRIES = (  # this module's experiments, collected by the runner
    sweep_entry(
        "grokking_qk_lr",
        SWEEP_PROFILES,
        study,
        "grokking at p = 31, every arm's W_Q, W_K lr swept on 5 selection seeds until interior",
        with_frozen=True,
    ),
    *(
        judged_entry(
            name,
            profiles(dataclasses.replace, PROFILES, arms=arms),
            (*arms, *beside),
            train,
            f"grokking at p = 31, {what}",
            resolve,
        )
        for name, arms, beside, what in JUDGED
    ),
    sweep_entry(
        "grokking_checked_qk_lr",
        CHECKED_SWEEP_PROFILES,
        _checked_study,
        "grokking at p = 31 at its checked model lr 1e-2, four arms' W_Q, W_K lr on 5 selection seeds until interior",
        with_frozen=True,
        resolve=_guard,
    ),
    judged_entry(
        "grokking_checked",
        CHECKED_PROFILES,
        (*CHECKED_ARMS, "frozen"),
        train,
        "grokking at p = 31 at its checked model lr 1e-2, four arms at their tuned W_Q, W_K lrs and frozen frames, "
        "40 paired seeds",
        _checked_resolve,
    ),
)
