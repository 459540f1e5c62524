"""Grokking at p = 97 at tuned W_Q, W_K learning rates (issue 28): the sweep that chooses each
arm's rate by how fast it groks (``grokking_p97_qk_lr``) and the judged runs at those rates
(``grokking_p97_fair``), read under the family ``grokking_p97_fair`` that ``book/protocol.yml``
declared before their runs. Pure functions of the results dicts; no experiment is imported.

The endpoint is time to 90 % validation accuracy (the paired permutation log-rank test, runs that
never get there censored at the last epoch), Holm across every comparison the family declares
(one not yet run counts with p = 1). Beside it: the seeds that get there, and the final validation
accuracy, read in the four words within the family's margin (Holm across the same comparisons).
With few seeds an exact paired test has a floor (:func:`stats.power.holm_floor`): the chapter says where the
family cannot decide a difference of time at all. A judged run adopted from the grokking chapter's long runs was
seen before the family was declared; a comparison resting on one says so."""

from __future__ import annotations

import math

import numpy as np

from ..choices import sweep_row, time_scores
from ..families import judge
from ..labels import interval, label
from ..results_reading import finals, runs_of
from ..stats import paired_comparison
from ..stats.power import holm_floor, pairs_for_floor
from .fair_fight import THRESHOLD, lr_text
from .regimes import CONTROL_PAIRS, time_rows

