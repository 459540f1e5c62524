"""CIFAR-10's W_Q, W_K lr sweep across weight decays (``cifar10_qk_lr``, issue 28): each decay's
choices, the decay of largest gap and its judged starts (family ``cifar10_fair_decay``), each
arm's best cell over both knobs, the decay and the rate (family ``cifar10_best_cells``), and
where a gap at a light decay comes from. Pure functions of the results dicts; no experiment is
imported."""

from __future__ import annotations

from ..choices import cell_choices, widest
from ..labels import label
from .cifar10_tuned import text
from .fair_fight import family_rows, finals, lr_text, picks_text

__all__ = [
    "decay_cells",
    "cell_gap",
    "largest_gap_decay",
    "decay_cells_text",
    "best_cells",
    "best_cells_text",
    "edge_text",
    "best_cells_row",
    "decay_row",
    "decay_takeaway",
    "best_cells_takeaway",
    "decay_shift",
    "decay_shift_text",
]

SWEPT = ("baseline", "stiefel")


def decay_cells(sweep: dict | None) -> list[dict]:
    """Per weight decay the sweep declares (largest first), ``{"weight_decay", "rows"}``: a row per
    swept arm with ``scores`` (lr -> mean late test accuracy over the selection starts, on the rungs
    every start finished), ``n`` (starts), ``chosen`` (the sweep rule's lr; at λ = 1 the judged runs
    read the same) and ``interior`` (both its neighbours score lower). An arm with no finished rung
    has no row; a decay with none has ``rows == []`` (not yet run)."""
    if not sweep:
        return []
    n = len(sweep["config"]["seeds"])
    cells = []
    for weight_decay in sorted(sweep["config"]["weight_decays"], reverse=True):
        picks = cell_choices(sweep, SWEPT, weight_decay)
        rows = [
            {"arm": arm, "scores": pick["scores"], "n": n, "chosen": pick["lr"], "interior": pick["interior"]}
            for arm, pick in picks.items()
            if pick
        ]
        cells.append({"weight_decay": weight_decay, "rows": rows})
    return cells


def cell_gap(cell: dict) -> float | None:
    """The Stiefel rule's score at its chosen lr minus AdamW's at its, in a cell of :func:`decay_cells`
    (fractions, on the selection starts); ``None`` unless both choices are final."""
    best = {r["arm"]: r["scores"][r["chosen"]] for r in cell["rows"] if r["interior"]}
    return best["stiefel"] - best["baseline"] if set(best) == set(SWEPT) else None


def largest_gap_decay(cells: list[dict]) -> float | None:
    """The decay of largest gap at tuned lrs (the rule of family ``cifar10_fair_decay``): the λ whose
    :func:`cell_gap` is largest in absolute value, once every cell's gap is final; ``None`` before."""
    gaps = {cell["weight_decay"]: cell_gap(cell) for cell in cells}
    return widest(gaps) if gaps and None not in gaps.values() else None


def _still_growing(row: dict) -> str:
    return f"at the edge of {len(row['scores'])} rates tried: the sweep is still growing"


def decay_cells_text(cells: list[dict]) -> str:
    """One line per decay: each arm's chosen rate ("still growing" where it sits at its grid's edge),
    and the Stiefel rule's best score minus AdamW's on the selection starts, or "not yet run"."""
    lines = []
    for cell in cells:
        head = f"λ = {cell['weight_decay']:g}"
        if not cell["rows"]:
            lines.append(f"- {head}: not yet run")
            continue
        picks = picks_text(cell["rows"], _still_growing)
        difference = cell_gap(cell)
        gap = (
            f"; at these rates the Stiefel rule scores {100 * difference:+.2f} pp against "
            f"AdamW on the {cell['rows'][0]['n']} selection starts "
            "(the starts that chose the rates: a reading, not a test)"
            if difference is not None
            else ""
        )
        lines.append(f"- {head}: {picks}{gap}{_frozen_rung(cell)}")
    return "\n".join(lines)


