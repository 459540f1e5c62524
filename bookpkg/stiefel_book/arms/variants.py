"""The arms of the experiments. The ablation's: the full Stiefel rule, and variants that each
change one of its components with ``StiefelAdam``'s own switches (so a variant differs from the
full rule in exactly one thing). The mechanism's controls: arms that decide *why* the rule wins
where it does. Shared by the CIFAR-10 and the grokking experiments."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch loads with the optimizer that needs it: the arms' names stay light for the findings
    import torch
    from torch import nn

__all__ = [
    "VARIANTS",
    "ABLATION_ARMS",
    "COMPONENTS",
    "CONTROLS",
    "CONTROL_ARMS",
    "euclidean_optimizer",
]

VARIANTS: dict[str, dict] = {  # arm -> the switches it changes
    "stiefel": {},
    "fixed_step": {"step_rule": "fixed"},  # ξ = -lr m̂: degree one in the gradient
    "no_projector": {"projector": "euclidean"},  # Euclidean step, then re-orthonormalisation
    "per_entry": {"second_moment": "entry"},  # Adam's per-entry v: breaks O(d)-equivariance
    "no_trust_region": {"trust_radius": None},  # no cap on ‖ξ‖_F
}
ABLATION_ARMS = ("baseline", *VARIANTS)  # baseline: AdamW on plain W_Q, W_K
COMPONENTS = {  # the variant that removes each component of the full rule
    "scale-free step": "fixed_step",
    "tangent projector": "no_projector",
    "per-frame second moment": "per_entry",
    "trust region": "no_trust_region",
}


CONTROLS = {  # arm -> what it tests
    # frames at their orthonormal initialisation, never updated (requires_grad=False): what
    # training W_Q, W_K is worth at all (the headroom any rule for them can have)
    "frozen": "frames fixed at initialisation",
    # the AdamW baseline with weight decay 0 on W_Q, W_K only, as usual elsewhere: if it matches
    # the Stiefel rule, the rule wins by keeping decay off W_Q, W_K, not by its geometry
    "no_decay_qk": "AdamW, no weight decay on W_Q, W_K",
    # the fixed step, its frame lr calibrated (calibration.matched_lr) so that its median
    # per-step ‖ΔW‖_F over the first 5 % of training equals the scale-free rule's: whether the
    # scale-free step wins by its size alone
    "fixed_step_matched": "fixed step at the scale-free rule's step size",
}
CONTROL_ARMS = tuple(CONTROLS)


def euclidean_optimizer(
    model: nn.Module,
    *,
    lr: float,
    qk_lr: float,
    weight_decay: float,
    betas: tuple[float, float],
    decay_qk: bool = True,
    eps: float = 1e-8,
    qk: list[str] | None = None,
    no_decay: list[str] = (),
) -> torch.optim.AdamW:
    """AdamW for a Euclidean arm with W_Q, W_K at their own ``qk_lr`` (decayed by ``weight_decay``
    unless ``decay_qk`` is false), every other parameter at ``lr``: the baseline's W_Q, W_K lr as
    a knob of its own, as every frame-training arm has. ``qk``: W_Q, W_K's parameter names (default:
    those named so); ``no_decay``: others that AdamW does not decay, in a group of their own."""
    import torch

    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    qk = set(qk if qk is not None else (n for n, _ in named if n.rpartition(".")[2] in ("W_Q", "W_K")))
    if not qk:
        raise ValueError("euclidean_optimizer: the model has no trainable W_Q, W_K parameters")
    rest = [{"params": [p for n, p in named if n not in qk and n not in no_decay]}]
    if no_decay:
        rest.append({"params": [p for n, p in named if n in no_decay], "weight_decay": 0.0})
    mine = [p for n, p in named if n in qk]
    return torch.optim.AdamW(
        [*rest, {"params": mine, "lr": qk_lr, "weight_decay": weight_decay if decay_qk else 0.0}],
        lr=lr,
        betas=betas,
        eps=eps,
        weight_decay=weight_decay,
        foreach=True,
    )
