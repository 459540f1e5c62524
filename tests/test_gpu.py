"""CUDA paths: every public operation of stiefel_core on the GPU agrees with the CPU.

Run with ``pytest -m gpu`` on a machine with a GPU (``make device-check`` does); elsewhere these
are skipped with a reason. ``STIEFEL_TEST_DEVICE=cpu`` rehearses them on the CPU (the device
check's dry run): their code runs, so it cannot rot, but no CUDA claim is tested there.
"""

import contextlib
import dataclasses
import io
import os

import pytest
import torch
from torch import nn

from stiefel_book.experiments import get_config, grokking
from stiefel_book.tasks.grokking import run as run_grokking
from stiefel_core.attention import SelfAttention
from stiefel_core.combined import configure_optimizer
from stiefel_core.frames import FrameParameter, is_frame
from stiefel_core.manifold import orthonormality_error, orthonormalize, project_tangent, random_frame, retract_polar
from stiefel_core.optim import StiefelAdam, reference_update

pytestmark = pytest.mark.gpu
DEVICE = torch.device(os.environ.get("STIEFEL_TEST_DEVICE", "cuda"))
TOLERANCE = {torch.float64: 1e-12, torch.float32: 1e-5, torch.bfloat16: 5e-2}
# The batched step after 6 steps against the float64 reference: float64 agrees to rounding;
# float32 to its rounding grown over 6 steps of 768 x 64 frames (5e-7 on the CPU), except the
# per-entry moment's: its first steps are sign-like (m / sqrt(v) per entry), so a projected
# entry near 0 whose float32 rounding flips its sign moves by up to lr (2e-4 on the CPU).
REFERENCE_TOLERANCE = {torch.float64: 1e-10, torch.float32: 1e-5}
PER_ENTRY_FLOAT32_TOLERANCE = 1e-3
STEP_OPTIONS = {
    "full rule": {},
    "fixed step": {"step_rule": "fixed"},
    "per-entry moment": {"second_moment": "entry"},
    "euclidean projector": {"projector": "euclidean"},
    "no trust region": {"trust_radius": None},
}


@pytest.fixture(params=[torch.float64, torch.float32, torch.bfloat16], ids=str)
def dtype(request):
    return request.param


def pair(dtype, *batch, d=96, r=16):
    W = random_frame(d, r, *batch, generator=torch.Generator().manual_seed(0), dtype=dtype)
    G = torch.randn(W.shape, generator=torch.Generator().manual_seed(1)).to(dtype)
    return W, G


def test_manifold_operations_agree_with_the_cpu(dtype):
    W, G = pair(dtype, 8)
    tol = TOLERANCE[dtype]
    xi = project_tangent(W, G) * 0.01
    for fn in (
        lambda W, G: project_tangent(W, G),
        lambda W, G: retract_polar(W, 0.01 * project_tangent(W, G), step_bound=0.5),
    ):
        cpu, gpu = fn(W, G), fn(W.to(DEVICE), G.to(DEVICE)).cpu()
        assert (cpu.float() - gpu.float()).abs().max() <= 10 * tol
    assert orthonormality_error(retract_polar(W.to(DEVICE), xi.to(DEVICE), step_bound=0.5)).max() <= tol
    assert orthonormality_error(orthonormalize(W.to(DEVICE) + 0.1)).max() <= tol
    assert random_frame(32, 4, 3, device=DEVICE, dtype=dtype).device.type == DEVICE.type


def test_stiefel_adam_steps_agree_with_the_cpu(dtype):
    W, _ = pair(dtype, 12)
    runs = []
    for device in ("cpu", DEVICE):
        p = FrameParameter(W.clone().to(device))
        opt = StiefelAdam([p], lr=1e-2)
        g = torch.Generator().manual_seed(2)
        for _ in range(10):
            p.grad = torch.randn(W.shape, generator=g).to(dtype).to(device)
            opt.step()
        runs.append(p.detach().cpu())
    assert (runs[0].double() - runs[1].double()).abs().max() <= 100 * TOLERANCE[dtype]
    assert orthonormality_error(runs[1]).max() <= 10 * TOLERANCE[dtype]


