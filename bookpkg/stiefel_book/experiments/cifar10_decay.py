"""CIFAR-10's fair fight at the decay of largest gap (issue 28: "12 paired starts at the tuned lrs
and the decay of largest gap"), in the long protocol of :mod:`.maps` (``cifar10_long``).

``cifar10_qk_lr`` tunes AdamW's and the Stiefel rule's W_Q, W_K lr apart at each weight decay λ.
Once every cell is final, the decay of largest gap is the λ at which the Stiefel rule's sweep
score at its chosen lr minus AdamW's at its chosen lr is largest in absolute value, on the
selection starts. ``cifar10_fair_decay`` runs both arms there, at those lrs, on the judged starts
0-11, paired. At λ = 1 it has nothing to run: ``cifar10_fair`` holds those judged runs. The decay
and the lrs are resolved before the first run (:func:`resolve`) and written into the results
file's config; ``book/protocol.yml`` declared the rule (family ``cifar10_fair_decay``) before it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ..choices import widest
from ..results_reading import grid_arm
from . import cifar10, cifar10_fair, cifar10_judged, maps
from .results import load_results
from .study import judged_entry

__all__ = ["ENTRIES", "DecayFairConfig", "PROFILES", "decay_choices", "largest_gap", "resolve"]

SWEEP = "cifar10_qk_lr"
GROW = f"`python -m stiefel_book sweep {SWEEP} --profile full`"


def decay_choices(sweep: dict | None) -> dict[float, dict[str, dict]] | None:
    """``{λ: {arm: its cell's choice}}`` (``{"lr", "score", "interior", "scores"}``) for every decay
    of the sweep, or ``None`` while a cell has no choice or one at its grid's edge."""
    if not sweep:
        return None
    out, study = {}, cifar10_fair.study(cifar10_fair.PROFILES["full"])
    for decay in sweep["config"]["weight_decays"]:
        picks = {arm: study.chosen(sweep, grid_arm(arm, "wd", decay)) for arm in cifar10_fair.SWEPT}
        if any(pick is None or not pick["interior"] for pick in picks.values()):
            return None
        out[float(decay)] = picks
    return out


def largest_gap(choices: dict[float, dict[str, dict]]) -> tuple[float, dict[float, float]]:
    """``(λ, {λ: gap})``: each decay's Stiefel − AdamW gap of chosen scores (fractions), and the λ
    whose gap is largest in absolute value (ties: the first decay of the sweep's order)."""
    gaps = {decay: picks["stiefel"]["score"] - picks["baseline"]["score"] for decay, picks in choices.items()}
    return widest(gaps), gaps


@dataclass(frozen=True)
class DecayFairConfig:
    task: cifar10.CIFAR10Config = field(default_factory=lambda: maps.long_task("full"))
    arms: tuple[str, ...] = cifar10_judged.CORE
    sweep_profile: str = "full"
    gaps: tuple[tuple[float, float], ...] = ()  # resolved: each decay's gap on the selection starts
    qk_lrs: tuple[tuple[str, float], ...] = ()  # resolved: each arm's lr in the chosen decay's cell
    seeds: tuple[int, ...] = tuple(range(12))  # the judged starts, paired with cifar10_fair's


PROFILES = {
    "full": DecayFairConfig(),
    "ci": DecayFairConfig(task=maps.long_task("ci"), sweep_profile="ci", seeds=(0,)),
}


def resolve(config: DecayFairConfig, directory=None) -> DecayFairConfig:
    """``config`` at the decay of largest gap (``task.weight_decay``), with each arm's lr there and
    every decay's gap. Refused while a cell of the sweep is open, and at λ = 1 (nothing to run)."""
    if config.qk_lrs:
        return config
    choices = decay_choices(load_results(SWEEP, config.sweep_profile, directory))
    if choices is None:
        raise ValueError(f"not every cell of {SWEEP} has a final choice yet (interior, or lr 0): run {GROW}")
    decay, gaps = largest_gap(choices)
    if decay == cifar10_judged.WEIGHT_DECAY:
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
    judged_entry(  # each arm at its resolved lr, in the resolved decay's task
        "cifar10_fair_decay",
        PROFILES,
        cifar10_judged.CORE,
        cifar10_judged.train_judged,
        "CIFAR-10 long protocol at the decay of largest gap at tuned lrs (when it is not λ = 1), AdamW and the "
        "Stiefel rule at their tuned W_Q, W_K lrs, 12 paired starts",
        resolve,
    ),
)
