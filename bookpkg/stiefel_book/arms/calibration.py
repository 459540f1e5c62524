"""The ``fixed_step_matched`` control: a fixed-step frame lr whose steps are as large as the
scale-free rule's, found by measuring both rules (a recorded function, not a typed-in number).

The fixed step ``ξ = -lr m̂`` is degree one in the gradient, and so, over a short horizon, its
displacement is close to proportional to ``lr``: a few multiplicative corrections
``lr ← lr · target / measured`` settle it. Each measurement is a real short run of the
experiment from the same seed (the first 5 % of its training, by default).
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

__all__ = ["CALIBRATION_FRACTION", "calibration_epochs", "median_step", "matched_lr"]

CALIBRATION_FRACTION = 0.05  # the "first 5 % of training"


def calibration_epochs(epochs: int, fraction: float = CALIBRATION_FRACTION) -> int:
    """How many leading epochs of an ``epochs``-long run the calibration measures (at least 1). Chapter: regimes."""
    return max(1, math.ceil(fraction * epochs))


def median_step(history: list[dict], banks: tuple[str, ...] = ("W_Q", "W_K")) -> float:
    """The median over logged steps of the whole frame set's displacement
    ``sqrt(Σ_bank ‖ΔW_bank‖²_F)``, from the ``step/<bank>`` entries of a history.
    Chapter: regimes."""
    steps = [math.sqrt(sum(record[f"step/{b}"] ** 2 for b in banks)) for record in history]
    if not steps:
        raise ValueError("median_step: the history holds no logged step")
    return float(np.median(steps))


def matched_lr(measure: Callable[[str, float], float], lr: float, *, rounds: int = 5, tolerance: float = 0.02) -> dict:
    """The fixed-step frame lr whose median step matches the scale-free rule's at ``lr``.

    ``measure(arm, qk_lr)`` returns the median per-step ``‖ΔW‖_F`` of a short run of
    ``arm`` (``"stiefel"`` or ``"fixed_step"``). Returns the target, every trial, the chosen lr
    (the trial closest to the target) and its ratio to the target, for the results file.
    Chapter: regimes.
    """
    target = measure("stiefel", lr)
    if not target > 0:
        raise ValueError(f"matched_lr: the scale-free rule did not move its frames (median step {target})")
    trials, trial_lr = [], lr
    for _ in range(rounds):
        got = measure("fixed_step", trial_lr)
        if not (got > 0 and math.isfinite(got)):
            raise ValueError(f"matched_lr: the fixed step at lr {trial_lr:.3g} gave median step {got}")
        trials.append({"lr": trial_lr, "median_step": got})
        if abs(got / target - 1) <= tolerance:
            break
        trial_lr *= target / got
    best = min(trials, key=lambda trial: abs(math.log(trial["median_step"] / target)))
    return {"target_median_step": target, "trials": trials, "lr": best["lr"], "ratio": best["median_step"] / target}
