"""A claim's verdict as the claims table, the intro and the chapters' verdict boxes give it: a
word (a key of :data:`MARKS`), its mark, a headline and a sentence. Chapters: intro and every
chapter with a verdict box."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Verdict", "Axis", "MARKS", "PENDING"]

MARKS = {
    "certified": "✓",
    "reproduced": "✓",
    "partly": "◐",
    "not reproduced": "✗",  # decided against: an axis reads lower, or equivalent (no gain)
    "not shown": "○",  # neither axis decided, and the families could not reach their margins
    "not certified": "✗",
    "pending": "…",
    "new": "+",
}


@dataclass(frozen=True)
class Axis:
    """One axis of a claim (against the preprint's own baseline, or at tuned rates): ``word``, one of
    higher, lower, equivalent, inconclusive or "not shown" (or "mixed": a new result whose
    comparisons read different words), and ``text``, the readings it rests on with their regimes
    and numbers; ``readings``, the same readings one by one (:class:`claim_axes.Reading`), for a
    verdict box that gives each result its own line (:mod:`claim_box`)."""

    word: str
    text: str
    readings: tuple = field(default=(), compare=False)

    def __str__(self) -> str:
        return f"**{self.word}**: {self.text}"


@dataclass(frozen=True)
class Verdict:
    """One claim's verdict: ``word`` (a key of :data:`MARKS`), the ``headline`` number in a few
    words, and one ``sentence`` for the intro's "What we found"."""

    word: str
    headline: str
    sentence: str
    baseline: Axis | None = None  # against the preprint's own baseline (its shared, untuned rate)
    tuned: Axis | None = None  # with each arm at its tuned W_Q, W_K rate

    @property
    def mark(self) -> str:
        return MARKS[self.word]

    def __str__(self) -> str:
        return f"{self.mark} {self.word}"


PENDING = Verdict("pending", "not yet measured", "")
