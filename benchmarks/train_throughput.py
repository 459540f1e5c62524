"""Training throughput against the CPU's matmul floor, measured in the same run.

    python benchmarks/train_throughput.py                  # 1 and 2 threads, both tasks, both arms
    python benchmarks/train_throughput.py --threads 1 --repeats 5

For the CIFAR-10 step (full config: batch 128, 8x8 patches) and the grokking epoch (full config,
p = 97, one full-batch step), for the AdamW baseline and the Stiefel arm:

- floor: the step's FLOPs (``torch.utils.flop_counter``, forward and backward) divided by the rate
  of a float32 2048x256 by 256x256 matrix product measured at the same thread count;
- bare step: forward, backward and optimizer step of the experiment's own model and optimizer on a
  fixed batch, nothing else;
- as the experiment runs it: a step inside the experiment's training function, epochs unlogged;
- logged epoch: the same with every epoch logged (per-step displacements, running sums, the
  evaluation), per step.

It prints ms per step and each path's ratio to the floor (and the logged epoch's to the bare step).
CIFAR-10 needs the data (``$STIEFEL_CIFAR10``); without it that task is skipped with a notice.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import time

import torch
import torch.nn.functional as F
from record import Recorder
from torch.utils.flop_counter import FlopCounterMode

from stiefel_core.data import modular_data
from stiefel_core.experiments import cifar10, get_config, grokking
from stiefel_core.models import ModularTransformer
from stiefel_core.optim import configure_optimizer

ARMS = ("baseline", "stiefel")


def median_seconds(fn, repeats: int, inner: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        times.append((time.perf_counter() - start) / inner)
    return statistics.median(times)


def gemm_rate(repeats: int) -> float:
    """FLOP/s of a float32 (2048, 256) @ (256, 256) product at the current thread count."""
    a, b = torch.randn(2048, 256), torch.randn(256, 256)
    seconds = median_seconds(lambda: a @ b, repeats, 200)
    return 2 * 2048 * 256 * 256 / seconds


def step_flops(step) -> int:
    with FlopCounterMode(display=False) as counter:
        step()
    return counter.get_total_flops()


def cifar10_paths(arm: str, repeats: int) -> dict[str, float]:
    config = get_config("cifar10", "full")
    model, device = cifar10.build_model(config, arm, 0), torch.device("cpu")
    opt = cifar10.build_optimizer(model, config, arm)
    x, y = torch.randn(config.batch_size, 3, 32, 32), torch.randint(0, 10, (config.batch_size,))

    def step():
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    flops = step_flops(step)
    bare = median_seconds(step, repeats, 10)
    n = 20 * config.batch_size  # 20 steps an epoch, 2 epochs: the experiment's own loop
    short = dataclasses.replace(config, train_size=n, test_size=1_000, epochs=2)
    steps = 2 * (n // config.batch_size)

    def experiment(log_every: int):
        return lambda: cifar10.train(short, arm, 0, device, None, False, log_every=log_every)

    unlogged = median_seconds(experiment(10**6), repeats, 1) / steps  # the last epoch is always logged: 1 of 2
    logged = median_seconds(experiment(1), repeats, 1) / steps
    return {"flops": flops, "bare": bare, "experiment": unlogged, "logged": logged}


def grokking_paths(arm: str, repeats: int) -> dict[str, float]:
    config = dataclasses.replace(get_config("grokking", "full"), cpu_threads=None)
    data = modular_data(config.p, "add", config.train_fraction, 0)
    torch.manual_seed(0)
    model = ModularTransformer(data.vocab_size, config.p, config.d_model, config.n_heads, config.d_mlp, stiefel=arm != "baseline")
    opt = configure_optimizer(model, lr=config.lr, weight_decay=config.weight_decay, betas=config.betas)

    def step():
        loss = F.cross_entropy(model(data.train_x), data.train_y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    flops = step_flops(step)
    bare = median_seconds(step, repeats, 20)
    epochs = 40

    def experiment(log_every: int):
        short = dataclasses.replace(config, epochs=epochs, log_every=log_every, checkpoint_every=10**6)
        return lambda: grokking.run(short, arm, 0, torch.device("cpu"), progress=False)

    unlogged = median_seconds(experiment(10**6), repeats, 1) / epochs  # one logged epoch (the last) in 40
    logged = median_seconds(experiment(1), repeats, 1) / epochs
    return {"flops": flops, "bare": bare, "experiment": unlogged, "logged": logged}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    tasks = {"grokking epoch (p = 97)": grokking_paths}
    if os.environ.get("STIEFEL_CIFAR10"):
        tasks = {"CIFAR-10 step (batch 128)": cifar10_paths, **tasks}
    else:
        print("CIFAR-10 skipped: set STIEFEL_CIFAR10 to the data (see the README)")
    out = Recorder("train_throughput-cpu")
    for n in args.threads:
        torch.set_num_threads(n)
        rate = gemm_rate(args.repeats)
        out.say(f"{n} thread(s): float32 GEMM 2048x256x256 at {rate / 1e9:.1f} GFLOP/s")
        for task, paths in tasks.items():
            for arm in ARMS:
                t = paths(arm, args.repeats)
                floor = t["flops"] / rate
                out.say(f"  {task}, {arm}: {t['flops'] / 1e9:.2f} GFLOP, floor {1e3 * floor:.1f} ms; "
                        f"bare {1e3 * t['bare']:.1f} ms ({t['bare'] / floor:.2f}x floor), "
                        f"as the experiment runs it {1e3 * t['experiment']:.1f} ms ({t['experiment'] / floor:.2f}x), "
                        f"logged {1e3 * t['logged']:.1f} ms ({t['logged'] / floor:.2f}x; {t['logged'] / t['bare']:.2f}x the bare step)")
    out.say("targets: the experiment's CIFAR-10 step <= 2.0x the floor on 1 thread; a logged epoch <= 1.15x the bare step; "
            "the grokking epoch <= 2.0x its floor")
    out.save("cpu, " + "/".join(map(str, args.threads)) + " threads")


if __name__ == "__main__":
    main()
