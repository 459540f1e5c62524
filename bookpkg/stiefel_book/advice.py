"""Should I use it? Loads what the intro's answer and the decision page rest on: the declared
families' rows (:mod:`declared`, the same the chapters and the claims table read), the fair
fight's sweep, the frames' movement at p = 97, the runs' regime, and the committed benchmark
record of a step's cost, and hands them to :mod:`findings.advice`. Chapters: intro,
should_i_use_it.

    from stiefel_book import advice
    facts = advice.facts()          # a dict: what each sentence of the answer rests on
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from . import declared, protocol
from .checkout import checkout_root
from .findings import advice as found
from .results import load_results

__all__ = [
    "facts", "judged_progress", "judged_runs", "p97_checked", "rate_ratios", "JUDGED", "step_cost", "BENCHMARK",
    "listing", "tasks_where", "task_count", "number_word",
]

BENCHMARK = "step_time-gpt2-small-cpu.json"  # benchmarks/results/: StiefelAdam against AdamW on GPT-2's frames
SWEPT = ("baseline", "no_decay_qk", "stiefel", "qk_norm")  # the fair fight's arms whose sweep the answer reads


def facts() -> dict:
    """Every fact the answer states, by topic: ``tuned`` (the rule against AdamW per task at tuned
    rates), ``task_rate`` (where the preprint's gain came from), ``share31`` (the task's rate over
    AdamW's tuned W_Q, W_K rate at p = 31), ``sweep`` (how flat each arm's
    score is across rates), ``routing`` (the other arms on the routing tasks), ``grokking_scale``
    (QK-norm against AdamW at p = 31), ``cifar10_muon`` (Muon against AdamW), ``cifar10_frozen``
    (frozen frames against the rule), ``cifar10_decay`` (CIFAR-10 away from its decay), ``reach``
    (models, seeds, devices), ``cost`` (:func:`step_cost`), ``charlm_lr`` (the character
    model's model-lr check: :func:`charlm_model_lr`), ``mqar_fresh`` (:func:`mqar_fresh`), ``two_by_two``
    (the 2x2 of update direction and constraint: :func:`two_by_two`), ``judged`` (per task, the judged runs
    ``tuned`` and ``reach`` read: :func:`judged_runs`), ``rate_ratios`` (per task, AdamW's tuned W_Q, W_K rate
    over the model's there: :func:`rate_ratios`) and ``grokking_scale_checked`` (QK-norm against AdamW at p = 31
    at its checked model rate, ``None`` before those runs)."""
    from .findings import fair_fight as ff
    from .findings import peers

    fair, scale, fair_peers = (
        load_results(n, "full") for n in ("grokking_fair", "grokking_fair_scale", "grokking_fair_peers")
    )
    tuned31, scale31, p97, routing = (
        declared.tuned_rows(),
        declared.scale_rows(),
        declared.p97_rows(),
        declared.routing(),
    )
    cifar = declared.cifar10()
    family = protocol.family("grokking_fair")
    before31 = ff.before_rows(load_results("grokking_ablation", "full"), family.margin / 100, family.alpha)
    p97_runs = load_results("grokking_p97_fair", "full")
    sweep = load_results("grokking_qk_lr", "full")
    sweep_rows = ff.sweep_rows(sweep, SWEPT, ff.tuned_lrs(fair, scale, fair_peers)) if sweep else []
    names = {task: judged_runs(task) for task in found.TASKS}
    judged = {task: load_results(name, "full") for task, name in names.items()}
    now31 = declared.family_dicts("grokking_checked") if names["grokking"] == "grokking_checked" else tuned31
    return {
        "tuned": found.tuned_readings(now31, _p97_now(names["grokking_p97"], p97), cifar["tuned"], routing),
        "judged": names,
        "rate_ratios": rate_ratios(judged),
        "grokking_scale_checked": found.word_of(now31, "qk_norm", "baseline") if now31 is not tuned31 else None,
        "task_rate": found.task_rate(
            before31,
            tuned31,
            p97,
            ff.tuned_lrs(p97_runs) if p97_runs else {},
            p97_runs["config"]["task"]["lr"] if p97_runs else float("nan"),
            peers.movement_rows(p97_runs) if p97_runs else [],
        ),
        "share31": fair["config"]["task"]["lr"] / ff.tuned_lrs(fair)["baseline"] if fair else None,
        "sweep": found.flat_tops(sweep_rows, SWEPT),
        "routing": found.routing_readings(routing),
        "grokking_scale": found.word_of(scale31, "qk_norm", "baseline"),
        "cifar10_muon": found.word_of(cifar["tuned"], "muon", "baseline"),
        "cifar10_frozen": found.word_of(cifar["tuned"], "frozen", "stiefel"),
        "cifar10_decay": found.small_decay(cifar["at_decay"], cifar["best_cells"]),
        "reach": found.reach(judged),
        "cost": step_cost(),
        "charlm_lr": charlm_model_lr(),
        "model_lrs": model_lr_checks(),
        "charlm_long_lr": charlm_long_model_lr(),
        "mqar_fresh": mqar_fresh(),
        "two_by_two": two_by_two(),
    }


# task -> its judged runs, newest first: made again at the model rate the task's check chose, then at the
# task's rate (the routing tasks: :func:`declared.judged_file`)
JUDGED = {
    "grokking": ("grokking_checked", "grokking_fair"),
    "grokking_p97": ("grokking_p97_checked", "grokking_p97_fair"),
    "cifar10": ("cifar10_fair",),
}


def judged_runs(task: str) -> str:
    """The results file of ``task``'s judged runs that the answer reads (a task of :data:`findings.advice.TASKS`):
    the newest of :data:`JUDGED` whose planned runs are all in (:func:`judged_progress`), so a task judged
    again at its checked model rate reads that judgement once it is complete; a routing task's as
    :func:`declared.judged_file`."""
    if task in found.ROUTING:
        return declared.judged_file(task)
    return next((n for n in JUDGED[task] if (p := judged_progress(n))[1] and p[0] == p[1]), JUDGED[task][-1])


def p97_checked() -> dict | None:
    """p = 97 judged again at its checked model rate (family ``grokking_p97_checked``): its primary comparison,
    the Stiefel rule − AdamW, by the family's gatekeeping order (:func:`findings.p97_tuned.primary_row`: time to
    90 % first, the final accuracy only behind it), once every judged run is in; ``None`` before."""
    from .findings import p97_tuned

    name = "grokking_p97_checked"
    done, planned = judged_progress(name)
    if done < planned:
        return None
    family = protocol.family(name)
    return p97_tuned.primary_row(load_results(name, "full"), family.alpha, family.margin / 100)


def _p97_now(name: str, p97_fair: list[dict]) -> list[dict]:
    """p = 97's rows for the answer: :func:`p97_checked` where that judgement is read, else ``grokking_p97_fair``'s."""
    return [p97_checked()] if name == "grokking_p97_checked" else p97_fair


def rate_ratios(judged: dict[str, dict | None]) -> dict[str, float]:
    """Per task, AdamW's W_Q, W_K rate in its judged runs over the model's rate there (``{task: results}``,
    as :func:`judged_runs` names them): below 1 where its sweep chose a smaller rate for them."""
    out = {}
    for task, results in judged.items():
        runs = [r for k, r in (results or {}).get("runs", {}).items() if k.split("/")[0] == "baseline"]
        if runs:
            config = results["config"]
            out[task] = runs[0]["qk_lr"] / config.get("task", config)["lr"]
    return out


def two_by_two() -> dict[str, dict[str, dict]]:
    """The 2x2 of update direction and constraint (families ``routing_2x2`` and ``charlm_2x2``), per task and
    contrast: ``{task: {contrast: {"estimate", "verdict", "margin", "unit", "better"}}}``, where ``better`` says
    whether the contrast's second term (frames; Muon's direction) scored better, in the endpoint's sense. A
    family whose judged runs are not all in is left out."""
    from .findings import two_by_two as tbt

    out: dict[str, dict[str, dict]] = {}
    for family, tasks in tbt.FAMILIES.items():
        results = {task: load_results(tbt.FILES[family][task], "full") for task in tasks}
        if tbt.missing(results, family):
            continue
        for c in tbt.read(results, family=family):
            out.setdefault(c.task, {})[c.contrast] = {
                "estimate": c.estimate,
                "verdict": c.verdict,
                "margin": c.margin,
                "unit": c.unit,
                "better": (c.estimate > 0) == c.higher_is_better,
            }
    return out


def mqar_fresh() -> dict | None:
    """Associative recall judged again at its checked model lr (``mqar_fresh``, family ``routing_mqar_fresh``):
    ``{"n" (paired seeds), "model_lr", "all_solved" (every trained arm solved every seed), "frozen" (seeds frozen
    frames solved)}``, or ``None`` before its runs."""
    rows = declared.mqar_fresh()["counts"]
    results = load_results("mqar_fresh", "full")
    if not rows or results is None:
        return None
    solved = {r.arm: r.past[0] for r in rows} | {r.reference: r.past[1] for r in rows}
    n = rows[0].n
    trained = [a for a in solved if a != "frozen"]
    return {
        "n": n,
        "model_lr": float(results["config"]["lr"]),  # the task config itself
        "all_solved": all(solved[a] == n for a in trained),
        "frozen": solved.get("frozen"),
    }


def charlm_model_lr() -> dict | None:
    """The character model's declared model-lr check (``charlm_lr_sensitivity`` in
    ``book/protocol.yml``), read from AdamW's rungs: ``{"current", "best", "gain", "moves", "means",
    ...}`` (:func:`~stiefel_book.findings.lr_sensitivity.model_lr_check`), or ``None`` before its runs."""
    from .findings import lr_sensitivity

    results = load_results("charlm_lr_sensitivity", "full")
    if results is None:
        return None
    margin = float(protocol.load().sweeps["charlm_lr_sensitivity"]["margin"])
    return lr_sensitivity.model_lr_check(results, margin)


MODEL_LR_CHECKS = (  # (the task as the book names it, its check): the checks read by the ladder rule
    ("grokking", "grokking_model_lr"),
    ("MQAR", "mqar_model_lr"),
    ("CIFAR-10", "cifar10_model_lr"),
    ("grokking (p = 97)", "grokking_p97_model_lr"),  # scored by time to 90 %, its margin in epochs
)


def model_lr_checks() -> dict[str, dict]:
    """Each task's declared model-lr check that reads by the ladder rule (``*_model_lr`` in
    ``book/protocol.yml``, :func:`stiefel_book.model_lr.ladder_check`), in the order the book
    names them (:data:`MODEL_LR_CHECKS`): ``{"grokking": ..., "MQAR": ..., "CIFAR-10": ..., "grokking (p = 97)":
    ...}`` with ``"current"``, ``"lr"`` (after the rule), ``"moves"``, ``"gain"``, ``"grow"``; a check without its
    results file yet, or whose task's lr has not run on every seed, is left out (not run, or running)."""
    from .model_lr import ladder_check

    sweeps = protocol.load().sweeps
    out = {}
    for task, name in MODEL_LR_CHECKS:
        results = load_results(name, "full")
        if results is None:
            continue  # not run
        try:
            out[task] = ladder_check(results, float(sweeps[name]["margin"]))
        except ValueError:  # ladder_check's refusal: the task's lr not yet on every seed (running)
            continue
    return out


