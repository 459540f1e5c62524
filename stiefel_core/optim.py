"""``StiefelAdam``: Riemannian Adam with one scalar second moment per frame, a trust region and
a polar retraction; ``bank_update_``, its update of a bank of frames; ``reference_update``, the
same written plainly. The chain runs one way: ``manifold``, ``frames`` and ``step_checks`` below
this module, ``combined`` (a whole model's optimizer) above it."""

from __future__ import annotations

from collections import defaultdict
from typing import Callable, Iterable

import torch
from torch import Tensor

from .frame_steps import (
    FrameOptimizer,
    adam_defaults,
    bank,
    bank_scalars,
    bank_view,
    evaluate_closure,
    n_frames,
    new_parameters,
    trust_region_fraction,
    unbank,
)
from .manifold import (
    compute_dtype,
    full_precision_matmul,
    gram_spectrum,
    orthonormality_error,
    polar_factor,
    project_tangent,
    retract_polar,
    sym,
)
from .sharded import check_whole_frames, local
from .step_checks import (
    InvalidHyperparameterError,
    check_hyperparameters,
    check_step,
    group_problems,
    orthonormality_tolerance,
    watch_euclidean_steps,
)

__all__ = [
    "StiefelAdam",
    "bank_update_",
    "reference_update",
    "UPDATE_OPTIONS",
    "STEP_RULES",
    "SECOND_MOMENTS",
    "PROJECTORS",
    "CHOICES",
]

STEP_RULES = ("scale_free", "fixed")
SECOND_MOMENTS = ("frame", "entry")
PROJECTORS = ("tangent", "euclidean")
CHOICES = {"step_rule": STEP_RULES, "second_moment": SECOND_MOMENTS, "projector": PROJECTORS}  # the options' values
UPDATE_OPTIONS = (
    "lr",
    "betas",
    "eps",
    "trust_radius",
    "step_rule",
    "projector",
    "second_moment",
)  # bank_update_'s keywords
IN_PLACE_NUMEL = (
    2**18
)  # a parameter this large is stepped on its own, in place: copies would cost more than a kernel launch
REFUSED = {  # torch.optim's options that cannot mean anything here, and why
    "fused": "there is no fused kernel: the step is already batched, one bank of frames per kernel (foreach)",
    "capturable": "the step makes host decisions (buckets, Newton-Schulz counts) and keeps `step` on the CPU, "
    "so it cannot be captured in a CUDA graph",
    "differentiable": "the step runs under no_grad; differentiating through the polar retraction is not supported",
}


