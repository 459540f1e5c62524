"""A claim's verdict as the claims table, the intro and the chapters' verdict boxes give it (a word,
a key of :data:`MARKS`, its mark, a headline and a sentence, and its two axes), and its box as a
list item, one result a line: the claim and its word, the preprint's words, then each axis (against
the preprint's baseline, at tuned rates) with its word and the reading that decided it, the axis's
other readings each on a line of its own under it. Read from the verdict's structure
(:class:`Axis` and its readings), never by splitting its text. A certificate (no axis) keeps its one
line: the claim, its word, its one number.
Chapters: every chapter with a verdict box, and the intro's claims table (behind its toggle)."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Verdict", "Axis", "MARKS", "PENDING", "AXES", "claim_item", "axis_lines", "record_parts"]

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
    higher, lower, equivalent, inconclusive or "not shown" (or, for a new result whose comparisons
    read different words, each word with what it reads: :func:`claim_new.shared_word`), and
    ``text``, the readings it rests on with their regimes
    and numbers; ``readings``, the same readings one by one (:class:`claim_axes.Reading`), for a
    verdict box that gives each result its own line."""

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

AXES = (("baseline", "Against the preprint's baseline"), ("tuned", "At tuned rates"))
NOT_SHOWN = "not shown ("


def _results(reading) -> list[tuple[str, str, str]]:
    """A reading's results, each ``(word, as the axis's lead, on a line of its own)``: a decay map's
    count one word at a time, any other reading whole."""
    where = f"{reading.where}: " if reading.where else ""
    why = reading.shown[len(NOT_SHOWN) : -1] if reading.shown.startswith(NOT_SHOWN) else ""
    if reading.parts:
        out = []
        for i, (word, count, decays) in enumerate(reading.parts):
            lead = (f"{reading.where}, " if reading.where else "") + count + (f": {decays}" if decays else "")
            own = f"{where}{word} {count}" + (f" ({decays})" if decays else "")
            own += f", {reading.shown}" if reading.shown and i == 0 else ""
            out.append((word, lead + (f", {why}" if why and i == 0 else ""), own))
        return out
    lead = f"{where}{reading.numbers}" + (f", {why}" if why else "")
    return [(reading.word, lead, reading.text())]


def axis_lines(title: str, axis: Axis) -> tuple[str, list[str]]:
    """The axis's line, "title: **word** (the result that decided it)", and its other results, one
    a line. An axis whose comparisons differ leads with none; an axis without readings gives its text as the
    clause."""
    if not axis.readings:
        return f"{title}: **{axis.word}**" + (f" ({axis.text})." if axis.text else "."), []
    results = [r for reading in axis.readings for r in _results(reading)]
    lead = next((r for r in results if r[0] == axis.word), None)
    if lead is None and axis.word == "not shown":  # every reading could not reach its margin: the first
        lead = results[0]
    head = f"{title}: **{axis.word}**" + (f" ({lead[1]})." if lead else ".")
    return head, [r[2] for r in results if r is not lead]


def record_parts(record: str) -> list[str]:
    """What we measure, one result a part: ``record`` split at each "; " outside brackets (a
    parenthesis keeps its own clauses together)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(record):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif depth == 0 and record.startswith("; ", i):
            parts.append(record[start:i])
            start = i + 2
    return [part for part in (*parts, record[start:]) if part]


def _measured(record: str, indent: str) -> list[str]:
    parts = record_parts(record)
    if len(parts) <= 1:
        return [f"{indent}- We measure: {record}"] if record else []
    return [f"{indent}- We measure:", *(f"{indent}  - {part}" for part in parts)]


def claim_item(claim: str, preprint: str, verdict: Verdict, record: str = "") -> str:
    """One claim as a list item's text (without its leading "- "): a certificate or a claim with no
    axis in one line; else the claim and its word, then the preprint's words and each axis on
    lines of their own (a nested list). ``record``: what we measure, a last line (the claims table's)."""
    axes = [(title, getattr(verdict, name)) for name, title in AXES if getattr(verdict, name) is not None]
    if not axes:
        head = f"**{claim}** (the preprint: {preprint}): {verdict} — {verdict.headline}."
        return "\n".join([head, *_measured(record, "  ")])
    said = preprint[1:-1] if preprint.startswith("(") and preprint.endswith(")") else preprint
    lines = [f"  - The preprint: {said}."]
    for title, axis in axes:
        head, others = axis_lines(title, axis)
        lines += [f"  - {head}", *(f"    - {other}" for other in others)]
    lines += _measured(record, "  ")
    return f"**{claim}**: {verdict}.\n" + "\n".join(lines)
