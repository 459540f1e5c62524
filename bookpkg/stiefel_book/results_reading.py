"""Reading a results file (``{"config": ..., "runs": {"<arm>/<seed>": {"history", "final", ...}}}``):
its run keys, the runs of an arm, a metric at an epoch, and the one paired comparison of two arms.
Pure and light (numpy and :mod:`.stats`; no torch, no experiment): the findings read results
through it, and the experiments that pick a setting from earlier results do too.

Run keys and arm names, in one place:

- a run: ``"<arm>/<seed>"`` (:func:`run_key`, :func:`split_key`);
- an arm over a grid of one setting: ``"<arm>@<key>=<value>"`` (``"stiefel@wd=0.3"``,
  :func:`grid_arm`, :func:`parse_grid_arm`);
- an arm of the data-size sweep: ``"<arm>@wd=<λ>@n=<images>"`` (:func:`size_arm`, :func:`parse_size_arm`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .stats import PairedComparison, paired_comparison

__all__ = [
    "finals",
    "run_key",
    "split_key",
    "arm_of",
    "seed_of",
    "grid_arm",
    "parse_grid_arm",
    "size_arm",
    "parse_size_arm",
    "without_seeds",
    "shared_config",
    "runs_of",
    "finished_starts",
    "metric_at",
    "FINAL",
    "LAST",
    "value_at",
    "Paired",
    "paired",
    "movement_ratios",
]

FINAL = "final"  # a run's ``final`` record
LAST = "last"  # a run's last logged record


def run_key(arm: str, seed: int) -> str:
    """``run_key("stiefel", 3)`` -> ``"stiefel/3"``: a run's key in a results file."""
    return f"{arm}/{seed}"


def split_key(key: str) -> tuple[str, int]:
    """``split_key("stiefel@wd=0.3/3")`` -> ``("stiefel@wd=0.3", 3)``."""
    arm, sep, seed = key.rpartition("/")
    if not sep:
        raise ValueError(f"run key {key!r}: expected '<arm>/<seed>'")
    return arm, int(seed)


def finals(*results: dict | None, metric: str = "val_acc") -> dict[str, dict[int, float]]:
    """``{arm: {seed: final metric}}`` over the results files (``None``: a file with no runs yet)."""
    out: dict[str, dict[int, float]] = {}
    for r in results:
        for key, run in (r or {}).get("runs", {}).items():
            arm, seed = split_key(key)
            out.setdefault(arm, {})[seed] = float(run["final"][metric])
    return out


def arm_of(key: str) -> str:
    """The arm of a run key."""
    return split_key(key)[0]


def seed_of(key: str) -> int:
    """The seed (start) of a run key."""
    return split_key(key)[1]


def grid_arm(arm: str, key: str, value: float) -> str:
    """``(arm, key, value)`` -> ``"<arm>@<key>=<value>"``. Chapter: regimes."""
    return f"{arm}@{key}={value:g}"


def parse_grid_arm(name: str, key: str, arms: tuple[str, ...]) -> tuple[str, float]:
    """``parse_grid_arm("stiefel@wd=0.3", "wd", arms)`` -> ``("stiefel", 0.3)``. Chapter: regimes."""
    arm, sep, value = name.partition(f"@{key}=")
    if not sep or arm not in arms:
        raise ValueError(f"grid arm {name!r}: expected '<arm>@{key}=<value>' with arm one of {arms}")
    try:
        return arm, float(value)
    except ValueError:
        raise ValueError(f"grid arm {name!r}: {value!r} is not a number") from None


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


def without_seeds(config: dict) -> dict:
    """A configuration without its list of seeds: what every run of a file must share. The seed
    list only says which runs a profile asks for, so it may grow without mixing configurations.
    Chapters: grokking, cifar10_patches, ablation, regimes."""
    return {k: v for k, v in config.items() if k != "seeds"}


PER_ARM = ("qk_lrs",)  # a configuration's per-arm settings, ``[[arm, value], ...]``, resolved before the runs


