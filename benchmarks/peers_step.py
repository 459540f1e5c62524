"""The Stiefel rule's relatives, step for step: time, state memory and orthonormality drift of
each peer's optimizer on GPT-2 small's attention frames, in one process, as ratios to StiefelAdam
(chapter "Among its relatives").

    python benchmarks/peers_step.py                        # GPT-2 small (288 frames of 768 x 64), CPU
    python benchmarks/peers_step.py --ortho-steps 2000     # a shorter drift run

Every optimizer steps the same frames with the same fixed random gradients (the frames of
``step_time.py``, one ``(n_heads, d_model, d_head)`` bank per layer and projection, except Muon,
which takes 2-D matrices only: one per head). ``orthogonal_param``'s step includes what its
parametrization costs, the forward map and the backward through it, since that is where its
constraint is paid. Orthonormality ``‖WᵀW − I‖_F`` is measured on one frame (d_model x d_head:
drift is a property of one frame's steps, and one frame makes 10,000 steps affordable for every
peer on a CPU) after ``--ortho-steps`` steps (10,000), each with a fresh random gradient, the
same sequence for every optimizer. On one CPU thread a step is timed by the process's CPU time,
which the load of a shared machine does not inflate.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import time

import torch
from record import Recorder
from step_time import MODELS, make_params, state_bytes
from torch import nn

from stiefel_core.manifold import orthonormality_error
from stiefel_core.optim import StiefelAdam

PEERS = ("StiefelAdam", "AdamW (foreach)", "per_entry", "Muon", "geoopt RiemannianAdam", "orthogonal_param")
LR = 1e-3


class Stepper:
    """One optimizer on a list of banks: ``step(grads)`` applies one step for gradients of the
    banks' shapes; ``frames()`` are the banks as the model would use them."""

    def __init__(self, name: str, shapes, device):
        self.name, self.device, self.buffers = name, device, 0
        kind = {"StiefelAdam": "stiefel", "per_entry": "stiefel", "geoopt RiemannianAdam": "geoopt"}.get(name, "plain")
        banks = make_params(kind, shapes, device)
        self.frame_bytes = sum(p.numel() * p.element_size() for p in banks)
        self.modules = None
        if name == "StiefelAdam":
            self.params, self.opt = banks, StiefelAdam(banks, lr=LR)
        elif name == "per_entry":
            self.params, self.opt = banks, StiefelAdam(banks, lr=LR, second_moment="entry")
        elif name == "AdamW (foreach)":
            self.params, self.opt = banks, torch.optim.AdamW(banks, lr=LR, foreach=True)
        elif name == "geoopt RiemannianAdam":
            import geoopt

            self.params, self.opt = banks, geoopt.optim.RiemannianAdam(banks, lr=LR)
        elif name == "Muon":  # 2-D only: each head its own matrix; the book's arm's settings
            self.params = [nn.Parameter(h.detach().clone()) for p in banks for h in p.unbind(0)]
            self.opt = torch.optim.Muon(self.params, lr=LR, weight_decay=0.0, adjust_lr_fn="match_rms_adamw")
        elif name == "orthogonal_param":
            self.modules = []
            for p in banks:
                m = nn.Module()
                m.W = nn.Parameter(p.detach().clone())
                torch.nn.utils.parametrizations.orthogonal(m, "W")
                self.modules.append(m)
            self.params = [m.parametrizations.W.original for m in self.modules]
            self.buffers = sum(b.numel() * b.element_size() for m in self.modules for b in m.buffers())
            self.opt = torch.optim.AdamW(self.params, lr=LR, foreach=True, weight_decay=0.0)
        else:
            raise ValueError(f"unknown optimizer {name!r}; choose one of {PEERS}")

    def frames(self) -> list[torch.Tensor]:
        if self.modules is not None:
            return [m.W for m in self.modules]
        return self.params

    def step(self, grads: list[torch.Tensor]) -> None:
        """One optimizer step for ``grads`` (one per bank), the parametrization's map included."""
        if self.modules is not None:
            for m, G in zip(self.modules, grads):
                (m.W * G).sum().backward()
        elif self.name == "Muon":
            heads = [h for G in grads for h in G.unbind(0)]
            for p, G in zip(self.params, heads):
                p.grad = G
        else:
            for p, G in zip(self.params, grads):
                p.grad = G
        self.opt.step()
        if self.modules is not None:
            self.opt.zero_grad(set_to_none=True)

    def state_ratio(self) -> float:
        return state_bytes(self.opt) / self.frame_bytes

    @torch.no_grad()
    def orthonormality(self) -> float:
        return max(orthonormality_error(W.detach()).max().item() for W in self.frames())


