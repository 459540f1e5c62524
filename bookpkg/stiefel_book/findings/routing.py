"""Where attention must learn to route (chapter "routing"): MQAR, induction heads and a character
language model, each arm at its swept W_Q, W_K lr. Pure functions of the results dicts of ``mqar``,
``induction``, ``charlm`` (the judged runs), their sweeps and ``induction_decay_map``, read under
the families ``routing_mqar``, ``routing_induction`` and ``routing_charlm`` of ``book/protocol.yml``.

An endpoint's verdict word compares the metric itself: on induction (loss) and the language model
(bits per character), *lower* is the better arm; on MQAR (accuracy), *higher*. The verdicts,
counts and notes in words, and the summary across the tasks, are :mod:`stiefel_book.wording.routing`.
"""

from __future__ import annotations

import numpy as np

from ..choices import late_scores, metric_sign, sweep_row
from ..families import Row, find
from ..protocol_fields import Endpoint
from ..results_reading import finals
from .advice import TASKS as PHRASES

__all__ = ["TASKS", "TASK_NAMES", "TASK_PHRASES", "SWEPT", "JUDGED_ARMS", "Endpoint", "finals"]
__all__ += ["as_rows", "answers", "sanity", "curves", "lr_decay_cells", "judged_first"]
__all__ += ["committed_cells", "cell_curves", "sweep_rows"]
__all__ += ["past", "soft_solvers", "at_ceiling", "under_margin"]

TASK_NAMES = {"mqar": "Associative recall (MQAR)", "induction": "Induction heads", "charlm": "The character model"}
TASK_PHRASES = {task: PHRASES[task] for task in TASK_NAMES}  # a task named inside a sentence
SWEPT = ("baseline", "stiefel", "no_decay_qk", "qk_norm", "muon")  # the arms each task's sweep tunes
JUDGED_ARMS = ("baseline", "stiefel", "frozen", "no_decay_qk", "qk_norm", "muon")


TASKS = {  # task -> (its family in book/protocol.yml, its endpoint as that family declares it: a test holds them equal)
    "mqar": ("routing_mqar", Endpoint("val_acc", "final", "paired_t", "pp", 100.0, True)),
    "induction": ("routing_induction", Endpoint("val_loss", "final", "paired_t", "nats per token", 1.0, False)),
    "charlm": ("routing_charlm", Endpoint("val_bpc", "final", "paired_t", "bits per character", 1.0, False)),
}


def as_rows(rows: list[Row]) -> list[dict]:
    """The reader's rows (:func:`families.read_family`) as this chapter's sentences read them, those
    with paired seeds only (the others have not run): ``arm``, ``reference``, ``n``, ``mean`` (the
    paired difference), ``ci`` (its t interval), ``p_holm``, ``verdict`` and ``reading`` (better,
    worse or the verdict)."""
    return [
        {
            "arm": r.arm,
            "reference": r.reference,
            "n": r.n,
            "mean": r.difference,
            "ci": r.interval,
            "p_holm": r.p_corrected,
            "verdict": r.verdict,
            "reading": r.reading,
        }
        for r in rows
        if r.n
    ]


def answers(rows: list[dict]) -> dict[str, dict | None]:
    """The chapter's three questions per task, each one row (``None`` before its runs): does the
    Stiefel rule beat the tuned baseline; does scale alone (QK-norm) do the same; do frozen
    frames fall short of trained ones (the sanity check)."""
    return {
        "tuned_baseline": find(rows, "stiefel", "baseline"),
        "qk_norm": find(rows, "qk_norm", "stiefel"),
        "frozen": find(rows, "frozen", "stiefel"),
    }


def sanity(row: dict | None) -> str:
    """The sanity check's state from frozen − stiefel: "holds" (frozen frames clearly worse),
    "fails" (equivalent or better: the task is too easy to test routing), "not shown" (inconclusive:
    too few seeds to tell) or "not yet run"."""
    if row is None:
        return "not yet run"
    return {"worse": "holds", "inconclusive": "not shown"}.get(row["reading"], "fails")


def curves(results: dict | None, metric: str) -> dict[str, dict]:
    """Per arm: ``steps``, the ``mean`` of ``metric`` over seeds at each logged step, and its
    band (``low``, ``high``: the smallest and largest seed) and each seed's values (``seeds``), over
    the seeds that logged every step."""
    by_arm: dict[str, list[list[dict]]] = {}
    for key, run in (results or {}).get("runs", {}).items():
        by_arm.setdefault(key.rpartition("/")[0], []).append([r for r in run["history"] if metric in r])
    out = {}
    for arm, histories in by_arm.items():
        length = min(len(h) for h in histories)
        values = np.array([[r[metric] for r in h[:length]] for h in histories])
        out[arm] = {
            "steps": [r["epoch"] for r in histories[0][:length]],
            "mean": values.mean(axis=0).tolist(),
            "low": values.min(axis=0).tolist(),
            "high": values.max(axis=0).tolist(),
            "n": len(histories),
            "seeds": values.tolist(),
        }
    return out


