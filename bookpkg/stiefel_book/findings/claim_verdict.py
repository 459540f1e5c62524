"""A claim's verdict as the claims table, the intro and the chapters' verdict boxes give it: a
word (a key of :data:`MARKS`), its mark, a headline and a sentence. Chapters: intro and every
chapter with a verdict box."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Verdict", "MARKS", "PENDING"]

MARKS = {
    "certified": "✓",
    "reproduced": "✓",
    "partly": "◐",
    "not reproduced": "✗",
    "not certified": "✗",
    "pending": "…",
    "new": "+",
}


@dataclass(frozen=True)
class Verdict:
    """One claim's verdict: ``word`` (a key of :data:`MARKS`), the ``headline`` number in a few
    words, and one ``sentence`` for the intro's "What we found"."""

    word: str
    headline: str
    sentence: str

    @property
    def mark(self) -> str:
        return MARKS[self.word]

    def __str__(self) -> str:
        return f"{self.mark} {self.word}"


PENDING = Verdict("pending", "not yet measured", "")
