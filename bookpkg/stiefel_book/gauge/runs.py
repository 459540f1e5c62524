"""The gauge chapter's float64 training runs: gauge parts removed from gradients or steps, starts moved along an orbit,
gradients by point; remembered (chapter gauge)."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Callable, Iterator

import torch
from torch import Tensor, nn

from stiefel_core.combined import configure_optimizer
from stiefel_core.frames import is_frame
from stiefel_core.manifold import random_frame, retract_polar

from ..certify import inverse_retract_polar
from ..data.modular import ModularData
from ..threads import one_thread
from .algebra import DTYPE, GROUPS, gauge_component, gl_action, remove_gauge
from .problem import (
    GaugeProblem,
    _default_group,
    attention_modules,
    head_gradients,
    make_model,
    model_gauge_components,
    query_penalty,
    remove_gauge_from_grads_,
    task_loss,
)

# --------------------------------------------------------------------------------------------
# Training runs
# --------------------------------------------------------------------------------------------

DEFAULT_LR = 1e-2  # both arms; Adam-sized steps that visibly train the tiny model in 100 steps


@dataclass(frozen=True)
class TrainingSetting:
    """How a run of the gauge chapter trains: ``steps`` full-batch steps of ``configure_optimizer``
    (StiefelAdam on the frames and AdamW on the rest, or AdamW on everything) at ``lr`` and
    ``weight_decay``, from the problem's model drawn under ``seed``. The runs below take these
    fields as keywords. Chapter: gauge."""

    steps: int = 120
    seed: int = 0
    lr: float = DEFAULT_LR
    weight_decay: float = 0.1
    problem: GaugeProblem = GaugeProblem()

    def optimizer(self, model: nn.Module):
        return configure_optimizer(model, lr=self.lr, weight_decay=self.weight_decay)

    def record(self) -> dict:
        """The setting as a run's output records it: every field but the problem."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "problem"}


def training_checkpoints(
    stiefel: bool, *, steps: int = 60, every: int = 10, random_point: bool = False, **setting
) -> Iterator[tuple[int, nn.Module, ModularData]]:
    """Train the problem's model (``setting``: the other fields of :class:`TrainingSetting`) and
    yield ``(step, model, data)`` at steps ``0, every, 2 every, ..., steps``.
    Chapter: gauge."""
    run = TrainingSetting(steps=steps, **setting)
    model = make_model(stiefel, run.seed, run.problem, random_point=random_point)
    data = run.problem.data()
    opt = run.optimizer(model)
    for step in range(steps + 1):
        if step % every == 0:
            yield step, model, data
        if step == steps:
            break
        opt.zero_grad()
        task_loss(model, data.train_x, data.train_y).backward()
        opt.step()


def trained_model(stiefel: bool, *, steps: int = 40, **kw) -> nn.Module:
    """The problem's model after ``steps`` steps of :func:`training_checkpoints` (at the start,
    attention is nearly uniform and barely matters to the loss; after a few dozen steps it does).
    Chapter: gauge."""
    *_, (_, model, _) = training_checkpoints(stiefel, steps=steps, every=steps or 1, **kw)
    return model


def _flat_parameters(model: nn.Module) -> Tensor:
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


REMOVE_MODES = ("none", "gradient", "update")


def _steps_taken(model: nn.Module, before: list[tuple[Tensor, Tensor]]) -> list[tuple[Tensor, Tensor]]:
    """The steps ``(ξ_Q, ξ_K)`` the optimizer just took in every attention module: recovered exactly
    from the frames before and after (:func:`inverse_retract_polar`) for frames, the difference
    ``W_after - W_before`` otherwise."""
    steps = []
    for (W_Q0, W_K0), (_, attn) in zip(before, attention_modules(model)):
        W_Q1, W_K1 = attn.W_Q.detach().to(DTYPE), attn.W_K.detach().to(DTYPE)
        if is_frame(attn.W_Q):
            steps.append((inverse_retract_polar(W_Q0, W_Q1), inverse_retract_polar(W_K0, W_K1)))
        else:
            steps.append((W_Q1 - W_Q0, W_K1 - W_K0))
    return steps


def update_gauge_components(model: nn.Module, before: list[tuple[Tensor, Tensor]], group: str) -> float:
    """The gauge component of the step the optimizer just took, relative to the step (the pair
    ``(ξ_Q, ξ_K)`` of a head), largest over heads, measured at the point before the step.
    Chapter: gauge."""
    return max(
        float(gauge_component(W_Q0, W_K0, xi_Q, xi_K, group).max())
        for (W_Q0, W_K0), (xi_Q, xi_K) in zip(before, _steps_taken(model, before))
    )


