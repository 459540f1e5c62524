"""What the optimizers of frames (``StiefelAdam``, ``SphereAdam``, ``CayleyAdam``) share: Adam's
hyperparameters checked into a param group's defaults, the closure, their parameters checked and
named, each parameter's Adam state, the trust region's share, and banks (every frame of some
tensors as one ``(F, d, r)`` batch, so that one kernel steps them all)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import torch
from torch import Tensor
from torch.optim import Optimizer

from .manifold import check_frame_shape, compute_dtype
from .sharded import local
from .step_checks import _param_name, check_loaded_state

__all__ = [
    "FrameOptimizer",
    "adam_defaults",
    "evaluate_closure",
    "new_parameters",
    "adam_states",
    "trust_region_fraction",
    "n_frames",
    "bank_view",
    "bank",
    "bank_scalars",
    "unbank",
]


def adam_defaults(lr: float, betas: tuple[float, float], eps: float, weight_decay: float, **options) -> dict:
    """A param group's defaults, as torch's Adam builds them: ``lr``, ``betas``, ``eps``,
    ``weight_decay``, then the optimizer's own ``options``. Refuses what torch's Adam refuses (a
    negative lr, eps or weight decay, a beta outside [0, 1)) and, among the options, a
    ``trust_radius`` that is not positive (``None``: no cap)."""
    trust_radius = options.get("trust_radius")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    for i, beta in enumerate(betas):
        if not 0.0 <= beta < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {beta}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")
    if trust_radius is not None and not trust_radius > 0.0:
        raise ValueError(f"Invalid trust_radius: {trust_radius} (use a positive number, or None for no cap)")
    return dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, **options)


def evaluate_closure(closure: Callable[[], Tensor] | None) -> Tensor | None:
    """The loss from ``closure`` (evaluated with gradients on, as torch's optimizers do), or None."""
    if closure is None:
        return None
    with torch.enable_grad():
        return closure()


def new_parameters(optimizer: Optimizer, kind: str) -> Iterator[tuple[str, Tensor]]:
    """``(name, parameter)`` of the param group just added to ``optimizer`` (``kind``'s), each
    checked to be a floating-point ``(..., d, r)`` tensor; the name is the one errors give."""
    group_index = len(optimizer.param_groups) - 1
    group = optimizer.param_groups[group_index]
    for i, p in enumerate(group["params"]):
        name = _param_name(group, i, p, group_index)
        if not p.is_floating_point():
            raise ValueError(f"{kind}: parameter {name} has dtype {p.dtype}; frames must be floating point.")
        check_frame_shape(p.shape, f"{kind} parameter {name}")
        yield name, p


def adam_states(optimizer: Optimizer, kind: str) -> Iterator[tuple[dict, Tensor, dict]]:
    """``(group, parameter, state)`` for every parameter with a gradient, its state started on its
    first step: ``step`` (a CPU scalar), ``exp_avg`` (as the parameter) and ``exp_avg_sq`` (one
    scalar per frame, in the compute dtype)."""
    for group in optimizer.param_groups:
        for p in group["params"]:
            if p.grad is None:
                continue
            if p.grad.is_sparse:
                raise RuntimeError(f"{kind} does not support sparse gradients")
            state = optimizer.state[p]
            if not state:
                state["step"] = torch.zeros((), dtype=torch.float32)
                state["exp_avg"] = torch.zeros_like(p, memory_format=torch.contiguous_format)
                state["exp_avg_sq"] = torch.zeros(p.shape[:-2], dtype=compute_dtype(p.dtype), device=p.device)
            yield group, p, state


class FrameOptimizer(Optimizer):
    """An optimizer of frames: ``load_state_dict`` puts ``exp_avg_sq``, ``step`` and
    ``trust_capped`` back as saved (torch casts every floating state tensor to its parameter's
    dtype), so a resumed run is bit-identical to an uninterrupted one, for low-precision frames too.
    It first checks what it loads (:func:`~stiefel_core.step_checks.check_loaded_state`: finite,
    of the right shapes, usable hyperparameters), and loads nothing when the check fails."""

    riemannian = True  # it keeps its parameters on their manifold: not a Euclidean step of a frame

    def state_shapes(self, p: Tensor, group: dict) -> dict[str, tuple[int, ...]]:
        """The shapes of ``p``'s state tensors, as :func:`adam_states` makes them (one second
        moment per frame), which ``load_state_dict`` checks before loading."""
        shape = tuple(local(p).shape)
        return {"step": (), "exp_avg": shape, "exp_avg_sq": shape[:-2], "trust_capped": shape[:-2]}

    def load_state_dict(self, state_dict: dict) -> None:
        check_loaded_state(self, state_dict)
        super().load_state_dict(state_dict)
        saved_ids = [i for g in state_dict["param_groups"] for i in g["params"]]
        params = [p for g in self.param_groups for p in g["params"]]
        for saved_id, p in zip(saved_ids, params):
            saved = state_dict["state"].get(saved_id, {})
            for key in ("exp_avg_sq", "step", "trust_capped"):
                if key in saved:
                    self.state[p][key] = saved[key].to(device=p.device, copy=True)


@torch.no_grad()
def trust_region_fraction(optimizer: Optimizer) -> float | None:
    """The share of frame-steps so far whose step the trust region capped, over every frame of
    every group (each state's ``trust_capped`` counts them); ``None`` before the first step. One
    host synchronisation: call it when logging, not every step."""
    capped = taken = 0.0
    for group in optimizer.param_groups:
        for p in group["params"]:
            state = optimizer.state.get(p)
            if state and "trust_capped" in state:
                capped += float(state["trust_capped"].sum())
                taken += float(state["step"]) * n_frames(local(p))
    return capped / taken if taken else None


def n_frames(p: Tensor) -> int:
    """How many ``(d, r)`` frames ``p`` holds."""
    return p.numel() // (p.shape[-1] * p.shape[-2]) if p.numel() else 0


def bank_view(x: Tensor, d: int, r: int) -> Tensor | None:
    """``x`` as a ``(F, d, r)`` batch sharing its memory, whatever each matrix's strides, or
    ``None`` when its leading dimensions cannot be merged without a copy."""
    try:
        return x.view(-1, d, r)
    except RuntimeError:
        return None


def bank(tensors: list[Tensor], d: int, r: int) -> Tensor:
    """A ``(F, d, r)`` view of one tensor (no copy, any matrix layout), or a concatenated copy."""
    if len(tensors) == 1:
        view = bank_view(tensors[0], d, r)
        if view is not None:
            return view
    return torch.cat([x.reshape(-1, d, r) for x in tensors])


def bank_scalars(tensors: list[Tensor]) -> Tensor:
    """One flat ``(F,)`` view of one tensor of per-frame scalars, or a concatenated copy."""
    if len(tensors) == 1:
        try:
            return tensors[0].view(-1)
        except RuntimeError:
            pass
    return torch.cat([x.reshape(-1) for x in tensors])


def unbank(batch: Tensor, targets: list[Tensor]) -> None:
    """Copy a bank's rows back into the tensors it was made from, unless it is a view of them."""
    if len(targets) == 1 and batch.data_ptr() == targets[0].data_ptr():  # a view (see bank_view)
        return
    offset = 0
    flat = batch.reshape(-1)
    for x in targets:
        n = x.numel()
        x.copy_(flat[offset : offset + n].view_as(x))
        offset += n
