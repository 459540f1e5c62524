"""``ManifoldMuon``: Muon's spectral-norm steepest step taken inside the Stiefel tangent space,
then a polar retraction (Bernstein, "Modular Manifolds", Thinking Machines 2025); ``dual_direction``,
its direction for a bank of frames. A sibling of ``optim`` (StiefelAdam) on the same banks of
frames, below ``combined``."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Callable, Iterable

import torch
from torch import Tensor

from .frame_steps import FrameOptimizer, bank, bank_view, evaluate_closure, new_parameters, unbank
from .manifold import compute_dtype, full_precision_matmul, orthonormality_error, polar_factor
from .step_checks import check_step, orthonormality_tolerance

__all__ = ["ManifoldMuon", "dual_direction", "check_hyperparameters"]

IN_PLACE_NUMEL = 2**18  # as StiefelAdam: a parameter this large is its own bank, stepped in place
SOLVE_DTYPE = torch.float64  # the r x r dual solve: cheap beside the (d, r) products, and exact


def check_hyperparameters(group: dict) -> None:
    """Refuse, before anything changes, what torch's Muon refuses (a negative or non-finite lr,
    a momentum outside [0, 1), a negative weight decay) and a dual step count or tolerance that
    cannot work. ``ManifoldMuon`` checks its defaults, then every group at each step."""
    lr, momentum, decay = group["lr"], group["momentum"], group["weight_decay"]
    if not 0.0 <= lr < math.inf:
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 <= momentum < 1.0:
        raise ValueError(f"Invalid momentum value: {momentum}")
    if not 0.0 <= decay < math.inf:
        raise ValueError(f"Invalid weight_decay value: {decay}")
    steps = group["dual_steps"]
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise ValueError(f"Invalid dual_steps: {steps!r} (a count >= 0)")
    if not 0.0 < group["dual_tol"] < math.inf:
        raise ValueError(f"Invalid dual_tol: {group['dual_tol']}")


def _skew(X: Tensor) -> Tensor:
    return 0.5 * (X - X.mT)


def _sym(X: Tensor) -> Tensor:
    return 0.5 * (X + X.mT)


def _inverse_sqrt(H: Tensor, eps: float) -> tuple[Tensor, Tensor, Tensor]:
    """``(V, q, Q)``: ``H = V diag(h) Vᵀ`` and ``Q = V diag(q) Vᵀ`` with ``q = h^(-1/2)``, a
    pseudo-inverse: eigenvalues below ``r · eps · max(h)`` (rank-deficient momenta) get ``q = 0``;
    ``eps``: the precision ``H``'s inputs were computed in (not the solve's)."""
    h, V = torch.linalg.eigh(H)
    floor = h.amax(-1, keepdim=True).clamp_min(torch.finfo(h.dtype).tiny) * (H.shape[-1] * eps)
    q = torch.where(h > floor, h.clamp_min(torch.finfo(h.dtype).tiny).rsqrt(), torch.zeros_like(h))
    return V, q, (V * q[..., None, :]) @ V.mT


def _feasible(Y: Tensor, Q: Tensor, K: Tensor, P: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """``(<M, A>, Y, Q)`` for ``A = W Y + C Q`` with ``Y`` skew (tangent), capped at ``‖A‖₂ <= 1``:
    ``AᵀA = YᵀY + Q P Q`` and ``<M, A> = <K, Y> + tr(P Q)`` (``WᵀC = 0``), all ``r x r``."""
    norm = torch.linalg.eigvalsh(Y.mT @ Y + Q @ P @ Q)[..., -1].clamp_min(0).sqrt()  # ‖A‖₂ (F,)
    cap = (1.0 / norm.clamp_min(1.0))[:, None, None]
    value = ((K * Y).sum((-2, -1)) + (P * Q).sum((-2, -1))) * cap[:, 0, 0]
    return value, Y * cap, Q * cap


def _keep_better(best: tuple | None, new: tuple) -> tuple:
    """Per frame, the feasible direction of larger alignment: the returned step is never worse
    than an earlier dual iterate's (the iteration need not be monotone on ill-conditioned momenta)."""
    if best is None:
        return new
    better = new[0] > best[0]
    return tuple(torch.where(better.view(-1, *[1] * (n.dim() - 1)), n, b) for n, b in zip(new, best))


