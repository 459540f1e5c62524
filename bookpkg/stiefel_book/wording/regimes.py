"""The regimes' counts and readings in words (:mod:`findings.decay_map` counts the map's cells,
:mod:`findings.regimes` decides which reading the controls support): the map's count at each decay's
final epoch, and the readings grouped by their status. Chapters: regimes, intro; the claims table."""

from __future__ import annotations

from ..findings.decay_map import MapCell, count
from ..findings.regimes import STATUS
from ..labels import label
from ..stats import VERDICTS

__all__ = ["count_text", "readings_text"]


def count_text(cells: list[MapCell], a: str = "stiefel", b: str = "baseline") -> str:
    """The count of :func:`findings.decay_map.count` in words: "the Stiefel rule against AdamW, at the
    final epoch of each of the 5 decays: higher at 2 (λ = 0, 0.3), lower at none, equivalent at none, inconclusive at 3
    (λ = ...)". Chapters: regimes, intro."""
    groups = count(cells, a, b)
    total = sum(map(len, groups.values()))

    def part(word: str) -> str:
        got = groups[word]
        if not got:
            return f"{word} at none"
        return f"{word} at {len(got)} (λ = {', '.join(f'{c.weight_decay:g}' for c in got)})"

    return f"{label(a)} against {label(b)}, at the final epoch of each of the {total} decays: " + ", ".join(
        part(w) for w in VERDICTS
    )


def readings_text(readings: dict[str, bool | None]) -> str:
    """The readings in words, grouped: "supported: ...; contradicted: ...; undecided: ..."
    (a group with no reading is left out). Chapter: regimes."""
    parts = []
    for status in (True, False, None):
        names = [label(k) for k, v in readings.items() if v is status]
        if names:
            parts.append(f"{STATUS[status]}: {', '.join(names)}")
    return "; ".join(parts)
