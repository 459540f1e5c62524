"""Wall time of the paper-scale experiments on one device: one full grokking seed (both arms)
and the full CIFAR-10 protocol (every arm and start), as the issue's GPU targets state them.

    python benchmarks/experiments_time.py --device cuda            # targets: 2 min, 10 min
    python benchmarks/experiments_time.py --device cuda --only grokking

Runs write into a temporary results folder (nothing under book/results changes) and the
script prints each measured time beside its target.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import tempfile
import time
from pathlib import Path

import torch
from record import Recorder

from stiefel_book.experiments import get_config, run_experiment

TARGETS = {"grokking": 120.0, "cifar10": 600.0}  # seconds on one H200


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--only", choices=sorted(TARGETS), nargs="+", default=sorted(TARGETS))
    args = parser.parse_args(argv)
    out = Recorder(f"experiments_time-{torch.device(args.device).type}")
    seconds = {}
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["STIEFEL_CHECKPOINTS"] = str(Path(tmp) / "checkpoints")
        for name in args.only:
            config = get_config(name, "full")
            if name == "grokking":  # the target is stated for one seed
                config = dataclasses.replace(config, seeds=config.seeds[:1])
            start = time.perf_counter()
            run_experiment(name, "full", device=args.device, directory=Path(tmp), config=config, progress=False)
            seconds[name] = time.perf_counter() - start
            out.say(
                f"{name} (full, {len(config.seeds)} seed(s), every arm): {seconds[name]:.0f} s; target "
                f"{TARGETS[name]:.0f} s on one H200"
            )
    device = torch.device(args.device)
    out.save(torch.cuda.get_device_name(device) if device.type == "cuda" else f"cpu, {torch.get_num_threads()} threads")
    return seconds


if __name__ == "__main__":
    main()
