"""Reading the CIFAR-10 long-training results: which decay the paired starts are read at, the
paired gain there, and the data-size sweep at matched epochs. Pure functions of the results
dicts they are handed. Chapters: CIFAR-10 patches, regimes."""

from __future__ import annotations

import numpy as np

from ..experiments.grid import grid_arm
from ..stats import PairedComparison, direction
from ..tables import markdown_table
from .cifar10 import movement_ratios, paired_gain
from .regimes import decay_budget, runs_of
from .runs import finished_starts

__all__ = ["decays_of", "paired_gain_at", "largest_gap_decay", "size_arm", "parse_size_arm", "size_gains", "regime_rows", "regime_table"]

MIN_PAIRS = 3  # the "at least 3 paired starts" before a decay can be chosen


def decays_of(results: dict) -> list[float]:
    """The weight decays of a grid results file: its configuration's grid, or else those its
    ``"<arm>@wd=<λ>/<seed>"`` keys name; ascending.
    Chapter: regimes."""
    grid = results.get("config", {}).get("weight_decays")
    if grid:
        return sorted(float(d) for d in grid)
    return sorted({float(key.split("@wd=")[1].split("/")[0].split("@")[0]) for key in results["runs"] if "@wd=" in key})


def _of_seeds(results: dict, seeds) -> dict:
    """``results`` with only the runs of ``seeds`` (all of them when ``None``)."""
    if seeds is None:
        return results
    keep = {int(s) for s in seeds}
    return {**results, "runs": {k: r for k, r in results["runs"].items() if int(k.rpartition("/")[2]) in keep}}


def paired_gain_at(results: dict, weight_decay: float, a: str = "stiefel", b: str = "baseline", metric: str = "test_acc",
                   seeds=None) -> PairedComparison | None:
    """Paired ``a - b`` of the final ``metric`` (points for accuracies) at ``weight_decay``, over the
    starts both finished (of ``seeds``, when given); ``None`` with fewer than two pairs.
    Chapter: CIFAR-10 patches."""
    return paired_gain(_of_seeds(results, seeds), grid_arm(a, "wd", weight_decay), grid_arm(b, "wd", weight_decay), metric)[3]


def largest_gap_decay(results: dict | None, a: str = "stiefel", b: str = "baseline", metric: str = "test_acc",
                      seeds=(0, 1, 2)) -> float | None:
    """The decay at which the mean paired gain ``a - b`` over ``seeds`` is largest in absolute
    value: where the preprint's 12-start protocol is run. ``None`` until every decay of the grid
    has those seeds for both arms (the choice is made on them alone, and said so where reported).
    Chapter: regimes."""
    if not results:
        return None
    gains = {}
    for decay in decays_of(results):
        comparison = paired_gain_at(results, decay, a, b, metric, seeds=seeds)
        if comparison is None or comparison.n < min(MIN_PAIRS, len(seeds)):
            return None
        gains[decay] = comparison.mean_difference
    return max(gains, key=lambda decay: abs(gains[decay])) if gains else None


def size_arm(arm: str, weight_decay: float, size: int) -> str:
    """``"stiefel@wd=0.3@n=2500"``: an arm of the data-size sweep. Chapter: regimes."""
    return f"{grid_arm(arm, 'wd', weight_decay)}@n={int(size)}"


def parse_size_arm(name: str, arms: tuple[str, ...]) -> tuple[str, float, int]:
    """``parse_size_arm("stiefel@wd=0.3@n=2500", arms)`` -> ``("stiefel", 0.3, 2500)``. Chapter: regimes."""
    head, sep, size = name.rpartition("@n=")
    arm, sep2, decay = head.partition("@wd=")
    if not (sep and sep2) or arm not in arms:
        raise ValueError(f"size-sweep arm {name!r}: expected '<arm>@wd=<λ>@n=<images>' with arm one of {arms}")
    try:
        return arm, float(decay), int(size)
    except ValueError:
        raise ValueError(f"size-sweep arm {name!r}: {decay!r} and {size!r} must be numbers") from None


