"""Manifold Muon's step against torch's Muon and StiefelAdam on the same banks of frames, as ratios
timed in one run, with the dual steps it took (issue 49).

    OMP_NUM_THREADS=1 python benchmarks/manifold_muon_step.py                 # GPT-2 small: 288 frames of 768 x 64
    OMP_NUM_THREADS=1 python benchmarks/manifold_muon_step.py --model tiny    # a quick look

Every optimizer steps the same frames (one ``(n_heads, d_model, d_head)`` bank per layer and
projection, as ``step_time.py``) with the same fixed random gradients; ``torch.optim.Muon`` takes
2-D matrices only, so each head is its own parameter (the book's Muon arm's settings).
``ManifoldMuon, no dual step`` is ``msign`` of the projected momentum, projected and capped: the
rest of the step, so the difference is what the dual steps cost. On one CPU thread a step is timed
by the process's CPU time (a shared machine's load does not inflate it); otherwise wall time.
Prints only: ``--save`` writes ``benchmarks/results/`` (or ``$STIEFEL_BENCH_RESULTS``), which the
README's benchmark block reads.
"""

from __future__ import annotations

import argparse
import time

import torch
from peers_step import fixed_grads, seconds_per_step
from record import Recorder
from step_time import MODELS, make_params
from torch import nn

from stiefel_core.manifold import orthonormality_error
from stiefel_core.manifold_muon import ManifoldMuon
from stiefel_core.optim import StiefelAdam

LR = 1e-3
NAMES = ("StiefelAdam", "ManifoldMuon", "ManifoldMuon, no dual step", "Muon")


class Stepper:
    """One optimizer on the banks ``shapes``: ``step(grads)`` applies one step (one gradient a bank)."""

    def __init__(self, name: str, shapes, device):
        self.name, self.device = name, device
        banks = make_params("plain" if name == "Muon" else "stiefel", shapes, device)
        if name == "Muon":  # 2-D only: each head its own matrix
            self.params = [nn.Parameter(h.detach().clone()) for p in banks for h in p.unbind(0)]
            self.opt = torch.optim.Muon(self.params, lr=LR, weight_decay=0.0, adjust_lr_fn="match_rms_adamw")
        elif name == "StiefelAdam":
            self.params, self.opt = banks, StiefelAdam(banks, lr=LR)
        else:
            self.params = banks
            self.opt = ManifoldMuon(banks, lr=LR, dual_steps=0 if "no dual" in name else 8)

    def step(self, grads) -> None:
        heads = [h for G in grads for h in G.unbind(0)] if self.name == "Muon" else grads
        for p, G in zip(self.params, heads):
            p.grad = G
        self.opt.step()


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--model", choices=sorted(MODELS), default="gpt2-small")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--muon-repeats", type=int, default=2, help="torch's Muon is slow on a CPU: fewer repeats")
    parser.add_argument("--save", action="store_true", help="also write the results file (the README reads it)")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    layers, heads, d_model, d_head = MODELS[args.model]
    shapes = [(heads, d_model, d_head)] * (2 * layers)
    out = Recorder(f"manifold_muon_step-{args.model}-{device.type}")
    out.say(
        f"{args.model}: {2 * layers * heads} frames of {d_model} x {d_head} in {len(shapes)} banks, {device}, "
        f"torch {torch.__version__}, {torch.get_num_threads()} threads; fixed random gradients"
    )
    cpu_clock = device.type == "cpu" and torch.get_num_threads() == 1
    clock = time.process_time if cpu_clock else time.perf_counter
    out.say(f"clock: {'CPU time of this process (one thread)' if cpu_clock else 'wall time'}")
    grads = fixed_grads(shapes, device)
    seconds, dual = {}, None
    for name in NAMES:
        stepper = Stepper(name, shapes, device)
        stepper.step(grads)  # warm-up, and the optimizer's state
        if name == "ManifoldMuon":
            stepper.opt.dual_solves = stepper.opt.dual_steps_taken = 0
        repeats = args.muon_repeats if name == "Muon" else args.repeats
        seconds[name] = seconds_per_step(stepper, grads, repeats, 0, clock)
        error = max(orthonormality_error(p.detach()).max().item() for p in stepper.params)
        extra = ""
        if name == "ManifoldMuon":
            dual = stepper.opt.mean_dual_steps()
            extra = f"   mean dual steps {dual:.2f} per bank solve, of at most 8"
        out.say(f"  {name:28s} {1e3 * seconds[name]:9.1f} ms/step   max ‖WᵀW − I‖_F {error:.1e}{extra}")
        del stepper
    mm = seconds["ManifoldMuon"]
    out.say(f"ratio ManifoldMuon / Muon: {mm / seconds['Muon']:.2f}")
    out.say(f"ratio ManifoldMuon / StiefelAdam: {mm / seconds['StiefelAdam']:.2f}")
    out.say(f"ratio ManifoldMuon / ManifoldMuon without dual steps: {mm / seconds['ManifoldMuon, no dual step']:.2f}")
    out.values = {"seconds": seconds, "mean_dual_steps": dual}
    if args.save:
        out.save(str(device) + f", {torch.get_num_threads()} threads")
    return out.values


if __name__ == "__main__":
    main()
