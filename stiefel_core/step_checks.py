"""Checks before an optimizer step touches anything: usable hyperparameters in every group,
finite gradients, frames still on the manifold, a loaded state that is finite and of the right
shapes; their errors name the parameter or group and say how to fix it, and nothing has changed
when they raise. ``StiefelAdam`` and ``CombinedOptimizer`` run :func:`check_hyperparameters` and
:func:`check_step` first at every step, and :func:`check_loaded_state` before ``load_state_dict``
loads anything. A leaf: it imports no optimizer (an optimizer whose parameters are frames says so
by ``holds_frames = True``, its options' allowed values by ``hyperparameter_choices``).
Chapter: use on your model."""

from __future__ import annotations

import math

import torch
from torch import Tensor
from torch.optim import Optimizer
from torch.optim.optimizer import register_optimizer_step_post_hook
from torch.utils.weak import WeakIdKeyDictionary

from .frames import is_frame
from .manifold import orthonormality_error
from .sharded import agree, local

__all__ = [
    "NonFiniteGradientError",
    "FrameOffManifoldError",
    "InvalidHyperparameterError",
    "InvalidOptimizerStateError",
    "check_step",
    "check_hyperparameters",
    "check_loaded_state",
    "watch_euclidean_steps",
    "ORTHONORMALITY_TOLERANCE",
    "orthonormality_tolerance",
]

ORTHONORMALITY_TOLERANCE = 1e-4


class NonFiniteGradientError(FloatingPointError):
    """A gradient holds inf or nan; nothing was updated."""


class FrameOffManifoldError(ValueError):
    """A frame left the Stiefel manifold after the optimizer was built; nothing was updated."""


def _param_name(group: dict, index: int, p: Tensor, group_index: int) -> str:
    names = group.get("param_names")
    if names:
        return f"'{names[index]}'"
    return f"param_groups[{group_index}]['params'][{index}] of shape {tuple(p.shape)}"


def orthonormality_tolerance(p: Tensor) -> float:
    """The largest ``‖WᵀW - I‖_F`` of a frame accepted as on the manifold: 1e-4, or what the
    parameter's dtype can hold (bfloat16 keeps 8 bits, so ``eps · r``)."""
    return max(ORTHONORMALITY_TOLERANCE, torch.finfo(p.dtype).eps * p.shape[-1])


def _drift_tolerance(p: Tensor) -> float:
    """How far ``‖WᵀW - I‖_F`` of a frame may drift between steps (rounding, low precision) before
    the check calls it off the manifold: four times ``√r`` the construction tolerance."""
    return 4 * p.shape[-1] ** 0.5 * orthonormality_tolerance(p)


class InvalidHyperparameterError(ValueError):
    """A param group holds a hyperparameter the step cannot use (set after construction by a
    scheduler or by hand, or loaded); nothing was updated."""


class InvalidOptimizerStateError(ValueError):
    """A state dict to load holds inf or nan, or tensors of the wrong shape; nothing was loaded."""


def _number(value) -> float | None:
    """``value`` as a float, for a Python number or a one-element CPU tensor; else None."""
    if isinstance(value, Tensor) and value.numel() == 1 and value.device.type == "cpu":
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def group_problems(group: dict, choices: dict | None = None) -> list[str]:
    """What is wrong with ``group``'s hyperparameters (host floats only: no synchronisation):
    ``lr``, ``eps`` and ``weight_decay`` finite and >= 0, ``betas`` in [0, 1), ``trust_radius``
    None or finite and > 0, each key of ``choices`` one of its allowed values. A tensor ``lr``
    on an accelerator is left alone (reading it would synchronise)."""
    problems = []
    for key in ("lr", "eps", "weight_decay"):
        value = group.get(key)
        if key in group and not (isinstance(value, Tensor) and value.device.type != "cpu"):
            x = _number(value)
            if x is None or not (math.isfinite(x) and x >= 0):
                problems.append(f"{key}={value!r} (a finite number >= 0)")
    if "betas" in group:
        betas = group["betas"]
        values = [_number(b) for b in betas] if isinstance(betas, (tuple, list)) and len(betas) == 2 else [None]
        if not all(b is not None and 0.0 <= b < 1.0 for b in values):
            problems.append(f"betas={betas!r} (two numbers in [0, 1))")
    if group.get("trust_radius") is not None:
        x = _number(group["trust_radius"])
        if x is None or not (math.isfinite(x) and x > 0):
            problems.append(f"trust_radius={group['trust_radius']!r} (a finite number > 0, or None)")
    for key, allowed in (choices or {}).items():
        if key in group and group[key] not in allowed:
            problems.append(f"{key}={group[key]!r} (one of {tuple(allowed)})")
    return problems


