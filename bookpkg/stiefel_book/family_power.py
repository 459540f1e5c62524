"""Every declared family's power, read from its judged runs: for each family of ``book/protocol.yml``
its rows as its chapter reads them (:mod:`declared`, the findings), and for each comparison the
smallest detectable effect at Holm's strictest level with 80 % power, the smallest equivalence
margin, or a time endpoint's floor p (:mod:`findings.detectable`). ``tools/detectable.py`` prints
them; the claims table says "not shown" where a family could never reach its margin. These are
computed after the runs they describe (a family declared from now on states its power first).
Chapters: intro (the claims table) and every chapter with a verdict box."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from . import declared, protocol
from .experiments import get_config, load_results
from .findings import detectable

__all__ = ["Comparison", "FAMILIES", "family_power", "primary", "power_of"]


@dataclass(frozen=True)
class Comparison:
    """One comparison of a family: what it compares (in words), its verdict word and its power."""

    what: str
    word: str
    power: detectable.Power


def _name(row) -> str:
    from .labels import label

    if hasattr(row, "weight_decay"):  # a decay map's cell
        return f"{label(row.a)} − {label(row.b)}, λ = {row.weight_decay:g}"
    if "what" in row:
        return row["what"]
    if "frame_lr" in row:  # the trust region's family
        return f"{label('stiefel')} − {label('no_trust_region')}, frame lr {row['frame_lr']:g}"
    a, b = row.get("arm", row.get("a")), row.get("reference", row.get("b"))
    return f"{label(a)} − {label(b)}"


def _word(row) -> str:
    return (getattr(row, "verdict", None) if not isinstance(row, dict) else row.get("verdict")) or "inconclusive"


def _accuracy(rows, family) -> list[Comparison]:
    rows = [r for r in rows if r is not None]
    m, unit = len(rows), family.margin_unit
    out = []
    for r in rows:
        found = detectable.row_power(r, m, family.margin, family.alpha, unit)
        if found is not None:
            out.append(Comparison(_name(r), _word(r), found))
    return out


def _time(rows, family, seeds: Callable, m: int | None = None, extra: list | None = None) -> list[Comparison]:
    m = m or len(rows)
    out = [
        Comparison(_name(r) + ", time to 90 %", r["verdict"], detectable.time_power(seeds(r), m, family.alpha))
        for r in rows
    ]
    return out + (extra or [])


def _p97_fair(f) -> list[Comparison]:
    rows = declared.p97_rows()
    m = len(rows)
    finals = [
        Comparison(
            _name(r) + ", final accuracy",
            r.get("final_word", "inconclusive"),
            detectable.row_power({"final": r["final"]}, m, f.margin, f.alpha, f.margin_unit),
        )
        for r in rows
        if r.get("final") is not None and r["final"].n >= 2
    ]
    return _time(rows, f, lambda r: r["seeds"], m, finals)


def _grokking_p97(f) -> list[Comparison]:
    from .findings import grokking

    rows = grokking.family_rows(*declared.grokking())
    if rows is None:
        return []
    n, e = len(rows["seeds"]), rows["endpoint"]
    lo, hi = e["tost_ci_pp"]  # the (1 − 2α) interval TOST reads
    from .stats import power

    sd = power.sd_from_interval(lo, hi, n, 1 - 2 * f.alpha)
    end = detectable.Power(
        n,
        sd,
        2,
        power.smallest_detectable_effect(n, sd, 2, f.alpha),
        power.smallest_equivalence_margin(n, sd, 2, f.alpha),
        None,
        f.margin,
        f.alpha,
        f.margin_unit,
    )
    return [
        Comparison(
            "the Stiefel rule − AdamW, time to 90 %", rows["time"]["verdict"], detectable.time_power(n, 2, f.alpha)
        ),
        Comparison("the Stiefel rule − AdamW, final accuracy", e["verdict"], end),
    ]


def _map(stem: str, pairs, rule_name: str):
    def rows(f) -> list[Comparison]:
        from .findings import decay_map

        results = load_results(stem, "full")
        if not results:
            return []
        task = get_config("grokking_decay_map", "full").task
        cells = decay_map.final_cells(
            results, pairs, decay_map.rules(protocol.load())[rule_name], lr=task.lr, warmup_epochs=task.warmup_epochs
        )
        return _accuracy(cells, f)

    return rows


def _routing_map(f) -> list[Comparison]:
    from .findings import routing_map as rm
    from .tasks.routing import schedule

    results = load_results("induction_decay_map", "full")
    if len(rm.seeds_read(results)) < 2:
        return []
    task = get_config("induction", "full")
    factors = [schedule(s, task.warmup_steps, task.steps) for s in range(task.steps)]
    return _accuracy(rm.map_cells(results, f, task.lr, factors), f)


def _controls_p31(f) -> list[Comparison]:
    from .findings import regimes

    return _accuracy(regimes.control_rows(load_results("grokking_ablation", "full"), f.margin, f.alpha), f)


def _controls_p97_time(f) -> list[Comparison]:
    from .findings import regimes

    results = load_results("grokking", "full")
    return _time(regimes.time_rows(results, alpha=f.alpha), f, lambda r: r["seeds"]) if results else []


def _trust(f) -> list[Comparison]:
    from .findings import regimes

    results = load_results("grokking_trust_region", "full")
    rows = [r for r in regimes.trust_rows(results, f.margin, f.alpha) if r["verdict"] is not None] if results else []
    return _accuracy(rows, f)


def _peers_grokking(f) -> list[Comparison]:
    from .findings import fair_fight as ff
    from .findings import peers as p

    untuned = load_results("grokking_peers", "full")
    if not untuned:
        return []
    return _accuracy(ff.family_rows(ff.finals(untuned), p.PEERS, ("stiefel", "baseline"), f.margin / 100, f.alpha), f)


def _fair_ablation(f) -> list[Comparison]:
    from .declared import family_dicts

    return _accuracy(family_dicts("grokking_fair_ablation"), f)


def _rows(get: Callable[[], list]) -> Callable:
    return lambda f: _accuracy([r for r in get() if not (isinstance(r, dict) and r.get("identical"))], f)


def _routing(task: str) -> Callable:
    return _rows(lambda: declared.routing(current=False)[task])  # the family's own judged runs


FAMILIES: dict[str, Callable[[protocol.Family], list[Comparison]]] = {
    "grokking_p97_fair": _p97_fair,
    "cifar10_fair": _rows(lambda: declared.cifar10()["tuned"]),
    "cifar10_fair_decay": _rows(lambda: [declared.cifar10()["at_decay"]]),
    "cifar10_best_cells": _rows(lambda: [declared.cifar10()["best_cells"]]),
    "decay_map_per_decay": _map("grokking_decay_map_per_decay", (("stiefel", "baseline"),), "decay_map_per_decay"),
    "decay_map_tuned": _map("grokking_decay_map_tuned", (("stiefel", "baseline"),), "decay_map_tuned"),
    "decay_map_tuned_controls": _map(
        "grokking_decay_map_tuned", (("stiefel", "frozen"), ("stiefel", "no_decay_qk")), "decay_map_tuned_controls"
    ),
    "grokking_fair": _rows(declared.tuned_rows),
    "grokking_fair_ablation": _fair_ablation,
    "grokking_fair_scale": _rows(declared.scale_rows),
    "controls_p31": _controls_p31,
    "controls_p97_time": _controls_p97_time,
    "grokking_p97": _grokking_p97,
    "decay_map": _map("grokking_decay_map", (("stiefel", "baseline"),), "decay_map"),
    "decay_map_controls": _map(
        "grokking_decay_map", (("stiefel", "frozen"), ("stiefel", "no_decay_qk")), "decay_map_controls"
    ),
    "trust_region": _trust,
    "ablation_grokking": _rows(lambda: declared.ablation()["grokking"]),
    "ablation_cifar10": _rows(lambda: declared.ablation()["cifar10"]),
    "cifar10_protocol": _rows(lambda: declared.cifar10()["protocol"]),
    "cifar10_long": _rows(lambda: declared.cifar10()["long"]),
    "cifar10_size": _rows(lambda: declared.cifar10()["size"]),
    "peers_grokking": _peers_grokking,
    "peers_cifar10": _rows(declared.peers_cifar10),
    "routing_mqar": _routing("mqar"),
    "routing_induction": _routing("induction"),
    "routing_charlm": _routing("charlm"),
    "routing_decay_map": _routing_map,
}


def family_power(name: str) -> list[Comparison]:
    """Every comparison of the declared family ``name`` with its power, from its judged runs (empty
    before they exist); a family this module cannot read is one clear error."""
    if name not in FAMILIES:
        raise KeyError(f"no reader of family {name!r}'s rows: add it to family_power.FAMILIES ({sorted(FAMILIES)})")
    return FAMILIES[name](protocol.family(name))


def primary(comparisons: list[Comparison]) -> Comparison | None:
    """The family's headline comparison: the Stiefel rule against AdamW where it has one (the first
    such, its time endpoint first where it has one), else its first."""
    first = next((c for c in comparisons if c.what.startswith("the Stiefel rule − AdamW")), None)
    return first or (comparisons[0] if comparisons else None)


def power_of(name: str, what: str) -> detectable.Power | None:
    """The power of the comparison of family ``name`` whose words start with ``what``."""
    return next((c.power for c in family_power(name) if c.what.startswith(what)), None)
