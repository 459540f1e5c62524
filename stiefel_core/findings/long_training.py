"""Reading the CIFAR-10 long-training results: which decay the paired starts are read at, the
paired gain there, and the data-size sweep at matched epochs. Pure functions of the results
dicts they are handed. Chapters: CIFAR-10 patches, regimes."""

from __future__ import annotations

import numpy as np

from ..choices import decays_of, largest_gap_decay, paired_gain_at  # noqa: F401  (the chapters read these here)
from ..experiments.cifar10_config import CIFAR10Config, lr_factors
from ..results_reading import arm_of, finished_starts, grid_arm, parse_size_arm, runs_of, size_arm
from ..stats import PairedComparison, direction
from ..tables import markdown_table
from .cifar10 import movement_ratios, paired_gain
from .regimes import decay_budget

__all__ = [
    "size_gains",
    "regime_rows",
    "regime_table",
    "PREPRINT_STARTS",
    "protocol_comparison",
    "widening",
    "claim_gain",
    "claim_movement",
    "size_table",
    "panel_table",
    "task_of",
    "FITS",
    "readings",
    "readings_text",
    "size_readings",
    "size_readings_text",
    "departures_from_stated",
]


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


def task_of(results: dict):
    """The ``CIFAR10Config`` a CIFAR-10 results file's ``config["task"]`` records (lists as tuples).
    Chapters: CIFAR-10 patches, regimes, peers."""
    return CIFAR10Config(**{k: tuple(v) if isinstance(v, list) else v for k, v in results["config"]["task"].items()})


def regime_rows(results: dict) -> list[dict]:
    """Per decay of the long-training grid: the decay budget Σ lr·λ, the arms' mean final train
    and test accuracy, and the paired comparisons that decide the CIFAR-10 claims there: the gain
    (Stiefel - AdamW), the cost of freezing (Stiefel - frozen), decay on W_Q, W_K (no_decay_qk -
    AdamW), and how many times less a Stiefel step moves W_Q, W_K than an AdamW step (the
    movement ratio, over every block's projections and the starts both finished).
    Chapters: CIFAR-10 patches, regimes."""
    task = task_of(results)
    factors = lr_factors(task)
    rows = []
    for decay in decays_of(results):
        arm = {name: grid_arm(name, "wd", decay) for name in ("baseline", "stiefel", "frozen", "no_decay_qk")}
        accuracy = {name: acc for name, key in arm.items() if (acc := _accuracy(results, key)) is not None}
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


def _cell(c: PairedComparison | None, verdict: bool = True) -> str:
    if c is None:
        return "-"
    cell = f"{c.mean_difference:+.2f} [{c.ci_low:+.2f}, {c.ci_high:+.2f}], {c.wins}/{c.n}"
    return f"{cell}: {direction(c)}" if verdict else cell


def regime_table(rows: list[dict], verdicts: bool = True) -> str:
    """:func:`regime_rows` as a Markdown table: per decay its budget, the accuracies reached
    (train / test, %), and each comparison in points with its 95 % interval, wins and (unless
    ``verdicts`` is false: the CIFAR-10 chapter reads them from its family) the retired rule's verdict.
    Chapters: CIFAR-10 patches, regimes."""

    def reached(row, arm):
        acc = row["accuracy"].get(arm)
        return "-" if acc is None else f"{acc['train_acc']:.1f} / {acc['test_acc']:.1f}"

    body = [
        [
            f"{r['weight_decay']:g}",
            f"{r['budget']:.3g}",
            reached(r, "baseline"),
            reached(r, "stiefel"),
            len(r["starts"]),
            _cell(r["gain"], verdicts),
            _cell(r["freezing_cost"], verdicts),
            _cell(r["decay_on_qk"], verdicts),
            "-" if r["movement_ratio"] is None else f"{r['movement_ratio']:.2f}x",
        ]
        for r in rows
    ]
    return markdown_table(
        [
            "λ",
            "Σ lr·λ",
            "AdamW train / test (%)",
            "Stiefel train / test (%)",
            "pairs",
            "Stiefel − AdamW (pp)",
            "Stiefel − frozen (pp)",
            "no decay on W_Q, W_K − AdamW (pp)",
            "AdamW step / Stiefel step",
        ],
        body,
    )


