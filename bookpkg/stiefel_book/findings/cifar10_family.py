"""The CIFAR-10 chapter's verdicts under its declared families (``book/protocol.yml``:
``cifar10_protocol``, ``cifar10_long``, ``cifar10_size``), in the four words of
:mod:`stiefel_book.stats` with Holm's correction within each family; the movement ratio as the
function of the lr that it is. Pure functions of the results dicts of ``cifar10``,
``cifar10_sweep``, ``cifar10_long`` and ``cifar10_size``."""

from __future__ import annotations

import numpy as np

from .. import preprint
from ..choices import decays_of, largest_gap_decay
from ..experiments.cifar10 import SWEEP_FRACTIONS
from ..families import as_dict, judge
from ..results_reading import finished_starts, grid_arm, run_key
from .cifar10 import movement_ratios, paired_gain
from .long_sizes import start_gains

__all__ = ["family_rows", "protocol_family", "long_family", "size_family", "movement_by_lr"]


def family_rows(comparisons: list[tuple[str, np.ndarray]], family) -> list[dict]:
    """``comparisons``: ``(what, paired differences in pp)`` of one declared family, in order, read
    by the family reader (:func:`families.judge`, each against zero). Each row: ``what``, ``n``,
    ``mean_pp``, ``ci_pp`` (its t interval), ``p``, ``p_holm``, ``tost_p_holm`` and ``verdict``
    (:func:`families.as_dict`)."""
    if not comparisons:
        return []
    values = {what: dict(enumerate(np.asarray(d, float))) for what, d in comparisons}
    values[""] = dict.fromkeys(range(max(len(d) for _, d in comparisons)), 0.0)
    rows = judge(values, [(what, "") for what, _ in comparisons], family.margin, family.alpha)
    return [{"what": r.arm, **as_dict(r)} for r in rows]


def _difference(results: dict, a: str, b: str) -> np.ndarray:
    _, x, y, _ = paired_gain(results, a, b)
    return np.asarray(x, float) - np.asarray(y, float)


def protocol_family(results: dict | None, sweep: dict | None, family) -> list[dict]:
    """The family ``cifar10_protocol`` (the preprint's 20-epoch protocol... here 2 epochs on
    50,000 images, as the chapter runs it): the gain, the cost of freezing both ways, and the gain
    at the sweep's largest size minus at its smallest, paired by start."""
    if not results:
        return []
    comparisons = [
        ("the Stiefel rule − AdamW", _difference(results, "stiefel", "baseline")),
        ("fixed step − frozen frames", _difference(results, "fixed_step", "frozen")),
        ("the Stiefel rule − frozen frames", _difference(results, "stiefel", "frozen")),
    ]
    if sweep:
        small, large = (round(100 * f) for f in (SWEEP_FRACTIONS[0], SWEEP_FRACTIONS[-1]))
        arms = (f"stiefel@{large}%", f"baseline@{large}%", f"stiefel@{small}%", f"baseline@{small}%")
        starts = finished_starts(sweep, arms)
        acc = {a: np.array([100 * sweep["runs"][run_key(a, s)]["final"]["test_acc"] for s in starts]) for a in arms}
        size = sweep["config"]["train_size"]
        what = f"gain at {round(size * SWEEP_FRACTIONS[-1]):,} − gain at {round(size * SWEEP_FRACTIONS[0]):,} images"
        comparisons.append((what, (acc[arms[0]] - acc[arms[1]]) - (acc[arms[2]] - acc[arms[3]])))
    return family_rows([c for c in comparisons if len(c[1]) >= 2], family)


