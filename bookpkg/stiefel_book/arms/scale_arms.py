"""Arms that separate a frame's *scale* from its *orthonormality* (issue 28), each built from the
model made under the run's seed (so every arm starts from the same weights: W_Q, W_K orthonormal
frames), W_Q, W_K at their own lr (``qk_lr``), every other parameter trained by AdamW at the
task's lr with decoupled weight decay, as in every arm.

- ``qk_norm``: AdamW on plain W_Q, W_K (decayed, as the baseline's), with an RMSNorm of each head's
  q and k over d_head and a learned per-head logit scale (:class:`~stiefel_book.tempered.TemperedAttention`;
  its fixed base scale calibrated so that each head's initial scores have the baseline's root mean
  square over every input of the task). The scale of W_Q, W_K no longer reaches the scores: the
  logit scale is the only temperature, as in current large models.
- ``sphere``: each head's W_Q, W_K kept at Frobenius norm √r, a frame's, and trained by the Stiefel
  rule's scale-free step on that sphere (:class:`~stiefel_book.sphere.SphereAdam`): a frame's scale
  without its orthonormality.
- ``stiefel_temp``: the Stiefel rule's frames (StiefelAdam, as the ``stiefel`` arm) plus a learned
  per-head logit scale, initially 1: the initial scores are the ``stiefel`` arm's, exactly. The
  frames' fixed scale, with a temperature free to move.
- ``cayley_adam``: the nearest prior art, Cayley ADAM (Li, Li & Todorovic, ICLR 2020) on the same
  frames (:class:`~stiefel_book.cayley.CayleyAdam`, the task's betas): a scalar second moment, a
  capped step and an iterative Cayley retraction, no trust region.

The learned logit scales train at the task's lr without weight decay (decay would pull the
temperature to 0, a force no other arm puts on its temperature).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from stiefel_core.combined import CombinedOptimizer, configure_optimizer

from ..cayley import CayleyAdam
from ..sphere import SphereAdam
from ..tempered import TemperedAttention

__all__ = [
    "SCALE_ARMS",
    "SCALE_ARM_NAMES",
    "holds_frames",
    "prepare_attention",
    "prepare_patch_attention",
    "modular_inputs",
    "scale_optimizer",
]

SCALE_ARMS = {  # arm -> what it tests
    "qk_norm": "AdamW, RMSNorm on each head's q and k, a learned per-head logit scale",
    "sphere": "W_Q, W_K per head on the sphere ‖W‖_F = √r, the scale-free rule there",
    "stiefel_temp": "the Stiefel rule's frames and a learned per-head logit scale",
    "cayley_adam": "Cayley ADAM (Li, Li & Todorovic 2020) on the frames",
}
SCALE_ARM_NAMES = tuple(SCALE_ARMS)
PROJECTIONS = ("W_Q", "W_K")
LOGIT_SCALE = "logit_scale"


def _check(arm: str) -> None:
    if arm not in SCALE_ARMS:
        raise ValueError(f"{arm!r} is not an arm of scale against orthonormality; choose one of {SCALE_ARM_NAMES}")


def holds_frames(arm: str) -> bool:
    """Whether ``arm``'s W_Q, W_K are :class:`~stiefel_core.frames.FrameParameter` s (for StiefelAdam)."""
    _check(arm)
    return arm == "stiefel_temp"


def modular_inputs(model: nn.Module, p: int) -> Tensor:
    """The attention's inputs for every sequence ``[a, b, =]`` of a modular task of modulus ``p``
    (token ``p`` is "="), as :class:`~stiefel_book.models.ModularTransformer` builds them: ``(p², 3, d_model)``."""
    pairs = torch.cartesian_prod(torch.arange(p), torch.arange(p))  # (p², 2)
    tokens = torch.cat([pairs, torch.full((p * p, 1), p)], 1).to(model.embed.weight.device)
    table = model.pos[:3, None] + model.embed.weight  # (T, V, D)
    return table[torch.arange(3, device=tokens.device), tokens]


