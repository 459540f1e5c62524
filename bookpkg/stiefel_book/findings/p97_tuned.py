"""Grokking at p = 97 at tuned W_Q, W_K learning rates (issue 28): the sweep that chooses each
arm's rate by how fast it groks (``grokking_p97_qk_lr``) and the judged runs at those rates
(``grokking_p97_fair``), read under the family ``grokking_p97_fair`` that ``book/protocol.yml``
declared before their runs. Pure functions of the results dicts; no experiment is imported.

The endpoint is time to 90 % validation accuracy (the paired permutation log-rank test, runs that
never get there censored at the last epoch), Holm across every comparison the family declares
(one not yet run counts with p = 1). Beside it: the seeds that get there, and the final validation
accuracy, read in the four words within the family's margin (Holm across the same comparisons).
With few seeds an exact paired test has a floor (:func:`stats.power.holm_floor`): :func:`undecidable`
finds where the family cannot decide a difference of time at all (the chapter's words for it, and for
every comparison: :mod:`stiefel_book.wording.p97`). A judged run adopted from the grokking chapter's long runs was
seen before the family was declared; a comparison resting on one says so."""

from __future__ import annotations

import numpy as np

from ..choices import sweep_row, time_scores
from ..families import judge
from ..labels import label
from ..results_reading import finals, runs_of
from ..stats import paired_comparison
from ..stats.power import holm_floor
from .fair_fight import THRESHOLD
from .regimes import CONTROL_PAIRS, time_rows

__all__ = [
    "SWEPT",
    "PAIRS",
    "THRESHOLD",
    "sweep_rows",
    "fair_rows",
    "primary_row",
    "PRIMARY",
    "adopted_seeds",
    "time_word",
    "undecidable",
    "control_rows",
]

SWEPT = ("baseline", "no_decay_qk", "stiefel", "qk_norm")
PAIRS = tuple(  # each arm against AdamW and against the Stiefel rule (protocol.yml, grokking_p97_fair)
    (arm, ref, f"{label(arm)} against {label(ref)}")
    for ref, arms in (
        ("baseline", ("stiefel", "no_decay_qk", "qk_norm", "frozen")),
        ("stiefel", ("no_decay_qk", "qk_norm", "frozen")),
    )
    for arm in arms
)

PRIMARY = ("stiefel", "baseline", f"{label('stiefel')} against {label('baseline')}")  # p = 97's primary comparison


def sweep_rows(sweep: dict | None) -> list[dict]:
    """Per swept arm with a finished rung: ``scores`` (lr -> mean epochs to 90 % over the selection
    seeds, a run that never gets there counted at the sweep's horizon), ``n`` (seeds), ``chosen``
    (the sweep rule's lr: the fastest) and ``interior``."""
    if not sweep:
        return []
    config = sweep["config"]
    n, center = len(config["seeds"]), config["task"]["lr"]
    rows = (sweep_row(arm, time_scores(sweep, arm), n, center, sign=-1.0) for arm in SWEPT)  # epochs: lower is faster
    return [row for row in rows if row["chosen"] is not None]


def adopted_seeds(results: dict | None, arm: str) -> list[int]:
    """The seeds of ``arm`` whose judged run was adopted from an earlier results file."""
    return sorted(s for s, run in runs_of(results, arm).items() if (run.get("provenance") or {}).get("adopted_from"))


def fair_rows(results: dict | None, alpha: float = 0.05, margin: float | None = None) -> list[dict]:
    """Every comparison of the family with two or more paired seeds: the time rows of
    :func:`regimes.time_rows` (Holm over all the family's declared comparisons), each with
    ``final`` (the final validation accuracy's paired comparison, in pp), ``past``
    (seeds past 90 % in each arm) and ``seen_before`` (whether both arms' runs were all adopted,
    so the comparison's outcome was known before the family was declared); with ``margin`` (a
    fraction), also ``final_word``, the final accuracy's verdict (:func:`families.judge`)."""
    if not results:
        return []
    rows = time_rows(results, THRESHOLD, alpha, pairs=PAIRS, declared=len(PAIRS))
    words = {}
    if margin is not None:  # the final accuracy beside the endpoint, in four words, Holm across the declared pairs
        words = {(r.arm, r.reference): r.verdict for r in judge(finals(results), [p[:2] for p in PAIRS], margin, alpha)}
    for row in rows:
        _with_finals(results, row)
        if (row["a"], row["b"]) in words:
            row["final_word"] = words[row["a"], row["b"]]
    return rows


