"""A declared family's rule in fields a reader applies (:mod:`stiefel_book.families`), beside the
English of ``book/protocol.yml``: the endpoint as a mapping (``why``: the declared sentence;
``metric``, ``at``, ``test``, ``unit``, ``scale``, ``direction``), ``compare`` (``arms`` against
``references``, or explicit ``pairs``; ``reads``: files whose runs it pairs with but does not
govern; ``primary``: one of the pairs, tested first and alone at the full α, the others corrected
among themselves) and ``encoded`` (when the English was put in fields, and that no rule changed). Validated
here for :func:`stiefel_book.protocol.load`; each mistake is one :class:`ProtocolError`."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["ProtocolError", "Endpoint", "TESTS", "DIRECTIONS", "expand", "structured"]

# the tests the family reader applies: paired t and TOST (stats.family_verdicts), or the exact McNemar test of
# the seeds past the family's count_past (a count: no equivalence reading, so no margin)
TESTS = ("paired_t", "mcnemar")
DIRECTIONS = ("higher_is_better", "lower_is_better")
_ENDPOINT_KEYS = {"why", "metric", "at", "test", "unit", "direction"}
_ISO = re.compile(r"^\s*(\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?(?:Z|[+-]\d{2}:?\d{2})?)?)")


class ProtocolError(ValueError):
    """A protocol file that is missing or does not say what it must. Chapters: all that state verdicts."""


def _strings(raw: dict, key: str, where: str) -> tuple[str, ...] | None:
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ProtocolError(f"{where}: {key} must be a list of names, got {value!r}")
    return tuple(value)


@dataclass(frozen=True)
class Endpoint:
    """A family's endpoint in fields: ``metric`` of each run read ``at`` ``"final"`` (its final
    record), ``"last"`` (its last logged one) or an epoch; the paired differences times ``scale``
    are in ``unit`` (the margin's); ``test`` names the test of each pair. Chapters: all that state verdicts."""

    metric: str
    at: str | int
    test: str
    unit: str
    scale: float
    higher_is_better: bool


def expand(arms, references) -> tuple[tuple[str, str], ...]:
    """Each of ``arms`` against each of ``references``, reference by reference: ``(arm, reference)``,
    an arm never against itself, each pair of arms once (``b − a`` is dropped after ``a − b``)."""
    pairs: list[tuple[str, str]] = []
    for ref in references:
        pairs += [(a, ref) for a in arms if a != ref and (ref, a) not in pairs and (a, ref) not in pairs]
    return tuple(pairs)


def _expand(compare: dict, where: str) -> tuple[tuple[str, str], ...]:
    """``compare``'s comparisons: its ``pairs``, or each of ``arms`` against each of ``references``
    (reference by reference), an arm never against itself and each pair of arms once."""
    if ("pairs" in compare) == ("arms" in compare or "references" in compare):
        raise ProtocolError(f"{where}: compare takes pairs ([[arm, reference], ...]) or arms and references, one form")
    if "pairs" in compare:
        raw = compare["pairs"]
        if (
            not isinstance(raw, list)
            or not raw
            or not all(
                isinstance(p, list) and len(p) == 2 and all(isinstance(a, str) and a for a in p) and p[0] != p[1]
                for p in raw
            )
        ):
            raise ProtocolError(f"{where}: compare.pairs must be a list of [arm, reference] of two names, got {raw!r}")
        pairs = [tuple(p) for p in raw]
    else:
        arms, refs = (
            _strings(compare, "arms", where + ": compare"),
            _strings(compare, "references", where + ": compare"),
        )
        if not arms or not refs:
            raise ProtocolError(f"{where}: compare needs both arms and references (non-empty lists of names)")
        pairs = list(expand(arms, refs))
    if len({frozenset(p) for p in pairs}) != len(pairs):
        raise ProtocolError(f"{where}: compare names a pair of arms twice: {pairs}")
    return tuple(pairs)


def structured(raw: dict, margin_unit: str, where: str):
    """The fields a reader applies: ``(Endpoint, pairs, reads, encoded, primary)``, or ``(None, (), (),
    None, None)`` for a family declared in words only."""
    endpoint, fields = raw["endpoint"], {"compare", "encoded"} & set(raw)
    if not isinstance(endpoint, dict):
        if fields:
            raise ProtocolError(f"{where}: {sorted(fields)} need the endpoint in fields ({sorted(_ENDPOINT_KEYS)})")
        return None, (), (), None, None
    missing, unknown = _ENDPOINT_KEYS - set(endpoint), set(endpoint) - _ENDPOINT_KEYS - {"scale"}
    if missing or unknown or {"compare", "encoded"} - set(raw):
        raise ProtocolError(
            f"{where}: an endpoint in fields takes {sorted(_ENDPOINT_KEYS)} and optionally scale "
            f"(missing {sorted(missing)}, unknown {sorted(unknown)}), and the family then needs compare and encoded"
        )
    e, scale = endpoint, endpoint.get("scale", 1)
    if (
        not isinstance(e["metric"], str)
        or not e["metric"]
        or e["test"] not in TESTS
        or e["direction"] not in DIRECTIONS
    ):
        raise ProtocolError(
            f"{where}: endpoint.metric must name a run metric, test be one of {TESTS}, direction one of "
            f"{DIRECTIONS}; got {e['metric']!r}, {e['test']!r}, {e['direction']!r}"
        )
    at = e["at"]
    if not (at in ("final", "last") or (isinstance(at, int) and not isinstance(at, bool) and at >= 0)):
        raise ProtocolError(f"{where}: endpoint.at must be final, last or an epoch (an integer), got {at!r}")
    if isinstance(scale, bool) or not isinstance(scale, int | float) or not scale > 0:
        raise ProtocolError(f"{where}: endpoint.scale must be a positive number (metric to unit), got {scale!r}")
    if margin_unit and e["unit"] != margin_unit:
        raise ProtocolError(f"{where}: endpoint.unit {e['unit']!r} must be the margin's unit {margin_unit!r}")
    if not isinstance(e["why"], str) or not e["why"].strip():
        raise ProtocolError(f"{where}: endpoint.why must be the declared sentence, got {e['why']!r}")
    encoded, compare = raw["encoded"], raw["compare"]
    if not (isinstance(encoded, str) and _ISO.match(encoded)):
        raise ProtocolError(f"{where}: encoded must be a sentence that starts with its date, got {encoded!r}")
    if not isinstance(compare, dict) or set(compare) - {"arms", "references", "pairs", "reads", "primary"}:
        raise ProtocolError(
            f"{where}: compare takes arms and references, or pairs, and optionally reads and primary; got {compare!r}"
        )
    if e["test"] == "mcnemar" and (
        raw.get("count_past") is None or raw.get("margin", raw.get("margin_pp")) is not None
    ):
        raise ProtocolError(
            f"{where}: the mcnemar test counts seeds past count_past (give it) and has no margin (null)"
        )
    measure = Endpoint(e["metric"], at, e["test"], e["unit"], float(scale), e["direction"] == "higher_is_better")
    pairs, primary = _expand(compare, where), compare.get("primary")
    if primary is not None:
        if e["test"] != "mcnemar" or not isinstance(primary, list) or tuple(primary) not in pairs:
            raise ProtocolError(
                f"{where}: compare.primary must be one of the family's pairs [arm, reference], with the mcnemar "
                f"test (the only one the reader tests in that order); got {primary!r}"
            )
        primary = tuple(primary)
    return measure, pairs, _strings(compare, "reads", where + ": compare") or (), encoded, primary
