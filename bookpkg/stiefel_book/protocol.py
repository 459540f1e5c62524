"""The book's rules of inference, declared before the runs they govern: ``book/protocol.yml``.

Each family of comparisons says when it was declared (``declared``: an ISO date or date-time
first, words after), its correction (Holm within the family), α, its equivalence margin with
the reason, its endpoint, the results files it reads (``results``: file stems, optionally only
some ``arms``) and the chapters that state its verdicts. A rule written after the runs it judges
says so: ``set_after_runs: true`` and ``after_runs`` (what, and when). :func:`protocol_hash`
goes into every new run's provenance; :func:`protocol_audit.violations` is the check ``make test`` runs: a run
governed by a family that finished before the family was declared, unless the family says it was
set after the runs, whose chapters (once the lead marks them ``chapters_checked``) must then say
"set after the runs".

A family may also carry its rule in fields a reader applies (:mod:`stiefel_book.protocol_fields`,
read by :mod:`stiefel_book.families`).
"""

from __future__ import annotations

import copy
import datetime as _dt
import functools
import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from .protocol_fields import _ISO, Endpoint, ProtocolError, _strings, structured

__all__ = [
    "ProtocolError",
    "Family",
    "Endpoint",
    "Protocol",
    "protocol_path",
    "load",
    "family",
    "margin",
    "alpha",
    "protocol_hash",
    "AFTER_RUNS_NOTE",
]

AFTER_RUNS_NOTE = "set after the runs"  # the words a chapter says for a family whose rule came after its runs
CORRECTIONS = ("holm", "none")
_REQUIRED = {"declared", "comparisons", "endpoint", "correction", "alpha", "margin_reason"}
_OPTIONAL = {
    "runs",
    "margin_pp",
    "margin",
    "margin_unit",
    "set_after_runs",
    "after_runs",
    "record",
    "results",
    "arms",
    "chapters",
    "chapters_checked",
    "count_past",
    "count_metric",
    "selection_seeds",
    "judged_seeds",
    "amended",
    "adopts",
    "compare",
    "encoded",
    "smallest_detectable_effect",
}
# A family declared from this day on, before its runs, states its power first (issue 52).
POWER_REQUIRED_FROM = _dt.date(2026, 12, 6)
_POWER_KEYS = {"value", "unit", "of", "declared"}
_POWER_OPTIONAL = {"floor_p", "equivalence_margin", "range"}
_CODE_CITED = re.compile(r"\bcommit [0-9a-f]{7}|\b(?:findings|experiments|stiefel_core|stiefel_book)\.\w+")


@dataclass(frozen=True)
class Family:
    """One declared family of comparisons. Chapters: all that state verdicts."""

    name: str
    declared: _dt.date | _dt.datetime  # a date-time is UTC when it names no zone
    declared_text: str
    comparisons: str
    endpoint: str
    correction: str  # "holm" or "none"
    alpha: float
    margin: float | None  # the equivalence margin in margin_unit; None: no equivalence test (margin_reason says why)
    margin_unit: str
    margin_reason: str
    set_after_runs: bool
    after_runs: str | None  # what was set after the runs, and when, in words
    results: tuple[str, ...]  # results file stems ("grokking_ablation-full")
    arms: tuple[str, ...] | None  # only these arms' runs (an arm or its grid points "arm@..."); None: all
    chapters: tuple[str, ...]  # chapter names (book/<name>.ipynb)
    chapters_checked: bool  # the lead has marked the chapters: the note is then required
    count_past: float | None  # bimodal endpoints: the threshold whose count of seeds past it is shown beside the mean
    count_metric: str | None  # the run metric counted past count_past (None: the endpoint's own)
    selection_seeds: tuple[int, ...] | None
    judged_seeds: tuple[int, ...] | None
    record: str | None = None  # the commits and code behind after_runs (not shown to readers)
    amended: str | None = None  # a change made before the runs it touches: when, what, and why
    adopts: tuple[
        str, ...
    ] = ()  # results files (stems) whose earlier runs it may adopt as its own (``amended`` says why)
    measure: Endpoint | None = None  # the endpoint in fields (None: the family is declared in words only)
    pairs: tuple[tuple[str, str], ...] = ()  # (arm, reference): each comparison arm − reference, in order
    reads: tuple[str, ...] = ()  # results stems read for pairing beside ``results``, not governed by the family
    primary: tuple[str, str] | None = None  # the pair tested first and alone at the full α (the others corrected apart)
    encoded: str | None = None  # when the declared English was put in fields, and that no rule changed
    power: dict | None = None  # smallest_detectable_effect: value, unit, of, declared (+ floor_p, ...)


