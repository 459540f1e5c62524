"""The findings in words: each claim's verdict (a word, a mark, a headline, a sentence) and the
regimes chapter's takeaways, computed from the results dicts and declared families' rows they are
handed. Nothing here decides anew: the experiment claims' words follow the families' four words
(:mod:`summary_experiments`, re-exported here). When a results file changes, these sentences
change with it. Loading is the caller's (``claims.py``, ``pages.py``, ``declared.py``). Chapters:
intro, every experiment chapter.
"""

from __future__ import annotations

from ..labels import interval, label
from . import decay_map as decay_map_findings
from . import regimes
from .claim_verdict import MARKS, PENDING, Verdict
from .summary_experiments import (
    EXPECTED,
    ablation_verdict,
    cifar10_gain_verdict,
    claim_word,
    grokking_verdict,
    movement_verdict,
    peers_verdict,
    routing_verdict,
)

__all__ = [
    "Verdict",
    "MARKS",
    "PENDING",
    "EXPECTED",
    "claim_word",
    "word_of",
    "certificate",
    "grokking_verdict",
    "cifar10_gain_verdict",
    "movement_verdict",
    "ablation_verdict",
    "regimes_cells",
    "count_short",
    "regimes_verdict",
    "peers_verdict",
    "routing_verdict",
    "fair_fight_verdict",
    "what_we_found",
    "regimes_takeaways",
]


def _one_word(verdict: str) -> str:
    """A chapter's verdict string -> reproduced, partly, not reproduced or pending."""
    if verdict.startswith("reproduced"):
        return "reproduced"
    if verdict.startswith(("qualitatively reproduced", "a gain, but")):
        return "partly"
    if verdict.startswith("not measured") or verdict.startswith("untested"):
        return "pending"
    return "not reproduced"


def word_of(verdicts: list[str]) -> str:
    """The claim's word from the verdicts it rests on: reproduced (all), not reproduced (none),
    partly (some, or any qualitatively), pending (none measured yet)."""
    words = [w for w in map(_one_word, verdicts) if w != "pending"]
    if not words:
        return "pending"
    if all(w == "reproduced" for w in words):
        return "reproduced"
    if all(w == "not reproduced" for w in words):
        return "not reproduced"
    return "partly"


def certificate(passed: bool, headline: str, what: str) -> Verdict:
    """A proposition's float64 certificate: ``what`` it states, in a sentence's words."""
    return Verdict(
        "certified" if passed else "not certified",
        headline,
        f"{what[:1].upper()}{what[1:]}: {'certified' if passed else 'NOT certified'} in float64.",
    )


# --- regimes and peers --------------------------------------------------------------------------


def regimes_cells(decay_map: dict, task, rules: dict) -> list:
    """The decay map's Stiefel − AdamW cells at each decay's final epoch, under the declared
    family ``decay_map`` (``rules``: :class:`decay_map.Rule` by family name). Every page's count
    of the map comes from these cells (:func:`decay_map.count`)."""
    return decay_map_findings.final_cells(
        decay_map, (("stiefel", "baseline"),), rules["decay_map"], lr=task.lr, warmup_epochs=task.warmup_epochs
    )


TUNED_MAP = "with every arm's W_Q, W_K at its own learning rate (each tuned at λ = 1 on selection seeds)"


def count_short(cells: list) -> str:
    """The map's count in brief: "higher at 2 of 5 decays; inconclusive at 3 of 5 decays"."""
    groups = decay_map_findings.count(cells)
    total = sum(map(len, groups.values()))
    return "; ".join(f"{word} at {len(got)} of {total} decays" for word, got in groups.items() if got)


UNTUNED = (
    "these runs trained every arm's W_Q, W_K at the task's learning rate, so AdamW's was untuned (the fair fight "
    "tunes it)"
)
CONTROLS_UNTUNED = (
    "the controls trained every arm's W_Q, W_K at the task's learning rate, so AdamW's was untuned there (the fair "
    "fight tunes it)"
)
TUNED_CONTROLS = "each arm at its own tuned W_Q, W_K learning rate (the fair fight's runs and family)"


def _tuned_readings(fair_rows: list[dict] | None) -> dict | None:
    rows = regimes.tuned_control_rows(fair_rows or [])
    return regimes.supported_readings(rows) if rows else None