def size_gains(results: dict, a: str = "stiefel", b: str = "baseline", metric: str = "test_acc") -> list[dict]:
    """Per (decay, size) of the size sweep: the starts both arms finished and the paired gain
    ``a - b`` of the final ``metric`` (``None`` with fewer than two).
    Chapter: CIFAR-10 patches."""
    cells = sorted({parse_size_arm(key.split("/")[0], (a, b))[1:] for key in results["runs"]})
    rows = []
    for decay, size in cells:
        starts, _, _, comparison = paired_gain(results, size_arm(a, decay, size), size_arm(b, decay, size), metric)
        rows.append({"weight_decay": decay, "train_size": size, "n": len(starts), "comparison": comparison})
    return rows


def regime_rows(results: dict) -> list[dict]:
    """Per decay of the long-training grid: the decay budget Σ lr·λ, the arms' mean final train
    and test accuracy, and the paired comparisons that decide the CIFAR-10 claims there: the gain
    (Stiefel - AdamW), the cost of freezing (Stiefel - frozen), decay on W_Q, W_K (no_decay_qk -
    AdamW), and how many times less a Stiefel step moves W_Q, W_K than an AdamW step (the
    movement ratio, over every block's projections and the starts both finished).
    Chapters: CIFAR-10 patches, regimes."""
    from ..experiments.cifar10 import CIFAR10Config, lr_factors

    task = CIFAR10Config(**{k: tuple(v) if isinstance(v, list) else v for k, v in results["config"]["task"].items()})
    factors = lr_factors(task)
    rows = []
    for decay in decays_of(results):
        arm = {name: grid_arm(name, "wd", decay) for name in ("baseline", "stiefel", "frozen", "no_decay_qk")}
        accuracy = {}
        for name, key in arm.items():
            runs = list(runs_of(results, key).values())
            if runs:
                accuracy[name] = {m: 100 * float(np.mean([r["final"][m] for r in runs])) for m in ("train_acc", "test_acc")}
        ratios = movement_ratios(results, arm["stiefel"], arm["baseline"])
        rows.append({
            "weight_decay": decay, "budget": decay_budget(task.lr, decay, factors), "epochs": task.epochs,
            "accuracy": accuracy, "starts": finished_starts(results, (arm["stiefel"], arm["baseline"])),
            "gain": paired_gain(results, arm["stiefel"], arm["baseline"])[3],
            "freezing_cost": paired_gain(results, arm["stiefel"], arm["frozen"])[3],
            "decay_on_qk": paired_gain(results, arm["no_decay_qk"], arm["baseline"])[3],
            "movement_ratio": float(np.mean(np.concatenate(list(ratios.values())))) if ratios and len(next(iter(ratios.values()))) else None,
        })
    return rows


def _cell(c: PairedComparison | None) -> str:
    if c is None:
        return "-"
    return f"{c.mean_difference:+.2f} [{c.ci_low:+.2f}, {c.ci_high:+.2f}], {c.wins}/{c.n}: {direction(c)}"


def regime_table(rows: list[dict]) -> str:
    """:func:`regime_rows` as a Markdown table: per decay its budget, the accuracies reached
    (train / test, %), and each comparison in points with its 95 % interval, wins and verdict.
    Chapters: CIFAR-10 patches, regimes."""
    def reached(row, arm):
        acc = row["accuracy"].get(arm)
        return "-" if acc is None else f"{acc['train_acc']:.1f} / {acc['test_acc']:.1f}"

    body = [[f"{r['weight_decay']:g}", f"{r['budget']:.3g}", reached(r, "baseline"), reached(r, "stiefel"),
             len(r["starts"]), _cell(r["gain"]), _cell(r["freezing_cost"]), _cell(r["decay_on_qk"]),
             "-" if r["movement_ratio"] is None else f"{r['movement_ratio']:.2f}x"] for r in rows]
    return markdown_table(["λ", "Σ lr·λ", "AdamW train / test (%)", "Stiefel train / test (%)", "pairs",
                           "Stiefel − AdamW (pp)", "Stiefel − frozen (pp)", "no decay on W_Q, W_K − AdamW (pp)",
                           "AdamW step / Stiefel step"], body)
