"""One optimizer for a whole model: frames to ``StiefelAdam``, everything else to ``AdamW``.

:class:`CombinedOptimizer` puts several optimizers behind one complete ``torch.optim``
interface, and :func:`configure_optimizer` builds it from a model, as nanoGPT's
``configure_optimizers`` routes decay groups. The top of the optimizer's chain (``step_checks``
-> ``optim`` -> ``combined``); ``stiefel_core`` exports both.
"""

from __future__ import annotations

import fnmatch
from collections import OrderedDict
from typing import Callable, Iterable

import torch
from torch import Tensor, nn
from torch.optim import Optimizer

from .frame_steps import evaluate_closure
from .frames import declared_frames, is_frame, retag_frames
from .manifold_muon import ManifoldMuon
from .optim import StiefelAdam
from .step_checks import check_hyperparameters, check_loaded_state, check_step

__all__ = ["CombinedOptimizer", "split_frames", "configure_optimizer", "FRAME_OPTIMIZERS"]

FRAME_OPTIMIZERS = ("stiefel_adam", "manifold_muon")  # configure_optimizer's choices for the frames


class CombinedOptimizer(Optimizer):
    """Several optimizers behind one ``step()``, ``zero_grad()`` and ``state_dict()``.

    It is a complete ``torch.optim.Optimizer``:

    - ``param_groups`` is the concatenation of the inner optimizers' groups (the same dicts), so
      LR schedulers drive every group; ``defaults`` holds the settings every inner optimizer has
      (``lr``, ``betas``, ...), which schedulers read (``OneCycleLR`` cycles ``betas[0]``);
    - step pre and post hooks (``register_step_pre_hook``, the global ones) and state-dict hooks
      fire; ``state_dict()`` and ``load_state_dict()`` round-trip every inner optimizer;
    - every step first checks every group's hyperparameters
      (:func:`~stiefel_core.step_checks.check_hyperparameters`); with ``check_finite`` (default),
      one :func:`~stiefel_core.step_checks.check_step` over *all* inner optimizers runs before any
      parameter changes, so a step is never partial: a non-finite gradient anywhere, or a frame
      that left the manifold, raises a named error first; ``load_state_dict`` checks every inner
      state (:func:`~stiefel_core.step_checks.check_loaded_state`) before it loads any.

    A closure is evaluated once per step. Under ``torch.compile`` the step runs eagerly.
    Chapter: use_on_your_model.
    """

    def __init__(self, *optimizers: Optimizer, check_finite: bool = True):
        if not optimizers:
            raise ValueError("CombinedOptimizer needs at least one optimizer")
        self.optimizers = list(optimizers)
        self.check_finite = check_finite
        first, *others = optimizers
        self.defaults = {k: v for k, v in first.defaults.items() if all(k in o.defaults for o in others)}
        for hooks in (
            "step_pre",
            "step_post",
            "state_dict_pre",
            "state_dict_post",
            "load_state_dict_pre",
            "load_state_dict_post",
        ):
            setattr(self, f"_optimizer_{hooks}_hooks", OrderedDict())
        self._patch_step_function()  # step hooks, as Optimizer.__init__ does
        self._warned_capturable_if_run_uncaptured = True

    @property
    def param_groups(self) -> list[dict]:
        return [g for opt in self.optimizers for g in opt.param_groups]

    @property
    def state(self) -> dict:
        return {p: s for opt in self.optimizers for p, s in opt.state.items()}

    def __getstate__(self):
        return {"optimizers": self.optimizers, "defaults": self.defaults, "check_finite": self.check_finite}

    def __repr__(self) -> str:
        inner = ",\n".join("  " + repr(opt).replace("\n", "\n  ") for opt in self.optimizers)
        return f"CombinedOptimizer(\n{inner}\n)"

    @torch.compiler.disable  # runs eagerly under torch.compile, as StiefelAdam.step does
    @torch.no_grad()
    def step(self, closure: Callable[[], Tensor] | None = None):
        loss = evaluate_closure(closure)
        check_hyperparameters(*self.optimizers)
        if self.check_finite:
            check_step(*self.optimizers)
        for opt in self.optimizers:
            if isinstance(opt, (StiefelAdam, ManifoldMuon)):
                opt.step(checked=True)  # the check is this optimizer's: above, over every optimizer at once
            else:
                opt.step()
        return loss

    def zero_grad(self, set_to_none: bool = True) -> None:
        for opt in self.optimizers:
            opt.zero_grad(set_to_none=set_to_none)

    def state_dict(self) -> dict:
        for hook in self._optimizer_state_dict_pre_hooks.values():
            hook(self)
        state = {"optimizers": [opt.state_dict() for opt in self.optimizers]}
        for hook in self._optimizer_state_dict_post_hooks.values():
            state = hook(self, state) or state
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        for hook in self._optimizer_load_state_dict_pre_hooks.values():
            state_dict = hook(self, state_dict) or state_dict
        saved = state_dict["optimizers"]
        if len(saved) != len(self.optimizers):
            raise ValueError(
                f"state_dict holds {len(saved)} optimizers; this CombinedOptimizer has {len(self.optimizers)}"
            )
        for opt, s in zip(self.optimizers, saved):  # all checked before any loads: a load is never partial
            check_loaded_state(opt, s)
        for opt, s in zip(self.optimizers, saved):
            opt.load_state_dict(s)
        for hook in self._optimizer_load_state_dict_post_hooks.values():
            hook(self)

    def add_param_group(self, param_group: dict) -> None:
        """Add a group to the inner ``StiefelAdam`` when all its parameters are frames, else to the
        first other inner optimizer."""
        params = param_group["params"]
        params = [params] if isinstance(params, Tensor) else list(params)
        tensors = [p[1] if isinstance(p, tuple) else p for p in params]
        frames = [is_frame(p) for p in tensors]
        if any(frames) and not all(frames):
            raise TypeError(
                "CombinedOptimizer.add_param_group: a group mixes frames and other parameters; add them as two groups"
            )
        for opt in self.optimizers:
            if isinstance(opt, (StiefelAdam, ManifoldMuon)) == all(frames):
                opt.add_param_group({**param_group, "params": params})
                return
        raise TypeError(
            "CombinedOptimizer.add_param_group: no inner optimizer takes these parameters; add them to one of "
            ".optimizers"
        )