def best_cells(cells: list[dict]) -> dict[str, dict] | None:
    """Each swept arm's best cell over both knobs, the decay and the rate (``{arm: {"weight_decay",
    "lr", "score", "edge"}}``, scores on the selection starts; ``edge``: the decay is the largest or
    smallest the sweep tried, so a better one may lie past it), once every cell's choice is final;
    else ``None``."""
    if not cells or any(cell_gap(cell) is None for cell in cells):
        return None
    best = {}
    for cell in cells:
        for r in cell["rows"]:
            score = r["scores"][r["chosen"]]
            if r["arm"] not in best or score > best[r["arm"]]["score"]:
                best[r["arm"]] = {"weight_decay": cell["weight_decay"], "lr": r["chosen"], "score": score}
    decays = [cell["weight_decay"] for cell in cells]
    return {arm: {**b, "edge": b["weight_decay"] in (min(decays), max(decays))} for arm, b in best.items()}


def edge_text(cells: dict[str, dict]) -> str:
    """ "; each arm's best decay is an edge of the decays tried (...)" for the best cells of
    :func:`best_cells` whose decay is an edge, or ""."""
    edges = {arm: cell for arm, cell in cells.items() if cell.get("edge")}
    if not edges:
        return ""
    which = ", ".join(f"{label(arm)} at λ = {cell['weight_decay']:g}" for arm, cell in edges.items())
    whose = "each arm's best decay is" if len(edges) == len(cells) else f"{label(next(iter(edges)))}'s best decay is"
    return (
        f"; {whose} an edge of the decays tried ({which}), so a better decay may lie beyond it: the sweep grew "
        "the rate until its choice was interior, not the decay"
    )


def best_cells_text(best: dict[str, dict], n: int) -> str:
    """ "Tuned over the decay as well as the rate, ...": each arm's best cell and the difference of
    the two, read on the ``n`` selection starts that chose them."""
    where = {
        arm: f"{100 * b['score']:.2f} % (λ = {b['weight_decay']:g}, {lr_text(b['lr'])})" for arm, b in best.items()
    }
    difference = 100 * (best["stiefel"]["score"] - best["baseline"]["score"])
    return (
        f"Tuned over the decay as well as the rate, AdamW's best cell scores {where['baseline']} and the Stiefel "
        f"rule's {where['stiefel']}: {difference:+.2f} pp, on the {n} selection starts that chose them (a reading, "
        f"not a test){edge_text(best)}"
    )


def best_cells_row(files: list[dict | None], best: dict[str, dict] | None, margin: float, alpha: float = 0.05):
    """The family ``cifar10_best_cells``'s one comparison: the Stiefel rule − AdamW, each at its best
    cell over the decay and the rate (:func:`best_cells`), final test accuracy paired by start. Each
    arm's judged runs come from the file of ``files`` whose config ran it at that decay and rate;
    ``None`` until both arms have two starts in common."""
    if best is None:
        return None
    values = {}
    for arm, cell in best.items():
        for results in filter(None, files):
            config = results["config"]
            if config["task"]["weight_decay"] == cell["weight_decay"] and dict(config["qk_lrs"]).get(arm) == cell["lr"]:
                values[arm] = finals(results, metric="test_acc").get(arm, {})
    if len(set(values.get("stiefel", {})) & set(values.get("baseline", {}))) < 2:
        return None
    return {**family_rows(values, ("stiefel",), ("baseline",), margin, alpha)[0], "cells": best}


def _frozen_rung(cell: dict) -> str:
    """Where the Stiefel rule's grid reached lr 0 (frozen frames), how that rung scored against its choice."""
    row = next((r for r in cell["rows"] if r["arm"] == "stiefel"), None)
    if row is None or 0.0 not in row["scores"] or row["chosen"] != min(lr for lr in row["scores"] if lr > 0):
        return ""
    difference = 100 * (row["scores"][0.0] - row["scores"][row["chosen"]])
    return (
        f"; its grid reached lr 0, frozen frames, which score {difference:+.2f} pp against its choice: at this "
        f"decay the rule does best at its smallest rate tried, {lr_text(row['chosen'])}, where its frames barely move"
    )


