"""The declared families' rows (``book/protocol.yml``), read from the full profile's results
files: the one place where the claims table, the intro and each chapter's verdict box load what
the chapters themselves read, so that all of them say the same four words. Chapters: intro and
every experiment chapter (through :mod:`claims` and :mod:`pages`)."""

from __future__ import annotations

from . import protocol
from .results import full_results, load_results, results_path

__all__ = [
    "families",
    "grokking",
    "tuned_rows",
    "scale_rows",
    "p97_rows",
    "fair_rows",
    "cifar10",
    "ablation",
    "peers",
    "peers_cifar10",
    "routing",
    "routing_notes",
    "judged_file",
    "qk_norm_tuned",
    "judged_sweep",
    "CURRENT",
    "mqar_fresh",
]


def families() -> dict:
    """Every declared family by name."""
    return protocol.load().families


def grokking() -> tuple[dict | None, object]:
    """``(grokking-full, the family grokking_p97)``."""
    return full_results("grokking"), families()["grokking_p97"]


def _fair() -> tuple[dict | None, dict | None, dict | None]:
    return tuple(load_results(n, "full") for n in ("grokking_fair", "grokking_fair_scale", "grokking_fair_peers"))


def family_dicts(name: str) -> list[dict]:
    """A structured family's rows by the family reader (:func:`families.read_family`), as the dicts the
    findings read (:func:`families.as_dict`: ``mean_pp``, ``ci_pp``, ``p_holm``, ``verdict``, ``past``, ...),
    those with paired seeds only (the others have not run; Holm still counted them)."""
    from .families import as_dict, read_family

    return [as_dict(r) for r in read_family(name) if r.n]


def tuned_rows() -> list[dict]:
    """The family ``grokking_fair``'s rows: every arm at its tuned W_Q, W_K lr, against AdamW and the Stiefel rule."""
    return family_dicts("grokking_fair")


def scale_rows() -> list[dict]:
    """The family ``grokking_fair_scale``'s rows: QK-norm, the sphere, the learned scale at their tuned lrs."""
    return family_dicts("grokking_fair_scale")


def p97_rows() -> list[dict]:
    """The family ``grokking_p97_fair``'s rows: grokking at p = 97, every arm at the W_Q, W_K lr its
    sweep chose (:func:`findings.p97_tuned.fair_rows`, the final accuracy read within the margin)."""
    from .findings import p97_tuned

    family = families()["grokking_p97_fair"]
    return p97_tuned.fair_rows(load_results("grokking_p97_fair", "full"), family.alpha, family.margin / 100)


def fair_rows() -> list[dict]:
    """The fair fight's judged rows at p = 31: :func:`tuned_rows` then :func:`scale_rows`, each
    under its own declared family."""
    return tuned_rows() + scale_rows()


def cifar10() -> dict:
    """The CIFAR-10 chapter's families' rows (``protocol``, ``long``, ``size``), its movement
    ratio as a function of the lr (``movement``), :mod:`findings.cifar10_family`, the family
    ``cifar10_fair`` at tuned W_Q, W_K lrs (``tuned``, :mod:`findings.cifar10_tuned`), and the
    family ``cifar10_fair_decay``'s one row at the decay of largest gap (``at_decay``) and the family
    ``cifar10_best_cells``'s, each arm at its best decay and rate (``best_cells``); ``None`` before
    their runs."""
    from .findings import cifar10_decays as cd
    from .findings import cifar10_family as cf
    from .findings import cifar10_tuned as ct

    f, main = families(), load_results("cifar10", "full")
    fair = f["cifar10_fair"]
    decay, best = f["cifar10_fair_decay"], f["cifar10_best_cells"]
    fair_runs, at_decay = load_results("cifar10_fair", "full"), load_results("cifar10_fair_decay", "full")
    tuned = ct.fair_rows(fair_runs, load_results("cifar10_fair_peers", "full"), fair.margin / 100, fair.alpha)
    return {
        "tuned": tuned,
        "at_decay": cd.decay_row(at_decay, decay.margin / 100, decay.alpha),
        "best_cells": cd.best_cells_row(
            [fair_runs, at_decay],
            cd.best_cells(cd.decay_cells(load_results("cifar10_qk_lr", "full"))),
            best.margin / 100,
            best.alpha,
        ),
        "protocol": cf.protocol_family(main, load_results("cifar10_sweep", "full"), f["cifar10_protocol"]),
        "long": cf.long_family(load_results("cifar10_long", "full"), f["cifar10_long"]),
        "size": cf.size_family(load_results("cifar10_size", "full"), f["cifar10_size"]),
        "movement": cf.movement_by_lr(main),
    }