@dataclass(frozen=True)
class Protocol:
    """A loaded, validated protocol file. Chapters: all that state verdicts."""

    path: Path
    version: int
    families: dict[str, Family]
    sweeps: dict[str, dict]
    hash: str


def protocol_path(path: Path | str | None = None) -> Path:
    """``path``, else ``$STIEFEL_PROTOCOL``, else the checkout's ``book/protocol.yml``."""
    if path is not None:
        return Path(path)
    if os.environ.get("STIEFEL_PROTOCOL"):
        return Path(os.environ["STIEFEL_PROTOCOL"])
    from .checkout import checkout_root

    root = checkout_root()
    if root is None:
        raise ProtocolError(
            "stiefel_book is installed, not run from a checkout, so it has no book/protocol.yml: "
            "pass path=... or set STIEFEL_PROTOCOL=/path/to/protocol.yml"
        )
    return root / "book" / "protocol.yml"


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise ProtocolError(
            f"no protocol file at {path}: the book's rules of inference live in book/protocol.yml "
            "(pass path=... or set STIEFEL_PROTOCOL to read another)"
        ) from None


def protocol_hash(path: Path | str | None = None, *, missing_ok: bool = False) -> str | None:
    """The first 12 hex digits of the sha256 of the protocol file's bytes; ``None`` when there is
    no file and ``missing_ok`` (an installed library's runs record no protocol)."""
    try:
        data = _read_bytes(protocol_path(path))
    except ProtocolError:
        if missing_ok:
            return None
        raise
    return hashlib.sha256(data).hexdigest()[:12]


def _declared(value, where: str) -> tuple[_dt.date | _dt.datetime, str]:
    if isinstance(value, _dt.datetime | _dt.date):  # YAML reads an unquoted date as one
        return value, value.isoformat()
    match = _ISO.match(value) if isinstance(value, str) else None
    if match is None:
        raise ProtocolError(
            f"{where}: declared must begin with an ISO date or date-time (2026-12-02 or "
            f"2026-12-02T06:30Z), then any words; got {value!r}"
        )
    text = match.group(1).replace(" ", "T").replace("Z", "+00:00")
    try:
        when = _dt.datetime.fromisoformat(text) if "T" in text else _dt.date.fromisoformat(text)
    except ValueError as e:
        raise ProtocolError(f"{where}: declared {match.group(1)!r} is not a valid date: {e}") from None
    return when, value


def _seeds(raw: dict, key: str, where: str) -> tuple[int, ...] | None:
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise ProtocolError(f"{where}: {key} must be a list of integer seeds, got {value!r}")
    return tuple(value)


def _day(when: _dt.date | _dt.datetime) -> _dt.date:
    return when.date() if isinstance(when, _dt.datetime) else when


def _power(raw, family_declared, set_after: bool, where: str) -> dict | None:
    """The family's ``smallest_detectable_effect``: what it could detect (``value`` in ``unit``, or
    null with ``floor_p`` for an exact test), of which comparison (``of``) and when it was stated
    (``declared``: a date first; stated after the family's runs, it must say "after the runs")."""
    where = f"{where}: smallest_detectable_effect"
    if raw is None:
        if not set_after and _day(family_declared) >= POWER_REQUIRED_FROM:
            raise ProtocolError(
                f"{where} is missing: a family declared before its runs (from {POWER_REQUIRED_FROM}) must state its "
                "power: the smallest effect its primary comparison detects, or its exact test's floor p"
            )
        return None
    if not isinstance(raw, dict) or _POWER_KEYS - set(raw) or set(raw) - _POWER_KEYS - _POWER_OPTIONAL:
        raise ProtocolError(
            f"{where} must be a mapping with {sorted(_POWER_KEYS)} and optionally {sorted(_POWER_OPTIONAL)}, "
            f"got {raw!r}"
        )
    value, floor = raw["value"], raw.get("floor_p")
    if value is not None and (isinstance(value, bool) or not isinstance(value, int | float) or not value > 0):
        raise ProtocolError(f"{where}: value must be a positive number (or null with floor_p), got {value!r}")
    if floor is not None and (isinstance(floor, bool) or not isinstance(floor, int | float) or not 0 < floor <= 1):
        raise ProtocolError(f"{where}: floor_p must be a probability in (0, 1], got {floor!r}")
    if value is None and floor is None:
        raise ProtocolError(f"{where}: give value (the smallest detectable effect) or floor_p (an exact test's floor)")
    for key in ("unit", "of"):
        if not isinstance(raw[key], str) or not (raw[key].strip() or key == "unit" and value is None):
            raise ProtocolError(f"{where}: {key} must be words, got {raw[key]!r}")
    stated, text = _declared(raw["declared"], where)
    after = _day(stated) > _day(family_declared) or set_after
    if after and "after the runs" not in text:
        raise ProtocolError(
            f'{where}: stated on {_day(stated)}, after the family\'s declaration, so declared must say "after the runs"'
        )
    if not set_after and _day(family_declared) >= POWER_REQUIRED_FROM and after:
        raise ProtocolError(f"{where}: a family declared before its runs states its power with it, not later")
    return dict(raw)


