"""Should I use it? The facts that the intro's answer and the decision page rest on, each read from
rows the declared families already judged (no verdict is decided here: every word is the
family's own, read as better, worse, equivalent or inconclusive for the reader), plus the sweep's
scores, the frames' movement and the runs' regime. Pure functions of what they are handed;
:mod:`stiefel_book.advice` loads it. Chapters: intro, should_i_use_it.
"""

from __future__ import annotations

from ..families import find

__all__ = [
    "TASKS",
    "ROUTING",
    "reading",
    "word_of",
    "tuned_readings",
    "task_rate",
    "flat_tops",
    "routing_readings",
    "small_decay",
    "reach",
]

# The tasks of the book, in words, in the order the pages name them.
TASKS = {
    "grokking": "grokking (p = 31)",
    "grokking_p97": "grokking (p = 97)",
    "cifar10": "CIFAR-10 patches",
    "mqar": "associative recall",
    "induction": "the induction task",
    "charlm": "the character model",
}
ROUTING = ("mqar", "induction", "charlm")  # routing.TASKS


def word_of(rows: list[dict], a: str, b: str) -> str | None:
    """The reader's word (:func:`reading`) of ``a`` against ``b`` in a family of accuracy rows."""
    return reading((find(rows, a, b) or {}).get("verdict"))


def reading(word: str | None, higher_is_better: bool = True) -> str | None:
    """A family's verdict word as the reader needs it: better, worse, equivalent or inconclusive."""
    if word in ("higher", "lower"):
        return "better" if (word == "higher") == higher_is_better else "worse"
    return word


def _p97_reading(row: dict | None) -> str | None:
    """At p = 97 the endpoint is time to 90 % (*higher* is sooner), the final accuracy beside it:
    better if either is decided better, worse if either is decided worse, else the final word."""
    if row is None:
        return None
    words = {reading(row["verdict"]), reading(row.get("final_word"))}
    for word in ("better", "worse"):
        if word in words:
            return word
    return row.get("final_word") or reading(row["verdict"])


def tuned_readings(tuned31: list[dict], p97: list[dict], cifar10: list[dict], routing: dict) -> dict[str, str]:
    """Per task (:data:`TASKS`), the Stiefel rule against AdamW with each at its own tuned W_Q, W_K
    rate, at the weight decay the task was set up with; a task whose runs are missing is left out."""
    out = {
        "grokking": reading((find(tuned31, "stiefel", "baseline") or {}).get("verdict")),
        "grokking_p97": _p97_reading(find(p97, "stiefel", "baseline")),
        "cifar10": reading((find(cifar10, "stiefel", "baseline") or {}).get("verdict")),
    }
    for task in ROUTING:
        out[task] = (find(routing.get(task, []), "stiefel", "baseline") or {}).get("reading")
    return {task: word for task, word in out.items() if word is not None}


def task_rate(
    before31: list[dict], tuned31: list[dict], p97: list[dict], p97_lrs: dict, task_lr: float, movement: list[dict]
) -> dict:
    """Where the preprint's gain came from, on grokking: the rule against AdamW with both at the
    task's one rate (``untuned``, ``untuned_pp``) and at tuned rates (``tuned``); AdamW's tuned
    W_Q, W_K rate at p = 97 as a fraction of the task's (``share``: task's / AdamW's); the mean
    angle (degrees) W_Q turned in each arm there (``angles``); the final accuracy's word of frozen
    frames against AdamW and the rule (``frozen``) and of every p = 97 comparison (``finals``)."""
    before = find(before31, "stiefel", "baseline") or {}
    return {
        "untuned": reading(before.get("verdict")),
        "untuned_pp": before.get("mean_pp"),
        "tuned": reading((find(tuned31, "stiefel", "baseline") or {}).get("verdict")),
        "share": task_lr / p97_lrs["baseline"] if p97_lrs.get("baseline") else None,
        "angles": {r["arm"]: r["angle"] for r in movement},
        "frozen": {ref: (find(p97, "frozen", ref) or {}).get("final_word") for ref in ("baseline", "stiefel")},
        "finals": [r.get("final_word") for r in p97],
    }


def flat_tops(sweep_rows: list[dict], arms: tuple[str, ...]) -> dict:
    """How much each arm's sweep score depends on its W_Q, W_K rate, over the rates every one of
    ``arms`` ran (``rates``: lowest, highest): per arm its worst score over its best (``kept``)
    and its score at the highest common rate over its best (``top``)."""
    rows = {r["arm"]: r["scores"] for r in sweep_rows if r["arm"] in arms and r["scores"]}
    if set(rows) != set(arms):
        return {}
    common = sorted(set.intersection(*(set(s) for s in rows.values())) - {0})
    if len(common) < 2:
        return {}
    return {
        "rates": (common[0], common[-1]),
        "kept": {a: min(s[lr] for lr in common) / max(s.values()) for a, s in rows.items()},
        "top": {a: s[common[-1]] / max(s.values()) for a, s in rows.items()},
        "scores": {a: {lr: s[lr] for lr in common} for a, s in rows.items()},
    }


def routing_readings(
    routing: dict,
    arms: tuple[str, ...] = ("no_decay_qk", "muon", "qk_norm", "frozen"),
) -> dict[str, dict[str, dict[str, str]]]:
    """Per arm, per reference (the Stiefel rule, AdamW), per routing task: the family's reading."""
    out: dict = {}
    for arm in arms:
        for ref in ("stiefel", "baseline"):
            for task in ROUTING:
                row = find(routing.get(task, []), arm, ref)
                if row is not None:
                    out.setdefault(arm, {}).setdefault(ref, {})[task] = row["reading"]
    return out


def small_decay(at_decay: dict | None, best_cells: dict | None) -> dict | None:
    """CIFAR-10 away from its decay: the rule against AdamW at the decay of largest gap, both at
    rates tuned there (``decay``, ``reading``, ``pp``), and with each at its best decay and rate
    (``best_reading``, ``best_pp``, ``best_decays`` by arm, ``edge``: either best at an edge of the decays
    tried)."""
    if not at_decay:
        return None
    out = {"decay": at_decay["weight_decay"], "reading": reading(at_decay["verdict"]), "pp": at_decay["mean_pp"]}
    if best_cells:
        out |= {
            "best_reading": reading(best_cells["verdict"]),
            "best_pp": best_cells["mean_pp"],
            "edge": any(c["edge"] for c in best_cells["cells"].values()),
            "best_decays": {arm: c["weight_decay"] for arm, c in best_cells["cells"].items()},
        }
    return out


def _size(config: dict) -> tuple[int, int]:
    """(layers, width) of a results file's model."""
    task = config.get("task", config)
    return task.get("n_layer", task.get("depth", 1)), task.get("n_embd", task.get("d_model"))


def reach(results: dict[str, dict | None]) -> dict:
    """How far the judged runs reach: per task its model's (layers, width) and paired seeds, the
    widest and deepest model, and the devices every run was made on (``devices``: their kinds)."""
    sizes, seeds, devices = {}, {}, set()
    for task, r in results.items():
        if not r:
            continue
        sizes[task] = _size(r["config"])
        seeds[task] = len({key.rsplit("/", 1)[1] for key in r["runs"]})
        devices |= {(run.get("provenance") or {}).get("device", "unknown").split(":")[0] for run in r["runs"].values()}
    return {
        "sizes": sizes,
        "seeds": seeds,
        "width": max((w for _, w in sizes.values()), default=None),
        "layers": max((n for n, _ in sizes.values()), default=None),
        "devices": devices,
    }
