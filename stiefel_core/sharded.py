"""Frames under ``torch.distributed``: what ``StiefelAdam`` needs of a parameter that FSDP2
(``torch.distributed.fsdp.fully_shard``) turned into a sharded ``DTensor``.

FSDP2 shards every parameter on its dim 0 and keeps nothing of its class, so a
:class:`~stiefel_core.frames.FrameParameter` comes back a plain ``nn.Parameter(DTensor)``:
:func:`~stiefel_core.combined.split_frames` finds it again by the name its module declared. A
bank of frames ``(n_frames, d, r)`` sharded on dim 0 leaves each rank whole frames, so each rank
steps its own frames with no communication (its Adam state is local, of its shard's shape); a
placement that cuts a frame's ``(d, r)`` matrix is refused with the remedy. The checks before a
step reach one verdict on every rank (:func:`agree`), so every rank raises or none.
DistributedDataParallel needs none of this: its parameters are whole on every rank.
Chapter: use_on_your_model.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["is_sharded", "local", "check_whole_frames", "agree"]


def _dtensor_class():
    if not torch.distributed.is_available():
        return None
    from torch.distributed.tensor import DTensor

    return DTensor


def is_sharded(t: Tensor | None) -> bool:
    """True for a ``DTensor`` (an FSDP2 parameter, its gradient)."""
    cls = _dtensor_class()
    return cls is not None and isinstance(t, cls)


def local(t: Tensor) -> Tensor:
    """This rank's part of ``t`` (sharing its memory), or ``t`` itself when it is not sharded."""
    return t.to_local() if is_sharded(t) else t


def check_whole_frames(p: Tensor, name: str) -> None:
    """Refuse a sharded parameter whose placement cuts its trailing ``(d, r)`` matrices: a polar
    step needs each frame whole on one rank."""
    if not is_sharded(p):
        return
    for placement in p.placements:
        if placement.is_partial() or (placement.is_shard() and placement.dim % p.ndim >= p.ndim - 2):
            raise ValueError(
                f"StiefelAdam: frame {name} of shape {tuple(p.shape)} is sharded as {placement} across ranks, "
                "which cuts its (d, r) matrix; a polar step needs every frame whole on one rank. Hold frames as a "
                "bank (n_frames, d, r), which fully_shard shards on dim 0 (stiefelize and SelfAttention do), or "
                "leave the parameter out of sharding: fully_shard(module, ignored_params={p}), or use "
                "DistributedDataParallel."
            )


def agree(bad: Tensor, params: list[Tensor]) -> Tensor:
    """``bad`` (booleans: the problems this rank found) made the same on every rank that shares a
    sharded parameter in ``params``: each true on all when true on one. No communication
    when no parameter is sharded (under DDP every rank sees the same frames and gradients)."""
    meshes = {id(p.device_mesh): p.device_mesh for p in params if is_sharded(p)}
    if not meshes:
        return bad
    flag = bad.to(torch.int32).reshape(-1)
    for mesh in meshes.values():
        for dim in range(mesh.ndim):
            torch.distributed.all_reduce(flag, torch.distributed.ReduceOp.MAX, group=mesh.get_group(dim))
    return flag.reshape(bad.shape) > 0
