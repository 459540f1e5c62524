"""The routing chapter's verdicts in words (the rows, counts and readings are
:mod:`findings.routing`'s): a verdict with its numbers, the count of seeds past a threshold, the
regime notes of a verdict, and the chapter's answer across its tasks in a few sentences for the
intro and the regimes chapter (:func:`summary`: each of the chapter's three questions answered
once, the tasks grouped by their reading; the per-task paragraphs are the chapter's own).
Chapters: routing, regimes, intro; the claims table and :mod:`stiefel_book.declared`."""

from __future__ import annotations

from ..findings.routing import JUDGED_ARMS, TASK_PHRASES, answers, at_ceiling, sanity, under_margin
from ..labels import interval
from ..protocol_fields import Endpoint

__all__ = ["verdict_words", "result_text", "count_text", "ceiling_note", "margin_note", "summary"]


def verdict_words(row: dict) -> str:
    """``"<verdict>"``, or ``"<verdict> (<better/worse>)"`` where the reading says which way is better."""
    return row["verdict"] + (f" ({row['reading']})" if row["reading"] != row["verdict"] else "")


def result_text(row: dict | None, endpoint: Endpoint) -> str:
    """ "<verdict> (<better/worse>), <mean> <unit> [lo, hi] over n paired seeds", or "not yet run"."""
    if row is None:
        return "not yet run"
    lo, hi = row["ci"]
    return (
        f"{verdict_words(row)}, {row['mean']:+.3g} {endpoint.unit}, {interval(lo, hi, '+.3g')} "
        f"over {row['n']} paired seeds"
    )


def count_text(counts: dict[str, tuple[int, int]], threshold: float, metric: str, label) -> str:
    """The sentence beside a task's verdicts that counts, per arm, its seeds past ``threshold`` of
    ``metric`` (``counts`` as :func:`findings.routing.past` gives them); "" when no run has finished."""
    if not counts:
        return ""
    order = sorted(counts, key=lambda arm: (JUDGED_ARMS + (arm,)).index(arm))  # the judged arms' order
    words = ", ".join(f"{label(arm)} {counts[arm][0]} of {counts[arm][1]}" for arm in order)
    if metric == "induction_max":
        return f"Seeds with an induction head at the end (a head whose induction score is past {threshold:g}): {words}."
    return f"Seeds past {100 * threshold:.0f} % at the end: {words}."


def ceiling_note(counts: dict[str, tuple[int, int]], threshold: float) -> str | None:
    """The regime of a bimodal endpoint's verdict when both AdamW and the Stiefel rule end past
    ``threshold`` on every seed (:func:`findings.routing.at_ceiling`), else ``None``."""
    if not at_ceiling(counts):
        return None
    return (
        f"every seed of both ends past {100 * threshold:.0f} %, so at this budget the final accuracy "
        "cannot tell which learns to route sooner"
    )


def margin_note(row: dict | None, margin: float, unit: str) -> str | None:
    """The regime of a decided difference smaller than the family's declared margin
    (:func:`findings.routing.under_margin`), else ``None``."""
    if not under_margin(row, margin):
        return None
    return f"by less than the declared margin of ±{margin:g} {unit}, yet distinguishable from no difference"


# --- the answer across the tasks -------------------------------------------------------------

_BASELINE = {  # after "it beats the tuned AdamW on none of the tasks:", the least decided first
    "inconclusive": "cannot be told from it",
    "equivalent": "is equivalent to it",
    "worse": "does worse",
    "better": "does better",
}
_COUNTS = {2: "two", 3: "three"}
_SCALE = {
    "better": "does better than {s}",
    "worse": "does worse than {s}",
    "equivalent": "is equivalent to {s}",
    "inconclusive": "cannot be told from {s}",
}
_FROZEN = {
    "holds": "fall clearly short of trained ones",
    "fails": "do not fall short of trained ones",
    "not shown": "cannot yet be told from trained ones",
}


