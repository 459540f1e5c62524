"""The base of every certificate, the float64 tolerance and machine-stable rounded text (all proposition chapters,
1-5)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

DTYPE = torch.float64
TOLERANCE = 1e-12  # every "exact" claim is checked to this, in float64 (unit roundoff 1.1e-16)


def _at_most(x: float, tol: float) -> str:
    """``"≤ 1e-12"`` when ``x`` is within ``tol`` (the exact value is rounding noise that differs
    between machines), else the value itself, so a failure shows how far off it is."""
    return f"≤ {tol:.0e}" if x <= tol else f"{x:.2e} (> {tol:.0e})"


def _sig(x: float, digits: int = 3) -> float:
    """``x`` rounded to ``digits`` significant digits (0 stays 0)."""
    if x == 0 or not math.isfinite(x):
        return x
    return round(x, digits - 1 - int(math.floor(math.log10(abs(x)))))


@dataclass(frozen=True)
class Certificate:
    """Base of the certificates: numbers, named checks, a rounded summary.
    Chapters: p1_steepest_descent to p5_weight_decay."""

    def checks(self) -> dict[str, bool]:  # pragma: no cover - every subclass overrides it
        raise NotImplementedError

    @property
    def passed(self) -> bool:
        """True when every check of :meth:`checks` holds."""
        return all(self.checks().values())

    def summary(self) -> dict[str, object]:  # pragma: no cover - every subclass overrides it
        raise NotImplementedError

    def __str__(self) -> str:
        rows = [(name, value) for name, value in self.summary().items()]
        rows += [(f"check: {name}", ok) for name, ok in self.checks().items()]
        rows.append(("passed", self.passed))
        width = max(len(name) for name, _ in rows)
        return f"{type(self).__name__}\n" + "\n".join(f"  {name:<{width}}  {value}" for name, value in rows)
