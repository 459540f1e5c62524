"""The routing chapter's answer across its tasks, in a few sentences for the intro and the regimes
chapter: each of the chapter's three questions answered once, the tasks grouped by their reading
(the per-task paragraphs are the chapter's own). Pure functions of the
families' rows (:func:`declared.routing`: the family reader's, as :func:`routing.as_rows`)."""

from __future__ import annotations

from .routing import TASK_PHRASES, answers, sanity

__all__ = ["summary"]

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


def _grouped(readings: dict[str, str], phrases: dict[str, str], every: int, notes: dict | None = None) -> str:
    """``"does worse than X on a (note); cannot be told from X on b and c"``, in the phrases' order."""
    parts = []
    for word, phrase in phrases.items():
        tasks = [t for t, r in readings.items() if r == word]
        if tasks:
            noted = [f" ({notes[t]})" for t in tasks if (notes or {}).get(t)]
            parts.append(f"{phrase} {_tasks(tasks, every)}" + "".join(noted))
    return ", and ".join(parts) if len(parts) == 2 else "; ".join(parts)


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
        out.append("Frozen frames " + _grouped(frozen, _FROZEN, every) + ".")
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
