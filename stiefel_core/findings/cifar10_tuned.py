"""CIFAR-10 at tuned W_Q, W_K learning rates (issue 28): the sweep that chose each arm's rate in
the long protocol (``cifar10_qk_lr``) and the judged runs at those rates (``cifar10_fair`` and
``cifar10_fair_peers``), read under the family ``cifar10_fair`` that ``book/protocol.yml``
declared before their runs. Pure functions of the results dicts; no experiment is imported.

The family is Holm-corrected over every comparison it declares, the relatives' included: a
comparison whose runs are missing keeps its place with p = 1, so a verdict read before the
relatives have run can only loosen, never tighten, when they land."""

from __future__ import annotations

import math

from ..choices import cell_choices, late_scores, rung_scores, widest
from ..labels import label
from .fair_fight import family_rows, finals, lr_text, picks_text, tuned_lrs

__all__ = [
    "RELATIVES",
    "ARMS",
    "REFERENCES",
    "decay_cells",
    "cell_gap",
    "largest_gap_decay",
    "decay_row",
    "decay_cells_text",
    "best_cells",
    "best_cells_text",
    "best_cells_row",
    "peer_sweep_rows",
    "spread_text",
    "tuned_lrs",
    "fair_rows",
    "shown",
    "find",
    "text",
    "lrs_text",
    "takeaway",
    "decay_takeaway",
    "best_cells_takeaway",
    "answer_lines",
    "decay_shift",
    "decay_shift_text",
    "pending_note",
    "relatives_counts",
]

RELATIVES = ("muon", "muon_no_decay", "geoopt_radam", "per_entry", "orthogonal_param")
ARMS = ("stiefel", "frozen", *RELATIVES)  # each against each reference (protocol.yml, cifar10_fair)
REFERENCES = ("baseline", "stiefel")
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
    "lr", "score"}}``, scores on the selection starts), once every cell's choice is final; else ``None``."""
    if not cells or any(cell_gap(cell) is None for cell in cells):
        return None
    best = {}
    for cell in cells:
        for r in cell["rows"]:
            score = r["scores"][r["chosen"]]
            if r["arm"] not in best or score > best[r["arm"]]["score"]:
                best[r["arm"]] = {"weight_decay": cell["weight_decay"], "lr": r["chosen"], "score": score}
    return best


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
        "not a test)"
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


def peer_sweep_rows(sweep: dict | None, chosen: dict[str, float] | None = None) -> list:
    """Per relative of its own CIFAR-10 sweep (λ = 1, two selection starts): ``scores``
    (lr -> mean late test accuracy over the rungs every start finished), ``n`` and ``chosen`` (the lr
    its judged runs used, from their config; ``None`` before)."""
    return _rows(sweep, {arm: arm for arm in RELATIVES}, chosen)


def spread_text(rows: list[dict], sep: str = ", ") -> str:
    """How far the rates tried move each arm's score: "<arm> <max - min> pp, ..." over ``rows``
    (a cell's rows of :func:`decay_cells`, or :func:`peer_sweep_rows`) with two or more rungs."""
    spans = [
        (r["arm"], 100 * (max(r["scores"].values()) - min(r["scores"].values()))) for r in rows if len(r["scores"]) > 1
    ]
    return sep.join(f"{label(arm)} {span:.1f} pp" for arm, span in spans)


def _rows(sweep: dict | None, cells: dict[str, str], chosen: dict[str, float] | None) -> list:
    if not sweep:
        return []
    n = len(sweep["config"]["seeds"])
    rows = [
        {
            "arm": arm,
            "scores": rung_scores(late_scores(sweep, cell, "test_acc"), n),
            "n": n,
            "chosen": (chosen or {}).get(arm),
        }
        for arm, cell in cells.items()
    ]
    return [r for r in rows if r["scores"]]


def fair_rows(fair: dict | None, peers: dict | None, margin: float, alpha: float = 0.05) -> list[dict]:
    """Every comparison of the family, final test accuracy paired by start, Holm over the whole
    declared family (missing arms count with p = 1). Rows with no pairs yet have ``n == 0``."""
    values = finals(fair, peers, metric="test_acc")
    for arm in (*ARMS, *REFERENCES):
        values.setdefault(arm, {})
    rows = family_rows(values, ARMS, REFERENCES, margin, alpha)
    return [{**r, "what": f"{label(r['arm'])} − {label(r['reference'])} at tuned lrs"} for r in rows]


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


def shown(rows: list[dict]) -> list[dict]:
    """The rows whose runs exist."""
    return [r for r in rows if r["n"] >= 2]