def check_hyperparameters(*optimizers: Optimizer) -> None:
    """Raise :class:`InvalidHyperparameterError` when a param group of ``optimizers`` holds a
    hyperparameter the next step cannot use (see :func:`group_problems`): a negative or infinite
    lr from a ``LambdaLR`` or from code that sets ``group["lr"]``, betas outside [0, 1), an unknown
    step rule. Scalar checks on the host, per group, at every step; nothing is changed."""
    for opt in optimizers:
        choices = getattr(opt, "hyperparameter_choices", None)
        for group_index, group in enumerate(opt.param_groups):
            problems = group_problems(group, choices)
            if problems:
                raise InvalidHyperparameterError(
                    f"{type(opt).__name__}: param_groups[{group_index}] holds {'; '.join(problems)}. A scheduler "
                    "(LambdaLR, ...) or code that writes the param group put it there after construction; no "
                    "parameter or optimizer state was changed."
                )


def _expected_shapes(optimizer: Optimizer, p: Tensor, group: dict) -> dict:
    shapes = getattr(optimizer, "state_shapes", None)
    if shapes is not None:
        return shapes(p, group)
    return {key: tuple(p.shape) for key in ("exp_avg", "exp_avg_sq", "max_exp_avg_sq", "momentum_buffer")}


def check_loaded_state(optimizer: Optimizer, state_dict: dict) -> None:
    """Before ``optimizer.load_state_dict(state_dict)`` changes anything: every saved group's
    hyperparameters usable (:func:`group_problems`), every state tensor finite, and the moments
    of the shapes this optimizer's parameters need. Raises :class:`InvalidOptimizerStateError`
    naming the parameter; a state dict whose groups do not match is left to torch's own error."""
    name = type(optimizer).__name__
    saved_groups = state_dict.get("param_groups", [])
    choices = getattr(optimizer, "hyperparameter_choices", None)
    problems = [
        f"param_groups[{i}]: {'; '.join(found)}"
        for i, g in enumerate(saved_groups)
        if (found := group_problems(g, choices))
    ]
    if len(saved_groups) == len(optimizer.param_groups) and all(
        len(s["params"]) == len(g["params"]) for s, g in zip(saved_groups, optimizer.param_groups)
    ):
        for group_index, (saved, group) in enumerate(zip(saved_groups, optimizer.param_groups)):
            for i, (saved_id, p) in enumerate(zip(saved["params"], group["params"])):
                expected = _expected_shapes(optimizer, p, {**group, **saved})
                for key, value in state_dict.get("state", {}).get(saved_id, {}).items():
                    where = f"the state of {_param_name(group, i, p, group_index)}: {key!r}"
                    if isinstance(value, Tensor):
                        v = local(value)
                        if v.is_floating_point() and not bool(torch.isfinite(v).all()):
                            problems.append(f"{where} holds inf or nan")
                        if key in expected and tuple(v.shape) != tuple(expected[key]):
                            problems.append(f"{where} has shape {tuple(v.shape)}, not {tuple(expected[key])}")
                    elif (x := _number(value)) is not None and not math.isfinite(x):
                        problems.append(f"{where} is {value!r}")
    params = [p for g in optimizer.param_groups for p in g["params"]]
    if bool(agree(torch.tensor(bool(problems)), params)):
        found = "; ".join(problems[:4]) if problems else "another rank found a problem in its shard (see its error)"
        raise InvalidOptimizerStateError(
            f"{name}.load_state_dict: {found}. Nothing was loaded: the optimizer's state is as it was. Load a "
            "checkpoint saved before the damage, or start the optimizer afresh."
        )


_EUCLIDEAN_STEPS = WeakIdKeyDictionary()  # frame -> the name of a Euclidean optimizer that stepped it
_WATCHING = []


def _note_euclidean_step(optimizer: Optimizer, args, kwargs) -> None:
    if getattr(optimizer, "holds_frames", False) or getattr(optimizer, "riemannian", False):
        return
    if hasattr(optimizer, "optimizers"):  # a container (CombinedOptimizer): its inner steps are seen
        return
    for group in optimizer.param_groups:
        for p in group["params"]:
            if is_frame(p) and p.grad is not None:
                _EUCLIDEAN_STEPS[p] = type(optimizer).__name__


def watch_euclidean_steps() -> None:
    """Start (once per process) noting the frames that an optimizer other than a frame optimizer
    (``AdamW`` given ``model.parameters()``) steps, so that the off-manifold error names it.
    A global step post-hook: a loop over the parameters of every such step, nothing more."""
    if not _WATCHING:
        _WATCHING.append(register_optimizer_step_post_hook(_note_euclidean_step))


