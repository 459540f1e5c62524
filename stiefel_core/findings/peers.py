"""The Stiefel rule among its relatives (chapter "Among its relatives"): the learning rate each
arm's sweep chose, and the paired comparisons of the peers against the Stiefel rule and against
AdamW. Pure functions of the results dicts of ``grokking_peers_lr``, ``grokking_peers`` and
``cifar10_peers``."""

from __future__ import annotations

import numpy as np

from ..choices import SWEEP_CRITERION, chosen_lr, sweep_scores
from ..labels import label
from ..results_reading import arm_of

__all__ = [
    "sweep_scores",
    "chosen_lr",
    "SWEEP_CRITERION",  # the rule's home is choices.py; the chapter reads them here
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


# --- the comparison --------------------------------------------------------------------------

ARMS = ("baseline", "stiefel", "muon", "muon_no_decay", "geoopt_radam", "per_entry", "orthogonal_param")  # the
# chapter's order: experiments.peers.PEER_ARMS (a test holds them equal; this module loads no torch)
PEERS = ("per_entry", "muon", "muon_no_decay", "geoopt_radam", "orthogonal_param")
REFERENCES = ("stiefel", "baseline")
INGREDIENTS = (  # (a, b, what a − b isolates)
    ("stiefel", "per_entry", "scalar (per-frame) against per-entry second moments, the rest of the rule the same"),
    (
        "stiefel",
        "geoopt_radam",
        "the Stiefel rule against the standard Riemannian Adam (canonical metric, Cayley retraction, no trust region)",
    ),
    ("muon", "baseline", "orthogonalised updates on unconstrained weights against AdamW (both decayed)"),
    ("stiefel", "muon_no_decay", "a constraint on the weights against orthogonal updates alone, neither decayed"),
    ("muon_no_decay", "muon", "weight decay off an orthogonal-update optimizer's W_Q, W_K"),
    ("orthogonal_param", "baseline", "the constraint by parametrization, stepped by AdamW, against AdamW"),
    ("stiefel", "orthogonal_param", "the Stiefel rule against the same constraint stepped through a parametrization"),
)


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


READINGS = {  # (a, b) of INGREDIENTS -> what each verdict of a − b says
    ("stiefel", "per_entry"): {
        "higher": "the scalar (per-frame) second moment matters: per-entry moments cost accuracy",
        "lower": "per-entry moments help: the scalar moment is not what earns the rule's result",
        "tie": "scalar or per-entry moments: no measurable difference here",
    },
    ("stiefel", "geoopt_radam"): {
        "higher": "the Stiefel rule beats the standard Riemannian Adam on the same constraint",
        "lower": "the standard Riemannian Adam beats the Stiefel rule on the same constraint",
        "tie": "the Stiefel rule and the standard Riemannian Adam: no measurable difference",
    },
    ("muon", "baseline"): {
        "higher": "orthogonalised updates alone beat AdamW",
        "lower": "orthogonalised updates alone do worse than AdamW",
        "tie": "orthogonalised updates alone: no measurable difference from AdamW",
    },
    ("stiefel", "muon_no_decay"): {
        "higher": "the constraint on the weights matters beyond orthogonal updates",
        "lower": "orthogonal updates without the constraint do better than the constrained rule",
        "tie": "constraint on the weights or orthogonal updates alone: no measurable difference",
    },
    ("muon_no_decay", "muon"): {
        "higher": "decay on Muon's unconstrained W_Q, W_K costs accuracy",
        "lower": "decay on Muon's W_Q, W_K helps",
        "tie": "decay on Muon's W_Q, W_K: no measurable effect",
    },
    ("orthogonal_param", "baseline"): {
        "higher": "the constraint alone, stepped by AdamW through a parametrization, beats AdamW",
        "lower": "the constraint by parametrization does worse than AdamW",
        "tie": "the constraint by parametrization: no measurable difference from AdamW",
    },
    ("stiefel", "orthogonal_param"): {
        "higher": "how the constrained step is taken matters: the Stiefel rule beats the parametrization",
        "lower": "the parametrization beats the Stiefel rule on the same constraint",
        "tie": "the Stiefel rule or the parametrization: no measurable difference",
    },
}


def reading(row: dict) -> str:
    """What one :func:`ingredient_rows` row says, by the fixed rule of :data:`READINGS`."""
    if row["verdict"] == "untested":
        n = row["comparison"].n if row["comparison"] is not None else 0
        return f"untested ({n} paired seed(s); a verdict needs 3)"
    return READINGS[(row["a"], row["b"])][row["verdict"]]


# --- the declared families, four words (book/protocol.yml: grokking_fair, peers_grokking, peers_cifar10) -----

TUNED_PEERS = (*PEERS, "cayley_adam")  # the relatives judged at their tuned W_Q, W_K lrs (grokking_fair_peers)


def merged(*results: dict | None) -> dict:
    """The runs of several files of one comparison (same seeds, same initial weights) as one
    results dict, the first file's config kept."""
    present = [r for r in results if r]
    return {
        "config": present[0]["config"] if present else {},
        "runs": {k: v for r in present for k, v in r["runs"].items()},
    }


def family_peer_rows(rows: list[dict], results: dict | None = None, peers: tuple[str, ...] = PEERS) -> list[dict]:
    """Each peer − each reference (the Stiefel rule, AdamW) read from a family's rows
    (:func:`fair_fight.family_rows`: four words, Holm across the family), in the chapter's order;
    with ``results``, the Kaplan-Meier median epochs to 90 % of both arms over the same seeds
    (described, not tested). A pair the family lacks is left out."""
    from . import tuned
    from .regimes import paired_seeds, survival

    out = []
    for peer in peers:
        for ref in REFERENCES:
            row = tuned.find(rows, peer, ref)
            if row is None:
                continue
            if results is not None:
                seeds = paired_seeds(results, peer, ref)
                row = {
                    **row,
                    "median": survival(results, peer, 0.9, seeds).median,
                    "reference_median": survival(results, ref, 0.9, seeds).median,
                }
            out.append(row)
    return out


_FAMILY_READINGS = {  # (a, b) of INGREDIENTS -> what "equivalent" says (higher and lower: READINGS)
    ("stiefel", "per_entry"): "scalar or per-entry second moments: equivalent here",
    ("stiefel", "geoopt_radam"): "the Stiefel rule and the standard Riemannian Adam: equivalent here",
    ("muon", "baseline"): "orthogonalised updates alone and AdamW: equivalent here",
    ("stiefel", "muon_no_decay"): "the constraint on the weights and orthogonal updates alone: equivalent here",
    ("muon_no_decay", "muon"): "decay on Muon's W_Q, W_K: no effect beyond the margin",
    ("orthogonal_param", "baseline"): "the constraint by parametrization and AdamW: equivalent here",
    ("stiefel", "orthogonal_param"): "the Stiefel rule and the parametrization: equivalent here",
}


def family_ingredient_rows(rows: list[dict]) -> list[dict]:
    """:data:`INGREDIENTS` read from a family's rows (``row`` ``None`` where the family does not
    hold that comparison: it is outside the declared family and gets no verdict)."""
    from . import tuned

    return [{"a": a, "b": b, "meaning": meaning, "row": tuned.find(rows, a, b)} for a, b, meaning in INGREDIENTS]


def family_reading(row: dict, label) -> str:
    """What one :func:`family_ingredient_rows` row says: higher and lower by :data:`READINGS`,
    equivalent by its own sentence, inconclusive as "these runs cannot tell"."""
    r = row["row"]
    if r is None:
        return "outside the declared family: no verdict"
    if r["verdict"] in ("higher", "lower"):
        return READINGS[(row["a"], row["b"])][r["verdict"]]
    if r["verdict"] == "equivalent":
        return _FAMILY_READINGS[(row["a"], row["b"])]
    return f"inconclusive: these runs cannot tell {label(row['a'])} from {label(row['b'])}"


def comparison_cells(row: dict, digits: int = 1) -> list[str]:
    """A family row as table cells: difference, interval, Holm p, verdict, seeds past 90 %."""
    lo, hi = row["ci_pp"]
    return [
        f"{row['mean_pp']:+.{digits}f}",
        f"[{lo:+.{digits}f}, {hi:+.{digits}f}]",
        f"{row['p_holm']:.2g}",
        row["verdict"],
        f"{row['past'][0]} / {row['past'][1]}",
    ]


def what_changed(before: list[dict], now: list[dict], label, task: str) -> list[str]:
    """Each peer's verdict that changed between ``before`` (the untuned runs' rows, read by the
    retired rule) and ``now`` (the family's rows at the tuned lrs), one line each."""
    from . import tuned

    pairs = [
        (f"{task}: {label(r['arm'])} − {label(r['reference'])}", r, tuned.find(now, r["arm"], r["reference"]))
        for r in before
    ]
    return tuned.changed(pairs)


def takeaways(rows: list[dict], lrs: dict[str, float], label, margin_pp: float) -> list[str]:
    """The chapter's key takeaways from the tuned family's peer rows (:func:`family_peer_rows`)."""
    from . import fair_fight, tuned

    if not rows:
        return ["The relatives' runs at their tuned learning rates have not run yet."]
    out = [
        "Every relative trained W_Q, W_K at its own learning rate, chosen on selection seeds by a rule fixed "
        "before the sweep: "
        + ", ".join(
            f"{label(a)} {fair_fight.lr_text(lrs[a])}" for a in ("stiefel", "baseline", *TUNED_PEERS) if a in lrs
        )
        + "."
    ]
    against = [r for r in rows if r["reference"] == "stiefel"]
    counts = {w: sum(r["verdict"] == w for r in against) for w in ("higher", "lower", "equivalent", "inconclusive")}
    out.append(
        f"Against the Stiefel rule ({len(against)} relatives, 20 seeds, Holm across the family): "
        f"{counts['higher']} higher, {counts['lower']} lower, {counts['equivalent']} equivalent "
        f"(within ±{margin_pp:g} pp), {counts['inconclusive']} inconclusive."
    )
    out += [tuned.beats(r, label, margin_pp) + "." for r in rows if r["verdict"] in ("higher", "lower")]
    return out


def family_claim(grokking: list[dict], cifar10: list[dict]) -> str:
    """The claims table's line from the families' peer rows (:func:`family_peer_rows`): on grokking
    at every arm's tuned W_Q, W_K lr (``grokking_fair``) and on CIFAR-10 (``peers_cifar10``), each
    relative − the Stiefel rule in the family's word, and the count of each word."""
    from ..labels import label

    def line(rows: list[dict], digits: int) -> str:
        against = [r for r in rows if r["reference"] == "stiefel"]
        parts = [f"{label(r['arm'])} {r['verdict']} ({_numbers(r, digits)})" for r in against]
        counts = ", ".join(f"{w} {sum(r['verdict'] == w for r in against)}" for w in _FOUR)
        return "; ".join(parts) + f" (of {len(against)}: {counts})"

    out = []
    if grokking:
        out.append(
            "grokking (p = 31, 1,500 epochs), each relative − the Stiefel rule at its tuned W_Q, W_K lr, 20 paired "
            "seeds, Holm across the family grokking_fair: " + line(grokking, 1)
        )
    if cifar10:
        out.append(
            "CIFAR-10 (the long protocol, λ = 1, 3 paired starts), each relative − the Stiefel rule, Holm across the "
            "family peers_cifar10: " + line(cifar10, 2)
        )
    return "; ".join(out) or "not yet measured (no run at the tuned lrs)"


_FOUR = ("higher", "lower", "equivalent", "inconclusive")


def _numbers(row: dict, digits: int) -> str:
    lo, hi = row["ci_pp"]
    return f"{row['mean_pp']:+.{digits}f} pp [{lo:+.{digits}f}, {hi:+.{digits}f}]"
