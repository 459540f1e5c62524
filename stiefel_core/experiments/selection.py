"""Rules that pick a setting from earlier results, fixed before the runs they read: the W_Q, W_K
learning rate each arm trains at (issue "A fair fight"). Experiments resolve these *before* their
runs and write the value into their results file's config; findings only read what was written.

The rule, declared before the sweep ran (``book/protocol.yml`` states it in words):

- **Grid**: the half-decade ladder 1, 3 x 10^k (steps of 3x and 3.3x) from 1e-6 to 30, and lr 0
  below it (lr 0 is frozen frames: W_Q, W_K never move).
- **Score** of one run: its mean validation accuracy over the last 20 % of training (robust to
  the bimodal endpoint of grokking at p = 31, where a run ends near 55 % or near 100 %: a late
  grokker and a run that groks and holds score apart). An lr's score is its mean over the
  selection seeds; every rung needs every seed before anything is chosen. A run whose gradients
  turn non-finite (an lr too large for its arm) scores 0.
- **Choice**: the rung of highest score; ties go to the rung nearest the arm's starting lr (on a
  plateau the sweep does not walk), then to the smaller lr. **Growth**: while the choice is
  the largest rung tried, the next rung up is added; while it is the smallest, the next rung down
  (below 1e-6, lr 0). The sweep stops when the choice is interior (both neighbours tried, neither
  higher) or at lr 0 (a true boundary) or at the ladder's top.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

__all__ = ["LADDER", "LATE_FRACTION", "late_score", "rung_scores", "next_rungs", "choice", "ladder_around"]

LADDER = tuple(float(f"{m}e{k}") for k in range(-6, 2) for m in (1, 3))  # 1e-06 ... 30.0
LATE_FRACTION = 0.2  # the score's window: the last 20 % of training


def late_score(history: list[dict], epochs: int, metric: str = "val_acc", fraction: float = LATE_FRACTION) -> float:
    """Mean ``metric`` over the records of the last ``fraction`` of ``epochs`` (one run's score)."""
    start = epochs * (1.0 - fraction)
    late = [r[metric] for r in history if r["epoch"] > start]
    if not late:
        raise ValueError(f"no record after epoch {start:g} of {epochs}: the run's history is too short to score")
    return float(np.mean(late))


def ladder_around(center: float, below: int = 2, above: int = 1) -> tuple[float, ...]:
    """The rungs from ``below`` under ``center`` to ``above`` over it (``center`` on the ladder)."""
    if center not in LADDER:
        raise ValueError(f"{center:g} is not on the ladder {LADDER}")
    i = LADDER.index(center)
    return LADDER[max(0, i - below) : i + above + 1]


def rung_scores(scores: dict[float, list[float]], n_seeds: int) -> dict[float, float]:
    """``{lr: mean score}`` over the rungs that hold all ``n_seeds`` selection seeds."""
    return {lr: float(np.mean(s)) for lr, s in sorted(scores.items()) if len(s) >= n_seeds}


def choice(complete: dict[float, float], center: float) -> float:
    """The rung of highest mean score; ties to the rung nearest ``center`` (log scale), then the smaller."""
    if not complete:
        raise ValueError("no rung has all its selection seeds yet: nothing to choose from")
    distance = lambda lr: abs(np.log(lr / center)) if lr > 0 else np.inf  # noqa: E731
    return min(complete, key=lambda lr: (-complete[lr], distance(lr), lr))


def next_rungs(complete: dict[float, float], tried: Iterable[float], center: float) -> tuple[float, ...]:
    """The rungs to add next (empty when the choice is interior or at a true boundary)."""
    tried = sorted(set(tried) | set(complete))
    best = choice(complete, center)
    out = []
    if best == max(tried) and best in LADDER and best != LADDER[-1]:
        out.append(LADDER[LADDER.index(best) + 1])
    if best == min(tried) and best != 0.0:
        out.append(0.0 if best == LADDER[0] else LADDER[LADDER.index(best) - 1])
    return tuple(out)


def is_interior(complete: dict[float, float], lr: float) -> bool:
    """Whether ``lr`` has a tried neighbour on each side scoring no higher, or is lr 0."""
    rungs = sorted(complete)
    i = rungs.index(lr)
    if lr == 0.0:
        return True
    return 0 < i < len(rungs) - 1 and complete[rungs[i - 1]] <= complete[lr] >= complete[rungs[i + 1]]