@pytest.mark.parametrize("options", STEP_OPTIONS.values(), ids=STEP_OPTIONS.keys())
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=str)
def test_batched_step_on_the_device_equals_the_float64_reference(options, dtype):
    """Six GPT-2-small frames (768 x 64) stepped as one bank on the device, in float64 and in
    float32, against :func:`reference_update` applied frame by frame in float64 on the CPU."""
    W0, _ = pair(torch.float64, 6, d=768, r=64)
    g = torch.Generator().manual_seed(3)
    p = FrameParameter(W0.to(DEVICE, dtype))
    opt = StiefelAdam([p], lr=1e-2, **options)
    hp = opt.param_groups[0]
    W, m = W0.clone(), torch.zeros_like(W0)
    v = torch.zeros_like(W0) if options.get("second_moment") == "entry" else torch.zeros(6, dtype=torch.float64)
    for t in range(1, 7):
        G = torch.randn(W0.shape, generator=g, dtype=torch.float64)
        p.grad = G.to(DEVICE, dtype)
        opt.step()
        W, m, v = (torch.stack(x) for x in zip(*(reference_update(W[i], G[i], m[i], v[i], t, hp) for i in range(6))))
    per_entry_float32 = dtype == torch.float32 and options.get("second_moment") == "entry"
    tolerance = PER_ENTRY_FLOAT32_TOLERANCE if per_entry_float32 else REFERENCE_TOLERANCE[dtype]
    assert (p.detach().cpu().double() - W).abs().max() <= tolerance


def test_tf32_does_not_reach_the_retraction():
    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = True
    try:
        W, G = pair(torch.float32, 64, d=768, r=64)
        p = FrameParameter(W.to(DEVICE))
        opt = StiefelAdam([p], lr=1e-3)
        for _ in range(20):
            p.grad = G.to(DEVICE)
            opt.step()
        assert orthonormality_error(p.detach()).max() <= 1e-5
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved


def attention_model(d_model=32, n_ctx=6, n_classes=3, dtype=torch.float32):
    torch.manual_seed(0)
    model = nn.Sequential(SelfAttention(d_model, 4, causal=True), nn.Flatten(), nn.Linear(d_model * n_ctx, n_classes))
    return model.to(DEVICE, dtype)


def train(model, opt, x, y, steps, autocast=None):
    """``steps`` steps on one batch, each (forward, backward and step) inside an ``autocast``
    block (a dtype) when given; the losses. One block a step: autocast caches its casts of the
    weights until the outermost block exits, so a block around the whole loop would train on
    stale copies (torch's documented behaviour)."""
    losses = []
    for _ in range(steps):
        with torch.autocast(DEVICE.type, dtype=autocast) if autocast else contextlib.nullcontext():
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        losses.append(loss.item())
    return losses


def test_attention_model_trains_on_the_gpu():
    model = attention_model()
    x, y = torch.randn(16, 6, 32, device=DEVICE), torch.randint(0, 3, (16,), device=DEVICE)
    losses = train(model, configure_optimizer(model, lr=1e-2), x, y, 50)
    assert losses[-1] < 0.5 * losses[0]


@pytest.mark.parametrize("autocast", [None, torch.bfloat16], ids=["float32", "bfloat16 autocast"])
def test_frames_stay_orthonormal_when_trained_under_autocast(autocast):
    """float32 frames of a model whose forward, and whose optimizer step too (the harsher case),
    run inside an autocast block: the retraction computes outside it, at float32's precision."""
    model = attention_model(d_model=64, n_ctx=8, n_classes=5)
    g = torch.Generator().manual_seed(4)
    x, y = torch.randn(32, 8, 64, generator=g).to(DEVICE), torch.randint(0, 5, (32,), generator=g).to(DEVICE)
    losses = train(model, configure_optimizer(model, lr=1e-2), x, y, 100, autocast)
    frames = [p for p in model.parameters() if is_frame(p)]
    assert frames and all(p.dtype == torch.float32 for p in frames)
    assert max(orthonormality_error(p.detach()).max().item() for p in frames) <= 1e-5
    assert losses[-1] < 0.5 * losses[0]