def _family(name: str, raw, where: str) -> Family:
    where = f"{where}: family {name!r}"
    if not isinstance(raw, dict):
        raise ProtocolError(f"{where} must be a mapping of its settings, got {raw!r}")
    missing, unknown = _REQUIRED - set(raw), set(raw) - _REQUIRED - _OPTIONAL
    if missing or unknown:
        wrong = [f"missing {sorted(missing)}"] * bool(missing) + [f"unknown keys {sorted(unknown)}"] * bool(unknown)
        raise ProtocolError(
            f"{where}: "
            + "; ".join(wrong)
            + f" (a family takes {sorted(_REQUIRED)} and optionally {sorted(_OPTIONAL)})"
        )
    declared, declared_text = _declared(raw["declared"], where)
    if raw["correction"] not in CORRECTIONS:
        raise ProtocolError(f"{where}: correction must be one of {CORRECTIONS}, got {raw['correction']!r}")
    a = raw["alpha"]
    if isinstance(a, bool) or not isinstance(a, int | float) or not 0 < a < 0.5:
        raise ProtocolError(f"{where}: alpha must be a number in (0, 0.5), got {a!r}")
    if "margin_pp" in raw and "margin" in raw:
        raise ProtocolError(f"{where}: give margin_pp (percentage points) or margin with margin_unit, not both")
    m = raw.get("margin_pp", raw.get("margin"))
    unit = "pp" if "margin_pp" in raw else raw.get("margin_unit", "")
    if m is not None and (isinstance(m, bool) or not isinstance(m, int | float) or not m > 0):
        raise ProtocolError(f"{where}: the margin must be a positive number (or null: no equivalence test), got {m!r}")
    if m is not None and not unit:
        raise ProtocolError(f"{where}: margin needs margin_unit (what the differences are measured in)")
    measure, pairs, reads, encoded, primary = structured(raw, unit, where)
    if measure is not None:
        raw = {**raw, "endpoint": raw["endpoint"]["why"]}
    for key in ("comparisons", "endpoint", "margin_reason"):
        if not isinstance(raw[key], str) or not raw[key].strip():
            raise ProtocolError(f"{where}: {key} must be a sentence, got {raw[key]!r}")
    after = raw.get("set_after_runs", False)
    for key in ("set_after_runs", "chapters_checked"):
        if not isinstance(raw.get(key, False), bool):
            raise ProtocolError(f"{where}: {key} must be true or false, got {raw[key]!r}")
    if after and not (isinstance(raw.get("after_runs"), str) and raw["after_runs"].strip()):
        raise ProtocolError(
            f"{where}: set_after_runs is true, so after_runs must say what was set after the runs, and when"
        )
    if after and _CODE_CITED.search(raw["after_runs"]):
        raise ProtocolError(
            f"{where}: after_runs is read by readers, in words: move the commits and code names it cites "
            f"({_CODE_CITED.search(raw['after_runs']).group(0)!r}) into record"
        )
    if "record" in raw and not (isinstance(raw["record"], str) and raw["record"].strip()):
        raise ProtocolError(f"{where}: record must be a sentence (the commits and code behind after_runs)")
    amended = raw.get("amended")
    if "adopts" in raw and amended is None:
        raise ProtocolError(f"{where}: adopts needs amended, the sentence that says when and why runs are adopted")
    if amended is not None and not (isinstance(amended, str) and _ISO.match(amended)):
        raise ProtocolError(
            f"{where}: amended must be a sentence that starts with its date (2026-12-03T12:40Z: ...), got {amended!r}"
        )
    past = raw.get("count_past")
    if past is not None and (isinstance(past, bool) or not isinstance(past, int | float)):
        raise ProtocolError(f"{where}: count_past must be a number (the endpoint's threshold), got {past!r}")
    counted = raw.get("count_metric")
    if counted is not None and (past is None or not isinstance(counted, str) or not counted.strip()):
        raise ProtocolError(
            f"{where}: count_metric must name the run metric counted past count_past, and needs count_past; "
            f"got count_metric={counted!r}, count_past={past!r}"
        )
    return Family(
        name=name,
        declared=declared,
        declared_text=declared_text,
        comparisons=raw["comparisons"],
        endpoint=raw["endpoint"],
        correction=raw["correction"],
        alpha=float(a),
        margin=None if m is None else float(m),
        margin_unit=unit,
        margin_reason=raw["margin_reason"],
        set_after_runs=after,
        after_runs=raw.get("after_runs"),
        record=raw.get("record"),
        results=_strings(raw, "results", where) or (),
        arms=_strings(raw, "arms", where),
        chapters=_strings(raw, "chapters", where) or (),
        chapters_checked=raw.get("chapters_checked", False),
        count_past=None if past is None else float(past),
        count_metric=counted,
        selection_seeds=_seeds(raw, "selection_seeds", where),
        judged_seeds=_seeds(raw, "judged_seeds", where),
        amended=amended,
        adopts=_strings(raw, "adopts", where) or (),
        measure=measure,
        pairs=pairs,
        reads=reads,
        primary=primary,
        encoded=encoded,
        power=_power(raw.get("smallest_detectable_effect"), declared, after, where),
    )


