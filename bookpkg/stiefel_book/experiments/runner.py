"""The registry of named experiments (each experiment module's ``ENTRIES``, collected) and their
runner: every arm x seed not yet in the results file, resumable, sharded under torchrun (see
:mod:`stiefel_book.experiments`)."""

from __future__ import annotations

import dataclasses
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch

from ..results import (
    checkpoints_dir,
    code_commit,
    json_safe,
    load_results,
    locked,
    provenance,
    refuse_install_folder,
    results_path,
    write_results,
)
from ..results_reading import run_key, without_seeds
from ..train import Interrupted, load_checkpoint, pick_device, stop_requested
from . import (
    ablation,
    charlm_gpu,
    cifar10,
    cifar10_fair,
    cifar10_size,
    cifar10_val,
    decay_map_sweep,
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
from .registry import PROFILES, Experiment, UnknownNameError, collect, stored_config

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


def _as_json(config) -> dict:
    return json_safe(stored_config(config))


def _checkpoint_progress(path: Path) -> tuple[int, float]:
    """The epoch a run will resume from and the seconds it has trained so far (0, 0 without a
    checkpoint, or with a damaged one: :func:`train.load_checkpoint` moves it aside)."""
    state = load_checkpoint(path)
    if state is None:
        return 0, 0.0
    return int(state["epoch"]), float(state.get("elapsed", 0.0))


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
    """Run every (arm, seed) of an experiment that its results file does not hold yet.

    After each finished run the file is rewritten (under a lock, atomically), so an interrupted
    sweep loses no finished run; an unfinished one resumes from its checkpoint. ``directory``
    and ``checkpoints`` are the results and checkpoint folders (default
    :func:`results.results_dir` and :func:`results.checkpoints_dir`). ``report`` (the command
    line's) hears "run k of N" with an estimate of the time left before each run. Under
    :func:`stiefel_book.train.stop_on_interrupt`, Ctrl-C saves the run in progress at the end of
    its epoch (or lets it finish on its last) and raises :class:`stiefel_book.train.Interrupted`.
    Chapters: grokking, cifar10_patches, ablation, regimes.
    """
    code_commit()  # the commit of the code this process runs, fixed before its first run trains
    experiment = _experiment(name)
    profile = profile or default_profile()
    config = config or get_config(name, profile)
    if experiment.resolve is not None:  # settings chosen from earlier results, fixed before the runs
        config = experiment.resolve(config, directory)
    arms = list(arms or experiment.default_arms(config))
    if seeds is None:  # under torchrun, each process takes its share of the seeds
        world, rank = int(os.environ.get("WORLD_SIZE", 1)), int(os.environ.get("RANK", 0))
        seeds = list(config.seeds)[rank::world]
    for arm in arms:
        if arm not in experiment.arms + experiment.optional_arms:
            raise UnknownNameError(f"unknown arm {arm!r}; {name} has {experiment.arms + experiment.optional_arms}")
    path = results_path(name, profile, directory)
    header = {"experiment": name, "profile": profile, "config": _as_json(config)}
    existing = load_results(name, profile, directory)
    if existing is not None and without_seeds(existing.get("config", {})) != without_seeds(header["config"]):
        raise ValueError(
            f"{path} holds runs of another configuration; move it away (or pass another directory) "
            "before running this one, so that results of two configurations never mix."
        )
    dev = pick_device(device)
    refuse_install_folder(path)
    checkpoints = refuse_install_folder(checkpoints_dir(checkpoints) / f"{name}-{profile}")
    finished = set((existing or {"runs": {}})["runs"])
    pending = [run_key(arm, seed) for seed in seeds for arm in arms if run_key(arm, seed) not in finished]
    durations: list[float] = []  # seconds of each run this call trained, for the estimate
    for seed in seeds:
        for arm in arms:
            key = run_key(arm, seed)
            done = load_results(name, profile, directory)
            if done is not None and key in done["runs"]:
                continue
            if stop_requested():  # Ctrl-C after the last run finished: stop before the next
                raise Interrupted()
            if report is not None and key in pending:
                report(_progress(name, key, pending.index(key) + 1, len(pending), durations))
            began = time.perf_counter()
            adopted = experiment.adopt(config, arm, seed, directory) if experiment.adopt else None
            if adopted is not None:  # the same computation, already run: its record, and where it came from
                outcome, source = adopted
                outcome["provenance"] = {**outcome.get("provenance", {}), "adopted_from": source}
            else:
                checkpoint = checkpoints / f"{arm}-{seed}.pt"
                (resumed, trained), start = _checkpoint_progress(checkpoint), time.perf_counter()
                outcome = experiment.run(config, arm, seed, dev, checkpoint, progress)
                outcome["provenance"] = provenance(
                    dev, trained + time.perf_counter() - start, resumed_from_epoch=resumed
                )
                outcome["provenance"]["compiled"] = bool(outcome.pop("compiled", False))  # the training forward's path
                durations.append(time.perf_counter() - began)
            with locked(path):
                results = load_results(name, profile, directory) or {**header, "runs": {}}
                seeds_asked = set(results["config"].get("seeds", [])) | set(header["config"].get("seeds", []))
                results["config"] = {**header["config"], "seeds": sorted(seeds_asked)}  # a grown profile
                results["runs"][key] = outcome
                write_results(results, path)
    return load_results(name, profile, directory)


def _progress(name: str, key: str, k: int, n: int, durations: list[float]) -> str:
    """``run k of N`` of ``name`` with the time left, estimated from the runs this call trained."""
    line = f"{name}: run {k} of {n} ({key})"
    if durations:
        left = sum(durations) / len(durations) * (n - k + 1)
        line += f"; about {_duration(left)} left ({len(durations)} run{'s' if len(durations) > 1 else ''} so far)"
    return line


def _duration(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min {secs:02d} s" if minutes else f"{secs} s"


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