def regimes_verdict(
    controls: dict | None,
    decay_map: dict | None,
    task,
    rules: dict,
    tuned_map: dict | None = None,
    fair_rows: list[dict] | None = None,
    per_decay_map: dict | None = None,
) -> Verdict:
    """The mechanism claim: reproduced when the controls support the preprint's reading (the
    learned geometry survives decay); not reproduced when they contradict it or leave it
    undecided. Where the fair fight has judged the controls at tuned lrs (``fair_rows``, as
    :func:`findings.tuned.fair_family` gives them), those readings decide and the task-rate
    ones stand beside them; ``per_decay_map``, the map with each arm at the rate tuned at each
    decay, is counted beside the map. ``rules``: :class:`decay_map.Rule` by declared family name."""
    if not controls or not decay_map:
        return PENDING
    rule = rules["controls_p31"]
    readings = regimes.supported_readings(regimes.control_rows(controls, rule.margin, rule.alpha))
    tuned_readings = _tuned_readings(fair_rows)
    deciding = readings if tuned_readings is None else tuned_readings
    cells = regimes_cells(decay_map, task, rules)
    status = regimes.STATUS[deciding["geometry"]]
    word = "reproduced" if deciding["geometry"] else "not reproduced"
    tuned = decay_map_findings.tuned_cells(tuned_map, task, rules)
    if tuned is None:
        headline = f"map: {count_short(cells)}; the preprint's mechanism {status}"
        found = f"On grokking, {decay_map_findings.count_text(cells)}"
    else:
        headline = f"map at tuned lrs: {count_short(tuned)}; the preprint's mechanism {status}"
        found = (
            f"On grokking with every arm's W_Q, W_K at its own tuned learning rate, the Stiefel rule against AdamW "
            f"reads {count_short(tuned)} (at the task's one rate: {count_short(cells)})"
        )
    per_decay = decay_map_findings.per_decay_cells(per_decay_map, task, rules)
    if per_decay is not None:
        headline = headline.replace(
            "; the preprint's", f"; tuned at each decay: {count_short(per_decay)}; the preprint's"
        )
        by_word = decay_map_findings.count_text(per_decay).split(": ", 1)[
            1
        ]  # "higher at none, lower at 1 (λ = 0), ..."
        found += f"; with each arm's rate tuned at each decay instead, it reads {by_word}"
    if tuned_readings is None:
        note = UNTUNED if tuned is None else CONTROLS_UNTUNED
        controls_text = (
            f"The controls leave the preprint's mechanism {status} ({regimes.readings_text(readings)}); {note}"
        )
    else:
        changed = [
            f"{label(name)}: {regimes.STATUS[readings[name]]}"
            for name in tuned_readings
            if readings.get(name) != tuned_readings[name]
        ]
        controls_text = (
            f"The controls at tuned rates leave the preprint's mechanism {status} "
            f"({regimes.readings_text(tuned_readings)})"
            + (f"; at the task's one rate, against an untuned AdamW, {'; '.join(changed)}" if changed else "")
        )
    return Verdict(word, headline, f"{found}. {controls_text}.")


def regimes_takeaways(
    controls: dict | None,
    decay_map: dict | None,
    task,
    full_task: dict | None,
    rules: dict,
    fair_rows: list[dict],
    tuned_map: dict | None = None,
    per_decay_map: dict | None = None,
    p97_rows: list[dict] = (),
) -> list[str]:
    """The regimes chapter's findings: the map's one count (at tuned rates, then at the task's),
    the controls' readings at the endpoint (at tuned rates from ``fair_rows``, the fair fight's
    judged families' rows, :func:`fair_fight.declared_rows`; then at the task's rate) and, at
    p = 97, on time to 90 % (at tuned rates from ``p97_rows``, :func:`p97_tuned.fair_rows`; then at
    the task's rate); then the fair fight's two answers."""
    from . import fair_fight, p97_tuned

    if not controls or not decay_map:
        return ["Not yet measured: no finished full run."]
    cells = regimes_cells(decay_map, task, rules)
    tuned = decay_map_findings.tuned_cells(tuned_map, task, rules)
    out = []
    if tuned is not None:
        out.append(
            f"**The map at tuned rates**, {TUNED_MAP}: {decay_map_findings.count_text(tuned)} (Holm across the "
            "five decays)."
        )
    per_decay = decay_map_findings.per_decay_cells(per_decay_map, task, rules)
    if per_decay is not None:
        out.append(
            "**The map tuned at each decay**, AdamW's and the Stiefel rule's rate chosen at each decay on separate "
            f"selection seeds: {decay_map_findings.count_text(per_decay)} (Holm across the five decays)."
        )
    control = rules["controls_p31"]
    tuned_rows = regimes.tuned_control_rows(fair_rows or [])
    tuned_readings = _tuned_readings(fair_rows)
    if tuned_readings is not None:
        text = regimes.readings_text(tuned_readings)
        seeds = min(r["n"] for r in tuned_rows)
        out.append(
            f"**The controls at tuned rates (p = 31, {seeds} paired seeds)**, {TUNED_CONTROLS}: "
            f"{text[:1].upper()}{text[1:]}."
        )
    p97_controls = p97_tuned.control_rows(list(p97_rows))
    if p97_controls:
        text = regimes.readings_text(regimes.supported_readings(p97_controls))
        out.append(
            f"**The controls on time to 90 % (p = 97, tuned rates, {min(r['seeds'] for r in p97_controls)} paired "
            f"seeds)**: {text[:1].upper()}{text[1:]}{p97_tuned.floor_note(list(p97_rows))}."
        )
    which = "The map" if tuned is None else "The map at the task's one rate"
    out.append(f"**{which}**: {decay_map_findings.count_text(cells)} (Holm across the five decays).")
    untuned = "" if tuned_readings is None else ", at the task's one rate"
    for name, rows in (
        (
            f"The controls at the endpoint (p = 31{untuned})",
            regimes.control_rows(controls, control.margin, control.alpha),
        ),
        (
            "The controls on time to 90 % (p = 97" + (", at the task's rate)" if p97_controls else ")"),
            regimes.time_rows(full_task, alpha=rules["controls_p97_time"].alpha) if full_task else [],
        ),
    ):
        if rows:
            text = regimes.readings_text(regimes.supported_readings(rows))
            out.append(f"**{name}**: {text[:1].upper()}{text[1:]}.")
    note = UNTUNED if tuned is None else CONTROLS_UNTUNED
    if tuned_readings is not None:
        note = f"{note}; the readings at tuned rates above are the ones with a tuned baseline"
    out.append(f"**The baseline**: {note[:1].upper()}{note[1:]}.")
    answers = fair_fight.answers(fair_rows)
    if answers["tuned_baseline"] is not None:
        out.append(
            "**Does the gain survive a tuned baseline?** "
            + fair_fight.sentence(answers["tuned_baseline"], label("stiefel", capital=True), label("baseline"))
            + "."
        )
        found = [arm for arm in ("qk_norm", "sphere") if answers[arm] is not None]
        scale = [
            fair_fight.sentence(answers[arm], label(arm, capital=i == 0), label("stiefel"))
            for i, arm in enumerate(found)
        ]
        if scale:
            out.append("**Does scale alone do what the Stiefel rule does?** " + "; ".join(scale) + ".")
    return out


