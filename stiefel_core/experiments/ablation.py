"""The ablation: which component of the Stiefel rule earns what it gains over AdamW.

Two experiments, each with the arms of :mod:`.variants` (the AdamW baseline, the full rule and
four variants that each remove one component):

- ``cifar10_ablation``: the CIFAR-10 patches setup of :mod:`.cifar10`, its profiles unchanged,
  12 paired starts at the full training set. Its ``full`` file needs only the three variants
  that ``cifar10`` does not run: :func:`merged_results` takes the baseline, the full rule and
  the fixed step from ``cifar10-full.json`` after checking that both files hold the same
  configuration and that every start began from the same weights and saw the same data order.
- ``grokking_ablation``: the grokking setup at its ``ci`` scale (p = 31, 1,500 epochs), 20
  seeds in ``full``; one seed and 600 epochs in ``ci``. Final validation accuracy is compared.

Every comparison is paired by start: the full rule minus the variant, so a positive
difference is what the removed component was worth.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..stats import mean_and_spread, paired_comparison
from ..tables import Table
from . import cifar10, grokking
from .results import load_results, without_seeds
from .variants import ABLATION_ARMS, COMPONENTS, CONTROL_ARMS, VARIANTS

__all__ = [
    "CIFAR10_PROFILES", "GROKKING_PROFILES", "GROKKING_ARMS", "run_cifar10", "run_grokking", "merged_results",
    "ablation_rows", "shares", "share_line", "verdicts", "table", "claim", "PREPRINT", "MIN_STARTS_FOR_VERDICT",
]

CIFAR10_PROFILES = {
    "full": cifar10.PROFILES["full"],  # the very configuration of cifar10, so the two files can merge
    "ci": replace(cifar10.PROFILES["ci"], train_size=1_000, test_size=500),  # six arms: half of cifar10's ci run
}
GROKKING_PROFILES = {
    "full": replace(grokking.PROFILES["ci"], seeds=tuple(range(20))),  # ~20 s a run on one core; 5 seeds left every interval wide
    "ci": replace(grokking.PROFILES["ci"], epochs=600, seeds=(0,)),
}
GROKKING_ARMS = (*ABLATION_ARMS, *CONTROL_ARMS)  # the mechanism's controls run on the same seeds
METRIC = {"cifar10_ablation": "test_acc", "grokking_ablation": "val_acc"}
MIN_STARTS_FOR_VERDICT = 3
UNTESTED = "untested: identical in every start, the component never acts here"
PREPRINT = "the scale-free step carries the whole gain; nothing measurable from the projector or equivariance"


def run_cifar10(config, arm, seed, device, checkpoint=None, progress=True) -> dict:
    """One run of ``cifar10_ablation``: ``arm`` of :data:`ABLATION_ARMS` from start ``seed``."""
    if arm not in ABLATION_ARMS:
        raise ValueError(f"unknown arm {arm!r}; cifar10_ablation has {ABLATION_ARMS}")
    return cifar10.train(config, arm, seed, device, checkpoint, progress, description=f"cifar10 ablation {arm} start {seed}")


def run_grokking(config, arm, seed, device, checkpoint=None, progress=True) -> dict:
    """One run of ``grokking_ablation``: ``arm`` of :data:`GROKKING_ARMS` from seed ``seed``."""
    if arm not in GROKKING_ARMS:
        raise ValueError(f"unknown arm {arm!r}; grokking_ablation has {GROKKING_ARMS}")
    return grokking.run(config, arm, seed, device, checkpoint, progress)


def merged_results(ablation: dict, reference: dict | None) -> dict:
    """``ablation``'s runs with the arms it lacks taken from ``reference`` (``cifar10-full``).

    Refuses (``ValueError``) when the two files were run with different configurations, or when
    a start's runs did not share initial weights and data order: a merged comparison must be as
    paired as one file's.
    """
    if reference is None:
        return ablation
    if without_seeds(ablation["config"]) != without_seeds(reference["config"]):
        raise ValueError("the ablation and the reference results were run with different configurations; "
                         "rerun the missing arms in the ablation itself (`python -m stiefel_core run cifar10_ablation`)")
    runs = dict(ablation["runs"])
    for key, run in reference["runs"].items():
        if key.split("/")[0] in ABLATION_ARMS:
            runs.setdefault(key, run)
    for seed in {key.split("/")[1] for key in runs}:
        marks = {(r["final"].get("init_fingerprint"), r["final"].get("order_checksum")) for k, r in runs.items() if k.endswith(f"/{seed}")}
        if len(marks) > 1:
            raise ValueError(f"start {seed}: the merged runs began from different weights or data orders ({sorted(map(str, marks))})")
    return {**ablation, "runs": runs}


def _finished_starts(results: dict, arms) -> list[int]:
    seeds = sorted({int(key.split("/")[1]) for key in results["runs"]})
    return [s for s in seeds if all(f"{arm}/{s}" in results["runs"] for arm in arms)]


def ablation_rows(results: dict, metric: str) -> list[dict]:
    """One row per arm other than the full rule, over the starts where every arm finished:
    its mean accuracy (percent) and the paired comparison full rule − arm (percentage points)."""
    starts = _finished_starts(results, ABLATION_ARMS)
    acc = {arm: np.array([100 * results["runs"][f"{arm}/{s}"]["final"][metric] for s in starts]) for arm in ABLATION_ARMS}
    component = {variant: name for name, variant in COMPONENTS.items()}
    rows = []
    for arm in ABLATION_ARMS:
        if arm == "stiefel":
            continue
        rows.append({
            "arm": arm, "removes": component.get(arm, "the whole rule"), "starts": starts,
            "accuracy": mean_and_spread(acc[arm]) if starts else None,
            "full_minus_arm": paired_comparison(acc["stiefel"], acc[arm]) if len(starts) >= 2 else None,
        })
    return rows


def full_rule_accuracy(results: dict, metric: str):
    starts = _finished_starts(results, ABLATION_ARMS)
    return mean_and_spread([100 * results["runs"][f"stiefel/{s}"]["final"][metric] for s in starts]) if starts else None


def shares(rows: list[dict]) -> dict[str, float] | None:
    """Each component's share of the baseline-to-full-rule gain: (full − variant) / (full −
    baseline), on the mean differences. ``None`` unless the gain itself is significant and
    positive (its 95 % interval above zero): there is nothing to apportion otherwise."""
    gain = next(r["full_minus_arm"] for r in rows if r["arm"] == "baseline")
    if gain is None or gain.ci_low <= 0:
        return None
    return {r["removes"]: r["full_minus_arm"].mean_difference / gain.mean_difference for r in rows if r["arm"] in VARIANTS}


def share_line(rows: list[dict]) -> str:
    """:func:`shares` in words, or why they are not defined."""
    share = shares(rows)
    if share is None:
        return ("share of the gain over AdamW: not defined, the full rule does not beat AdamW here "
                "(its interval is not above zero), so there is no gain to apportion")
    return "share of the gain over AdamW carried by each component: " + ", ".join(f"{k} {v:.0%}" for k, v in share.items())


def verdicts(rows: list[dict]) -> list[tuple[str, str, str]]:
    """``(component, we measure, verdict)``: a component carries a measurable part of the result
    when removing it changes accuracy with a 95 % interval that excludes zero. No verdict from
    fewer than ``MIN_STARTS_FOR_VERDICT`` starts: two equal differences give a t interval of
    zero width, which would read as significant."""
    out = []
    for r in rows:
        c = r["full_minus_arm"]
        if c is None:
            out.append((r["removes"], "fewer than 2 finished starts", "not measured"))
            continue
        measured = f"{c.mean_difference:+.2f} pp, 95% CI [{c.ci_low:+.2f}, {c.ci_high:+.2f}], {c.wins}/{c.n} wins"
        if c.ties == c.n:  # every start identical: the switch changed nothing it could act on
            verdict = UNTESTED
        elif c.n < MIN_STARTS_FOR_VERDICT:
            verdict = f"too few starts for a verdict (n = {c.n} < {MIN_STARTS_FOR_VERDICT})"
        elif c.ci_low > 0:
            verdict = "removing it costs accuracy"
        elif c.ci_high < 0:
            verdict = "removing it helps"
        else:
            verdict = "no measurable effect"
        out.append((r["removes"], measured, verdict))
    return out


def table(rows: list[dict], unit: str = "test accuracy") -> Table:
    """The rows of :func:`ablation_rows` with their verdicts, one line per arm."""
    out = []
    for r, (component, _, verdict) in zip(rows, verdicts(rows)):
        c, acc = r["full_minus_arm"], r["accuracy"]
        out.append([r["arm"], component, f"{acc.mean:.2f} ± {acc.std:.2f}" if acc else "-",
                    f"{c.mean_difference:+.2f}" if c else "-", f"[{c.ci_low:+.2f}, {c.ci_high:+.2f}]" if c else "-",
                    f"{c.wins}/{c.n}" if c else "-", verdict])
    return Table(["arm", "removes", f"{unit} (%)", "full − arm (pp)", "95% CI", "wins", "verdict"], out, "llrrrrl")


def claim(results: dict) -> str:
    """One line for the book's claims table, from ``cifar10_ablation-full`` merged with
    ``cifar10-full`` (and the grokking repeat, when its file exists)."""
    merged = merged_results(results, load_results("cifar10", "full"))
    rows = ablation_rows(merged, METRIC["cifar10_ablation"])
    if rows[0]["full_minus_arm"] is None:
        return f"not yet measured ({len(rows[0]['starts'])} start(s) with every arm finished)"
    parts = [f"{'AdamW' if r['arm'] == 'baseline' else r['removes']}: "
             + (f"untested (identical runs: it never acts)" if r["full_minus_arm"].ties == r["full_minus_arm"].n else
                f"{r['full_minus_arm'].mean_difference:+.2f} pp [{r['full_minus_arm'].ci_low:+.2f}, {r['full_minus_arm'].ci_high:+.2f}]")
             for r in rows]
    line = f"full rule minus each variant, CIFAR-10 ({cifar10.regime(merged)}), {len(rows[0]['starts'])} paired starts: " + "; ".join(parts)
    share = shares(rows)
    line += "; " + ("shares of the gain: " + ", ".join(f"{k} {v:.0%}" for k, v in share.items()) if share else "no gain over AdamW to apportion")
    repeat = load_results("grokking_ablation", "full")
    if repeat and repeat.get("runs"):
        g = ablation_rows(repeat, METRIC["grokking_ablation"])
        from ..findings.regimes import decay_budget, grokking_lr_factors, never_binds

        # whether the full rule's cap ever bound at this task's lr: recorded by the decay map's runs at λ = 1
        idle = never_binds(load_results("grokking_decay_map", "full") or {}, ("stiefel@wd=1",))
        measured = [f"{'AdamW' if r['arm'] == 'baseline' else r['removes']} {r['full_minus_arm'].mean_difference:+.1f}"
                    + (" (the cap never binds at this lr: untested)" if r["arm"] == "no_trust_region" and idle else "")
                    for r in g if r["full_minus_arm"] is not None]
        if measured:
            c = repeat["config"]
            budget = decay_budget(c["lr"], c["weight_decay"], grokking_lr_factors(c["warmup_epochs"], c["epochs"]))
            line += (f"; grokking repeat (p = {c['p']}, Σ lr·λ = {budget:.3g}, {c['epochs']:,} epochs, {len(g[0]['starts'])} seeds, "
                     f"val. acc. pp): " + ", ".join(measured))
    return line
