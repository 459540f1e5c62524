"""Words for identifiers: every arm, grid arm, component and reading the book names, as a reader
reads it. Tables, verdicts, takeaways, figures and explorers call :func:`label`; nothing else in
the book spells an arm's name out. Chapter: all.
"""

from __future__ import annotations

__all__ = [
    "difference",
    "ARMS", "READINGS", "FAMILIES", "label", "arm_label", "reading_label", "ordered_labels", "rate_text", "interval"
]

ARMS = {  # arm (arms.variants, arms.relatives) -> its label
    "stiefel": "the Stiefel rule",
    "baseline": "AdamW",
    "frozen": "frozen frames",
    "no_decay_qk": "AdamW without decay on W_Q, W_K",
    "fixed_step": "fixed step",
    "fixed_step_matched": "fixed step at the rule's step size",
    "no_projector": "no tangent projector",
    "per_entry": "per-entry second moment",
    "no_trust_region": "no trust region",
    "muon": "Muon",
    "muon_no_decay": "Muon without decay",
    "manifold_muon": "manifold Muon",
    "geoopt_radam": "geoopt's Riemannian Adam",
    "orthogonal_param": "orthogonal parametrization",
    "qk_norm": "QK-norm with a learned scale",
    "qk_norm_tuned": "QK-norm (temperature tuned)",
    "sphere": "the scale-free rule on the sphere",
    "stiefel_temp": "the Stiefel rule with a learned scale",
    "cayley_adam": "Cayley ADAM",
}

READINGS = {  # findings.regimes.READINGS key -> the reading in a few words
    "geometry": "the learned geometry survives weight decay",
    "decay_hurts": "AdamW's decay on W_Q, W_K is what hurts",
    "fixed_scale": "a fixed orthonormal scale is what helps",
}

FAMILIES = {  # book/protocol.yml's families -> their titles
    "grokking_fair": "grokking at tuned learning rates",
    "grokking_fair_scale": "scale alone, at tuned learning rates",
    "controls_p31": "the controls at p = 31",
    "controls_p97_time": "time to 90 % at p = 97",
    "grokking_p97": "grokking at p = 97",
    "decay_map": "the decay map",
    "decay_map_controls": "the decay map's controls",
    "trust_region": "the trust region",
    "ablation_grokking": "the ablation on grokking",
    "ablation_cifar10": "the ablation on CIFAR-10",
    "cifar10_protocol": "the preprint's CIFAR-10 protocol",
    "cifar10_long": "CIFAR-10's long protocol",
    "cifar10_size": "CIFAR-10's size sweep",
    "peers_grokking": "the relatives on grokking (first runs)",
    "peers_cifar10": "the relatives on CIFAR-10",
    "cifar10_fair": "CIFAR-10 at tuned learning rates",
    "cifar10_fair_decay": "CIFAR-10 at the decay of largest gap",
    "cifar10_best_cells": "CIFAR-10, each arm at its best decay and rate",
}

SETTINGS = {  # the grid arms' setting (engine.grid) -> its symbol
    "wd": "λ",
    "flr": "frame lr",
    "lr": "lr",
    "n": "images",
    "temp": "initial temperature",
}


def arm_label(arm: str) -> str:
    """``"stiefel@wd=0.3"`` -> ``"the Stiefel rule, λ = 0.3"``; an unknown arm is returned as it is."""
    name, *settings = arm.split("@")
    words = [ARMS.get(name, name)]
    for setting in settings:
        key, _, value = setting.partition("=")
        words.append(f"{SETTINGS.get(key, key)} = {value}")
    return ", ".join(words)


def reading_label(reading: str) -> str:
    """A reading of the regimes chapter's controls in a few words."""
    return READINGS.get(reading, reading)


def label(key: str, capital: bool = False) -> str:
    """The label of an arm (grid arms too) or a reading; ``capital`` starts it with a capital letter."""
    text = READINGS[key] if key in READINGS else arm_label(key)
    return text[:1].upper() + text[1:] if capital else text


def ordered_labels(keys) -> list[str]:
    """:func:`label` of each key, in order."""
    return [label(k) for k in keys]


def rate_text(lr: float) -> str:
    """A learning rate as the book writes it: a rung of the ladder short (``3e-4``, ``1e-2``), a
    rate from 0.1 to 100 plainly (``0.3``, ``1``, ``3``), lr 0 as ``0``."""
    if lr == 0 or 0.1 <= abs(lr) < 100:
        return f"{lr:g}"
    mantissa, exponent = f"{lr:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def interval(low: float, high: float, spec: str = "+.1f", level: int = 95) -> str:
    """An interval as the pages print it, its level said before it: ``"unadjusted 95 % CI
    [-0.35, -0.18]"`` (a difference reads ``"-0.27 pp, unadjusted 95 % CI [-0.35, -0.18]"``). The
    book's intervals are plain t intervals, never corrected; the verdict beside one is the
    corrected reading (issue 51: statistics that agree with themselves). ``level``: 95 for the
    comparisons, 90 for the one TOST reads."""
    return f"unadjusted {level} % CI [{low:{spec}}, {high:{spec}}]"


def difference(row: dict, digits: int = 1) -> str:
    """A family row's difference in pp and its interval: ``"+1.23 pp, unadjusted 95 % CI [-0.30, +2.70]"``;
    a TOST row (``tost_ci_pp``, no ``ci_pp``) gives the 90 % interval TOST reads."""
    lo, hi = row["ci_pp"] if "ci_pp" in row else row["tost_ci_pp"]
    return f"{row['mean_pp']:+.{digits}f} pp, {interval(lo, hi, f'+.{digits}f', 95 if 'ci_pp' in row else 90)}"
