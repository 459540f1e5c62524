"""CIFAR-10's W_Q, W_K lr sweep across weight decays (``cifar10_qk_lr``, issue 28): each decay's
choices, the decay of largest gap and its judged starts (family ``cifar10_fair_decay``), each
arm's best cell over both knobs, the decay and the rate (family ``cifar10_best_cells``), and
where a gap at a light decay comes from. Pure functions of the results dicts; no experiment is
imported."""

from __future__ import annotations

from ..choices import cell_choices, widest
from ..results_reading import finals
from .fair_fight import family_rows

__all__ = ["decay_cells", "cell_gap", "largest_gap_decay", "best_cells", "best_cells_row", "decay_row"]

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


