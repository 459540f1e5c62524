"""What the grokking results say (the grokking chapter): the verdicts against the preprint, by the
retired rule and under the declared family ``grokking_p97``, and the claims table's line. What the
runs show before any verdict (endpoints per seed, one run's log, the frames) is :mod:`.grokking_runs`;
the chapter reads it here too. Pure functions of the ``grokking`` results dicts they are handed."""

from __future__ import annotations

import numpy as np

from .. import preprint
from ..stats import direction, mean_and_spread, paired_comparison
from ..tables import Table
from . import grokking_runs, regimes
from .grokking_runs import ARMS, endpoint_accuracies, run_summary
from .grokking_runs import frame_table as frame_table  # re-exported: the chapter reads these four here
from .grokking_runs import largest_spike as largest_spike
from .grokking_runs import report as report
from .grokking_runs import runs_table as runs_table

__all__ = [
    *grokking_runs.__all__,  # read here by the chapter
    "findings",
    "findings_table",
    "family_rows",
    "family_findings",
    "family_findings_table",
    "what_changed",
    "takeaways",
    "claim",
]


_EARLIER = {
    "higher": "Stiefel groks earlier",
    "lower": "the baseline groks earlier",
    "tie": "no significant difference",
}


def findings(results: dict | None, epoch: int = 20_000) -> list[tuple[str, str, str, str]]:
    """``(question, preprint, we measure, verdict)`` by the retired rule (each 95 % interval
    against zero, :func:`stats.direction`, no correction): the intro's claims table
    (``findings.summary``) reads it until it moves to :func:`family_findings`, which the chapter
    reads. Chapter: intro."""
    table = endpoint_accuracies(results, epoch) if results else {}
    seeds = sorted(set(table.get("stiefel", {})) & set(table.get("baseline", {})))
    if len(seeds) < 2:
        return [
            (
                "accuracy at epoch 20,000",
                preprint.grokking_endpoint(),
                f"{len(seeds)} paired seed(s) finished",
                "not measured",
            )
        ]
    rows = []
    s, b = ([100 * table[arm][k] for k in seeds] for arm in ("stiefel", "baseline"))
    c = paired_comparison(s, b)
    ours = (
        f"Stiefel {mean_and_spread(s).mean:.1f}%, baseline {mean_and_spread(b).mean:.1f}% (n = {c.n}); "
        f"difference {c.mean_difference:+.1f} pp, 95% CI [{c.ci_low:+.1f}, {c.ci_high:+.1f}]; "
        f"at or above 90% in {sum(v >= 90 for v in s)}/{c.n} Stiefel and {sum(v >= 90 for v in b)}/{c.n} baseline seeds"
    )
    verdict = {"higher": "reproduced: Stiefel ends higher", "lower": "not reproduced: the baseline ends higher"}.get(
        direction(c, min_pairs=2),
        "not reproduced: both arms generalise in every seed, no difference"
        if min(s + b) >= 90
        else "not reproduced: no significant difference",
    )
    rows.append(("accuracy at epoch 20,000", preprint.grokking_endpoint(), ours, verdict))
    summaries = {
        arm: [run_summary(results["runs"][f"{arm}/{k}"]["history"]) for k in seeds] for arm in ("stiefel", "baseline")
    }
    lows = {
        arm: [x["after_grokking_min"] for x in summaries[arm] if x["after_grokking_min"] is not None]
        for arm in summaries
    }
    relapses = sum(v < 0.5 for arm in lows for v in lows[arm])
    lowest = ", ".join(f"{arm} {100 * min(v):.1f}%" if v else f"{arm}: never reached 90%" for arm, v in lows.items())
    rows.append(
        (
            "the endpoint is unstable",
            preprint.UNSTABLE,
            f"lowest validation accuracy after first reaching 90%, any seed: {lowest}",
            f"unstable: {relapses} run(s) fell below 50% after grokking"
            if relapses
            else "no run fell below 50% after grokking",
        )
    )
    spikes = {arm: [x["spikes"] for x in summaries[arm]] for arm in summaries}
    rows.append(
        (
            "collapse cycles (training-loss spikes of 10x or more)",
            preprint.CYCLES,
            f"Stiefel {np.mean(spikes['stiefel']):.1f}, baseline {np.mean(spikes['baseline']):.1f} a run",
            "both arms cycle"
            if min(map(min, spikes.values())) > 0
            else "only one arm cycles"
            if max(map(min, spikes.values())) > 0
            else "no cycles",
        )
    )
    grok = {arm: [x["grokked_at"] for x in summaries[arm]] for arm in summaries}
    question = "epoch at which validation accuracy first reaches 90%"
    if all(v is not None for v in grok["stiefel"] + grok["baseline"]):
        g = paired_comparison(grok["baseline"], grok["stiefel"])
        rows.append(
            (
                question,
                preprint.NOT_REPORTED,
                f"Stiefel {np.mean(grok['stiefel']):,.0f}, baseline {np.mean(grok['baseline']):,.0f}; baseline − "
                "Stiefel "
                f"{g.mean_difference:+,.0f}, 95% CI [{g.ci_low:+,.0f}, {g.ci_high:+,.0f}]",
                _EARLIER[direction(g, min_pairs=2)],
            )
        )
    else:  # a run that never groks has no epoch: count, per seed, which arm got there first
        never = {arm: [k for k, v in zip(seeds, grok[arm]) if v is None] for arm in grok}
        inf = float("inf")
        first = {arm: [inf if v is None else v for v in grok[arm]] for arm in grok}
        earlier = sum(s_ < b_ for s_, b_ in zip(first["stiefel"], first["baseline"]))
        later = sum(s_ > b_ for s_, b_ in zip(first["stiefel"], first["baseline"]))
        ours = "; ".join(
            f"{arm} never reached 90% in seed(s) {', '.join(map(str, v))}" for arm, v in never.items() if v
        )
        rows.append(
            (
                question,
                preprint.NOT_REPORTED,
                f"{ours}; Stiefel first in {earlier} of {len(seeds)} seeds, the baseline in {later}",
                "no interval: a run that never groks has no epoch to average",
            )
        )
    return rows


