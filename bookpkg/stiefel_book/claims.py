"""The preprint's claims beside our measurements, built from certificates and results files.

One table feeds the book's introduction (the intro chapter) and the README (``tools/readme.py``
writes it there), so neither can drift from what the runs wrote. This module is the caller that
loads the results files; ``findings`` reads them. A claim whose results file does not exist yet
says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from . import claim_measures, claim_new, claim_verdicts, findings, preprint, protocol, wording
from .certify import certify_all
from .claim_box import PENDING, Verdict
from .experiments import get_config
from .findings.fair_fight import tuned_lrs
from .gauge import certify_gauge_gradients, certify_projected_run
from .results import full_results, load_results

__all__ = ["Claim", "CLAIMS"]


@dataclass(frozen=True)
class Claim:
    """One row of the claims table: the claim, the preprint's words, its chapter and how to measure it.
    Chapter: intro."""

    claim: str
    preprint: str
    chapter: str  # book/NAME, the chapter that holds the evidence
    measure: Callable[[], str]
    verdict: Callable[[], Verdict]
    short: str = ""  # the claim in a few words: the short table's first column


# The measured numbers of each certificate that the table quotes (keys of its summary()).
HEADLINES = {
    "P1": ["‖ξ/‖ξ‖ - η*‖_F, first steps", "samples that beat η*"],
    "P2": ["max_c,t ‖W_t(c) - W_t(1)‖ / ‖W_t(1)‖", "fixed rule: slope of log displacement vs log c"],
    "P3": ["observed max cond(I + ξᵀξ)", "bound 1 + Δ²", "same run, no trust region: max cond"],
    "P4": ["max_Q,t ‖W'_t - Q W_t‖ / ‖W_t‖", "same, second_moment='entry'"],
    "P5": ["max ‖P_W(λW)‖ / ‖λW‖", "Stiefel ‖W_Q‖_F", "Euclidean ‖W_Q‖_F"],
}


def _certificate(key: str) -> Callable[[], str]:
    def measure() -> str:
        cert = _certificates()[key]
        summary = cert.summary()
        details = "; ".join(f"{name}: {summary[name]}" for name in HEADLINES[key] if name in summary)
        return ("certified" if cert.passed else "NOT certified") + f" in float64 ({details})"

    return measure


# What each certificate states, as the intro's "What we found" says it.
STATES = {
    "P1": "the update is steepest descent in the embedded metric",
    "P2": "it does not depend on the gradient's scale",
    "P3": "it is well conditioned",
    "P4": "it is exactly O(d)-equivariant",
    "P5": "weight decay has zero Riemannian gradient on the frames",
}


def _certificate_verdict(key: str) -> Callable[[], Verdict]:
    def verdict() -> Verdict:
        cert = _certificates()[key]
        name = HEADLINES[key][0]
        return claim_verdicts.certificate(cert.passed, f"{name}: {cert.summary()[name]}", STATES[key])

    return verdict


_CACHE: dict = {}


def _certificates() -> dict:
    if "certificates" not in _CACHE:  # the certificates run once per process
        _CACHE["certificates"] = certify_all()
    return _CACHE["certificates"]


def _grokking() -> str:
    from . import declared

    results, family = declared.grokking()
    return claim_measures.grokking(results, get_config("grokking", "full"), family)


def _regimes_rules() -> dict:
    from . import protocol

    return findings.decay_map.rules(protocol.load())


def _regimes() -> str:
    from . import declared

    controls, dmap = load_results("grokking_ablation", "full"), load_results("grokking_decay_map", "full")
    return claim_measures.regimes(
        controls,
        dmap,
        get_config("grokking_decay_map", "full").task,
        _regimes_rules(),
        full_task=full_results("grokking"),
        tuned_map=load_results("grokking_decay_map_tuned", "full"),
        fair_rows=declared.fair_rows(),
        p97_rows=declared.p97_rows(),
    )


def _from_results(measure: Callable[[dict], str], experiment: str) -> Callable[[], str]:
    """A claim measured by ``measure(results)`` once ``experiment``'s full file has a run."""

    def claim() -> str:
        results = full_results(experiment)
        return measure(results) if results else "not yet measured (no finished full run)"

    return claim


def _rows_text(rows: list[dict]) -> str:
    return "; ".join(wording.cifar10.row_text(r).replace("**", "") for r in rows)


def _cifar10_gain(results: dict) -> str:
    from . import declared

    rows = declared.cifar10()
    return (
        claim_measures.cifar10_gain(results, load_results("cifar10_sweep", "full"))
        + "; under the declared families: "
        + _rows_text(
            rows["protocol"][:1] + rows["protocol"][3:4] + rows["long"][:1] + rows["size"][:1] + _tuned_gain(rows)
        )
    )