PREPRINT_STARTS = 12  # the preprint's paired starts, run at the decay of largest gap
FITS = 95.0  # final train accuracy (%) from which an arm fits its training set


def protocol_comparison(
    results: dict | None, a: str = "stiefel", b: str = "baseline", metric: str = "test_acc"
) -> tuple[float | None, PairedComparison | None]:
    """The preprint's protocol in the long regime: ``(decay, comparison)``, the paired gain
    ``a - b`` over every start both finished at :func:`largest_gap_decay` (chosen on starts 0-2
    alone); ``(None, None)`` until that decay can be chosen. Chapters: CIFAR-10 patches, regimes."""
    decay = largest_gap_decay(results, a, b, metric)
    return (None, None) if decay is None else (decay, paired_gain_at(results, decay, a, b, metric))


def widening(results: dict | None, a: str = "stiefel", b: str = "baseline", metric: str = "test_acc") -> dict | None:
    """Whether the gap widens with data in the size sweep at matched epochs: over the starts that
    finished both the smallest and the largest size, the paired comparison of the gain ``a - b``
    at the largest size against the gain at the smallest (``higher``: it widens). ``None`` with
    fewer than two such starts. Chapters: CIFAR-10 patches, regimes."""
    cells = size_gains(results, a, b, metric) if results and results.get("runs") else []
    if not cells:
        return None
    decay = cells[0]["weight_decay"]
    sizes = sorted({c["train_size"] for c in cells if c["weight_decay"] == decay})

    def gains(size: int) -> dict[int, float]:
        starts, x, y, _ = paired_gain(results, size_arm(a, decay, size), size_arm(b, decay, size), metric)
        return dict(zip(starts, x - y))

    small, large = gains(sizes[0]), gains(sizes[-1])
    common = sorted(set(small) & set(large))
    if len(sizes) < 2 or len(common) < 2:
        return None
    from ..stats import paired_comparison

    differences = [float(large[s] - small[s]) for s in common]
    c = paired_comparison([large[s] for s in common], [small[s] for s in common])
    return {
        "weight_decay": decay,
        "small": sizes[0],
        "large": sizes[-1],
        "n": len(common),
        "comparison": c,
        "verdict": direction(c),
        "differences": differences,
    }


def _regime(row: dict) -> str:
    acc = row["accuracy"]
    fits = ", ".join(
        f"{name} {acc[arm]['train_acc']:.1f} / {acc[arm]['test_acc']:.1f} %"
        for arm, name in (("baseline", "AdamW"), ("stiefel", "Stiefel"))
        if arm in acc
    )
    return f"100-epoch protocol at λ = {row['weight_decay']:g} (Σ lr·λ = {row['budget']:.3g}; train / test: {fits})"


_GAP_WITH_DATA = {"higher": "widens", "lower": "narrows"}  # the verdict of :func:`widening` in words


def claim_gain(results: dict | None, sizes: dict | None = None) -> str:
    """The claims table's long-protocol clause on the gain: the preprint's paired starts at the
    decay of largest gap (t, wins, interval, verdict) with its regime, and whether the gap widens
    with data at matched epochs. Chapter: intro."""
    decay, c = protocol_comparison(results)
    if c is None:
        return "long protocol: not yet measured (a decay lacks three paired starts)"
    row = next(r for r in regime_rows(results) if r["weight_decay"] == decay)
    line = (
        f"{_regime(row)}, {c.n} of {PREPRINT_STARTS} paired starts: Stiefel − AdamW {c.mean_difference:+.2f} pp "
        f"[{c.ci_low:+.2f}, {c.ci_high:+.2f}], t = {c.t_statistic:.2f}, {c.wins}/{c.n} ({direction(c)})"
    )
    wide = widening(sizes)
    if wide is None:
        return line + "; data size at matched epochs: not yet measured"
    w = wide["comparison"]
    return line + (
        f"; gain at {wide['large']:,} minus gain at {wide['small']:,} images (100 epochs each): "
        f"{w.mean_difference:+.2f} pp "
        f"[{w.ci_low:+.2f}, {w.ci_high:+.2f}], {w.n} starts ({_GAP_WITH_DATA.get(wide['verdict'], wide['verdict'])})"
    )


