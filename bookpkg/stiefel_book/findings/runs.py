"""The runs of a results file: which starts finished, and whether the runs of a start are
paired (the same initial weights, the same data order). Every chapter that compares arms
(CIFAR-10, ablation, regimes) reads its starts here."""

from __future__ import annotations

from ..results_reading import finished_starts, run_key, seed_of  # noqa: F401  (finished_starts: the chapters read it here)

__all__ = ["same_across_arms", "unpaired_starts"]


def same_across_arms(results: dict, arms, starts, field: str) -> bool:
    """Whether, in every start of ``starts``, every arm of ``arms`` recorded the same
    ``final[field]`` (``"init_fingerprint"``: the same initial weights; ``"order_checksum"``:
    the same data order).
    Chapters: cifar10_patches, ablation, grokking, regimes."""
    runs = results["runs"]
    return all(len({runs[run_key(arm, s)]["final"][field] for arm in arms}) == 1 for s in starts)


def unpaired_starts(runs: dict) -> dict[str, list[str]]:
    """``{start: marks}`` of the starts whose runs (``{"<arm>/<start>": run}``) began from
    different weights or data orders; empty when every start is paired.
    Chapters: cifar10_patches, ablation, grokking, regimes."""
    out = {}
    for seed in {str(seed_of(key)) for key in runs}:
        marks = {
            (r["final"].get("init_fingerprint"), r["final"].get("order_checksum"))
            for k, r in runs.items()
            if str(seed_of(k)) == seed
        }
        if len(marks) > 1:
            out[seed] = sorted(map(str, marks))
    return out


