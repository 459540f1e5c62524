"""What a declared family could have decided, read from its own rows: the smallest detectable
effect of a comparison (:func:`stats.power.smallest_detectable_effect` at Holm's strictest level,
80 % power, from the comparison's pairs and the spread of its paired differences), the smallest
equivalence margin it could have established, and for a time endpoint tested exactly (the paired
permutation log-rank) the floor of its adjusted p. A comparison that reads *inconclusive* because
its family could never reach its margin is "not shown", not failed (worded by
:func:`stiefel_book.wording.power.not_shown`). Pure functions of the rows the chapters read.
Chapters: intro and every chapter with a verdict box.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..stats import power

__all__ = ["Power", "spread", "row_power", "time_power"]


@dataclass(frozen=True)
class Power:
    """One comparison's power in its family: ``n`` pairs, ``sd`` of the paired differences (None for
    a time endpoint), ``m`` comparisons, the smallest detectable effect and equivalence margin in the
    family's unit (None for a time endpoint), the exact test's Holm floor (time endpoints), and the
    family's declared ``margin`` (None: no equivalence test) and ``alpha``."""

    n: int
    sd: float | None
    m: int
    sde: float | None
    equivalence: float | None
    floor: float | None
    margin: float | None
    alpha: float
    unit: str

    @property
    def could_decide(self) -> bool:
        """Whether the family could reach its margin: an exact test's floor p at or below α, else a
        smallest detectable effect within the declared margin (a family with no margin cannot)."""
        if self.floor is not None:
            return self.floor <= self.alpha
        return self.margin is not None and self.sde is not None and self.sde <= self.margin


def spread(row, alpha: float = 0.05) -> tuple[int, float] | None:
    """``(pairs, sd of the paired differences)`` of one family row, whichever form the chapter's
    findings give it: a ``PairedComparison`` (as ``comparison``, ``final`` or a map cell's
    ``comparison``), or a row with ``n`` and its two-sided (1 − α) t interval (``ci_pp`` or ``ci``).
    ``None`` when it holds neither (or fewer than 2 pairs)."""
    found = getattr(row, "comparison", None)
    if found is None and isinstance(row, dict):
        found = row.get("comparison") or row.get("final")
    if found is not None and hasattr(found, "std_difference"):
        return (found.n, float(found.std_difference)) if found.n >= 2 else None
    if isinstance(row, dict) and row.get("n", 0) >= 2:
        low, high = row.get("ci_pp", row.get("ci", (math.nan, math.nan)))
        if math.isfinite(low) and math.isfinite(high):
            return row["n"], power.sd_from_interval(low, high, row["n"], 1 - alpha)
    return None


def row_power(row, m: int, margin: float | None, alpha: float = 0.05, unit: str = "pp") -> Power | None:
    """The power of one comparison of an ``m``-comparison family (:func:`spread`); ``None`` when the
    row holds no pairs to read."""
    found = spread(row, alpha)
    if found is None:
        return None
    n, sd = found
    return Power(
        n,
        sd,
        m,
        power.smallest_detectable_effect(n, sd, m, alpha),
        power.smallest_equivalence_margin(n, sd, m, alpha),
        None,
        margin,
        alpha,
        unit,
    )


def time_power(pairs: int, m: int, alpha: float = 0.05) -> Power:
    """The power of a time endpoint tested by the paired permutation log-rank on ``pairs`` seeds in an
    ``m``-comparison family: only its floor counts (the smallest adjusted p it can reach)."""
    return Power(pairs, None, m, None, None, power.holm_floor(pairs, m), None, alpha, "")