class StiefelAdam(FrameOptimizer):
    r"""Riemannian Adam on St(d, r) with one scalar second moment per frame.

    For every frame ``W`` (the trailing ``(d, r)`` matrices of each parameter) with Euclidean
    gradient ``G``, at step ``t``::

        g  = P_W(G) = G - W sym(WᵀG)                      Riemannian gradient
        m  ← β1 P_W(m) + (1 - β1) g  = P_W(β1 m + (1 - β1) G)   moment, transported by projection
        v  ← β2 v + (1 - β2) ‖g‖²_F / (d r)                one scalar per frame
        ξ  = -lr m̂ / (√v̂ + ε),  m̂ = m / (1 - β1^t),  v̂ = v / (1 - β2^t)
        ξ  ← ξ · min(1, Δ / ‖ξ‖_F)                         trust region of radius Δ
        W  ← (W + ξ)(I + ξᵀξ)^(-1/2)                        polar retraction

    Scaling the loss by any c > 0 scales ``m`` by c and ``√v`` by c, so (with ε = 0) ``ξ`` does
    not change: the step is scale free. Weight decay is accepted for API parity and does
    nothing: its Riemannian gradient ``P_W(λW)`` is identically zero on St(d, r).

    Args:
        params: frames of shape ``(..., d, r)`` on the manifold (error at most 1e-4), or param
            groups; named parameters (``model.named_parameters()``) give named errors.
        lr: per-entry step size, as in AdamW (``v`` is a mean square).
        betas: decay rates of the first and second moments.
        eps: added to ``√v̂``; 0 makes the step exactly scale free.
        weight_decay: accepted and ignored (Proposition 5).
        trust_radius: Δ, a cap on ``‖ξ‖_F`` per frame; ``None`` for no cap.
        step_rule: ``"scale_free"`` (above) or ``"fixed"``, ``ξ = -lr m̂``: degree one in the
            gradient (with ``betas[0] = 0`` exactly ``ξ = -lr g``).
        second_moment: ``"frame"`` (one scalar) or ``"entry"`` (Adam's per-entry ``v``; the
            preconditioned step is projected back to the tangent space). ``"entry"`` breaks
            O(d) equivariance.
        projector: ``"tangent"`` (above) or ``"euclidean"``: no projection of ``g`` or ``m``; the
            Euclidean step is re-orthonormalised by the same polar factor.
        check_finite: before touching anything, in one host synchronisation per step
            (:func:`check_step`), raise :class:`NonFiniteGradientError` when a gradient holds inf
            or nan, and :class:`FrameOffManifoldError` when a frame was changed off the manifold
            after the optimizer was built (``model.apply(init)``, scaling, noise, an AdamW given
            the frames: ``‖WᵀW - I‖`` is checked, not the norm). With
            ``check_finite=False`` such a frame is re-projected by the retraction instead: its
            step uses the Gram matrix's trace as the spectral bound, so it stays finite and lands
            near the manifold (each later step forms the Gram matrix again and finishes the job).
        maximize: ascend the objective instead of descending it, as torch's Adam.
        foreach: ``None`` or ``True`` (default: every frame of one shape, dtype and device in one
            bank, one kernel); ``False`` steps each parameter on its own (the same update, more
            kernels). ``fused``, ``capturable`` and ``differentiable`` are refused with the reason
            (they mean nothing here); ``False``/``None`` are accepted, as torch's defaults.

    Every step checks each group's hyperparameters first (:func:`check_hyperparameters`: lr,
    eps and weight decay finite and >= 0, betas in [0, 1), trust radius None or > 0, the options
    known), so a value a scheduler or a param group sets after construction raises
    :class:`InvalidHyperparameterError` before anything changes; ``load_state_dict`` checks the
    state it loads (finite, of the right shapes) before loading anything.

    **Gradient clipping** (``clip_grad_norm_``) does nothing to a frame's step: the scale-free
    step is invariant to the gradient's scale; only ``trust_radius`` caps ``‖ξ‖_F`` (it clips the
    other parameters' AdamW steps as usual). **Schedulers** drive every group's ``lr``; one given
    a single rate (``OneCycleLR(max_lr=x)``) sets the frames' groups to it too, overriding a
    separate frame lr: give it one rate per group (``max_lr=[frame_lr, lr]`` in
    ``optimizer.param_groups``' order). **Distributed**: under DistributedDataParallel nothing
    changes; under FSDP2 (``fully_shard``) each rank steps the whole frames of its shard of a bank
    ``(n_frames, d, r)`` (:mod:`stiefel_core.sharded`), and a placement that cuts a frame is refused.
    """

    holds_frames = True  # check_step checks this optimizer's parameters as frames
    hyperparameter_choices = CHOICES  # check_hyperparameters: the options' allowed values

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        trust_radius: float | None = 0.5,
        *,
        step_rule: str = "scale_free",
        second_moment: str = "frame",
        projector: str = "tangent",
        check_finite: bool = True,
        maximize: bool = False,
        foreach: bool | None = None,
        fused: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
    ):
        for option, value in (("fused", fused), ("capturable", capturable), ("differentiable", differentiable)):
            if value:
                raise RuntimeError(f"StiefelAdam does not support {option}={value!r}: {REFUSED[option]}.")
        if foreach not in (None, True, False) or maximize not in (True, False):
            raise ValueError(
                f"StiefelAdam: foreach must be None, True or False and maximize a bool, got {foreach!r}, {maximize!r}"
            )
        options = {"step_rule": step_rule, "second_moment": second_moment, "projector": projector}
        defaults = adam_defaults(lr, betas, eps, weight_decay, trust_radius=trust_radius, **options)
        for option, value in options.items():
            if value not in CHOICES[option]:
                raise ValueError(f"Invalid {option}: {value!r}; choose one of {CHOICES[option]}")
        super().__init__(params, {**defaults, "maximize": maximize, "foreach": foreach})
        self.check_finite = check_finite
        watch_euclidean_steps()  # an AdamW given these frames is then named by the off-manifold error

    def add_param_group(self, param_group: dict) -> None:
        super().add_param_group(param_group)
        problems = group_problems(self.param_groups[-1], CHOICES)
        if problems:
            del self.param_groups[-1]
            raise InvalidHyperparameterError(f"StiefelAdam: the param group holds {'; '.join(problems)}")
        for name, p in new_parameters(self, "StiefelAdam"):
            check_whole_frames(p, name)
            W = local(p.detach())
            error = orthonormality_error(W).max().item() if W.numel() else 0.0
            tolerance = orthonormality_tolerance(p)
            if not error <= tolerance:
                raise ValueError(
                    f"StiefelAdam: parameter {name} is not on the Stiefel manifold "
                    f"(max ‖WᵀW - I‖_F = {error:.3g} > {tolerance:g}). Orthonormalise it first: "
                    "`with torch.no_grad(): p.copy_(stiefel_core.manifold.orthonormalize(p))`."
                )

    def state_shapes(self, p: Tensor, group: dict) -> dict[str, tuple[int, ...]]:
        """The shapes of ``p``'s state tensors (of this rank's shard, for a sharded ``p``)."""
        shape = tuple(local(p).shape)
        batch = shape[:-2]
        v_shape = shape if group.get("second_moment", "frame") == "entry" else batch
        return {"step": (), "exp_avg": shape, "exp_avg_sq": v_shape, "trust_capped": batch}

    def _init_state(self, p: Tensor, group: dict) -> dict:
        state = self.state[p]
        W = local(p)  # a sharded frame's state is this rank's, of its shard's shape
        shapes = self.state_shapes(p, group)
        if not state:
            state["step"] = torch.zeros(
                (), dtype=torch.float32
            )  # on the CPU, as torch's Adam: bias corrections are host floats
            state["exp_avg"] = torch.zeros(W.shape, dtype=W.dtype, device=W.device)  # contiguous: a bank
            state["exp_avg_sq"] = torch.zeros(shapes["exp_avg_sq"], dtype=compute_dtype(W.dtype), device=W.device)
        if "trust_capped" not in state:  # also for a state saved before the counter existed
            state["trust_capped"] = torch.zeros(shapes["trust_capped"], dtype=torch.float32, device=W.device)
        return state

    def trust_region_fraction(self) -> float | None:
        """The share of frame-steps so far whose step the trust region capped (``‖ξ‖_F > Δ``),
        over every frame of every group; ``None`` before the first step. One host
        synchronisation: call it when logging, not every step."""
        return trust_region_fraction(self)

    @torch.compiler.disable  # host decisions (buckets, Newton-Schulz counts): compiled callers run it eagerly
    @torch.no_grad()
    def step(self, closure: Callable[[], Tensor] | None = None, *, checked: bool = False):
        """Perform one optimisation step; ``closure`` re-evaluates the model and returns the loss.

        With ``check_finite``, :func:`check_step` runs first, unless ``checked`` says the caller has
        taken the check over (``CombinedOptimizer`` runs it once over all its optimizers, under its
        own ``check_finite``).
        Under ``torch.compile`` the step runs eagerly (compile the model's forward and backward instead)."""
        loss = evaluate_closure(closure)
        check_hyperparameters(self)

        work = []  # (group, [params with grads])
        for group_index, group in enumerate(self.param_groups):
            params = [p for p in group["params"] if p.grad is not None]
            for p in params:
                if p.grad.is_sparse:
                    raise RuntimeError("StiefelAdam does not support sparse gradients")
            work.append((group_index, group, params))

        if self.check_finite and not checked:
            check_step(self)

        for _, group, params in work:
            buckets: dict[tuple, list[Tensor]] = defaultdict(list)
            for p in params:
                self._init_state(p, group)
                if local(p).numel():  # a shard may hold no frame
                    key = (p.shape[-2:], p.dtype, p.device) if group.get("foreach") is not False else (id(p),)
                    buckets[key].append(p)
            for bucket in buckets.values():
                self._step_bucket(bucket, group)
        return loss

    def _step_bucket(self, params: list[Tensor], group: dict) -> None:
        """Step every frame of ``params`` (same ``(d, r)``, dtype, device) in batched kernels.

        A large parameter whose frames can be viewed as one ``(F, d, r)`` batch without a copy
        (any layout of each matrix: row-major, or column-major as ``torch.linalg.qr`` returns it)
        is a bank already: it is stepped in place. The small ones are concatenated into one
        bank, stepped, and copied back.
        """
        d, r = params[0].shape[-2:]
        in_place = [p for p in params if local(p).numel() >= IN_PLACE_NUMEL and bank_view(local(p), d, r) is not None]
        small = [p for p in params if not any(p is q for q in in_place)]
        sign = -1.0 if group.get("maximize", False) else 1.0
        for chunk in [[p] for p in in_place] + ([small] if small else []):
            states = [self.state[p] for p in chunk]
            for s in states:
                s["step"] += 1
            tensors = [
                [local(p) for p in chunk],
                [local(p.grad) if sign > 0 else -local(p.grad) for p in chunk],
                [s["exp_avg"] for s in states],
                [s["exp_avg_sq"] for s in states],
            ]
            W, G, m = (bank(x, d, r) for x in tensors[:3])
            v = bank(tensors[3], d, r) if group["second_moment"] == "entry" else bank_scalars(tensors[3])
            counters = [s["trust_capped"] for s in states]
            capped = bank_scalars(counters)
            steps = {float(s["step"]) for s in states}
            if len(steps) == 1:
                t = steps.pop()
            else:  # parameters added to the group later have taken fewer steps
                t = torch.cat([torch.full((n_frames(p),), float(s["step"])) for s, p in zip(states, tensors[0])]).to(
                    W.device
                )
            bank_update_(W, G, m, v, t, **{k: group[k] for k in UPDATE_OPTIONS}, capped=capped)
            for batch, targets in ((W, tensors[0]), (m, tensors[2]), (v, tensors[3]), (capped, counters)):
                unbank(batch, targets)


