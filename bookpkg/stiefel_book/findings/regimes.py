"""Where the Stiefel rule wins and where it does not: paired gains over training time, censored
time to a threshold, the decay budget, the mechanism's controls and the readings they support
(the decay map's cells: :mod:`.decay_map`). Verdicts are the four words of :mod:`stiefel_book.stats`
under the families declared in ``book/protocol.yml``, whose rules the callers pass. Pure functions of results
dicts (``{"config": ..., "runs": {"<arm>/<seed>": {"history": [...], ...}}}``)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as scipy_stats

from ..families import judge
from ..results_reading import LAST, finished_starts, metric_at, paired, runs_of  # noqa: F401  (metric_at: chapters)
from ..stats import LogRank, PairedComparison, holm, permutation_logrank

__all__ = [
    "grokking_lr_factors",
    "decay_budget",
    "paired_seeds",
    "gain_over_time",
    "time_to_threshold",
    "Survival",
    "survival",
    "logrank",
    "time_test",
    "CONTROL_PAIRS",
    "endpoint_comparison",
    "control_rows",
    "readings_at_tuned_rates",
    "tuned_control_rows",
    "time_rows",
    "READINGS",
    "NEEDS",
    "STATUS",
    "supported_readings",
    "trust_rows",
    "never_binds",
]


def grokking_lr_factors(warmup_epochs: int, epochs: int) -> np.ndarray:
    """The grokking schedule's lr factor at each epoch: linear warm-up, then constant. Chapter: regimes."""
    e = np.arange(epochs)
    return np.minimum(1.0, (e + 1) / warmup_epochs)


def decay_budget(lr: float, weight_decay: float, factors) -> float:
    """``Σ_t lr_t · λ``: how far decoupled decay can shrink a weight, ``exp(-budget)``. Chapter: regimes."""
    return float(lr * weight_decay * np.sum(factors))


def paired_seeds(results: dict | None, *arms: str) -> list[int]:
    """The seeds that every one of ``arms`` finished (:func:`runs.finished_starts`). Chapter: regimes."""
    return finished_starts(results, arms) if arms else []


def gain_over_time(results: dict, a: str, b: str, metric: str = "val_acc", scale: float = 100.0) -> list[dict]:
    """At every logged epoch that both arms' paired seeds share: the paired comparison of
    ``scale · (a − b)`` (percentage points by default), ``{"epoch", "comparison"}``.
    Chapter: regimes."""
    seeds = paired_seeds(results, a, b)
    if len(seeds) < 2:
        return []
    ra, rb = runs_of(results, a), runs_of(results, b)
    runs = [*(ra[s] for s in seeds), *(rb[s] for s in seeds)]
    epochs = sorted(set.intersection(*({r["epoch"] for r in run["history"]} for run in runs)))
    return [{"epoch": epoch, "comparison": paired(results, a, b, metric, epoch, scale).comparison} for epoch in epochs]


def time_to_threshold(run: dict, threshold: float = 0.9, metric: str = "val_acc") -> tuple[int, bool]:
    """``(epoch, reached)``: the first logged epoch at which ``metric ≥ threshold``, or the last
    logged epoch with ``reached = False`` (right-censored: the run never got there).
    Chapter: regimes."""
    for record in run["history"]:
        if record[metric] >= threshold:
            return record["epoch"], True
    return run["history"][-1]["epoch"], False


@dataclass(frozen=True)
class Survival:
    """Kaplan-Meier estimate of ``P(not yet at the threshold after t epochs)`` for one arm. Chapter: regimes."""

    arm: str
    times: np.ndarray  # epochs at which the estimate steps
    probabilities: np.ndarray  # the survival function there
    reached: int  # runs that got to the threshold
    censored: int  # runs that never did
    median: float  # epochs at which half the runs have got there (inf if never)


def _censored(
    results: dict, arm: str, threshold: float, seeds=None
) -> tuple[scipy_stats.CensoredData, list[int], list[int]]:
    runs = runs_of(results, arm)
    seeds = sorted(runs) if seeds is None else seeds
    pairs = [time_to_threshold(runs[s], threshold) for s in seeds]
    done = [t for t, ok in pairs if ok]
    never = [t for t, ok in pairs if not ok]
    return scipy_stats.CensoredData(uncensored=done, right=never), done, never


