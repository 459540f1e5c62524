"""Training throughput against the CPU's matmul floor, measured in the same run.

    python benchmarks/train_throughput.py                  # 1 and 2 threads, both tasks, both arms
    python benchmarks/train_throughput.py --threads 1 --repeats 5

For the CIFAR-10 step (the long-training protocol's config: 10,000 images, batch 128, 8x8
patches, a test pass over 10,000 images on logged epochs) and the grokking epoch (full config,
p = 97, one full-batch step), for the AdamW baseline and the Stiefel arm:

- floor: the step's FLOPs (``torch.utils.flop_counter``, forward and backward) divided by the rate
  of a float32 2048x256 by 256x256 matrix product measured at the same thread count;
- bare step: forward, backward and optimizer step of the experiment's own model and optimizer on a
  fixed batch, nothing else; eager, and with the forward under ``torch.compile``;
- as the experiment runs it: a step of an unlogged epoch inside the experiment's training
  function (eager, the CPU default of ``stiefel_book.compiling``);
- logged epoch: a logged epoch's training steps (per-step displacements, running sums), and the
  whole logged epoch with its evaluation, per step;
- a run's step: every epoch of a short run at the config's logging interval, per step.

Every repeat measures every path once, in turn, so each ratio is taken within one repeat (a
busy machine slows a repeat's paths alike); the median over repeats is printed. CIFAR-10 needs
the data (``$STIEFEL_CIFAR10``); without it that task is skipped with a notice.
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

from stiefel_book.data import modular_data
from stiefel_book.experiments import get_config
from stiefel_book.models import ModularTransformer
from stiefel_book.tasks import cifar10, grokking
from stiefel_core.combined import configure_optimizer

ARMS = ("baseline", "stiefel")
PATHS = ("bare", "compiled", "experiment", "logged_steps", "logged_epoch", "amortized")


def seconds(fn, inner: int) -> float:
    start = time.perf_counter()
    for _ in range(inner):
        fn()
    return (time.perf_counter() - start) / inner


def gemm_rate() -> float:
    """FLOP/s of a float32 (2048, 256) @ (256, 256) product at the current thread count."""
    a, b = torch.randn(2048, 256), torch.randn(256, 256)
    a @ b
    return 2 * 2048 * 256 * 256 / min(seconds(lambda: a @ b, 100) for _ in range(3))


def step_flops(step) -> int:
    with FlopCounterMode(display=False) as counter:
        step()
    return counter.get_total_flops()


class EpochTimer:
    """Wraps an experiment module's ``fit`` to time its epochs' training and evaluation apart."""

    def __init__(self, module):
        self.module, self.real, self.records = module, module.fit, []

    def __enter__(self):
        def timed_fit(model, opt, train_step, evaluate, **kwargs):
            def step(epoch, logging):
                start = time.perf_counter()
                out = train_step(epoch, logging)
                self.records.append(("train", logging, time.perf_counter() - start))
                return out

            def ev():
                start = time.perf_counter()
                out = evaluate()
                self.records.append(("eval", True, time.perf_counter() - start))
                return out

            return self.real(model, opt, step, ev, **kwargs)

        self.module.fit = timed_fit
        return self

    def __exit__(self, *exc):
        self.module.fit = self.real

    def per_step(self, steps_per_epoch: int) -> dict[str, float]:
        train = {
            flag: statistics.median(t for kind, f, t in self.records if kind == "train" and f == flag)
            for flag in (False, True)
        }
        evaluation = statistics.median(t for kind, _, t in self.records if kind == "eval")
        epochs = sum(kind == "train" for kind, _, _ in self.records)
        return {
            "experiment": train[False] / steps_per_epoch,
            "logged_steps": train[True] / steps_per_epoch,
            "logged_epoch": (train[True] + evaluation) / steps_per_epoch,
            "amortized": sum(t for _, _, t in self.records) / (epochs * steps_per_epoch),
        }


def bare_steps(model, opt, loss_of):
    """The bare step, eager and compiled (compile time measured once, apart)."""
    compiled = torch.compile(model)

    def step(forward):
        def once():
            loss = loss_of(forward)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

        return once

    start = time.perf_counter()
    step(compiled)()
    compile_seconds = time.perf_counter() - start
    return step(model), step(compiled), compile_seconds


def cifar10_task(arm: str):
    config = get_config("cifar10_long", "full").task
    model = cifar10.build_model(config, arm, 0)
    opt = cifar10.build_optimizer(model, config, arm)
    x, y = torch.randn(config.batch_size, 3, 32, 32), torch.randint(0, 10, (config.batch_size,))
    bare, compiled, compile_seconds = bare_steps(model, opt, lambda f: F.cross_entropy(f(x), y))
    short = dataclasses.replace(config, epochs=4, log_every=2, checkpoint_every=10**6)
    steps_per_epoch = config.train_size // config.batch_size

    def experiment():
        with EpochTimer(cifar10) as timer:
            cifar10.train(short, arm, 0, torch.device("cpu"), None, False, compile=False)
        return timer.per_step(steps_per_epoch)

    return bare, compiled, compile_seconds, experiment, (10, 10)


def grokking_task(arm: str):
    config = dataclasses.replace(get_config("grokking", "full"), cpu_threads=None)
    data = modular_data(config.p, "add", config.train_fraction, 0)
    torch.manual_seed(0)
    model = ModularTransformer(
        data.vocab_size, config.p, config.d_model, config.n_heads, config.d_mlp, stiefel=arm != "baseline"
    )
    opt = configure_optimizer(model, lr=config.lr, weight_decay=config.weight_decay, betas=config.betas)
    bare, compiled, compile_seconds = bare_steps(model, opt, lambda f: F.cross_entropy(f(data.train_x), data.train_y))
    short = dataclasses.replace(config, epochs=10 * config.log_every, checkpoint_every=10**6)

    def experiment():
        with EpochTimer(grokking) as timer:
            grokking._run(short, arm, 0, torch.device("cpu"), None, False, compile=False)
        return timer.per_step(1)

    return bare, compiled, compile_seconds, experiment, (20, 20)


def measure(task, arm: str, repeats: int) -> dict:
    bare, compiled, compile_seconds, experiment, (inner, _) = task(arm)
    flops = step_flops(bare)
    experiment()  # warm-up: data preparation, first-call allocations
    rounds = []
    for _ in range(repeats):
        floor = flops / gemm_rate()
        times = {"bare": seconds(bare, inner), "compiled": seconds(compiled, inner), **experiment()}
        rounds.append({"floor": floor, **times})
    median = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
    ratio = {k: statistics.median(r[k] / r["floor"] for r in rounds) for k in PATHS}
    over_bare = {k: statistics.median(r[k] / r["bare"] for r in rounds) for k in PATHS}
    return {"flops": flops, "compile_seconds": compile_seconds, "ms": median, "x_floor": ratio, "x_bare": over_bare}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    tasks = {"grokking epoch (p = 97)": grokking_task}
    if os.environ.get("STIEFEL_CIFAR10"):
        tasks = {"CIFAR-10 step (10,000 images, batch 128)": cifar10_task, **tasks}
    else:
        print("CIFAR-10 skipped: set STIEFEL_CIFAR10 to the data (see the README)")
    out = Recorder("train_throughput-cpu")
    for n in args.threads:
        torch.set_num_threads(n)
        out.say(
            f"{n} thread(s): float32 GEMM 2048x256x256 at {gemm_rate() / 1e9:.1f} GFLOP/s (median of each repeat's own "
            "below)"
        )
        for name, task in tasks.items():
            for arm in ARMS:
                t = measure(task, arm, args.repeats)
                ms, x, b = t["ms"], t["x_floor"], t["x_bare"]
                out.say(
                    f"  {name}, {arm}: {t['flops'] / 1e9:.2f} GFLOP, floor {1e3 * ms['floor']:.1f} ms; "
                    f"bare {1e3 * ms['bare']:.1f} ms ({x['bare']:.2f}x floor); "
                    f"compiled {1e3 * ms['compiled']:.1f} ms ({x['compiled']:.2f}x; {b['compiled']:.2f}x eager; "
                    f"compiling took {t['compile_seconds']:.0f} s); "
                    f"as the experiment runs it {1e3 * ms['experiment']:.1f} ms ({x['experiment']:.2f}x); "
                    f"logged epoch: steps {1e3 * ms['logged_steps']:.1f} ms ({b['logged_steps']:.2f}x the bare step), "
                    f"with its evaluation {1e3 * ms['logged_epoch']:.1f} ms ({b['logged_epoch']:.2f}x); "
                    f"a run's step, its logged epochs included {1e3 * ms['amortized']:.1f} ms ({x['amortized']:.2f}x "
                    "floor)"
                )
    out.say(
        "targets: the experiment's CIFAR-10 step <= 2.0x the floor on 1 thread; a logged epoch <= 1.15x the bare step; "
        "the grokking epoch <= 2.0x its floor"
    )
    out.save("cpu, " + "/".join(map(str, args.threads)) + " threads")


if __name__ == "__main__":
    main()
