"""The CIFAR-10 chapter's preprint-against-ours tables, as the text the chapter prints: the
paired gain by start, the movement ratios and the freezing pairings. Pure functions of the
``cifar10`` results dict they are handed (:mod:`.cifar10` computes the numbers)."""

from __future__ import annotations

import numpy as np

from .. import preprint
from .cifar10 import mean_angles, movement_ratios, paired_gain

__all__ = ["gain_report", "movement_report", "freezing_report"]


def gain_report(results: dict) -> str:
    """Per start, the baseline's and the Stiefel arm's test accuracy and the gain; then the
    preprint's gain, t and wins beside ours. Chapter: cifar10_patches."""
    starts, a, b, comparison = paired_gain(results)
    lines = ["start  baseline  Stiefel   gain (pp)"]
    lines += [f"{s:5d}  {x:7.2f}%  {y:6.2f}%  {y - x:+8.2f}" for s, x, y in zip(starts, b, a)]
    if comparison is not None:
        quoted = preprint.CIFAR10
        lines += [
            "",
            f"{'':26s}{'preprint':>10s}{'ours':>22s}",
            f"{'mean gain (pp)':26s}{quoted['gain_pp']:>+10.2f}{comparison.mean_difference:>+22.2f}",
            f"{'95% CI (pp)':26s}{'':>10s}{f'[{comparison.ci_low:+.2f}, {comparison.ci_high:+.2f}]':>22s}",
            f"{'paired t':26s}{quoted['t']:>10.1f}{comparison.t_statistic:>22.2f}",
            f"{'starts won':26s}{preprint.cifar10_wins():>10s}{f'{comparison.wins}/{comparison.n}':>22s}",
            f"{'two-sided p':26s}{'':>10s}{comparison.p_value:>22.2g}",
        ]
    return "\n".join(lines)


def movement_report(results: dict, starts: list[int], depth: int) -> str:
    """How many times less than AdamW the fixed step and the Stiefel rule move a step (min, max,
    median over projections and ``starts``) beside the preprint's range, and the mean principal
    angles each arm's heads turned. Chapter: cifar10_patches."""
    lines = [f"{'':22s}{'preprint':>10s}   ours: min - max over 4 projections x {len(starts)} starts (median)"]
    for arm in ("fixed_step", "stiefel"):
        values = np.concatenate(list(movement_ratios(results, arm).values()))
        quoted = preprint.movement_range() if arm == "fixed_step" else ""
        lines.append(
            f"{arm + ' vs AdamW':22s}{quoted:>10s}   {values.min():.1f}x - {values.max():.1f}x "
            f"({np.median(values):.1f}x)"
        )
    angles = mean_angles(results, ("baseline", "stiefel", "fixed_step"), starts, depth)
    lines.append(
        "mean principal angle between each head's subspace at the end and at the start: "
        + ", ".join(f"{arm} {deg:.2f}°" for arm, deg in angles.items())
    )
    return "\n".join(lines)


def freezing_report(results: dict) -> str:
    """Each trained arm minus frozen frames, paired by start, the fixed step's beside the
    preprint's cost. Chapter: cifar10_patches."""
    lines = [f"{'':28s}{'preprint':>10s}   ours (pp, 95% CI, wins)"]
    for a_arm, b_arm, quoted in (
        ("fixed_step", "frozen", preprint.frozen_cost_signed()),
        ("stiefel", "frozen", ""),
        ("baseline", "frozen", ""),
    ):
        _, _, _, c = paired_gain(results, a_arm, b_arm)
        lines.append(
            f"{a_arm + ' - ' + b_arm:28s}{quoted:>10s}   {c.mean_difference:+.2f} [{c.ci_low:+.2f}, {c.ci_high:+.2f}], "
            f"{c.wins}/{c.n}"
        )
    return "\n".join(lines)
