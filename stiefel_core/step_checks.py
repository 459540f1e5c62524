"""Checks before an optimizer step touches anything: finite gradients, frames still on the
manifold; their errors name the parameter and say how to fix it. ``StiefelAdam`` and
``CombinedOptimizer`` run :func:`check_step` first. A leaf: it imports no optimizer (an optimizer
whose parameters are frames says so by ``holds_frames = True``). Chapter: use on your model."""

from __future__ import annotations

import torch
from torch import Tensor
from torch.optim import Optimizer

from .frames import frame_norm_deviation
from .manifold import orthonormality_error

__all__ = [
    "NonFiniteGradientError",
    "FrameOffManifoldError",
    "check_step",
    "ORTHONORMALITY_TOLERANCE",
    "orthonormality_tolerance",
]

ORTHONORMALITY_TOLERANCE = 1e-4


class NonFiniteGradientError(FloatingPointError):
    """A gradient holds inf or nan; nothing was updated."""


class FrameOffManifoldError(ValueError):
    """A frame left the Stiefel manifold after the optimizer was built; nothing was updated."""


def _param_name(group: dict, index: int, p: Tensor, group_index: int) -> str:
    names = group.get("param_names")
    if names:
        return f"'{names[index]}'"
    return f"param_groups[{group_index}]['params'][{index}] of shape {tuple(p.shape)}"


def orthonormality_tolerance(p: Tensor) -> float:
    """The largest ``‖WᵀW - I‖_F`` of a frame accepted as on the manifold: 1e-4, or what the
    parameter's dtype can hold (bfloat16 keeps 8 bits, so ``eps · r``)."""
    return max(ORTHONORMALITY_TOLERANCE, torch.finfo(p.dtype).eps * p.shape[-1])


def _drift_tolerance(p: Tensor) -> float:
    """How far ``‖W‖²_F`` of a frame may stray from ``r``: any frame accepted at construction
    (``‖WᵀW - I‖_F`` within tolerance, so ``|tr(WᵀW) - r| <= √r`` times it) passes, with room."""
    return 4 * p.shape[-1] ** 0.5 * orthonormality_tolerance(p)


@torch.no_grad()
def check_step(*optimizers: Optimizer) -> None:
    """Check, before any parameter changes, that the next ``step()`` of ``optimizers`` is safe:
    every gradient is finite, and every frame of an optimizer that holds frames (``holds_frames``:
    :class:`~stiefel_core.optim.StiefelAdam`) still has ``‖W‖²_F = r``
    (to rounding), which a frame rescaled, re-initialised or perturbed after the optimizer was
    built does not. One host synchronisation for all of them, so a combined step is never
    partial. Raises :class:`FrameOffManifoldError` or :class:`NonFiniteGradientError`, naming the
    parameter (frame or not)."""
    entries, probes = [], []
    for opt in optimizers:
        stiefel = getattr(opt, "holds_frames", False)
        for group_index, group in enumerate(opt.param_groups):
            for i, p in enumerate(group["params"]):
                if p.grad is None:
                    continue
                device = probes[0].device if probes else p.grad.device
                entries.append((opt, group, group_index, i, p, stiefel))
                probes.append(p.grad.sum(dtype=torch.float32).to(device))  # inf or nan propagate
                if stiefel and p.numel():
                    ok = frame_norm_deviation(p) <= _drift_tolerance(p)  # false for nan, too
                    probes.append(torch.where(ok, 0.0, float("nan")).to(device))
    if not probes or bool(torch.isfinite(torch.stack(probes)).all()):
        return
    culprits, half = [], False
    for opt, group, group_index, i, p, stiefel in entries:  # the slow path, only on failure
        owner, name = type(opt).__name__, _param_name(group, i, p, group_index)
        if stiefel and p.numel() and not frame_norm_deviation(p) <= _drift_tolerance(p):
            error = orthonormality_error(p.detach()).max().item()
            raise FrameOffManifoldError(
                f"{owner}: frame {name} has left the Stiefel manifold since the optimizer was built "
                f"(max ‖WᵀW - I‖_F = {error:.3g}): something wrote to it outside the optimizer "
                "(model.apply(init), scaling, noise, loading other weights). No parameter or optimizer "
                "state was changed. Put it back with `with torch.no_grad(): p.copy_("
                "stiefel_core.manifold.orthonormalize(p))`, or build the optimizer with "
                "check_finite=False to let the retraction re-project it."
            )
        if not bool(torch.isfinite(p.grad).all()):
            culprits.append(f"{'frame' if stiefel else 'parameter'} {name}")
            half = half or torch.float16 in (p.dtype, p.grad.dtype)
    which = f"gradient of {culprits[0]} holds" if len(culprits) == 1 else f"gradients of {', '.join(culprits)} hold"
    hint = "; in float16 the backward pass overflows easily: use torch.amp.GradScaler, or bfloat16" if half else ""
    raise NonFiniteGradientError(
        f"{' + '.join(dict.fromkeys(type(o).__name__ for o in optimizers))}: the {which} inf or nan; no "
        "parameter or optimizer state was changed. Lower the learning rate, check the loss for "
        f"overflow, or clip gradients upstream{hint}."
    )
