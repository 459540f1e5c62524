"""A declared family's rows as a reader reads them (:mod:`findings.tuned` finds and turns them):
"A beats B by d pp", a table cell's word and numbers, the verdicts that changed since the retired
rule, and the families whose rule was set after their runs. Chapters: grokking, ablation, peers,
CIFAR-10 patches."""

from __future__ import annotations

from ..findings.tuned import retired_word
from ..labels import difference, interval

__all__ = ["TIE_NOTE", "beats", "verdict_text", "changed", "after_runs_lines"]

TIE_NOTE = "A former tie (an interval holding zero) now reads inconclusive unless a line below says otherwise."


def beats(row: dict | None, label, margin_pp: float, digits: int = 1, capital: bool = True) -> str:
    """One row ``a − b`` as a reader reads it: "A beats B by d pp [lo, hi]" (higher or lower, Holm
    across its family), "A and B are equivalent (within ± m pp): ..." or "A against B:
    inconclusive, ..."; "not yet run" when the row is missing."""
    if row is None:
        return "not yet run"
    a, b, w = row["arm"], row["reference"], row["verdict"]
    lo, hi = row["ci_pp"]
    if w in ("higher", "lower"):
        win, lose = (a, b) if w == "higher" else (b, a)
        s = 1 if w == "higher" else -1
        low, high = sorted((s * lo, s * hi))
        return (
            f"{label(win, capital=capital)} beats {label(lose)} by {abs(row['mean_pp']):.{digits}f} pp, "
            f"{interval(low, high, f'.{digits}f')}, Holm p = {row['p_holm']:.2g}"
        )
    if w == "equivalent":
        return (
            f"{label(a, capital=capital)} and {label(b)} are equivalent (within ±{margin_pp:g} pp): "
            f"{difference(row, digits)}"
        )
    return f"{label(a, capital=capital)} against {label(b)}: inconclusive, {difference(row, digits)}"


def verdict_text(row: dict | None, digits: int = 1) -> str:
    """A row's word and numbers for a table cell: "higher, +3.1 pp [+0.2, +6.0]" (``-`` when missing)."""
    return "-" if row is None else f"{row['verdict']}, {difference(row, digits)}"


def changed(pairs: list[tuple[str, dict | None, dict | None]], digits: int = 1) -> list[str]:
    """The verdicts that changed, one line each: ``pairs`` are ``(what, before, now)`` where
    ``before`` is the row the chapter read before (the retired rule, see
    :func:`findings.tuned.retired_word`) and ``now`` the row it reads now (the family's four words).
    A row kept in the same word (higher before and after) is left out, and so is a former tie that
    reads inconclusive (the chapter says that once: :data:`TIE_NOTE`); so is one missing on either side."""
    out = []
    for what, before, now in pairs:
        if before is None or now is None:
            continue
        old, new = retired_word(before), now["verdict"]
        if old == new or (old.startswith("tie") and new == "inconclusive"):
            continue
        out.append(
            f"{what}: {old} ({difference(before, digits)}) before, **{new}** now ({difference(now, digits)}, "
            f"Holm p = {now['p_holm']:.2g})"
        )
    return out


def after_runs_lines(families) -> list[str]:
    """For each family whose rule was set after the runs it judges: one line saying so, with what
    was set after the runs and when (the protocol's ``after_runs``)."""
    from ..labels import FAMILIES

    return [
        f"The family of {FAMILIES.get(f.name, f.name.replace('_', ' '))}: set after the runs. "
        f"{f.after_runs[:1].upper()}{f.after_runs[1:]}."
        for f in families
        if f.set_after_runs
    ]