def ablation() -> dict:
    """The ablation chapter's rows: ``cifar10`` (``ablation_cifar10``), ``grokking``
    (``ablation_grokking``), ``tuned`` (the swept variants in ``grokking_fair`` and
    ``grokking_fair_ablation``) and ``margins``."""
    from .findings import ablation as ab
    from .findings import fair_fight as ff

    f = families()
    variants, reference, repeat = (
        load_results(n, "full") for n in ("cifar10_ablation", "cifar10", "grokking_ablation")
    )
    merged = ab.merged_results(variants, reference) if variants and variants.get("runs") and reference else None
    fair, _, peers = _fair()
    later = load_results("grokking_fair_ablation", "full")  # no projector, no trust region: swept later
    rows = tuned_rows() + family_dicts("grokking_fair_ablation")
    idle = ab.cap_idle(fair, load_results("grokking_decay_map", "full"))
    return {
        "cifar10": ab.family_rows(merged, "test_acc", f["ablation_cifar10"]) if merged else [],
        "grokking": ab.family_rows(repeat, "val_acc", f["ablation_grokking"]) if repeat and repeat.get("runs") else [],
        "tuned": ab.tuned_rows(rows, ff.finals(fair, peers, later), idle) if fair else [],
        "margins": {"cifar10": f["ablation_cifar10"].margin, "grokking": f["ablation_grokking"].margin},
    }


def peers() -> dict:
    """The peers chapter's rows at tuned lrs: ``rows`` (each relative against the Stiefel rule and
    AdamW, :func:`findings.peers.family_peer_rows` of ``grokking_fair``), ``lrs`` and ``margin``."""
    from .findings import fair_fight as ff
    from .findings import peers as p

    fair, _, fair_peers = _fair()
    rows = p.family_peer_rows(tuned_rows(), p.merged(fair, fair_peers), p.TUNED_PEERS) if fair else []
    return {
        "rows": rows,
        "lrs": ff.tuned_lrs(fair, fair_peers) if fair else {},
        "margin": families()["grokking_fair"].margin,
    }


def peers_cifar10() -> list[dict]:
    """The family ``peers_cifar10``: each relative against the Stiefel rule and AdamW on CIFAR-10
    (final test accuracy, the long protocol), as the peers chapter reads it."""
    from .findings import fair_fight as ff
    from .findings import peers as p

    cifar, family = full_results("cifar10_peers"), families()["peers_cifar10"]
    if cifar is None:
        return []
    rows = ff.family_rows(
        ff.finals(cifar, metric="test_acc"), p.PEERS, ("stiefel", "baseline"), family.margin / 100, family.alpha
    )
    return p.family_peer_rows(rows)


def routing(current: bool = True) -> dict[str, list[dict]]:
    """The routing chapter's rows per task (``mqar``, ``induction``, ``charlm``): each task's
    family (``routing_<task>``) read by the family reader (:func:`families.read_family`) over its
    judged runs, as the chapter's sentences read them (:func:`findings.routing.as_rows`). ``current``:
    a task judged again at its checked model lr reads that judgement instead (:data:`CURRENT`: MQAR's
    30 fresh seeds, on mean query accuracy against routing_mqar's margin, :func:`mqar_fresh`; the
    character model's ten seeds at 4,500 steps, family ``charlm_long``)."""
    from .families import read_family
    from .findings import routing as fr

    rows = {task: fr.as_rows(read_family(family)) for task, (family, _) in fr.TASKS.items()}
    if current and (fresh := mqar_fresh()["accuracy"]):
        rows["mqar"] = fr.as_rows(fresh)
    if current and judged_file("charlm") != "charlm":
        rows["charlm"] = fr.as_rows(read_family("charlm_long"))
    return rows


