"""Each experiment claim's two axes (:mod:`claim_axes`), read from the declared families'
rows (:mod:`declared`): against the preprint's own baseline (every arm at the task's one, untuned
W_Q, W_K rate) and at tuned rates. Every number comes from the rows; nothing is typed in. The claims
table (:mod:`claims`) puts them beside each claim. Chapters: intro and every chapter with a verdict
box."""

from __future__ import annotations

from . import claim_axes as ca
from . import declared, protocol
from .claim_box import Axis
from .experiments import get_config, load_results
from .families import find
from .wording.routing import verdict_words

__all__ = ["grokking", "fair_fight", "cifar10", "movement", "ablation", "regimes", "routing"]

Axes = tuple[Axis | None, Axis | None]


def _family(name: str):
    return declared.families()[name]


def _p31_untuned() -> ca.Reading | None:
    """p = 31 at the task's shared rate: the Stiefel rule − AdamW of the family ``ablation_grokking``."""
    rows = [r for r in declared.ablation()["grokking"] if not r["identical"]]
    return ca.row_reading("p = 31", find(rows, "stiefel", "baseline"), len(rows), _family("ablation_grokking"))


def _p31_tuned() -> ca.Reading | None:
    rows = declared.tuned_rows()
    return ca.row_reading("p = 31", find(rows, "stiefel", "baseline"), len(rows), _family("grokking_fair"))


def _p31_checked() -> ca.Reading | None:
    """p = 31 at the model lr its declared check chose: the Stiefel rule − AdamW of the family
    ``grokking_checked``, each at the W_Q, W_K rate swept there; ``None`` until every judged seed has run."""
    from .families import as_dict, read_family

    family = _family("grokking_checked")
    rows = read_family("grokking_checked")
    row = find(rows, "stiefel", "baseline")
    if row is None or row.n < len(family.judged_seeds):
        return None
    return ca.row_reading("p = 31 at the checked model rate", as_dict(row), len(rows), family)


def _first(results: dict | None, seeds) -> tuple[int, int] | None:
    from .findings.regimes import time_to_threshold

    if not results:
        return None
    times = {a: [time_to_threshold(results["runs"][f"{a}/{s}"]) for s in seeds] for a in ("stiefel", "baseline")}
    return ca.first_to(times["stiefel"], times["baseline"])


def _p97_untuned() -> ca.Reading | None:
    """p = 97 at the task's rate: time to 90 % of the family ``grokking_p97`` (two comparisons)."""
    from .findings import grokking as gf

    results, family = declared.grokking()
    rows = gf.family_rows(results, family)
    if rows is None:
        return None
    seeds = rows["seeds"]
    return ca.time_reading("p = 97", rows["time"]["verdict"], len(seeds), 2, family.alpha, _first(results, seeds))


def _p97_tuned() -> list[ca.Reading]:
    """p = 97 at tuned rates (family ``grokking_p97_fair``): the final accuracy, then time to 90 %."""
    rows = declared.p97_rows()
    row = find(rows, "stiefel", "baseline")
    if row is None:
        return []
    family, m = _family("grokking_p97_fair"), len(rows)
    final = {
        "final": row["final"],
        "verdict": row.get("final_word", "inconclusive"),
        "mean_pp": row["final"].mean_difference,
    }
    seeds = sorted(
        int(k.rpartition("/")[2]) for k in load_results("grokking_p97_fair", "full")["runs"] if k.startswith("stiefel/")
    )
    return [
        ca.row_reading("p = 97", final, m, family, what="final accuracy"),
        ca.time_reading(
            "p = 97",
            row["verdict"],
            row["seeds"],
            m,
            family.alpha,
            _first(load_results("grokking_p97_fair", "full"), seeds),
        ),
    ]


def _p97_checked() -> list[ca.Reading]:
    """p = 97 at the model lr its declared check chose (family ``grokking_p97_checked``), by its gatekeeping
    order (:func:`findings.p97_tuned.primary_row`): time to 90 % first and alone at the full α, then the final
    accuracy only where time decided (a shut gate leaves it untested, so off the axis); ``[]`` until every
    judged run is in."""
    from .advice import judged_progress
    from .findings import p97_tuned

    done, planned = judged_progress("grokking_p97_checked")
    if done < planned:
        return []
    family, results = _family("grokking_p97_checked"), load_results("grokking_p97_checked", "full")
    row = p97_tuned.primary_row(results, family.alpha, family.margin / 100)
    where = "p = 97 at the checked model rate"
    seeds = sorted(int(k.rpartition("/")[2]) for k in results["runs"] if k.startswith("stiefel/"))
    out = [ca.time_reading(where, row["verdict"], row["seeds"], 1, family.alpha, _first(results, seeds))]
    if row["gate"]:
        final = {"final": row["final"], "verdict": row["final_word"], "mean_pp": row["final"].mean_difference}
        out.append(ca.row_reading(where, final, 1, family, what="final accuracy"))
    return out


