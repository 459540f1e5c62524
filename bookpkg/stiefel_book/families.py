"""One reader for every declared family whose rule ``book/protocol.yml`` holds in fields.

:func:`read_family` loads the family's results files, pairs each declared comparison's runs by
seed on the declared endpoint, tests each pair as declared (:mod:`stiefel_book.stats`), corrects
across the family and reads each comparison in one of the four words within the family's margin;
:func:`table` lays the rows out. Numbers and verdict words only: sentences belong to the chapters.

The rule, as :func:`stats.family_verdicts` applies it: a comparison ``arm − reference`` is
*higher* (*lower*) when its corrected two-sided paired t p is below α, else *equivalent* when its
corrected TOST p is below α (the difference within ± the margin), else *inconclusive*. A
comparison with fewer than three paired seeds (none, before its runs) keeps its place in the
family with p = 1 and reads *inconclusive*: the family keeps its declared size. The interval
beside it is the (1 − α) paired t interval, unadjusted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import protocol as _protocol
from .results_reading import split_key, value_at
from .stats import family_verdicts, holm, mcnemar_exact, paired_comparison

__all__ = ["FamilyError", "Row", "read_family", "judge", "judge_counts", "paired_values", "find", "table", "as_dict"]


class FamilyError(ValueError):
    """A family the reader cannot apply: declared in words only, or results that do not fit it."""


@dataclass(frozen=True)
class Row:
    """One comparison ``arm − reference`` of a declared family, in the endpoint's ``unit``."""

    family: str
    arm: str
    reference: str
    n: int  # paired seeds
    difference: float  # mean paired difference arm − reference (NaN with no pairs)
    interval: tuple[float, float]  # its (1 − α) paired t interval, unadjusted (NaN with fewer than 2 pairs)
    p_raw: float  # two-sided paired t p (NaN untested)
    p_corrected: float  # the same, corrected across the family (1 untested)
    p_equivalence: float  # the TOST p within ± the margin, corrected across the family
    verdict: str  # higher, lower, equivalent or inconclusive: the metric of arm against reference's
    unit: str
    regime: str  # where the endpoint is read: "final", "last" or "epoch <n>"
    higher_is_better: bool
    past: tuple[int, int] | None = None  # seeds past the family's count_past (arm, reference), beside the verdict
    p_past: float | None = None  # exact McNemar p of those counts, uncorrected

    @property
    def reading(self) -> str:
        """The verdict read as ``better``, ``worse`` (by the endpoint's direction) or the word itself."""
        if self.verdict in ("higher", "lower"):
            return "better" if (self.verdict == "higher") == self.higher_is_better else "worse"
        return self.verdict


def _structured(name: str, path) -> _protocol.Family:
    family = _protocol.family(name, path)
    if family.measure is None:
        raise FamilyError(
            f"family {name!r} is declared in words only: give it an endpoint in fields, compare and encoded "
            "in book/protocol.yml before the reader can apply it"
        )
    if family.margin is None and family.measure.test != "mcnemar":
        raise FamilyError(f"family {name!r}: a paired t family needs an equivalence margin ({family.margin_reason})")
    return family


def _load(stems: tuple[str, ...], results: dict | None) -> dict[str, dict | None]:
    if results is not None:
        missing = [s for s in stems if s not in results]
        if missing:
            raise FamilyError(f"results lacks the files {missing} the family reads (None stands for one with no runs)")
        return {s: results[s] for s in stems}
    from .results import load_results  # light callers hand results in; this loads torch

    return {s: load_results(*s.rsplit("-", 1)) for s in stems}


def paired_values(
    family: _protocol.Family, files: dict[str, dict | None], metric: str | None = None
) -> dict[str, dict[int, float]]:
    """``{arm: {seed: metric at the endpoint's epoch}}`` over the family's files (``metric``: the
    endpoint's by default), on its judged seeds when it declares them; a run in two files is an error."""
    m, at = metric or family.measure.metric, family.measure.at
    out: dict[str, dict[int, float]] = {}
    for stem, data in files.items():
        for key, run in (data or {}).get("runs", {}).items():
            arm, seed = split_key(key)
            if family.judged_seeds is not None and seed not in family.judged_seeds:
                continue
            if seed in out.get(arm, {}):
                raise FamilyError(f"family {family.name!r}: run {key} is in two of its files ({stem} and another)")
            try:
                out.setdefault(arm, {})[seed] = float(value_at(run, m, at))
            except KeyError:
                raise FamilyError(f"family {family.name!r}: run {key} of {stem} records no {m!r} at {at!r}") from None
    return out