@functools.lru_cache(maxsize=8)
def _parsed(data: bytes):
    """The YAML of ``data``, parsed once per content (a chapter or the claims table reads the protocol
    dozens of times); libyaml's safe loader where it is built in."""
    import yaml  # the chapters' extra: the wheel's core needs torch alone

    return yaml.load(data, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def load(path: Path | str | None = None) -> Protocol:
    """Read and validate the protocol file (see :func:`protocol_path`); :class:`ProtocolError`
    saying what is wrong and where. The file is read each time, its parse reused while its bytes
    are the same."""
    import yaml

    where = protocol_path(path)
    data = _read_bytes(where)
    try:
        raw = copy.deepcopy(_parsed(data))  # the caller's own copy: the cached parse is never changed
    except yaml.YAMLError as e:
        raise ProtocolError(f"{where} is not valid YAML: {e}") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("families"), dict) or not raw["families"]:
        raise ProtocolError(f"{where}: the file must be a mapping with a non-empty 'families' mapping")
    if not isinstance(raw.get("version"), int):
        raise ProtocolError(f"{where}: 'version' must be an integer")
    sweeps = raw.get("sweeps") or {}
    if not isinstance(sweeps, dict) or not all(isinstance(s, dict) and "declared" in s for s in sweeps.values()):
        raise ProtocolError(f"{where}: 'sweeps' must map each sweep to its settings, each with 'declared'")
    for name, s in sweeps.items():
        _declared(s["declared"], f"{where}: sweep {name!r}")
    families = {name: _family(name, f, str(where)) for name, f in raw["families"].items()}
    return Protocol(where, raw["version"], families, sweeps, hashlib.sha256(data).hexdigest()[:12])


def family(name: str, path: Path | str | None = None) -> Family:
    """The declared family ``name``. Chapters: all that state verdicts."""
    protocol = load(path)
    if name not in protocol.families:
        raise ProtocolError(f"{protocol.path} declares no family {name!r}; it declares {sorted(protocol.families)}")
    return protocol.families[name]


def margin(name: str, path: Path | str | None = None) -> float:
    """The equivalence margin of family ``name``, in its ``margin_unit`` (percentage points for
    ``margin_pp``). Chapters: all that state verdicts."""
    f = family(name, path)
    if f.margin is None:
        raise ProtocolError(f"family {name!r} declares no equivalence margin: {f.margin_reason}")
    return f.margin


def alpha(name: str, path: Path | str | None = None) -> float:
    """The family's α. Chapters: all that state verdicts."""
    return family(name, path).alpha