def find(rows: list[dict], arm: str, reference: str) -> dict | None:
    row = next((r for r in rows if r["arm"] == arm and r["reference"] == reference), None)
    return row if row is not None and row["n"] >= 2 else None


def text(row: dict | None, judged: int) -> str:
    """ "**<verdict>**, <mean> pp [lo, hi] over n of ``judged`` paired starts (p = ...; Holm p = ...)",
    or "not yet run". Before all ``judged`` starts have run, the test is an interim look, and says so."""
    if row is None:
        return "not yet run"
    lo, hi = row["ci_pp"]
    of = f"{row['n']}" if row["n"] == judged else f"{row['n']} of {judged}"
    tested = "too few for a test yet" if math.isnan(row["p"]) else f"p = {row['p']:.2g}; Holm p = {row['p_holm']:.2g}"
    if row["n"] < judged and not math.isnan(row["p"]):
        tested = f"an interim look, not the declared endpoint: {tested}"
    return f"**{row['verdict']}**, {row['mean_pp']:+.2f} pp [{lo:+.2f}, {hi:+.2f}] over {of} paired starts ({tested})"


def pending_note(rows: list[dict], alpha: float = 0.05) -> str | None:
    """Where a comparison would read otherwise uncorrected (p < ``alpha``, Holm's p not), why:
    the family counts the comparisons not yet run with p = 1, and their runs can only lower
    every corrected p (Holm's adjusted p-values never fall when a raw p rises). ``None`` if none."""
    missing = sum(r["n"] < 2 for r in rows)
    held = [r for r in shown(rows) if r["p"] < alpha <= r["p_holm"]]
    if not held or not missing:
        return None
    names = "; ".join(f"{label(r['arm'])} against {label(r['reference'])}" for r in held)
    return (
        f"Uncorrected, {names} would not read inconclusive (p < {alpha:g}). The family's correction counts all "
        f"{len(rows)} declared comparisons, {missing} of which (the relatives') have not run and count with p = 1; "
        "their runs can only lower the corrected p."
    )


def relatives_counts(rows: list[dict], judged: int, margin_pp: float) -> str | None:
    """The relatives' verdicts on CIFAR-10 at their own tuned rates, counted per reference (a
    sentence for a chapter's takeaways), or ``None`` before any relative has paired starts."""
    relatives = [r for r in shown(rows) if r["arm"] in RELATIVES]
    if not relatives:
        return None
    n = min(r["n"] for r in relatives)
    starts = f"{n} paired starts" if n >= judged else f"{n} of {judged} paired starts so far, an interim look"
    parts = []
    for ref in REFERENCES[::-1]:
        verdicts = [r["verdict"] for r in relatives if r["reference"] == ref]
        counts = ", ".join(
            f"{verdicts.count(w)} {w}" + (f" (within ±{margin_pp:g} pp)" if w == "equivalent" else "")
            for w in ("higher", "lower", "equivalent", "inconclusive")
        )
        parts.append(f"against {label(ref)} {counts}")
    return (
        f"On CIFAR-10, each relative at the rate tuned there ({len(relatives) // len(REFERENCES)} relatives, λ = 1, "
        f"100 epochs on 10,000 images, {starts}, Holm across the family): " + "; ".join(parts) + "."
    )


def lrs_text(lrs: dict[str, float], label) -> str:
    return ", ".join(f"{label(arm)} {lr_text(lr)}" for arm, lr in lrs.items())


def takeaway(rows: list[dict], lrs: dict[str, float], judged: int) -> str | None:
    """The chapter's sentence at tuned lrs, or ``None`` before the judged runs have two pairs."""
    gain = find(rows, "stiefel", "baseline")
    if gain is None:
        return None
    frozen = [find(rows, "frozen", ref) for ref in REFERENCES]
    return (
        f"**At tuned learning rates** ({lrs_text(lrs, label)} for W_Q, W_K, each chosen on separate selection "
        f"starts; λ = 1, 100 epochs on 10,000 images): the Stiefel rule against AdamW is {text(gain, judged)}. "
        f"Frozen frames against AdamW: {text(frozen[0], judged)}; against the Stiefel rule: {text(frozen[1], judged)}."
    )


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
        f"AdamW is {text(row, judged)}; this comparison was set after the runs it reads for AdamW."
    )


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
        cells = ", ".join(f"{label(arm)} at λ = {cell['weight_decay']:g}" for arm, cell in best["cells"].items())
        lines.append(
            f"**On CIFAR-10, each arm at its best decay and rate** ({cells}; set after the runs it reads for "
            f"AdamW): the Stiefel rule against AdamW, {text(best, judged)}."
        )
    return lines


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