def findings_table(results: dict | None, epoch: int = 20_000) -> Table:
    """:func:`findings` as a table, one row per question (Markdown in the chapter)."""
    return Table(["question", "preprint", "we measure", "verdict"], findings(results, epoch))


def claim(results: dict | None, config, family=None) -> str:
    """One line for the book's claims table from ``grokking-full`` and its configuration: the
    validation accuracy at epoch 20,000 per arm, the censored time to 90 %, and the regime. With
    ``family`` (``grokking_p97``), the two verdicts of :func:`family_rows` (the time by the paired
    permutation log-rank, Holm across the family) instead of the asymptotic log-rank p.
    Chapter: grokking."""
    if not results or not results.get("runs"):
        return "not yet measured (no finished full run)"
    table = endpoint_accuracies(results, 20_000)
    parts = []
    for arm, name in (("stiefel", "Stiefel"), ("baseline", "baseline")):
        values = [100 * v for v in table.get(arm, {}).values()]
        if len(values) >= 2:
            s = mean_and_spread(values)
            parts.append(f"{name} {s.mean:.1f}% ± {s.std:.1f} (n = {s.n}, range {s.min:.1f}-{s.max:.1f})")
        elif values:
            parts.append(f"{name} {values[0]:.1f}% (n = 1)")
        else:
            parts.append(f"{name}: no finished run")
    line = "validation accuracy at epoch 20,000: " + "; ".join(parts)
    seeds = regimes.paired_seeds(results, "stiefel", "baseline")
    rows = family_rows(results, family) if family is not None else None
    if rows is not None:
        e, t = rows["endpoint"], rows["time"]
        line += (
            f"; under the declared family (Holm): accuracy {e['verdict']} ({e['mean_pp']:+.1f} pp, Holm p = "
            f"{e['p_holm']:.2g}); time to 90 %, median epoch (Kaplan-Meier, censored runs kept): Stiefel "
            f"{t['median'][0]:,.0f}, baseline {t['median'][1]:,.0f} ({t['never'][1]} of {len(rows['seeds'])} never), "
            f"{t['verdict']} (paired permutation log-rank p = {t['p']:.2g}, Holm p = {t['p_holm']:.2g})"
        )
    elif len(seeds) >= 2:
        s_, b_ = (regimes.survival(results, arm, seeds=seeds) for arm in ("stiefel", "baseline"))
        _, p = regimes.logrank(results, "stiefel", "baseline")
        line += (
            f"; time to 90 %, median epoch (Kaplan-Meier, censored runs kept): Stiefel {s_.median:,.0f}, "
            f"baseline {b_.median:,.0f} ({b_.censored} of {len(seeds)} never), log-rank p = {p:.2g}"
        )
    budget = regimes.decay_budget(
        config.lr, config.weight_decay, regimes.grokking_lr_factors(config.warmup_epochs, config.epochs)
    )
    return line + f"; regime: p = {config.p}, Σ lr·λ = {budget:.3g}, {config.epochs:,} epochs (a CPU-sized model)"