def survival(results: dict, arm: str, threshold: float = 0.9, seeds=None) -> Survival:
    """Kaplan-Meier curve of time to ``threshold`` (``scipy.stats.ecdf`` on censored data). Chapter: regimes."""
    data, done, never = _censored(results, arm, threshold, seeds)
    reached, censored = len(done), len(never)
    if reached == 0:
        return Survival(arm, np.array([0.0, float(max(never, default=0))]), np.array([1.0, 1.0]), 0, censored, math.inf)
    sf = scipy_stats.ecdf(data).sf
    times, probs = np.asarray(sf.quantiles, dtype=float), np.asarray(sf.probabilities, dtype=float)
    below = np.nonzero(probs <= 0.5)[0]
    median = float(times[below[0]]) if len(below) else math.inf
    return Survival(arm, times, probs, reached, censored, median)


def logrank(results: dict, a: str, b: str, threshold: float = 0.9, seeds=None) -> tuple[float, float]:
    """``(statistic, two-sided p)`` of the asymptotic log-rank test that ``a`` and ``b`` reach the
    threshold at the same rate (``scipy.stats.logrank``). Kept for the grokking chapter until it
    moves to :func:`time_test`; with a few seeds a side its p is far too small.
    Chapters: grokking."""
    seeds = paired_seeds(results, a, b) if seeds is None else seeds
    x, _, _ = _censored(results, a, threshold, seeds)
    y, _, _ = _censored(results, b, threshold, seeds)
    test = scipy_stats.logrank(x, y)
    return float(test.statistic), float(test.pvalue)


def time_test(results: dict, a: str, b: str, threshold: float = 0.9, seeds=None) -> LogRank:
    """The paired permutation log-rank test of ``a`` against ``b`` on time to ``threshold``
    (:func:`stats.permutation_logrank`, labels swapped within seeds; exact up to 1e5
    arrangements), on the seeds both finished. Chapter: regimes."""
    seeds = paired_seeds(results, a, b) if seeds is None else seeds
    ra, rb = runs_of(results, a), runs_of(results, b)
    ta, ea = zip(*(time_to_threshold(ra[s], threshold) for s in seeds))
    tb, eb = zip(*(time_to_threshold(rb[s], threshold) for s in seeds))
    return permutation_logrank(ta, ea, tb, eb, paired=True)


# --- the mechanism's controls ---------------------------------------------------------------

CONTROL_PAIRS = (  # (a, b, what a − b measures)
    ("stiefel", "baseline", "the Stiefel rule against AdamW"),
    ("no_decay_qk", "baseline", "taking weight decay off AdamW's W_Q, W_K"),
    ("stiefel", "no_decay_qk", "the Stiefel rule against AdamW without decay on W_Q, W_K"),
    ("stiefel", "frozen", "training the frames at all (headroom)"),
    ("frozen", "baseline", "frozen orthonormal frames against AdamW"),
    ("stiefel", "fixed_step_matched", "the scale-free step against a fixed step of the same size"),
    ("stiefel", "fixed_step", "the scale-free step against the fixed step at the same lr"),
)


def endpoint_comparison(
    results: dict, a: str, b: str, epoch: int | None = None, metric: str = "val_acc"
) -> PairedComparison | None:
    """The paired comparison of ``100 · (a − b)`` at ``epoch`` (default: the last record). Chapter: regimes."""
    return paired(results, a, b, metric, LAST if epoch is None else epoch, scale=100.0).comparison


def _last(results: dict, arms, scale: float = 1.0) -> dict[str, dict[int, float]]:
    """``{arm: {seed: scale · last logged validation accuracy}}``."""
    return {arm: {s: scale * run["history"][-1]["val_acc"] for s, run in runs_of(results, arm).items()} for arm in arms}