def lr_decay_cells(*files: dict | None) -> dict[tuple[float, float], dict[str, list[list[dict]]]]:
    """``{(W_Q, W_K lr, λ): {arm: [history per seed]}}`` over any of a task's files (its sweep, its
    judged runs, its decay map): a run's lr is the one it recorded (frozen frames: 0), its λ the
    one it recorded or else its file's task's. A seed counts once in a cell (the first file's run)."""
    cells: dict = {}
    for results in files:
        if not results:
            continue
        config = results["config"]
        task = config.get("task", config)
        for key, run in results["runs"].items():
            name, _, seed = key.rpartition("/")
            arm = name.partition("@")[0]
            lr = 0.0 if arm == "frozen" else float(run["qk_lr"])
            decay = float(run.get("weight_decay", task["weight_decay"]))
            cells.setdefault((lr, decay), {}).setdefault(arm, {}).setdefault(seed, run["history"])
    return {cell: {arm: list(seeds.values()) for arm, seeds in arms.items()} for cell, arms in sorted(cells.items())}


def judged_first(sweep: dict | None, *judged: dict | None) -> dict[tuple[float, float], dict[str, list[list[dict]]]]:
    """:func:`lr_decay_cells` of the judged files (the judged runs, the decay map), and the sweep's
    selection seeds only where no judged seed of that arm ran: a cell shows an arm's judged seeds or
    its selection seeds, never both pooled. Arms in :data:`JUDGED_ARMS` order."""
    cells = lr_decay_cells(*judged)
    for cell, arms in lr_decay_cells(sweep).items():
        for arm, histories in arms.items():
            cells.setdefault(cell, {}).setdefault(arm, histories)
    rank = {arm: i for i, arm in enumerate(JUDGED_ARMS)}
    return {
        cell: dict(sorted(arms.items(), key=lambda item: (rank.get(item[0], len(rank)), item[0])))
        for cell, arms in sorted(cells.items())
    }


def committed_cells(task: str = "induction") -> dict[tuple[float, float], dict[str, list[list[dict]]]]:
    """:func:`judged_first` of the task's committed full-scale files (what the routing explorer
    reads): its W_Q, W_K lr sweep, its judged runs and its decay map; an error if none is committed."""
    from ..results import load_results

    names = (f"{task}_qk_lr", task, f"{task}_decay_map")
    files = [load_results(name, "full") for name in names]
    if not any(files):
        raise FileNotFoundError(f"no committed full results of {', '.join(names)}: run them first")
    return judged_first(*files)


def cell_curves(cells: dict, lr: float, decay: float, metric: str) -> dict[str, list[tuple[list, list]]]:
    """The curves of every seed of every arm at one cell: ``{arm: [(steps, values) per seed]}``;
    frozen frames (lr 0) stand in every cell of their λ."""
    out = {}
    for (cell_lr, cell_decay), arms in cells.items():
        if cell_decay != decay or cell_lr not in (lr, 0.0):
            continue
        for arm, histories in arms.items():
            if cell_lr == lr or arm == "frozen":
                out[arm] = [
                    ([r["epoch"] for r in h if metric in r], [r[metric] for r in h if metric in r]) for h in histories
                ]
    return out


def sweep_rows(sweep: dict | None, arms: tuple[str, ...] = SWEPT) -> list[dict]:
    """Per arm of a task's W_Q, W_K lr sweep: ``scores`` (lr -> mean late score over the selection
    seeds, on the rungs every seed finished; in the metric's own sign, e.g. bits per character),
    ``n`` (seeds), ``chosen`` (the sweep rule's lr, ``None`` while nothing is settled) and
    ``interior`` (whether both neighbours score lower, or the choice is lr 0)."""
    if not sweep:
        return []
    config = sweep["config"]
    n, center = len(config["seeds"]), config["task"]["lr"]
    sign, _ = metric_sign(config["metric"])
    return [sweep_row(arm, late_scores(sweep, arm, config["metric"], horizon="steps"), n, center, sign) for arm in arms]


def past(values: dict[str, dict[int, float]], threshold: float) -> dict[str, tuple[int, int]]:
    """``{arm: (seeds whose endpoint passed threshold, seeds)}``: beside the mean of a bimodal endpoint."""
    return {arm: (sum(v > threshold for v in seeds.values()), len(seeds)) for arm, seeds in values.items()}


def soft_solvers(results: dict | None, accuracy: float = 0.9, head: float = 0.5) -> dict[str, tuple[int, float]]:
    """Induction runs that solve the repeat (final accuracy past ``accuracy``) with no head whose
    induction score passes ``head``: per arm with any, their count and their highest head score."""
    out: dict[str, tuple[int, float]] = {}
    for key, run in (results or {}).get("runs", {}).items():
        final = run["final"]
        if final["val_acc"] > accuracy and final["induction_max"] <= head:
            arm = key.rpartition("/")[0]
            n, top = out.get(arm, (0, 0.0))
            out[arm] = (n + 1, max(top, final["induction_max"]))
    return out


def at_ceiling(counts: dict[str, tuple[int, int]]) -> bool:
    """Whether both AdamW and the Stiefel rule end past a bimodal endpoint's threshold on every seed
    (``counts`` as :func:`past` gives them): then the final value cannot tell which learns the task sooner."""
    b, s = counts.get("baseline"), counts.get("stiefel")
    return bool(b and s and b[0] == b[1] and s[0] == s[1])


def under_margin(row: dict | None, margin: float) -> bool:
    """Whether ``row`` is a decided difference (higher or lower) smaller than the family's declared margin."""
    return row is not None and row["verdict"] in ("higher", "lower") and abs(row["mean"]) < margin