# --- the declared family (book/protocol.yml: grokking_p97) -------------------------------------


def family_rows(results: dict | None, family, epoch: int = 20_000, threshold: float = 0.9) -> dict | None:
    """The family ``grokking_p97``: the Stiefel rule − AdamW over the seeds both finished, on
    validation accuracy at ``epoch`` (paired t test and TOST within the family's margin) and on
    time to ``threshold`` (paired permutation log-rank, runs that never get there censored), the
    two p-values Holm-adjusted together. ``None`` with fewer than 2 paired seeds. Returns
    ``{"seeds", "endpoint": {...}, "time": {...}}``, each with its word (higher, lower,
    equivalent, inconclusive; time: higher when the Stiefel rule gets there sooner) and p-values.
    Chapter: grokking."""
    from ..stats import holm, paired_t_p, permutation_logrank, tost
    from ..stats.paired import MIN_PAIRS_FOR_VERDICT
    from .regimes import survival, time_to_threshold

    table = endpoint_accuracies(results, epoch) if results else {}
    seeds = sorted(set(table.get("stiefel", {})) & set(table.get("baseline", {})))
    if len(seeds) < 2:
        return None
    d = np.array([table["stiefel"][k] - table["baseline"][k] for k in seeds])
    margin = family.margin / 100
    equivalence = tost(d, margin, family.alpha)
    times = {arm: [time_to_threshold(results["runs"][f"{arm}/{k}"], threshold) for k in seeds] for arm in ARMS}
    lr = permutation_logrank(*zip(*times["stiefel"]), *zip(*times["baseline"]), paired=True)
    tested = len(seeds) >= MIN_PAIRS_FOR_VERDICT
    p = np.array([paired_t_p(d), lr.p_value]) if tested else np.array([np.nan, np.nan])
    p_holm = holm(p, nan="one")
    alpha = family.alpha

    def word(p_adj: float, sign: float, equivalent: bool) -> str:
        if p_adj < alpha:
            return "higher" if sign > 0 else "lower"
        return "equivalent" if equivalent else "inconclusive"

    half = float(equivalence.ci_high - equivalence.ci_low) / 2  # the (1 - 2 alpha) interval, as TOST reads it
    return {
        "seeds": seeds,
        "endpoint": {
            "mean_pp": 100 * float(d.mean()),
            "tost_ci_pp": (100 * equivalence.ci_low, 100 * equivalence.ci_high),
            "half_pp": 100 * half,
            "p": float(p[0]),
            "p_holm": float(p_holm[0]),
            "tost_p": equivalence.p_value,
            "verdict": word(p_holm[0], d.mean(), tested and equivalence.p_value < alpha),
            "past": tuple(sum(table[arm][k] >= threshold for k in seeds) for arm in ARMS[::-1]),
        },
        "time": {
            "statistic": lr.statistic,
            "p": lr.p_value,
            "p_holm": float(p_holm[1]),
            "exact": lr.exact,
            "arrangements": lr.arrangements,
            "verdict": word(p_holm[1], lr.statistic, False),
            "never": tuple(sum(not ok for _, ok in times[arm]) for arm in ARMS[::-1]),
            "median": tuple(survival(results, arm, threshold, seeds).median for arm in ARMS[::-1]),
        },
    }


_ENDPOINT = {
    "higher": "reproduced: the Stiefel rule ends higher",
    "lower": "not reproduced: AdamW ends higher",
    "equivalent": "not reproduced: the two are equivalent",
    "inconclusive": "not reproduced: inconclusive",
}
_TIME = {
    "higher": "higher: the Stiefel rule reaches 90 % sooner",
    "lower": "lower: AdamW reaches 90 % sooner",
    "inconclusive": "inconclusive",
}