def claim_movement(results: dict | None) -> str:
    """The claims table's long-protocol clause on movement and freezing, at the decay of
    largest gap: how many times less a Stiefel step moves W_Q, W_K than an AdamW step, and the
    cost of freezing (Stiefel − frozen). Chapter: intro."""
    decay, c = protocol_comparison(results)
    if c is None:
        return "long protocol: not yet measured (a decay lacks three paired starts)"
    row = next(r for r in regime_rows(results) if r["weight_decay"] == decay)
    f = row["freezing_cost"]
    ratio = "-" if row["movement_ratio"] is None else f"{row['movement_ratio']:.2f}x"
    cost = (
        "untested"
        if f is None
        else f"{f.mean_difference:+.2f} pp [{f.ci_low:+.2f}, {f.ci_high:+.2f}], {f.n} starts ({direction(f)})"
    )
    return f"{_regime(row)}: an AdamW step moves W_Q, W_K {ratio} as far as a Stiefel step; Stiefel − frozen {cost}"


def _accuracy(results: dict, key: str) -> dict[str, float] | None:
    """Mean final train and test accuracy (%) of arm ``key``'s runs; ``None`` before its first."""
    runs = list(runs_of(results, key).values())
    return {m: 100 * float(np.mean([r["final"][m] for r in runs])) for m in ("train_acc", "test_acc")} if runs else None


def size_table(results: dict, verdicts: bool = True) -> str:
    """The size sweep at matched epochs as Markdown: per size, the arms' mean final train / test
    accuracy (%) and the paired gain Stiefel − AdamW with its interval, wins and (unless
    ``verdicts`` is false) the retired rule's verdict.
    Chapters: CIFAR-10 patches, regimes."""
    body = []
    for row in size_gains(results):
        decay, size = row["weight_decay"], row["train_size"]
        accuracy = (_accuracy(results, size_arm(arm, decay, size)) for arm in ("baseline", "stiefel"))
        reached = ["-" if acc is None else f"{acc['train_acc']:.1f} / {acc['test_acc']:.1f}" for acc in accuracy]
        body.append([f"{size:,}", f"{decay:g}", *reached, row["n"], _cell(row["comparison"], verdicts)])
    return markdown_table(
        ["images", "λ", "AdamW train / test (%)", "Stiefel train / test (%)", "pairs", "Stiefel − AdamW (pp)"], body
    )


def panel_table(results: dict | None, sizes: dict | None) -> str:
    """The regime map's CIFAR-10 panel as Markdown: the paired gain Stiefel − AdamW (pp, interval,
    wins, verdict) over decay (rows) × training-set size (columns), 100 epochs in every cell:
    ``cifar10_long`` gives the 10,000-image column at every decay, ``cifar10_size`` the sizes at
    its decay. A cell no run reached shows ``-``. Chapter: regimes."""
    cells: dict[tuple[float, int], PairedComparison | None] = {}
    if results and results.get("runs"):
        size = results["config"]["task"]["train_size"]
        for decay in decays_of(results):
            cells[(decay, size)] = paired_gain_at(results, decay)
    if sizes and sizes.get("runs"):
        for row in size_gains(sizes):
            cells.setdefault((row["weight_decay"], row["train_size"]), row["comparison"])
    decays, columns = sorted({d for d, _ in cells}), sorted({n for _, n in cells})
    body = [[f"{d:g}", *(_cell(cells[(d, n)]) if (d, n) in cells else "-" for n in columns)] for d in decays]
    return markdown_table(["λ", *(f"{n:,} images" for n in columns)], body)