def _tuned_gain(rows: dict) -> list[dict]:
    """The Stiefel rule − AdamW at tuned W_Q, W_K lrs (family ``cifar10_fair``), once it has runs."""
    from .findings.cifar10_tuned import find

    row = find(rows["tuned"], "stiefel", "baseline")
    return [row] if row else []


def _cifar10_claim(rows: dict):
    tuned = _tuned_gain(rows)
    return claim_verdicts.cifar10_gain_verdict(
        rows["protocol"],
        rows["long"],
        rows["size"],
        tuned[0] if tuned else None,
        rows.get("at_decay"),
        rows.get("best_cells"),
    )


def _cifar10_movement(results: dict) -> str:
    from . import declared

    rows = declared.cifar10()
    frozen = [r for r in rows["long"] if r["what"].startswith("the Stiefel rule − frozen frames")]
    return (
        claim_measures.cifar10_movement(results)
        + " (a fixed step's size is lr × gradient: the ratio is set by its lr); under the declared families: "
        + _rows_text(rows["protocol"][1:3] + frozen)
    )


def _peers(results: dict) -> str:
    from . import declared

    judged = len(protocol.load().sweeps["cifar10_peers_qk_lr"]["judged_seeds"])
    return claim_measures.peers(
        declared.peers()["rows"], declared.peers_cifar10(), declared.cifar10()["tuned"], judged
    )


def _ablation(results: dict) -> str:
    return claim_measures.ablation(
        results,
        load_results("cifar10", "full"),
        load_results("grokking_ablation", "full"),
        load_results("grokking_decay_map", "full"),
    )


def _verdicts() -> dict[str, Callable[[], Verdict]]:
    """Each experiment claim's verdict from the declared families' rows its chapter reads (:mod:`declared`)."""
    from . import declared

    found = {
        "grokking": lambda: claim_verdicts.grokking_verdict(
            *declared.grokking(), declared.p97_rows(), tuned_lrs(load_results("grokking_p97_fair", "full")) or None
        ),
        "cifar10": lambda: _cifar10_claim(declared.cifar10()),
        "movement": lambda: claim_verdicts.movement_verdict(*(declared.cifar10()[k] for k in ("protocol", "movement"))),
        "ablation": lambda: claim_verdicts.ablation_verdict(declared.ablation()["cifar10"]),
        "regimes": lambda: claim_verdicts.regimes_verdict(
            load_results("grokking_ablation", "full"),
            load_results("grokking_decay_map", "full"),
            get_config("grokking_decay_map", "full").task,
            _regimes_rules(),
            tuned_map=load_results("grokking_decay_map_tuned", "full"),
            fair_rows=declared.fair_rows(),
            per_decay_map=load_results("grokking_decay_map_per_decay", "full"),
        ),
        "peers": lambda: claim_new.peers_verdict(declared.peers()["rows"]),
        "fair_fight": _fair_fight_verdict,
        "routing": lambda: _routing_readings(claim_new.routing_verdict(declared.routing())),
    }
    two_axes = ("grokking", "cifar10", "movement", "ablation", "regimes", "fair_fight")
    return {name: _with_axes(v, name) if name in two_axes else v for name, v in found.items()}


def _routing_readings(verdict: Verdict) -> Verdict:
    """The routing verdict with its tuned axis's readings, one a task (:func:`axes.routing`)."""
    from dataclasses import replace

    from . import axes

    if verdict.tuned is None:
        return verdict
    return replace(verdict, tuned=replace(verdict.tuned, readings=axes.routing()))


def _with_axes(verdict: Callable[[], Verdict], name: str) -> Callable[[], Verdict]:
    """``verdict`` with its two axes (:mod:`axes`: against the preprint's own baseline, at tuned rates)
    and the claim's word from them (:func:`claim_axes.overall`); pending stays pending."""

    def with_axes() -> Verdict:
        from dataclasses import replace

        from . import axes
        from .claim_axes import overall

        v = verdict()
        if v.word == "pending":
            return v
        baseline, tuned = getattr(axes, name)()
        return replace(v, word=overall(baseline, tuned), baseline=baseline, tuned=tuned)

    return with_axes


def _fair_fight_verdict() -> Verdict:
    from . import declared, protocol

    family = protocol.family("grokking_fair")
    return claim_verdicts.fair_fight_verdict(
        declared.tuned_rows(),
        declared.scale_rows(),
        load_results("grokking_ablation", "full"),
        family.margin / 100,
        family.alpha,
        declared.p97_rows(),
    )