def judged_progress(name: str) -> tuple[int, int]:
    """``(runs in, runs planned)`` of the judged experiment ``name`` at its full profile: the planned runs
    are its default arms times its seeds (``"<arm>/<seed>"``), those in are the ones its results file
    holds. A sentence that says a comparison is "under way" rests on ``in < planned``."""
    from .experiments import EXPERIMENTS, get_config

    config = get_config(name, "full")
    planned = {f"{arm}/{seed}" for arm in EXPERIMENTS[name].default_arms(config) for seed in config.seeds}
    results = load_results(name, "full")
    return len(planned & set((results or {}).get("runs", {}))), len(planned)


def charlm_long_model_lr() -> dict | None:
    """The character model's check at 4,500 steps (``charlm_long_model_lr``) by its rule: ``{"lr", "means",
    "interior", ...}`` (:func:`stiefel_book.model_lr.ladder_choice`), or ``None`` before its runs."""
    from .model_lr import ladder_choice

    results = load_results("charlm_long_model_lr", "full")
    return None if results is None else ladder_choice(results, 0.02)


def step_cost() -> dict | None:
    """The committed benchmark record of one optimizer step on GPT-2 small's frames
    (``benchmarks/results/`` :data:`BENCHMARK`): ``ratio`` (StiefelAdam's step time over AdamW's,
    contiguous frames), ``state`` (its optimizer state over AdamW's), ``frames``, ``device``,
    ``date``; ``None`` where no record is found. Outside a checkout (a hosted kernel) the record
    is looked for beside ``$STIEFEL_RESULTS``, the cloned repository's ``book/results``."""
    root = checkout_root()
    if root is None and os.environ.get("STIEFEL_RESULTS"):
        root = Path(os.environ["STIEFEL_RESULTS"]).resolve().parent.parent
    path = root / "benchmarks" / "results" / BENCHMARK if root is not None else None
    if path is None or not path.exists():
        return None
    record = json.loads(path.read_text())
    text = "\n".join(record["lines"])

    def number(pattern: str) -> float:
        match = re.search(pattern, text)
        if not match:
            raise ValueError(f"{path}: no line matches {pattern!r}: the benchmark's output changed")
        return float(match.group(1))

    return {
        "ratio": number(r"ratio StiefelAdam / AdamW \(foreach\), contiguous: ([\d.]+)"),
        "state": number(r"state StiefelAdam: ([\d.]+)x frames") / number(r"AdamW: ([\d.]+)x"),
        "frames": int(number(r"(\d+) frames of")),
        "device": record["device"],
        "date": record["date"],
    }


def listing(items) -> str:
    """ "a", "a and b", "a, b and c"."""
    items = list(items)
    return ", ".join(items[:-1]) + f" and {items[-1]}" if len(items) > 1 else "".join(items)


def tasks_where(readings: dict[str, str], word: str) -> list[str]:
    """The tasks (in words, :data:`findings.advice.TASKS`) whose reading is ``word``."""
    return [found.TASKS[task] for task in found.TASKS if readings.get(task) == word]


def task_count(readings: dict[str, str]) -> int:
    """How many tasks ``readings`` cover, grokking's two sizes counted as one task."""
    return len({task.split("_")[0] for task in readings})


def number_word(n: int) -> str:
    """A count as prose writes it: words up to ten, digits above."""
    words = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
    return words[n] if 0 <= n < len(words) else f"{n:,}"
