"""Where the Stiefel rule wins and where it does not: paired gains over training time, censored
time to a threshold, the decay budget, and the decay map's cells. Pure functions of results
dicts (``{"config": ..., "runs": {"<arm>/<seed>": {"history": [...], ...}}}``)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as scipy_stats

from ..labels import label
from ..results_reading import LAST, finished_starts, metric_at, paired, runs_of  # noqa: F401  (metric_at: chapters)
from ..stats import PairedComparison, direction

__all__ = [
    "grokking_lr_factors",
    "decay_budget",
    "paired_seeds",
    "gain_over_time",
    "time_to_threshold",
    "Survival",
    "survival",
    "logrank",
    "MapCell",
    "map_cells",
    "cell_word",
    "CONTROL_PAIRS",
    "endpoint_comparison",
    "control_rows",
    "time_rows",
    "READINGS",
    "supported_readings",
    "trust_rows",
    "never_binds",
    "cells_by_verdict",
    "regime_line",
    "map_summary",
    "nearest_cell",
    "claim",
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
    """``(statistic, two-sided p)`` of the log-rank test that ``a`` and ``b`` reach the
    threshold at the same rate (``scipy.stats.logrank``; censored runs count until they stop).
    Chapter: regimes."""
    seeds = paired_seeds(results, a, b) if seeds is None else seeds
    x, _, _ = _censored(results, a, threshold, seeds)
    y, _, _ = _censored(results, b, threshold, seeds)
    test = scipy_stats.logrank(x, y)
    return float(test.statistic), float(test.pvalue)


@dataclass(frozen=True)
class MapCell:
    """One cell of a map: ``a − b`` at weight decay ``weight_decay`` after ``epoch`` epochs. Chapter: regimes."""

    weight_decay: float
    epoch: int
    budget: float  # Σ lr·λ up to ``epoch``
    comparison: PairedComparison | None
    verdict: str  # stats.direction: higher / lower / tie / untested
    a_mean: float  # mean metric of a and b there (percent)
    b_mean: float


def map_cells(
    results: dict,
    a: str,
    b: str,
    lengths: tuple[int, ...],
    *,
    lr: float | None = None,
    warmup_epochs: int | None = None,
    metric: str = "val_acc",
    budget_at=None,
) -> list[MapCell]:
    """The cells of a grid experiment whose arms are ``"<arm>@wd=<λ>"``: for every λ in the
    configuration and every training length, the paired comparison of ``a`` against ``b``.
    ``budget_at(λ, epoch)`` gives a cell's decay budget (default: the grokking schedule at
    ``lr`` with ``warmup_epochs``).
    Chapter: regimes."""
    if budget_at is None:

        def budget_at(wd, epoch):
            return decay_budget(lr, wd, grokking_lr_factors(warmup_epochs, epoch))

    cells = []
    for wd in results["config"]["weight_decays"]:
        name_a, name_b = f"{a}@wd={wd:g}", f"{b}@wd={wd:g}"
        for epoch in lengths:
            _, x, y, c = paired(results, name_a, name_b, metric, epoch, scale=100.0)
            cells.append(
                MapCell(
                    wd,
                    epoch,
                    budget_at(wd, epoch),
                    c,
                    direction(c),
                    float(np.mean(x)) if len(x) else math.nan,
                    float(np.mean(y)) if len(y) else math.nan,
                )
            )
    return cells


def cell_word(verdict: str, a: str = "Stiefel") -> str:
    """A map cell's verdict in words. Chapter: regimes."""
    return {
        "higher": f"{a} wins",
        "lower": f"{a} loses",
        "tie": "no significant difference",
        "untested": "too few seeds",
    }[verdict]


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


def control_rows(results: dict, epoch: int | None = None) -> list[dict]:
    """One row per pair of :data:`CONTROL_PAIRS` that the file holds: the comparison and its
    verdict (``stats.direction``).
    Chapter: regimes."""
    rows = []
    for a, b, meaning in CONTROL_PAIRS:
        c = endpoint_comparison(results, a, b, epoch)
        if c is not None:
            rows.append({"a": a, "b": b, "meaning": meaning, "comparison": c, "verdict": direction(c)})
    return rows


