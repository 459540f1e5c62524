"""What we measure, each experiment claim's line in the claims table (its one reader: :mod:`claims`
and the README it writes): the numbers behind each claim, from the results dicts and the declared
families' rows the findings give. Pure functions of what they are handed; loading is the caller's."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from .experiments.cifar10 import PROFILES, SWEEP_ARMS
from .findings import p97_tuned
from .findings import regimes as rg
from .findings.ablation import METRIC, ablation_rows, merged_results, shares
from .findings.cifar10 import movement_ratios, paired_gain, sweep_gains
from .findings.decay_map import final_cells, tuned_cells
from .findings.grokking import endpoint_accuracies
from .findings.grokking import family_rows as grokking_family_rows
from .findings.peers import PEERS
from .labels import difference, interval, label
from .results_reading import arm_of
from .stats import VERDICTS, mean_and_spread
from .tasks.cifar10_config import CIFAR10Config, lr_factors
from .wording.regimes import count_text, readings_text

__all__ = ["grokking", "regimes", "ablation", "cifar10_gain", "cifar10_movement", "peers"]


def grokking(results: dict | None, config, family=None) -> str:
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
    seeds = rg.paired_seeds(results, "stiefel", "baseline")
    rows = grokking_family_rows(results, family) if family is not None else None
    if rows is not None:
        e, t = rows["endpoint"], rows["time"]
        line += (
            f"; under the declared family (Holm): accuracy {e['verdict']} ({e['mean_pp']:+.1f} pp, Holm p = "
            f"{e['p_holm']:.2g}); time to 90 %, median epoch (Kaplan-Meier, censored runs kept): Stiefel "
            f"{t['median'][0]:,.0f}, baseline {t['median'][1]:,.0f} ({t['never'][1]} of {len(rows['seeds'])} never), "
            f"{t['verdict']} (paired permutation log-rank p = {t['p']:.2g}, Holm p = {t['p_holm']:.2g})"
        )
    elif len(seeds) >= 2:
        s_, b_ = (rg.survival(results, arm, seeds=seeds) for arm in ("stiefel", "baseline"))
        _, p = rg.logrank(results, "stiefel", "baseline")
        line += (
            f"; time to 90 %, median epoch (Kaplan-Meier, censored runs kept): Stiefel {s_.median:,.0f}, "
            f"baseline {b_.median:,.0f} ({b_.censored} of {len(seeds)} never), log-rank p = {p:.2g}"
        )
    budget = rg.decay_budget(
        config.lr, config.weight_decay, rg.grokking_lr_factors(config.warmup_epochs, config.epochs)
    )
    return line + f"; regime: p = {config.p}, Σ lr·λ = {budget:.3g}, {config.epochs:,} epochs (a CPU-sized model)"


def regimes(
    controls: dict | None,
    decay_map: dict | None,
    task,
    rules: dict,
    full_task: dict | None = None,
    tuned_map: dict | None = None,
    fair_rows: list[dict] | None = None,
    p97_rows: list[dict] | None = None,
) -> str:
    """One line for the book's claims table from ``grokking_ablation-full`` (the controls),
    ``grokking_decay_map-full`` and the map's task: the map's one count
    (:func:`wording.regimes.count_text`), and the readings the controls support; with ``full_task``
    (``grokking-full``, p = 97), the readings of time to 90 %; with ``fair_rows`` (the fair
    fight's judged rows), the readings of the same controls at tuned lrs first; with ``p97_rows``
    (:func:`p97_tuned.fair_rows`), the readings of time to 90 % at p = 97 at tuned lrs. ``rules``: the
    declared families (``protocol.Family``) by name (``decay_map``, ``controls_p31``,
    ``controls_p97_time``). Chapter: rg."""
    if not controls or not decay_map:
        return "not yet measured (no finished full run)"
    control = rules["controls_p31"]
    readings = rg.supported_readings(rg.control_rows(controls, control.margin, control.alpha))
    cells = final_cells(
        decay_map, (("stiefel", "baseline"),), rules["decay_map"], lr=task.lr, warmup_epochs=task.warmup_epochs
    )
    budgets = sorted(c.budget for c in cells)
    tuned = tuned_cells(tuned_map, task, rules)
    at_tuned = "" if tuned is None else f"each arm at its own W_Q, W_K lr (tuned at λ = 1): {count_text(tuned)}; "
    tuned_rows = rg.tuned_control_rows(fair_rows or [])
    tuned_controls = (
        f"the controls at tuned lrs ({min(r['n'] for r in tuned_rows)} seeds, λ = 1): "
        f"{readings_text(rg.supported_readings(tuned_rows))}; "
        if tuned_rows
        else ""
    )
    return (
        f"grokking p = {task.p}, λ 0-3 (Σ lr·λ {budgets[0]:.3g}-{budgets[-1]:.3g}), 10 seeds a decay, {at_tuned}every "
        f"arm at the task's W_Q, W_K lr (AdamW's untuned): {count_text(cells)}; {tuned_controls}the controls at the "
        f"task's lr (20 seeds, λ = 1): {readings_text(readings)}"
        + _full_task_reading(full_task, rules["controls_p97_time"].alpha)
        + _tuned_full_task_reading(p97_rows)
    )


def _tuned_full_task_reading(p97_rows: list[dict] | None) -> str:
    rows = p97_tuned.control_rows(p97_rows or [])
    if not rows:
        return ""
    return (
        f"; at p = 97 with each arm at its tuned W_Q, W_K lr (≥ {min(r['seeds'] for r in rows)} paired seeds), time "
        f"to 90 %: {readings_text(rg.supported_readings(rows))}"
    )


def _full_task_reading(full_task: dict | None, alpha: float) -> str:
    rows = rg.time_rows(full_task, alpha=alpha) if full_task else []
    if not rows:
        return ""
    config = full_task["config"]
    seeds = min(r["seeds"] for r in rows)
    return (
        f"; at p = {config['p']} ({config['epochs']:,} epochs, ≥ {seeds} paired seeds), time to 90 %: "
        f"{readings_text(rg.supported_readings(rows))}"
    )


def ablation(results: dict, reference: dict | None, repeat: dict | None = None, decay_map: dict | None = None) -> str:
    """One line for the book's claims table, from ``cifar10_ablation-full`` merged with
    ``cifar10-full`` (``reference``), and the grokking repeat (``grokking_ablation-full``) when
    it has runs; whether the cap ever bound is read from ``grokking_decay_map-full``.
    Chapter: ablation."""
    merged = merged_results(results, reference)
    rows = ablation_rows(merged, METRIC["cifar10_ablation"])
    if rows[0]["full_minus_arm"] is None:
        return f"not yet measured ({len(rows[0]['starts'])} start(s) with every arm finished)"
    parts = [
        f"{'AdamW' if r['arm'] == 'baseline' else r['removes']}: "
        + (
            "untested (identical runs: it never acts)"
            if r["full_minus_arm"].ties == r["full_minus_arm"].n
            else f"{r['full_minus_arm'].mean_difference:+.2f} pp, "
            f"{interval(r['full_minus_arm'].ci_low, r['full_minus_arm'].ci_high, '+.2f')}"
        )
        for r in rows
    ]
    line = (
        f"full rule minus each variant, CIFAR-10 ({regime(merged)}), {len(rows[0]['starts'])} paired starts: "
        + "; ".join(parts)
    )
    share = shares(rows)
    line += "; " + (
        "shares of the gain: " + ", ".join(f"{k} {v:.0%}" for k, v in share.items())
        if share
        else "no gain over AdamW to apportion"
    )
    if repeat and repeat.get("runs"):
        g = ablation_rows(repeat, METRIC["grokking_ablation"])
        # whether the full rule's cap ever bound at this task's lr: recorded by the decay map's runs at λ = 1
        idle = rg.never_binds(decay_map or {}, ("stiefel@wd=1",))
        measured = [
            f"{'AdamW' if r['arm'] == 'baseline' else r['removes']} {r['full_minus_arm'].mean_difference:+.1f}"
            + (" (the cap never binds at this lr: untested)" if r["arm"] == "no_trust_region" and idle else "")
            for r in g
            if r["full_minus_arm"] is not None
        ]
        if measured:
            c = repeat["config"]
            factors = rg.grokking_lr_factors(c["warmup_epochs"], c["epochs"])
            budget = rg.decay_budget(c["lr"], c["weight_decay"], factors)
            line += (
                f"; grokking repeat (p = {c['p']}, Σ lr·λ = {budget:.3g}, {c['epochs']:,} epochs, "
                f"{len(g[0]['starts'])} seeds, "
                f"val. acc. pp): " + ", ".join(measured)
            )
    return line


def regime(results: dict) -> str:
    """The regime of a results file's verdicts: its decay budget, training length, and the test
    accuracy the baseline and the Stiefel arm reached."""
    fields = {f.name for f in dataclasses.fields(CIFAR10Config)}
    config = dataclasses.replace(
        PROFILES["full"],
        **{k: tuple(v) if isinstance(v, list) else v for k, v in results["config"].items() if k in fields},
    )
    reached = {
        arm: np.mean([r["final"]["test_acc"] for k, r in results["runs"].items() if arm_of(k) == arm])
        for arm in SWEEP_ARMS
    }
    budget = rg.decay_budget(config.lr, config.weight_decay, lr_factors(config))
    return (
        f"Σ lr·λ = {budget:.3g}, {config.epochs} epochs on "
        f"{config.train_size:,} images, test accuracy reached "
        + ", ".join(f"{arm} {100 * v:.1f}%" for arm, v in reached.items())
    )


def cifar10_gain(results: dict, sweep: dict | None) -> str:
    """One line for the book's claims table: the paired gain of ``cifar10-full`` and the gains
    by size of ``cifar10_sweep-full`` (``None``: not run yet)."""
    starts, _, _, c = paired_gain(results)
    if c is None:
        return f"not yet measured ({len(starts)} paired start(s) finished)"
    line = (
        f"{c.mean_difference:+.2f} pp over {c.n} paired starts (t = {c.t_statistic:.3g}, "
        f"{c.wins}/{c.n}, 95% CI [{c.ci_low:+.2f}, {c.ci_high:+.2f}])"
    )
    rows = [r for r in sweep_gains(sweep) if r["comparison"] is not None] if sweep else []
    if rows:
        line += "; gain by training-set size: " + ", ".join(
            f"{r['train_size']:,} {r['comparison'].mean_difference:+.2f}" for r in rows
        )
    kinds = sorted({run["data"]["source_kind"] for run in results["runs"].values() if "data" in run})
    return line + (f" ({'/'.join(kinds)} copy of CIFAR-10)" if kinds else "") + "; regime: " + regime(results)


def _ratio_values(results: dict | None) -> np.ndarray:
    ratios = movement_ratios(results, "fixed_step") if results else {}
    return np.concatenate(list(ratios.values())) if ratios else np.array([])


def cifar10_movement(results: dict) -> str:
    """One line for the book's claims table: the fixed step's movement ratio and freezing's cost."""
    values = _ratio_values(results)
    if not len(values):
        return "not yet measured (no start finished in both arms)"
    line = (
        f"fixed step moves {values.min():.0f}-{values.max():.0f}x less per step than AdamW "
        f"(median {np.median(values):.0f}x)"
    )
    starts, _, _, c = paired_gain(results, "fixed_step", "frozen")  # what freezing the frames costs
    if c is not None:
        line += (
            f"; freezing costs {c.mean_difference:+.2f} pp against the fixed step "
            f"({c.n} starts, 95% CI [{c.ci_low:+.2f}, {c.ci_high:+.2f}])"
        )
    return line


def peers(grokking: list[dict], cifar10: list[dict], cifar10_tuned: list[dict] = (), judged: int = 12) -> str:
    """The claims table's line from the families' peer rows (:func:`family_peer_rows`): on grokking
    at every arm's tuned W_Q, W_K lr (``grokking_fair``) and on CIFAR-10, each relative − the
    Stiefel rule in the family's word, and the count of each word. On CIFAR-10 it reads the
    relatives at their CIFAR-10-tuned lrs (``cifar10_fair``'s rows, of ``judged`` starts) once each
    has enough paired starts for a test, and until then ``peers_cifar10`` (grokking's lrs, 3 starts)."""

    def line(rows: list[dict], digits: int) -> str:
        against = [r for r in rows if r["reference"] == "stiefel"]
        parts = [f"{label(r['arm'])} {r['verdict']} ({difference(r, digits)})" for r in against]
        counts = ", ".join(f"{w} {sum(r['verdict'] == w for r in against)}" for w in VERDICTS)
        return "; ".join(parts) + f" (of {len(against)}: {counts})"

    out = []
    if grokking:
        out.append(
            "grokking (p = 31, 1,500 epochs), each relative − the Stiefel rule at its tuned W_Q, W_K lr, 20 paired "
            "seeds, Holm across its declared family: " + line(grokking, 1)
        )
    at_tuned = [r for r in cifar10_tuned if r["arm"] in PEERS and r["reference"] == "stiefel"]
    if at_tuned and all(not math.isnan(r["p"]) for r in at_tuned):
        n = min(r["n"] for r in at_tuned)
        starts = f"{n} paired starts" if n == judged else f"{n} of {judged} paired starts so far (an interim look)"
        out.append(
            f"CIFAR-10 (the long protocol, λ = 1), each relative − the Stiefel rule at its CIFAR-10-tuned W_Q, W_K lr, "
            f"{starts}, Holm across its declared family: " + line(at_tuned, 2)
        )
    elif cifar10:
        out.append(
            "CIFAR-10 (the long protocol, λ = 1, 3 paired starts, each relative at its grokking lr), each relative − "
            "the Stiefel rule, Holm across its declared family: " + line(cifar10, 2)
        )
    return "; ".join(out) or "not yet measured (no run at the tuned lrs)"
