"""StiefelAdam under FSDP2 (``fully_shard``) and DDP on 2 gloo ranks (CPU processes), step for
step against one process on the global batch, in float64 (issue 50, item 1).

FSDP2 shards every parameter on dim 0 and keeps nothing of its class: a bank of frames
``(n_frames, d, r)`` (a ``SelfAttention``'s W_Q, W_K; a stiefelized ``nn.MultiheadAttention``)
leaves each rank whole frames, found again by the names their modules declared. Before this,
the frames fell to AdamW and left the manifold (‖WᵀW - I‖ = 0.45 after 10 steps). A frame
whose matrix a placement would cut is refused; a NaN in one rank's shard of a gradient makes
every rank raise, so no rank steps alone. Every wait is bounded (see tests/test_distributed.py).
"""

import datetime
import os
import socket
import time

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn

from stiefel_core.attention import SelfAttention
from stiefel_core.combined import configure_optimizer
from stiefel_core.convert import stiefelize
from stiefel_core.frames import FrameParameter, declare_frames
from stiefel_core.manifold import orthonormality_error, random_frame
from stiefel_core.step_checks import NonFiniteGradientError

STEPS, GLOBAL_BATCH, D, T = 4, 8, 16, 4
TIMEOUT, DEADLINE = 60, 120  # seconds: one collective; both ranks


class Model(nn.Module):
    """A library attention block, a stiefelized nn.MultiheadAttention, and a plain head."""

    def __init__(self):
        super().__init__()
        self.block = SelfAttention(D, 2)
        self.mha = nn.MultiheadAttention(D, 2, bias=False, batch_first=True)  # a K bias's gradient is 0: Adam
        # would amplify its rounding into lr-sized steps that differ between runs
        self.head = nn.Linear(D * T, 3)

    def forward(self, x):
        x = x + self.block(x)
        return self.head((x + self.mha(x, x, x, need_weights=False)[0]).flatten(1))


def make_model():
    torch.manual_seed(0)
    model = Model().double()
    stiefelize(model)
    return model


def data():
    g = torch.Generator().manual_seed(1)
    return [
        (
            torch.randn(GLOBAL_BATCH, T, D, generator=g, dtype=torch.float64),
            torch.randint(0, 3, (GLOBAL_BATCH,), generator=g),
        )
        for _ in range(STEPS)
    ]


def train(model, optimizer, batches, world=1):
    losses = []
    for x, y in batches:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        total = loss.detach().clone()
        if world > 1:
            dist.all_reduce(total)
        losses.append(total.item() / world)
    return losses


def full_params(model):
    return {
        n: (p.full_tensor() if hasattr(p, "full_tensor") else p).detach().cpu().clone()
        for n, p in model.named_parameters()
    }


class OneFrame(nn.Module):
    def __init__(self):
        super().__init__()
        self.W = FrameParameter(random_frame(D, 4, dtype=torch.float64))  # (d, r): dim 0 cuts the matrix
        declare_frames(self, "W")


def worker(rank, world, port, out, backend="gloo"):
    """One rank: DDP, then FSDP2, on ``backend`` (gloo: CPU processes; nccl: one GPU a rank,
    tests/test_gpu.py)."""
    from torch.distributed.fsdp import fully_shard
    from torch.nn.parallel import DistributedDataParallel

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), GLOO_SOCKET_IFNAME="lo")
    device = torch.device("cpu")
    if backend == "nccl":
        device = torch.device("cuda", rank)
        torch.cuda.set_device(device)
    dist.init_process_group(backend, rank=rank, world_size=world, timeout=datetime.timedelta(seconds=TIMEOUT))
    torch.set_num_threads(1)
    share = GLOBAL_BATCH // world
    batches = [
        (x[rank * share : (rank + 1) * share].to(device), y[rank * share : (rank + 1) * share].to(device))
        for x, y in data()
    ]
    result = {}

    ddp = DistributedDataParallel(make_model().to(device), device_ids=[rank] if backend == "nccl" else None)
    result["ddp"] = (train(ddp, configure_optimizer(ddp, lr=1e-2), batches, world), full_params(ddp.module))

    model = make_model().to(device)
    for module in (model.block, model.mha, model):
        fully_shard(module)
    optimizer = configure_optimizer(model, lr=1e-2)
    result["fsdp_inner"] = [type(o).__name__ for o in optimizer.optimizers]
    result["fsdp"] = (train(model, optimizer, batches, world), full_params(model))

    optimizer.zero_grad()  # a NaN in rank 1's shard only: both ranks raise, neither steps
    nn.functional.cross_entropy(model(batches[0][0]), batches[0][1]).backward()
    if rank == 1:
        model.block.W_Q.grad.to_local().view(-1)[0] = float("nan")
    before = full_params(model)
    try:
        optimizer.step()
        result["nan"] = "stepped"
    except NonFiniteGradientError:
        result["nan"] = "raised"
    result["nan_unchanged"] = all(torch.equal(before[n], p) for n, p in full_params(model).items())

    one = OneFrame().to(device)
    fully_shard(one)
    try:
        configure_optimizer(one)
        result["cut"] = "accepted"
    except ValueError as error:
        result["cut"] = str(error)
    torch.save(result, os.path.join(out, f"rank{rank}.pt"))
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_ranks(out, backend="gloo"):
    """Both ranks' results (``worker``), each wait bounded."""
    context = mp.start_processes(worker, args=(2, free_port(), str(out), backend), nprocs=2, join=False)
    start = time.monotonic()
    while not context.join(timeout=2):  # raises if a rank failed
        if time.monotonic() - start > DEADLINE:
            for process in context.processes:
                process.kill()
            pytest.fail(f"the two ranks did not finish within {DEADLINE} s")
    return [torch.load(out / f"rank{r}.pt", weights_only=False) for r in range(2)]


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    return run_ranks(tmp_path_factory.mktemp("fsdp"))


@pytest.fixture(scope="module")
def single():
    model = make_model()
    return train(model, configure_optimizer(model, lr=1e-2), data()), full_params(model)


pytestmark = pytest.mark.skipif(not dist.is_available(), reason="torch.distributed is not available")


@pytest.mark.parametrize("how", ["ddp", "fsdp"])
def test_two_ranks_train_as_one_process_step_for_step(ranks, single, how):
    losses, params = single
    for rank in ranks:
        rank_losses, rank_params = rank[how]
        assert rank_losses == pytest.approx(losses, rel=1e-12)
        assert rank_params.keys() == params.keys()
        for name in params:
            assert torch.allclose(rank_params[name], params[name], atol=1e-12), name


def test_fsdp_frames_stay_frames_and_go_to_stiefel_adam(ranks):
    assert ranks[0]["fsdp_inner"] == ["StiefelAdam", "AdamW"]
    frames = [p for n, p in ranks[0]["fsdp"][1].items() if n.endswith(("W_Q", "W_K", "original0", "original1"))]
    assert len(frames) == 4
    assert max(orthonormality_error(W).max().item() for W in frames) < 1e-12


def test_a_nan_in_one_ranks_shard_makes_every_rank_raise_and_none_step(ranks):
    assert [r["nan"] for r in ranks] == ["raised", "raised"]
    assert all(r["nan_unchanged"] for r in ranks)


def test_a_sharding_that_cuts_a_frame_is_refused_with_the_remedy(ranks):
    assert all("bank" in r["cut"] for r in ranks)
