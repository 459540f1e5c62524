"""The regimes chapter's takeaways, computed from the results dicts
and declared families' rows they are handed; the claims' verdicts are :mod:`stiefel_book.claim_verdicts`
(the claims table's). Nothing here decides anew. Loading is the caller's (``pages.py``).
Chapter: regimes.
"""

from __future__ import annotations

from ..labels import label
from . import decay_map as decay_map_findings
from . import regimes

__all__ = ["regimes_cells", "readings_at_tuned_rates", "regimes_takeaways"]


# --- regimes and peers --------------------------------------------------------------------------


def regimes_cells(decay_map: dict, task, rules: dict) -> list:
    """The decay map's Stiefel − AdamW cells at each decay's final epoch, under the declared
    family ``decay_map`` (``rules``: :class:`decay_map.Rule` by family name). Every page's count
    of the map comes from these cells (:func:`decay_map.count`)."""
    return decay_map_findings.final_cells(
        decay_map, (("stiefel", "baseline"),), rules["decay_map"], lr=task.lr, warmup_epochs=task.warmup_epochs
    )


TUNED_MAP = "with every arm's W_Q, W_K at its own learning rate (each tuned at λ = 1 on selection seeds)"


UNTUNED = (
    "these runs trained every arm's W_Q, W_K at the task's learning rate, so AdamW's was untuned (the fair fight "
    "tunes it)"
)
CONTROLS_UNTUNED = (
    "the controls trained every arm's W_Q, W_K at the task's learning rate, so AdamW's was untuned there (the fair "
    "fight tunes it)"
)
TUNED_CONTROLS = "each arm at its own tuned W_Q, W_K learning rate (the fair fight's runs and family)"


def readings_at_tuned_rates(fair_rows: list[dict] | None) -> dict | None:
    rows = regimes.tuned_control_rows(fair_rows or [])
    return regimes.supported_readings(rows) if rows else None


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
    tuned_readings = readings_at_tuned_rates(fair_rows)
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
