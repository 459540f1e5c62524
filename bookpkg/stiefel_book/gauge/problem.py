"""The gauge chapter's toy problem: a small float64 model, its loss, gradients by head, and curves along and off a gauge
orbit (chapter gauge)."""

from __future__ import annotations

import contextlib
import functools
import math
from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from stiefel_core.attention import SelfAttention
from stiefel_core.frames import is_frame
from stiefel_core.manifold import orthonormalize, project_tangent

from ..data.modular import ModularData, modular_data
from ..models import ModularTransformer
from .algebra import DTYPE, _check_group, _pair_norm, direction_cosines, gauge_component, project_gauge

# --------------------------------------------------------------------------------------------
# A small model, its loss, and gradients by head
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GaugeProblem:
    """The small float64 problem of the certificates: a one-layer :class:`ModularTransformer` on
    ``a + b mod p``, full-batch cross-entropy on the training split.
    Chapter: gauge."""

    p: int = 11  # 121 pairs: a full batch is tiny
    d_model: int = 12  # small and fast
    n_heads: int = 3  # three heads of width 4: O(4) is non-abelian (6 rotations, 16 GL directions)
    d_mlp: int = 24
    train_fraction: float = 0.5  # 60 training pairs
    data_seed: int = 0

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    def data(self) -> ModularData:
        return modular_data(self.p, "add", self.train_fraction, seed=self.data_seed)


def attention_modules(model: nn.Module) -> list[tuple[str, SelfAttention]]:
    """Every :class:`SelfAttention` of ``model``, with its name, in module order. Chapter: gauge."""
    found = [(name, m) for name, m in model.named_modules() if isinstance(m, SelfAttention)]
    if not found:
        raise ValueError("the model has no stiefel_core.attention.SelfAttention: it has no attention gauge")
    return found


