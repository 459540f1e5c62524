"""The findings in words: each claim's verdict (a word, a mark, a headline, a sentence) and each
experiment chapter's takeaways, computed from the results dicts they are handed by the
chapters' own verdict functions. Nothing here decides anew: a claim's word gathers the words of
the verdicts it rests on (:func:`word_of`). When a results file changes, these sentences change
with it. Loading is the caller's (``claims.py``). Chapters: intro, every experiment chapter.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import preprint
from ..labels import label
from ..stats import direction
from . import ablation, cifar10, grokking, long_training, peers, regimes
from . import decay_map as decay_map_findings

__all__ = [
    "Verdict",
    "MARKS",
    "word_of",
    "certificate",
    "grokking_verdict",
    "cifar10_gain_verdict",
    "movement_verdict",
    "ablation_verdict",
    "regimes_cells",
    "regimes_verdict",
    "peers_verdict",
    "fair_fight_verdict",
    "what_we_found",
    "grokking_takeaways",
    "cifar10_takeaways",
    "ablation_takeaways",
    "regimes_takeaways",
    "peers_takeaways",
]

MARKS = {
    "certified": "✓",
    "reproduced": "✓",
    "partly": "◐",
    "not reproduced": "✗",
    "not certified": "✗",
    "pending": "…",
    "new": "+",
}


@dataclass(frozen=True)
class Verdict:
    """One claim's verdict: ``word`` (a key of :data:`MARKS`), the ``headline`` number in a few
    words, and one ``sentence`` for the intro's "What we found"."""

    word: str
    headline: str
    sentence: str

    @property
    def mark(self) -> str:
        return MARKS[self.word]

    def __str__(self) -> str:
        return f"{self.mark} {self.word}"


PENDING = Verdict("pending", "not yet measured", "")


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


def _pp(c, digits: int = 1) -> str:
    return f"{c.mean_difference:+.{digits}f} pp [{c.ci_low:+.{digits}f}, {c.ci_high:+.{digits}f}]"


# --- grokking ---------------------------------------------------------------------------------


def _time_row(results: dict, a: str = "stiefel", b: str = "baseline") -> dict | None:
    return next((r for r in regimes.time_rows(results) if (r["a"], r["b"]) == (a, b)), None)


_SOONER = {
    "higher": "reaches 90 % sooner",
    "lower": "reaches 90 % later",
    "tie": "no significant difference in time to 90 %",
    "inconclusive": "is not shown to reach 90 % sooner once corrected across the controls' comparisons",
    "untested": "time to 90 %: too few seeds",
}


def grokking_verdict(results: dict | None) -> Verdict:
    """The grokking claim: the endpoint's verdict (:func:`grokking.findings`) and time to 90 %
    (:func:`regimes.time_rows`); partly when only the time differs."""
    rows = grokking.findings(results)
    if rows[0][3] == "not measured":
        return PENDING
    endpoint = rows[0][3]
    table = grokking.endpoint_accuracies(results, 20_000)
    means = {arm: 100 * float(np.mean(list(table[arm].values()))) for arm in ("stiefel", "baseline")}
    time = _time_row(results)
    sooner = time is not None and time["verdict"] == "higher"
    word = "reproduced" if _one_word(endpoint) == "reproduced" else "partly" if sooner else "not reproduced"
    headline = f"{means['stiefel']:.1f} % vs {means['baseline']:.1f} % at epoch 20,000"
    config = results["config"]
    sentence = (
        f"In the long grokking runs (p = {config['p']}, {config['epochs']:,} epochs), the Stiefel rule ends at "
        f"{means['stiefel']:.1f} % validation accuracy against AdamW's "
        f"{means['baseline']:.1f} % ({endpoint.split(': ', 1)[-1]})"
    )
    if time is not None:
        sa, sb = time["a_survival"], time["b_survival"]
        headline += f"; 90 % by epoch {sa.median:,.0f} vs {sb.median:,.0f}"
        sentence += (
            f"; it {_SOONER[time['verdict']]} (median epoch {sa.median:,.0f} against {sb.median:,.0f}, "
            f"log-rank p = {time['p']:.2g})"
            if time["verdict"] != "untested"
            else f"; {_SOONER['untested']}"
        )
    return Verdict(word, headline, sentence + ".")