def _gauge_certificates() -> tuple:
    if "gauge" not in _CACHE:  # the gauge's two certificates, once per process too
        _CACHE["gauge"] = certify_gauge_gradients(), certify_projected_run()
    return _CACHE["gauge"]


def _gauge_verdict() -> Verdict:
    gradients, projected = _gauge_certificates()
    return claim_verdicts.certificate(
        gradients.passed and projected.passed,
        "no gradient along the gauge",
        "a direction along which the loss is invariant carries no gradient, so gauge removal "
        "cannot motivate the method",
    )


def _gauge() -> str:
    gradients, projected = _gauge_certificates()
    g, p = gradients.summary(), projected.summary()
    ok = gradients.passed and projected.passed
    return ("certified" if ok else "NOT certified") + (
        f" in float64 (gradient's gauge component, Stiefel along StiefelAdam: {g['Stiefel, O(r), along StiefelAdam']}; "
        f"Euclidean along AdamW: {g['Euclidean, GL(r), along AdamW']}; gauge-projected run vs plain, parameters: "
        f"{p['Stiefel arm, max |θ_projected − θ_plain|']})"
    )


_V = _verdicts()
CLAIMS = [
    Claim(
        "The Stiefel rule's gain on grokking survives a tuned AdamW (every arm at its own W_Q, W_K lr)",
        preprint.FAIR_FIGHT,
        "book/fair_fight",
        lambda: _V["fair_fight"]().headline,
        _V["fair_fight"],
        short="Grokking's gain survives tuning",
    ),
    Claim(
        "P1: the update is steepest descent in the embedded metric",
        preprint.CERTIFIED,
        "book/p1_steepest_descent",
        _certificate("P1"),
        _certificate_verdict("P1"),
        short="P1: steepest descent",
    ),
    Claim(
        "P2: the update is independent of gradient scale",
        preprint.CERTIFIED,
        "book/p2_scale_invariance",
        _certificate("P2"),
        _certificate_verdict("P2"),
        short="P2: scale invariance",
    ),
    Claim(
        "P3: the update is well conditioned",
        preprint.CERTIFIED,
        "book/p3_conditioning",
        _certificate("P3"),
        _certificate_verdict("P3"),
        short="P3: well conditioned",
    ),
    Claim(
        "P4: the update is exactly O(d)-equivariant",
        preprint.CERTIFIED,
        "book/p4_equivariance",
        _certificate("P4"),
        _certificate_verdict("P4"),
        short="P4: O(d)-equivariance",
    ),
    Claim(
        "P5: weight decay has zero Riemannian gradient on St(d, r)",
        preprint.MECHANISM,
        "book/p5_weight_decay",
        _certificate("P5"),
        _certificate_verdict("P5"),
        short="P5: decay has no Riemannian gradient",
    ),
    Claim(
        "Grokking: the frames survive weight decay's collapse cycles",
        preprint.grokking_claim(),
        "book/grokking",
        _grokking,
        _V["grokking"],
        short="Grokking: frames survive decay",
    ),
    Claim(
        "CIFAR-10 patches: the Stiefel rule gains",
        preprint.cifar10_claim(),
        "book/cifar10_patches",
        _from_results(_cifar10_gain, "cifar10"),
        _V["cifar10"],
        short="CIFAR-10: the rule gains",
    ),
    Claim(
        "A fixed-step Riemannian update barely moves",
        preprint.movement_claim(),
        "book/cifar10_patches",
        _from_results(_cifar10_movement, "cifar10"),
        _V["movement"],
        short="A fixed step barely moves",
    ),
    Claim(
        "The gain comes from the scale-free step",
        preprint.ABLATION_SHARE,
        "book/ablation",
        _from_results(_ablation, "cifar10_ablation"),
        _V["ablation"],
        short="The gain is the scale-free step",
    ),
    Claim(
        "When the geometry dominates (the title's question)",
        preprint.REGIMES,
        "book/regimes",
        _regimes,
        _V["regimes"],
        short="Where the geometry dominates",
    ),
    Claim(
        "Among its relatives: is it just Muon, geoopt, per-entry moments or a parametrization?",
        preprint.RELATIVES,
        "book/peers",
        _from_results(_peers, "grokking_peers"),
        _V["peers"],
        short="Is it just one of its relatives?",
    ),
    Claim(
        "Where attention must learn to route (recall, induction, language), the Stiefel rule beats a tuned AdamW",
        preprint.ROUTING,
        "book/routing",
        lambda: _V["routing"]().sentence or PENDING.headline,
        _V["routing"],
        short="Routing: beats a tuned AdamW",
    ),
    Claim(
        "Gauge removal cannot motivate the method",
        preprint.GAUGE,
        "book/gauge",
        _gauge,
        _gauge_verdict,
        short="Gauge removal",
    ),
]
