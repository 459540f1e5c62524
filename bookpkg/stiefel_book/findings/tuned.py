"""The chapters' verdicts under the declared families (``book/protocol.yml``), with the four words
of :mod:`stiefel_book.stats` (higher, lower, equivalent, inconclusive), and what changed since the
retired rule (one comparison at a time, its 95 % interval against zero, no correction): the word it
read (:func:`retired_word`; the lines in words are :mod:`stiefel_book.wording.tuned`). Shared by
the grokking, ablation, peers and CIFAR-10 chapters; the comparisons themselves are
:func:`fair_fight.family_rows`, so every chapter reads a family exactly as "A fair fight" does.
Pure functions of the results dicts and protocol families they are handed."""

from __future__ import annotations

__all__ = ["find", "retired_word"]


def find(rows: list[dict], a: str, b: str) -> dict | None:
    """The row ``a − b`` of a family, or ``b − a`` turned round (mean, interval and counts
    swapped, higher and lower exchanged); ``None`` when the family lacks it."""
    for row in rows:
        if (row["arm"], row["reference"]) == (a, b):
            return row
        if (row["arm"], row["reference"]) == (b, a):
            lo, hi = row["ci_pp"]
            word = {"higher": "lower", "lower": "higher"}.get(row["verdict"], row["verdict"])
            return {
                **row,
                "arm": a,
                "reference": b,
                "mean_pp": -row["mean_pp"],
                "ci_pp": (-hi, -lo),
                "verdict": word,
                "past": row["past"][::-1],
            }
    return None


def retired_word(row: dict | None) -> str:
    """What the retired rule read in the same row: its uncorrected 95 % interval above zero
    ("higher"), below ("lower"), or holding zero (it printed "tie" or "no significant difference")."""
    if row is None:
        return "not yet run"
    lo, hi = row["ci_pp"]
    return "higher" if lo > 0 else "lower" if hi < 0 else "tie (interval holding zero)"
