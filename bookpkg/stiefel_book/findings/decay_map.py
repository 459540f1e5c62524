"""The decay map read once per set of runs: at each weight decay, the paired comparison of two
arms at the runs' final epoch, judged under the family that ``book/protocol.yml`` declares
(Holm across the family's cells, the paired TOST for equivalence). The epochs before the last
are drawn as curves (:func:`curves`), not tested. :func:`count` is the one count of the map that
every page quotes (in words: :func:`stiefel_book.wording.regimes.count_text`). Pure functions of
results dicts whose arms are ``"<arm>@wd=<λ>"``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..families import judge
from ..results_reading import LAST, paired
from ..stats import VERDICTS, PairedComparison
from .regimes import decay_budget, gain_over_time, grokking_lr_factors

__all__ = [
    "FAMILIES",
    "rules",
    "MapCell",
    "final_cells",
    "count",
    "curves",
    "tuned_cells",
    "regimes_cells",
]


# The declared families (book/protocol.yml) whose verdicts the regimes chapter states.
FAMILIES = (
    "decay_map",
    "decay_map_controls",
    "decay_map_tuned",
    "decay_map_tuned_controls",
    "decay_map_per_decay",
    "controls_p31",
    "controls_p97_time",
    "trust_region",
)


def rules(protocol, names: tuple[str, ...] = FAMILIES) -> dict:
    """``{name: protocol.Family}`` of a loaded ``protocol.Protocol``: a family's rule is its ``margin``
    (in the comparisons' units; None: no equivalence test), ``alpha`` and ``count_past`` (the threshold
    whose count of seeds past it is shown beside the mean). Chapters: regimes, intro."""
    return {name: protocol.families[name] for name in names}


@dataclass(frozen=True)
class MapCell:
    """One cell of the map: ``a − b`` (percentage points) at ``weight_decay``, read at the runs'
    final ``epoch``. Chapters: regimes, intro."""

    a: str
    b: str
    weight_decay: float
    epoch: int
    budget: float  # Σ lr·λ over the run
    comparison: PairedComparison | None  # the mean, its 95 % interval, the wins
    verdict: str  # one of stats.VERDICTS, Holm-corrected across the family
    p_holm: float  # the two-sided paired p, Holm-adjusted across the family
    tost_p_holm: float  # the TOST p, likewise
    a_mean: float  # each arm's mean there (percent)
    b_mean: float
    past: tuple[int, int] | None  # seeds past the rule's threshold in a and in b
    mcnemar_p: float | None  # exact McNemar p of those counts


def final_cells(
    results: dict,
    pairs: tuple[tuple[str, str], ...],
    rule,
    *,
    lr: float | None = None,
    warmup_epochs: int | None = None,
    metric: str = "val_acc",
    budget_at=None,
) -> list[MapCell]:
    """One cell per pair ``(a, b)`` and weight decay of the configuration, ``a − b`` at the last
    logged epoch of the paired seeds, in percentage points for an accuracy (else the metric's own
    unit); the verdicts of all the cells
    together are one family (Holm, :func:`families.judge`; ``rule``: its ``protocol.Family``, margin in pp).
    ``budget_at(λ, epoch)`` gives a cell's decay budget (default: the grokking schedule at ``lr``
    with ``warmup_epochs``). Chapters: regimes, intro."""
    if rule.margin is None:
        raise ValueError("the map's family needs an equivalence margin (margin_pp in book/protocol.yml)")
    if budget_at is None and (lr is None or warmup_epochs is None):
        raise ValueError("final_cells needs lr and warmup_epochs (the grokking schedule), or budget_at(λ, epoch)")
    budget = budget_at or (lambda wd, epoch: decay_budget(lr, wd, grokking_lr_factors(warmup_epochs, epoch)))
    read, values = [], {}
    for a, b in pairs:
        for wd in results["config"]["weight_decays"]:
            name_a, name_b = f"{a}@wd={wd:g}", f"{b}@wd={wd:g}"
            p = paired(results, name_a, name_b, metric, LAST)
            runs = results["runs"]
            epoch = runs[f"{name_a}/{p.starts[0]}"]["history"][-1]["epoch"] if p.starts else 0
            read.append((a, b, wd, epoch, p))
            values.setdefault(name_a, {}).update(zip(p.starts, p.a))
            values.setdefault(name_b, {}).update(zip(p.starts, p.b))
    past = None if rule.count_past is None else 100 * rule.count_past  # the values are in pp
    judged = [(f"{a}@wd={wd:g}", f"{b}@wd={wd:g}") for a, b, wd, _, _ in read]
    rows = judge(values, judged, rule.margin, rule.alpha, count_past=past)
    cells = []
    for (a, b, wd, epoch, p), v in zip(read, rows):
        counted = p.starts and rule.count_past is not None
        cells.append(
            MapCell(
                a,
                b,
                wd,
                epoch,
                budget(wd, epoch) if epoch else math.nan,
                p.comparison,
                v.verdict,
                v.p_corrected,
                v.p_equivalence,
                float(np.mean(p.a)) if len(p.a) else math.nan,
                float(np.mean(p.b)) if len(p.b) else math.nan,
                v.past if counted else None,
                v.p_past if counted else None,
            )
        )
    return cells


def count(cells: list[MapCell], a: str = "stiefel", b: str = "baseline") -> dict[str, list[MapCell]]:
    """The map's count: the cells of ``a − b`` under each of the four verdict words (in
    :data:`stats.VERDICTS` order). The one count the intro, the regimes chapter, the README and
    the claims quote. Chapters: regimes, intro."""
    out: dict[str, list[MapCell]] = {w: [] for w in VERDICTS}
    for c in cells:
        if (c.a, c.b) == (a, b):
            out[c.verdict].append(c)
    return out


def curves(results: dict, a: str, b: str, metric: str = "val_acc") -> dict[float, list[dict]]:
    """Per weight decay, the paired difference ``a − b`` at every logged epoch
    (:func:`regimes.gain_over_time`; percentage points for an accuracy, else the metric's unit):
    the map's intermediate epochs, drawn, not tested. Chapters: regimes, intro, routing."""
    scale = 100.0 if metric.endswith("acc") else 1.0
    return {
        wd: gain_over_time(results, f"{a}@wd={wd:g}", f"{b}@wd={wd:g}", metric, scale)
        for wd in results["config"]["weight_decays"]
    }


def _stiefel_cells(results: dict | None, task, rules: dict, name: str, arms: int | None = None) -> list[MapCell] | None:
    """A map's Stiefel − AdamW cells under the family ``name`` of ``rules`` on ``task``'s schedule; with
    ``arms`` (per decay and seed), ``None`` until every run has finished (a partial map is not read)."""
    if arms is not None:
        config = (results or {}).get("config")
        if not config or len(results["runs"]) < len(config["weight_decays"]) * arms * len(config["seeds"]):
            return None
    pairs = (("stiefel", "baseline"),)
    return final_cells(results, pairs, rules[name], lr=task.lr, warmup_epochs=task.warmup_epochs)


def tuned_cells(tuned: dict | None, task, rules: dict) -> list[MapCell] | None:
    """The decay map at every arm's tuned W_Q, W_K lr (``grokking_decay_map_tuned``, four arms) under the
    family ``decay_map_tuned``, once complete. Chapters: regimes, intro."""
    return _stiefel_cells(tuned, task, rules, "decay_map_tuned", arms=4)


def per_decay_cells(per_decay: dict | None, task, rules: dict) -> list[MapCell] | None:
    """The map with AdamW and the Stiefel rule each at the lr tuned at each decay
    (``grokking_decay_map_per_decay``) under the family ``decay_map_per_decay``, once complete. Chapter: regimes."""
    return _stiefel_cells(per_decay, task, rules, "decay_map_per_decay", arms=2)


def regimes_cells(decay_map: dict, task, rules: dict) -> list:
    """The decay map's Stiefel − AdamW cells at each decay's final epoch, under the declared
    family ``decay_map`` (``rules``: :func:`rules`). Every page's count of the map comes from these
    cells (:func:`decay_map.count`)."""
    return _stiefel_cells(decay_map, task, rules, "decay_map")
