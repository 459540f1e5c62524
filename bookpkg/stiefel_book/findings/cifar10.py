"""What the CIFAR-10 patches results say (chapter cifar10_patches): paired gains, the sweep over
training-set sizes, how far a step moves the frames, what freezing them costs, and the claims
table's lines. Pure functions of the results dicts of ``cifar10`` and ``cifar10_sweep``."""

from __future__ import annotations

import dataclasses

import numpy as np

from ..experiments.cifar10_config import PROFILES, SWEEP_ARMS, SWEEP_FRACTIONS, CIFAR10Config, lr_factors
from ..results_reading import Paired, arm_of, finished_starts, movement_ratios, paired, run_key  # noqa: F401
from ..stats import mean_and_spread
from .regimes import decay_budget

__all__ = ["finished_starts", "paired_gain", "movement_ratios", "sweep_gains", "freezing_cost", "regime"]
__all__ += ["claim_gain", "claim_movement"]


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


def freezing_cost(results: dict, reference: str = "fixed_step"):
    """``paired_gain(results, reference, "frozen")``: what freezing the frames outright costs
    (positive: the trained frames did better), in percentage points."""
    return paired_gain(results, reference, "frozen")


def regime(results: dict) -> str:
    """The regime of a results file's verdicts: its decay budget, training length, and the test
    accuracy the baseline and the Stiefel arm reached."""
    fields = {f.name for f in dataclasses.fields(CIFAR10Config)}
    config = dataclasses.replace(
        PROFILES["full"],
        **{k: tuple(v) if isinstance(v, list) else v for k, v in results["config"].items() if k in fields},
    )
    reached = {
        arm: np.mean([r["final"]["test_acc"] for k, r in results["runs"].items() if arm_of(k) == arm])
        for arm in SWEEP_ARMS
    }
    return (
        f"Σ lr·λ = {decay_budget(config.lr, config.weight_decay, lr_factors(config)):.3g}, {config.epochs} epochs on "
        f"{config.train_size:,} images, test accuracy reached "
        + ", ".join(f"{arm} {100 * v:.1f}%" for arm, v in reached.items())
    )


def claim_gain(results: dict, sweep: dict | None) -> str:
    """One line for the book's claims table: the paired gain of ``cifar10-full`` and the gains
    by size of ``cifar10_sweep-full`` (``None``: not run yet)."""
    starts, _, _, c = paired_gain(results)
    if c is None:
        return f"not yet measured ({len(starts)} paired start(s) finished)"
    line = (
        f"{c.mean_difference:+.2f} pp over {c.n} paired starts (t = {c.t_statistic:.3g}, "
        f"{c.wins}/{c.n}, 95% CI [{c.ci_low:+.2f}, {c.ci_high:+.2f}])"
    )
    rows = [r for r in sweep_gains(sweep) if r["comparison"] is not None] if sweep else []
    if rows:
        line += "; gain by training-set size: " + ", ".join(
            f"{r['train_size']:,} {r['comparison'].mean_difference:+.2f}" for r in rows
        )
    kinds = sorted({run["data"]["source_kind"] for run in results["runs"].values() if "data" in run})
    return line + (f" ({'/'.join(kinds)} copy of CIFAR-10)" if kinds else "") + "; regime: " + regime(results)


def _ratio_values(results: dict | None) -> np.ndarray:
    ratios = movement_ratios(results, "fixed_step") if results else {}
    return np.concatenate(list(ratios.values())) if ratios else np.array([])


def claim_movement(results: dict) -> str:
    """One line for the book's claims table: the fixed step's movement ratio and freezing's cost."""
    values = _ratio_values(results)
    if not len(values):
        return "not yet measured (no start finished in both arms)"
    line = (
        f"fixed step moves {values.min():.0f}-{values.max():.0f}x less per step than AdamW "
        f"(median {np.median(values):.0f}x)"
    )
    starts, _, _, c = freezing_cost(results)
    if c is not None:
        line += (
            f"; freezing costs {c.mean_difference:+.2f} pp against the fixed step "
            f"({c.n} starts, 95% CI [{c.ci_low:+.2f}, {c.ci_high:+.2f}])"
        )
    return line


