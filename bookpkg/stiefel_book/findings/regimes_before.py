"""The regimes chapter's verdicts under the rule it used before ``book/protocol.yml`` (one
comparison at a time, by whether its 95 % interval holds zero, ``stats.direction``; no
correction, no equivalence test; the asymptotic log-rank test on time to 90 %), so that the
chapter's "What changed" note says what each verdict was, from the same files. Nothing else reads
these words. Pure functions of results dicts.
"""

from __future__ import annotations

from ..results_reading import LAST, paired
from ..stats import direction
from . import long_sizes, long_training, regimes

__all__ = ["control_words", "time_words", "readings", "map_count", "long_words"]


def control_words(results: dict) -> dict[tuple[str, str], str]:
    """Each control pair's old word at the last record: higher, lower, tie or untested."""
    out = {}
    for a, b, _ in regimes.CONTROL_PAIRS:
        c = paired(results, a, b, "val_acc", LAST, scale=100.0).comparison
        if c is not None:
            out[(a, b)] = direction(c)
    return out


def time_words(results: dict, alpha: float = 0.05, min_seeds: int = 3) -> dict[tuple[str, str], str]:
    """Each control pair's old word on time to 90 %: the asymptotic log-rank p < ``alpha`` and
    the earlier median (``higher``: ``a`` sooner), else ``tie``; ``untested`` under ``min_seeds``."""
    out = {}
    for a, b, _ in regimes.CONTROL_PAIRS:
        seeds = regimes.paired_seeds(results, a, b)
        if len(seeds) < 2:
            continue
        sa, sb = regimes.survival(results, a, 0.9, seeds), regimes.survival(results, b, 0.9, seeds)
        p = regimes.logrank(results, a, b, 0.9, seeds)[1] if sa.reached + sb.reached else 1.0
        if len(seeds) < min_seeds:
            out[(a, b)] = "untested"
        elif p < alpha and sa.median != sb.median:
            out[(a, b)] = "higher" if sa.median < sb.median else "lower"
        else:
            out[(a, b)] = "tie"
    return out


def readings(words: dict[tuple[str, str], str]) -> dict[str, bool | None]:
    """The three readings by the old rules (a tie read as equality; ``None``: a comparison missing)."""

    def need(*pairs):
        got = [words.get(p, "untested") for p in pairs]
        return None if "untested" in got else got

    geometry = need(("stiefel", "frozen"), ("stiefel", "no_decay_qk"))
    decay = need(("stiefel", "no_decay_qk"), ("no_decay_qk", "baseline"))
    scale = need(("stiefel", "frozen"), ("frozen", "baseline"), ("no_decay_qk", "baseline"))
    return {
        "geometry": None if geometry is None else geometry == ["higher", "higher"],
        "decay_hurts": None if decay is None else decay == ["tie", "higher"],
        "fixed_scale": None
        if scale is None
        else scale[0] in ("tie", "lower") and scale[1] == "higher" and scale[2] in ("tie", "lower"),
    }


def map_count(results: dict, lengths: tuple[int, ...], a: str = "stiefel", b: str = "baseline") -> dict[str, int]:
    """The old count of the map: every decay at every one of ``lengths`` (checkpoints of the same
    runs) counted as a cell, by :func:`stats.direction`."""
    out = {"higher": 0, "tie": 0, "lower": 0, "untested": 0}
    for wd in results["config"]["weight_decays"]:
        for epoch in lengths:
            c = paired(results, f"{a}@wd={wd:g}", f"{b}@wd={wd:g}", "val_acc", epoch, scale=100.0).comparison
            out[direction(c)] += 1
    return out


def long_words(long: dict | None, sizes: dict | None) -> dict[str, dict]:
    """The old words of the CIFAR-10 long protocol as the regimes chapter showed them, each
    comparison over every start both arms finished, by :func:`stats.direction`: ``"long"`` by
    ``(measure, λ)`` (the gain, the cost of freezing, decay on W_Q, W_K), ``"size"`` by
    ``("gain", images)`` and ``("widening",)`` (the gain at the largest size − at the smallest)."""
    out: dict[str, dict] = {"long": {}, "size": {}}
    if long and long.get("runs"):
        for row in long_training.regime_rows(long):
            for measure in ("gain", "freezing_cost", "decay_on_qk"):
                if row[measure] is not None:
                    out["long"][(measure, row["weight_decay"])] = direction(row[measure])
    if sizes and sizes.get("runs"):
        for row in long_sizes.size_gains(sizes):
            if row["comparison"] is not None:
                out["size"][("gain", row["train_size"])] = direction(row["comparison"])
        wide = long_sizes.widening(sizes)
        if wide is not None:
            out["size"][("widening",)] = direction(wide["comparison"])
    return out
