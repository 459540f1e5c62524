"""What one run of each routing experiment costs on one core: ``STEPS`` steps of each task's ``full``
setting (Stiefel rule, seed 0, one thread), timed in CPU seconds (``time.process_time``: the time on
a core of its own, whatever else the machine runs), scaled to the setting's steps. Written to
``tools/routing_costs.json``; the experiments' docstrings quote it. A tool of the checkout.

    OMP_NUM_THREADS=1 nice -n 10 python tools/routing_costs.py
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import torch

from stiefel_book.experiments.routing_sweep import CHARLM_PROFILES, INDUCTION_PROFILES, MQAR_PROFILES
from stiefel_book.tasks import charlm, routing

OUT = Path(__file__).with_suffix(".json")
STEPS = 200


def cost(run, config) -> dict:
    short = dataclasses.replace(config, steps=STEPS, log_every=STEPS, checkpoint_every=10**9, warmup_steps=10)
    start = time.process_time()
    run(short, "stiefel", 0, torch.device("cpu"), None, progress=False)
    per_step = (time.process_time() - start) / STEPS
    return {
        "cpu_seconds_per_step": round(per_step, 4),
        "steps": config.steps,
        "minutes_a_run": round(per_step * config.steps / 60, 2),
    }


if __name__ == "__main__":
    tasks = {
        "mqar": (routing.run_mqar, MQAR_PROFILES["full"]),
        "induction": (routing.run_induction, INDUCTION_PROFILES["full"]),
        "charlm": (charlm.run, CHARLM_PROFILES["full"]),
    }
    out = {name: cost(run, config) for name, (run, config) in tasks.items()}
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))
