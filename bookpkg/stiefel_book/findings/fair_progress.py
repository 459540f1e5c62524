"""Where the fair fight stands beyond p = 31 (issue 28): which sweeps and judged runs on CIFAR-10 and
at p = 97 have run, read from their results files, so the chapter's "not yet run" list follows
the runs instead of being typed. Pure functions of the results dicts; no experiment is imported."""

from __future__ import annotations

from ..results_reading import finished_starts
from .cifar10_decays import decay_cells, largest_gap_decay
from .cifar10_tuned import RELATIVES
from .fair_fight import picks_text
from .p97_tuned import SWEPT as P97_SWEPT
from .p97_tuned import sweep_rows as p97_sweep_rows

__all__ = ["progress_lines"]


def _runs_text(results: dict | None) -> str:
    n = len((results or {}).get("runs", {}))
    return f"{n} run{'' if n == 1 else 's'} so far" if n else "not yet run"


def _p97_sweep_text(sweep: dict | None) -> str:
    rows = p97_sweep_rows(sweep) if sweep and "config" in sweep else []
    if len(rows) == len(P97_SWEPT) and all(r["interior"] for r in rows):
        return f"{_runs_text(sweep).removesuffix(' so far')}, every choice interior: {picks_text(rows)} (chosen)"
    return _runs_text(sweep)


def _cell_text(cell: dict) -> str:
    if not cell["rows"]:
        return "not yet run"
    picks = picks_text(cell["rows"])
    settled = len(cell["rows"]) == 2 and all(r["interior"] for r in cell["rows"])
    return f"{picks} (chosen)" if settled else f"running; so far {picks}"


def _decay_text(cells: list[dict], results: dict | None, judged_starts: int) -> str:
    decay = largest_gap_decay(cells)
    if decay is None:
        return "chosen once every cell of the sweep has settled"
    if decay == 1:
        return "λ = 1, whose judged starts are the ones above"
    starts = len(finished_starts(results, ("baseline", "stiefel")))
    return f"λ = {decay:g}, AdamW and the Stiefel rule: {starts} of {judged_starts} judged starts"


def progress_lines(
    cifar10_sweep: dict | None,
    cifar10_fair: dict | None,
    cifar10_fair_peers: dict | None,
    p97_sweep: dict | None,
    p97_fair: dict | None,
    judged_starts: int,
    judged_p97: int,
    cifar10_fair_decay: dict | None = None,
) -> list[str]:
    """One line per part of the fair fight outside p = 31: the CIFAR-10 sweep at each weight decay,
    the judged CIFAR-10 starts (of ``judged_starts``) of AdamW, the Stiefel rule and frozen frames
    and of the relatives, at the decay of largest gap (``cifar10_fair_decay``), and at p = 97 the
    sweep and the judged runs (``judged_p97`` seeds an arm)."""
    cells = decay_cells(cifar10_sweep)
    lines = [f"CIFAR-10 sweep at λ = {c['weight_decay']:g}: {_cell_text(c)}" for c in cells]
    for what, results, arms in (
        (
            "AdamW and the Stiefel rule at their rates, and frozen frames",
            cifar10_fair,
            ("baseline", "stiefel", "frozen"),
        ),
        ("the relatives at their rates", cifar10_fair_peers, RELATIVES),
    ):
        starts = len(finished_starts(results, arms))
        done = " (complete)" if starts >= judged_starts else ""
        lines.append(f"CIFAR-10 at λ = 1, {what}: {starts} of {judged_starts} judged starts{done}")
    decay = _decay_text(cells, cifar10_fair_decay, judged_starts)
    lines.append(f"CIFAR-10 at the decay of largest gap at tuned rates: {decay}")
    lines.append(f"p = 97, the sweep: {_p97_sweep_text(p97_sweep)}")
    seeds = len(finished_starts(p97_fair, (*P97_SWEPT, "frozen")))
    judged = f"{_runs_text(p97_fair)}, {seeds} of {judged_p97} seeds with every arm" if p97_fair else "not yet run"
    lines.append(f"p = 97, the judged runs ({judged_p97} seeds an arm): {judged}")
    return lines
