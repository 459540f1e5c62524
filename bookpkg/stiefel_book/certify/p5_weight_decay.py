"""Proposition 5's certificate: weight decay has identically zero Riemannian gradient on St(d, r) (chapter
p5_weight_decay)."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from stiefel_core.attention import SelfAttention
from stiefel_core.combined import configure_optimizer
from stiefel_core.frames import is_frame
from stiefel_core.manifold import orthonormalize, project_tangent, random_frame, retract_polar

from ..threads import single_threaded
from .base import DTYPE, TOLERANCE, Certificate, _at_most
from .trajectory import QuadraticProblem, run_trajectory

P5_SHAPES = tuple((d, r) for d in (1, 2, 3, 5, 8, 16, 32, 64, 128) for r in (1, 2, 4, 8, 16, 64, 128) if r <= d)


def normal_ratio(W: Tensor, weight_decay: float = 0.1) -> Tensor:
    """``‖P_W(λW)‖_F / ‖λW‖_F`` per frame: the part of the decay gradient ``λW`` the manifold sees.
    Chapter: p5_weight_decay."""
    D = weight_decay * W
    return torch.linalg.matrix_norm(project_tangent(W, D)) / torch.linalg.matrix_norm(D)


def _frame_norms(model: nn.Module) -> float:
    return float(torch.linalg.vector_norm(model.W_Q.detach()))


def weight_decay_training_run(
    stiefel: bool,
    *,
    weight_decay: float = 1.0,
    lr: float = 1e-2,
    steps: int = 300,
    seed: int = 0,
    teacher_sharpness: float = 0.0,
    d_model: int = 16,
    n_heads: int = 2,
    d_head: int = 4,
    tokens: int = 8,
    batch: int = 32,
) -> dict[str, object]:
    """A tiny self-attention model trained by ``configure_optimizer`` in float64 on a teacher task.

    The student is ``SelfAttention(d_model, n_heads, d_head, stiefel=stiefel)``; the teacher is
    another one whose query and key weights are multiplied by ``teacher_sharpness``: at the
    default 0 the teacher attends uniformly, so the target is the average of the value vectors,
    a task that needs no particular attention pattern; larger values make the target depend
    on a sharp pattern. Inputs are Gaussian tokens, the loss the mean squared error to the
    teacher's output, a fresh batch every step. With ``stiefel=True`` the frames ``W_Q``, ``W_K``
    go to StiefelAdam and the rest to AdamW with decoupled ``weight_decay``; with
    ``stiefel=False`` every parameter goes to AdamW with that decay. Both arms start from the
    same weights. Returns the histories of ``‖W_Q‖_F`` (the start, then one entry per step) and
    of the loss (one per step), and ``√(n_heads · d_head)``, the norm of orthonormal frames.
    Runs are deterministic and remembered: a second call with the same arguments is free.
    Chapter: p5_weight_decay.
    """
    run = _cached_training_run(
        stiefel,
        float(weight_decay),
        float(lr),
        int(steps),
        int(seed),
        float(teacher_sharpness),
        d_model,
        n_heads,
        d_head,
        tokens,
        batch,
    )
    return {key: value.clone() if isinstance(value, Tensor) else value for key, value in run.items()}


@functools.lru_cache(maxsize=32)
@single_threaded
def _cached_training_run(
    stiefel: bool,
    weight_decay: float,
    lr: float,
    steps: int,
    seed: int,
    teacher_sharpness: float,
    d_model: int,
    n_heads: int,
    d_head: int,
    tokens: int,
    batch: int,
) -> dict[str, object]:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        teacher = SelfAttention(d_model, n_heads, d_head, stiefel=False).to(DTYPE)
        torch.manual_seed(seed + 1)
        model = SelfAttention(d_model, n_heads, d_head, stiefel=stiefel).to(DTYPE)
    with torch.no_grad():
        teacher.W_Q.mul_(teacher_sharpness)
        teacher.W_K.mul_(teacher_sharpness)
        for p in (model.W_Q, model.W_K):  # float32 frames, cast: orthonormal again in float64
            p.copy_(orthonormalize(p))
    opt = configure_optimizer(model, lr=lr, weight_decay=weight_decay)
    g = torch.Generator().manual_seed(seed + 2)
    norms, losses = [_frame_norms(model)], []
    for _ in range(steps):
        x = torch.randn(batch, tokens, d_model, generator=g, dtype=DTYPE)
        with torch.no_grad():
            y = teacher(x)
        loss = (model(x) - y).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        norms.append(_frame_norms(model))
        losses.append(loss.item())
    return {
        "W_Q_norm": torch.tensor(norms, dtype=DTYPE),
        "loss": torch.tensor(losses, dtype=DTYPE),
        "orthonormal_norm": math.sqrt(n_heads * d_head),
        "stiefel": stiefel,
        "frames_are_frames": all(is_frame(p) for p in (model.W_Q, model.W_K)) if stiefel else False,
    }


@dataclass(frozen=True)
class WeightDecayCertificate(Certificate):
    """Proposition 5's certificate: its numbers, checks and rounded summary. Chapter: p5_weight_decay."""

    n_shapes: int
    n_frames: int
    max_normal_ratio: float  # max ‖P_W(λW)‖ / ‖λW‖ over random frames of many shapes
    argument_bit_identical: bool  # StiefelAdam(weight_decay=λ) == StiefelAdam(weight_decay=0), bit for bit
    coupled_deviation: float  # trajectory with gradients G + λW against G: max relative deviation
    decoupled_retracted_error: float  # ‖polar((1 - ηλ) W) - W‖_F / ‖W‖_F: AdamW's shrink, retracted
    steps: int  # training run
    weight_decay: float
    orthonormal_norm: float  # √(n_heads · d_head)
    stiefel_norm_error: float  # max_t |‖W_Q‖_F - √(H r)| in the Stiefel arm
    euclidean_norms: tuple[float, ...]  # ‖W_Q‖_F of the Euclidean arm at checkpoints
    stiefel_norms: tuple[float, ...]
    no_decay_norms: tuple[float, ...]  # the Euclidean arm again, weight_decay = 0 (control)
    checkpoints: tuple[int, ...]
    euclidean_final_loss: float
    stiefel_final_loss: float
    tolerance: float = TOLERANCE

    def checks(self) -> dict[str, bool]:
        e = self.euclidean_norms
        return {
            "‖P_W(λW)‖ / ‖λW‖ ≤ 1e-12": self.max_normal_ratio <= self.tolerance,
            "weight_decay argument: bit-identical": self.argument_bit_identical,
            "coupled decay G + λW: trajectory unchanged": self.coupled_deviation <= self.tolerance,
            "decoupled shrink, retracted: frame unchanged": self.decoupled_retracted_error <= self.tolerance,
            "Stiefel W_Q norm = √(H r) throughout": self.stiefel_norm_error <= self.tolerance,
            "Euclidean W_Q shrinks at every checkpoint": all(b < a for a, b in zip(e, e[1:])),
            "decay, not the loss, shrinks it (final < ½ of no-decay)": e[-1] < 0.5 * self.no_decay_norms[-1],
        }

    def summary(self) -> dict[str, object]:
        return {
            "random frames / shapes": f"{self.n_frames} / {self.n_shapes}",
            "max ‖P_W(λW)‖ / ‖λW‖": _at_most(self.max_normal_ratio, self.tolerance),
            "StiefelAdam(weight_decay=0.1) vs 0: bit-identical": self.argument_bit_identical,
            "trajectory with G + λW vs G": _at_most(self.coupled_deviation, self.tolerance),
            "polar((1 - ηλ) W) vs W": _at_most(self.decoupled_retracted_error, self.tolerance),
            "training run": f"{self.steps} steps, AdamW weight decay {self.weight_decay:g}",
            "steps at checkpoints": ", ".join(str(c) for c in self.checkpoints),
            "Euclidean ‖W_Q‖_F": ", ".join(f"{x:.3f}" for x in self.euclidean_norms),
            "Euclidean ‖W_Q‖_F, no decay": ", ".join(f"{x:.3f}" for x in self.no_decay_norms),
            "Stiefel ‖W_Q‖_F": ", ".join(f"{x:.3f}" for x in self.stiefel_norms),
            "max_t |Stiefel ‖W_Q‖_F - √(H r)|": _at_most(self.stiefel_norm_error, self.tolerance),
            "final loss, Euclidean / Stiefel": f"{self.euclidean_final_loss:.3g} / {self.stiefel_final_loss:.3g}",
        }


