"""Metrics logged by the experiments: weight norms and the geometry of W_Q, W_K over time."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

__all__ = ["weight_norms", "principal_angles", "bilinear_change", "frame_geometry", "trust_region_metrics"]


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


def bilinear_change(W_Q: Tensor, W_K: Tensor, W_Q0: Tensor, W_K0: Tensor) -> Tensor:
    """Per head, ``‖W_Q W_Kᵀ − (W_Q W_Kᵀ)_0‖_F / ‖(W_Q W_Kᵀ)_0‖_F``: how far the attention's
    bilinear form moved. Unlike principal angles it sees rotations inside a head's subspace
    (``W → W R``), which leave the subspace alone and change the scores. Banks ``(H, d, r)``."""
    M, M0 = W_Q.double() @ W_K.double().mT, W_Q0.double() @ W_K0.double().mT  # (H, d, d)
    return torch.linalg.matrix_norm(M - M0) / torch.linalg.matrix_norm(M0).clamp_min(1e-300)  # (H,)


@torch.no_grad()
def frame_geometry(current: dict[str, Tensor], before: dict[str, Tensor], initial: dict[str, Tensor]) -> dict[str, float]:
    """For each named bank of projections: the last step's displacement ``‖ΔW‖_F`` and the mean
    and largest principal angle (degrees) between each head's subspace now and at the start; for
    each pair of banks ``<prefix>W_Q``, ``<prefix>W_K``, the mean and largest over heads of
    :func:`bilinear_change` (``qk_change_mean/<prefix>``, ``qk_change_max/<prefix>``; the prefix without its dot,
    ``attn`` when empty)."""
    out = {}
    for name in current:
        if name.endswith("W_Q") and name[:-3] + "W_K" in current:
            prefix = name[:-3]
            change = bilinear_change(current[name].detach(), current[prefix + "W_K"].detach(), initial[name], initial[prefix + "W_K"])
            key = prefix.rstrip(".") or "attn"
            out[f"qk_change_mean/{key}"] = change.mean().item()
            out[f"qk_change_max/{key}"] = change.max().item()
    for name, W in current.items():
        W = W.detach()
        angles = torch.rad2deg(principal_angles(initial[name], W))  # (H, r)
        out[f"step/{name}"] = (W - before[name]).norm().item()
        out[f"angle_mean/{name}"] = angles.mean().item()
        out[f"angle_max/{name}"] = angles.max().item()
    return out


def trust_region_metrics(optimizer) -> dict[str, float]:
    """``trust_capped``: the share of frame-steps so far that the trust region capped, for an
    optimizer that is (or combines) a ``StiefelAdam``; nothing for one that trains no frames."""
    from ..optim import StiefelAdam

    inner = getattr(optimizer, "optimizers", [optimizer])
    shares = [opt.trust_region_fraction() for opt in inner if isinstance(opt, StiefelAdam)]
    return {"trust_capped": shares[0]} if shares and shares[0] is not None else {}