def grokking_takeaways(results: dict | None) -> list[str]:
    """The grokking chapter's findings, one line each: question, verdict, what we measure."""
    rows = grokking.findings(results)
    time = _time_row(results) if results and rows[0][3] != "not measured" else None
    if time is not None and time["verdict"] != "untested":  # time to 90 % below says it with censored runs kept
        rows = [r for r in rows if not r[0].startswith("epoch at which")]
    out = [f"**{q[:1].upper() + q[1:]}**: {v} ({ours})." for q, _, ours, v in rows]
    if time is not None and time["verdict"] != "untested":
        sa, sb = time["a_survival"], time["b_survival"]
        out.insert(
            1,
            f"**Time to 90 %** (runs that never get there kept as censored): the Stiefel rule "
            f"{_SOONER[time['verdict']]}, median epoch {sa.median:,.0f} against AdamW's {sb.median:,.0f} "
            f"({sb.censored} of {time['seeds']} AdamW runs never reach it; log-rank p = {time['p']:.2g}).",
        )
    return out


# --- CIFAR-10 ---------------------------------------------------------------------------------


def _long(long: dict | None, sizes: dict | None) -> tuple[list[str], list[str]]:
    """The long protocol's verdict strings (gain, widening) and their lines."""
    decay, c = long_training.protocol_comparison(long)
    if c is None:
        return [], []
    verdicts = ["qualitatively reproduced" if direction(c) == "higher" else "not reproduced"]
    lines = [
        f"**100 epochs on 10,000 images** (λ = {decay:g}, where the two rules differ most): the Stiefel rule minus "
        f"AdamW {_pp(c, 2)}, {c.wins}/{c.n} starts won."
    ]
    wide = long_training.widening(sizes)
    if wide is not None:
        w = wide["comparison"]
        verdicts.append("reproduced" if wide["verdict"] == "higher" else "not reproduced")
        lines.append(
            f"**Data size at matched epochs**: the gain at {wide['large']:,} images minus the gain at "
            f"{wide['small']:,} is {_pp(w, 2)} over {w.n} starts: the gap "
            f"{ {'higher': 'widens', 'lower': 'narrows'}.get(wide['verdict'], 'does not change measurably') }."
        )
    return verdicts, lines


def cifar10_gain_verdict(results: dict | None, sweep: dict | None, long: dict | None, sizes: dict | None) -> Verdict:
    """The CIFAR-10 gain claim: the gain and its sweep (:func:`cifar10.verdicts`) and the long protocol."""
    rows = cifar10.verdicts(results, sweep)[:2]
    long_verdicts, _ = _long(long, sizes)
    word = word_of([v for *_, v in rows] + long_verdicts)
    if word == "pending":
        return PENDING
    c = cifar10.paired_gain(results)[3]
    decay, lc = long_training.protocol_comparison(long)
    headline = f"{c.mean_difference:+.2f} pp (2 epochs)" + (
        f", {lc.mean_difference:+.2f} pp (100 epochs)" if lc else ""
    )
    sentence = (
        f"On CIFAR-10 patches the preprint's {preprint.CIFAR10['gain_pp']:+.2f} pp gain is {word}: the Stiefel rule "
        f"minus AdamW is {c.mean_difference:+.2f} pp over {c.n} paired starts"
        + (f", and {lc.mean_difference:+.2f} pp in 100-epoch training" if lc else "")
        + "."
    )
    return Verdict(word, headline, sentence)


def movement_verdict(results: dict | None) -> Verdict:
    """The movement claim: how far a fixed step moves the frames, and what freezing costs."""
    rows = cifar10.verdicts(results, None)[2:]
    word = word_of([v for *_, v in rows])
    if word == "pending":
        return PENDING
    return Verdict(
        word, f"{rows[0][2]} less than AdamW", f"A fixed-step update moves the frames {rows[0][2]} less than AdamW."
    )


def cifar10_takeaways(results: dict | None, sweep: dict | None, long: dict | None, sizes: dict | None) -> list[str]:
    """The CIFAR-10 chapter's findings: its four verdicts, then the long protocol's."""
    out = [
        f"**{claim[:1].upper() + claim[1:]}**: {verdict} (preprint: {quoted}; we measure {ours})."
        for claim, quoted, ours, verdict in cifar10.verdicts(results, sweep)
    ]
    return out + _long(long, sizes)[1]


# --- the ablation -----------------------------------------------------------------------------

EXPECTED = {"scale-free step": "higher", "tangent projector": "tie", "per-frame second moment": "tie"}  # the preprint's


def _beats(row: dict) -> str:
    """One ablation row as "X beats Y by d pp [interval of X − Y]", "X and Y tie" or "never acts"."""
    c, full, arm = row["full_minus_arm"], "the full rule", label(row["arm"])
    if c.ties == c.n:
        return f"{arm}: never acts here (identical runs)"
    verdict = direction(c, ablation.MIN_STARTS_FOR_VERDICT)
    if verdict == "tie":
        return f"{arm}: a tie ({_pp(c, 2)})"
    sign = 1 if verdict == "higher" else -1
    winner, loser = (full, arm) if verdict == "higher" else (arm, full)
    low, high = sorted((sign * c.ci_low, sign * c.ci_high))
    return f"{winner} beats {loser} by {abs(c.mean_difference):.2f} pp [{low:.2f}, {high:.2f}]"