def control_rows(results: dict, margin: float, alpha: float = 0.05, count_past: float | None = 0.9) -> list[dict]:
    """One row per pair of :data:`CONTROL_PAIRS` that the file holds, at the last record: the
    paired comparison (percentage points), and the verdict of the declared family read by
    :func:`families.judge` (Holm across the pairs the file holds, TOST within ``margin`` pp), with
    the seeds past ``count_past`` in each arm and their exact McNemar p.
    Chapter: regimes."""
    found = [(a, b, meaning, paired(results, a, b, "val_acc", LAST, scale=100.0)) for a, b, meaning in CONTROL_PAIRS]
    found = [f for f in found if f[3].comparison is not None]
    if not found:
        return []
    arms = {arm for a, b, *_ in found for arm in (a, b)}
    last = _last(results, arms)
    rows = judge(
        _last(results, arms, 100.0), [f[:2] for f in found], margin, alpha, count_past=count_past, counted=last
    )
    return [
        {
            "a": a,
            "b": b,
            "meaning": meaning,
            "comparison": p.comparison,
            "verdict": r.verdict,
            "p_holm": r.p_corrected,
            "tost_p_holm": r.p_equivalence,
            "past": r.past,
            "mcnemar_p": r.p_past,
        }
        for (a, b, meaning, p), r in zip(found, rows)
    ]


def tuned_control_rows(family_rows: list[dict]) -> list[dict]:
    """The pairs of :data:`CONTROL_PAIRS` that a family judged at tuned W_Q, W_K lrs holds
    (``family_rows``: each arm against a reference, as :func:`findings.tuned.fair_family` gives
    them), each oriented as the pair reads (:func:`findings.tuned.find`), with ``"a"``, ``"b"``
    and ``"meaning"`` added; its Holm p-values are the family's, declared before its runs. The
    fixed-step pairs are left out: at tuned lrs the two steps no longer share an lr (the
    ablation chapter reads them).
    Chapters: regimes, intro."""
    from .tuned import find

    pairs = [(a, b, meaning) for a, b, meaning in CONTROL_PAIRS if not b.startswith("fixed_step")]  # "at the same lr"
    found = ((a, b, meaning, find(family_rows, a, b)) for a, b, meaning in pairs)
    return [row | {"a": a, "b": b, "meaning": meaning} for a, b, meaning, row in found if row is not None]


def time_rows(
    results: dict, threshold: float = 0.9, alpha: float = 0.05, pairs=CONTROL_PAIRS, declared: int | None = None
) -> list[dict]:
    """:func:`control_rows` on the other axis: which arm of each pair reaches ``threshold``
    first, by the paired permutation log-rank test (:func:`time_test`), Holm across the pairs
    the file holds (the declared family ``controls_p97_time``), or across ``declared``
    comparisons where the family declares more than have run (the rest count with p = 1).
    Verdict ``higher`` when ``a`` gets there sooner (more runs reach it than expected under no
    difference, adjusted p < ``alpha``), ``lower`` when later, ``inconclusive`` otherwise
    (censored times have no equivalence test). Rows carry both arms' :class:`Survival`, the
    statistic, the raw and the adjusted p. Chapters: regimes, grokking."""
    found = []
    for a, b, meaning in pairs:
        seeds = paired_seeds(results, a, b)
        if len(seeds) < 2:
            continue
        sa, sb = survival(results, a, threshold, seeds), survival(results, b, threshold, seeds)
        test = time_test(results, a, b, threshold, seeds)
        found.append((a, b, meaning, seeds, sa, sb, test))
    unrun = max(0, (declared or len(found)) - len(found))
    adjusted = holm([t.p_value for *_, t in found] + [1.0] * unrun)[: len(found)] if found else []
    rows = []
    for (a, b, meaning, seeds, sa, sb, test), p_holm in zip(found, adjusted):
        if p_holm < alpha and test.observed_minus_expected != 0:
            verdict = "higher" if test.observed_minus_expected > 0 else "lower"
        else:
            verdict = "inconclusive"
        rows.append(
            {
                "a": a,
                "b": b,
                "meaning": meaning,
                "seeds": len(seeds),
                "a_survival": sa,
                "b_survival": sb,
                "statistic": test.statistic,
                "p": test.p_value,
                "p_holm": float(p_holm),
                "exact": test.exact,
                "verdict": verdict,
            }
        )
    return rows