def fixed_grads(shapes, device, seed=1) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(s, generator=g) * 1e-2).to(device) for s in shapes]


def seconds_per_step(stepper: Stepper, grads, repeats: int, warmup: int, clock=time.perf_counter) -> float:
    """Median seconds of ``stepper.step(grads)``; on CUDA each step's kernels are waited for."""
    wait = torch.cuda.synchronize if stepper.device.type == "cuda" else (lambda: None)
    for _ in range(warmup):
        stepper.step(grads)
    times = []
    for _ in range(repeats):
        wait()
        t0 = clock()
        stepper.step(grads)
        wait()
        times.append(clock() - t0)
    return statistics.median(times)


def drift(name: str, shape, steps: int, device) -> float:
    """``max ‖WᵀW − I‖_F`` of one bank of frames after ``steps`` steps with fresh random gradients."""
    stepper = Stepper(name, [shape], device)
    g = torch.Generator().manual_seed(2)
    from tqdm import trange

    for _ in trange(steps, desc=f"drift {name}", leave=False):
        stepper.step([(torch.randn(shape, generator=g) * 1e-2).to(device)])
    return stepper.orthonormality()


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--model", choices=sorted(MODELS), default="gpt2-small")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--slow-repeats",
        type=int,
        default=2,
        help="Muon, geoopt and the parametrization are slow on a CPU: fewer repeats",
    )
    parser.add_argument(
        "--ortho-steps", type=int, default=10_000, help="steps of every optimizer's drift run on one frame"
    )
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    layers, heads, d_model, d_head = MODELS[args.model]
    shapes = [(heads, d_model, d_head)] * (2 * layers)
    out = Recorder(f"peers_step-{args.model}-{device.type}")
    out.say(
        f"{args.model}: {2 * layers * heads} frames of {d_model} x {d_head}, {device}, torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads; one step each, fixed random gradients"
    )
    # On one CPU thread, the process's CPU time is the step's cost whatever else the machine runs
    # (a shared machine's load inflates wall time); with more threads, or on a GPU, wall time.
    cpu_clock = device.type == "cpu" and torch.get_num_threads() == 1
    clock = time.process_time if cpu_clock else time.perf_counter
    out.say(f"clock: {'CPU time of this process (one thread)' if cpu_clock else 'wall time'}")
    grads = fixed_grads(shapes, device)
    slow = ("Muon", "geoopt RiemannianAdam", "orthogonal_param")
    seconds, memory, error, steps = {}, {}, {}, {}
    missing = {"geoopt RiemannianAdam": "geoopt"}
    for name in PEERS:
        if name in missing and importlib.util.find_spec(missing[name]) is None:
            out.say(f"  {name:22s} left out: {missing[name]} is not installed")
            continue
        stepper = Stepper(name, shapes, device)
        seconds[name] = seconds_per_step(
            stepper, grads, args.slow_repeats if name in slow else args.repeats, 0 if name in slow else 2, clock
        )
        memory[name] = stepper.state_ratio()
        buffers = f" + parametrization buffers {stepper.buffers / stepper.frame_bytes:.1f}x" if stepper.buffers else ""
        del stepper
        steps[name] = args.ortho_steps
        error[name] = drift(name, (1, d_model, d_head), steps[name], device)
        out.say(
            f"  {name:22s} {1e3 * seconds[name]:8.1f} ms/step ({seconds[name] / seconds['StiefelAdam']:6.2f}x "
            "StiefelAdam)   "
            f"state {memory[name]:.3f}x the frames{buffers}   max ‖WᵀW − I‖_F after {steps[name]:,} steps: "
            f"{error[name]:.1e}"
        )
    out.save(str(device) + f", {torch.get_num_threads()} threads")
    return {"seconds": seconds, "state": memory, "orthonormality": error, "steps": steps}


if __name__ == "__main__":
    main()
