"""Grokking at p = 97 at tuned W_Q, W_K learning rates (issue 28): the sweep that chooses each
arm's rate by how fast it groks (``grokking_p97_qk_lr``) and the judged runs at those rates
(``grokking_p97_fair``), read under the family ``grokking_p97_fair`` that ``book/protocol.yml``
declared before their runs. Pure functions of the results dicts; no experiment is imported.

The endpoint is time to 90 % validation accuracy (the paired permutation log-rank test, runs that
never get there censored at the last epoch), Holm across every comparison the family declares
(one not yet run counts with p = 1). Beside it: the seeds that get there, and the final validation
accuracy's mean paired difference. A judged run adopted from the grokking chapter's long runs was
seen before the family was declared; a comparison resting on one says so."""

from __future__ import annotations

import math

import numpy as np

from ..choices import epochs_to, sweep_row, time_scores
from ..labels import label
from ..results_reading import parse_grid_arm, runs_of, split_key
from ..stats import paired_comparison
from .fair_fight import lr_text, picks_text
from .regimes import time_rows

__all__ = [
    "rates_text",
    "SWEPT",
    "PAIRS",
    "THRESHOLD",
    "sweep_rows",
    "sweep_text",
    "runs_so_far_text",
    "fair_rows",
    "adopted_seeds",
    "row_text",
    "takeaway",
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
THRESHOLD = 0.9


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


def sweep_text(rows: list[dict]) -> str:
    """Where the sweep of :func:`sweep_rows` stands: each arm's chosen rate, or the rate that leads
    while its grid still grows, and the arms with no complete rung yet."""
    done = all(r["interior"] for r in rows) and len(rows) == len(SWEPT)
    missing = [label(arm) for arm in SWEPT if arm not in {r["arm"] for r in rows}]
    head = "The rates chosen" if done else "The sweep is still running; the rates that lead so far"
    tail = f"; not yet run: {', '.join(missing)}" if missing else ""
    if not rows:
        return "The sweep is still running: no rate has run on every selection seed yet."
    picks = picks_text(rows, lambda row: "at its grid's edge: still growing")
    return f"{head}: {picks}{tail}."


def _share(lr: float, task_lr: float) -> str:
    if lr == 0:
        return "W_Q, W_K never move"
    if lr == task_lr:
        return "the task's rate"
    return f"1/{task_lr / lr:.0f} of it" if lr < task_lr else f"{lr / task_lr:.0f} times it"


def rates_text(rows: list[dict], task_lr: float) -> str | None:
    """Each settled choice of :func:`sweep_rows` against the task's lr ("AdamW 3e-6, 1/333 of it"),
    the slowest first; ``None`` before any choice is settled."""
    settled = sorted((r for r in rows if r["interior"]), key=lambda r: r["chosen"])
    if not settled:
        return None
    parts = (f"{label(r['arm'])} {lr_text(r['chosen'])}, {_share(r['chosen'], task_lr)}" for r in settled)
    return f"Against the task's rate of {lr_text(task_lr)} for the rest of the model: " + "; ".join(parts) + "."


def runs_so_far_text(sweep: dict | None) -> str | None:
    """Each finished sweep run by arm and seed, rate by rate, for while a rung still lacks a
    selection seed (no choice is read before every seed has run): "AdamW, seed 100: 1e-4 at
    epoch 7,240, 3e-4 not within 10,000 epochs (16 % at the end)". ``None`` without runs."""
    if not sweep or not sweep["runs"]:
        return None
    config = sweep["config"]
    horizon, threshold = config["task"]["epochs"], config["threshold"]
    found: dict[tuple[str, int], list[tuple[float, str]]] = {}
    for key, run in sweep["runs"].items():
        grid_arm, seed = split_key(key)
        if "@qklr=" not in grid_arm:
            continue  # frozen frames (lr 0) join a grid only at the ladder's bottom
        arm, lr = parse_grid_arm(grid_arm, "qklr", SWEPT)
        history = run["history"]
        epoch = epochs_to(history, threshold, horizon)
        if epoch < horizon or history[-1]["val_acc"] >= threshold:
            what = f"at epoch {epoch:,}"
        else:
            what = f"not within {horizon:,} epochs ({100 * history[-1]['val_acc']:.0f} % at the end)"
        found.setdefault((arm, seed), []).append((lr, what))
    order = sorted(found, key=lambda k: (SWEPT.index(k[0]), k[1]))
    lines = (
        f"{label(arm, capital=True)}, seed {seed}: "
        + ", ".join(f"{lr_text(lr)} {what}" for lr, what in sorted(found[arm, seed]))
        for arm, seed in order
    )
    return ". ".join(lines) + "."


def adopted_seeds(results: dict | None, arm: str) -> list[int]:
    """The seeds of ``arm`` whose judged run was adopted from an earlier results file."""
    return sorted(s for s, run in runs_of(results, arm).items() if (run.get("provenance") or {}).get("adopted_from"))


def fair_rows(results: dict | None, alpha: float = 0.05) -> list[dict]:
    """Every comparison of the family with two or more paired seeds: the time rows of
    :func:`regimes.time_rows` (Holm over all the family's declared comparisons), each with
    ``final`` (the final validation accuracy's paired comparison, in pp), ``past``
    (seeds past 90 % in each arm) and ``seen_before`` (whether both arms' runs were all adopted,
    so the comparison's outcome was known before the family was declared)."""
    if not results:
        return []
    rows = time_rows(results, THRESHOLD, alpha, pairs=PAIRS, declared=len(PAIRS))
    for row in rows:
        a, b = runs_of(results, row["a"]), runs_of(results, row["b"])
        seeds = sorted(set(a) & set(b))
        fa = np.array([a[s]["final"]["val_acc"] for s in seeds])
        fb = np.array([b[s]["final"]["val_acc"] for s in seeds])
        row["final"] = paired_comparison(100 * fa, 100 * fb)
        row["past"] = (int((fa >= THRESHOLD).sum()), int((fb >= THRESHOLD).sum()))
        row["seen_before"] = set(seeds) <= set(adopted_seeds(results, row["a"])) & set(adopted_seeds(results, row["b"]))
    return rows


def _median(survival) -> str:
    return "never" if math.isinf(survival.median) else f"epoch {survival.median:,.0f}"


def row_text(row: dict | None) -> str:
    """ "time to 90 % **sooner**, median epoch x against y (p = ..; Holm p = ..), seeds past 90 %: a against b;
    final accuracy +d pp [lo, hi]", or "not yet run"."""
    if row is None:
        return "not yet run"
    word = {"higher": "sooner", "lower": "later"}.get(row["verdict"], row["verdict"])
    f = row["final"]
    seen = "; its runs were seen before the rule was declared" if row["seen_before"] else ""
    return (
        f"time to 90 % **{word}**, median {_median(row['a_survival'])} against {_median(row['b_survival'])} over "
        f"{row['seeds']} paired seeds (p = {row['p']:.2g}; Holm p = {row['p_holm']:.2g}); seeds past 90 %: "
        f"{row['past'][0]} against {row['past'][1]}; final accuracy {f.mean_difference:+.1f} pp "
        f"[{f.ci_low:+.1f}, {f.ci_high:+.1f}]{seen}"
    )


def takeaway(rows: list[dict], lrs: dict[str, float]) -> str:
    """The grokking chapter's sentence at p = 97: the Stiefel rule against AdamW at tuned rates,
    and QK-norm against the Stiefel rule, or "not yet run"."""
    find = {(r["a"], r["b"]): r for r in rows}
    gain = find.get(("stiefel", "baseline"))
    if gain is None:
        return "At $p = 97$: not yet run."
    rates = ", ".join(f"{label(arm)} {lr_text(lr)}" for arm, lr in lrs.items())
    qk_norm = row_text(find.get(("qk_norm", "stiefel")))
    return (
        f"At $p = 97$ (rates {rates}; 20,000 epochs), the Stiefel rule against AdamW: {row_text(gain)}. "
        f"QK-norm against the Stiefel rule: {qk_norm}."
    )