@single_threaded
def certify_weight_decay(
    *,
    weight_decay: float = 1.0,
    lr: float = 1e-2,
    steps: int = 300,
    frames_per_shape: int = 64,
    seed: int = 0,
    **options,
) -> WeightDecayCertificate:
    """Proposition 5: the decay gradient ``λW`` is normal to St(d, r) at ``W``, so decay does not
    move a frame, in any of its three forms.

    - ``‖P_W(λW)‖ / ‖λW‖`` at ``frames_per_shape`` random frames of every shape in ``P5_SHAPES``;
    - StiefelAdam's ``weight_decay`` argument (accepted, ignored): trajectories bit-identical;
    - coupled L2 decay, ``G + λW`` fed as the gradient: the same trajectory to 1e-12;
    - decoupled decay ``W ← (1 - ηλ)W`` then the polar retraction: the same frame.
    Then a tiny attention model trained three times (:func:`weight_decay_training_run`): AdamW's
    decoupled decay shrinks a Euclidean ``W_Q`` at every checkpoint, far below where the same
    run without decay settles; the Stiefel ``W_Q`` keeps norm ``√(H r)`` to 1e-12.
    ``options`` go to the StiefelAdam runs (``projector="euclidean"`` makes coupled decay count).
    """
    g = torch.Generator().manual_seed(seed)
    ratio = decoupled = 0.0
    for d, r in P5_SHAPES:
        W = random_frame(d, r, frames_per_shape, generator=g, dtype=DTYPE)
        ratio = max(ratio, float(normal_ratio(W, 0.1).max()))
        shrunk = retract_polar(W, -lr * weight_decay * W, tangent=False)  # polar((1 - ηλ) W)
        decoupled = max(decoupled, float((torch.linalg.matrix_norm(shrunk - W) / math.sqrt(r)).max()))

    problem = QuadraticProblem.random(4, 16, 4, 50, seed=seed)
    W0 = random_frame(16, 4, 4, generator=g, dtype=DTYPE)
    plain = run_trajectory(W0, problem.gradient, 50, **options)
    with_argument = run_trajectory(W0, problem.gradient, 50, weight_decay=0.1, **options)
    coupled = run_trajectory(W0, lambda W, t: problem.gradient(W, t) + weight_decay * W, 50, **options)
    norm = torch.linalg.vector_norm(plain, dim=(-3, -2, -1))
    coupled_deviation = float((torch.linalg.vector_norm(coupled - plain, dim=(-3, -2, -1)) / norm).max())

    euclid = weight_decay_training_run(False, weight_decay=weight_decay, lr=lr, steps=steps, seed=seed)
    stief = weight_decay_training_run(True, weight_decay=weight_decay, lr=lr, steps=steps, seed=seed)
    control = weight_decay_training_run(False, weight_decay=0.0, lr=lr, steps=steps, seed=seed)
    checkpoints = tuple(range(0, steps + 1, max(steps // 6, 1)))
    expected = stief["orthonormal_norm"]
    return WeightDecayCertificate(
        n_shapes=len(P5_SHAPES),
        n_frames=len(P5_SHAPES) * frames_per_shape,
        max_normal_ratio=ratio,
        argument_bit_identical=bool(torch.equal(plain, with_argument)),
        coupled_deviation=coupled_deviation,
        decoupled_retracted_error=decoupled,
        steps=steps,
        weight_decay=weight_decay,
        orthonormal_norm=expected,
        stiefel_norm_error=float((stief["W_Q_norm"] - expected).abs().max()),
        euclidean_norms=tuple(round(float(euclid["W_Q_norm"][c]), 6) for c in checkpoints),
        stiefel_norms=tuple(round(float(stief["W_Q_norm"][c]), 6) for c in checkpoints),
        no_decay_norms=tuple(round(float(control["W_Q_norm"][c]), 6) for c in checkpoints),
        checkpoints=checkpoints,
        euclidean_final_loss=float(euclid["loss"][-10:].mean()),
        stiefel_final_loss=float(stief["loss"][-10:].mean()),
    )