def test_configure_optimizer_on_the_device_agrees_with_the_cpu_and_resumes_there():
    """The combined optimizer (frames to StiefelAdam, the rest to AdamW with decay) in float64:
    the device's steps are the CPU's, its state lives on the device, and a checkpoint saved
    there resumes on the CPU with the same next steps."""
    g = torch.Generator().manual_seed(5)
    x, y = torch.randn(16, 6, 32, generator=g, dtype=torch.float64), torch.randint(0, 3, (16,), generator=g)
    models = [attention_model(dtype=torch.float64).cpu(), attention_model(dtype=torch.float64)]
    opts = [configure_optimizer(m, lr=1e-2, weight_decay=0.1) for m in models]
    train(models[0], opts[0], x, y, 10)
    train(models[1], opts[1], x.to(DEVICE), y.to(DEVICE), 10)
    for a, b in zip(models[0].parameters(), models[1].parameters()):
        assert b.device.type == DEVICE.type and torch.allclose(a, b.cpu(), atol=1e-10)
    moments = [t for s in opts[1].state.values() for t in s.values() if torch.is_tensor(t) and t.dim() > 0]
    assert moments and all(t.device.type == DEVICE.type for t in moments)

    buffer = io.BytesIO()
    torch.save({"model": models[1].state_dict(), "opt": opts[1].state_dict()}, buffer)
    buffer.seek(0)
    saved = torch.load(buffer, map_location="cpu", weights_only=True)
    resumed = attention_model(dtype=torch.float64).cpu()
    resumed.load_state_dict(saved["model"])
    resumed_opt = configure_optimizer(resumed, lr=1e-2, weight_decay=0.1)
    resumed_opt.load_state_dict(saved["opt"])
    train(models[0], opts[0], x, y, 5)
    train(resumed, resumed_opt, x, y, 5)
    for a, b in zip(models[0].parameters(), resumed.parameters()):
        assert torch.allclose(a, b, atol=1e-10)


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="DDP with NCCL needs two or more GPUs")
def test_ddp_with_nccl_keeps_ranks_identical_and_equal_to_one_process(tmp_path):
    from test_distributed import check_ddp_ranks

    check_ddp_ranks(tmp_path, "nccl")


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="FSDP2 with NCCL needs two or more GPUs")
def test_fsdp_and_ddp_with_nccl_train_frames_as_one_process(tmp_path):
    """tests/test_fsdp.py's two ranks on two GPUs: DDP and FSDP2 against one CPU process, float64."""
    from test_fsdp import data, full_params, make_model, run_ranks, train

    from stiefel_core.combined import configure_optimizer

    model = make_model()
    losses = train(model, configure_optimizer(model, lr=1e-2), data())
    params = full_params(model)
    for rank in run_ranks(tmp_path, "nccl"):
        assert rank["fsdp_inner"][0] == "StiefelAdam" and rank["nan"] == "raised" and rank["nan_unchanged"]
        for how in ("ddp", "fsdp"):
            rank_losses, rank_params = rank[how]
            assert rank_losses == pytest.approx(losses, rel=1e-9), how
            for name, p in params.items():
                torch.testing.assert_close(rank_params[name], p, rtol=1e-9, atol=1e-9, msg=f"{how}: {name}")


def test_a_short_grokking_run_on_the_gpu():
    config = dataclasses.replace(get_config("grokking", "ci"), epochs=50, log_every=25)
    for arm in grokking.ARMS:
        out = run_grokking(config, arm, 0, DEVICE, progress=False)
        assert out["final"]["epoch"] == 50 and out["final"]["train_acc"] > 0