def bank_update_(
    W: Tensor,
    G: Tensor,
    m: Tensor,
    v: Tensor,
    t: float | Tensor,
    *,
    lr: float,
    betas: tuple[float, float],
    eps: float,
    trust_radius: float | None,
    step_rule: str = "scale_free",
    projector: str = "tangent",
    second_moment: str = "frame",
    capped: Tensor | None = None,
) -> None:
    """The update of a bank (the primer and Propositions 1-5), in place on ``W``, ``m``, ``v``:
    ``W, G, m`` of shape ``(F, d, r)``; ``v`` of shape ``(F,)``, or ``(F, d, r)`` per entry; ``t``
    the step count (one number, or one per frame). The hyperparameters are keywords, as in
    torch's functional optimizers (:data:`UPDATE_OPTIONS`, the names of a param group's keys).
    ``capped`` (``(F,)``, optional) counts, per frame, the steps the trust region capped."""
    dt = compute_dtype(W.dtype)
    W_out, m_out = W, m
    if W.dtype != dt:  # low precision: compute on float32 copies, then round once
        W, m = W.to(dt), m.to(dt)
    G = G.to(dt)
    beta1, beta2 = betas
    F, d, r = W.shape
    tangent, per_entry = projector == "tangent", second_moment == "entry"
    if isinstance(t, Tensor):
        t = t.to(dt)
        bias1, bias2 = 1 - torch.pow(beta1, t), 1 - torch.pow(beta2, t)  # (F,)
    else:
        bias1 = torch.full((F,), 1 - beta1**t, dtype=dt, device=W.device)
        bias2 = torch.full((F,), 1 - beta2**t, dtype=dt, device=W.device)

    with full_precision_matmul(W.device):
        m.lerp_(G, 1 - beta1)  # β1 m + (1 - β1) G
        if tangent:
            S_G = sym(W.mT @ G)  # (F, r, r)
            m.baddbmm_(W, sym(W.mT @ m), alpha=-1)  # P_W(β1 m + (1 - β1) G): transported and updated
            if per_entry:
                g = torch.baddbmm(G, W, S_G, alpha=-1)  # (F, d, r)
                g_sq = g * g
            else:  # ‖P_W G‖² = ‖G‖² - ‖sym(WᵀG)‖² when WᵀW = I: no (d, r) product needed
                g_sq = (torch.linalg.matrix_norm(G).square_() - torch.linalg.matrix_norm(S_G).square_()).clamp_min_(0)
        else:
            g_sq = G * G if per_entry else torch.linalg.matrix_norm(G).square_()
        v.lerp_(g_sq if per_entry else g_sq / (d * r), 1 - beta2)

        direction, scale = m, lr / bias1  # ξ = -scale · direction
        if step_rule == "scale_free":
            if per_entry:
                denom = (v / bias2[:, None, None]).sqrt() + eps  # (F, d, r)
                direction = torch.where(denom > 0, m / denom, torch.zeros_like(m))
                if tangent:
                    direction = direction.baddbmm(W, sym(W.mT @ direction), alpha=-1)
            else:
                denom = (v / bias2).sqrt() + eps  # (F,)
                scale = torch.where(denom > 0, scale / denom, torch.zeros_like(denom))
        norm = scale * torch.linalg.matrix_norm(direction)  # (F,) ‖ξ‖_F
        if trust_radius is not None:
            if capped is not None:
                capped.add_(norm > trust_radius)  # (F,): this step was cut down to the radius
            cap = torch.clamp(trust_radius / norm.clamp_min(torch.finfo(dt).tiny), max=1.0)
            scale, norm = scale * cap, norm * cap
        Y = torch.addcmul(W, direction, -scale[:, None, None])  # W + ξ
        polar_factor(Y, spectrum=gram_spectrum(norm, trust_radius, tangent), out=W)
    if W is not W_out:
        W_out.copy_(W)
        m_out.copy_(m)


