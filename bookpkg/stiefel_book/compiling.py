"""Whether the experiments' training forward runs under ``torch.compile``, and compiling it.

The policy (``STIEFEL_COMPILE``: ``1``, ``0`` or ``auto``, the default): on CUDA compile; on the
CPU train eagerly, where ``benchmarks/train_throughput.py`` measures what compiling gains on this
book's small models against its compile time. Where compiling is asked for and the machine
lacks what inductor needs (a C++ compiler on the CPU, Triton on CUDA), training runs eagerly
after a one-line notice. Chapters: every experiment's run.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import warnings

import torch
from torch import nn

__all__ = ["compile_wanted", "compiler_missing", "compile_model"]

CHOICES = ("1", "0", "auto")


def compile_wanted(device: torch.device | str, requested: bool | None = None) -> bool:
    """``requested`` if given, else ``$STIEFEL_COMPILE``: ``auto`` compiles on CUDA only."""
    if requested is not None:
        return bool(requested)
    choice = os.environ.get("STIEFEL_COMPILE", "auto").strip().lower() or "auto"
    if choice not in CHOICES:
        raise ValueError(f"STIEFEL_COMPILE={choice!r}: use 1 (compile), 0 (eager) or auto (compile on CUDA only)")
    if choice == "auto":
        return torch.device(device).type == "cuda"
    return choice == "1"


def compiler_missing(device: torch.device | str) -> str | None:
    """What inductor needs on ``device`` and this machine lacks, or ``None``."""
    if torch.device(device).type == "cuda":
        return None if importlib.util.find_spec("triton") else "Triton (pip install triton)"
    compiler = os.environ.get("CXX", "g++")
    return None if shutil.which(compiler) else f"a C++ compiler ({compiler!r} is not on PATH; install g++ or set CXX)"


@functools.lru_cache(maxsize=None)
def _notice(missing: str) -> None:  # once per process
    warnings.warn(f"torch.compile needs {missing}: training eagerly instead", RuntimeWarning, stacklevel=3)


def compile_model(
    model: nn.Module, device: torch.device | str, requested: bool | None = None
) -> tuple[nn.Module, bool]:
    """``(forward, compiled)``: ``torch.compile(model)`` when :func:`compile_wanted` and the
    machine can, else ``model`` itself. The compiled module shares ``model``'s parameters, so the
    optimizer, checkpoints and evaluation use ``model`` as before."""
    if not compile_wanted(device, requested):
        return model, False
    missing = compiler_missing(device)
    if missing:
        _notice(missing)
        return model, False
    return torch.compile(model), True