def long_family(long: dict | None, family) -> list[dict]:
    """The family ``cifar10_long``: the Stiefel rule − AdamW over every start at the decay of
    largest gap (the preprint's protocol in the long regime), then per decay over starts 0-2 the
    gain, the cost of freezing (the Stiefel rule − frozen frames) and the controls against AdamW
    (frozen frames, AdamW without decay on W_Q, W_K). Each row's ``key``: ``(a, b, λ, starts)``,
    its arms, decay and ``"every start"`` or ``"starts 0-2"``."""
    if not long or not long.get("runs"):
        return []
    comparisons, keys = [], []
    decay = largest_gap_decay(long)
    if decay is not None:
        d = _difference(long, grid_arm("stiefel", "wd", decay), grid_arm("baseline", "wd", decay))
        comparisons.append((f"the Stiefel rule − AdamW, λ = {decay:g}, every start", d))
        keys.append(("stiefel", "baseline", decay, "every start"))
    for wd in decays_of(long):
        arm = {name: grid_arm(name, "wd", wd) for name in ("baseline", "stiefel", "frozen", "no_decay_qk")}
        for a, b, what in (
            ("stiefel", "baseline", "the Stiefel rule − AdamW"),
            ("stiefel", "frozen", "the Stiefel rule − frozen frames"),
            ("frozen", "baseline", "frozen frames − AdamW"),
            ("no_decay_qk", "baseline", "AdamW without decay on W_Q, W_K − AdamW"),
        ):
            starts, x, y, _ = paired_gain(long, arm[a], arm[b])
            keep = [i for i, s in enumerate(starts) if s in (0, 1, 2)]
            d = np.asarray(x, float)[keep] - np.asarray(y, float)[keep]
            if len(d) >= 2:
                comparisons.append((f"{what}, λ = {wd:g}, starts 0-2", d))
                keys.append((a, b, wd, "starts 0-2"))
    return _keyed(family_rows(comparisons, family), keys)


def size_family(sizes: dict | None, family) -> list[dict]:
    """The family ``cifar10_size``: the gain at the largest size minus at the smallest (does the
    gap widen with data), then the gain at each size, paired by start, at matched epochs. Each
    row's ``key``: ``("widening",)`` or ``("gain", images)``."""
    found = start_gains(sizes)
    if found is None:
        return []
    by_size = found[1]
    sizes_run = sorted(by_size)
    small, large = by_size[sizes_run[0]], by_size[sizes_run[-1]]
    common = sorted(set(small) & set(large))
    comparisons = [
        (
            f"gain at {sizes_run[-1]:,} − gain at {sizes_run[0]:,} images",
            np.array([large[s] - small[s] for s in common]),
        )
    ]
    comparisons += [(f"the Stiefel rule − AdamW, {n:,} images", np.array(list(g.values()))) for n, g in by_size.items()]
    keys = [("widening",), *(("gain", n) for n in by_size)]
    kept = [(c, k) for c, k in zip(comparisons, keys) if len(c[1]) >= 2]
    return _keyed(family_rows([c for c, _ in kept], family), [k for _, k in kept])


def _keyed(rows: list[dict], keys: list[tuple]) -> list[dict]:
    """Each row with ``key``, what it compares, for the tables that place it (:mod:`.long_training`)."""
    return [{**row, "key": key} for row, key in zip(rows, keys)]


def movement_by_lr(results: dict | None, lrs: np.ndarray | None = None) -> dict | None:
    """How many times less a fixed step moves W_Q, W_K than AdamW, as a function of the fixed
    step's lr: measured at the lr the runs used (``lr``, the median ``ratio`` and the range), and
    drawn over ``lrs`` by the fixed step's size, lr × gradient (Proposition 2's slope of 1.000):
    ``ratio × lr / lrs`` (AdamW's lr held). ``None`` before a start finished both arms."""
    ratios = movement_ratios(results, "fixed_step") if results else {}
    values = np.concatenate(list(ratios.values())) if ratios else np.array([])
    if not len(values):
        return None
    lr = float(results["config"]["lr"])
    lrs = np.logspace(-5, 0, 41) if lrs is None else np.asarray(lrs, float)
    median = float(np.median(values))
    return {
        "lr": lr,
        "ratio": median,
        "range": (float(values.min()), float(values.max())),
        "lrs": lrs,
        "ratios": median * lr / lrs,
        "preprint": preprint.CIFAR10["ratio"],
        "lr_for_preprint": tuple(median * lr / r for r in preprint.CIFAR10["ratio"][::-1]),
    }
