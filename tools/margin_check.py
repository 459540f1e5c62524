"""Can equal arms meet a routing family's equivalence margin? The check its protocol entry asks for
before the judged runs: on the selection seeds of the task's W_Q, W_K lr sweep, each swept arm at
its best complete rung, the spread of the paired differences of the judged endpoint (the final
value) between every two arms; from it, the smallest margin that two arms differing by that spread
could meet by the two one-sided tests on the family's judged seeds, uncorrected and at the
strictest Holm level (α over the family's size). A task judged again at its checked model lr
(:func:`stiefel_book.declared.judged_file`) is read at that rate: its sweep there and its fresh seeds.
Written to ``tools/margin_check.json``; a tool of the checkout.

    python tools/margin_check.py charlm      # or mqar, induction
"""

from __future__ import annotations

import itertools
import json
import math
import sys
from pathlib import Path

import numpy as np
from scipy import stats

from stiefel_book import declared, protocol
from stiefel_book.choices import late_scores
from stiefel_book.findings import routing as fr
from stiefel_book.results import load_results

OUT = Path(__file__).with_suffix(".json")


def best_rungs(sweep: dict) -> dict[str, float]:
    """Each swept arm's rung of best mean late score among those every selection seed finished."""
    config = sweep["config"]
    n, out = len(config["seeds"]), {}
    for arm in fr.SWEPT:
        scores = late_scores(sweep, arm, config["metric"], horizon="steps")
        complete = {lr: np.mean(v) for lr, v in scores.items() if len(v) == n}
        if complete:
            out[arm] = max(complete, key=complete.get)
    return out


def check(task: str) -> dict:
    family_name, endpoint = fr.TASKS[task]
    family = protocol.family(family_name)
    name = declared.judged_sweep(task)  # the sweep whose choices the task's current judged runs took
    sweep = load_results(name, "full")
    if not sweep:
        raise SystemExit(f"no sweep {name} yet: run `python -m stiefel_book sweep {name} --profile full`")
    rungs = best_rungs(sweep)
    finals = {
        arm: {
            int(k.rpartition("/")[2]): endpoint.scale * r["final"][endpoint.metric]
            for k, r in sweep["runs"].items()
            if k.rpartition("/")[0] == f"{arm}@qklr={lr:g}"
        }
        for arm, lr in rungs.items()
    }
    judged = load_results(declared.judged_file(task), "full")  # a task judged again: its fresh seeds
    n = len(judged["config"]["seeds"]) if judged else len(family.judged_seeds)
    alpha = family.alpha
    m = len(fr.JUDGED_ARMS) * 2 - 3  # each arm against AdamW and the Stiefel rule, the pair counted once
    pairs = {}
    for a, b in itertools.combinations(finals, 2):
        seeds = sorted(set(finals[a]) & set(finals[b]))
        d = np.array([finals[a][s] - finals[b][s] for s in seeds])
        sd = float(d.std(ddof=1))
        pairs[f"{a} - {b}"] = {
            "seeds": len(seeds),
            "mean": float(d.mean()),
            "sd": sd,
            "meetable_margin": stats.t.ppf(1 - alpha, n - 1) * sd / math.sqrt(n),
            "meetable_margin_holm": stats.t.ppf(1 - alpha / m, n - 1) * sd / math.sqrt(n),
        }
    sds = [p["sd"] for p in pairs.values()]
    return {
        "task": task,
        "family": family_name,
        "declared_margin": family.margin,
        "unit": family.margin_unit,
        "judged_seeds": n,
        "sweep": name,
        "rungs": rungs,
        "median_sd": float(np.median(sds)),
        "median_meetable_margin": float(np.median([p["meetable_margin"] for p in pairs.values()])),
        "median_meetable_margin_holm": float(np.median([p["meetable_margin_holm"] for p in pairs.values()])),
        "pairs": pairs,
    }


if __name__ == "__main__":
    tasks = sys.argv[1:] or ["charlm"]
    record = json.loads(OUT.read_text()) if OUT.exists() else {}
    for task in tasks:
        record[task] = result = check(task)
        print(
            f"{task}: declared margin {result['declared_margin']:g} {result['unit']}; on {result['judged_seeds']} "
            f"judged seeds, equal arms with the sweep's median paired spread (sd {result['median_sd']:.3g}) could "
            f"meet {result['median_meetable_margin']:.3g} uncorrected, {result['median_meetable_margin_holm']:.3g} "
            "at the strictest Holm level"
        )
    OUT.write_text(json.dumps(record, indent=1) + "\n")