def read_family(name: str, results: dict | None = None, *, path=None) -> list[Row]:
    """The rows of the declared family ``name``, in its declared order. ``results``: ``{stem:
    results dict or None}`` holding every file the family reads (its ``results`` and
    ``compare.reads``); ``None`` loads them from the results folder. ``path``: the protocol file."""
    family = _structured(name, path)
    e = family.measure
    files = _load(family.results + family.reads, results)
    shared = dict(  # what both rules take from the family
        correction=family.correction,
        unit=e.unit,
        regime=e.at if isinstance(e.at, str) else f"epoch {e.at}",
        higher_is_better=e.higher_is_better,
        family=name,
    )
    if e.test == "mcnemar":
        values = paired_values(family, files, family.count_metric)
        return judge_counts(values, family.pairs, family.count_past, family.alpha, primary=family.primary, **shared)
    counted = paired_values(family, files, family.count_metric) if family.count_past is not None else None
    return judge(
        paired_values(family, files),
        family.pairs,
        family.margin,
        family.alpha,
        scale=e.scale,
        count_past=family.count_past,
        counted=counted,
        **shared,
    )


def judge(
    values: dict[str, dict[int, float]],
    pairs,
    margin: float,
    alpha: float = 0.05,
    *,
    correction: str = "holm",
    scale: float = 1.0,
    unit: str = "",
    regime: str = "final",
    higher_is_better: bool = True,
    family: str = "",
    count_past: float | None = None,
    counted: dict[str, dict[int, float]] | None = None,
) -> list[Row]:
    """The rule applied to ``values`` (``{arm: {seed: value}}``): each pair ``(arm, reference)`` of
    ``pairs`` on the seeds both hold, its differences times ``scale`` (in ``unit``, as ``margin``),
    the verdicts of :func:`stats.family_verdicts` corrected across all the pairs (a pair with no
    runs keeps its place), and beside them, with ``count_past``, the seeds whose ``counted`` value
    (``values`` by default) passes it, with their exact McNemar p."""
    counted = values if counted is None else counted
    seeds = {p: sorted(set(values.get(p[0], {})) & set(values.get(p[1], {}))) for p in pairs}
    differences = {f"{a} - {b}": [scale * (values[a][s] - values[b][s]) for s in seeds[a, b]] for a, b in pairs}
    verdicts = family_verdicts(differences, margin, alpha, correction=correction)
    rows = []
    for a, b in pairs:
        v, d = verdicts[f"{a} - {b}"], np.asarray(differences[f"{a} - {b}"])
        if len(d) >= 2:
            c = paired_comparison(d, np.zeros_like(d), confidence=1 - alpha)
            interval = (c.ci_low, c.ci_high)
        else:
            interval = (math.nan, math.nan)
        past = p_past = None
        if count_past is not None:
            pa = [counted[a][s] > count_past for s in seeds[a, b]]
            pb = [counted[b][s] > count_past for s in seeds[a, b]]
            past, p_past = (int(sum(pa)), int(sum(pb))), (mcnemar_exact(pa, pb).p_value if pa else math.nan)
        rows.append(
            Row(
                family=family,
                arm=a,
                reference=b,
                n=v.n,
                difference=v.mean_difference,
                interval=interval,
                p_raw=v.p_value,
                p_corrected=v.p_adjusted,
                p_equivalence=v.tost_p_adjusted,
                verdict=v.word,
                unit=unit,
                regime=regime,
                higher_is_better=higher_is_better,
                past=past,
                p_past=p_past,
            )
        )
    return rows


