"""The verdicts of the new results, the comparisons the preprint did not make (its relatives on
grokking, the routing tasks), in words for the claims table (:mod:`claims`): each reads "new", with
its words at tuned rates on the second axis (:func:`shared_word` where its comparisons differ). A
sibling of :mod:`claim_verdicts` (the preprint's own claims)."""

from __future__ import annotations

from . import wording
from .claim_box import PENDING, Axis, Verdict
from .findings import routing as routing_findings
from .labels import label

__all__ = ["peers_verdict", "routing_verdict", "shared_word", "WORDS"]

WORDS = ("higher", "lower", "equivalent", "inconclusive")


def peers_verdict(rows: list[dict]) -> Verdict:
    """The relatives, not compared by the preprint (a new result), from the family ``grokking_fair``
    at every arm's tuned W_Q, W_K lr (:func:`peers.family_peer_rows`): each relative against the
    Stiefel rule, counted by its word."""
    against = [r for r in rows if r["reference"] == "stiefel"]
    if not against:
        return PENDING
    counts = {w: sum(r["verdict"] == w for r in against) for w in WORDS}
    said = ", ".join(f"{counts[w]} {w}" for w in WORDS if counts[w])
    names = ", ".join(label(r["arm"]) for r in against)
    headline = f"against the Stiefel rule at tuned lrs: {said} (of {len(against)})"
    return Verdict(
        "new",
        headline,
        f"Against its relatives on grokking ({names}), each at its tuned W_Q, W_K lr: {said} of {len(against)} "
        "against the Stiefel rule (Holm across the declared family).",
        tuned=Axis(shared_word({label(r["arm"]): r["verdict"] for r in against}), headline),
    )


def routing_verdict(rows_by_task: dict[str, list[dict]]) -> Verdict:
    """The routing tasks, which the preprint did not test (a new result), from the families
    ``routing_<task>`` (:func:`declared.routing`): per task with judged runs, the Stiefel rule
    against the tuned AdamW, scale alone against the Stiefel rule, and the sanity check."""
    fr = routing_findings
    judged = {task: fr.answers(rows) for task, rows in rows_by_task.items() if rows}
    if not judged:
        return PENDING
    parts, details = [], []
    for task, a in judged.items():
        endpoint, row = fr.TASKS[task][1], a["tuned_baseline"]
        word = wording.routing.verdict_words(row)
        parts.append(f"{fr.TASK_PHRASES[task]}: {word}, {row['mean']:+.3g} {endpoint.unit}")
        detail = [
            f"{label('stiefel')} − {label('baseline')}: {wording.routing.result_text(a['tuned_baseline'], endpoint)}",
            f"{label('qk_norm')} − {label('stiefel')}: {wording.routing.result_text(a['qk_norm'], endpoint)}",
        ]
        details.append(f"{fr.TASK_NAMES[task]}: " + "; ".join(detail) + ".")  # two results a sentence
        if task != "charlm":
            details.append(f"Its sanity check (frozen frames fall short): {fr.sanity(a['frozen'])}.")
    unrun = [fr.TASK_PHRASES[t] for t in rows_by_task if t not in judged]
    read = {t: a for t, a in judged.items() if a["tuned_baseline"]}
    tail = f"; not yet run: {', '.join(unrun)}" if unrun else ""
    headline = "the Stiefel rule against a tuned AdamW: " + "; ".join(parts) + tail
    return Verdict(
        "new",
        headline,
        " ".join(details) + (f" Not yet run: {', '.join(unrun)}." if unrun else ""),
        tuned=Axis(shared_word({fr.TASK_PHRASES[t]: a["tuned_baseline"]["verdict"] for t, a in read.items()}),
                   headline),
    )


def shared_word(words: dict[str, str]) -> str:
    """The verdict word of a claim's comparisons (``{what: word}``, ``what`` a task or an arm as a
    sentence names it): their one word where they agree, else each word with what it reads, "inconclusive
    (MQAR, induction); equivalent (the character model)" ("—" with none)."""
    groups: dict[str, list[str]] = {}
    for what, word in words.items():
        groups.setdefault(word, []).append(what)
    if len(groups) <= 1:
        return next(iter(groups), "—")
    return "; ".join(f"{word} ({', '.join(whats)})" for word, whats in groups.items())