def family_findings(results: dict | None, family, epoch: int = 20_000) -> list[tuple[str, str, str, str]]:
    """``(question, the preprint, we measure, verdict)`` under the family ``grokking_p97``
    (:func:`family_rows`), then the descriptive rows of :func:`findings` (instability, collapse
    cycles), which are counts, not tests. Chapter: grokking."""
    rows = family_rows(results, family, epoch)
    old = findings(results, epoch)
    if rows is None:
        return old[:1]
    e, t = rows["endpoint"], rows["time"]
    n = len(rows["seeds"])
    lo, hi = e["tost_ci_pp"]
    out = [
        (
            f"accuracy at epoch {epoch:,}",
            preprint.grokking_endpoint(),
            f"the Stiefel rule − AdamW {e['mean_pp']:+.1f} pp over {n} paired seeds (90 % interval "
            f"[{lo:+.1f}, {hi:+.1f}], margin ±{family.margin:g} pp), Holm p = {e['p_holm']:.2g}; past 90 %: "
            f"{e['past'][0]} of {n} against {e['past'][1]} of {n}",
            _ENDPOINT[e["verdict"]],
        ),
        (
            "time to 90 % validation accuracy",
            preprint.NOT_REPORTED,
            f"median epoch (Kaplan-Meier) {t['median'][0]:,.0f} against {t['median'][1]:,.0f} (runs that never get "
            f"there kept as censored: {t['never'][0]} and {t['never'][1]} of {n}); paired permutation log-rank "
            f"p = {t['p']:.2g} ({'exact' if t['exact'] else 'Monte Carlo'}, {t['arrangements']} arrangements), "
            f"Holm p = {t['p_holm']:.2g}",
            _TIME[t["verdict"]],
        ),
    ]
    return out + [r for r in old[1:] if not r[0].startswith("epoch at which")]


def family_findings_table(results: dict | None, family, epoch: int = 20_000) -> Table:
    """:func:`family_findings` as a table. Chapter: grokking."""
    return Table(["question", "the preprint", "we measure", "verdict"], family_findings(results, family, epoch))


def what_changed(results: dict | None, family, epoch: int = 20_000) -> list[str]:
    """The grokking verdicts that changed from the retired rule (:func:`findings`) to the
    family's (:func:`family_findings`), one line each. Chapter: grokking."""
    old = {q: v for q, _, _, v in findings(results, epoch)}
    new = family_findings(results, family, epoch)
    out = []
    for (question, _, _, verdict), key in zip(new[:2], (f"accuracy at epoch {epoch:,}", "epoch at which")):
        before = next((v for q, v in old.items() if q.startswith(key)), None)
        if before is not None and before != verdict:
            out.append(f"{question[:1].upper() + question[1:]}: *{before}* before, **{verdict}** now")
    return out


def takeaways(
    results: dict | None,
    family,
    tuned_rows: list[dict],
    scale_rows: list[dict],
    label,
    p97_rows: list[dict] = (),
) -> list[str]:
    """The chapter's key takeaways: the family's two verdicts at p = 97 with every arm at the
    task's rate; then, where every arm has its tuned W_Q, W_K lr, the Stiefel rule against AdamW
    and scale alone against the Stiefel rule, at p = 97 (``p97_rows``, :func:`p97_tuned.fair_rows`)
    and at p = 31 (rows of :func:`tuned.fair_family` and :func:`tuned.scale_family`). Chapter: grokking."""
    from . import p97_tuned, tuned

    rows = family_findings(results, family)
    out = [
        f"**{q[:1].upper() + q[1:]} (p = 97, every arm at the task's rate)**: {v} ({ours})."
        for q, _, ours, v in rows[:2]
    ]
    find97 = {(r["a"], r["b"]): r for r in p97_rows}
    gain97 = find97.get(("stiefel", "baseline"))
    at97 = (
        f"At p = 97, with each arm at its tuned rate, the Stiefel rule against AdamW: {p97_tuned.short_text(gain97)}"
        if gain97
        else "At p = 97 the tuned runs are not yet run"
    )
    out.append(
        f"**Does the gain survive a tuned baseline?** {at97}. At p = 31, "
        + tuned.beats(tuned.find(tuned_rows, "stiefel", "baseline"), label, family.margin, capital=False)
        + "."
    )
    scale = [
        tuned.beats(tuned.find(scale_rows, arm, "stiefel"), label, family.margin, capital=False)
        for arm in ("qk_norm", "sphere")
    ]
    qk97 = find97.get(("qk_norm", "stiefel"))
    tail = f"; at p = 97, {label('qk_norm')} against the Stiefel rule: {p97_tuned.short_text(qk97)}" if qk97 else ""
    out.append("**Does scale alone do what the Stiefel rule does?** At p = 31: " + "; ".join(scale) + tail + ".")
    return out + [f"**{q[:1].upper() + q[1:]}**: {v}." for q, _, _, v in rows[2:]]