def ablation_verdict(results: dict | None, reference: dict | None) -> Verdict:
    """The ablation claim: the scale-free step carries the gain, the projector and the per-frame
    moment nothing measurable; partly when only some of these hold or there is no gain to share."""
    if not results or not results.get("runs"):
        return PENDING
    rows = ablation.ablation_rows(ablation.merged_results(results, reference), ablation.METRIC["cifar10_ablation"])
    if rows[0]["full_minus_arm"] is None:
        return PENDING
    got = {r["removes"]: direction(r["full_minus_arm"], ablation.MIN_STARTS_FOR_VERDICT) for r in rows}
    held = [got.get(k) == v for k, v in EXPECTED.items()] + [ablation.shares(rows) is not None]
    word = "reproduced" if all(held) else "not reproduced" if not any(held) else "partly"
    step = next(r for r in rows if r["removes"] == "scale-free step")["full_minus_arm"]
    gain = next(r for r in rows if r["arm"] == "baseline")["full_minus_arm"]
    headline = (
        f"the scale-free step is worth {step.mean_difference:+.2f} pp; "
        f"the rule over AdamW {gain.mean_difference:+.2f} pp"
    )
    return Verdict(
        word,
        headline,
        f"Of the rule's parts, the scale-free step matters most: removing it costs "
        f"{step.mean_difference:.2f} pp on CIFAR-10, while the whole rule is "
        f"{gain.mean_difference:+.2f} pp against AdamW.",
    )


def ablation_takeaways(results: dict | None, reference: dict | None, repeat: dict | None) -> list[str]:
    """The ablation chapter's findings: each variant against the full rule, on CIFAR-10 and on grokking."""
    out = []
    for task, rows in (
        (
            "CIFAR-10",
            ablation.ablation_rows(ablation.merged_results(results, reference), "test_acc")
            if results and results.get("runs")
            else [],
        ),
        ("Grokking", ablation.ablation_rows(repeat, "val_acc") if repeat and repeat.get("runs") else []),
    ):
        measured = [_beats(r) for r in rows if r["full_minus_arm"] is not None]
        if measured:
            out.append(f"**{task}**: " + "; ".join(measured) + ".")
    if results and results.get("runs"):
        rows = ablation.ablation_rows(ablation.merged_results(results, reference), "test_acc")
        if rows[0]["full_minus_arm"] is not None:
            share = ablation.shares(rows)
            out.append(
                "**Shares of the gain**: "
                + (
                    ", ".join(f"{k} {v:.0%}" for k, v in share.items())
                    if share
                    else "none to apportion: the full rule does not beat AdamW on CIFAR-10 here"
                )
                + "."
            )
    return out or ["Not yet measured: no finished full run."]


# --- regimes and peers --------------------------------------------------------------------------


def regimes_cells(decay_map: dict, task, rules: dict) -> list:
    """The decay map's Stiefel − AdamW cells at each decay's final epoch, under the declared
    family ``decay_map`` (``rules``: :class:`decay_map.Rule` by family name). Every page's count
    of the map comes from these cells (:func:`decay_map.count`)."""
    return decay_map_findings.final_cells(
        decay_map, (("stiefel", "baseline"),), rules["decay_map"], lr=task.lr, warmup_epochs=task.warmup_epochs
    )


def _count_short(cells: list) -> str:
    groups = decay_map_findings.count(cells)
    total = sum(map(len, groups.values()))
    return "; ".join(f"{word} at {len(got)} of {total} decays" for word, got in groups.items() if got)


UNTUNED = (
    "these runs trained every arm's W_Q, W_K at the task's learning rate, so AdamW's was untuned (the fair fight "
    "tunes it)"
)


def regimes_verdict(controls: dict | None, decay_map: dict | None, task, rules: dict) -> Verdict:
    """The mechanism claim: reproduced when the controls support the preprint's reading (the
    learned geometry survives decay); not reproduced when they contradict it or leave it
    undecided. ``rules``: :class:`decay_map.Rule` by declared family name."""
    if not controls or not decay_map:
        return PENDING
    rule = rules["controls_p31"]
    readings = regimes.supported_readings(regimes.control_rows(controls, rule.margin, rule.alpha))
    cells = regimes_cells(decay_map, task, rules)
    status = regimes.STATUS[readings["geometry"]]
    word = "reproduced" if readings["geometry"] else "not reproduced"
    headline = f"map: {_count_short(cells)}; the preprint's mechanism {status}"
    sentence = (
        f"On grokking, {decay_map_findings.count_text(cells)}. The controls leave the preprint's mechanism "
        f"{status} ({regimes.readings_text(readings)}); "
        f"{UNTUNED}."
    )
    return Verdict(word, headline, sentence)


