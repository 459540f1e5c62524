"""CIFAR-10's answers in words (the numbers and words are :mod:`findings.cifar10_family`'s,
:mod:`findings.cifar10_tuned`'s and :mod:`findings.long_training`'s): a row of the chapter's
families, a comparison of the family ``cifar10_fair`` with its interim
look, the fair fight's answers on CIFAR-10 at tuned rates, each arm's best decay, and the readings
the CIFAR-10 and regimes chapters state in words that the families' rows do not bear out.
Chapters: fair fight, regimes, CIFAR-10 patches; the claims table."""

from __future__ import annotations

import math

from ..findings.cifar10_tuned import find
from ..findings.long_sizes import size_readings
from ..findings.long_training import NAMES, PREPRINT_STARTS, readings, regime_rows
from ..labels import difference, label

__all__ = ["row_text", "text", "answer_lines", "best_decays_text", "departures_from_stated"]


def row_text(row: dict | None, digits: int = 2) -> str:
    """A row of the CIFAR-10 families (:mod:`findings.cifar10_family`): "<what>: <verdict>, <mean> pp
    [<lo>, <hi>] over n starts (Holm p)"."""
    if row is None:
        return "not yet run"
    return (
        f"{row['what']}: **{row['verdict']}**, {difference(row, digits)} over {row['n']} starts "
        f"(Holm p = {row['p_holm']:.2g})"
    )


def text(row: dict | None, judged: int) -> str:
    """ "**<verdict>**, <mean> pp [lo, hi] over n of ``judged`` paired starts (p = ...; Holm p = ...)",
    or "not yet run". Before all ``judged`` starts have run, the test is an interim look, and says so."""
    if row is None:
        return "not yet run"
    of = f"{row['n']}" if row["n"] == judged else f"{row['n']} of {judged}"
    tested = "too few for a test yet" if math.isnan(row["p"]) else f"p = {row['p']:.2g}; Holm p = {row['p_holm']:.2g}"
    if row["n"] < judged and not math.isnan(row["p"]):
        tested = f"an interim look, not the declared endpoint: {tested}"
    return f"**{row['verdict']}**, {difference(row, 2)} over {of} paired starts ({tested})"


def answer_lines(rows: dict, judged: int) -> list[str]:
    """The fair fight's answers on CIFAR-10, one line per family that has run, from
    ``declared.cifar10()``'s ``rows``: at tuned lrs at λ = 1 (the gain and frozen frames), at the
    decay of largest gap, and each arm at its best decay and lr."""
    gain, frozen = find(rows["tuned"], "stiefel", "baseline"), find(rows["tuned"], "frozen", "stiefel")
    at_decay, best = rows.get("at_decay"), rows.get("best_cells")
    lines = []
    if gain is not None:
        lines.append(
            "**On CIFAR-10 at tuned rates** (100 epochs on 10,000 images, λ = 1): the Stiefel rule against AdamW, "
            f"{text(gain, judged)}; frozen frames against the Stiefel rule, {text(frozen, judged)}."
        )
    if at_decay is not None:
        lines.append(
            f"**On CIFAR-10 at the decay of largest gap** (λ = {at_decay['weight_decay']:g}, each arm at that "
            f"decay's own tuned rate): the Stiefel rule against AdamW, {text(at_decay, judged)}."
        )
    if best is not None:
        cells = best_decays_text(best["cells"])
        lines.append(
            f"**On CIFAR-10, each arm at its best decay and rate** ({cells}; set after the runs it reads for "
            f"AdamW): the Stiefel rule against AdamW, {text(best, judged)}."
        )
    return lines


def best_decays_text(cells: dict[str, dict]) -> str:
    """ "AdamW at λ = 1, an edge of the decays tried, the Stiefel rule at λ = 0.05": each arm's best
    decay (cells of ``cifar10_decays.best_cells``), and whether it is an edge of the decays tried."""
    return ", ".join(
        f"{label(arm)} at λ = {cell['weight_decay']:g}" + (", an edge of the decays tried" if cell.get("edge") else "")
        for arm, cell in cells.items()
    )


def departures_from_stated(
    results: dict, long_rows: list[dict], sizes: dict | None = None, size_rows: list[dict] | None = None
) -> list[str]:
    """The readings the CIFAR-10 and regimes chapters state in words, each that the families'
    rows do not bear out (empty: all hold), so that a run which changes a verdict fails the
    chapter instead of leaving its sentence wrong. Stated: both arms fit their training set at
    two decays, and three starts decide the gain at neither (inconclusive); at every other decay
    they do not fit, and the Stiefel rule is behind (lower); the preprint's protocol runs its
    :data:`findings.long_training.PREPRINT_STARTS` starts at the largest decay and is behind too; both arms reach their
    best test accuracy there; a Stiefel step moves W_Q, W_K within 25 % as far as an AdamW step;
    three starts decide neither the cost of freezing nor decay on W_Q, W_K alone at any decay
    (inconclusive). With ``sizes`` (the size sweep, once it has a run), also: the Stiefel rule is
    ahead at no size; the gap narrows with data (the gain at the largest size − at the smallest
    reads lower); both arms fit their training set at the smallest size and neither at the
    largest. Chapters: CIFAR-10 patches, regimes."""
    r, rows = readings(results, long_rows), regime_rows(results)
    wrong = []
    if len(r["fitting"]) != 2 or set(r["fitting"].values()) != {"inconclusive"}:
        wrong.append(f"both arms fit at two decays, the gain inconclusive there: {r['fitting']}")
    if not r["held"] or set(r["held"].values()) != {"lower"}:
        wrong.append(f"Stiefel behind where decay holds train accuracy down: {r['held']}")
    decay, word, n = r["protocol"]
    if word != "lower" or n != PREPRINT_STARTS or r["held"] and decay != max(r["held"]):
        wrong.append(
            f"the preprint's {PREPRINT_STARTS} starts run at the largest decay and are behind: {r['protocol']}"
        )
    for arm in ("baseline", "stiefel"):
        test_acc = {row["weight_decay"]: row["accuracy"].get(arm, {}).get("test_acc", 0.0) for row in rows}
        if not r["held"] or max(test_acc, key=test_acc.get) != max(r["held"]):
            wrong.append(f"{arm}'s best test accuracy at the largest decay: {test_acc}")
    if r["movement"] is None or not (0.8 < r["movement"][0] and r["movement"][1] < 1.25):
        wrong.append(f"AdamW step / Stiefel step within 0.8x-1.25x: {r['movement']}")
    for measure in ("freezing_cost", "decay_on_qk"):
        if not r[measure] or set(r[measure].values()) != {"inconclusive"}:
            wrong.append(f"{NAMES[measure]} inconclusive at every decay: {r[measure]}")
    if sizes and sizes.get("runs"):
        z = size_readings(sizes, size_rows or [])
        if not z["gain"] or "higher" in z["gain"].values():
            wrong.append(f"the Stiefel rule ahead at no size: {z['gain']}")
        if z["widening"] != "lower":
            wrong.append(f"the gap narrows with data: {z['widening']}")
        fitting = z["fitting_arms"]
        if not fitting or fitting[min(fitting)] != 2 or fitting[max(fitting)] != 0:
            wrong.append(f"both arms fit at the smallest size, neither at the largest: {fitting}")
    return wrong