def time_rows(results: dict, threshold: float = 0.9, alpha: float = 0.05, min_seeds: int = 3) -> list[dict]:
    """:func:`control_rows` on the other axis: which arm of each pair reaches ``threshold``
    first. Verdict ``higher`` when ``a`` gets there sooner (log-rank p < ``alpha``, earlier
    median), ``lower`` when later, ``tie`` otherwise, ``untested`` under ``min_seeds`` paired
    seeds. Rows carry both arms' :class:`Survival`, the log-rank statistic and p.
    Chapter: regimes."""
    rows = []
    for a, b, meaning in CONTROL_PAIRS:
        seeds = paired_seeds(results, a, b)
        if len(seeds) < 2:
            continue
        sa, sb = survival(results, a, threshold, seeds), survival(results, b, threshold, seeds)
        # Neither arm ever got there: the same (censored) times, nothing for a log-rank test to weigh.
        statistic, p = logrank(results, a, b, threshold, seeds) if sa.reached + sb.reached else (0.0, 1.0)
        if len(seeds) < min_seeds:
            verdict = "untested"
        elif p < alpha and sa.median != sb.median:
            verdict = "higher" if sa.median < sb.median else "lower"
        else:
            verdict = "tie"
        rows.append(
            {
                "a": a,
                "b": b,
                "meaning": meaning,
                "seeds": len(seeds),
                "a_survival": sa,
                "b_survival": sb,
                "statistic": statistic,
                "p": p,
                "verdict": verdict,
            }
        )
    return rows


READINGS = {
    "geometry": "the learned geometry survives weight decay (the preprint's mechanism): training the frames beats "
    "freezing them, and the Stiefel rule beats AdamW without decay on W_Q, W_K",
    "decay_hurts": "AdamW's weight decay on W_Q, W_K is what hurts: AdamW without it matches the Stiefel rule",
    "fixed_scale": "what helps is W_Q, W_K held at a fixed, orthonormal scale: "
    "frozen frames do as well as trained ones, and AdamW without decay on W_Q, W_K does no better than with it",
}


def supported_readings(rows: list[dict]) -> dict[str, bool | None]:
    """Which reading of :data:`READINGS` the control verdicts support, by fixed rules (``None``
    when a comparison it needs is missing or untested).
    Chapter: regimes."""
    v = {(r["a"], r["b"]): r["verdict"] for r in rows}

    def need(*pairs):
        got = [v.get(p, "untested") for p in pairs]
        return None if "untested" in got else got

    geometry = need(("stiefel", "frozen"), ("stiefel", "no_decay_qk"))
    decay = need(("stiefel", "no_decay_qk"), ("no_decay_qk", "baseline"))
    scale = need(("stiefel", "frozen"), ("frozen", "baseline"), ("no_decay_qk", "baseline"))
    return {
        "geometry": None if geometry is None else geometry == ["higher", "higher"],
        "decay_hurts": None if decay is None else decay[0] == "tie" and decay[1] == "higher",
        "fixed_scale": None
        if scale is None
        else scale[0] in ("tie", "lower") and scale[1] == "higher" and scale[2] in ("tie", "lower"),
    }


# --- the trust region -------------------------------------------------------------------------


def trust_rows(results: dict) -> list[dict]:
    """Per frame lr of ``grokking_trust_region``: the share of frame-steps the full rule's trust
    region capped (mean over seeds), and full − ``no_trust_region``. Where the cap never bound
    the comparison tests nothing, and the verdict says ``untested``.
    Chapter: regimes."""
    rows = []
    for lr in results["config"]["frame_lrs"]:
        full, free = f"stiefel@flr={lr:g}", f"no_trust_region@flr={lr:g}"
        capped = [run["final"].get("trust_capped") for run in runs_of(results, full).values()]
        capped = [c for c in capped if c is not None]
        c = endpoint_comparison(results, full, free)
        share = float(np.mean(capped)) if capped else None
        verdict = "untested: the cap never binds" if share == 0 else direction(c) if c is not None else "untested"
        rows.append({"frame_lr": lr, "capped": share, "comparison": c, "verdict": verdict})
    return rows


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


def cells_by_verdict(cells: list[MapCell]) -> dict[str, list[str]]:
    """The map's cells grouped by verdict, each named ``"λ = 0.3, 1,500 epochs"``. Chapter: regimes."""
    out: dict[str, list[str]] = {"higher": [], "tie": [], "lower": [], "untested": []}
    for c in cells:
        out[c.verdict].append(f"λ = {c.weight_decay:g}, {c.epoch:,} epochs")
    return out


def regime_line(lr: float, weight_decay: float, factors, epochs: int, reached: dict[str, float]) -> str:
    """A verdict's regime in words: the decay budget, the training length and the accuracy
    each arm reached (``reached``: arm -> mean accuracy in percent).
    Chapter: regimes."""
    budget = decay_budget(lr, weight_decay, factors)
    accuracy = ", ".join(f"{arm} {value:.1f}%" for arm, value in reached.items())
    return (
        f"Σ lr·λ = {budget:.3g} (weights shrink by up to e^-{budget:.2g}), {epochs:,} epochs, "
        f"accuracy reached: {accuracy}"
    )


