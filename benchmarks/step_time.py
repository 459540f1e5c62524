"""One optimizer step on attention frames: StiefelAdam against AdamW and geoopt, in one process.

    python benchmarks/step_time.py                      # GPT-2 small, CPU
    python benchmarks/step_time.py --device cuda        # also fused AdamW, timed with CUDA events
    python benchmarks/step_time.py --model large        # 24 layers x 16 heads x {Q, K}, 1024 x 64
    python benchmarks/step_time.py --model tiny         # seconds: the device check's dry run

Every optimizer steps the same frames, laid out as the library lays them out (one
``(n_heads, d_model, d_head)`` bank per layer and projection), with fixed random gradients.
It prints the median step time of each and the ratios that the targets are stated in, and
the optimizer state's size against the frames' own. Both frame layouts are timed: contiguous
(row-major matrices) and column-major, as ``torch.linalg.qr`` returns them (what a user who
initialises by QR gets). The step's own floor, measured in the same run: its batched products
(FLOPs by ``torch.utils.flop_counter``) at the measured ``bmm`` rate of the frames' shapes, plus
AdamW's memory passes (the AdamW (foreach) step on the same layout).
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import time

import torch
from record import Recorder
from torch.utils.flop_counter import FlopCounterMode

from stiefel_core.frames import FrameParameter
from stiefel_core.manifold import random_frame
from stiefel_core.optim import StiefelAdam

# layers, heads, d_model, d_head
MODELS = {"gpt2-small": (12, 12, 768, 64), "large": (24, 16, 1024, 64), "tiny": (2, 2, 64, 16)}


LAYOUTS = ("contiguous", "column-major")


def laid_out(X, layout: str):
    """``X`` with row-major matrices, or column-major ones (the strides ``torch.linalg.qr`` returns)."""
    return X.contiguous() if layout == "contiguous" else X.mT.contiguous().mT


def make_params(kind: str, shapes, device, seed=0, layout: str = "contiguous"):
    g = torch.Generator().manual_seed(seed)
    params = []
    for shape in shapes:
        W = laid_out(random_frame(shape[-2], shape[-1], shape[0], generator=g).to(device), layout)
        if kind == "geoopt":
            import geoopt

            p = geoopt.ManifoldParameter(W, manifold=geoopt.Stiefel())
        else:
            p = FrameParameter(W) if kind == "stiefel" else torch.nn.Parameter(W)
        p.grad = laid_out(torch.randn(p.shape, generator=g).to(device) * 1e-2, layout)
        params.append(p)
    return params


def make_optimizer(name: str, shapes, device, layout: str = "contiguous"):
    if name == "StiefelAdam":
        params = make_params("stiefel", shapes, device, layout=layout)
        return StiefelAdam(params, lr=1e-3), params
    if name == "AdamW (foreach)":
        params = make_params("plain", shapes, device, layout=layout)
        return torch.optim.AdamW(params, lr=1e-3, foreach=True), params
    if name == "AdamW (fused)":
        params = make_params("plain", shapes, device, layout=layout)
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


def bmm_rate(shape, device, repeats: int) -> float:
    """FLOP/s of the step's two kinds of batched product on one bank: ``WᵀG`` and ``W S``."""
    F, d, r = shape
    W, G, S = (torch.randn(s, device=device) for s in ((F, d, r), (F, d, r), (F, r, r)))

    def products():
        torch.bmm(W.mT, G)
        torch.bmm(W, S)

    products()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(20):
            products()
        if device.type == "cuda":
            torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) / 20)
    return 4 * F * d * r * r / statistics.median(times)


def step_flops(opt) -> int:
    """FLOPs of one ``opt.step()`` (its matrix products), by ``torch.utils.flop_counter``."""
    with FlopCounterMode(display=False) as counter:
        opt.step()
    return counter.get_total_flops()


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
    out.say(
        f"{args.model}: {n_frames} frames of {d_model} x {d_head} in {len(shapes)} banks, {device}, torch "
        f"{torch.__version__}, {torch.get_num_threads()} threads"
    )

    names = ["StiefelAdam", "AdamW (foreach)"]
    if device.type == "cuda":
        names.append("AdamW (fused)")
    if not args.skip_geoopt and importlib.util.find_spec("geoopt") is None:
        out.say("geoopt is not installed: its RiemannianAdam is left out")
    elif not args.skip_geoopt:
        names.append("geoopt RiemannianAdam")
    base = "AdamW (fused)" if device.type == "cuda" else "AdamW (foreach)"
    rate = bmm_rate(shapes[0], device, args.repeats)
    out.say(f"batched products (bmm) of one bank: {rate / 1e9:.1f} GFLOP/s")
    seconds, memory, ratios = {}, {}, {}
    for layout in LAYOUTS:
        out.say(f" {layout} frames:")
        for name in names if layout == "contiguous" else ["StiefelAdam", base]:
            opt, params = make_optimizer(name, shapes, device, layout)
            repeats = args.geoopt_repeats if name.startswith("geoopt") else args.repeats
            key = f"{name}, {layout}"
            seconds[key] = time_steps(opt, device, repeats, warmup=1 if name.startswith("geoopt") else 2)
            if name == "StiefelAdam":
                flops = step_flops(opt)
            frame_bytes = sum(p.numel() * p.element_size() for p in params)
            memory[key] = state_bytes(opt) / frame_bytes
            out.say(f"  {name:24s} {1e3 * seconds[key]:9.1f} ms/step   state {memory[key]:.3f}x the frames")
            del opt, params
        stiefel, peer = seconds[f"StiefelAdam, {layout}"], seconds[f"{base}, {layout}"]
        floor = flops / rate + peer
        out.say(
            f"  floor: products {flops / 1e9:.2f} GFLOP at the bmm rate ({1e3 * flops / rate:.1f} ms) "
            f"+ AdamW's memory passes ({1e3 * peer:.1f} ms) = {1e3 * floor:.1f} ms"
        )
        ratios[f"StiefelAdam / {base}, {layout}"] = stiefel / peer
        ratios[f"StiefelAdam / its floor, {layout}"] = stiefel / floor
    if "geoopt RiemannianAdam, contiguous" in seconds:
        ratios["geoopt / StiefelAdam, contiguous"] = (
            seconds["geoopt RiemannianAdam, contiguous"] / seconds["StiefelAdam, contiguous"]
        )
    for key, value in ratios.items():
        out.say(f"ratio {key}: {value:.2f}")
    out.say(
        f"state StiefelAdam: {memory['StiefelAdam, contiguous']:.4f}x frames; AdamW: "
        f"{memory[base + ', contiguous']:.2f}x"
    )
    out.say(f"target: StiefelAdam <= 2.5x {base} in both layouts")
    out.save(
        str(device)
        + (
            f" ({torch.cuda.get_device_name(device)})"
            if device.type == "cuda"
            else f", {torch.get_num_threads()} threads"
        )
    )
    return {"seconds": seconds, "ratios": ratios, "state": memory}


if __name__ == "__main__":
    main()