def make_model(
    stiefel: bool, seed: int = 0, problem: GaugeProblem = GaugeProblem(), *, random_point: bool = False
) -> ModularTransformer:
    """The problem's model in float64, built under ``torch.manual_seed(seed)``; its frames are
    orthonormal in float64. ``random_point=True`` (Euclidean arm only) redraws ``W_Q, W_K`` with
    i.i.d. Gaussian entries of variance ``1/r``: a generic point, far from orthonormal, where the
    GL(r) gauge is the whole symmetry.
    Chapter: gauge."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = ModularTransformer(
            problem.p + 1, problem.p, problem.d_model, problem.n_heads, problem.d_mlp, stiefel=stiefel
        )
        model = model.to(DTYPE)
        with torch.no_grad():
            for _, attn in attention_modules(model):
                for W in (attn.W_Q, attn.W_K):
                    if random_point:
                        if stiefel:
                            raise ValueError("random_point=True draws non-orthonormal W_Q, W_K: only for stiefel=False")
                        W.copy_(torch.randn_like(W) / math.sqrt(W.shape[-1]))
                    else:
                        W.copy_(orthonormalize(W))
    return model


def task_loss(model: nn.Module, x: Tensor, y: Tensor) -> Tensor:
    """Mean cross-entropy of the model's logits: a function of ``W_Q, W_K`` only through
    ``W_Q W_Kᵀ`` per head (the logits' ``1/√r`` is fixed by the head width).
    Chapter: gauge."""
    return F.cross_entropy(model(x), y)


@functools.lru_cache(maxsize=None)
def query_penalty(seed: int = 0, weight: float = 0.1) -> Callable[[nn.Module, Tensor, Tensor], Tensor]:
    """A deliberately *non*-invariant loss: :func:`task_loss` plus ``weight · ⟨B, W_Q⟩`` for a fixed
    random ``B``, a term in ``W_Q`` alone. Its gradient has a gauge component, for both groups:
    certificates must fail on it. (One function object per ``(seed, weight)``, so results computed
    with it can be remembered.)
    Chapter: gauge."""

    def loss(model: nn.Module, x: Tensor, y: Tensor) -> Tensor:
        total = task_loss(model, x, y)
        for i, (_, attn) in enumerate(attention_modules(model)):
            g = torch.Generator().manual_seed(seed + 7919 * i)
            B = torch.randn(attn.W_Q.shape, generator=g, dtype=attn.W_Q.dtype)
            total = total + weight * (B * attn.W_Q).sum()
        return total

    return loss


def head_gradients(
    model: nn.Module, loss: Tensor, *, riemannian: bool | None = None
) -> list[tuple[Tensor, Tensor, Tensor, Tensor]]:
    """``(W_Q, W_K, G_Q, G_K)`` for every attention module (banks ``(H, d, r)``), ``G`` the gradient
    of ``loss``. ``riemannian`` (default: for frames) projects ``G`` onto the tangent spaces,
    ``P_W(G)``: the Riemannian gradient that StiefelAdam steps along.
    Chapter: gauge."""
    modules = attention_modules(model)
    params = [W for _, attn in modules for W in (attn.W_Q, attn.W_K)]
    grads = torch.autograd.grad(loss, params, allow_unused=True)
    out = []
    for k, (_, attn) in enumerate(modules):
        W_Q, W_K = attn.W_Q.detach().to(DTYPE), attn.W_K.detach().to(DTYPE)
        G_Q, G_K = (
            torch.zeros_like(W) if G is None else G.detach().to(DTYPE)
            for W, G in ((W_Q, grads[2 * k]), (W_K, grads[2 * k + 1]))
        )
        if riemannian if riemannian is not None else is_frame(attn.W_Q):
            G_Q, G_K = project_tangent(W_Q, G_Q), project_tangent(W_K, G_K)
        out.append((W_Q, W_K, G_Q, G_K))
    return out


def _default_group(model: nn.Module) -> str:
    return "orthogonal" if is_frame(attention_modules(model)[0][1].W_Q) else "gl"


def model_gauge_components(
    model: nn.Module,
    data: ModularData,
    *,
    group: str | None = None,
    loss_fn: Callable[[nn.Module, Tensor, Tensor], Tensor] = task_loss,
) -> dict[str, Tensor]:
    """The gradient's gauge component at the model's current point, every head of every attention
    module: ``"component"`` (:func:`gauge_component`, one per head) and ``"cosine"`` (the largest
    :func:`direction_cosines` per head). ``group`` defaults to O(r) for a Stiefel model (its
    Riemannian gradient) and GL(r) for a Euclidean one (its Euclidean gradient).
    Chapter: gauge."""
    group = _check_group(group or _default_group(model))
    loss = loss_fn(model, data.train_x, data.train_y)
    heads = head_gradients(model, loss)
    return {
        "component": torch.cat([gauge_component(*h, group) for h in heads]),
        "cosine": torch.cat([direction_cosines(*h, group).amax(-1) for h in heads]),
    }


@torch.no_grad()
def remove_gauge_from_grads_(model: nn.Module, *, group: str | None = None) -> Tensor:
    """Remove the gauge component from the ``.grad`` of every attention ``W_Q, W_K``, in place,
    before an optimizer step; returns the removed component relative to the gradient, per head.

    For frames, the part removed is the projection of the Riemannian gradient ``g = P_W(G)``
    onto the (tangent) O(r) span: ``G ← G - P_gauge(g)``, so the optimizer, which projects
    ``G`` itself, sees ``g - P_gauge(g)``. For Euclidean ``W_Q, W_K`` it is the GL(r) span of ``G``.
    Chapter: gauge.
    """
    group = _check_group(group or _default_group(model))
    removed = []
    for _, attn in attention_modules(model):
        W_Q, W_K = attn.W_Q.to(DTYPE), attn.W_K.to(DTYPE)
        G_Q, G_K = attn.W_Q.grad.to(DTYPE), attn.W_K.grad.to(DTYPE)
        if is_frame(attn.W_Q):
            G_Q, G_K = project_tangent(W_Q, G_Q), project_tangent(W_K, G_K)
        P_Q, P_K = project_gauge(W_Q, W_K, G_Q, G_K, group)
        removed.append(_pair_norm(P_Q, P_K) / _pair_norm(G_Q, G_K).clamp_min(torch.finfo(DTYPE).tiny))
        attn.W_Q.grad.sub_(P_Q.to(attn.W_Q.grad.dtype))
        attn.W_K.grad.sub_(P_K.to(attn.W_K.grad.dtype))
    return torch.cat(removed)


# --------------------------------------------------------------------------------------------
# Curves through the point: along a gauge orbit, and off it
# --------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _swapped(attn: SelfAttention, W_Q: Tensor, W_K: Tensor):
    """Inside the block, ``attn.W_Q, attn.W_K`` hold the given values (restored afterwards), so a
    loss function sees them wherever it reads them."""
    saved = attn.W_Q.detach().clone(), attn.W_K.detach().clone()
    with torch.no_grad():
        attn.W_Q.copy_(W_Q)
        attn.W_K.copy_(W_K)
    try:
        yield
    finally:
        with torch.no_grad():
            attn.W_Q.copy_(saved[0])
            attn.W_K.copy_(saved[1])


@torch.no_grad()
def loss_along(
    model: nn.Module,
    data: ModularData,
    curve: Callable[[float], tuple[Tensor, Tensor]],
    ts,
    *,
    module: int = 0,
    loss_fn: Callable[[nn.Module, Tensor, Tensor], Tensor] = task_loss,
) -> Tensor:
    """The loss with ``(W_Q, W_K) = curve(t)`` in one attention module (banks ``(H, d, r)``), for
    every ``t`` of ``ts``; the model's own weights are restored afterwards.
    Chapter: gauge."""
    attn = attention_modules(model)[module][1]
    values = []
    for t in ts:
        with _swapped(attn, *curve(float(t))):
            values.append(float(loss_fn(model, data.train_x, data.train_y)))
    return torch.tensor(values, dtype=DTYPE)


def orbit_curves(
    model: nn.Module, group: str, seed: int = 0, *, module: int = 0
) -> dict[str, Callable[[float], tuple[Tensor, Tensor]]]:
    """Two curves through the model's ``(W_Q, W_K)`` with unit-norm random generators per head:
    ``"gauge"``, along the orbit (``(W_Q exp(tΩ), W_K exp(tΩ))`` or ``(W_Q exp(tX), W_K exp(-tXᵀ))``),
    and ``"off"``, the same motion of ``W_Q`` with ``W_K`` held fixed: for O(r) it stays on
    St x St, but it is no symmetry.
    Chapter: gauge."""
    _check_group(group)
    attn = attention_modules(model)[module][1]
    W_Q, W_K = attn.W_Q.detach().to(DTYPE), attn.W_K.detach().to(DTYPE)
    H, r = W_Q.shape[0], W_Q.shape[-1]
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(H, r, r, generator=g, dtype=DTYPE)
    if group == "orthogonal":
        X = X - X.mT
    X = X / torch.linalg.matrix_norm(X)[:, None, None]

    def gauge(t: float) -> tuple[Tensor, Tensor]:
        return W_Q @ torch.linalg.matrix_exp(t * X), W_K @ torch.linalg.matrix_exp(-t * X.mT)

    def off(t: float) -> tuple[Tensor, Tensor]:
        return W_Q @ torch.linalg.matrix_exp(t * X), W_K

    return {"gauge": gauge, "off": off}