__all__ = [
    "SWEPT",
    "PAIRS",
    "THRESHOLD",
    "sweep_rows",
    "fair_rows",
    "adopted_seeds",
    "row_text",
    "time_word",
    "median",
    "medians",
    "short_text",
    "floor_text",
    "floor_note",
    "takeaway",
    "scale_text",
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
        a, b = runs_of(results, row["a"]), runs_of(results, row["b"])
        seeds = sorted(set(a) & set(b))
        fa = np.array([a[s]["final"]["val_acc"] for s in seeds])
        fb = np.array([b[s]["final"]["val_acc"] for s in seeds])
        row["final"] = paired_comparison(100 * fa, 100 * fb)
        row["past"] = (int((fa >= THRESHOLD).sum()), int((fb >= THRESHOLD).sum()))
        row["seen_before"] = set(seeds) <= set(adopted_seeds(results, row["a"])) & set(adopted_seeds(results, row["b"]))
        if (row["a"], row["b"]) in words:
            row["final_word"] = words[row["a"], row["b"]]
    return rows


def floor_text(rows: list[dict], alpha: float = 0.05) -> str | None:
    """What the family can decide about time with the seeds it has ("With 6 paired seeds ...");
    ``None`` before any comparison has run."""
    if not rows:
        return None
    seeds, m = min(r["seeds"] for r in rows), len(PAIRS)
    floor = holm_floor(seeds, m)
    if floor < alpha:
        return None
    return (
        f"With {seeds} paired seeds an exact paired permutation test can go no lower than p = {2 / 2**seeds:.2g}, and "
        f"Holm's correction over the family's {m} comparisons lifts the smallest to {floor:.2g}, above {alpha:g}: "
        "whatever the runs had done, no comparison of time in this family could read sooner or later, only "
        f"inconclusive. The family was declared so before its runs, and is reported as declared; telling a "
        f"difference of time apart would take at least {pairs_for_floor(alpha, m)} paired seeds."
    )


def time_word(verdict: str) -> str:
    """A time verdict in words: *higher* is sooner, *lower* later."""
    return {"higher": "sooner", "lower": "later"}.get(verdict, verdict)


def median(survival) -> str:
    """A Kaplan-Meier median in words: "epoch 4,380", or "never"."""
    return "never" if math.isinf(survival.median) else f"epoch {survival.median:,.0f}"


def medians(row: dict) -> str:
    """ "median epoch 4,380 against 3,740" (or "... against never")."""
    text = f"median {median(row['a_survival'])} against {median(row['b_survival'])}"
    return text.replace("against epoch", "against")


def row_text(row: dict | None) -> str:
    """ "time to 90 % **sooner**, median epoch x against y over n paired seeds (p = .., Holm p = ..), with a
    against b seeds past 90 %. Its final accuracy: [**word**,] +d pp [lo, hi]", or "not yet run"."""
    if row is None:
        return "not yet run"
    word = time_word(row["verdict"])
    f = row["final"]
    seen = "; its runs were seen before the rule was declared" if row["seen_before"] else ""
    final_word = f"**{row['final_word']}**, " if row.get("final_word") else ""
    return (  # two sentences, at most two results each: time (with the seeds past 90 %), then final accuracy
        f"time to 90 % **{word}**, {medians(row)} over "
        f"{row['seeds']} paired seeds (p = {row['p']:.2g}, Holm p = {row['p_holm']:.2g}), with "
        f"{row['past'][0]} against {row['past'][1]} seeds past 90 %. Its final accuracy: {final_word}"
        f"{f.mean_difference:+.1f} pp, {interval(f.ci_low, f.ci_high)}{seen}"
    )


def short_text(row: dict | None) -> str:
    """A comparison in a few words: "time to 90 % inconclusive (median epoch 4,380 against 3,740),
    final accuracy equivalent (+0.1 pp)", or "not yet run"."""
    if row is None:
        return "not yet run"
    word = time_word(row["verdict"])
    final = f"final accuracy {row['final_word']}" if row.get("final_word") else "final accuracy"
    return f"time to 90 % {word} ({medians(row)}), {final} ({row['final'].mean_difference:+.1f} pp)"


def floor_note(rows: list[dict], alpha: float = 0.05) -> str:
    """ " (with 6 paired seeds and 7 comparisons no difference of time could be decided)" where
    :func:`floor_text` applies, else ""."""
    if not rows or holm_floor(min(r["seeds"] for r in rows), len(PAIRS)) < alpha:
        return ""
    seeds = min(r["seeds"] for r in rows)
    return f" (with {seeds} paired seeds and {len(PAIRS)} comparisons no difference of time could be decided)"


def _before_text(before: dict | None, gain: dict) -> str:
    """The same comparison at the task's rate (:func:`grokking.family_rows`, the family
    ``grokking_p97``) beside the tuned one: what it read then, and whether its gap in median time
    is still there."""
    if before is None:
        return ""
    e, t = before["endpoint"], before["time"]
    sa, sb = t["median"]
    ta, tb = gain["a_survival"].median, gain["b_survival"].median
    then = (
        f" With both at the task's rate it read: final accuracy {e['verdict']} ({e['mean_pp']:+.1f} pp), time to 90 % "
        f"{t['verdict']}, median epoch {sa:,.0f} against {sb:,.0f}"
    )
    if ta >= tb:
        return then + ". At its own rate AdamW gets there no later than the Stiefel rule: its lag is gone."
    return then + f". At tuned rates the Stiefel rule's lead in median time is {tb - ta:,.0f} epochs."


def takeaway(rows: list[dict], lrs: dict[str, float], before: dict | None = None) -> str:
    """The grokking chapter's sentence at p = 97: the Stiefel rule against AdamW at tuned rates
    (beside ``before``, the same comparison at the task's rate, when given), or "not yet run"."""
    gain = {(r["a"], r["b"]): r for r in rows}.get(("stiefel", "baseline"))
    if gain is None:
        return "At $p = 97$: not yet run."
    rates = ", ".join(f"{label(arm)} {lr_text(lr)}" for arm, lr in lrs.items())
    return (
        f"At $p = 97$ (rates {rates}; 20,000 epochs), the Stiefel rule against AdamW: {row_text(gain)}."
        + _before_text(before, gain)
    )


def scale_text(rows: list[dict]) -> str:
    """QK-norm against the Stiefel rule at p = 97, tuned rates: "At $p = 97$, QK-norm against the
    Stiefel rule: ..." ("not yet run" before its runs)."""
    row = {(r["a"], r["b"]): r for r in rows}.get(("qk_norm", "stiefel"))
    return f"At $p = 97$, {label('qk_norm')} against the Stiefel rule: {row_text(row)}."


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
