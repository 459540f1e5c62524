"""One optimizer step on attention frames: StiefelAdam against AdamW and geoopt, in one process.

    python benchmarks/step_time.py                      # GPT-2 small, CPU
    python benchmarks/step_time.py --device cuda        # also fused AdamW, timed with CUDA events
    python benchmarks/step_time.py --model large        # 24 layers x 16 heads x {Q, K}, 1024 x 64

Every optimizer steps the same frames, laid out as the library lays them out (one
``(n_heads, d_model, d_head)`` bank per layer and projection), with fixed random gradients.
It prints the median step time of each and the ratios that the targets are stated in, and
the optimizer state's size against the frames' own.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from record import Recorder

from stiefel_core.manifold import random_frame
from stiefel_core.optim import FrameParameter, StiefelAdam

MODELS = {"gpt2-small": (12, 12, 768, 64), "large": (24, 16, 1024, 64)}  # layers, heads, d_model, d_head


def make_params(kind: str, shapes, device, seed=0):
    g = torch.Generator().manual_seed(seed)
    params = []
    for shape in shapes:
        W = random_frame(shape[-2], shape[-1], shape[0], generator=g).to(device)
        if kind == "geoopt":
            import geoopt

            p = geoopt.ManifoldParameter(W, manifold=geoopt.Stiefel())
        else:
            p = FrameParameter(W) if kind == "stiefel" else torch.nn.Parameter(W)
        p.grad = torch.randn(p.shape, generator=g).to(device) * 1e-2
        params.append(p)
    return params


def make_optimizer(name: str, shapes, device):
    if name == "StiefelAdam":
        params = make_params("stiefel", shapes, device)
        return StiefelAdam(params, lr=1e-3), params
    if name == "AdamW (foreach)":
        params = make_params("plain", shapes, device)
        return torch.optim.AdamW(params, lr=1e-3, foreach=True), params
    if name == "AdamW (fused)":
        params = make_params("plain", shapes, device)
        return torch.optim.AdamW(params, lr=1e-3, fused=True), params
    if name == "geoopt RiemannianAdam":
        import geoopt

        params = make_params("geoopt", shapes, device)
        return geoopt.optim.RiemannianAdam(params, lr=1e-3), params
    raise ValueError(name)


def time_steps(opt, device, repeats: int, warmup: int = 2) -> float:
    """Median seconds per ``opt.step()``."""
    for _ in range(warmup):
        opt.step()
    times = []
    for _ in range(repeats):
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            opt.step()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        else:
            t0 = time.perf_counter()
            opt.step()
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def state_bytes(opt) -> int:
    return sum(t.numel() * t.element_size() for s in opt.state.values() for t in s.values() if torch.is_tensor(t))


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--model", choices=sorted(MODELS), default="gpt2-small")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--geoopt-repeats", type=int, default=2, help="geoopt is slow: fewer repeats")
    parser.add_argument("--skip-geoopt", action="store_true")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    layers, heads, d_model, d_head = MODELS[args.model]
    shapes = [(heads, d_model, d_head)] * (2 * layers)  # Q and K of every layer
    n_frames = 2 * layers * heads
    out = Recorder(f"step_time-{args.model}-{device.type}")
    out.say(f"{args.model}: {n_frames} frames of {d_model} x {d_head} in {len(shapes)} banks, {device}, torch {torch.__version__}, {torch.get_num_threads()} threads")

    names = ["StiefelAdam", "AdamW (foreach)"]
    if device.type == "cuda":
        names.append("AdamW (fused)")
    if not args.skip_geoopt:
        names.append("geoopt RiemannianAdam")
    seconds, memory = {}, {}
    for name in names:
        opt, params = make_optimizer(name, shapes, device)
        repeats = args.geoopt_repeats if name.startswith("geoopt") else args.repeats
        seconds[name] = time_steps(opt, device, repeats, warmup=1 if name.startswith("geoopt") else 2)
        frame_bytes = sum(p.numel() * p.element_size() for p in params)
        memory[name] = state_bytes(opt) / frame_bytes
        out.say(f"  {name:24s} {1e3 * seconds[name]:9.1f} ms/step   state {memory[name]:.3f}x the frames")
        del opt, params

    base = "AdamW (fused)" if device.type == "cuda" else "AdamW (foreach)"
    ratios = {"StiefelAdam / " + base: seconds["StiefelAdam"] / seconds[base]}
    if "geoopt RiemannianAdam" in seconds:
        ratios["geoopt / StiefelAdam"] = seconds["geoopt RiemannianAdam"] / seconds["StiefelAdam"]
    for key, value in ratios.items():
        out.say(f"ratio {key}: {value:.2f}")
    out.say(f"state StiefelAdam: {memory['StiefelAdam']:.4f}x frames; AdamW: {memory[base]:.2f}x")
    out.save(str(device) + (f" ({torch.cuda.get_device_name(device)})" if device.type == "cuda" else f", {torch.get_num_threads()} threads"))
    return {"seconds": seconds, "ratios": ratios, "state": memory}


if __name__ == "__main__":
    main()