def readings(results: dict) -> dict:
    """What the long grid says, by rules fixed before its runs: the gain's verdict at each decay
    where both arms fit their training set (final train accuracy ≥ :data:`FITS` %, ``"fitting"``)
    and where decay holds them below it (``"held"``); the 12-start protocol (decay, verdict,
    pairs); the movement ratio's range over the decays; per decay, the verdicts of the cost of
    freezing (Stiefel − frozen) and of decay on W_Q, W_K alone (no_decay_qk − AdamW).
    Chapter: CIFAR-10 patches."""
    rows = regime_rows(results)

    def fits(row) -> bool:
        acc = row["accuracy"]
        return all(arm in acc and acc[arm]["train_acc"] >= FITS for arm in ("baseline", "stiefel"))

    decay, twelve = protocol_comparison(results)
    ratios = [r["movement_ratio"] for r in rows if r["movement_ratio"] is not None]
    return {
        "fitting": {r["weight_decay"]: direction(r["gain"]) for r in rows if fits(r)},
        "held": {r["weight_decay"]: direction(r["gain"]) for r in rows if not fits(r)},
        "protocol": (decay, direction(twelve), 0 if twelve is None else twelve.n),
        "movement": (min(ratios), max(ratios)) if ratios else None,
        "freezing": {r["weight_decay"]: direction(r["freezing_cost"]) for r in rows},
        "decay_on_qk": {r["weight_decay"]: direction(r["decay_on_qk"]) for r in rows},
    }


def readings_text(r: dict) -> str:
    """:func:`readings` in words, one line each. Chapter: CIFAR-10 patches."""

    def per_decay(verdicts: dict) -> str:
        return ", ".join(f"λ = {d:g}: {v}" for d, v in verdicts.items()) or "none"

    decay, verdict, n = r["protocol"]
    move = "-" if r["movement"] is None else f"{r['movement'][0]:.2f}x to {r['movement'][1]:.2f}x"
    return "\n".join(
        [
            f"Stiefel − AdamW where both fit their training set (train ≥ {FITS:g} %): {per_decay(r['fitting'])}",
            f"Stiefel − AdamW where decay holds train accuracy below it: {per_decay(r['held'])}",
            "preprint's protocol: "
            + ("not yet run" if decay is None else f"λ = {decay:g}, {n} of {PREPRINT_STARTS} starts: {verdict}"),
            f"AdamW step / Stiefel step over the decays: {move}",
            f"Stiefel − frozen: {per_decay(r['freezing'])}",
            f"no decay on W_Q, W_K − AdamW: {per_decay(r['decay_on_qk'])}",
        ]
    )


def size_readings(sizes: dict) -> dict:
    """What the size sweep says, by the rules of :func:`readings`: per size, how many of the two
    arms fit their training set (mean final train accuracy ≥ :data:`FITS` %) and the gain's
    verdict; and the verdict of :func:`widening` (``None`` until two starts reach both ends).
    Chapters: CIFAR-10 patches, regimes."""
    rows, wide = size_gains(sizes), widening(sizes)

    def fitting_arms(decay: float, size: int) -> int:
        accuracy = (_accuracy(sizes, size_arm(arm, decay, size)) for arm in ("baseline", "stiefel"))
        return sum(acc is not None and acc["train_acc"] >= FITS for acc in accuracy)

    return {
        "gain": {r["train_size"]: direction(r["comparison"]) for r in rows},
        "fitting_arms": {r["train_size"]: fitting_arms(r["weight_decay"], r["train_size"]) for r in rows},
        "widening": None if wide is None else wide["verdict"],
    }


