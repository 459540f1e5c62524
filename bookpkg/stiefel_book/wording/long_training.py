"""CIFAR-10's long protocol in a table's words: a declared family's comparison in a cell, and the
regimes' table of :func:`findings.long_training.regime_rows` (numbers and verdict words from the findings).
Chapters: CIFAR-10 patches, regimes."""

from __future__ import annotations

from ..findings.long_training import long_cells
from ..stats import PairedComparison
from ..tables import markdown_table

__all__ = ["holm_p", "family_cell", "regime_table"]


def holm_p(row: dict) -> str:
    """The Holm-corrected p that decides ``row``'s word: the equivalence test's (TOST) for
    *equivalent*, else the paired t test's. Chapters: CIFAR-10 patches, regimes."""
    if row["verdict"] == "equivalent":
        return f"Holm TOST p = {row['tost_p_holm']:.2g}"
    return f"Holm p = {row['p_holm']:.2g}"


def family_cell(row: dict | None) -> str:
    """One comparison of a declared family in a table cell: mean, 95 % interval, starts, the
    Holm-corrected p (:func:`holm_p`) and the word. Chapters: CIFAR-10 patches, regimes."""
    if row is None:
        return "-"
    lo, hi = row["ci_pp"]
    return f"{row['mean_pp']:+.2f} [{lo:+.2f}, {hi:+.2f}], {row['n']} starts, {holm_p(row)}: {row['verdict']}"


def _numbers(c: PairedComparison | None) -> str:
    return "-" if c is None else f"{c.mean_difference:+.2f} [{c.ci_low:+.2f}, {c.ci_high:+.2f}], {c.wins}/{c.n}"


def regime_table(rows: list[dict], long_rows: list[dict] | None = None) -> str:
    """:func:`regime_rows` as a Markdown table: per decay its budget, the accuracies reached
    (train / test, %), each comparison in points, and the movement ratio. With ``long_rows`` (the
    family ``cifar10_long``) a comparison is the family's row (:func:`long_cells`): interval,
    starts, Holm p and verdict; else its interval and wins over every finished start, no verdict.
    Chapters: CIFAR-10 patches, regimes."""
    cells = long_cells(long_rows)

    def reached(row, arm):
        acc = row["accuracy"].get(arm)
        return "-" if acc is None else f"{acc['train_acc']:.1f} / {acc['test_acc']:.1f}"

    def compared(row, measure):
        if long_rows is None:
            return _numbers(row[measure])
        return family_cell(cells.get((measure, row["weight_decay"])))

    body = [
        [
            f"{r['weight_decay']:g}",
            f"{r['budget']:.3g}",
            reached(r, "baseline"),
            reached(r, "stiefel"),
            len(r["starts"]),
            *(compared(r, m) for m in ("gain", "freezing_cost", "decay_on_qk")),
            "-" if r["movement_ratio"] is None else f"{r['movement_ratio']:.2f}x",
        ]
        for r in rows
    ]
    return markdown_table(
        [
            "λ",
            "Σ lr·λ",
            "AdamW train / test (%)",
            "Stiefel train / test (%)",
            "pairs",
            "Stiefel − AdamW, pp (unadjusted 95 % CI)",
            "Stiefel − frozen, pp (unadjusted 95 % CI)",
            "no decay on W_Q, W_K − AdamW, pp (unadjusted 95 % CI)",
            "AdamW step / Stiefel step",
        ],
        body,
    )
