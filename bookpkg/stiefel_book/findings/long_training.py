"""Reading the CIFAR-10 long-training grid (``cifar10_long``: 100 epochs on 10,000 images at three
decays): which decay the paired starts are read at, the numbers per decay, and the verdicts as
the declared family ``cifar10_long`` reads them (four words, Holm within the family, its margin:
the rows of :func:`findings.cifar10_family.long_family`, handed in). The size sweep is
:mod:`.long_sizes`. Pure functions of the results dicts and rows they are handed.
Chapters: CIFAR-10 patches, regimes."""

from __future__ import annotations

import numpy as np

from ..choices import decays_of, largest_gap_decay, paired_gain_at  # noqa: F401  (the chapters read these here)
from ..results_reading import finished_starts, grid_arm, parse_size_arm, size_arm  # noqa: F401  (tests read these here)
from ..stats import PairedComparison
from ..tasks.cifar10_config import CIFAR10Config, lr_factors
from .cifar10 import movement_ratios, paired_gain
from .long_sizes import FITS, mean_accuracy, size_gains
from .regimes import decay_budget

__all__ = [
    "size_gains",
    "regime_rows",
    "long_cells",
    "PREPRINT_STARTS",
    "protocol_comparison",
    "task_of",
    "FITS",
    "readings",
]

PREPRINT_STARTS = 12  # the preprint's paired starts, run at the decay of largest gap
# the family's comparisons (a, b) by what they measure
MEASURES = {
    ("stiefel", "baseline"): "gain",
    ("stiefel", "frozen"): "freezing_cost",
    ("no_decay_qk", "baseline"): "decay_on_qk",
    ("frozen", "baseline"): "frozen",
}
NAMES = {
    "gain": "Stiefel − AdamW",
    "freezing_cost": "Stiefel − frozen",
    "decay_on_qk": "no decay on W_Q, W_K − AdamW",
    "frozen": "frozen − AdamW",
}


def task_of(results: dict):
    """The ``CIFAR10Config`` a CIFAR-10 results file's ``config["task"]`` records (lists as tuples).
    Chapters: CIFAR-10 patches, regimes, peers."""
    return CIFAR10Config(**{k: tuple(v) if isinstance(v, list) else v for k, v in results["config"]["task"].items()})


def regime_rows(results: dict) -> list[dict]:
    """Per decay of the long-training grid: the decay budget Σ lr·λ, the arms' mean final train
    and test accuracy, and the paired comparisons over every start both arms finished (numbers,
    no verdict): the gain (Stiefel - AdamW), the cost of freezing (Stiefel - frozen), decay on
    W_Q, W_K (no_decay_qk - AdamW), and how many times less a Stiefel step moves W_Q, W_K than an
    AdamW step (the movement ratio, over every block's projections and the starts both finished).
    Chapters: CIFAR-10 patches, regimes."""
    task = task_of(results)
    factors = lr_factors(task)
    rows = []
    for decay in decays_of(results):
        arm = {name: grid_arm(name, "wd", decay) for name in ("baseline", "stiefel", "frozen", "no_decay_qk")}
        accuracy = {name: acc for name, key in arm.items() if (acc := mean_accuracy(results, key)) is not None}
        ratios = movement_ratios(results, arm["stiefel"], arm["baseline"])
        rows.append(
            {
                "weight_decay": decay,
                "budget": decay_budget(task.lr, decay, factors),
                "epochs": task.epochs,
                "accuracy": accuracy,
                "starts": finished_starts(results, (arm["stiefel"], arm["baseline"])),
                "gain": paired_gain(results, arm["stiefel"], arm["baseline"])[3],
                "freezing_cost": paired_gain(results, arm["stiefel"], arm["frozen"])[3],
                "decay_on_qk": paired_gain(results, arm["no_decay_qk"], arm["baseline"])[3],
                "movement_ratio": float(np.mean(np.concatenate(list(ratios.values()))))
                if ratios and len(next(iter(ratios.values())))
                else None,
            }
        )
    return rows


def long_cells(long_rows: list[dict] | None) -> dict[tuple[str, float], dict]:
    """The family ``cifar10_long``'s rows by ``(measure, λ)``, measure one of :data:`NAMES`: each
    comparison over starts 0-2, except the gain at the decay of largest gap, read over every start
    (the preprint's protocol). Chapters: CIFAR-10 patches, regimes."""
    cells: dict[tuple[str, float], dict] = {}
    for row in long_rows or ():
        a, b, decay, starts = row["key"]
        if (a, b) in MEASURES and (starts == "every start" or (MEASURES[(a, b)], decay) not in cells):
            cells[(MEASURES[(a, b)], decay)] = row
    return cells


def protocol_comparison(
    results: dict | None, a: str = "stiefel", b: str = "baseline", metric: str = "test_acc"
) -> tuple[float | None, PairedComparison | None]:
    """The preprint's protocol in the long regime, in numbers: ``(decay, comparison)``, the paired
    gain ``a - b`` over every start both finished at :func:`largest_gap_decay` (chosen on starts
    0-2 alone); ``(None, None)`` until that decay can be chosen. Its verdict is the family's
    (:func:`readings`). Chapters: CIFAR-10 patches, regimes."""
    decay = largest_gap_decay(results, a, b, metric)
    return (None, None) if decay is None else (decay, paired_gain_at(results, decay, a, b, metric))


NOT_RUN = "not yet run"  # a comparison the family does not hold yet (fewer than two paired starts)


def readings(results: dict, long_rows: list[dict]) -> dict:
    """What the long grid says under its declared family (``long_rows``, the rows of
    ``cifar10_long``): the gain's verdict at each decay where both arms fit their training set
    (final train accuracy ≥ :data:`FITS` %, ``"fitting"``) and where decay holds them below it
    (``"held"``); the 12-start protocol (decay, verdict, pairs); the movement ratio's range over
    the decays; per decay, the verdicts of the cost of freezing (Stiefel − frozen), of decay on
    W_Q, W_K alone (no_decay_qk − AdamW) and of frozen frames against AdamW.
    Chapters: CIFAR-10 patches, regimes."""
    rows, cells = regime_rows(results), long_cells(long_rows)

    def fits(row) -> bool:
        acc = row["accuracy"]
        return all(arm in acc and acc[arm]["train_acc"] >= FITS for arm in ("baseline", "stiefel"))

    def word(measure: str, decay: float) -> str:
        return cells[(measure, decay)]["verdict"] if (measure, decay) in cells else NOT_RUN

    decay, twelve = protocol_comparison(results)
    ratios = [r["movement_ratio"] for r in rows if r["movement_ratio"] is not None]
    return {
        "fitting": {r["weight_decay"]: word("gain", r["weight_decay"]) for r in rows if fits(r)},
        "held": {r["weight_decay"]: word("gain", r["weight_decay"]) for r in rows if not fits(r)},
        "protocol": (decay, NOT_RUN if decay is None else word("gain", decay), 0 if twelve is None else twelve.n),
        "movement": (min(ratios), max(ratios)) if ratios else None,
        **{m: {r["weight_decay"]: word(m, r["weight_decay"]) for r in rows} for m in ("freezing_cost", "decay_on_qk")},
        "frozen": {r["weight_decay"]: word("frozen", r["weight_decay"]) for r in rows},
    }
