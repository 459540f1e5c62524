"""The runner of an :class:`~.registry.Experiment`: every arm x seed its results file does not hold yet,
each finished run written at once (under a lock, atomically), an unfinished one resumed from its
checkpoint, runs another file already holds adopted, sharded under torchrun. The catalogue of named
experiments (:mod:`stiefel_book.experiments.runner`) finds an experiment by name and runs it here."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

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
from ..results_reading import run_key, shared_config
from ..train import Interrupted, load_checkpoint, pick_device, stop_requested
from .registry import Experiment, UnknownNameError, stored_config

__all__ = ["run", "as_json"]


def as_json(config) -> dict:
    """``config`` as its results file's header stores it."""
    return json_safe(stored_config(config))


def _checkpoint_progress(path: Path) -> tuple[int, float]:
    """The epoch a run will resume from and the seconds it has trained so far (0, 0 without a
    checkpoint, or with a damaged one: :func:`train.load_checkpoint` moves it aside)."""
    state = load_checkpoint(path)
    if state is None:
        return 0, 0.0
    return int(state["epoch"]), float(state.get("elapsed", 0.0))


def run(
    experiment: Experiment,
    profile: str,
    config,
    *,
    arms: list[str] | None = None,
    seeds: list[int] | None = None,
    device: str | None = None,
    directory: Path | None = None,
    progress: bool = True,
    checkpoints: Path | None = None,
    report: Callable[[str], None] | None = None,
) -> dict:
    """Run every (arm, seed) of ``experiment`` at ``profile``'s ``config`` that its results file does not hold yet.

    ``config`` is resolved first (settings chosen from earlier results, fixed before the runs). After each
    finished run the file is rewritten (under a lock, atomically), so an interrupted sweep loses no finished
    run; an unfinished one resumes from its checkpoint. ``directory`` and ``checkpoints`` are the results and
    checkpoint folders (default :func:`results.results_dir` and :func:`results.checkpoints_dir`). ``report``
    (the command line's) hears "run k of N" with an estimate of the time left before each run. Under
    :func:`stiefel_book.train.stop_on_interrupt`, Ctrl-C saves the run in progress at the end of its epoch
    (or lets it finish on its last) and raises :class:`stiefel_book.train.Interrupted`."""
    code_commit()  # the commit of the code this process runs, fixed before its first run trains
    name = experiment.name
    if experiment.resolve is not None:
        config = experiment.resolve(config, directory)
    arms = list(arms or experiment.default_arms(config))
    if seeds is None:  # under torchrun, each process takes its share of the seeds
        world, rank = int(os.environ.get("WORLD_SIZE", 1)), int(os.environ.get("RANK", 0))
        seeds = list(config.seeds)[rank::world]
    for arm in arms:
        if arm not in experiment.arms + experiment.optional_arms:
            raise UnknownNameError(f"unknown arm {arm!r}; {name} has {experiment.arms + experiment.optional_arms}")
    path = results_path(name, profile, directory)
    header = {"experiment": name, "profile": profile, "config": as_json(config)}
    existing = load_results(name, profile, directory)
    if existing is not None and shared_config(existing.get("config", {}), existing) != shared_config(
        header["config"], existing
    ):
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
