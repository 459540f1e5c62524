"""What the CIFAR-10 patches results say (chapter cifar10_patches): paired gains, the sweep over
training-set sizes, how far a step moves the frames, what freezing them costs, and the claims
table's lines. Pure functions of the results dicts of ``cifar10`` and ``cifar10_sweep``."""

from __future__ import annotations

from ..experiments.cifar10 import SWEEP_FRACTIONS
from ..results_reading import Paired, arm_of, finished_starts, movement_ratios, paired, run_key  # noqa: F401
from ..stats import mean_and_spread

__all__ = ["finished_starts", "paired_gain", "movement_ratios", "sweep_gains"]



def paired_gain(results: dict, arm: str = "stiefel", against: str = "baseline", metric: str = "test_acc") -> Paired:
    """``(starts, a, b, comparison)``: final ``metric`` (in percentage points for accuracies) of
    ``arm`` and ``against`` over the starts both finished, and their paired comparison
    (:func:`results_reading.paired`)."""
    return paired(results, arm, against, metric)


def sweep_gains(results: dict, metric: str = "test_acc") -> list[dict]:
    """One row per size of the sweep: size, starts, mean accuracy of both arms and the paired
    comparison of Stiefel against the baseline (``None`` with fewer than two finished starts)."""
    rows = []
    for fraction in SWEEP_FRACTIONS:
        pct = round(100 * fraction)
        arms = (f"stiefel@{pct}%", f"baseline@{pct}%")
        starts, a, b, comparison = paired_gain(results, *arms, metric=metric)
        size = round(results["config"]["train_size"] * fraction)
        rows.append(
            {
                "fraction": fraction,
                "train_size": size,
                "starts": starts,
                "stiefel": mean_and_spread(a) if len(a) else None,
                "baseline": mean_and_spread(b) if len(b) else None,
                "comparison": comparison,
            }
        )
    return rows