def _refuse_fused_frames(model: nn.Module) -> None:
    for name, module in model.named_modules():
        if isinstance(module, nn.MultiheadAttention):
            for attr in ("in_proj_weight", "v_proj_weight"):
                if is_frame(module._parameters.get(attr)):
                    raise ValueError(
                        f"configure_optimizer: {name or 'the model'}.{attr} is a FrameParameter, but it holds "
                        f"{'Q, K and V together' if attr == 'in_proj_weight' else 'V'}: as one frame it would "
                        "constrain V too and mix the heads. Use stiefel_core.stiefelize(model), which makes "
                        "per-head frames of Q and K only."
                    )


def split_frames(
    model: nn.Module, frames: str | Iterable[str] | None = None
) -> tuple[list[tuple[str, nn.Parameter]], list[tuple[str, nn.Parameter]]]:
    """``(frames, rest)``: the model's trainable named parameters, frames first.

    Frames are the :class:`FrameParameter` s, the parameters their modules declared as frames
    (:func:`~stiefel_core.frames.declare_frames`), and those whose names match the shell-style
    pattern(s) ``frames`` (``"*.attn.W_Q"``). A declared frame that lost its tag is tagged again,
    with a :class:`~stiefel_core.frames.FrameTagWarning`: it never falls to the other optimizer.
    A frame sharded by FSDP2's ``fully_shard`` (a ``DTensor``, whose class FSDP does not keep) is
    found by its declared name and left as FSDP made it.
    Chapter: use_on_your_model.
    """
    retag_frames(model, warn=True)
    _refuse_fused_frames(model)
    patterns = [frames] if isinstance(frames, str) else list(frames or ())
    named = [(name, p) for name, p in model.named_parameters() if p.requires_grad]
    unmatched = [pat for pat in patterns if not any(fnmatch.fnmatchcase(name, pat) for name, _ in named)]
    if unmatched:
        raise ValueError(
            f"split_frames: patterns {unmatched} match no trainable parameter; names are {[n for n, _ in named]}"
        )
    declared = {f"{prefix}.{n}" if prefix else n for prefix, m in model.named_modules() for n in declared_frames(m)}
    chosen, rest = [], []
    for name, p in named:
        selected = is_frame(p) or name in declared or any(fnmatch.fnmatchcase(name, pat) for pat in patterns)
        (chosen if selected else rest).append((name, p))
    return chosen, rest


