"""Grokking at p = 97 at tuned W_Q, W_K rates in words (:mod:`findings.p97_tuned` reads the family
``grokking_p97_fair``): a comparison's time to 90 % and final accuracy, in full or in a few words,
what the family's seeds can decide about time, and the grokking chapter's sentences at p = 97.
Chapters: grokking, fair fight, regimes; the claims table."""

from __future__ import annotations

import math

from ..findings.p97_tuned import PAIRS, time_word, undecidable
from ..labels import interval, label
from ..stats.power import pairs_for_floor
from .fair_fight import lr_text

__all__ = [
    "median", "medians", "row_text", "short_text", "gate_text", "floor_text", "floor_note", "takeaway", "scale_text"
]


def floor_text(rows: list[dict], alpha: float = 0.05) -> str | None:
    """What the family can decide about time with the seeds it has ("With 6 paired seeds ...");
    ``None`` where it can decide (:func:`findings.p97_tuned.undecidable`) or before any comparison has run."""
    found = undecidable(rows, alpha)
    if found is None:
        return None
    (seeds, floor), m = found, len(PAIRS)
    return (
        f"With {seeds} paired seeds an exact paired permutation test can go no lower than p = {2 / 2**seeds:.2g}, and "
        f"Holm's correction over the family's {m} comparisons lifts the smallest to {floor:.2g}, above {alpha:g}: "
        "whatever the runs had done, no comparison of time in this family could read sooner or later, only "
        f"inconclusive. The family was declared so before its runs, and is reported as declared; telling a "
        f"difference of time apart would take at least {pairs_for_floor(alpha, m)} paired seeds."
    )


def floor_note(rows: list[dict], alpha: float = 0.05) -> str:
    """ " (with 6 paired seeds and 7 comparisons no difference of time could be decided)" where
    :func:`floor_text` applies, else ""."""
    found = undecidable(rows, alpha)
    if found is None:
        return ""
    return f" (with {found[0]} paired seeds and {len(PAIRS)} comparisons no difference of time could be decided)"


def median(survival) -> str:
    """A Kaplan-Meier median in words: "epoch 4,380", or "never"."""
    return "never" if math.isinf(survival.median) else f"epoch {survival.median:,.0f}"


def medians(row: dict) -> str:
    """ "median epoch 4,380 against 3,740" (or "... against never")."""
    text = f"median {median(row['a_survival'])} against {median(row['b_survival'])}"
    return text.replace("against epoch", "against")


def row_text(row: dict | None) -> str:
    """ "time to 90 % **sooner**, median epoch x against y over n paired seeds (p = .., Holm p = ..), with a
    against b seeds past 90 %. Its final accuracy: [**word**,] +d pp [lo, hi]", or "not yet run"."""
    if row is None:
        return "not yet run"
    word = time_word(row["verdict"])
    f = row["final"]
    seen = "; its runs were seen before the rule was declared" if row["seen_before"] else ""
    final_word = f"**{row['final_word']}**, " if row.get("final_word") else ""
    return (  # two sentences, at most two results each: time (with the seeds past 90 %), then final accuracy
        f"time to 90 % **{word}**, {medians(row)} over "
        f"{row['seeds']} paired seeds (p = {row['p']:.2g}, Holm p = {row['p_holm']:.2g}), with "
        f"{row['past'][0]} against {row['past'][1]} seeds past 90 %. Its final accuracy: {final_word}"
        f"{f.mean_difference:+.1f} pp, {interval(f.ci_low, f.ci_high)}{seen}"
    )


def short_text(row: dict | None) -> str:
    """A comparison in a few words: "time to 90 % inconclusive (median epoch 4,380 against 3,740),
    final accuracy equivalent (+0.1 pp)", or "not yet run"."""
    if row is None:
        return "not yet run"
    word = time_word(row["verdict"])
    final = f"final accuracy {row['final_word']}" if row.get("final_word") else "final accuracy"
    return f"time to 90 % {word} ({medians(row)}), {final} ({row['final'].mean_difference:+.1f} pp)"


def gate_text(row: dict | None) -> str:
    """A primary comparison read in its gatekeeping order (:func:`findings.p97_tuned.primary_row`): "time to
    90 % inconclusive (median epoch 400 against 420; 12 paired seeds, p = 0.62), so the final accuracy
    behind it was not tested (+0.0 pp)"; where time decided, "..., and the final accuracy behind it reads
    **word** (+d pp)"; "not yet run" before two paired seeds."""
    if row is None:
        return "not yet run"
    seeds = f"{row['seeds']} paired seeds, p = {row['p']:.2g}"
    time = f"time to 90 % {time_word(row['verdict'])} ({medians(row)}; {seeds})"
    final = f"{row['final'].mean_difference:+.1f} pp"
    if not row["gate"]:
        return f"{time}, so the final accuracy behind it was not tested ({final})"
    return f"{time}, and the final accuracy behind it reads {row.get('final_word', 'untested')} ({final})"


def _before_text(before: dict | None, gain: dict) -> str:
    """The same comparison at the task's rate (:func:`findings.grokking.family_rows`, the family
    ``grokking_p97``) beside the tuned one: what it read then, and whether its gap in median time
    is still there."""
    if before is None:
        return ""
    e, t = before["endpoint"], before["time"]
    sa, sb = t["median"]
    ta, tb = gain["a_survival"].median, gain["b_survival"].median
    then = (
        f" With both at the task's rate it read: final accuracy {e['verdict']} ({e['mean_pp']:+.1f} pp), time to 90 % "
        f"{t['verdict']}, median epoch {sa:,.0f} against {sb:,.0f}"
    )
    if ta >= tb:
        return then + ". At its own rate AdamW gets there no later than the Stiefel rule: its lag is gone."
    return then + f". At tuned rates the Stiefel rule's lead in median time is {tb - ta:,.0f} epochs."


def takeaway(rows: list[dict], lrs: dict[str, float], before: dict | None = None) -> str:
    """The grokking chapter's sentence at p = 97: the Stiefel rule against AdamW at tuned rates
    (beside ``before``, the same comparison at the task's rate, when given), or "not yet run"."""
    gain = {(r["a"], r["b"]): r for r in rows}.get(("stiefel", "baseline"))
    if gain is None:
        return "At $p = 97$: not yet run."
    rates = ", ".join(f"{label(arm)} {lr_text(lr)}" for arm, lr in lrs.items())
    return (
        f"At $p = 97$ (rates {rates}; 20,000 epochs), the Stiefel rule against AdamW: {row_text(gain)}."
        + _before_text(before, gain)
    )


def scale_text(rows: list[dict]) -> str:
    """QK-norm against the Stiefel rule at p = 97, tuned rates: "At $p = 97$, QK-norm against the
    Stiefel rule: ..." ("not yet run" before its runs)."""
    row = {(r["a"], r["b"]): r for r in rows}.get(("qk_norm", "stiefel"))
    return f"At $p = 97$, {label('qk_norm')} against the Stiefel rule: {row_text(row)}."
