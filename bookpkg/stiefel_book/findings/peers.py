"""The Stiefel rule among its relatives (chapter "Among its relatives"): the learning rate each
arm's sweep chose, and the paired comparisons of the peers against the Stiefel rule and against
AdamW. Pure functions of the results dicts of ``grokking_peers_lr``, ``grokking_peers`` and
``cifar10_peers``. The arms and what each comparison means live in :mod:`.peer_readings`, the
reading under the declared families in :mod:`.peers_family`; the chapter reads all of it here."""

from __future__ import annotations

import numpy as np

from ..choices import SWEEP_CRITERION, chosen_lr, sweep_scores
from ..labels import label
from ..results_reading import arm_of
from .peer_readings import (
    ARMS,
    FAMILY_READINGS,
    INGREDIENTS,
    PEERS,
    READINGS,
    REFERENCES,
    TUNED_PEERS,
    family_reading,
    reading,
)
from .peers_family import (
    comparison_cells,
    family_claim,
    family_ingredient_rows,
    family_peer_rows,
    merged,
    takeaways,
    what_changed,
)

__all__ = [
    "sweep_scores",
    "chosen_lr",
    "SWEEP_CRITERION",  # the rule's home is choices.py; the chapter reads them here
    # from peer_readings and peers_family, read here by the chapter:
    "ARMS",
    "REFERENCES",
    "FAMILY_READINGS",
    "family_claim",
    "sweep_rows",
    "PEERS",
    "INGREDIENTS",
    "arms_in",
    "peer_rows",
    "ingredient_rows",
    "READINGS",
    "reading",
    "movement_rows",
    "movement_series",
    "lr_consistent",
    "claim",
    "cifar_accuracy_rows",
    "cifar_regime",
    "cifar_claim",
    "TUNED_PEERS",
    "merged",
    "family_peer_rows",
    "family_ingredient_rows",
    "family_reading",
    "comparison_cells",
    "what_changed",
    "takeaways",
]


def sweep_rows(sweep: dict) -> list[dict]:
    """One row per swept arm: its mean score at each lr and the lr chosen (``None`` while the
    arm's sweep is incomplete)."""
    rows = []
    for arm in sweep["config"]["arms"]:
        scores = sweep_scores(sweep, arm)
        try:
            chosen = chosen_lr(sweep, arm)
        except ValueError:
            chosen = None
        rows.append(
            {
                "arm": arm,
                "scores": {lr: float(np.mean(v)) if v else None for lr, v in scores.items()},
                "chosen": chosen,
                "edge": chosen is not None and chosen in (min(scores), max(scores)),
            }
        )
    return rows


def arms_in(results: dict | None) -> list[str]:
    """The arms of ``results`` that finished at least one run, in the chapter's order."""
    present = {arm_of(key) for key in (results or {}).get("runs", {})}
    return [arm for arm in ARMS if arm in present]


def peer_rows(results: dict, threshold: float | None = 0.9, metric: str = "val_acc") -> list[dict]:
    """One row per peer and reference (``stiefel``, ``baseline``): the final ``metric``'s paired
    comparison peer − reference (pp), its verdict (``stats.direction``), and, unless
    ``threshold`` is ``None``, time to ``threshold`` as censored data: the Kaplan-Meier medians
    and the log-rank p over the pairs."""
    from ..stats import direction
    from .regimes import endpoint_comparison, logrank, paired_seeds, survival

    rows = []
    for peer in PEERS:
        for ref in REFERENCES:
            seeds = paired_seeds(results, peer, ref)
            c = endpoint_comparison(results, peer, ref, metric=metric)
            row = {"peer": peer, "reference": ref, "n": len(seeds), "comparison": c, "verdict": direction(c)}
            if threshold is not None and len(seeds) >= 2:
                a, b = survival(results, peer, threshold, seeds), survival(results, ref, threshold, seeds)
                with np.errstate(invalid="ignore", divide="ignore"):  # identical times: no variance, p is nan
                    p = logrank(results, peer, ref, threshold, seeds)[1]
                row.update(
                    median=a.median,
                    reference_median=b.median,
                    never=a.censored,
                    reference_never=b.censored,
                    logrank_p=p,
                )
            rows.append(row)
    return rows