# task -> (the results file of its judged runs at its checked model lr, the sweep that chose their rates), where
# they were judged again (a file enters book/results once all its runs are in)
CURRENT = {"mqar": ("mqar_fresh", "mqar_checked_qk_lr"), "charlm": ("charlm_long", "charlm_long_qk_lr")}


def judged_file(task: str) -> str:
    """The results file whose judged runs a routing task's current rows read (:func:`routing`)."""
    return CURRENT[task][0] if task in CURRENT and results_path(CURRENT[task][0], "full").exists() else task


def judged_sweep(task: str) -> str:
    """The W_Q, W_K sweep whose choices those judged runs (:func:`judged_file`) took."""
    return CURRENT[task][1] if judged_file(task) != task else f"{task}_qk_lr"


def routing_counts() -> dict[str, str]:
    """Per routing task whose family counts seeds past a threshold: the sentence that counts them
    (:func:`wording.routing.count_text`), shown beside its verdicts."""
    from .findings import routing as fr
    from .labels import label
    from .wording.routing import count_text

    out = {}
    for task, (family, endpoint) in fr.TASKS.items():
        f = families()[family]
        if f.count_past is not None:
            metric = f.count_metric or endpoint.metric
            counts = fr.past(fr.finals(load_results(judged_file(task), "full"), metric=metric), f.count_past)
            out[task] = count_text(counts, f.count_past, metric, label)
    return out


def routing_notes() -> dict[str, str | None]:
    """Per routing task, the regime notes of its Stiefel − AdamW verdict: every seed of both at the
    ceiling of a family that counts seeds past a threshold of its endpoint
    (:func:`wording.routing.ceiling_note`), or a decided difference under the declared margin
    (:func:`wording.routing.margin_note`)."""
    from .findings import routing as fr
    from .wording.routing import ceiling_note, margin_note

    out, rows = {}, routing()
    for task, (family, endpoint) in fr.TASKS.items():
        f, results = families()[family], load_results(judged_file(task), "full")
        notes = []
        if f.count_past is not None and f.count_metric in (None, endpoint.metric):
            counts = fr.past(fr.finals(results, metric=endpoint.metric), f.count_past)
            notes.append(ceiling_note(counts, f.count_past))
        row = fr.answers(rows[task])["tuned_baseline"] if rows[task] else None
        notes.append(margin_note(row, f.margin, endpoint.unit))
        out[task] = "; ".join(n for n in notes if n) or None
    return out


def qk_norm_tuned(task: str) -> dict | None:
    """QK-norm judged at the initial temperature and W_Q, W_K lr its task's temperature sweep chose (family
    ``routing_<task>_qk_norm_tuned``): ``{"rows"`` (against AdamW, then the Stiefel rule), ``"temperature"``,
    ``"qk_lr"``, ``"solved"`` (its seeds past the family's count threshold), ``"n"}``; ``None`` before its runs."""
    from .families import read_family

    results = load_results(f"{task}_qk_norm_tuned", "full")
    rows = read_family(f"routing_{task}_qk_norm_tuned") if results is not None else []
    if not rows or not rows[0].n:
        return None
    return {
        "rows": rows,
        "temperature": float(results["config"]["qk_temperature"]),
        "qk_lr": float(results["config"]["qk_lr"]),
        "solved": rows[0].past[0],
        "n": rows[0].n,
    }


def mqar_fresh() -> dict[str, list]:
    """MQAR at its checked model lr on 30 fresh seeds (family ``routing_mqar_fresh``): ``counts``, its
    declared rows (seeds solved, exact McNemar, the Stiefel rule − AdamW first at the full α), and
    ``accuracy``, the mean final query accuracy beside them, read by the paired t and TOST rule against
    routing_mqar's ±2 pp as the family declares (Holm over the same comparisons); empty before its runs."""
    from .families import judge, paired_values, read_family

    family, margin = families()["routing_mqar_fresh"], families()["routing_mqar"]
    results = load_results("mqar_fresh", "full")
    if results is None:
        return {"counts": [], "accuracy": []}
    values = paired_values(family, {"mqar_fresh-full": results})
    accuracy = judge(
        values,
        family.pairs,
        margin.margin,
        family.alpha,
        scale=margin.measure.scale,
        unit=margin.measure.unit,
        family="routing_mqar_fresh",
    )
    return {"counts": read_family("routing_mqar_fresh"), "accuracy": accuracy}
