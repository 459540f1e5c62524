"""The frame tag: which parameters are Stiefel frames, kept so that it cannot be lost silently.

A frame is tagged twice. The parameter itself is a :class:`FrameParameter` (an ``nn.Parameter``
subclass that survives ``pickle``, ``torch.save(model)`` and ``deepcopy``), and the module
that owns it *declares* the name with :func:`declare_frames`. The declaration is a plain module
attribute, so it survives everything that replaces a parameter object by a plain
``nn.Parameter`` (``load_state_dict(assign=True)``, ``to_empty()``, reassignment): after
``load_state_dict`` the tag is restored by a hook, and :func:`retag_frames` (which
``configure_optimizer`` calls, with a warning) restores it everywhere else. A declared frame is
therefore never silently trained by AdamW.
"""

from __future__ import annotations

import warnings

import torch
from torch import Tensor, nn

from .manifold import check_frame_shape
from .sharded import is_sharded

__all__ = ["FrameParameter", "is_frame", "declare_frames", "declared_frames", "retag_frames", "FrameTagWarning"]

DECLARED = "_stiefel_frames"  # the module attribute holding the declared names


class FrameTagWarning(UserWarning):
    """A declared frame held a plain ``nn.Parameter``; it was re-tagged. Chapter: use_on_your_model."""


class FrameParameter(nn.Parameter):
    """An ``nn.Parameter`` whose trailing ``(d, r)`` matrices are frames on St(d, r).

    The tag is what :func:`~stiefel_core.combined.split_frames` routes to
    :class:`~stiefel_core.optim.StiefelAdam`. A bank of frames of one shape is one parameter of
    shape ``(n_frames, d, r)``: it is stepped in one kernel. The class survives ``pickle``,
    ``torch.save(model)`` and ``copy.deepcopy``.
    Chapter: use_on_your_model.
    """

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True):
        if data is not None:
            check_frame_shape(data.shape, "FrameParameter")
        return super().__new__(cls, data, requires_grad)

    def __reduce_ex__(self, protocol):  # nn.Parameter's rebuilds a plain Parameter: the tag would be lost
        return (_rebuild_frame_parameter, (self.data, self.requires_grad, torch._utils._get_obj_state(self)))

    def __repr__(self) -> str:
        return "FrameParameter containing:\n" + super().__repr__().split("\n", 1)[-1]


def _rebuild_frame_parameter(data: Tensor, requires_grad: bool, state=None) -> FrameParameter:
    p = FrameParameter(data, requires_grad)
    if state:  # attributes set on the parameter, as nn.Parameter keeps them
        torch._utils._set_obj_state(p, state)
    return p


def is_frame(p: Tensor) -> bool:
    """True for parameters created as :class:`FrameParameter`. Chapter: use_on_your_model."""
    return isinstance(p, FrameParameter)


def declare_frames(module: nn.Module, *names: str) -> None:
    """Record that ``module``'s parameters ``names`` are frames (and tag them now).

    The record outlives the parameter objects: see the module docstring.
    Chapter: use_on_your_model."""
    for name in names:
        p = module._parameters.get(name)
        if p is None:
            raise ValueError(f"declare_frames: {type(module).__name__} has no parameter {name!r}")
        if not is_frame(p):
            module._parameters[name] = FrameParameter(p.data, p.requires_grad)
    setattr(module, DECLARED, tuple(dict.fromkeys((*getattr(module, DECLARED, ()), *names))))
    if not getattr(module, "_stiefel_retag_hook", False):
        module.register_load_state_dict_post_hook(_retag_after_load)
        module._stiefel_retag_hook = True


def declared_frames(module: nn.Module) -> tuple[str, ...]:
    """The parameter names ``module`` declared as frames (its own, not its children's). Chapter: use_on_your_model."""
    return getattr(module, DECLARED, ())


def _retag(module: nn.Module) -> list[str]:
    retagged = []
    for name in declared_frames(module):
        p = module._parameters.get(name)
        if p is not None and not is_frame(p) and not is_sharded(p):  # FSDP2's own parameter: found by name
            module._parameters[name] = FrameParameter(p.data, p.requires_grad)
            retagged.append(name)
    return retagged


def _retag_after_load(module: nn.Module, incompatible_keys) -> None:
    _retag(module)  # load_state_dict(assign=True) put plain Parameters in; the declaration restores the tag


def retag_frames(model: nn.Module, *, warn: bool = False) -> list[str]:
    """Tag again every declared frame of ``model`` that holds a plain ``nn.Parameter``; return their
    names. Call it after ``to_empty()`` or any reassignment of a frame. Parameter objects are
    replaced (sharing data), so build optimizers afterwards.
    Chapter: use_on_your_model."""
    names = [f"{prefix}.{n}" if prefix else n for prefix, m in model.named_modules() for n in _retag(m)]
    if names and warn:
        warnings.warn(
            f"frames {names} were declared as frames but held plain nn.Parameters (the tag is lost by "
            "to_empty(), by assigning a new Parameter, ...). They were tagged again and go to StiefelAdam; "
            "call stiefel_core.retag_frames(model) after such operations to silence this warning.",
            FrameTagWarning,
            stacklevel=3,
        )
    return names


@torch.no_grad()
def frame_norm_deviation(p: Tensor) -> Tensor:
    """``max_frames |‖W‖²_F - r|``: zero on the manifold; one elementwise pass, no host sync.
    Chapter: use_on_your_model."""
    r = p.shape[-1]
    dtype = torch.float64 if p.dtype == torch.float64 else torch.float32
    sq = torch.linalg.vector_norm(p.detach(), dim=(-2, -1), dtype=dtype).square()  # (...,)
    return (sq - r).abs().amax() if sq.numel() else sq.new_zeros(())
