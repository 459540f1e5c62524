"""Metrics logged by the experiments: weight norms and the geometry of W_Q, W_K over time."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

__all__ = [
    "weight_norms",
    "principal_angles",
    "bilinear_change",
    "geometry_since_start",
    "frame_geometry",
    "Displacement",
    "trust_region_metrics",
]


def weight_norms(model: nn.Module) -> dict[str, float]:
    """``norm/<name>``: the Frobenius norm of every parameter, and ``norm/total``.
    Chapters: grokking, cifar10_patches, regimes."""
    norms = {f"norm/{name}": p.detach().norm().item() for name, p in model.named_parameters()}
    norms["norm/total"] = math.sqrt(sum(v * v for v in norms.values()))
    return norms


def principal_angles(A: Tensor, B: Tensor) -> Tensor:
    """Principal angles (radians, ascending) between the column spaces of ``A`` and ``B``,
    batched over leading dimensions; the columns need not be orthonormal.
    Chapters: grokking, cifar10_patches, regimes."""
    Qa, Qb = torch.linalg.qr(A.double())[0], torch.linalg.qr(B.double())[0]
    cosines = torch.linalg.svdvals(Qa.mT @ Qb).clamp(-1.0, 1.0)  # (..., r) descending
    return torch.arccos(cosines)


def bilinear_change(W_Q: Tensor, W_K: Tensor, W_Q0: Tensor, W_K0: Tensor) -> Tensor:
    """Per head, ``‖W_Q W_Kᵀ − (W_Q W_Kᵀ)_0‖_F / ‖(W_Q W_Kᵀ)_0‖_F``: how far the attention's
    bilinear form moved. Unlike principal angles it sees rotations inside a head's subspace
    (``W → W R``), which leave the subspace alone and change the scores. Banks ``(H, d, r)``.
    Chapters: grokking, cifar10_patches, regimes."""
    M, M0 = W_Q.double() @ W_K.double().mT, W_Q0.double() @ W_K0.double().mT  # (H, d, d)
    return torch.linalg.matrix_norm(M - M0) / torch.linalg.matrix_norm(M0).clamp_min(1e-300)  # (H,)


@torch.no_grad()
def geometry_since_start(current: dict[str, Tensor], initial: dict[str, Tensor]) -> dict[str, float]:
    """For each named bank of projections, the mean and largest principal angle (degrees) between
    each head's subspace now and at the start (``angle_mean/<name>``, ``angle_max/<name>``); for
    each pair of banks ``<prefix>W_Q``, ``<prefix>W_K``, the mean and largest over heads of
    :func:`bilinear_change` (``qk_change_mean/<prefix>``, ``qk_change_max/<prefix>``; the prefix
    without its dot, ``attn`` when empty). Chapters: grokking, CIFAR-10 patches, regimes."""
    out = {}
    for name in current:
        if name.endswith("W_Q") and name[:-3] + "W_K" in current:
            prefix = name[:-3]
            change = bilinear_change(
                current[name].detach(), current[prefix + "W_K"].detach(), initial[name], initial[prefix + "W_K"]
            )
            key = prefix.rstrip(".") or "attn"
            out[f"qk_change_mean/{key}"] = change.mean().item()
            out[f"qk_change_max/{key}"] = change.max().item()
    for name, W in current.items():
        angles = torch.rad2deg(principal_angles(initial[name], W.detach()))  # (H, r)
        out[f"angle_mean/{name}"] = angles.mean().item()
        out[f"angle_max/{name}"] = angles.max().item()
    return out


@torch.no_grad()
def frame_geometry(
    current: dict[str, Tensor], before: dict[str, Tensor], initial: dict[str, Tensor]
) -> dict[str, float]:
    """:func:`geometry_since_start`, and for each named bank the last step's displacement
    ``‖ΔW‖_F`` from ``before`` (``step/<name>``).
    Chapters: grokking, cifar10_patches, regimes."""
    out = geometry_since_start(current, initial)
    for name, W in current.items():
        out[f"step/{name}"] = (W.detach() - before[name]).norm().item()
    return out


class Displacement:
    """Per-step displacements ``‖ΔW‖_F`` of named tensors, summed on their device between reads:
    :meth:`before_step` and :meth:`after_step` around ``optimizer.step()`` cost a few multi-tensor
    kernels and no host synchronisation and no allocation that lasts; :meth:`mean` reads the sums
    once (one synchronisation) and starts over. Chapters: CIFAR-10 patches (its movement ratio)."""

    def __init__(self, tensors: dict[str, Tensor]):
        self.names = list(tensors)
        self.tensors = [W.detach() for W in tensors.values()]
        self.before = [W.clone() for W in self.tensors]
        self.sums = torch.zeros(len(self.tensors), dtype=torch.float64, device=self.tensors[0].device)
        self.steps = 0

    @torch.no_grad()
    def before_step(self) -> None:
        torch._foreach_copy_(self.before, self.tensors)

    @torch.no_grad()
    def after_step(self) -> None:
        torch._foreach_sub_(self.before, self.tensors)  # before - after: the same norm as ΔW
        self.sums += torch.stack(torch._foreach_norm(self.before)).double()
        self.steps += 1

    def mean(self) -> dict[str, float]:
        """The mean displacement per step of each tensor since the last read."""
        means = (self.sums / max(self.steps, 1)).tolist()
        self.sums.zero_()
        self.steps = 0
        return dict(zip(self.names, means))


def trust_region_metrics(optimizer) -> dict[str, float]:
    """``trust_capped``: the share of frame-steps so far that the trust region capped, for an
    optimizer that is (or combines) one with a trust region (``StiefelAdam``, ``SphereAdam``);
    nothing for one without. Chapters: grokking, cifar10_patches, regimes."""
    inner = getattr(optimizer, "optimizers", [optimizer])
    shares = [opt.trust_region_fraction() for opt in inner if hasattr(opt, "trust_region_fraction")]
    return {"trust_capped": shares[0]} if shares and shares[0] is not None else {}
