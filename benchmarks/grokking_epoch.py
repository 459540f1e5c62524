"""Time per epoch of the grokking experiment: the Stiefel arm as a ratio of the AdamW baseline.

    python benchmarks/grokking_epoch.py                 # full-profile model (p = 97), CPU
    python benchmarks/grokking_epoch.py --device cuda

Both arms train the same model from the same seed for the same epochs, in one process, in
alternating blocks (so that a change of machine load hits both); the target is a ratio of
at most 1.2.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time

import torch
from record import Recorder

from stiefel_book.experiments import get_config, grokking


def seconds_per_epoch(arm: str, config, device: torch.device) -> float:
    config = dataclasses.replace(config, log_every=config.epochs)  # one evaluation, at the end
    grokking.run(dataclasses.replace(config, epochs=3), arm, 0, device, progress=False)  # warm-up
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    grokking.run(config, arm, 0, device, progress=False)
    if device.type == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - start) / config.epochs


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--profile", default="full")
    parser.add_argument("--epochs", type=int, default=100, help="epochs per timed block")
    parser.add_argument("--blocks", type=int, default=3, help="alternating blocks per arm")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    config = dataclasses.replace(get_config("grokking", args.profile), epochs=args.epochs)
    times = {arm: [] for arm in grokking.ARMS}
    for _ in range(args.blocks):
        for arm in grokking.ARMS:
            times[arm].append(seconds_per_epoch(arm, config, device))
    medians = {arm: statistics.median(t) for arm, t in times.items()}
    out = Recorder(f"grokking_epoch-{args.profile}-{device.type}")
    out.say(
        f"grokking ({args.profile} model, p = {config.p}), {device}, {torch.get_num_threads()} threads, median of "
        f"{args.blocks} blocks of {args.epochs} epochs"
    )
    for arm, value in medians.items():
        out.say(f"  {arm:9s} {1e3 * value:8.1f} ms/epoch")
    ratio = medians["stiefel"] / medians["baseline"]
    out.say(f"ratio stiefel / baseline: {ratio:.2f} (target <= 1.2)")
    out.values = {"ms_per_epoch": {arm: 1e3 * value for arm, value in medians.items()}, "p": config.p}
    gpu = f" ({torch.cuda.get_device_name(device)})" if device.type == "cuda" else ""
    out.save(f"{device}{gpu}, {torch.get_num_threads()} threads")
    return {"seconds_per_epoch": medians, "ratio": ratio}


if __name__ == "__main__":
    main()