def shared_config(config: dict, results: dict | None) -> dict:
    """What every run of ``results`` (a results file) shares with a run made at ``config``: the
    configuration without its seed list (:func:`without_seeds`), its per-arm settings
    (:data:`PER_ARM`) kept only for the arms that have runs in ``results``. A setting of an arm with
    no run in the file describes no run there: where a fault's runs were dropped to be made again
    (``tools/drop_runs.py``) and the arm's sweep chose again, the new runs may be made at the new
    choice without mixing configurations. The engine and the merge of returned files compare by it."""
    arms = {arm_of(key).split("@")[0] for key in (results or {}).get("runs", {})}
    out = without_seeds(config)
    for key in PER_ARM:
        if isinstance(out.get(key), list):
            out[key] = [list(pair) for pair in out[key] if pair[0] in arms]
    return out


def runs_of(results: dict | None, arm: str) -> dict[int, dict]:
    """``{seed: run}`` of one arm. Chapter: regimes."""
    out = {}
    for key, run in (results or {}).get("runs", {}).items():
        name, seed = split_key(key)
        if name == arm:
            out[seed] = run
    return out


def finished_starts(results: dict | None, arms) -> list[int]:
    """Starts (seeds) for which every arm of ``arms`` has finished, in order.
    Chapters: cifar10_patches, ablation, grokking, regimes."""
    runs = (results or {}).get("runs", {})
    seeds = sorted({seed_of(key) for key in runs})
    return [s for s in seeds if all(run_key(arm, s) in runs for arm in arms)]


def metric_at(run: dict, epoch: int, metric: str = "val_acc") -> float:
    """``metric`` at the logged record of ``epoch`` (``KeyError`` when the run did not log it). Chapter: regimes."""
    for record in run["history"]:
        if record["epoch"] == epoch:
            return record[metric]
    raise KeyError(f"no record at epoch {epoch}")


def value_at(run: dict, metric: str, epoch: int | str = FINAL) -> float:
    """``metric`` of one run at ``epoch``: a logged epoch, :data:`FINAL` (the run's ``final``
    record) or :data:`LAST` (its last logged record)."""
    if epoch == FINAL:
        return run["final"][metric]
    if epoch == LAST:
        return run["history"][-1][metric]
    return metric_at(run, epoch, metric)


class Paired(NamedTuple):
    """Two arms over the starts both finished: the starts, each arm's values (scaled) and their
    paired comparison ``a − b`` (``None`` with fewer than two starts)."""

    starts: list[int]
    a: np.ndarray
    b: np.ndarray
    comparison: PairedComparison | None


def paired(
    results: dict | None,
    a: str,
    b: str,
    metric: str = "val_acc",
    epoch: int | str = FINAL,
    scale: float | None = None,
    seeds=None,
) -> Paired:
    """``a`` against ``b`` on ``metric`` at ``epoch`` (:func:`value_at`), over the starts both
    finished (of ``seeds``, when given). ``scale`` multiplies the values; ``None``: 100 for an
    accuracy (percentage points), 1 otherwise."""
    starts = finished_starts(results, (a, b))
    if seeds is not None:
        keep = {int(s) for s in seeds}
        starts = [s for s in starts if s in keep]
    if scale is None:
        scale = 100.0 if metric.endswith("acc") else 1.0
    runs = (results or {}).get("runs", {})
    x = np.array([value_at(runs[run_key(a, s)], metric, epoch) * scale for s in starts])
    y = np.array([value_at(runs[run_key(b, s)], metric, epoch) * scale for s in starts])
    return Paired(starts, x, y, paired_comparison(x, y) if len(starts) >= 2 else None)


def movement_ratios(results: dict, arm: str, against: str = "baseline") -> dict[str, np.ndarray]:
    """Per projection (``blocks.i.W_Q``...): over the finished starts, the ratio of ``against``'s
    mean per-step displacement to ``arm``'s (how many times less ``arm`` moves a step), each
    averaged over the run's logged epochs.
    Chapter: cifar10_patches."""
    starts = finished_starts(results, (arm, against))
    names = (
        [k[len("step/") :] for k in results["runs"][run_key(arm, starts[0])]["history"][0] if k.startswith("step/")]
        if starts
        else []
    )

    def mean_step(key: str, name: str) -> float:
        return float(np.mean([record[f"step/{name}"] for record in results["runs"][key]["history"]]))

    return {
        name: np.array([mean_step(run_key(against, s), name) / mean_step(run_key(arm, s), name) for s in starts])
        for name in names
    }