@torch.no_grad()
def dual_direction(W: Tensor, M: Tensor, *, max_steps: int = 8, tol: float = 1e-4) -> tuple[Tensor, int]:
    r"""The tangent direction of unit spectral norm best aligned with ``M``, for a bank of frames
    ``W`` (``(F, d, r)``, compute dtype): ``argmax <M, A>`` subject to ``‖A‖₂ <= 1`` and
    ``WᵀA + AᵀW = 0``; returns ``(A, dual steps taken)``.

    The dual (Bernstein 2025) minimises ``‖M - W Λ‖_*`` over symmetric ``Λ``; its minimiser gives
    ``A = msign(M - W Λ)``. Write ``M = W B + C`` with ``WᵀC = 0`` and ``X = B - Λ``: then
    ``(M - WΛ)ᵀ(M - WΛ) = XᵀX + CᵀC =: H`` and ``msign(M - WΛ) = (W X + C) H^(-1/2)``, so the whole
    solve is on ``r x r`` matrices: ``X = skew(B) + S`` with ``S`` symmetric, optimal when
    ``WᵀA = X H^(-1/2)`` is skew. Each dual step freezes ``H`` and solves that condition for ``S``
    exactly, a Lyapunov equation diagonal in ``H``'s eigenbasis (``q = h^(-1/2)``)::

        S'_ij = K'_ij (q_i - q_j) / (q_i + q_j),   K' = Vᵀ skew(B) V,   S = V S' Vᵀ

    (a Newton-like step: it ignores only ``H``'s dependence on ``S``, small when the momentum's
    part normal to the frame dominates, as for d >> r). It starts from ``S = 0``, i.e. ``msign``
    of the tangent projection ``P_W(M)``, and stops after ``max_steps`` steps or when every
    frame's residual ``‖sym(WᵀA)‖_F / r`` is at most ``tol`` (one host synchronisation a step).
    Every iterate's ``A`` is projected onto the tangent space exactly and capped at spectral norm
    1, so it is feasible; each frame keeps its best-aligned iterate (on ill-conditioned momenta, or
    d < 2r, the steps converge slowly and need not improve monotonically). The ``r x r`` solve
    runs in float64 (eigh, O(r³) per frame, cheap beside the ``(d, r)`` products): an exact
    ``msign``, whatever the momentum's conditioning.
    """
    F, d, r = W.shape
    B = W.mT @ M  # (F, r, r)
    C = M - W @ B  # (F, d, r): the part of M normal to the frame's span
    sd, eps = SOLVE_DTYPE, torch.finfo(W.dtype).eps
    P = (C.mT @ C).to(sd) if d > r else torch.zeros(F, r, r, dtype=sd, device=W.device)
    K = _skew(B.to(sd))
    X = K  # S = 0: msign(P_W M)
    taken, best = 0, None
    while True:
        V, q, Q = _inverse_sqrt(X.mT @ X + P, eps)
        Y = X @ Q  # WᵀA
        residual = torch.linalg.matrix_norm(_sym(Y)) / r  # (F,)
        # the exact tangent projection (P_W(W Y + C Q) = W skew(Y) + C Q, as WᵀC = 0), then the cap
        best = _keep_better(best, _feasible(_skew(Y), Q, K, P))
        if taken >= max_steps or not bool((residual > tol).any()):
            break
        Kv = V.mT @ K @ V
        ratio = (q[..., :, None] - q[..., None, :]) / (q[..., :, None] + q[..., None, :]).clamp_min(
            torch.finfo(sd).tiny
        )
        X = K + V @ (Kv * ratio) @ V.mT
        taken += 1
    _, Y, Q = best
    A = torch.baddbmm(C @ Q.to(W.dtype), W, Y.to(W.dtype))
    # In exact arithmetic A is tangent with ‖A‖₂ <= 1. In W's precision it need not be: where M lies
    # nearly in the frame's span, or has low rank, C is mostly rounding, which Q amplifies; such an A
    # would take a large step off the manifold. So project it onto the tangent space, and cap it by
    # its own spectral norm (eigenvalues of the r x r AᵀA, in the solve's precision).
    A = A - W @ _sym(W.mT @ A)
    norm = torch.linalg.eigvalsh((A.mT @ A).to(sd))[..., -1].clamp_min(0).sqrt()  # ‖A‖₂ (F,)
    return A * (1.0 / norm.clamp_min(1.0)).to(W.dtype)[:, None, None], taken