def _with_finals(results: dict, row: dict) -> dict:
    """``row`` with ``final``, ``past`` and ``seen_before`` (:func:`fair_rows`) over its arms' paired seeds."""
    a, b = runs_of(results, row["a"]), runs_of(results, row["b"])
    seeds = sorted(set(a) & set(b))
    fa = np.array([a[s]["final"]["val_acc"] for s in seeds])
    fb = np.array([b[s]["final"]["val_acc"] for s in seeds])
    row["final"] = paired_comparison(100 * fa, 100 * fb)
    row["past"] = (int((fa >= THRESHOLD).sum()), int((fb >= THRESHOLD).sum()))
    row["seen_before"] = set(seeds) <= set(adopted_seeds(results, row["a"])) & set(adopted_seeds(results, row["b"]))
    return row


def primary_row(results: dict | None, alpha: float = 0.05, margin: float | None = None) -> dict | None:
    """The primary comparison of the families ``grokking_p97_primary`` and ``grokking_p97_checked``, by their
    gatekeeping order: :data:`PRIMARY` on time to 90 % first and alone at the full α, then its final accuracy,
    tested only if time rejected. A :func:`fair_rows` row with ``gate`` (time rejected, so the final accuracy
    was tested) and, with ``margin`` (a fraction) and the gate open, ``final_word``; ``None`` before two
    paired seeds."""
    rows = time_rows(results, THRESHOLD, alpha, pairs=(PRIMARY,), declared=1) if results else []
    if not rows:
        return None
    row = _with_finals(results, rows[0])
    row["gate"] = row["verdict"] != "inconclusive"
    if row["gate"] and margin is not None:
        row["final_word"] = judge(finals(results), [PRIMARY[:2]], margin, alpha)[0].verdict
    return row


def undecidable(rows: list[dict], alpha: float = 0.05) -> tuple[int, float] | None:
    """``(paired seeds, Holm floor)`` where, with the seeds it has, the family can decide no
    difference of time (its exact test's smallest Holm-adjusted p over :data:`PAIRS` is at or above
    ``alpha``); ``None`` where it can, or before any comparison has run."""
    if not rows:
        return None
    seeds = min(r["seeds"] for r in rows)
    floor = holm_floor(seeds, len(PAIRS))
    return None if floor < alpha else (seeds, floor)


def time_word(verdict: str) -> str:
    """A time verdict in words: *higher* is sooner, *lower* later."""
    return {"higher": "sooner", "lower": "later"}.get(verdict, verdict)


_FLIP = {"higher": "lower", "lower": "higher"}


def control_rows(rows: list[dict]) -> list[dict]:
    """The family's rows that are the mechanism's controls, each turned to the orientation of
    :data:`regimes.CONTROL_PAIRS` (``a`` against ``b``; turning a row swaps its arms, its curves, its
    seeds past 90 % and *higher* with *lower*), for :func:`regimes.supported_readings`."""
    wanted = [(a, b) for a, b, _ in CONTROL_PAIRS]
    found = {(r["a"], r["b"]): r for r in rows}
    out = []
    for a, b in wanted:
        if (a, b) in found:
            out.append(found[a, b])
        elif (b, a) in found:
            r = found[b, a]
            turned = {**r, "a": a, "b": b, "a_survival": r["b_survival"], "b_survival": r["a_survival"]}
            turned["verdict"] = _FLIP.get(r["verdict"], r["verdict"])
            turned["past"] = r["past"][::-1]
            if "final_word" in r:
                turned["final_word"] = _FLIP.get(r["final_word"], r["final_word"])
            turned.pop("final", None)  # a − b's interval, not b − a's
            out.append(turned)
    return out