def ingredient_rows(results: dict, metric: str = "val_acc") -> list[dict]:
    """:data:`INGREDIENTS` that the file holds: each comparison a − b of the final ``metric``, its verdict."""
    from ..stats import direction
    from .regimes import endpoint_comparison

    rows = []
    for a, b, meaning in INGREDIENTS:
        c = endpoint_comparison(results, a, b, metric=metric)
        rows.append({"a": a, "b": b, "meaning": meaning, "comparison": c, "verdict": direction(c)})
    return rows


def movement_rows(results: dict) -> list[dict]:
    """Per arm, over its runs, the means at the last record of: the mean principal angle of W_Q's
    heads to their start (degrees), the bilinear form's change ``qk_change_mean``, ``‖W_Q‖_F``,
    and the worst ``‖W_Qᵀ W_Q − I‖_F`` (NaN where a run predates that log)."""
    from .regimes import runs_of

    rows = []
    for arm in arms_in(results):
        last = [run["history"][-1] for run in runs_of(results, arm).values()]
        mean = lambda key: float(np.mean([r.get(key, np.nan) for r in last]))  # noqa: E731
        rows.append(
            {
                "arm": arm,
                "n": len(last),
                "angle": mean("angle_mean/W_Q"),
                "qk_change": mean("qk_change_mean/attn"),
                "norm": mean("norm/attn.W_Q"),
                "ortho": float(np.max([r.get("ortho/W_Q", np.nan) for r in last])),
            }
        )
    return rows


def lr_consistent(results: dict, sweep: dict) -> bool:
    """Whether every run of ``results`` that records a ``frame_lr`` ran at the lr the sweep
    chooses for its arm now (a sweep changed after the runs would break this)."""
    for key, run in results.get("runs", {}).items():
        if "frame_lr" in run and run["frame_lr"] != chosen_lr(sweep, arm_of(key)):
            return False
    return True


def _interval(c) -> str:
    return f"{c.mean_difference:+.1f} pp [{c.ci_low:+.1f}, {c.ci_high:+.1f}]"


WORDS = {"higher": "ahead", "lower": "behind", "tie": "tied", "untested": "too few seeds"}


def _against_stiefel(results: dict, metric: str) -> tuple[list[str], str, str] | None:
    """Each peer's final ``metric`` minus the Stiefel rule's (interval and verdict), the count of
    peers ahead and behind, and the paired seeds' range; ``None`` before any comparison exists."""
    from ..stats import direction
    from .regimes import endpoint_comparison, paired_seeds

    comparisons = {peer: endpoint_comparison(results, peer, "stiefel", metric=metric) for peer in PEERS}
    parts = [
        f"{label(peer)} {_interval(c)} ({WORDS[direction(c)]})" for peer, c in comparisons.items() if c is not None
    ]
    if not parts:
        return None
    verdicts = [direction(c) for c in comparisons.values()]
    ahead, behind = verdicts.count("higher"), verdicts.count("lower")
    n = [len(paired_seeds(results, peer, "stiefel")) for peer in PEERS]
    seeds = f"{min(n)}" if min(n) == max(n) else f"{min(n)}-{max(n)}"
    return (
        parts,
        f"{ahead} peer(s) ahead of the Stiefel rule, {behind} behind, {len(PEERS) - ahead - behind} tied or untested",
        seeds,
    )


