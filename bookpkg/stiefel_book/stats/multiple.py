"""Multiple comparisons: Holm's step-down adjustment of a family's p-values."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

__all__ = ["holm"]


def holm(pvalues: Sequence[float] | np.ndarray, nan: Literal["raise", "one", "omit"] = "raise") -> np.ndarray:
    """Holm-adjusted p-values of one family, in the order given.

    With the ``m`` p-values sorted, ``p_(1) <= ... <= p_(m)``, the adjusted value of the
    ``i``-th is ``max_{j <= i} min(1, (m - j + 1) p_(j))``: monotone in ``p``, never below
    ``p``, capped at 1. A comparison is rejected at level ``α`` when its adjusted p is at most
    ``α``, which holds the family-wise error rate at ``α`` under any dependence.

    ``nan`` says what a missing p-value (a comparison that could not be tested, such as
    all-zero differences) means: ``"raise"`` (default) refuses it; ``"one"`` counts it as a
    member of the family with p = 1 (conservative: the family keeps its declared size);
    ``"omit"`` leaves it NaN and out of the family (``m`` counts only the others).
    Chapters: all that state a family's verdicts.
    """
    p = np.asarray(pvalues, dtype=np.float64)
    if p.ndim != 1:
        raise ValueError(f"holm takes one family of p-values (a 1-d sequence), got shape {p.shape}")
    if nan not in ("raise", "one", "omit"):
        raise ValueError(f'nan must be "raise", "one" or "omit", got {nan!r}')
    missing = np.isnan(p)
    if missing.any() and nan == "raise":
        raise ValueError(
            f"holm got NaN p-values at positions {np.flatnonzero(missing).tolist()}: "
            'pass nan="one" to count them as p = 1, or nan="omit" to leave them out of the family'
        )
    outside = ~missing & ((p < 0) | (p > 1))
    if outside.any():
        raise ValueError(f"p-values must lie in [0, 1], got {p[outside].tolist()}")
    if nan == "one":
        p = np.where(missing, 1.0, p)
        missing = np.zeros_like(missing)
    adjusted = np.full_like(p, np.nan)
    kept = np.flatnonzero(~missing)
    m = len(kept)
    if m == 0:
        return adjusted
    order = kept[np.argsort(p[kept], kind="stable")]
    scaled = (m - np.arange(m)) * p[order]  # (m - j + 1) p_(j) for j = 1..m
    adjusted[order] = np.minimum(1.0, np.maximum.accumulate(scaled))
    return adjusted
