"""The 2x2 of update direction and constraint (families ``routing_2x2`` and ``charlm_2x2``,
``book/protocol.yml``): per task, the constraint effect, the direction effect and their
interaction, each a contrast of the four arms' endpoints on the same seed, tested as a paired
contrast (a two-sided one-sample t test of the per-seed values), Holm over the family's contrasts
(six on MQAR and induction, three on the character model), read in one of the four words within
each task's declared margin.

The family reader (:mod:`stiefel_book.families`) pairs one arm with one reference; a contrast of
contrasts is read here, by the same tests (:mod:`stiefel_book.stats`). Each task's endpoint
(metric, scale, unit, direction) and margin come from its declared family (``routing_mqar``,
``routing_induction``, ``charlm_long``). Pure: results dicts in, rows out."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import protocol
from ..results_reading import split_key, value_at
from ..stats import holm, paired_comparison, paired_t_p, tost, verdict

__all__ = [
    "FAMILY", "FAMILIES", "FILES", "ARMS_2X2", "CONTRASTS", "TASKS", "Contrast", "contrast_values", "missing", "read"
]

FAMILY = "routing_2x2"
# Each contrast's weights on the arms' endpoints (per seed). Arms: AdamW (baseline), Muon (muon),
# the Stiefel rule (stiefel), manifold Muon (manifold_muon).
CONTRASTS = {
    "constraint": {"stiefel": 0.5, "baseline": -0.5, "manifold_muon": 0.5, "muon": -0.5},
    "direction": {"muon": 0.5, "baseline": -0.5, "manifold_muon": 0.5, "stiefel": -0.5},
    "interaction": {"manifold_muon": 1.0, "muon": -1.0, "stiefel": -1.0, "baseline": 1.0},
}
# The four arms, {Adam, Muon} x {free, frames}: experiments.routing_judged's, kept here so that this reader loads
# no torch (tests/test_layers.py ties the two)
ARMS_2X2 = ("baseline", "muon", "stiefel", "manifold_muon")
# family -> {task: the family declaring the task's endpoint and margin}
FAMILIES = {
    "routing_2x2": {"mqar": "routing_mqar", "induction": "routing_induction"},
    "charlm_2x2": {"charlm": "charlm_long"},  # the character model at 4,500 steps, a family of its own
}
TASKS = FAMILIES[FAMILY]
# family -> {task: the results file that holds its judged runs}
FILES = {
    "routing_2x2": {"mqar": "mqar_2x2", "induction": "induction_2x2"},
    "charlm_2x2": {"charlm": "charlm_long"},  # charlm_long's file: its other arms' runs too
}


@dataclass(frozen=True)
class Contrast:
    """One contrast of one task, in the endpoint's ``unit`` (positive: the metric higher)."""

    task: str
    contrast: str
    n: int  # seeds with every arm of the contrast
    estimate: float  # mean of the per-seed contrast (NaN with no seed)
    interval: tuple[float, float]  # its (1 − α) t interval, unadjusted (NaN with fewer than 2 seeds)
    p_raw: float  # two-sided one-sample t p (NaN untested)
    p_corrected: float  # Holm over the family (1 untested)
    p_equivalence: float  # TOST within ± the task's margin, Holm over the family (1 untested)
    verdict: str  # higher, lower, equivalent or inconclusive
    unit: str
    margin: float
    higher_is_better: bool


def contrast_values(
    results: dict | None, weights: dict[str, float], metric: str, scale: float = 1.0, seeds=None
) -> np.ndarray:
    """The per-seed values of the contrast ``weights`` (arm -> weight) of ``metric`` (final record,
    times ``scale``), over the seeds every weighted arm finished (of ``seeds``, where given), in seed order."""
    by_seed: dict[int, dict[str, float]] = {}
    for key, run in ((results or {}).get("runs") or {}).items():
        arm, seed = split_key(key)
        if arm in weights and (seeds is None or seed in seeds):
            by_seed.setdefault(seed, {})[arm] = scale * float(value_at(run, metric))
    complete = sorted(s for s, arms in by_seed.items() if set(weights) <= set(arms))
    return np.array([sum(w * by_seed[s][a] for a, w in weights.items()) for s in complete], dtype=np.float64)


def missing(results: dict[str, dict | None], family: str = FAMILY, path=None) -> dict[str, dict[str, list[int]]]:
    """The judged runs ``family`` still lacks: ``{task: {arm: [seed, ...]}}``, only the tasks and
    arms with a seed missing (empty once every arm of every task has every judged seed). Runs of
    other arms or seeds in the same file (the character model's holds both) do not count."""
    tasks = _tasks(results, family)
    seeds = protocol.family(family, path).judged_seeds
    out = {}
    for task in tasks:
        have: dict[str, set[int]] = {}
        for key in ((results[task] or {}).get("runs") or {}):
            arm, seed = split_key(key)
            have.setdefault(arm, set()).add(seed)
        lacking = {arm: [s for s in seeds if s not in have.get(arm, set())] for arm in ARMS_2X2}
        lacking = {arm: s for arm, s in lacking.items() if s}
        if lacking:
            out[task] = lacking
    return out


def _tasks(results: dict, family: str) -> dict[str, str]:
    if family not in FAMILIES:
        raise ValueError(f"unknown 2x2 family {family!r}: choose one of {sorted(FAMILIES)}")
    tasks = FAMILIES[family]
    absent = set(tasks) - set(results)
    if absent:
        raise ValueError(f"{family} reads {sorted(tasks)}; results lacks {sorted(absent)} (None: no runs yet)")
    return tasks


def read(
    results: dict[str, dict | None], alpha: float | None = None, path=None, family: str = FAMILY
) -> list[Contrast]:
    """``family``'s rows (task by task, contrast by contrast) from ``results`` (task -> its 2x2
    results dict, ``None`` before its runs): a contrast with fewer than three seeds keeps its
    place with p = 1 and reads inconclusive, so the family keeps its declared size. Only the
    family's judged seeds count (the character model's results file holds other arms' runs too)."""
    tasks = _tasks(results, family)
    declared = protocol.family(family, path)
    alpha = declared.alpha if alpha is None else alpha
    cells = []
    for task, declaring in tasks.items():
        f = protocol.family(declaring, path)
        m = f.measure
        for name, weights in CONTRASTS.items():
            values = contrast_values(results[task], weights, m.metric, m.scale, seeds=declared.judged_seeds)
            cells.append((task, name, m, f.margin, values))
    tested = [len(v) >= 3 for *_, v in cells]
    p = np.array([paired_t_p(v) if t else math.nan for (*_, v), t in zip(cells, tested, strict=True)])
    tost_p = np.array([tost(c[4], c[3], alpha).p_value if t else math.nan for c, t in zip(cells, tested, strict=True)])
    p_adj, tost_adj = holm(p, nan="one"), holm(tost_p, nan="one")
    rows = []
    for i, (task, name, m, margin, v) in enumerate(cells):
        c = paired_comparison(v, np.zeros_like(v), 1 - alpha) if len(v) >= 2 else None
        interval = (c.ci_low, c.ci_high) if c else (math.nan, math.nan)
        word = verdict(v, margin, alpha, p_value=p_adj[i], tost_p_value=tost_adj[i]) if tested[i] else "inconclusive"
        estimate = float(v.mean()) if len(v) else math.nan
        rows.append(Contrast(task, name, len(v), estimate, interval, float(p[i]), float(p_adj[i]), float(tost_adj[i]),
                             word, m.unit, margin, m.higher_is_better))
    return rows
