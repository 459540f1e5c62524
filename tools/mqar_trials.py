"""The trials that chose the judged MQAR setting (issue 30, item 3): candidate settings, each run
once (seed 0) for frozen frames, then (unless frozen frames pass 90 %: too easy) the Stiefel rule
and the AdamW baseline, on one core. Every run's
validation accuracy every 100 steps and its CPU seconds (``time.process_time``: one thread, so the
time it would take on a core of its own, whatever else the machine runs) go to ``tools/mqar_trials.json``, which the
docstring of :class:`stiefel_core.experiments.routing.MQARConfig` quotes. A tool of the checkout.

    OMP_NUM_THREADS=1 nice -n 10 python tools/mqar_trials.py [SETTING ...]   # default: all
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path

import torch

from stiefel_core.experiments import routing

OUT = Path(__file__).with_suffix(".json")
ARMS = ("frozen", "stiefel", "baseline")
EASY = 0.9  # frozen frames past this final accuracy: the setting is too easy, its trained arms are not run
BASE = dataclasses.replace(routing.MQARConfig(), seeds=(0,), checkpoint_every=10**9)
SETTINGS = {  # name -> the fields changed from the old setting (4 pairs, 32 tokens, 64 symbols, 3,000 steps)
    "old": {},
    "pairs8_v128": {"kv_pairs": 8, "vocab_size": 128},
    "pairs8_v256": {"kv_pairs": 8, "vocab_size": 256},
    "pairs6_v256_t48": {"kv_pairs": 6, "vocab_size": 256, "seq_len": 48},
    "pairs8_v128_t64": {"kv_pairs": 8, "vocab_size": 128, "seq_len": 64},
    "pairs6": {"kv_pairs": 6},
    "pairs6_v256": {"kv_pairs": 6, "vocab_size": 256},
    "pairs4_v128": {"vocab_size": 128},
    "pairs4_v256": {"vocab_size": 256},
    "pairs4_v256_1500": {"vocab_size": 256, "steps": 1500},
}


def save(name: str, outcome: dict) -> None:
    done = json.loads(OUT.read_text()) if OUT.exists() else {}  # read late: two processes may share the file
    OUT.write_text(json.dumps({**done, name: outcome}, indent=1) + "\n")


def trial(name: str) -> None:
    """Every arm of setting ``name``, each saved as it finishes."""
    config = dataclasses.replace(BASE, **SETTINGS[name])
    setting = {k: getattr(config, k) for k in ("kv_pairs", "seq_len", "vocab_size")}
    outcome = {"changes": SETTINGS[name], "setting": setting, "steps": config.steps, "runs": {}}
    for arm in ARMS:
        start = time.process_time()
        out = routing.run_mqar(config, arm, 0, torch.device("cpu"), None, progress=False)
        outcome["runs"][arm] = run = {
            "cpu_seconds": round(time.process_time() - start, 1),
            "val_acc": [(r["epoch"], round(r["val_acc"], 4)) for r in out["history"] if "val_acc" in r],
        }
        save(name, outcome)
        print(name, arm, run["cpu_seconds"], "s, final", run["val_acc"][-1], flush=True)
        if arm == "frozen" and run["val_acc"][-1][1] > EASY:
            return  # too easy to test routing: the trained arms need not run


def main(names: list[str]) -> None:
    for name in names or SETTINGS:
        trial(name)


if __name__ == "__main__":
    main(sys.argv[1:])