def configure_optimizer(
    model: nn.Module,
    lr: float = 1e-3,
    weight_decay: float = 0.0,
    betas: tuple[float, float] = (0.9, 0.999),
    eps: float = 1e-8,
    *,
    frame_lr: float | None = None,
    no_decay: Iterable[str] = (),
    frames: str | Iterable[str] | None = None,
    foreach: bool | None = True,
    frame_optimizer: str = "stiefel_adam",
    maximize: bool = False,
    **stiefel_options,
) -> Optimizer:
    """One optimizer for a whole model: :class:`FrameParameter` s to :class:`StiefelAdam`, every
    other trainable parameter to ``AdamW`` with decoupled ``weight_decay``.

    ``frame_lr`` (default ``lr``) and ``stiefel_options`` (``trust_radius``, ``step_rule``,
    ``check_finite``, ...) go to ``StiefelAdam``. ``frames`` selects more frames by name pattern
    (see :func:`split_frames`). ``no_decay`` names non-frame parameters (as ``named_parameters``
    spells them) that AdamW trains without weight decay, in a group of their own. Frozen
    parameters (``requires_grad=False``) are left out; float16 non-frame parameters are refused
    (AdamW's state underflows there: use autocast with a GradScaler, or bfloat16). With no
    frames this is plain ``AdamW``;
    with no other parameters, plain ``StiefelAdam``; with both, a :class:`CombinedOptimizer`.
    ``foreach`` goes to AdamW: its multi-tensor path, which torch picks by itself on CUDA only, is
    on by default here (on the CPU it is the same update in fewer kernels; ``None``: torch's choice).
    ``frame_optimizer="manifold_muon"`` trains the frames with :class:`ManifoldMuon` instead (at
    ``frame_lr``, its spectral step; ``stiefel_options`` are then its own: ``momentum``,
    ``dual_steps``, ``check_finite``, ...; ``betas`` and ``eps`` go to AdamW only).
    ``maximize`` goes to both. Gradient clipping leaves the frames' steps as they are (scale
    free: only ``trust_radius`` caps them); a scheduler given one rate (``OneCycleLR(max_lr=x)``)
    overrides ``frame_lr``: give one per group (see :class:`StiefelAdam`).
    Chapter: use_on_your_model.
    """
    if frame_optimizer not in FRAME_OPTIMIZERS:
        raise ValueError(f"configure_optimizer: frame_optimizer={frame_optimizer!r}; choose one of {FRAME_OPTIMIZERS}")
    chosen, rest = split_frames(model, frames)
    exempt = set(no_decay)
    unknown = exempt - {name for name, _ in rest}
    if unknown:
        raise ValueError(
            f"configure_optimizer: no_decay names {sorted(unknown)}, which are not trainable non-frame "
            f"parameters of the model; choose among {[name for name, _ in rest]}"
        )
    half = [name for name, p in rest if p.dtype == torch.float16]
    if half:
        raise ValueError(
            f"configure_optimizer: {half[:4]}{' ...' if len(half) > 4 else ''} are float16. AdamW cannot train "
            "float16 parameters: its second moment underflows (g² < 6e-8 is 0, and eps = 1e-8 is 0 in float16), "
            "so its first steps write inf and nan even with finite gradients. Keep the parameters in float32 "
            "and train under torch.autocast(device_type, dtype=torch.float16) with torch.amp.GradScaler, or use "
            "bfloat16. (StiefelAdam computes in float32 and accepts float16 frames.)"
        )
    optimizers: list[Optimizer] = []
    if chosen and frame_optimizer == "manifold_muon":
        optimizers.append(ManifoldMuon(chosen, lr=lr if frame_lr is None else frame_lr, **stiefel_options))
    elif chosen:
        optimizers.append(
            StiefelAdam(
                chosen,
                lr=lr if frame_lr is None else frame_lr,
                betas=betas,
                eps=eps,
                maximize=maximize,
                **stiefel_options,
            )
        )
    if rest:
        decayed = [(name, p) for name, p in rest if name not in exempt]
        groups = [{"params": decayed, "weight_decay": weight_decay}] if decayed else []
        if exempt:
            groups.append({"params": [(name, p) for name, p in rest if name in exempt], "weight_decay": 0.0})
        optimizers.append(
            torch.optim.AdamW(
                groups, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach, maximize=maximize
            )
        )
    if not optimizers:
        raise ValueError("configure_optimizer: the model has no trainable parameters")
    if len(optimizers) == 1:
        return optimizers[0]
    return CombinedOptimizer(*optimizers, check_finite=stiefel_options.get("check_finite", True))