def _tasks(tasks: list[str], every: int) -> str:
    if len(tasks) == every and every > 2:
        return f"on all {_COUNTS.get(every, every)} tasks"
    phrases = [TASK_PHRASES[t] for t in tasks]
    return "on " + (" and ".join(phrases) if len(phrases) < 3 else ", ".join(phrases[:-1]) + " and " + phrases[-1])


def _grouped(
    readings: dict[str, str], phrases: dict[str, str], every: int, notes: dict | None = None, subject: str = "it"
) -> str:
    """``"does worse than X on a (note), and cannot be told from X on b and c"``, in the phrases' order: at most
    two results a sentence, a third in a sentence of its own (``"…. It is equivalent to X on d"``)."""
    parts = []
    for word, phrase in phrases.items():
        tasks = [t for t, r in readings.items() if r == word]
        if tasks:
            noted = [f" ({notes[t]})" for t in tasks if (notes or {}).get(t)]
            parts.append(f"{phrase} {_tasks(tasks, every)}" + "".join(noted))
    pairs = [", and ".join(parts[i : i + 2]) for i in range(0, len(parts), 2)]
    return f". {subject.capitalize()} ".join(pairs)


def summary(rows_by_task: dict[str, list[dict]], label, notes: dict[str, str | None] | None = None) -> str:
    """The three questions answered across the tasks with judged runs (``""`` before any): whether
    the Stiefel rule beats the tuned AdamW (with each task's ``notes``), whether scale alone does
    what it does, whether frozen frames fall short; then a sentence for each other arm decided against
    the Stiefel rule, and the tasks not yet run."""
    judged = {task: answers(rows) for task, rows in rows_by_task.items() if rows}
    if not judged:
        return ""
    every, stiefel, baseline = len(judged), label("stiefel"), label("baseline")
    first = {t: a["tuned_baseline"]["reading"] for t, a in judged.items() if a["tuned_baseline"]}
    scale = {t: a["qk_norm"]["reading"] for t, a in judged.items() if a["qk_norm"]}
    frozen = {t: sanity(a["frozen"]) for t, a in judged.items() if a["frozen"]}
    if first and not any(r == "better" for r in first.values()):
        lead, phrases = (
            f"beats the tuned {baseline} on none of the {_COUNTS.get(len(first), len(first))} tasks: it ",
            _BASELINE,
        )
    else:  # the tasks where it wins first, naming the baseline there
        lead, phrases = (
            "",
            {"better": f"beats the tuned {baseline}", **{w: p for w, p in _BASELINE.items() if w != "better"}},
        )
    out = [f"Where attention must learn to route, {stiefel} {lead}" + _grouped(first, phrases, every, notes) + "."]
    if scale:
        phrases = {w: p.format(s=stiefel) for w, p in _SCALE.items()}
        out.append(f"Scale alone ({label('qk_norm')}) " + _grouped(scale, phrases, every) + ".")
    if frozen:
        out.append("Frozen frames " + _grouped(frozen, _FROZEN, every, subject="they") + ".")
    others: dict[str, dict[str, str]] = {}  # the other arms decided against the Stiefel rule: a sentence an arm
    for t, rows in rows_by_task.items():
        for r in rows:
            if r["reference"] == "stiefel" and r["arm"] not in ("frozen", "qk_norm") and r["reading"] != "inconclusive":
                others.setdefault(r["arm"], {})[t] = r["reading"]
    phrases = {w: p.format(s=stiefel) for w, p in _SCALE.items()}
    out += [f"{label(arm)} " + _grouped(readings, phrases, every) + "." for arm, readings in others.items()]
    unrun = [TASK_PHRASES[t] for t in rows_by_task if t not in judged]
    if unrun:
        out.append(f"Not yet run: {', '.join(unrun)}.")
    return " ".join(s[0].upper() + s[1:] for s in out)