def claim(results: dict | None) -> str:
    """One line for the claims table: each peer's final validation accuracy against the Stiefel
    rule (pp, 95 % interval, verdict), over the seeds every arm finished, and the regime."""
    from .regimes import decay_budget, grokking_lr_factors, paired_seeds

    if not results or not results.get("runs"):
        return "not yet measured (no finished full run)"
    measured = _against_stiefel(results, "val_acc")
    if measured is None:
        return f"not yet measured ({len(paired_seeds(results, 'stiefel', *PEERS))} seed(s) with every arm finished)"
    parts, verdict, n = measured
    c = results["config"]["task"]
    budget = decay_budget(c["lr"], c["weight_decay"], grokking_lr_factors(c["warmup_epochs"], c["epochs"]))
    return (
        f"grokking (p = {c['p']}, Σ lr·λ = {budget:.3g}, {c['epochs']:,} epochs), each peer minus the Stiefel rule at "
        "its swept lr, "
        f"final val. acc., {n} paired seeds: " + "; ".join(parts) + f"; {verdict}"
    )


def cifar_accuracy_rows(results: dict) -> list[dict]:
    """Per arm of ``cifar10_peers``: its finished starts, mean final train and test accuracy (%),
    and the W_Q, W_K lr it ran at (the task's lr for AdamW): how far each arm fit its data."""
    from .regimes import runs_of

    rows = []
    for arm in arms_in(results):
        runs = list(runs_of(results, arm).values())
        rows.append(
            {
                "arm": arm,
                "n": len(runs),
                "frame_lr": runs[0].get("frame_lr", results["config"]["task"]["lr"]),
                **{m: 100 * float(np.mean([r["final"][m] for r in runs])) for m in ("train_acc", "test_acc")},
            }
        )
    return rows


def cifar_regime(results: dict) -> str:
    """The regime of ``cifar10_peers``: images, epochs, λ, the decay budget Σ lr·λ and the
    accuracy the Stiefel rule and AdamW reached (train / test, %)."""
    from ..experiments.cifar10_config import lr_factors
    from .long_training import task_of
    from .regimes import decay_budget

    task = task_of(results)
    reached = {r["arm"]: f"{r['train_acc']:.1f} / {r['test_acc']:.1f} %" for r in cifar_accuracy_rows(results)}
    fits = ", ".join(f"{arm} {reached[arm]}" for arm in ("baseline", "stiefel") if arm in reached)
    return (
        f"CIFAR-10 ({task.train_size:,} images, {task.epochs} epochs, λ = {task.weight_decay:g}, "
        f"Σ lr·λ = {decay_budget(task.lr, task.weight_decay, lr_factors(task)):.3g}; train / test: {fits})"
    )


def cifar_claim(results: dict | None) -> str:
    """The claims table's CIFAR-10 clause: each peer's final test accuracy against the Stiefel
    rule in the long protocol, with its regime (:func:`cifar_regime`)."""
    measured = _against_stiefel(results, "test_acc") if results and results.get("runs") else None
    if measured is None:
        return (
            "CIFAR-10 in the long protocol: not yet measured (fewer than two starts with a peer and the Stiefel rule)"
        )
    parts, verdict, n = measured
    return f"{cifar_regime(results)}, final test acc., {n} paired starts: " + "; ".join(parts) + f"; {verdict}"


def movement_series(results: dict) -> dict[str, dict[str, np.ndarray]]:
    """Per arm, at every logged epoch: the mean over its runs of W_Q's mean principal angle to
    its start (``angle``, degrees) and the largest orthonormality error (``ortho``)."""
    from .regimes import runs_of

    out = {}
    for arm in arms_in(results):
        histories = [run["history"] for run in runs_of(results, arm).values()]
        n = min(len(h) for h in histories)
        out[arm] = {
            "epoch": np.array([h["epoch"] for h in histories[0][:n]]),
            "angle": np.array([np.mean([h[i]["angle_mean/W_Q"] for h in histories]) for i in range(n)]),
            "ortho": np.array([np.max([h[i].get("ortho/W_Q", np.nan) for h in histories]) for i in range(n)]),
        }
    return out
