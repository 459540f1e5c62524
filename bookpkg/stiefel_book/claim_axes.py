"""A claim's two axes: its verdict against the preprint's own baseline (every arm at the task's one,
untuned W_Q, W_K rate, the preprint's protocol) and at tuned rates (each arm at the rate its sweep
chose), each one of the four words, with the regime it was read in. Where a family could never reach
its margin, an *inconclusive* reads "not shown (smallest detectable effect X)" instead
(:func:`wording.power.not_shown`); a claim reads ✗ only where an axis decided against it.
Comparisons set after the runs on a knob the preprint never tuned (CIFAR-10's λ = 0.05 and the best
cells) are on neither axis. Pure functions of the families' rows. Chapters: intro and every
chapter with a verdict box."""

from __future__ import annotations

from dataclasses import dataclass

from .claim_box import Axis
from .findings import decay_map
from .findings.detectable import Power, row_power, time_power
from .wording.power import not_shown

__all__ = ["Reading", "axis", "row_reading", "time_reading", "map_reading", "overall", "first_to"]

DECIDED = ("higher", "lower", "equivalent")
_FLIP = {"higher": "lower", "lower": "higher"}


@dataclass(frozen=True)
class Reading:
    """One comparison read on an axis: where (the regime, in words), its word, the words a reader
    sees (its word or "not shown (...)") and the numbers; a decay map's ``parts``, its count one
    word at a time (``(word, "at 2 of 5 decays", "λ = 0, 0.3")``, the decays only where decided)."""

    where: str
    word: str
    shown: str
    numbers: str
    parts: tuple[tuple[str, str, str], ...] = ()

    def text(self) -> str:
        said = f"{self.numbers}, {self.shown}" if self.shown else self.numbers
        return f"{self.where}: {said}" if self.where else said


def axis(readings: list[Reading]) -> Axis | None:
    """The axis from its readings, in the order given: the first decided word (higher, lower,
    equivalent) where one is decided, else "not shown" where every reading's family could not reach
    its margin, else inconclusive; ``None`` with no reading."""
    readings = [r for r in readings if r is not None]
    if not readings:
        return None
    decided = [r.word for r in readings if r.word in DECIDED]
    if decided:
        word = decided[0]
    elif all(r.shown.startswith("not shown") for r in readings):  # no reading could reach its margin
        word = "not shown"
    else:
        word = "inconclusive"
    return Axis(word, "; ".join(r.text() for r in readings), tuple(readings))


def _mean(row) -> float:
    if hasattr(row, "comparison"):
        return row.comparison.mean_difference
    return row.get("mean_pp", row.get("mean"))


def row_reading(where: str, row, m: int, family, digits: int = 1, flip: bool = False, what: str = "") -> Reading | None:
    """A comparison row of a family of ``m`` comparisons (a dict with ``verdict`` and ``mean_pp`` or
    ``mean``, or a map cell); ``flip`` reads ``b − a`` (the word and the sign turn over)."""
    if row is None:
        return None
    word = row.verdict if hasattr(row, "verdict") and not isinstance(row, dict) else row["verdict"]
    mean = _mean(row)
    if flip:
        word, mean = _FLIP.get(word, word), -mean
    power = row_power(row, m, family.margin, family.alpha, family.margin_unit)
    numbers = f"{what}{' ' if what else ''}{mean:+.{digits}f} {family.margin_unit}"
    return Reading(where, word, not_shown(word, power) or word, numbers)


def first_to(times_a: list[tuple[int, bool]], times_b: list[tuple[int, bool]]) -> tuple[int, int]:
    """``(seeds where a reached the threshold strictly first, seeds)`` from paired ``(epoch, reached)``."""
    first = sum(ra and (not rb or ea < eb) for (ea, ra), (eb, rb) in zip(times_a, times_b))
    return first, len(times_a)


def time_reading(where: str, word: str, seeds: int, m: int, alpha: float, first: tuple[int, int] | None) -> Reading:
    """Time to 90 % by the paired permutation log-rank in a family of ``m``: its word, or "not shown
    (lowest reachable p ...)" when its exact test's floor after Holm is above α."""
    power: Power = time_power(seeds, m, alpha)
    numbers = f"first to 90 % on {first[0]} of {first[1]} seeds" if first else f"time to 90 % ({seeds} seeds)"
    return Reading(where, word, not_shown(word, power) or word, numbers)


def map_reading(where: str, cells: list, family) -> Reading | None:
    """A decay map (one family of cells, the Stiefel rule − AdamW per decay) as one reading: its count
    by word (with the decays of each decided word), the first decided word, or "not shown" with the
    range of the cells' smallest detectable effects when no cell could reach the margin."""
    if not cells:
        return None
    groups = decay_map.count(cells)
    parts = []
    for word, got in groups.items():
        if got:
            at = f"λ = {', '.join(f'{c.weight_decay:g}' for c in got)}" if word in DECIDED else ""
            parts.append((word, f"at {len(got)} of {len(cells)} decays", at))
    decided = [c.verdict for c in cells if c.verdict in DECIDED]
    powers = [row_power(c, len(cells), family.margin, family.alpha, family.margin_unit) for c in cells]
    if decided:  # the count says each cell's word
        word, shown = decided[0], ""
    elif powers and all(p is not None and not p.could_decide for p in powers):
        low, high = min(p.sde for p in powers), max(p.sde for p in powers)
        word, shown = (
            "inconclusive",
            f"not shown (smallest detectable effect {low:.1f}-{high:.0f} {family.margin_unit})",
        )
    else:
        word, shown = "inconclusive", ""
    return Reading(
        where, word, shown, "; ".join(f"{w} {n}" + (f" ({at})" if at else "") for w, n, at in parts), tuple(parts)
    )


def overall(baseline: Axis | None, tuned: Axis | None) -> str:
    """The claim's word (a key of ``MARKS``) from its axes: reproduced when every axis read is
    higher, partly when one is, not reproduced when none is and one decided against it (lower, or
    equivalent: no gain), not shown when neither decided; pending with no axis."""
    words = [a.word for a in (baseline, tuned) if a is not None]
    if not words:
        return "pending"
    held = sum(w == "higher" for w in words)
    if held == len(words):
        return "reproduced"
    if held:
        return "partly"
    if any(w in ("lower", "equivalent") for w in words):
        return "not reproduced"
    return "not shown"