@torch.no_grad()
def _remove_gauge_from_step_(model: nn.Module, before: list[tuple[Tensor, Tensor]], group: str) -> None:
    """Replace the step just taken in every attention module by its part orthogonal to the gauge
    directions at the point before it (retracted again for frames). Optimizer state is untouched."""
    for (W_Q0, W_K0), (xi_Q, xi_K), (_, attn) in zip(before, _steps_taken(model, before), attention_modules(model)):
        xi_Q, xi_K = remove_gauge(W_Q0, W_K0, xi_Q, xi_K, group)
        if is_frame(attn.W_Q):
            attn.W_Q.copy_(retract_polar(W_Q0, xi_Q))
            attn.W_K.copy_(retract_polar(W_K0, xi_K))
        else:
            attn.W_Q.copy_(W_Q0 + xi_Q)
            attn.W_K.copy_(W_K0 + xi_K)


def projected_run(stiefel: bool, *, remove: str = "gradient", **setting) -> dict[str, Tensor]:
    """A float64 training run of the problem's model (the gauge chapter; ``setting``: the fields
    of :class:`TrainingSetting`).

    ``remove`` says what loses its gauge component at every step: ``"gradient"`` (the attention
    gradients, before the optimizer sees them: :func:`remove_gauge_from_grads_`), ``"update"`` (the
    step the optimizer took, afterwards; its state is left alone) or ``"none"``. Returns ``params``
    (all parameters, the start first, then after each step), ``loss`` (before each step, then at
    the end), ``removed`` (the relative gauge component removed from each gradient) and, unless
    ``remove="gradient"``, ``update_component`` (the gauge component of each step the optimizer
    took, relative to the step). Deterministic.
    """
    return _projected_run(stiefel, remove, TrainingSetting(**setting))


def _projected_run(stiefel: bool, remove: str, run: TrainingSetting) -> dict[str, Tensor]:
    if remove not in REMOVE_MODES:
        raise ValueError(f"remove={remove!r}: choose one of {REMOVE_MODES}")
    with one_thread():
        model = make_model(stiefel, run.seed, run.problem)
        data = run.problem.data()
        opt = run.optimizer(model)
        group = _default_group(model)
        params, losses, removed, update_component = [_flat_parameters(model)], [], [], []
        for _ in range(run.steps):
            opt.zero_grad()
            loss = task_loss(model, data.train_x, data.train_y)
            loss.backward()
            losses.append(loss.item())
            if remove == "gradient":
                removed.append(float(remove_gauge_from_grads_(model, group=group).max()))
            before = [
                (attn.W_Q.detach().to(DTYPE).clone(), attn.W_K.detach().to(DTYPE).clone())
                for _, attn in attention_modules(model)
            ]
            opt.step()
            if remove != "gradient":  # the steps' own gauge part (the gradient run matches the plain one)
                update_component.append(update_gauge_components(model, before, group))
            if remove == "update":
                _remove_gauge_from_step_(model, before, group)
            params.append(_flat_parameters(model))
        with torch.no_grad():
            losses.append(task_loss(model, data.train_x, data.train_y).item())
    return {
        "params": torch.stack(params),  # (steps + 1, n_params)
        "loss": torch.tensor(losses, dtype=DTYPE),  # (steps + 1,)
        "removed": torch.tensor(removed, dtype=DTYPE),  # (steps,), or empty
        "update_component": torch.tensor(update_component, dtype=DTYPE),  # (steps,), or empty
    }


def _deviation(plain: dict[str, Tensor], projected: dict[str, Tensor]) -> dict[str, Tensor]:
    return {
        "params": (projected["params"] - plain["params"]).abs().amax(-1),
        "loss": (projected["loss"] - plain["loss"]).abs(),
        "removed": projected["removed"],
        "plain_loss": plain["loss"],
        "projected_loss": projected["loss"],
        "update_component": plain["update_component"],
    }


def run_deviation(stiefel: bool, *, remove: str = "gradient", **kw) -> dict[str, Tensor]:
    """Per step, between a run with ``remove`` (see :func:`projected_run`) and the plain run (the
    gauge chapter): the largest parameter deviation ``params`` and the loss deviation ``loss``
    (``steps + 1`` entries each); the projected run's ``removed`` and ``projected_loss``, the plain
    run's ``plain_loss`` and ``update_component``."""
    return _deviation(projected_run(stiefel, remove="none", **kw), projected_run(stiefel, remove=remove, **kw))