def size_readings_text(r: dict) -> str:
    """:func:`size_readings` in words, two lines. Chapters: CIFAR-10 patches, regimes."""
    per_size = (
        ", ".join(f"{n:,} images ({r['fitting_arms'][n]} of 2 arms fit): {v}" for n, v in r["gain"].items()) or "none"
    )
    return (
        f"Stiefel − AdamW by size at matched epochs: {per_size}\n"
        f"the gap with data (gain at the largest size − gain at the smallest): {r['widening'] or 'not yet measured'}"
    )


def departures_from_stated(results: dict, sizes: dict | None = None) -> list[str]:
    """The readings the CIFAR-10 and regimes chapters state in words, each that ``results`` does
    not bear out (empty: all hold), so that a run which changes a verdict fails the chapter
    instead of leaving its sentence wrong. Stated: both arms fit their training set at two
    decays and tie there; at every other decay they do not, and the Stiefel rule is behind; the
    preprint's protocol runs at the largest decay and is behind too; both arms reach their best
    test accuracy there; a Stiefel step moves W_Q, W_K within 25 % as far as an AdamW step;
    freezing the frames costs accuracy at the largest decay, nothing distinguishable at the
    smallest, and gains accuracy at every decay between; sparing W_Q, W_K the decay changes
    nothing distinguishable at any decay. With ``sizes`` (the size sweep, once it has a run), also: the Stiefel rule
    is ahead at no size; the gap narrows with data (the gain at the largest size is below the
    gain at the smallest, in pairs); both arms fit their training set at the smallest size and
    neither at the largest.
    Chapters: CIFAR-10 patches, regimes."""
    r, rows = readings(results), regime_rows(results)
    wrong = []
    if len(r["fitting"]) != 2 or set(r["fitting"].values()) != {"tie"}:
        wrong.append(f"both arms fit and tie at two decays: {r['fitting']}")
    if not r["held"] or set(r["held"].values()) != {"lower"}:
        wrong.append(f"Stiefel behind where decay holds train accuracy down: {r['held']}")
    if r["protocol"][1] != "lower" or r["held"] and r["protocol"][0] != max(r["held"]):
        wrong.append(f"the preprint's protocol runs at the largest decay and is behind: {r['protocol']}")
    for arm in ("baseline", "stiefel"):
        test_acc = {row["weight_decay"]: row["accuracy"].get(arm, {}).get("test_acc", 0.0) for row in rows}
        if not r["held"] or max(test_acc, key=test_acc.get) != max(r["held"]):
            wrong.append(f"{arm}'s best test accuracy at the largest decay: {test_acc}")
    if r["movement"] is None or not (0.8 < r["movement"][0] and r["movement"][1] < 1.25):
        wrong.append(f"AdamW step / Stiefel step within 0.8x-1.25x: {r['movement']}")
    freezing = r["freezing"]
    between = {d: v for d, v in freezing.items() if min(freezing) < d < max(freezing)}
    if (
        not freezing
        or freezing[max(freezing)] != "higher"
        or freezing[min(freezing)] != "tie"
        or set(between.values()) - {"lower"}
    ):
        wrong.append(
            f"Stiefel − frozen above zero at the largest decay, a tie at the smallest, below zero between: {freezing}"
        )
    if not r["decay_on_qk"] or set(r["decay_on_qk"].values()) != {"tie"}:
        wrong.append(f"no decay on W_Q, W_K ties AdamW at every decay: {r['decay_on_qk']}")
    if sizes and sizes.get("runs"):
        z = size_readings(sizes)
        if not z["gain"] or "higher" in z["gain"].values():
            wrong.append(f"the Stiefel rule ahead at no size: {z['gain']}")
        if z["widening"] != "lower":
            wrong.append(f"the gap narrows with data: {z['widening']}")
        fitting = z["fitting_arms"]
        if not fitting or fitting[min(fitting)] != 2 or fitting[max(fitting)] != 0:
            wrong.append(f"both arms fit at the smallest size, neither at the largest: {fitting}")
    return wrong