class ManifoldMuon(FrameOptimizer):
    r"""Manifold Muon on St(d, r): Muon's momentum, the spectral-norm steepest tangent step, and
    the polar retraction, for every frame ``W`` (trailing ``(d, r)`` matrices) with gradient ``G``::

        b ← μ b + (1 - μ) G                     momentum buffer (torch.optim.Muon's lerp)
        M = (1 - μ) G + μ b  (nesterov)  or  b    the direction's target
        A = argmax <M, A>  s.t.  ‖A‖₂ <= 1,  WᵀA + AᵀW = 0      (:func:`dual_direction`)
        W ← polar(W - lr A) = (W - lr A)(I + lr² AᵀA)^(-1/2)

    A step moves each frame by ``lr`` in spectral norm (to first order in ``lr``). ``A`` does not
    depend on the scale of ``M``: the step is scale free, and gradient clipping does nothing.
    ``W + lr A`` has the Gram matrix ``I + lr² AᵀA``, eigenvalues in ``[1, 1 + lr²]``: its polar
    factor is a fixed count of Newton-Schulz products (:func:`~stiefel_core.manifold.polar_factor`),
    exact to rounding, and corrects any drift. Weight decay is accepted and does nothing: ``λW``
    only changes the symmetric part of ``WᵀM``, which the constraint absorbs. Rotating every
    frame and gradient by ``Q ∈ O(d)`` rotates the step.

    Args:
        params: frames ``(..., d, r)`` on the manifold, or param groups (named: named errors).
        lr: the step's spectral norm (no ``adjust_lr_fn``: a frame's scale is fixed).
        momentum: ``μ``, in [0, 1).
        nesterov: Muon's Nesterov target (default, as ``torch.optim.Muon``).
        weight_decay: accepted, and ignored (see above).
        dual_steps: at most this many dual steps per step (0: ``msign(P_W M)``, projected and capped).
        dual_tol: stop when every frame's ``‖sym(WᵀA)‖_F / r`` is at most this.
        check_finite: as :class:`~stiefel_core.optim.StiefelAdam`: :func:`check_step` first, which
            raises ``NonFiniteGradientError`` or ``FrameOffManifoldError`` before anything changes.
    """

    holds_frames = True  # check_step checks this optimizer's parameters as frames

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-3,
        momentum: float = 0.95,
        nesterov: bool = True,
        weight_decay: float = 0.0,
        *,
        dual_steps: int = 8,
        dual_tol: float = 1e-4,
        check_finite: bool = True,
    ):
        defaults = dict(
            lr=lr,
            momentum=momentum,
            nesterov=bool(nesterov),
            weight_decay=weight_decay,
            dual_steps=dual_steps,
            dual_tol=dual_tol,
        )
        check_hyperparameters(defaults)
        super().__init__(params, defaults)
        self.check_finite = check_finite
        self.dual_solves, self.dual_steps_taken = 0, 0  # diagnostics: see mean_dual_steps

    def add_param_group(self, param_group: dict) -> None:
        super().add_param_group(param_group)
        for name, p in new_parameters(self, "ManifoldMuon"):
            error = orthonormality_error(p.detach()).max().item() if p.numel() else 0.0
            if not error <= orthonormality_tolerance(p):
                raise ValueError(
                    f"ManifoldMuon: parameter {name} is not on the Stiefel manifold "
                    f"(max ‖WᵀW - I‖_F = {error:.3g}). Orthonormalise it first: "
                    "`with torch.no_grad(): p.copy_(stiefel_core.manifold.orthonormalize(p))`."
                )

    def mean_dual_steps(self) -> float | None:
        """Dual steps per bank solve so far (each step solves one bank per shape and dtype); ``None``
        before the first step. Not saved in the state dict."""
        return self.dual_steps_taken / self.dual_solves if self.dual_solves else None

    @torch.compiler.disable  # host decisions (buckets, the dual loop's stop): runs eagerly when compiled
    @torch.no_grad()
    def step(self, closure: Callable[[], Tensor] | None = None, *, checked: bool = False):
        """One step; ``closure`` re-evaluates the model and returns the loss. With ``check_finite``,
        :func:`check_step` runs first unless ``checked`` (a ``CombinedOptimizer`` ran it)."""
        loss = evaluate_closure(closure)
        work = []
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            for p in params:
                if p.grad.is_sparse:
                    raise RuntimeError("ManifoldMuon does not support sparse gradients")
            work.append((group, params))
        for group, _ in work:  # a scheduler or a hand may have changed them since construction
            check_hyperparameters(group)
        if self.check_finite and not checked:
            check_step(self)
        for group, params in work:
            buckets: dict[tuple, list[Tensor]] = defaultdict(list)
            for p in params:
                state = self.state[p]
                if not state:
                    state["step"] = torch.zeros((), dtype=torch.float32)
                    state["momentum_buffer"] = torch.zeros(p.shape, dtype=p.dtype, device=p.device)
                buckets[(p.shape[-2:], p.dtype, p.device)].append(p)
            for bucket in buckets.values():
                self._step_bucket(bucket, group)
        return loss

    def _step_bucket(self, params: list[Tensor], group: dict) -> None:
        """Step every frame of ``params`` (same ``(d, r)``, dtype, device) as one bank, or in
        place for a large parameter that is a bank already (as StiefelAdam)."""
        d, r = params[0].shape[-2:]
        in_place = [p for p in params if p.numel() >= IN_PLACE_NUMEL and bank_view(p, d, r) is not None]
        small = [p for p in params if not any(p is q for q in in_place)]
        for chunk in [[p] for p in in_place] + ([small] if small else []):
            states = [self.state[p] for p in chunk]
            for s in states:
                s["step"] += 1
            buffers = [s["momentum_buffer"] for s in states]
            W, G, b = bank(chunk, d, r), bank([p.grad for p in chunk], d, r), bank(buffers, d, r)
            taken = bank_update_(
                W,
                G,
                b,
                lr=group["lr"],
                momentum=group["momentum"],
                nesterov=group["nesterov"],
                dual_steps=group["dual_steps"],
                dual_tol=group["dual_tol"],
            )
            self.dual_solves, self.dual_steps_taken = self.dual_solves + 1, self.dual_steps_taken + taken
            unbank(W, chunk)
            unbank(b, buffers)


