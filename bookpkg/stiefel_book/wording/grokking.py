"""The grokking chapter's plain-text report of a results file (:func:`report`). Chapter: grokking."""

from __future__ import annotations

from .. import preprint
from ..findings.grokking import ARMS, endpoint_accuracies
from ..results_reading import arm_of
from ..stats import mean_and_spread, paired_comparison

__all__ = ["report"]


def report(results: dict | None, epoch: int = 20_000) -> str:
    """Validation accuracy at ``epoch`` per seed and arm, their mean and spread, the paired
    difference where both arms finished a seed, and the preprint's single run beside them.
    Chapter: grokking."""
    if not results or not results.get("runs"):
        return "No run of this profile has finished yet: the results file is missing or empty."
    table = endpoint_accuracies(results, epoch)
    finished = sum(arm_of(key) in ARMS for key in results["runs"])
    lines = [f"validation accuracy at epoch {epoch:,} ({finished} finished runs of {' and '.join(ARMS)})"]
    for arm in ARMS:
        per_seed = table.get(arm, {})
        cells = ", ".join(f"seed {s}: {100 * a:.1f}%" for s, a in sorted(per_seed.items())) or "none finished"
        lines.append(f"  {arm:8s} {cells}")
        if len(per_seed) >= 2:
            spread = mean_and_spread([100 * a for a in per_seed.values()])
            lines.append(
                f"  {'':8s} mean {spread.mean:.1f}%, std {spread.std:.1f}, range {spread.min:.1f}-{spread.max:.1f}% (n "
                f"= {spread.n})"
            )
        lines.append(f"  {'':8s} preprint (one run): {100 * preprint.GROKKING[arm]:.1f}%")
    paired = sorted(set(table.get("stiefel", {})) & set(table.get("baseline", {})))
    if len(paired) >= 2:
        c = paired_comparison([100 * table["stiefel"][s] for s in paired], [100 * table["baseline"][s] for s in paired])
        lines.append(
            f"  stiefel - baseline over {c.n} paired seeds: {c.mean_difference:+.1f} pp, 95% CI [{c.ci_low:+.1f}, "
            f"{c.ci_high:+.1f}], wins {c.wins}/{c.n}"
        )
    return "\n".join(lines)


# --- the declared family (book/protocol.yml: grokking_p97) -------------------------------------
