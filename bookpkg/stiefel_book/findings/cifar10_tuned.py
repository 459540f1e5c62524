"""CIFAR-10 at tuned W_Q, W_K learning rates (issue 28): the sweep that chose each arm's rate in
the long protocol (``cifar10_qk_lr``) and the judged runs at those rates (``cifar10_fair`` and
``cifar10_fair_peers``), read under the family ``cifar10_fair`` that ``book/protocol.yml``
declared before their runs. Pure functions of the results dicts; no experiment is imported.

The family is Holm-corrected over every comparison it declares, the relatives' included: a
comparison whose runs are missing keeps its place with p = 1, so a verdict read before the
relatives have run can only loosen, never tighten, when they land. Its answers in words are
:mod:`stiefel_book.wording.cifar10`."""

from __future__ import annotations

from .. import families
from ..labels import label
from ..results_reading import finals
from .fair_fight import family_rows, sweep_rows, tuned_lrs

__all__ = ["RELATIVES", "ARMS", "REFERENCES", "peer_sweep_rows", "tuned_lrs", "fair_rows", "shown", "find"]

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
