"""CIFAR-10 at tuned W_Q, W_K learning rates (issue 28): the sweep that chose each arm's rate in
the long protocol (``cifar10_qk_lr``) and the judged runs at those rates (``cifar10_fair`` and
``cifar10_fair_peers``), read under the family ``cifar10_fair`` that ``book/protocol.yml``
declared before their runs. Pure functions of the results dicts; no experiment is imported.

The family is Holm-corrected over every comparison it declares, the relatives' included: a
comparison whose runs are missing keeps its place with p = 1, so a verdict read before the
relatives have run can only loosen, never tighten, when they land."""

from __future__ import annotations

import math

from .. import families
from ..labels import difference, label
from ..results_reading import finals
from .fair_fight import family_rows, sweep_rows, tuned_lrs

__all__ = ["RELATIVES", "ARMS", "REFERENCES", "peer_sweep_rows", "tuned_lrs", "fair_rows", "shown", "find", "text"]
__all__ += ["answer_lines", "best_decays_text"]

RELATIVES = ("muon", "muon_no_decay", "geoopt_radam", "per_entry", "orthogonal_param")
ARMS = ("stiefel", "frozen", *RELATIVES)  # each against each reference (protocol.yml, cifar10_fair)
REFERENCES = ("baseline", "stiefel")


def peer_sweep_rows(sweep: dict | None, chosen: dict[str, float] | None = None) -> list:
    """Per relative of its own CIFAR-10 sweep (λ = 1, two selection starts): ``scores``
    (lr -> mean late test accuracy over the rungs every start finished), ``n`` and ``chosen`` (the lr
    its judged runs used, from their config; ``None`` before)."""
    return [r for r in sweep_rows(sweep, RELATIVES, chosen, "test_acc") if r["scores"]]


def fair_rows(fair: dict | None, peers: dict | None, margin: float, alpha: float = 0.05) -> list[dict]:
    """Every comparison of the family, final test accuracy paired by start, Holm over the whole
    declared family (missing arms count with p = 1). Rows with no pairs yet have ``n == 0``."""
    values = finals(fair, peers, metric="test_acc")
    for arm in (*ARMS, *REFERENCES):
        values.setdefault(arm, {})
    rows = family_rows(values, ARMS, REFERENCES, margin, alpha)
    return [{**r, "what": f"{label(r['arm'])} − {label(r['reference'])} at tuned lrs"} for r in rows]


def shown(rows: list[dict]) -> list[dict]:
    """The rows whose runs exist."""
    return [r for r in rows if r["n"] >= 2]


def find(rows: list[dict], arm: str, reference: str) -> dict | None:
    """The row ``arm − reference`` (:func:`families.find`) whose runs exist, else ``None``."""
    return families.find(shown(rows), arm, reference)


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
