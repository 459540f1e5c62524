"""Reading the CIFAR-10 long-training results: which decay the paired starts are read at, the
paired gain there, and the data-size sweep at matched epochs. Pure functions of the results
dicts they are handed. Chapters: CIFAR-10 patches, regimes."""

from __future__ import annotations

import numpy as np

from ..experiments.grid import grid_arm
from ..stats import PairedComparison, paired_comparison
from .regimes import paired_seeds, runs_of

__all__ = ["decays_of", "paired_gain_at", "largest_gap_decay", "size_arm", "parse_size_arm", "size_gains"]

MIN_PAIRS = 3  # the "at least 3 paired starts" before a decay can be chosen


def decays_of(results: dict) -> list[float]:
    """The weight decays of a grid results file: its configuration's grid, or else those its
    ``"<arm>@wd=<λ>/<seed>"`` keys name; ascending.
    Chapter: regimes."""
    grid = results.get("config", {}).get("weight_decays")
    if grid:
        return sorted(float(d) for d in grid)
    return sorted({float(key.split("@wd=")[1].split("/")[0].split("@")[0]) for key in results["runs"] if "@wd=" in key})


def _final(run: dict, metric: str) -> float:
    return float(run["final"][metric])


def paired_gain_at(results: dict, weight_decay: float, a: str = "stiefel", b: str = "baseline", metric: str = "test_acc",
                   seeds=None, scale: float = 100.0) -> PairedComparison | None:
    """Paired ``a - b`` of the final ``metric`` (in points) at ``weight_decay``, over the seeds both
    have (or the given ones); ``None`` with fewer than two pairs.
    Chapter: regimes."""
    arm_a, arm_b = grid_arm(a, "wd", weight_decay), grid_arm(b, "wd", weight_decay)
    shared = paired_seeds(results, arm_a, arm_b)
    if seeds is not None:
        shared = [s for s in shared if s in set(seeds)]
    if len(shared) < 2:
        return None
    ra, rb = runs_of(results, arm_a), runs_of(results, arm_b)
    x = np.array([scale * _final(ra[s], metric) for s in shared])
    y = np.array([scale * _final(rb[s], metric) for s in shared])
    return paired_comparison(x, y)


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


def size_gains(results: dict, a: str = "stiefel", b: str = "baseline", metric: str = "test_acc", scale: float = 100.0) -> list[dict]:
    """Per (decay, size) of the size sweep: the paired gain ``a - b`` of the final ``metric``. Chapter: regimes."""
    cells = sorted({parse_size_arm(key.split("/")[0], (a, b))[1:] for key in results["runs"]})
    rows = []
    for decay, size in cells:
        arm_a, arm_b = size_arm(a, decay, size), size_arm(b, decay, size)
        shared = paired_seeds(results, arm_a, arm_b)
        ra, rb = runs_of(results, arm_a), runs_of(results, arm_b)
        row = {"weight_decay": decay, "train_size": size, "n": len(shared), "comparison": None}
        if len(shared) >= 2:
            row["comparison"] = paired_comparison(np.array([scale * _final(ra[s], metric) for s in shared]),
                                                  np.array([scale * _final(rb[s], metric) for s in shared]))
        rows.append(row)
    return rows
