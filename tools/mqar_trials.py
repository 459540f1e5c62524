"""The trials that chose the judged MQAR setting (issue 30, item 3): candidate settings, each run
for frozen frames, then (unless frozen frames pass 90 %: too easy; ``--all`` runs them anyway)
the Stiefel rule and the AdamW baseline, on one core, for the seeds asked (default: seed 0).
Every run's validation accuracy every 100 steps and its CPU seconds (``time.process_time``: one
thread, so the time it would take on a core of its own, whatever else the machine runs) go to
``tools/mqar_trials.json`` (per setting: ``runs[arm][seed]``), which the docstring of
:class:`stiefel_book.tasks.routing.MQARConfig` quotes. A run already recorded is not rerun.
A tool of the checkout.

    OMP_NUM_THREADS=1 nice -n 10 python tools/mqar_trials.py [--seeds 0,1,2] [--all] [--arms a,b] [SETTING ...]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import torch

from stiefel_book.tasks import routing

OUT = Path(__file__).with_suffix(".json")
ARMS = ("frozen", "stiefel", "baseline")
EASY = 0.9  # frozen frames past this final accuracy: the setting is too easy, its trained arms are not run
OLD = dict(vocab_size=64, seq_len=32, kv_pairs=4, n_head=4, n_embd=64, steps=3000)  # the first setting
BASE = dataclasses.replace(routing.MQARConfig(), **OLD, seeds=(0,), checkpoint_every=10**9)
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
    "pairs4_1500": {"steps": 1500},
    "pairs5_5000": {"kv_pairs": 5, "steps": 5000},
    "pairs5": {"kv_pairs": 5},
    "pairs5_4000": {"kv_pairs": 5, "steps": 4000},
    "pairs6_6000": {"kv_pairs": 6, "steps": 6000},
    "h8_6000": {"n_head": 8, "steps": 6000},
    "w32h8_6000": {"n_embd": 32, "n_head": 8, "steps": 6000},
    "w32h4_6000": {"n_embd": 32, "n_head": 4, "steps": 6000},
}
SHOWN = ("kv_pairs", "seq_len", "vocab_size", "n_head", "n_embd")


def migrate(done: dict) -> dict:
    """Entries of the first format (``runs[arm]``: seed 0's run) in the present one (``runs[arm][seed]``)."""
    for trial in done.values():
        for arm, run in list(trial["runs"].items()):
            if "val_acc" in run:
                trial["runs"][arm] = {"0": run}
    return done


def load() -> dict:
    return migrate(json.loads(OUT.read_text())) if OUT.exists() else {}


def trial(name: str, seeds: list[int], arms: list[str], everything: bool) -> None:
    """The runs of setting ``name`` for ``seeds`` x ``arms``, each saved as it finishes."""
    config = dataclasses.replace(BASE, **SETTINGS[name])
    for seed in seeds:
        for arm in arms:
            outcome = load().get(name) or {"changes": SETTINGS[name], "runs": {}}
            outcome["setting"] = {k: getattr(config, k) for k in SHOWN}
            outcome["steps"] = config.steps
            if str(seed) not in outcome["runs"].get(arm, {}):
                start = time.process_time()
                out = routing.run_mqar(config, arm, seed, torch.device("cpu"), None, progress=False)
                run = {
                    "cpu_seconds": round(time.process_time() - start, 1),
                    "val_acc": [(r["epoch"], round(r["val_acc"], 4)) for r in out["history"] if "val_acc" in r],
                }
                outcome = load().get(name, outcome)  # read late: two processes may share the file
                outcome["runs"].setdefault(arm, {})[str(seed)] = run
                OUT.write_text(json.dumps({**load(), name: outcome}, indent=1) + "\n")
                print(name, "seed", seed, arm, run["cpu_seconds"], "s, final", run["val_acc"][-1], flush=True)
            final = outcome["runs"][arm][str(seed)]["val_acc"][-1][1]
            if arm == "frozen" and final > EASY and not everything:
                break  # too easy to test routing: the trained arms need not run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("settings", nargs="*", help="default: all")
    parser.add_argument("--seeds", default="0", help="comma-separated (default 0)")
    parser.add_argument("--arms", default=",".join(ARMS), help="comma-separated, in order (default %(default)s)")
    parser.add_argument("--all", action="store_true", help="run the trained arms even where frozen frames pass")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    for name in args.settings or SETTINGS:
        trial(name, seeds, args.arms.split(","), args.all)


if __name__ == "__main__":
    main()
