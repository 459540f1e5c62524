"""What a family's power allows, in words: its smallest detectable effect (or, for a time endpoint, its
lowest reachable p), and "not shown (...)" for an inconclusive comparison whose family could never reach
its margin (:class:`findings.detectable.Power`). The claims table reads them."""

from __future__ import annotations

from ..findings.detectable import Power

__all__ = ["effect_text", "not_shown"]


def _number(x: float) -> str:
    return f"{x:.2g}" if abs(x) < 1 else f"{x:.0f}" if abs(x) >= 10 else f"{x:.1f}"


def effect_text(p: Power) -> str:
    """ "smallest detectable effect 11 pp" or, for a time endpoint, "lowest reachable p 0.22"."""
    if p.floor is not None:
        return f"lowest reachable p {p.floor:.2g}"
    return f"smallest detectable effect {_number(p.sde)} {p.unit}".rstrip()


def not_shown(word: str, p: Power | None) -> str | None:
    """ "not shown (smallest detectable effect X)" for an *inconclusive* comparison whose family could
    never reach its margin (:attr:`Power.could_decide`); ``None`` otherwise (the word stands)."""
    if word != "inconclusive" or p is None or p.could_decide:
        return None
    return f"not shown ({effect_text(p)})"
