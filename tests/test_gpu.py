"""CUDA paths: every public operation of stiefel_core on the GPU agrees with the CPU.

Run with ``pytest -m gpu`` on a machine with a GPU; elsewhere these are skipped with a reason.
"""

import dataclasses

import pytest
import torch

from stiefel_core.attention import SelfAttention
from stiefel_core.experiments import get_config, grokking
from stiefel_core.manifold import orthonormality_error, orthonormalize, project_tangent, random_frame, retract_polar
from stiefel_core.optim import FrameParameter, StiefelAdam, configure_optimizer

pytestmark = pytest.mark.gpu
TOLERANCE = {torch.float64: 1e-12, torch.float32: 1e-5, torch.bfloat16: 5e-2}


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
    for fn in (lambda W, G: project_tangent(W, G), lambda W, G: retract_polar(W, 0.01 * project_tangent(W, G), step_bound=0.5)):
        cpu, gpu = fn(W, G), fn(W.cuda(), G.cuda()).cpu()
        assert (cpu.float() - gpu.float()).abs().max() <= 10 * tol
    assert orthonormality_error(retract_polar(W.cuda(), xi.cuda(), step_bound=0.5)).max() <= tol
    assert orthonormality_error(orthonormalize(W.cuda() + 0.1)).max() <= tol
    assert random_frame(32, 4, 3, device="cuda", dtype=dtype).device.type == "cuda"


def test_stiefel_adam_steps_agree_with_the_cpu(dtype):
    W, _ = pair(dtype, 12)
    runs = []
    for device in ("cpu", "cuda"):
        p = FrameParameter(W.clone().to(device))
        opt = StiefelAdam([p], lr=1e-2)
        g = torch.Generator().manual_seed(2)
        for _ in range(10):
            p.grad = torch.randn(W.shape, generator=g).to(dtype).to(device)
            opt.step()
        runs.append(p.detach().cpu().float())
    assert (runs[0] - runs[1]).abs().max() <= 100 * TOLERANCE[dtype]
    assert orthonormality_error(runs[1]).max() <= 10 * TOLERANCE[dtype]


def test_tf32_does_not_reach_the_retraction():
    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = True
    try:
        W, G = pair(torch.float32, 64, d=768, r=64)
        p = FrameParameter(W.cuda())
        opt = StiefelAdam([p], lr=1e-3)
        for _ in range(20):
            p.grad = G.cuda()
            opt.step()
        assert orthonormality_error(p.detach()).max() <= 1e-5
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved


def test_attention_model_trains_on_the_gpu():
    torch.manual_seed(0)
    model = torch.nn.Sequential(SelfAttention(32, 4, causal=True), torch.nn.Flatten(), torch.nn.Linear(32 * 6, 3)).cuda()
    x, y = torch.randn(16, 6, 32, device="cuda"), torch.randint(0, 3, (16,), device="cuda")
    opt = configure_optimizer(model, lr=1e-2)
    losses = []
    for _ in range(50):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]


def test_a_short_grokking_run_on_the_gpu():
    config = dataclasses.replace(get_config("grokking", "ci"), epochs=50, log_every=25)
    for arm in grokking.ARMS:
        out = grokking.run(config, arm, 0, torch.device("cuda"), progress=False)
        assert out["final"]["epoch"] == 50 and out["final"]["train_acc"] > 0