READINGS = {  # each reading (labels.READINGS names it) and what it predicts of the controls
    "geometry": "the preprint's mechanism: training the frames beats freezing them, and the Stiefel rule beats AdamW "
    "without decay on W_Q, W_K",
    "decay_hurts": "AdamW without decay on W_Q, W_K is equivalent to the Stiefel rule, and beats AdamW with it",
    "fixed_scale": "frozen frames do as well as trained ones (equivalent, or better), frozen frames beat AdamW, and "
    "AdamW without decay on W_Q, W_K does no better than with it (equivalent, or worse)",
}
# What each reading needs of the control verdicts: (a, b) -> the words that fit it.
NEEDS = {
    "geometry": {("stiefel", "frozen"): ("higher",), ("stiefel", "no_decay_qk"): ("higher",)},
    "decay_hurts": {("stiefel", "no_decay_qk"): ("equivalent",), ("no_decay_qk", "baseline"): ("higher",)},
    "fixed_scale": {
        ("stiefel", "frozen"): ("equivalent", "lower"),
        ("frozen", "baseline"): ("higher",),
        ("no_decay_qk", "baseline"): ("equivalent", "lower"),
    },
}
STATUS = {True: "supported", False: "contradicted", None: "undecided"}


def readings_at_tuned_rates(fair_rows: list[dict] | None) -> dict | None:
    """The controls' readings at tuned rates (:func:`tuned_control_rows` of the fair fight's rows), or ``None``."""
    rows = tuned_control_rows(fair_rows or [])
    return supported_readings(rows) if rows else None


def supported_readings(rows: list[dict]) -> dict[str, bool | None]:
    """Which reading of :data:`READINGS` the control verdicts support, by the rules of
    :data:`NEEDS` (set after the runs: see book/protocol.yml, ``controls_p31``): ``True`` when
    every comparison it needs reads a word that fits it; ``False`` (contradicted) when one reads
    a decided word (higher, lower, equivalent) that does not; ``None`` (undecided) otherwise,
    when a comparison it needs is inconclusive or missing.
    Chapter: regimes."""
    v = {(r["a"], r["b"]): r["verdict"] for r in rows}
    out: dict[str, bool | None] = {}
    for name, needs in NEEDS.items():
        got = {pair: v.get(pair, "inconclusive") for pair in needs}
        if any(w != "inconclusive" and w not in needs[pair] for pair, w in got.items()):
            out[name] = False
        elif all(w in needs[pair] for pair, w in got.items()):
            out[name] = True
        else:
            out[name] = None
    return out


# --- the trust region -------------------------------------------------------------------------


def trust_rows(results: dict, margin: float, alpha: float = 0.05) -> list[dict]:
    """Per frame lr of ``grokking_trust_region``: the share of frame-steps the full rule's trust
    region capped (mean over seeds), and full − ``no_trust_region`` (percentage points). The
    frame lrs where the cap binds form the declared family (Holm, TOST within ``margin`` pp);
    where it never binds the comparison tests nothing, and the verdict is ``None``.
    Chapter: regimes."""
    found = []
    for lr in results["config"]["frame_lrs"]:
        full, free = f"stiefel@flr={lr:g}", f"no_trust_region@flr={lr:g}"
        capped = [run["final"].get("trust_capped") for run in runs_of(results, full).values()]
        capped = [c for c in capped if c is not None]
        share = float(np.mean(capped)) if capped else None
        found.append((lr, share, (full, free), paired(results, full, free, "val_acc", LAST, scale=100.0)))
    pairs = [pair for _, share, pair, p in found if share != 0 and p.comparison is not None]
    arms = {arm for pair in pairs for arm in pair}
    words = {(r.arm, r.reference): r.verdict for r in judge(_last(results, arms, 100.0), pairs, margin, alpha)}
    return [
        {"frame_lr": lr, "capped": share, "comparison": p.comparison, "verdict": words.get(pair)}
        for lr, share, pair, p in found
    ]


def never_binds(results: dict, arms: tuple[str, ...] = ("stiefel",)) -> bool | None:
    """Whether the trust region capped no frame-step in any run of ``arms`` that recorded it
    (``None`` when none recorded it).
    Chapter: regimes."""
    shares = [
        run["final"]["trust_capped"]
        for arm in arms
        for run in runs_of(results, arm).values()
        if "trust_capped" in run["final"]
    ]
    return None if not shares else max(shares) == 0