def projected_runs(**setting) -> dict:
    """Every run the gauge chapter's projected-run certificate and its two figures read, each
    trained once (``setting``: the fields of :class:`TrainingSetting`): per arm (``"stiefel"``,
    ``"euclidean"``), :func:`run_deviation` with the gauge removed from the gradients
    (``"gradient"``) and from the steps (``"update"``), both against one plain run; ``"setting"``
    holds the arguments."""
    run = TrainingSetting(**setting)
    out: dict = {"setting": run.record()}
    with one_thread():
        for arm in ("stiefel", "euclidean"):
            plain = _projected_run(arm == "stiefel", "none", run)
            out[arm] = {
                remove: _deviation(plain, _projected_run(arm == "stiefel", remove, run))
                for remove in ("gradient", "update")
            }
    return out


# --------------------------------------------------------------------------------------------
# Gradients' gauge components, at random points and along runs
# --------------------------------------------------------------------------------------------


def gauge_components_by_point(
    n_random_points: int, steps: int, every: int, seed: int, problem: GaugeProblem, loss_fn
) -> dict[str, Tensor]:
    """Relative gauge components of the gradient, one row per point, one column per head (arguments
    as :func:`gradient_components`'): ``"stiefel_random"``, ``"stiefel_run"`` (O(r), Riemannian
    gradient), ``"stiefel_gl"`` (the Stiefel model's Euclidean gradient against GL(r)),
    ``"euclidean_random"``, ``"euclidean_run"`` (GL(r)), ``"cosine"`` (largest single-direction cosine
    per point), ``"steps"`` (the run's checkpoints). Deterministic. Chapter: gauge."""
    data = problem.data()
    out: dict[str, list] = {
        k: [] for k in ("stiefel_random", "stiefel_run", "stiefel_gl", "euclidean_random", "euclidean_run", "cosine")
    }

    def check(model: nn.Module, key: str) -> None:
        group = _default_group(model)
        c = model_gauge_components(model, data, group=group, loss_fn=loss_fn)
        out[key].append(c["component"])
        out["cosine"].append(c["cosine"].max())
        if group == "orthogonal":  # the same model's Euclidean gradient against the full GL(r)
            loss = loss_fn(model, data.train_x, data.train_y)
            heads = head_gradients(model, loss, riemannian=False)
            out["stiefel_gl"].append(torch.cat([gauge_component(*h, "gl") for h in heads]))

    for k in range(n_random_points):
        check(make_model(True, seed + 10 + k, problem), "stiefel_random")
        check(make_model(False, seed + 10 + k, problem, random_point=True), "euclidean_random")
    steps_seen = []
    for stiefel, key in ((True, "stiefel_run"), (False, "euclidean_run")):
        for step, model, _ in training_checkpoints(stiefel, steps=steps, every=every, seed=seed, problem=problem):
            check(model, key)
            if stiefel:
                steps_seen.append(step)
    result = {k: torch.stack(v) for k, v in out.items()}
    result["steps"] = torch.tensor(steps_seen)
    return result


def gradient_components(
    *,
    n_random_points: int = 6,
    steps: int = 60,
    every: int = 10,
    seed: int = 0,
    problem: GaugeProblem = GaugeProblem(),
    loss_fn: Callable[[nn.Module, Tensor, Tensor], Tensor] = task_loss,
) -> dict:
    """What the gauge chapter's gradient certificate and its figure read, computed once:
    ``"found"``, :func:`gauge_components_by_point` for ``loss_fn`` (random points and runs), and
    ``"control"``, the same at the random points for the loss plus a ``W_Q``-only term
    (:func:`query_penalty`); ``"setting"`` holds the arguments."""
    with one_thread():
        return {
            "setting": {"n_random_points": n_random_points, "steps": steps, "every": every, "seed": seed},
            "found": gauge_components_by_point(n_random_points, steps, every, seed, problem, loss_fn),
            "control": gauge_components_by_point(n_random_points, 0, 1, seed, problem, query_penalty(seed)),
        }


# --------------------------------------------------------------------------------------------
# Does the optimizer care where on the orbit it starts?
# --------------------------------------------------------------------------------------------