def bank_update_(
    W: Tensor,
    G: Tensor,
    b: Tensor,
    *,
    lr: float,
    momentum: float,
    nesterov: bool,
    dual_steps: int = 8,
    dual_tol: float = 1e-4,
) -> int:
    """ManifoldMuon's update of a bank (``W, G, b`` of shape ``(F, d, r)``), in place on ``W`` and
    the momentum buffer ``b``; returns the dual steps taken. Low precision is computed in float32."""
    dt = compute_dtype(W.dtype)
    W_out, b_out = W, b
    if W.dtype != dt:
        W, b = W.to(dt), b.to(dt)
    G = G.to(dt)
    with full_precision_matmul(W.device):
        b.lerp_(G, 1 - momentum)
        M = G.lerp(b, momentum) if nesterov else b
        A, taken = dual_direction(W, M, max_steps=dual_steps, tol=dual_tol)
        # (W - lr A)ᵀ(W - lr A) = I + lr² AᵀA for tangent A with ‖A‖₂ <= 1: eigenvalues in [1, 1 + lr²]
        upper = torch.full(W.shape[:1], 1.0 + lr * lr, dtype=dt, device=W.device)
        polar_factor(W - lr * A, spectrum=(upper, 1.0 / (1.0 + lr * lr)), out=W)
    if W is not W_out:
        W_out.copy_(W)
        b_out.copy_(b)
    return taken