@torch.no_grad()
def prepare_attention(attn: nn.Module, arm: str, inputs: Tensor | None = None, *, last_only: bool = True) -> nn.Module:
    """The attention ``arm`` trains in place of ``attn`` (the same weights): a
    :class:`TemperedAttention` for ``qk_norm`` (its base scale calibrated on ``inputs``, the
    last query alone when ``last_only``) and ``stiefel_temp``; ``attn`` itself for the others."""
    _check(arm)
    if arm not in ("qk_norm", "stiefel_temp"):
        return attn
    if attn.stiefel != holds_frames(arm):
        raise ValueError(
            f"{arm!r} starts from {'frames' if holds_frames(arm) else 'plain W_Q, W_K'}: build the "
            f"attention with stiefel={holds_frames(arm)}"
        )
    tempered = TemperedAttention.from_attention(attn, qk_norm=arm == "qk_norm")
    if arm == "qk_norm":
        if inputs is None:
            raise ValueError("qk_norm: pass the inputs on which its initial scores match the plain attention's")
        tempered.calibrate_base_scale_(inputs, last_only=last_only)
    return tempered


@torch.no_grad()
def prepare_patch_attention(model: nn.Module, arm: str, images: Tensor) -> nn.Module:
    """``arm``'s attentions in place of every block's of a :class:`~stiefel_book.models.PatchTransformer`
    (the CIFAR-10 model), block by block: each calibrated on what reaches it from ``images`` ``(B, 3, H, W)``
    (its first LayerNorm's output, every query over every key) through the blocks already replaced. ``model``."""
    x = model.patch_embed(model.patches(images.to(model.pos.device)))  # (B, N, D)
    x = torch.cat([model.cls.expand(x.shape[0], -1, -1), x], dim=1) + model.pos  # (B, N + 1, D)
    for block in model.blocks:
        block.attn = prepare_attention(block.attn, arm, block.norm1(x), last_only=False)
        x = block(x)
    return model


def scale_optimizer(
    model: nn.Module,
    arm: str,
    *,
    lr: float,
    qk_lr: float,
    weight_decay: float,
    betas: tuple[float, float],
    trust_radius: float | None,
    eps: float = 1e-8,
) -> torch.optim.Optimizer:
    """``arm``'s optimizer: W_Q, W_K at ``qk_lr`` by the arm's rule, logit scales at ``lr``
    without decay, every other parameter by AdamW at ``lr`` with decoupled ``weight_decay``."""
    _check(arm)
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    leaf = {n: n.rpartition(".")[2] for n, _ in named}
    kind = {n: "qk" if leaf[n] in PROJECTIONS else "scale" if leaf[n] == LOGIT_SCALE else "rest" for n, _ in named}
    if "qk" not in kind.values():
        raise ValueError(f"{arm!r}: the model has no trainable W_Q, W_K parameters")
    if arm == "stiefel_temp":
        return configure_optimizer(
            model,
            lr=lr,
            weight_decay=weight_decay,
            betas=betas,
            eps=eps,
            frame_lr=qk_lr,
            no_decay=[n for n, k in kind.items() if k == "scale"],
            trust_radius=trust_radius,
        )
    qk, scales, rest = ([p for n, p in named if kind[n] == k] for k in ("qk", "scale", "rest"))
    groups = [{"params": rest}] + ([{"params": scales, "weight_decay": 0.0}] if scales else [])
    if arm == "qk_norm":
        groups.append({"params": qk, "lr": qk_lr})
        return torch.optim.AdamW(groups, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=True)
    adamw = torch.optim.AdamW(groups, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=True)
    if arm == "sphere":
        inner = SphereAdam(qk, lr=qk_lr, betas=betas, eps=eps, trust_radius=trust_radius)
    else:
        inner = CayleyAdam(qk, lr=qk_lr, betas=betas, eps=eps)
    return CombinedOptimizer(adamw, inner)
