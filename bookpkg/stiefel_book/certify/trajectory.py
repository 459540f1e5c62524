"""The test bench of the proposition chapters (1-5): a noisy quadratic loss on frames, a trajectory runner, and the
inverse polar retraction that recovers the step taken."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import scipy.linalg
import torch
from torch import Tensor
from torch.optim import Optimizer

from stiefel_core.frames import FrameParameter
from stiefel_core.manifold import random_frame
from stiefel_core.optim import StiefelAdam

from ..threads import single_threaded
from .base import DTYPE


@dataclass(frozen=True)
class QuadraticProblem:
    """A loss on a bank of ``F`` frames, with noisy gradients, that transforms under O(d).

    ``f(W) = scale · Σ_f [ -½ tr(W_fᵀ C_f W_f N) - ⟨B_f, W_f⟩ ]`` (a Brockett cost plus a linear
    term), ``C_f`` symmetric ``(d, d)``, ``N = diag(1, ..., r)``; the gradient at step ``t`` is
    ``scale · (-C W N - B + E_t)`` with a fixed noise sequence ``E_t`` standing in for minibatch
    noise. Rotating the data (``C → Q C Qᵀ``, ``B → Q B``, ``E_t → Q E_t``) rotates the gradient:
    ``∇f'(QW) = Q ∇f(W)``, which is what an O(d)-symmetric model does.
    Chapters: p2_scale_invariance, p3_conditioning, p4_equivariance.
    """

    C: Tensor  # (F, d, d) symmetric
    N: Tensor  # (r,) diagonal weights
    B: Tensor  # (F, d, r)
    E: Tensor  # (steps, F, d, r) gradient noise
    scale: float = 1.0

    @staticmethod
    def random(n_frames: int, d: int, r: int, steps: int, *, seed: int = 0, noise: float = 0.3) -> "QuadraticProblem":
        g = torch.Generator().manual_seed(seed)
        A = torch.randn(n_frames, d, d, generator=g, dtype=DTYPE)
        C = (A + A.mT) / (2 * math.sqrt(d))  # (F, d, d)
        N = torch.arange(1, r + 1, dtype=DTYPE) / r  # (r,)
        B = torch.randn(n_frames, d, r, generator=g, dtype=DTYPE) / math.sqrt(d)
        E = noise * torch.randn(steps, n_frames, d, r, generator=g, dtype=DTYPE)
        return QuadraticProblem(C, N, B, E)

    def scaled(self, c: float) -> "QuadraticProblem":
        """The same problem with the loss multiplied by ``c``."""
        return QuadraticProblem(self.C, self.N, self.B, self.E, self.scale * c)

    def rotated(self, Q: Tensor) -> "QuadraticProblem":
        """The problem seen in coordinates rotated by ``Q`` (``(F, d, d)`` or ``(d, d)``)."""
        return QuadraticProblem(Q @ self.C @ Q.mT, self.N, Q @ self.B, Q @ self.E, self.scale)

    def gradient(self, W: Tensor, t: int) -> Tensor:
        return self.scale * (-(self.C @ W) * self.N - self.B + self.E[t % len(self.E)])  # (F, d, r)

    def loss(self, W: Tensor) -> Tensor:
        """Per-frame loss ``(F,)`` (without noise)."""
        quad = -0.5 * ((W * (self.C @ W)) * self.N).sum((-2, -1))
        return self.scale * (quad - (self.B * W).sum((-2, -1)))


def problem_and_start(n_frames: int, d: int, r: int, steps: int, *, seed: int = 0) -> tuple[QuadraticProblem, Tensor]:
    """The propositions' bench from one ``seed``: :meth:`QuadraticProblem.random` with ``steps`` noise
    draws, and a start of ``n_frames`` random frames ``(F, d, r)`` drawn from ``seed + 1``."""
    problem = QuadraticProblem.random(n_frames, d, r, steps, seed=seed)
    return problem, random_frame(d, r, n_frames, generator=torch.Generator().manual_seed(seed + 1), dtype=DTYPE)


def _stiefel_options(options: dict) -> dict:
    defaults = dict(lr=0.05, betas=(0.9, 0.999), eps=0.0, trust_radius=0.5)
    return {**defaults, **options}


@single_threaded
def run_trajectory(
    W0: Tensor,
    gradient: Callable[[Tensor, int], Tensor],
    steps: int,
    *,
    make_optimizer: Callable[[list[Tensor]], Optimizer] | None = None,
    **options,
) -> Tensor:
    """Frames ``(steps + 1, *W0.shape)`` visited by an optimizer from ``W0``.

    ``gradient(W, t)`` gives the Euclidean gradient at the current frames. The optimizer is
    ``StiefelAdam(**options)`` (defaults here: ``lr=0.05``, ``eps=0``, ``trust_radius=0.5``), or
    ``make_optimizer([param])`` for any other ``torch.optim`` optimizer.
    Chapters: p2_scale_invariance, p3_conditioning, p4_equivariance.
    """
    p = FrameParameter(W0.clone())
    opt = make_optimizer([p]) if make_optimizer is not None else StiefelAdam([p], **_stiefel_options(options))
    path = [p.detach().clone()]
    for t in range(steps):
        p.grad = gradient(p.detach().clone(), t)
        opt.step()
        path.append(p.detach().clone())
    return torch.stack(path)


def inverse_retract_polar(W: Tensor, W_next: Tensor) -> Tensor:
    """The tangent step ``ξ`` with ``W_next = (W + ξ)(I + ξᵀξ)^(-1/2)``, frames ``(..., d, r)``.

    With ``S = (I + ξᵀξ)^(1/2)`` symmetric, ``W + ξ = W_next S``, and ``ξ`` tangent means
    ``sym(Wᵀ(W + ξ)) = I``; so ``S`` solves the Lyapunov equation ``M S + S Mᵀ = 2 I`` with
    ``M = WᵀW_next``, which has one solution (the eigenvalues of ``M`` have positive real part).
    Then ``ξ = W_next S - W``. Computed in float64 with SciPy, frame by frame.
    Chapters: p2_scale_invariance, p3_conditioning, p4_equivariance.
    """
    Wn, Vn = W.detach().to(DTYPE).cpu().numpy(), W_next.detach().to(DTYPE).cpu().numpy()
    flat_W, flat_V = Wn.reshape(-1, *Wn.shape[-2:]), Vn.reshape(-1, *Vn.shape[-2:])
    r = Wn.shape[-1]
    out = np.empty_like(flat_W)
    for i, (w, v) in enumerate(zip(flat_W, flat_V)):
        S = scipy.linalg.solve_continuous_lyapunov(w.T @ v, 2.0 * np.eye(r))
        out[i] = v @ (0.5 * (S + S.T)) - w
    return torch.from_numpy(out.reshape(Wn.shape))
