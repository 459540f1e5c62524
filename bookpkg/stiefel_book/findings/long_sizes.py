"""Reading the CIFAR-10 size sweep (``cifar10_size``: 100 epochs at every training-set size, at
the decay of largest gap): the paired gain at each size, the arms' fit, whether the gap widens
with data, and their verdicts as the declared family ``cifar10_size`` reads them (the rows of
:func:`findings.cifar10_family.size_family`, handed in). Pure functions of the results dicts and
rows they are handed. Chapters: CIFAR-10 patches, regimes."""

from __future__ import annotations

import numpy as np

from ..results_reading import arm_of, parse_size_arm, runs_of, size_arm
from ..stats import paired_comparison
from .cifar10 import paired_gain

__all__ = [
    "FITS",
    "size_gains",
    "mean_accuracy",
    "size_cells",
    "start_gains",
    "widening",
    "size_readings",
]

FITS = 95.0  # final train accuracy (%) from which an arm fits its training set


def size_gains(results: dict, a: str = "stiefel", b: str = "baseline", metric: str = "test_acc") -> list[dict]:
    """Per (decay, size) of the size sweep: the starts both arms finished and the paired gain
    ``a - b`` of the final ``metric`` (``None`` with fewer than two).
    Chapter: CIFAR-10 patches."""
    cells = sorted({parse_size_arm(arm_of(key), (a, b))[1:] for key in results["runs"]})
    rows = []
    for decay, size in cells:
        starts, _, _, comparison = paired_gain(results, size_arm(a, decay, size), size_arm(b, decay, size), metric)
        rows.append({"weight_decay": decay, "train_size": size, "n": len(starts), "comparison": comparison})
    return rows


def mean_accuracy(results: dict, key: str) -> dict[str, float] | None:
    """Mean final train and test accuracy (%) of arm ``key``'s runs; ``None`` before its first.
    Chapters: CIFAR-10 patches, regimes."""
    runs = list(runs_of(results, key).values())
    return {m: 100 * float(np.mean([r["final"][m] for r in runs])) for m in ("train_acc", "test_acc")} if runs else None


def size_cells(size_rows: list[dict] | None) -> dict[tuple, dict]:
    """The family ``cifar10_size``'s rows by what they compare: ``("gain", images)`` for the
    Stiefel rule − AdamW at a size, ``("widening",)`` for the gain at the largest size − at the
    smallest."""
    return {tuple(r["key"]): r for r in size_rows or ()}


def start_gains(
    results: dict | None, a: str = "stiefel", b: str = "baseline", metric: str = "test_acc"
) -> tuple[float, dict[int, dict[int, float]]] | None:
    """``(decay, {size: {start: gain a − b}})`` at the size sweep's first decay, each size's gains over
    the starts both arms finished there; ``None`` before a run. Chapters: CIFAR-10 patches, regimes."""
    cells = size_gains(results, a, b, metric) if results and results.get("runs") else []
    if not cells:
        return None
    decay = cells[0]["weight_decay"]
    out = {}
    for size in sorted({c["train_size"] for c in cells if c["weight_decay"] == decay}):
        starts, x, y, _ = paired_gain(results, size_arm(a, decay, size), size_arm(b, decay, size), metric)
        out[size] = {s: float(u - v) for s, u, v in zip(starts, x, y)}
    return decay, out


def widening(results: dict | None, a: str = "stiefel", b: str = "baseline", metric: str = "test_acc") -> dict | None:
    """The numbers behind whether the gap widens with data at matched epochs: over the starts that
    finished both the smallest and the largest size, the per-start gain ``a - b`` at the largest
    size minus at the smallest (``differences``) and their paired comparison. ``None`` with fewer
    than two such starts. Its verdict is the family ``cifar10_size``'s (:func:`size_readings`).
    Chapters: CIFAR-10 patches, regimes."""
    found = start_gains(results, a, b, metric)
    if found is None:
        return None
    decay, by_size = found
    sizes = sorted(by_size)
    small, large = by_size[sizes[0]], by_size[sizes[-1]]
    common = sorted(set(small) & set(large))
    if len(sizes) < 2 or len(common) < 2:
        return None
    return {
        "weight_decay": decay,
        "small": sizes[0],
        "large": sizes[-1],
        "n": len(common),
        "comparison": paired_comparison([large[s] for s in common], [small[s] for s in common]),
        "differences": [large[s] - small[s] for s in common],
    }


def size_readings(sizes: dict | None, size_rows: list[dict]) -> dict:
    """What the size sweep says under its declared family (``size_rows``, the rows of
    ``cifar10_size``): per size, how many of the two arms fit their training set (mean final
    train accuracy ≥ :data:`FITS` %) and the gain's verdict; and the verdict of the gain at the
    largest size − at the smallest (``None`` until the family has that row).
    Chapters: CIFAR-10 patches, regimes."""
    cells = size_cells(size_rows)
    rows = size_gains(sizes) if sizes and sizes.get("runs") else []

    def fitting_arms(decay: float, size: int) -> int:
        accuracy = (mean_accuracy(sizes, size_arm(arm, decay, size)) for arm in ("baseline", "stiefel"))
        return sum(acc is not None and acc["train_acc"] >= FITS for acc in accuracy)

    return {
        "gain": {n: r["verdict"] for (what, *rest), r in cells.items() if what == "gain" for n in rest},
        "fitting_arms": {r["train_size"]: fitting_arms(r["weight_decay"], r["train_size"]) for r in rows},
        "widening": cells[("widening",)]["verdict"] if ("widening",) in cells else None,
    }
