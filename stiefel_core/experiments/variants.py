"""The arms of the ablation: the full Stiefel rule, and variants that each change one of its
components with ``StiefelAdam``'s own switches (so a variant differs from the full rule in
exactly one thing). Shared by the CIFAR-10 and the grokking experiments."""

from __future__ import annotations

__all__ = ["VARIANTS", "ABLATION_ARMS", "COMPONENTS", "frame_options"]

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


def frame_options(arm: str, trust_radius: float | None) -> dict:
    """``StiefelAdam`` keyword arguments of a frame-training ``arm`` (``trust_radius`` is the
    experiment's radius, which ``no_trust_region`` overrides)."""
    if arm not in VARIANTS:
        raise ValueError(f"{arm!r} trains no frames with StiefelAdam; the variants are {tuple(VARIANTS)}")
    return {"trust_radius": trust_radius, **VARIANTS[arm]}