def regimes_takeaways(
    controls: dict | None, decay_map: dict | None, task, full_task: dict | None, rules: dict, fair_rows: list[dict]
) -> list[str]:
    """The regimes chapter's findings: the map's one count, the controls' readings at the endpoint
    and, at p = 97, on time to 90 %; then the fair fight's two answers (``fair_rows``: its
    judged families' rows, :func:`fair_fight.family_rows`), which these runs at an untuned
    AdamW cannot give."""
    from . import fair_fight

    if not controls or not decay_map:
        return ["Not yet measured: no finished full run."]
    cells = regimes_cells(decay_map, task, rules)
    out = [f"**The map**: {decay_map_findings.count_text(cells)} (Holm across the five decays)."]
    control = rules["controls_p31"]
    for name, rows in (
        ("The controls at the endpoint (p = 31)", regimes.control_rows(controls, control.margin, control.alpha)),
        (
            "The controls on time to 90 % (p = 97)",
            regimes.time_rows(full_task, alpha=rules["controls_p97_time"].alpha) if full_task else [],
        ),
    ):
        if rows:
            text = regimes.readings_text(regimes.supported_readings(rows))
            out.append(f"**{name}**: {text[:1].upper()}{text[1:]}.")
    out.append(f"**The baseline**: {UNTUNED[:1].upper()}{UNTUNED[1:]}.")
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


_AGAINST = {"higher": "ahead of", "lower": "behind", "tie": "tied with", "untested": "too few seeds against"}


def peers_verdict(results: dict | None) -> Verdict:
    """The relatives: not compared by the preprint, so a new result, counted against the Stiefel rule."""
    if not results or not results.get("runs"):
        return PENDING
    verdicts = [direction(regimes.endpoint_comparison(results, p, "stiefel")) for p in peers.PEERS]
    if all(v == "untested" for v in verdicts):
        return PENDING
    ahead, behind = verdicts.count("higher"), verdicts.count("lower")
    tied = len(verdicts) - ahead - behind
    headline = f"{ahead} of {len(verdicts)} relatives ahead, {behind} behind, {tied} tied or untested"
    return Verdict(
        "new",
        headline,
        f"Against its relatives (Muon, geoopt's Riemannian Adam, per-entry moments, a "
        f"parametrization) on grokking, {ahead} of {len(verdicts)} beat the Stiefel rule, "
        f"{behind} fall behind and {tied} tie.",
    )


def peers_takeaways(results: dict | None) -> list[str]:
    """The peers chapter's findings: each relative against the Stiefel rule, then what each ingredient reads."""
    if not results or not results.get("runs"):
        return ["Not yet measured: no finished full run."]
    out = []
    for p in peers.PEERS:
        c = regimes.endpoint_comparison(results, p, "stiefel")
        if c is not None:
            word = _AGAINST[direction(c)]
            out.append(f"**{label(p)[:1].upper() + label(p)[1:]}**: {word} the Stiefel rule ({_pp(c)}, {c.n} seeds).")
    out += [
        f"{peers.reading(r)[:1].upper() + peers.reading(r)[1:]}."
        for r in peers.ingredient_rows(results)
        if r["verdict"] != "untested"
    ]
    return out


def fair_fight_verdict(
    fair: dict | None, scale: dict | None, before: dict | None, margin: float, alpha: float, peers: dict | None = None
) -> Verdict:
    """Does the Stiefel rule's gain on grokking survive a tuned baseline? ``reproduced`` only when
    the rule is *higher* than AdamW with both at their tuned lrs (Holm across the declared family)."""
    from . import fair_fight

    sentence = fair_fight.what_we_found(fair, scale, before, margin, alpha, label, peers)
    if sentence is None:
        return PENDING
    rows, _ = fair_fight.declared_rows(fair, scale, peers, margin, alpha)
    row = fair_fight.answers(rows)["tuned_baseline"]
    word = "reproduced" if row["verdict"] == "higher" else "not reproduced"
    lo, hi = row["ci_pp"]
    return Verdict(word, f"{row['verdict']}: {row['mean_pp']:+.1f} pp [{lo:+.1f}, {hi:+.1f}] at tuned lrs", sentence)


def what_we_found(verdicts: list[Verdict], certified: int, propositions: int) -> list[str]:
    """The intro's "What we found": the sentence of every measured claim, in the order given
    (the title's question first), then the propositions' count."""
    last = (
        f"The mathematics holds: all {propositions} propositions are certified numerically in float64."
        if certified == propositions
        else f"{certified} of {propositions} propositions are certified numerically in float64."
    )
    return [v.sentence for v in verdicts if v.word != "pending" and v.sentence] + [last]
