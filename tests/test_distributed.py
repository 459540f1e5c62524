"""StiefelAdam under DistributedDataParallel (gloo, CPU): ranks stay identical and match one
process that sees the same global batch (NCCL on two GPUs: ``tests/test_gpu.py``, the same check).

Every wait is bounded: gloo talks over loopback only (``GLOO_SOCKET_IFNAME=lo``, not the address
the host name resolves to), the process group times out after ``TIMEOUT`` seconds, and the test
stops both ranks if they have not finished by ``DEADLINE``. Each rank records the stage it has
reached, so a stop names where the ranks hung. Once (a fresh clone's ``make test`` on 2 loaded
cores), two ranks hung past the deadline although the same test passes in 6 s alone: a stopped
pair is started again once, on a fresh port, and the test fails if the second pair hangs too.
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
from torch.nn.parallel import DistributedDataParallel

from stiefel_core.attention import SelfAttention
from stiefel_core.combined import configure_optimizer

STEPS, GLOBAL_BATCH = 6, 8
TIMEOUT, DEADLINE, ATTEMPTS = 60, 150, 2  # seconds: one collective, one pair of ranks; pairs started


def make_model():
    torch.manual_seed(0)
    return nn.Sequential(SelfAttention(16, 2), nn.Flatten(), nn.Linear(16 * 4, 3)).double()


def data():
    g = torch.Generator().manual_seed(1)
    return [
        (
            torch.randn(GLOBAL_BATCH, 4, 16, generator=g, dtype=torch.float64),
            torch.randint(0, 3, (GLOBAL_BATCH,), generator=g),
        )
        for _ in range(STEPS)
    ]


def train(model, optimizer, batches):
    for x, y in batches:
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
    return [p.detach().clone() for p in model.parameters()]


def worker(rank, world, port, out, backend="gloo"):
    def stage(name: str) -> None:  # where this rank has got to, for a failure message
        with open(os.path.join(out, f"stage{rank}"), "w") as f:
            f.write(name)

    stage("joining the process group")
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), GLOO_SOCKET_IFNAME="lo")
    device = torch.device("cuda", rank) if backend == "nccl" else torch.device("cpu")  # NCCL: a GPU a rank
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group(backend, rank=rank, world_size=world, timeout=datetime.timedelta(seconds=TIMEOUT))
    torch.set_num_threads(1)
    model = DistributedDataParallel(make_model().to(device), device_ids=[rank] if device.type == "cuda" else None)
    optimizer = configure_optimizer(model, lr=1e-2)
    share = GLOBAL_BATCH // world
    mine = slice(rank * share, (rank + 1) * share)
    batches = [(x[mine].to(device), y[mine].to(device)) for x, y in data()]
    stage("training")
    params = train(model, optimizer, batches)
    torch.save([p.cpu() for p in params], os.path.join(out, f"rank{rank}.pt"))
    stage("leaving the process group")
    dist.destroy_process_group()
    stage("done")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_ranks(out, backend: str) -> str | None:
    """Start two ranks on a fresh port and wait for them: ``None`` once both finish, else (both
    stopped at the deadline) the stage each had reached."""
    context = mp.start_processes(worker, args=(2, free_port(), str(out), backend), nprocs=2, join=False)
    start = time.monotonic()
    while not context.join(timeout=5):  # raises if a rank failed
        if time.monotonic() - start > DEADLINE:
            for process in context.processes:
                process.kill()
            stages = [
                (out / f"stage{r}").read_text() if (out / f"stage{r}").exists() else "not started" for r in (0, 1)
            ]
            return ", ".join(f"rank {r}: {s}" for r, s in enumerate(stages))
    return None


def check_ddp_ranks(tmp_path, backend="gloo"):
    """Two DDP ranks over ``backend`` (gloo: CPU processes; nccl: a GPU each): their parameters
    are bit-identical, and equal to one CPU process's on the global batch."""
    hung = []
    for attempt in range(ATTEMPTS):
        out = tmp_path / f"attempt{attempt}"
        out.mkdir()
        if (stuck := run_ranks(out, backend)) is None:
            break
        hung.append(stuck)
    else:
        pytest.fail(f"the two DDP ranks did not finish within {DEADLINE} s, {ATTEMPTS} times: {'; '.join(hung)}")
    ranks = [torch.load(out / f"rank{r}.pt", weights_only=True) for r in range(2)]
    single_model = make_model()
    single = train(single_model, configure_optimizer(single_model, lr=1e-2), data())
    for a, b, c in zip(*ranks, single):
        assert torch.equal(a, b)  # DDP keeps the ranks bit-identical
        assert torch.allclose(a, c, atol=1e-10)  # and equal to one process on the global batch


@pytest.mark.skipif(not dist.is_available(), reason="torch.distributed is not available")
def test_ddp_ranks_agree_with_each_other_and_with_one_process(tmp_path):
    check_ddp_ranks(tmp_path)