def _moved_start_run(stiefel: bool, kind: str, draw: int, run: TrainingSetting) -> dict:
    with one_thread():
        model = make_model(stiefel, run.seed, run.problem)
        data = run.problem.data()
        attn = attention_modules(model)[0][1]
        H, r = attn.W_Q.shape[0], attn.W_Q.shape[-1]
        g = torch.Generator().manual_seed(run.seed + 500 + draw)
        if kind == "orthogonal":
            A = random_frame(r, r, H, generator=g, dtype=DTYPE)  # Haar-random R in O(r), one per head
        else:
            A = torch.linalg.matrix_exp(torch.randn(H, r, r, generator=g, dtype=DTYPE) / math.sqrt(r))  # in GL(r)
        if kind != "none":
            with torch.no_grad():
                W_Q, W_K = gl_action(attn.W_Q.detach(), attn.W_K.detach(), A)
                attn.W_Q.copy_(W_Q)
                attn.W_K.copy_(W_K)
        opt = run.optimizer(model)
        losses, frames, rest = [], [], []
        for step in range(run.steps + 1):
            loss = task_loss(model, data.train_x, data.train_y)
            losses.append(loss.item())
            frames.append(torch.stack([attn.W_Q.detach().clone(), attn.W_K.detach().clone()]))
            rest.append(
                torch.cat(
                    [
                        p.detach().reshape(-1)
                        for name, p in model.named_parameters()
                        if not name.endswith(("W_Q", "W_K"))
                    ]
                )
            )
            if step == run.steps:
                break
            opt.zero_grad()
            loss.backward()
            opt.step()
    return {
        "A": A if kind != "none" else torch.eye(r, dtype=DTYPE).expand(H, r, r).clone(),
        "loss": torch.tensor(losses, dtype=DTYPE),  # (steps + 1,)
        "frames": torch.stack(frames),  # (steps + 1, 2, H, d, r)
        "rest": torch.stack(rest),  # (steps + 1, n_rest)
    }


def moved_start_deviation(stiefel: bool, kind: str = "orthogonal", *, draw: int = 0, **setting) -> dict[str, Tensor]:
    """Train from a point moved along its gauge orbit, ``(W_Q A, W_K A⁻ᵀ)`` with a random ``A`` per
    head (``kind="orthogonal"``: Haar ``R`` in O(r), so frames stay frames; ``"gl"``: ``exp(X)``),
    and from the point itself; the same optimizer, data and seed (``setting``: the fields of
    :class:`TrainingSetting`). Per step (``steps + 1``): ``loss``,
    the loss deviation; ``frames``, the largest ``|W'_t - W_t A|`` and ``|W'_t - W_t A⁻ᵀ|`` entry (the
    moved run is the original one moved, when the optimizer is gauge-equivariant); ``rest``, the
    largest deviation of every other parameter.
    Chapter: gauge."""
    if kind not in GROUPS:
        raise ValueError(f"kind={kind!r}: choose one of {GROUPS}")
    run = TrainingSetting(**setting)
    return _moved_deviation(
        _moved_start_run(bool(stiefel), "none", 0, run), _moved_start_run(bool(stiefel), kind, int(draw), run)
    )


def moved_start_runs(*, n_draws: int = 2, **setting) -> dict:
    """Every run the gauge chapter's equivariance certificate and its figure read, each trained
    once (``setting``: the fields of :class:`TrainingSetting`): :func:`moved_start_deviation` for
    ``n_draws`` draws of StiefelAdam from ``(W_Q R, W_K R)`` (``"stiefel"``), AdamW from
    ``(W_Q R, W_K R)`` (``"euclidean"``) and from ``(W_Q A, W_K A⁻ᵀ)`` (``"euclidean_gl"``);
    ``"setting"`` holds the arguments."""
    run = TrainingSetting(**setting)
    out: dict = {"setting": {"n_draws": n_draws, **run.record()}}
    plain: dict[bool, dict] = {}  # the unmoved run of each optimizer, trained once (AdamW's serves both AdamW rows)
    for name, stiefel, kind in (
        ("stiefel", True, "orthogonal"),
        ("euclidean", False, "orthogonal"),
        ("euclidean_gl", False, "gl"),
    ):
        if stiefel not in plain:
            plain[stiefel] = _moved_start_run(stiefel, "none", 0, run)
        out[name] = [_moved_deviation(plain[stiefel], _moved_start_run(stiefel, kind, k, run)) for k in range(n_draws)]
    return out


def _moved_deviation(plain: dict, moved: dict) -> dict[str, Tensor]:
    A = moved["A"]
    W_Q, W_K = gl_action(plain["frames"][:, 0], plain["frames"][:, 1], A)  # the plain run, moved
    frames = torch.maximum(
        (moved["frames"][:, 0] - W_Q).abs().amax((-3, -2, -1)), (moved["frames"][:, 1] - W_K).abs().amax((-3, -2, -1))
    )
    return {
        "loss": (moved["loss"] - plain["loss"]).abs(),
        "frames": frames,
        "rest": (moved["rest"] - plain["rest"]).abs().amax(-1),
    }