def reference_update(W: Tensor, G: Tensor, m: Tensor, v: Tensor, t: int, hp: dict) -> tuple[Tensor, Tensor, Tensor]:
    """The update of one frame ``W`` of shape ``(d, r)``, written plainly (slow, float64-friendly).

    Tests hold :meth:`StiefelAdam.step` equal to this applied to every frame in turn."""
    beta1, beta2 = hp["betas"]
    lr, eps, radius = hp["lr"], hp["eps"], hp["trust_radius"]
    d, r = W.shape
    tangent = hp["projector"] == "tangent"
    project = (lambda X: project_tangent(W, X)) if tangent else (lambda X: X)
    g = project(G)
    m = beta1 * project(m) + (1 - beta1) * g
    if hp["second_moment"] == "entry":
        v = beta2 * v + (1 - beta2) * g * g
    else:
        v = beta2 * v + (1 - beta2) * (g * g).sum() / (d * r)
    m_hat, v_hat = m / (1 - beta1**t), v / (1 - beta2**t)
    if hp["step_rule"] == "fixed":
        xi = -lr * m_hat
    else:
        denom = v_hat.sqrt() + eps
        xi = -lr * torch.where(denom > 0, m_hat / denom, torch.zeros_like(m_hat))
        if hp["second_moment"] == "entry":
            xi = project(xi)
    if radius is not None and torch.linalg.matrix_norm(xi) > radius:
        xi = xi * (radius / torch.linalg.matrix_norm(xi))
    return retract_polar(W, xi), m, v
