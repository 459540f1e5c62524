"""The trust region where it binds: grokking at the ``ci`` task with the frames' lr raised until
the cap ``‖ξ‖_F ≤ Δ`` acts, the full rule against ``no_trust_region`` at each W_Q, W_K lr.

At the book's lr (3e-3) the scale-free step is about lr·sqrt(d r) ≈ 0.1 per frame against a
radius of 0.5, so the cap never binds and the ablation's ``no_trust_region`` cannot differ.
Every other parameter keeps the task's lr; each run records the share of frame-steps the
trust region capped (``trust_capped``). An arm is ``"<arm>@flr=<qk_lr>"``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import ClassVar

from ..results_reading import parse_grid_arm
from . import ablation, grokking
from .grid import grid_arms
from .registry import Experiment

__all__ = ["ENTRIES", "TrustRegionConfig", "PROFILES", "TR_ARMS", "ARMS", "arm_names", "run"]

TR_ARMS = ("stiefel", "no_trust_region")
QK_LRS = (3e-3, 1e-2, 3e-2, 1e-1)  # from the book's lr (never binds) up to ~30x the radius's lr


@dataclass(frozen=True)
class TrustRegionConfig:
    """The trust-region runs: their grokking task, the grid of W_Q, W_K lrs, the seeds. Chapter: regimes."""

    task: grokking.GrokkingConfig = field(
        default_factory=lambda: ablation.GROKKING_PROFILES["full"]
    )  # the ablation's task
    qk_lrs: tuple[float, ...] = QK_LRS
    seeds: tuple[int, ...] = tuple(range(10))  # paired by seed, as the decay map
    STORED_NAMES: ClassVar[dict] = {"qk_lrs": "frame_lrs"}  # the results file's name of a field


def arm_names(config: TrustRegionConfig) -> tuple[str, ...]:
    """Every ``"<arm>@flr=<lr>"`` of a profile. Chapter: regimes."""
    return grid_arms(TR_ARMS, "flr", config.qk_lrs)


PROFILES = {
    "full": TrustRegionConfig(),
    "ci": TrustRegionConfig(task=ablation.GROKKING_PROFILES["ci"], qk_lrs=(1e-1,), seeds=(0,)),
}
ARMS = tuple(dict.fromkeys(name for profile in PROFILES.values() for name in arm_names(profile)))


def run(config: TrustRegionConfig, arm: str, seed: int, device, checkpoint=None, progress=True) -> dict:
    """One run: ``arm`` (``"<arm>@flr=<lr>"``) from ``seed`` with its frames at that lr. Chapter: regimes."""
    base, qk_lr = parse_grid_arm(arm, "flr", TR_ARMS)
    if qk_lr not in config.qk_lrs:
        raise ValueError(f"W_Q, W_K lr {qk_lr:g} is not on this profile's grid {config.qk_lrs}")
    task = dataclasses.replace(config.task, seeds=(seed,))
    return grokking.run(task, base, seed, device, checkpoint, progress, qk_lr=qk_lr)


ENTRIES = (  # this module's experiments, collected by the runner
    Experiment(
        "grokking_trust_region",
        PROFILES,
        ARMS,
        run,
        "grokking at ci scale, frames at raised lrs where the trust region binds: full rule vs no trust region, 10 "
        "seeds",
        arms_of=arm_names,
    ),
)
