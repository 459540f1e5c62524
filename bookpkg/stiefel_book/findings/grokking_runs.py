"""What the grokking runs show, before any verdict (the grokking chapter): validation accuracy at
the horizon per seed and arm, what one run's log says (grokking epoch, loss spikes, relapses) and
what happened to the frames. Pure functions of the ``grokking`` results dicts and histories they
are handed; :mod:`.grokking` reads them into verdicts."""

from __future__ import annotations

import numpy as np

from .. import preprint
from ..labels import label
from ..results_reading import arm_of
from ..stats import mean_and_spread, paired_comparison
from ..tables import Table

ARMS = ("baseline", "stiefel")  # experiments.grokking.ARMS (a test holds them equal; this module loads no torch)

__all__ = [
    "ARMS",
    "endpoint_accuracies",
    "report",
    "largest_spike",
    "run_summary",
    "runs_table",
    "frame_table",
]


def endpoint_accuracies(results: dict, epoch: int | None = None) -> dict[str, dict[int, float]]:
    """Validation accuracy per arm and seed at ``epoch`` (default: each run's last record). Chapter: grokking."""
    table: dict[str, dict[int, float]] = {}
    for key, run in sorted(results["runs"].items()):
        arm, seed = key.split("/")
        records = [r for r in run["history"] if epoch is None or r["epoch"] == epoch]
        if records:
            table.setdefault(arm, {})[int(seed)] = records[-1]["val_acc"]
    return table


def report(results: dict | None, epoch: int = 20_000) -> str:
    """Validation accuracy at ``epoch`` per seed and arm, their mean and spread, the paired
    difference where both arms finished a seed, and the preprint's single run beside them.
    Chapter: grokking."""
    if not results or not results.get("runs"):
        return "No run of this profile has finished yet: the results file is missing or empty."
    table = endpoint_accuracies(results, epoch)
    finished = sum(arm_of(key) in ARMS for key in results["runs"])
    lines = [f"validation accuracy at epoch {epoch:,} ({finished} finished runs of {' and '.join(ARMS)})"]
    for arm in ARMS:
        per_seed = table.get(arm, {})
        cells = ", ".join(f"seed {s}: {100 * a:.1f}%" for s, a in sorted(per_seed.items())) or "none finished"
        lines.append(f"  {arm:8s} {cells}")
        if len(per_seed) >= 2:
            spread = mean_and_spread([100 * a for a in per_seed.values()])
            lines.append(
                f"  {'':8s} mean {spread.mean:.1f}%, std {spread.std:.1f}, range {spread.min:.1f}-{spread.max:.1f}% (n "
                f"= {spread.n})"
            )
        lines.append(f"  {'':8s} preprint (one run): {100 * preprint.GROKKING[arm]:.1f}%")
    paired = sorted(set(table.get("stiefel", {})) & set(table.get("baseline", {})))
    if len(paired) >= 2:
        c = paired_comparison([100 * table["stiefel"][s] for s in paired], [100 * table["baseline"][s] for s in paired])
        lines.append(
            f"  stiefel - baseline over {c.n} paired seeds: {c.mean_difference:+.1f} pp, 95% CI [{c.ci_low:+.1f}, "
            f"{c.ci_high:+.1f}], wins {c.wins}/{c.n}"
        )
    return "\n".join(lines)


def largest_spike(history: list[dict], key: str = "train_loss") -> int:
    """The epoch at which ``key`` jumps most (relative to the record before): a collapse. Chapter: grokking."""
    best, at = 0.0, history[len(history) // 2]["epoch"]
    for before, now in zip(history, history[1:]):
        jump = now[key] / max(before[key], 1e-12)
        if jump > best:
            best, at = jump, now["epoch"]
    return at


def run_summary(history: list[dict], threshold: float = 0.9, spike_factor: float = 10.0) -> dict:
    """What one run's log says about grokking and collapse: the first epoch at which validation
    accuracy reaches ``threshold`` (``None`` if never), the lowest validation accuracy after
    that epoch (a relapse), the number of logged training-loss spikes (a record at least
    ``spike_factor`` times the one before), and over the last quarter of training the lowest
    validation accuracy and the share of records at or above ``threshold``.
    Chapter: grokking."""
    last = [r for r in history if r["epoch"] >= 0.75 * history[-1]["epoch"]]
    grokked_at = next((r["epoch"] for r in history if r["val_acc"] >= threshold), None)
    return {
        "grokked_at": grokked_at,
        "after_grokking_min": None
        if grokked_at is None
        else min(r["val_acc"] for r in history if r["epoch"] >= grokked_at),
        "spikes": sum(b["train_loss"] >= spike_factor * a["train_loss"] for a, b in zip(history, history[1:])),
        "final_val_acc": history[-1]["val_acc"],
        "last_quarter_min": min(r["val_acc"] for r in last),
        "last_quarter_held": sum(r["val_acc"] >= threshold for r in last) / len(last),
    }


def runs_table(results: dict | None, arms: tuple[str, ...] = ARMS) -> Table:
    """One row per run of ``arms`` in a results file: :func:`run_summary` of its log, in percent. Chapter: grokking."""
    rows = []
    for key, run in sorted((results or {}).get("runs", {}).items()):
        if key.split("/")[0] not in arms:
            continue
        x = run_summary(run["history"])
        arm, _, seed = key.partition("/")
        rows.append(
            [
                f"{label(arm, capital=True)}, seed {seed}",
                f"{x['grokked_at']:,}" if x["grokked_at"] is not None else "never",
                f"{100 * x['after_grokking_min']:.1f}" if x["after_grokking_min"] is not None else "-",
                x["spikes"],
                f"{100 * x['final_val_acc']:.1f}",
                f"{100 * x['last_quarter_min']:.1f}",
                f"{100 * x['last_quarter_held']:.0f}",
            ]
        )
    headers = [
        "run",
        "90 % at epoch",
        "lowest after (%)",
        "loss spikes",
        "final val. acc. (%)",
        "lowest, last quarter (%)",
        "last quarter ≥ 90 % (% of records)",
    ]
    return Table(headers, rows, "lrrrrrr")


def frame_table(results: dict | None) -> Table:
    """What happened to W_Q and W_K in each arm, over every seed of a results file: the range of
    their Frobenius norms over the whole log, and their mean principal angle to initialisation at
    the end (mean and largest over seeds). Proposition 5 predicts a constant norm for frames."""
    rows = []
    for arm in ARMS:
        runs = [
            run["history"] for key, run in sorted((results or {}).get("runs", {}).items()) if key.startswith(arm + "/")
        ]
        if not runs:
            continue
        for w in ("W_Q", "W_K"):
            norms = [r[f"norm/attn.{w}"] for h in runs for r in h]
            angles = [h[-1][f"angle_mean/{w}"] for h in runs]
            rows.append(
                [
                    f"{label(arm, capital=True)} ({len(runs)} seed{'s' if len(runs) > 1 else ''})",
                    w,
                    f"{min(norms):.3f}",
                    f"{max(norms):.3f}",
                    f"{np.mean(angles):.1f}",
                    f"{max(angles):.1f}",
                ]
            )
    return Table(
        ["arm", "projection", "‖W‖_F lowest", "‖W‖_F highest", "angle to init at the end (deg), mean", "largest"],
        rows,
        "llrrrr",
    )
