"""The catalogue of named experiments (each experiment module's ``ENTRIES``, collected), found by name and
run by the engine (:func:`stiefel_book.engine.run.run`): every arm x seed not yet in the results file,
resumable, sharded under torchrun (see :mod:`stiefel_book.experiments`)."""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import torch

from ..engine import run as engine
from ..engine.registry import PROFILES, Experiment, UnknownNameError, collect
from . import (
    ablation,
    charlm_gpu,
    cifar10,
    cifar10_fair,
    cifar10_size,
    cifar10_val,
    decay_map_sweep,
    decay_sensitivity,
    fair_fight,
    grokking,
    lr_sensitivity,
    maps,
    p97_fair,
    peers,
    routing_judged,
    routing_qk_temp,
    routing_sweep,
)

__all__ = [
    "EXPERIMENTS",
    "default_profile",
    "get_config",
    "run_experiment",
    "run_live",
]

EXPERIMENTS = collect(
    grokking,
    cifar10,
    maps.LONG_ENTRIES,
    cifar10_size,
    ablation,
    maps.DECAY_MAP_ENTRIES,
    decay_map_sweep,
    maps.TRUST_REGION_ENTRIES,
    peers,
    fair_fight,
    cifar10_fair,
    cifar10_val,
    p97_fair,
    lr_sensitivity,
    decay_sensitivity,
    routing_judged.ENTRIES_2X2,
    charlm_gpu,
    routing_qk_temp,
    routing_qk_temp.TUNED_ENTRIES,
    extra=(*routing_judged.ENTRIES, *maps.INDUCTION_ENTRIES, *routing_sweep.ENTRIES),
)


def default_profile() -> str:
    """``$STIEFEL_PROFILE``; unset, ``full`` with CUDA and ``ci`` without.
    Chapters: grokking, cifar10_patches, ablation, regimes."""
    profile = os.environ.get("STIEFEL_PROFILE") or ("full" if torch.cuda.is_available() else "ci")
    if profile not in PROFILES:
        raise ValueError(f"STIEFEL_PROFILE={profile!r}: choose one of {PROFILES}")
    return profile


def _experiment(name: str) -> Experiment:
    if name not in EXPERIMENTS:
        raise UnknownNameError(f"unknown experiment {name!r}; choose one of {sorted(EXPERIMENTS)}")
    return EXPERIMENTS[name]


def get_config(name: str, profile: str | None = None, **overrides):
    """The configuration of experiment ``name`` under ``profile``, with ``overrides`` applied.
    Chapters: grokking, cifar10_patches, ablation, regimes."""
    profile = profile or default_profile()
    experiment = _experiment(name)
    if profile not in experiment.profiles:
        raise UnknownNameError(f"unknown profile {profile!r}; choose one of {PROFILES}")
    return dataclasses.replace(experiment.profiles[profile], **overrides)


_as_json = engine.as_json  # a config as its results file stores it


def run_experiment(
    name: str,
    profile: str | None = None,
    *,
    arms: list[str] | None = None,
    seeds: list[int] | None = None,
    device: str | None = None,
    directory: Path | None = None,
    progress: bool = True,
    config=None,
    checkpoints: Path | None = None,
    report: Callable[[str], None] | None = None,
) -> dict:
    """Run every (arm, seed) of experiment ``name`` at ``profile`` (default :func:`default_profile`) that its results
    file does not hold yet, by the engine (:func:`stiefel_book.engine.run.run`: resumable, each finished run kept at
    once; Ctrl-C under :func:`stiefel_book.train.stop_on_interrupt` saves the run in progress). Chapters: grokking,
    cifar10_patches, ablation, regimes."""
    experiment = _experiment(name)
    profile = profile or default_profile()
    config = config or get_config(name, profile)
    options = dict(arms=arms, seeds=seeds, device=device, directory=directory, progress=progress)
    return engine.run(experiment, profile, config, checkpoints=checkpoints, report=report, **options)


def run_live(name: str, profile: str, **options) -> dict:
    """A chapter's live run of experiment ``name`` (every chapter that runs one): under the
    ``full`` profile it resumes the committed results file; under any other it runs in a fresh
    temporary folder, so a page's small run never writes beside the book. ``options`` go to
    :func:`run_experiment` (no progress bars unless asked)."""
    options.setdefault("progress", False)
    if profile == "full":
        return run_experiment(name, "full", **options)
    folder = Path(tempfile.mkdtemp(prefix=f"{name}-{profile}-"))
    return run_experiment(name, profile, directory=folder, checkpoints=folder / "checkpoints", **options)