def judge_counts(
    values: dict[str, dict[int, float]],
    pairs,
    past: float,
    alpha: float = 0.05,
    *,
    primary: tuple[str, str] | None = None,
    correction: str = "holm",
    unit: str = "solved seeds",
    regime: str = "final",
    higher_is_better: bool = True,
    family: str = "",
) -> list[Row]:
    """The rule of a count family: for each pair ``(arm, reference)`` of ``pairs``, on the seeds both
    hold, the seeds whose value passes ``past`` (``past`` beside the row), the difference of those
    counts (``difference``, in ``unit``; no interval: NaN) and its exact McNemar p. ``primary``, when
    given, is tested first and alone at the full α; the other pairs are corrected among themselves
    (Holm, or ``correction="none"``). A pair reads *higher* (*lower*) when its corrected p is below α
    and the arm passes on more (fewer) seeds, else *inconclusive*: a count has no equivalence reading.
    A pair without paired seeds keeps its place with p = 1."""
    if correction not in ("holm", "none"):
        raise ValueError(f'correction must be "holm" or "none", got {correction!r}')
    if primary is not None and tuple(primary) not in [tuple(p) for p in pairs]:
        raise ValueError(f"primary {primary!r} is not one of the pairs {list(pairs)}")
    tests = {}
    for a, b in pairs:
        seeds = sorted(set(values.get(a, {})) & set(values.get(b, {})))
        pa, pb = [values[a][s] > past for s in seeds], [values[b][s] > past for s in seeds]
        tests[a, b] = (len(seeds), mcnemar_exact(pa, pb) if seeds else None)
    rest = [p for p in pairs if tuple(p) != primary]
    raw = np.array([tests[tuple(p)][1].p_value if tests[tuple(p)][1] else math.nan for p in rest])
    adjusted = dict(
        zip(map(tuple, rest), holm(raw, nan="one") if correction == "holm" else np.nan_to_num(raw, nan=1.0))
    )
    if primary is not None:
        test = tests[tuple(primary)][1]
        adjusted[tuple(primary)] = test.p_value if test else 1.0
    rows = []
    for a, b in pairs:
        n, test = tests[a, b]
        gap = test.a_successes - test.b_successes if test else math.nan
        p_corrected = float(adjusted[a, b])
        word = "inconclusive"
        if test and p_corrected < alpha and gap:
            word = "higher" if gap > 0 else "lower"
        rows.append(
            Row(
                family=family,
                arm=a,
                reference=b,
                n=n,
                difference=float(gap),
                interval=(math.nan, math.nan),
                p_raw=test.p_value if test else math.nan,
                p_corrected=p_corrected,
                p_equivalence=math.nan,
                verdict=word,
                unit=unit,
                regime=regime,
                higher_is_better=higher_is_better,
                past=(test.a_successes, test.b_successes) if test else None,
                p_past=test.p_value if test else None,
            )
        )
    return rows


def as_dict(row: Row, factor: float = 1.0) -> dict:
    """A row as the dict the findings' older readers index (``mean_pp``, ``ci_pp``, ``p``, ``p_holm``,
    ``tost_p_holm``, ``verdict``, ``past``, ``mcnemar_p``), its difference and interval times ``factor``."""
    lo, hi = row.interval
    return {
        "arm": row.arm,
        "reference": row.reference,
        "n": row.n,
        "mean_pp": factor * row.difference,
        "ci_pp": (factor * lo, factor * hi),
        "p": row.p_raw,
        "p_holm": row.p_corrected,
        "tost_p_holm": row.p_equivalence,
        "verdict": row.verdict,
        "past": row.past,
        "mcnemar_p": row.p_past,
    }


def find(rows, arm: str, reference: str):
    """The row ``arm − reference`` of a family, or ``None``: a :class:`Row`, or a findings dict keyed
    ``arm``/``reference`` (or ``a``/``b``); ``rows`` may be ``None``."""

    def pair(r) -> tuple:
        if isinstance(r, Row):
            return r.arm, r.reference
        return r.get("arm", r.get("a")), r.get("reference", r.get("b"))

    return next((r for r in rows or [] if pair(r) == (arm, reference)), None)


def table(rows: list[Row], label=str, digits: int = 2) -> str:
    """The rows as a Markdown table: comparison, n, difference [interval] in the unit, raw and
    corrected p, verdict. ``label``: arm key -> the name shown."""
    head = "| comparison | n | difference [unadjusted 95 % CI] | p | corrected p | verdict |\n|---|---|---|---|---|---|"
    lines = [head]
    for r in rows:
        lo, hi = r.interval
        g = f"+.{digits}f"
        lines.append(
            f"| {label(r.arm)} − {label(r.reference)} | {r.n} | {r.difference:{g}} [{lo:{g}}, {hi:{g}}] {r.unit} "
            f"| {r.p_raw:.2g} | {r.p_corrected:.2g} | {r.verdict} |"
        )
    return "\n".join(lines)