def decay_row(results: dict | None, margin: float, alpha: float = 0.05) -> dict | None:
    """The family ``cifar10_fair_decay``'s one comparison: the Stiefel rule − AdamW at the decay of
    largest gap, each at its tuned lr there, final test accuracy paired by start, with the decay
    (``weight_decay``) and the lrs (``qk_lrs``) its config resolved before the runs; ``None``
    before two starts have both arms."""
    values = finals(results, metric="test_acc")
    if len(set(values.get("stiefel", {})) & set(values.get("baseline", {}))) < 2:
        return None
    rows = family_rows(values, ("stiefel",), ("baseline",), margin, alpha)
    config = results["config"]
    return {**rows[0], "weight_decay": config["task"]["weight_decay"], "qk_lrs": dict(config["qk_lrs"])}


def decay_takeaway(row: dict | None, judged: int) -> str | None:
    """The sentence at the decay of largest gap (:func:`decay_row`), or ``None`` before its runs."""
    if row is None:
        return None
    rates = f"AdamW {lr_text(row['qk_lrs']['baseline'])}, the Stiefel rule {lr_text(row['qk_lrs']['stiefel'])}"
    return (
        f"**At the decay of largest gap** (λ = {row['weight_decay']:g}, each arm at that decay's own tuned rate: "
        f"{rates}; 100 epochs on 10,000 images): the Stiefel rule against AdamW is {text(row, judged)}."
    )


def best_cells_takeaway(row: dict | None, judged: int) -> str | None:
    """The sentence for each arm at its best decay and rate (:func:`best_cells_row`), or ``None``."""
    if row is None:
        return None
    at = {arm: f"λ = {cell['weight_decay']:g} and {lr_text(cell['lr'])}" for arm, cell in row["cells"].items()}
    return (
        f"**Each arm tuned over the decay as well as the rate** (AdamW at {at['baseline']}, the Stiefel rule at "
        f"{at['stiefel']}: each arm's best cell of the sweep on the selection starts): the Stiefel rule against "
        f"AdamW is {text(row, judged)}; this comparison was set after the runs it reads for AdamW"
        f"{edge_text(row['cells'])}."
    )


def decay_shift(cells: list[dict], decay: float) -> dict[str, tuple[float, float]] | None:
    """Each swept arm's chosen score (fractions, selection starts) at λ = 1 and at ``decay``:
    ``{arm: (at λ = 1, at decay)}``, or ``None`` while either cell is not final."""
    by_decay = {cell["weight_decay"]: cell for cell in cells}
    if 1.0 not in by_decay or decay not in by_decay:
        return None
    out = {}
    for arm in SWEPT:
        pair = []
        for cell in (by_decay[1.0], by_decay[decay]):
            row = next((r for r in cell["rows"] if r["arm"] == arm and r["interior"]), None)
            if row is None:
                return None
            pair.append(row["scores"][row["chosen"]])
        out[arm] = tuple(pair)
    return out


def decay_shift_text(shift: dict[str, tuple[float, float]], decay: float, n: int) -> str:
    """ "From λ = 1 to λ = 0.05, AdamW's best score falls from 50.47 % to 45.14 % and the Stiefel
    rule's rises from ...": where a gap at ``decay`` comes from, on the ``n`` selection starts."""
    parts = []
    for arm, (heavy, light) in shift.items():
        move = "rises" if light > heavy else "falls"
        parts.append(f"{label(arm)}'s best score {move} from {100 * heavy:.2f} % to {100 * light:.2f} %")
    return (
        f"From λ = 1 to λ = {decay:g}, " + " and ".join(parts) + f" (each at its own rate, on the {n} selection starts)"
    )
