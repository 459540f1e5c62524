"""The Stiefel rule's relatives as arms (chapter "Among its relatives"): W_Q, W_K trained by an
optimizer or parametrization from a maintained library, every other parameter by AdamW as in
every arm.

- ``muon``, ``muon_no_decay``: ``torch.optim.Muon`` on each head's plain ``(d_model, d_head)``
  W_Q, W_K (Muon takes 2-D matrices only). It orthogonalises the *update* (Newton-Schulz on the
  momentum), not the weights. ``adjust_lr_fn="match_rms_adamw"``: Moonshot's scaling, with which
  "Muon can directly reuse the learning rate and weight decay tuned for AdamW" (torch docs);
  ``momentum=0.95``, Nesterov, 5 Newton-Schulz steps (its defaults). ``muon`` decays W_Q, W_K
  with the task's λ (decoupled, as AdamW), ``muon_no_decay`` does not.
- ``geoopt_radam``: ``geoopt.optim.RiemannianAdam`` on ``geoopt.ManifoldParameter`` banks on
  ``geoopt.Stiefel()`` (its default: the canonical metric, a Cayley retraction carrying the
  momentum along; its second moment is one number per frame, the Riemannian ‖g‖², a sum over
  the frame's entries); geoopt's defaults otherwise (no weight decay, no ``stabilize``).
- ``orthogonal_param``: ``torch.nn.utils.parametrizations.orthogonal`` on each bank (a batch of
  per-head matrices; torch's default map for a tall matrix, Householder, with trivialization),
  its unconstrained coordinates trained by AdamW without weight decay, as frames get none: the
  W it produces is orthonormal whatever decay would do to the coordinates.

``per_entry`` (the Stiefel rule with Adam's per-entry second moment) is a variant of
:mod:`.variants` and needs nothing here. Every arm is built from the Euclidean model made under
the run's seed, so all start from the same W_Q, W_K (orthonormal frames) and the same rest.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.nn.utils import parametrize

__all__ = [
    "FOREIGN_ARMS",
    "PARAMETRIZED",
    "RELATIVES",
    "prepare_projections",
    "relative_optimizer",
    "projection_names",
    "without_parametrized_steps",
]

RELATIVES = {  # arm -> what it trains W_Q, W_K with
    "muon": "torch.optim.Muon, weight decay λ on W_Q, W_K",
    "muon_no_decay": "torch.optim.Muon, no weight decay on W_Q, W_K",
    "geoopt_radam": "geoopt RiemannianAdam on geoopt.Stiefel",
    "per_entry": "StiefelAdam with Adam's per-entry second moment",
    "orthogonal_param": "AdamW through torch's orthogonal parametrization",
}
FOREIGN_ARMS = ("muon", "muon_no_decay", "geoopt_radam", "orthogonal_param")  # W_Q, W_K not trained by StiefelAdam
PROJECTIONS = ("W_Q", "W_K")
PARAMETRIZED = ("muon", "muon_no_decay", "orthogonal_param")  # W_Q, W_K computed by a torch parametrization


class HeadMatrices(nn.Module):
    """A parametrization that stores a bank ``(H, d, r)`` as H separate ``(d, r)`` parameters
    (``original0`` ...), so that an optimizer of 2-D matrices (Muon) sees one matrix per head."""

    def forward(self, *heads: Tensor) -> Tensor:
        return torch.stack(heads)

    def right_inverse(self, W: Tensor) -> tuple[Tensor, ...]:
        return tuple(h.clone() for h in W.unbind(0))


def _check(arm: str) -> None:
    if arm not in FOREIGN_ARMS:
        raise ValueError(f"{arm!r} is not a relative trained outside StiefelAdam; choose one of {FOREIGN_ARMS}")


def prepare_projections(attn: nn.Module, arm: str) -> None:
    """Turn a Euclidean attention's ``W_Q``, ``W_K`` banks into what ``arm`` trains, in place,
    keeping their values (to float32 rounding for ``orthogonal_param``)."""
    _check(arm)
    if getattr(attn, "stiefel", False):
        raise ValueError(f"{arm!r} starts from plain W_Q, W_K: build the attention with stiefel=False")
    for name in PROJECTIONS:
        if arm in ("muon", "muon_no_decay"):
            parametrize.register_parametrization(attn, name, HeadMatrices())
        elif arm == "orthogonal_param":
            torch.nn.utils.parametrizations.orthogonal(attn, name)
        else:
            import geoopt

            W = attn._parameters.pop(name).detach().clone()
            setattr(attn, name, geoopt.ManifoldParameter(W, manifold=geoopt.Stiefel()))


def projection_names(model: nn.Module) -> list[str]:
    """Names of the trainable parameters behind every attention's W_Q, W_K (heads, coordinates or
    manifold banks), as ``named_parameters`` spells them."""

    def behind(name: str) -> bool:
        return name.rpartition(".")[2] in PROJECTIONS or any(f"parametrizations.{w}." in name for w in PROJECTIONS)

    return [name for name, p in model.named_parameters() if p.requires_grad and behind(name)]


def relative_optimizer(
    model: nn.Module,
    arm: str,
    *,
    lr: float,
    qk_lr: float,
    weight_decay: float,
    betas: tuple[float, float],
    eps: float = 1e-8,
) -> torch.optim.Optimizer:
    """AdamW (``lr``, decoupled ``weight_decay``) on everything but W_Q, W_K, and ``arm``'s
    optimizer at ``qk_lr`` on them, behind one :class:`~stiefel_core.combined.CombinedOptimizer`."""
    from stiefel_core.combined import CombinedOptimizer

    _check(arm)
    qk = set(projection_names(model))
    if not qk:
        raise ValueError(f"{arm!r}: the model has no prepared W_Q, W_K; call prepare_projections(attn, {arm!r}) first")
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    rest = [(n, p) for n, p in named if n not in qk]
    mine = [(n, p) for n, p in named if n in qk]
    adamw = torch.optim.AdamW([{"params": rest}], lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
    if arm in ("muon", "muon_no_decay"):
        inner = torch.optim.Muon(
            mine, lr=qk_lr, weight_decay=weight_decay if arm == "muon" else 0.0, adjust_lr_fn="match_rms_adamw"
        )
    elif arm == "geoopt_radam":
        import geoopt

        inner = geoopt.optim.RiemannianAdam([p for _, p in mine], lr=qk_lr, betas=betas, eps=eps)
    else:
        inner = torch.optim.AdamW([{"params": mine}], lr=qk_lr, betas=betas, eps=eps, weight_decay=0.0)
    return CombinedOptimizer(adamw, inner)


def without_parametrized_steps(arm: str, outcome: dict) -> dict:
    """``outcome`` without its per-step displacement sums where ``arm`` computes W_Q, W_K through a
    parametrization: :func:`cifar10.train` sums the displacements of the tensors it was handed at the
    start, and a parametrization computes W_Q, W_K anew at every access, so those sums are not its steps."""
    if arm in PARAMETRIZED:
        for record in outcome["history"]:
            for key in [k for k in record if k.startswith("step/")]:
                del record[key]
        outcome["final"] = {k: v for k, v in outcome["final"].items() if not k.startswith("step/")}
    return outcome
