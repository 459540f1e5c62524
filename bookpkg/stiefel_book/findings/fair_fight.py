"""A fair fight (chapter "A fair fight"): every arm of the grokking task at its own tuned W_Q, W_K
learning rate. Pure functions of the results dicts of ``grokking_qk_lr`` (the sweep),
``grokking_fair`` and ``grokking_fair_scale`` (the judged runs), read under the families that
``book/protocol.yml`` declared before those runs. Its rates and comparisons in words are
:mod:`stiefel_book.wording.fair_fight`."""

from __future__ import annotations

from ..choices import late_scores, rung_scores
from ..families import as_dict, find, judge
from ..protocol_fields import expand
from ..results_reading import finals

__all__ = [
    "THRESHOLD",
    "sweep_rows",
    "tuned_lrs",
    "finals",
    "family_rows",
    "answers",
    "before_rows",
]

THRESHOLD = 0.9  # a seed "groks" when its final validation accuracy passes 90 %
PEERS = ("fixed_step", "per_entry", "muon", "muon_no_decay", "geoopt_radam", "orthogonal_param", "cayley_adam")


def sweep_rows(
    sweep: dict | None, arms: tuple[str, ...], chosen: dict[str, float] | None = None, metric: str = "val_acc"
) -> list[dict]:
    """Per arm: ``scores`` (lr -> mean late ``metric`` over the selection seeds, on the rungs every seed
    finished; empty before), ``n`` (seeds), and ``chosen``: the lr its comparison ran at (``chosen``,
    from a comparison's config), else ``None``. No sweep yet: no rows."""
    n = len(sweep["config"]["seeds"]) if sweep else 0
    scores = {a: rung_scores(late_scores(sweep, a, metric), n) for a in arms} if sweep else {}
    return [{"arm": a, "scores": s, "n": n, "chosen": (chosen or {}).get(a)} for a, s in scores.items()]


def tuned_lrs(*results: dict | None) -> dict[str, float]:
    """``{arm: W_Q, W_K lr}`` as the comparisons' configs recorded them before their runs."""
    out: dict[str, float] = {}
    for r in results:
        if r:
            out.update({arm: float(lr) for arm, lr in r["config"]["qk_lrs"]})
    return out


def family_rows(
    values: dict[str, dict[int, float]],
    arms: tuple[str, ...],
    references: tuple[str, ...],
    margin: float,
    alpha: float = 0.05,
    threshold: float = THRESHOLD,
) -> list[dict]:
    """Every comparison arm − reference of one declared family on the seeds both finished, read by
    :func:`families.judge` (Holm across the family, the seeds past ``threshold`` with their exact
    McNemar p beside), as dicts in pp: ``mean_pp``, ``ci_pp``, ``p``, ``p_holm``, ``tost_p_holm``,
    ``verdict``, ``past``, ``mcnemar_p``. A pair appears once ("b − a" is "a − b")."""
    pairs = [(a, b) for a, b in expand(arms, references) if a in values and b in values]
    return [as_dict(r, 100) for r in judge(values, pairs, margin, alpha, count_past=threshold)]


def answers(rows: list[dict]) -> dict[str, dict | None]:
    """The chapter's questions, each answered by one row (``None`` where its runs are missing):
    does the Stiefel rule beat the tuned baseline; do frozen frames do as well; does scale alone
    (AdamW with QK-norm; the sphere) do what the Stiefel rule does."""
    return {
        "tuned_baseline": find(rows, "stiefel", "baseline"),
        "frozen": find(rows, "frozen", "stiefel"),
        "qk_norm": find(rows, "qk_norm", "stiefel"),
        "sphere": find(rows, "sphere", "stiefel"),
    }


def before_rows(before: dict | None, margin: float, alpha: float = 0.05) -> list[dict]:
    """The same questions read on the runs made before the sweep (every arm at the task's shared
    W_Q, W_K lr: ``grokking_ablation``), by the same rule: the Stiefel rule and frozen frames
    against AdamW and against the Stiefel rule."""
    return family_rows(finals(before), ("stiefel", "frozen"), ("baseline", "stiefel"), margin, alpha)