def _verdict_counts(cells: list[MapCell], a: str, b: str) -> str:
    groups = cells_by_verdict(cells)
    tested = len(cells) - len(groups["untested"])
    return (
        f"{a} − {b}: higher in {len(groups['higher'])}, tied in {len(groups['tie'])}, lower in {len(groups['lower'])} "
        f"of {tested} tested cells" + (f" ({len(groups['untested'])} with too few seeds)" if groups["untested"] else "")
    )


def map_summary(
    cells: list[MapCell], headroom: list[MapCell], escape: list[MapCell], readings: dict[str, bool | None]
) -> str:
    """The map and the controls in words: verdict counts of each comparison, the cells where the
    Stiefel rule wins and loses, and the readings the controls support.
    Chapter: regimes."""
    groups = cells_by_verdict(cells)
    lines = [
        _verdict_counts(cells, "Stiefel", "AdamW"),
        "  Stiefel wins at: " + ("; ".join(groups["higher"]) or "no cell"),
        "  Stiefel loses at: " + ("; ".join(groups["lower"]) or "no cell"),
        _verdict_counts(headroom, "Stiefel", "frozen frames"),
        _verdict_counts(escape, "Stiefel", "AdamW without decay on W_Q, W_K"),
        "readings the controls support: "
        + (", ".join(k for k, v in readings.items() if v) or "none")
        + "; not supported: "
        + (", ".join(k for k, v in readings.items() if v is False) or "none")
        + "; untested: "
        + (", ".join(k for k, v in readings.items() if v is None) or "none"),
    ]
    return "\n".join(lines)


def nearest_cell(cells: list[MapCell], weight_decay: float, budget: float) -> MapCell | None:
    """The map's cell at ``weight_decay`` whose decay budget is closest to ``budget`` on a log
    scale (``None`` when the map has no such decay, or the budget is 0).
    Chapter: regimes."""
    row = [c for c in cells if c.weight_decay == weight_decay and c.budget > 0]
    if not row or budget <= 0:
        return None
    return min(row, key=lambda c: abs(math.log(c.budget / budget)))


def grid_rows(results: dict, arms: tuple[str, ...], metrics: tuple[str, ...] = ("train_acc", "test_acc")) -> list[dict]:
    """Per λ of a ``"<arm>@wd=<λ>"`` grid: every arm's finished starts and the mean (percent) of
    each of ``metrics`` at the end of training.
    Chapter: regimes."""
    rows = []
    for wd in results["config"]["weight_decays"]:
        for arm in arms:
            runs = runs_of(results, f"{arm}@wd={wd:g}")
            if runs:
                means = {m: 100 * float(np.mean([r["final"][m] for r in runs.values()])) for m in metrics}
                rows.append({"weight_decay": wd, "arm": arm, "starts": len(runs), **means})
    return rows


def claim(controls: dict | None, decay_map: dict | None, task, full_task: dict | None = None) -> str:
    """One line for the book's claims table from ``grokking_ablation-full`` (the controls),
    ``grokking_decay_map-full`` and the map's task: how many cells the Stiefel rule leads, ties
    and trails, and which reading the controls support; with ``full_task`` (``grokking-full``,
    p = 97), the reading its controls support on time to 90 %. Chapter: regimes."""
    if not controls or not decay_map:
        return "not yet measured (no finished full run)"
    readings = supported_readings(control_rows(controls))
    cells = map_cells(decay_map, "stiefel", "baseline", (500, 1500), lr=task.lr, warmup_epochs=task.warmup_epochs)
    groups = cells_by_verdict(cells)
    budgets = sorted({c.budget for c in cells})
    supported = "; ".join(label(k) for k, v in readings.items() if v) or "none of the three readings"
    return (
        f"grokking p = {task.p}, λ 0-3 x 500/1,500 epochs (Σ lr·λ {budgets[0]:.3g}-{budgets[-1]:.3g}), 10 seeds a "
        "cell: "
        f"Stiefel ahead of AdamW in {len(groups['higher'])}, tied in {len(groups['tie'])}, behind in "
        f"{len(groups['lower'])} cells; "
        f"the controls (20 seeds, λ = 1) support: {supported}" + _full_task_reading(full_task)
    )


def _full_task_reading(full_task: dict | None) -> str:
    rows = time_rows(full_task) if full_task else []
    readings = supported_readings(rows)
    if all(v is None for v in readings.values()):
        return ""  # the full task's controls have too few seeds for any reading
    supported = "; ".join(label(k) for k, v in readings.items() if v) or "none of the three readings"
    seeds = min(r["seeds"] for r in rows if r["verdict"] != "untested")
    config = full_task["config"]
    return (
        f"; at p = {config['p']} ({config['epochs']:,} epochs, ≥ {seeds} paired seeds), "
        f"time to 90 % supports: {supported}"
    )
