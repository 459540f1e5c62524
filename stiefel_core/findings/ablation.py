"""What the ablation's results say (the ablation chapter): the full rule minus each variant,
paired by start, each component's share of the gain, the verdicts and the claims table's line.
Pure functions of the results dicts they are handed (``cifar10_ablation`` merged with
``cifar10``, and ``grokking_ablation``).

Every comparison is paired by start: the full rule minus the variant, so a positive
difference is what the removed component was worth.
"""

from __future__ import annotations

import numpy as np

from ..experiments.variants import ABLATION_ARMS, COMPONENTS, VARIANTS
from ..results_reading import arm_of, without_seeds
from ..stats import MIN_PAIRS_FOR_VERDICT, direction, mean_and_spread, paired_comparison
from ..tables import Table
from .cifar10 import regime
from .regimes import decay_budget, grokking_lr_factors, never_binds
from .runs import finished_starts, unpaired_starts

__all__ = [
    "METRIC",
    "MIN_STARTS_FOR_VERDICT",
    "UNTESTED",
    "merged_results",
    "ablation_rows",
    "full_rule_accuracy",
    "shares",
    "share_line",
    "verdicts",
    "table",
    "verdict_table",
    "claim",
]

METRIC = {"cifar10_ablation": "test_acc", "grokking_ablation": "val_acc"}
MIN_STARTS_FOR_VERDICT = MIN_PAIRS_FOR_VERDICT
UNTESTED = "untested: identical in every start, the component never acts here"
_VERDICT = {"higher": "removing it costs accuracy", "lower": "removing it helps", "tie": "no measurable effect"}


def merged_results(ablation: dict, reference: dict | None) -> dict:
    """``ablation``'s runs with the arms it lacks taken from ``reference`` (``cifar10-full``).

    Refuses (``ValueError``) when the two files were run with different configurations, or when
    a start's runs did not share initial weights and data order: a merged comparison must be as
    paired as one file's.
    Chapter: ablation.
    """
    if reference is None:
        return ablation
    if without_seeds(ablation["config"]) != without_seeds(reference["config"]):
        raise ValueError(
            "the ablation and the reference results were run with different configurations; "
            "rerun the missing arms in the ablation itself (`python -m stiefel_core run cifar10_ablation`)"
        )
    runs = dict(ablation["runs"])
    for key, run in reference["runs"].items():
        if arm_of(key) in ABLATION_ARMS:
            runs.setdefault(key, run)
    for seed, marks in unpaired_starts(runs).items():
        raise ValueError(f"start {seed}: the merged runs began from different weights or data orders ({marks})")
    return {**ablation, "runs": runs}


def ablation_rows(results: dict, metric: str) -> list[dict]:
    """One row per arm other than the full rule, over the starts where every arm finished:
    its mean accuracy (percent) and the paired comparison full rule − arm (percentage points).
    Chapter: ablation."""
    starts = finished_starts(results, ABLATION_ARMS)
    acc = {
        arm: np.array([100 * results["runs"][f"{arm}/{s}"]["final"][metric] for s in starts]) for arm in ABLATION_ARMS
    }
    component = {variant: name for name, variant in COMPONENTS.items()}
    rows = []
    for arm in ABLATION_ARMS:
        if arm == "stiefel":
            continue
        rows.append(
            {
                "arm": arm,
                "removes": component.get(arm, "the whole rule"),
                "starts": starts,
                "accuracy": mean_and_spread(acc[arm]) if starts else None,
                "full_minus_arm": paired_comparison(acc["stiefel"], acc[arm]) if len(starts) >= 2 else None,
            }
        )
    return rows


def full_rule_accuracy(results: dict, metric: str):
    """The full rule's mean and spread of ``metric`` (percent) over the starts every arm finished. Chapter: ablation."""
    starts = finished_starts(results, ABLATION_ARMS)
    return mean_and_spread([100 * results["runs"][f"stiefel/{s}"]["final"][metric] for s in starts]) if starts else None


def shares(rows: list[dict]) -> dict[str, float] | None:
    """Each component's share of the baseline-to-full-rule gain: (full − variant) / (full −
    baseline), on the mean differences. ``None`` unless the gain itself is significant and
    positive (its 95 % interval above zero): there is nothing to apportion otherwise.
    Chapter: ablation."""
    gain = next(r["full_minus_arm"] for r in rows if r["arm"] == "baseline")
    if gain is None or gain.ci_low <= 0:
        return None
    return {
        r["removes"]: r["full_minus_arm"].mean_difference / gain.mean_difference for r in rows if r["arm"] in VARIANTS
    }


def share_line(rows: list[dict]) -> str:
    """:func:`shares` in words, or why they are not defined. Chapter: ablation."""
    share = shares(rows)
    if share is None:
        return (
            "share of the gain over AdamW: not defined, the full rule does not beat AdamW here "
            "(its interval is not above zero), so there is no gain to apportion"
        )
    return "share of the gain over AdamW carried by each component: " + ", ".join(
        f"{k} {v:.0%}" for k, v in share.items()
    )


