"""Metrics logged by the experiments: weight norms and the geometry of W_Q, W_K over time."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

__all__ = ["weight_norms", "principal_angles", "frame_geometry"]


def weight_norms(model: nn.Module) -> dict[str, float]:
    """``norm/<name>``: the Frobenius norm of every parameter, and ``norm/total``."""
    norms = {f"norm/{name}": p.detach().norm().item() for name, p in model.named_parameters()}
    norms["norm/total"] = math.sqrt(sum(v * v for v in norms.values()))
    return norms


def principal_angles(A: Tensor, B: Tensor) -> Tensor:
    """Principal angles (radians, ascending) between the column spaces of ``A`` and ``B``,
    batched over leading dimensions; the columns need not be orthonormal."""
    Qa, Qb = torch.linalg.qr(A.double())[0], torch.linalg.qr(B.double())[0]
    cosines = torch.linalg.svdvals(Qa.mT @ Qb).clamp(-1.0, 1.0)  # (..., r) descending
    return torch.arccos(cosines)


@torch.no_grad()
def frame_geometry(current: dict[str, Tensor], before: dict[str, Tensor], initial: dict[str, Tensor]) -> dict[str, float]:
    """For each named bank of projections: the last step's displacement ``‖ΔW‖_F`` and the mean
    and largest principal angle (degrees) between each head's subspace now and at the start."""
    out = {}
    for name, W in current.items():
        W = W.detach()
        angles = torch.rad2deg(principal_angles(initial[name], W))  # (H, r)
        out[f"step/{name}"] = (W - before[name]).norm().item()
        out[f"angle_mean/{name}"] = angles.mean().item()
        out[f"angle_max/{name}"] = angles.max().item()
    return out