def fair_fight_verdict(
    fair: dict | None,
    scale: dict | None,
    before: dict | None,
    margin: float,
    alpha: float,
    peers: dict | None = None,
    p97_rows: list[dict] = (),
) -> Verdict:
    """Does the Stiefel rule's gain on grokking survive a tuned baseline? At p = 31 (Holm across the
    declared family) and, once run, at p = 97 (``p97_rows``, :func:`p97_tuned.fair_rows`):
    ``reproduced`` when the rule is *higher* than AdamW with both at their tuned lrs in each task
    (at p = 97: sooner to 90 % or higher final accuracy), ``partly`` when in one, ``not reproduced``
    otherwise."""
    from . import fair_fight, p97_tuned

    sentence = fair_fight.what_we_found(fair, scale, before, margin, alpha, label, peers)
    if sentence is None:
        return PENDING
    rows, _ = fair_fight.declared_rows(fair, scale, peers, margin, alpha)
    row = fair_fight.answers(rows)["tuned_baseline"]
    found = {(r["a"], r["b"]): r for r in p97_rows}
    gain97 = found.get(("stiefel", "baseline"))
    words = [row["verdict"]]
    lo, hi = row["ci_pp"]
    headline = f"{row['verdict']}: {row['mean_pp']:+.1f} pp, {interval(lo, hi)}, at tuned lrs"
    if gain97 is not None:
        words.append("higher" if "higher" in (gain97["verdict"], gain97.get("final_word")) else gain97["verdict"])
        headline += f" (p = 31); p = 97: {p97_tuned.short_text(gain97)}"
        sentence += (
            f" At p = 97 (20,000 epochs, {gain97['seeds']} paired seeds), each arm at its tuned rate, "
            f"{label('stiefel')} against {label('baseline')}: {p97_tuned.short_text(gain97)}; "
            f"{label('qk_norm')} against {label('stiefel')}: {p97_tuned.short_text(found.get(('qk_norm', 'stiefel')))}"
            f"{p97_tuned.floor_note(p97_rows)}."
        )
    held = sum(w == "higher" for w in words)
    word = "reproduced" if held == len(words) else "partly" if held else "not reproduced"
    return Verdict(word, headline, sentence)


def what_we_found(verdicts: list[Verdict], certified: int, propositions: int) -> list[str]:
    """The intro's "What we found": the sentence of every measured claim, in the order given
    (the title's question first), then the propositions' count."""
    last = (
        f"The mathematics holds: all {propositions} propositions are certified numerically in float64."
        if certified == propositions
        else f"{certified} of {propositions} propositions are certified numerically in float64."
    )
    return [v.sentence for v in verdicts if v.word != "pending" and v.sentence] + [last]