def _verdict(c) -> str:
    if c.ties == c.n:  # every start identical: the switch changed nothing it could act on
        return UNTESTED
    if c.n < MIN_STARTS_FOR_VERDICT:
        return f"too few starts for a verdict (n = {c.n} < {MIN_STARTS_FOR_VERDICT})"
    return _VERDICT[direction(c, MIN_STARTS_FOR_VERDICT)]


def verdicts(rows: list[dict]) -> list[tuple[str, str, str]]:
    """``(component, we measure, verdict)``: a component carries a measurable part of the result
    when removing it changes accuracy with a 95 % interval that excludes zero
    (:func:`stats.direction`). No verdict from fewer than ``MIN_STARTS_FOR_VERDICT`` starts:
    two equal differences give a t interval of zero width, which would read as significant.
    Chapter: ablation."""
    out = []
    for r in rows:
        c = r["full_minus_arm"]
        if c is None:
            out.append((r["removes"], "fewer than 2 finished starts", "not measured"))
            continue
        measured = f"{c.mean_difference:+.2f} pp, 95% CI [{c.ci_low:+.2f}, {c.ci_high:+.2f}], {c.wins}/{c.n} wins"
        out.append((r["removes"], measured, _verdict(c)))
    return out


def table(rows: list[dict], unit: str = "test accuracy") -> Table:
    """The rows of :func:`ablation_rows` with their verdicts, one line per arm. Chapter: ablation."""
    out = []
    for r, (component, _, verdict) in zip(rows, verdicts(rows)):
        c, acc = r["full_minus_arm"], r["accuracy"]
        out.append(
            [
                r["arm"],
                component,
                f"{acc.mean:.2f} ± {acc.std:.2f}" if acc else "-",
                f"{c.mean_difference:+.2f}" if c else "-",
                f"[{c.ci_low:+.2f}, {c.ci_high:+.2f}]" if c else "-",
                f"{c.wins}/{c.n}" if c else "-",
                verdict,
            ]
        )
    return Table(["arm", "removes", f"{unit} (%)", "full − arm (pp)", "95% CI", "wins", "verdict"], out, "llrrrrl")


def verdict_table(tasks: dict[str, list[dict]]) -> Table:
    """The verdicts of every task (``{task: ablation_rows(...)}``), one row per task and arm: what
    removing the component did, by :func:`verdicts`' rule, and what we measure.
    Chapter: ablation."""
    out = []
    for task, rows in tasks.items():
        if not rows or rows[0]["full_minus_arm"] is None:
            out.append([task, "-", "-", "not measured yet", "-"])
            continue
        out += [
            [task, r["arm"], component, verdict, measured]
            for r, (component, measured, verdict) in zip(rows, verdicts(rows))
        ]
    return Table(["task", "arm", "removes", "verdict", "we measure (full − arm)"], out)


def claim(results: dict, reference: dict | None, repeat: dict | None = None, decay_map: dict | None = None) -> str:
    """One line for the book's claims table, from ``cifar10_ablation-full`` merged with
    ``cifar10-full`` (``reference``), and the grokking repeat (``grokking_ablation-full``) when
    it has runs; whether the cap ever bound is read from ``grokking_decay_map-full``.
    Chapter: ablation."""
    merged = merged_results(results, reference)
    rows = ablation_rows(merged, METRIC["cifar10_ablation"])
    if rows[0]["full_minus_arm"] is None:
        return f"not yet measured ({len(rows[0]['starts'])} start(s) with every arm finished)"
    parts = [
        f"{'AdamW' if r['arm'] == 'baseline' else r['removes']}: "
        + (
            "untested (identical runs: it never acts)"
            if r["full_minus_arm"].ties == r["full_minus_arm"].n
            else f"{r['full_minus_arm'].mean_difference:+.2f} pp "
            f"[{r['full_minus_arm'].ci_low:+.2f}, {r['full_minus_arm'].ci_high:+.2f}]"
        )
        for r in rows
    ]
    line = (
        f"full rule minus each variant, CIFAR-10 ({regime(merged)}), {len(rows[0]['starts'])} paired starts: "
        + "; ".join(parts)
    )
    share = shares(rows)
    line += "; " + (
        "shares of the gain: " + ", ".join(f"{k} {v:.0%}" for k, v in share.items())
        if share
        else "no gain over AdamW to apportion"
    )
    if repeat and repeat.get("runs"):
        g = ablation_rows(repeat, METRIC["grokking_ablation"])
        # whether the full rule's cap ever bound at this task's lr: recorded by the decay map's runs at λ = 1
        idle = never_binds(decay_map or {}, ("stiefel@wd=1",))
        measured = [
            f"{'AdamW' if r['arm'] == 'baseline' else r['removes']} {r['full_minus_arm'].mean_difference:+.1f}"
            + (" (the cap never binds at this lr: untested)" if r["arm"] == "no_trust_region" and idle else "")
            for r in g
            if r["full_minus_arm"] is not None
        ]
        if measured:
            c = repeat["config"]
            budget = decay_budget(c["lr"], c["weight_decay"], grokking_lr_factors(c["warmup_epochs"], c["epochs"]))
            line += (
                f"; grokking repeat (p = {c['p']}, Σ lr·λ = {budget:.3g}, {c['epochs']:,} epochs, "
                f"{len(g[0]['starts'])} seeds, "
                f"val. acc. pp): " + ", ".join(measured)
            )
    return line