@torch.no_grad()
def _frame_ok(p: Tensor) -> Tensor:
    """A boolean scalar: every local frame of ``p`` has ``‖WᵀW - I‖_F`` within the drift tolerance
    (false for nan). One ``r x r`` Gram matrix per frame, no host synchronisation."""
    W = local(p.detach())
    if not W.numel():
        return torch.ones((), dtype=torch.bool, device=W.device)
    return orthonormality_error(W).amax() <= _drift_tolerance(p)


@torch.no_grad()
def check_step(*optimizers: Optimizer) -> None:
    """Check, before any parameter changes, that the next ``step()`` of ``optimizers`` is safe:
    every gradient is finite, and every frame of an optimizer that holds frames (``holds_frames``:
    :class:`~stiefel_core.optim.StiefelAdam`) still has ``WᵀW = I`` (to rounding, within
    :func:`_drift_tolerance`), which a frame rescaled, re-initialised, skewed or stepped by a
    Euclidean optimizer after the optimizer was built does not. One host synchronisation for all of
    them, so a combined step is never partial; under FSDP2 the verdict is all-reduced, so every
    rank raises or none. Raises :class:`FrameOffManifoldError` or :class:`NonFiniteGradientError`,
    naming the parameter (frame or not)."""
    entries, grad_probes, frame_probes, params = [], [], [], []
    device = None
    for opt in optimizers:
        stiefel = getattr(opt, "holds_frames", False)
        for group_index, group in enumerate(opt.param_groups):
            for i, p in enumerate(group["params"]):
                if p.grad is None:
                    continue
                grad = local(p.grad)
                device = device or grad.device
                entries.append((opt, group, group_index, i, p, stiefel))
                params.append(p)
                grad_probes.append(grad.sum(dtype=torch.float32).to(device))  # inf or nan propagate
                if stiefel:
                    frame_probes.append(_frame_ok(p).to(device))
    if not entries:
        return
    bad = torch.stack(
        [
            ~torch.isfinite(torch.stack(grad_probes)).all(),
            ~torch.stack(frame_probes).all() if frame_probes else torch.zeros((), dtype=torch.bool, device=device),
        ]
    )
    grads_bad, frames_bad = (bool(x) for x in agree(bad, params))
    if not (grads_bad or frames_bad):
        return
    culprits, half = [], False
    for opt, group, group_index, i, p, stiefel in entries:  # the slow path, only on failure
        owner, name = type(opt).__name__, _param_name(group, i, p, group_index)
        if stiefel and not bool(_frame_ok(p)):
            W = local(p.detach())
            error = orthonormality_error(W).max().item()
            stepper = _EUCLIDEAN_STEPS.get(p)
            cause = (
                f"{stepper}, a Euclidean optimizer, stepped it: give frames to StiefelAdam only "
                "(stiefel_core.configure_optimizer(model) routes them; or leave them out of the other optimizer's "
                "params with `[p for p in model.parameters() if not stiefel_core.is_frame(p)]`)"
                if stepper
                else "something wrote to it outside the optimizer (model.apply(init), scaling, noise, loading "
                "other weights, a Euclidean optimizer given the frames)"
            )
            raise FrameOffManifoldError(
                f"{owner}: frame {name} has left the Stiefel manifold since the optimizer was built "
                f"(max ‖WᵀW - I‖_F = {error:.3g}): {cause}. No parameter or optimizer "
                "state was changed. Put it back with `with torch.no_grad(): p.copy_("
                "stiefel_core.manifold.orthonormalize(p))`, or build the optimizer with "
                "check_finite=False to let the retraction re-project it."
            )
        if not bool(torch.isfinite(local(p.grad)).all()):
            culprits.append(f"{'frame' if stiefel else 'parameter'} {name}")
            half = half or torch.float16 in (p.dtype, p.grad.dtype)
    owners = " + ".join(dict.fromkeys(type(o).__name__ for o in optimizers))
    if frames_bad and not culprits:
        raise FrameOffManifoldError(
            f"{owners}: on another rank a frame has left the Stiefel manifold (see that rank's error); no "
            "parameter or optimizer state was changed."
        )
    if not culprits:
        raise NonFiniteGradientError(
            f"{owners}: on another rank a gradient holds inf or nan (see that rank's error); no parameter or "
            "optimizer state was changed."
        )
    which = f"gradient of {culprits[0]} holds" if len(culprits) == 1 else f"gradients of {', '.join(culprits)} hold"
    hint = "; in float16 the backward pass overflows easily: use torch.amp.GradScaler, or bfloat16" if half else ""
    raise NonFiniteGradientError(
        f"{owners}: the {which} inf or nan; no "
        "parameter or optimizer state was changed. Lower the learning rate, check the loss for "
        f"overflow, or clip gradients upstream{hint}."
    )