def grokking() -> Axes:
    """Grokking: against its baseline at p = 31 (the endpoint) and p = 97 (time to 90 %); at tuned
    rates at p = 97 (final accuracy, time), p = 31, and each at its checked model lr."""
    tuned = [*_p97_tuned(), _p31_tuned(), _p31_checked(), *_p97_checked()]
    return ca.axis([_p31_untuned(), _p97_untuned()]), ca.axis(tuned)


def fair_fight() -> Axes:
    """Does the gain on grokking survive a tuned AdamW: the gain at the shared rate, then at tuned
    rates at p = 31 and p = 97, each at the task's model lr, then at its checked one."""
    return ca.axis([_p31_untuned()]), ca.axis([_p31_tuned(), _p31_checked(), *_p97_tuned(), *_p97_checked()])


def cifar10() -> Axes:
    """CIFAR-10: the preprint's protocol (2 epochs) and the long protocol at λ = 1, both at the task's
    rate; at tuned rates, the family ``cifar10_fair`` at λ = 1. λ = 0.05 and the best cells (chosen
    after the runs, on a knob the preprint never tuned) are on neither axis."""
    rows = declared.cifar10()
    protocol, long, tuned = rows["protocol"], rows["long"], rows["tuned"]
    base = [
        ca.row_reading(
            "the preprint's protocol", protocol[0] if protocol else None, len(protocol), _family("cifar10_protocol"), 2
        ),
        ca.row_reading("100 epochs, λ = 1", long[0] if long else None, len(long), _family("cifar10_long"), 2),
    ]
    at = ca.row_reading("λ = 1", find(tuned, "stiefel", "baseline"), len(tuned), _family("cifar10_fair"), 2)
    return ca.axis(base), ca.axis([at])


def movement() -> Axes:
    """The cost of freezing the frames: a fixed step − frozen frames under the preprint's protocol;
    at tuned rates, the Stiefel rule − frozen frames (``cifar10_fair``)."""
    rows = declared.cifar10()
    protocol, tuned = rows["protocol"], rows["tuned"]
    base = ca.row_reading(
        "fixed step − frozen frames",
        protocol[1] if len(protocol) > 1 else None,
        len(protocol),
        _family("cifar10_protocol"),
        2,
    )
    at = ca.row_reading(
        "the Stiefel rule − frozen frames",
        find(tuned, "frozen", "stiefel"),
        len(tuned),
        _family("cifar10_fair"),
        2,
        flip=True,
    )
    return ca.axis([base]), ca.axis([at])


def ablation() -> Axes:
    """The scale-free step's share: the full rule − a fixed step on CIFAR-10 and grokking at the
    task's rate; at tuned rates on grokking (``grokking_fair``)."""
    rows = declared.ablation()
    cifar = [r for r in rows["cifar10"] if not r["identical"]]
    grok = [r for r in rows["grokking"] if not r["identical"]]
    base = [
        ca.row_reading("CIFAR-10", find(cifar, "stiefel", "fixed_step"), len(cifar), _family("ablation_cifar10"), 2),
        ca.row_reading("grokking", find(grok, "stiefel", "fixed_step"), len(grok), _family("ablation_grokking")),
    ]
    fair = declared.tuned_rows()
    at = ca.row_reading(
        "grokking", find(fair, "fixed_step", "stiefel"), len(fair), _family("grokking_fair"), flip=True
    )
    return ca.axis(base), ca.axis([at])


def regimes() -> Axes:
    """When the geometry dominates: the decay map at the task's rate; at tuned rates, the map at λ = 1's
    tuned rates and the map tuned at each decay."""
    from .findings import decay_map as dm

    task, rules = get_config("grokking_decay_map", "full").task, dm.rules(protocol.load())
    dmap = load_results("grokking_decay_map", "full")
    cells = dm.regimes_cells(dmap, task, rules) if dmap else []
    tuned = dm.tuned_cells(load_results("grokking_decay_map_tuned", "full"), task, rules) or []
    per = dm.per_decay_cells(load_results("grokking_decay_map_per_decay", "full"), task, rules) or []
    return (
        ca.axis([ca.map_reading("", cells, _family("decay_map"))]),
        ca.axis(
            [
                ca.map_reading("tuned at λ = 1", tuned, _family("decay_map_tuned")),
                ca.map_reading("tuned at each decay", per, _family("decay_map_per_decay")),
            ]
        ),
    )


def routing() -> tuple[ca.Reading, ...]:
    """The routing tasks at tuned rates, one reading a task: the Stiefel rule − the tuned AdamW by
    its family ``routing_<task>``, its word read as better or worse; a task without runs says so."""
    from .findings import routing as fr

    readings = []
    for task, rows in declared.routing().items():
        endpoint, row = fr.TASKS[task][1], fr.answers(rows)["tuned_baseline"] if rows else None
        if row is None:
            readings.append(ca.Reading(fr.TASK_PHRASES[task], "pending", "", "not yet run"))
            continue
        shown = verdict_words(row)
        readings.append(ca.Reading(fr.TASK_PHRASES[task], row["verdict"], shown, f"{row['mean']:+.3g} {endpoint.unit}"))
    return tuple(readings)
