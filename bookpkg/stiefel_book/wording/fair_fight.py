"""The fair fight's rates and comparisons in words (:mod:`findings.fair_fight` reads them): a
tuned W_Q, W_K rate, each swept arm's pick, and one comparison's verdict and numbers. Chapters:
fair fight, grokking, ablation, peers, regimes, CIFAR-10 patches; the claims table and the pages."""

from __future__ import annotations

from ..labels import difference, label, rate_text

__all__ = ["lr_text", "picks_text", "result_text", "sentence"]


def lr_text(lr: float | None) -> str:
    return "not chosen yet" if lr is None else ("0 (frozen)" if lr == 0 else rate_text(lr))


def picks_text(rows: list[dict], edge=lambda row: "still growing") -> str:
    """ "AdamW 3e-4, the Stiefel rule 1e-4 (<edge(row)>)": each swept arm's chosen rate in ``rows``
    (``arm``, ``chosen``, ``interior``, as the sweeps' findings rows), ``edge``'s note after one at its
    grid's edge."""
    return ", ".join(
        f"{label(r['arm'])} {lr_text(r['chosen'])}" + ("" if r["interior"] else f" ({edge(r)})") for r in rows
    )


def result_text(row: dict | None) -> str:
    """A comparison's verdict and numbers: "<verdict>, <mean> pp [lo, hi] over n paired seeds (seeds
    past 90 %: x against y)"."""
    if row is None:
        return "not yet run"
    return (
        f"{row['verdict']}, {difference(row)} over {row['n']} paired seeds "
        f"(seeds past 90 %: {row['past'][0]} against {row['past'][1]})"
    )


def sentence(row: dict | None, a: str, b: str) -> str:
    """One comparison as a reader reads it: "<a> against <b>: <verdict>, <numbers>"."""
    return f"{a} against {b}: {result_text(row)}"
