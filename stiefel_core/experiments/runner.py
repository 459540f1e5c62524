"""The registry of named experiments and their runner: every arm x seed not yet in the results
file, resumable, sharded under torchrun (see :mod:`stiefel_core.experiments`)."""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch

from ..results_reading import run_key, without_seeds
from ..train import load_checkpoint, pick_device
from . import (
    ablation,
    charlm,
    cifar10,
    cifar10_fair,
    cifar10_judged,
    cifar10_long,
    cifar10_size,
    decay_map,
    fair_fight,
    grokking,
    p97_fair,
    peers,
    routing,
    routing_decay_map,
    routing_sweep,
    trust_region,
)
from .results import (
    checkpoints_dir,
    code_commit,
    load_results,
    provenance,
    refuse_install_folder,
    results_path,
    write_results,
)
from .variants import ABLATION_ARMS

__all__ = [
    "Experiment",
    "EXPERIMENTS",
    "PROFILES",
    "default_profile",
    "get_config",
    "run_experiment",
    "run_live",
    "json_safe",
]

PROFILES = ("ci", "full")


@dataclass(frozen=True)
class Experiment:
    """A named experiment: its profiles, arms and the run of one arm from one seed. Chapters: grokking, cifar10_patches,
    ablation, regimes."""

    name: str
    profiles: dict  # profile name -> config dataclass (with a ``seeds`` field)
    arms: tuple[str, ...]
    run: Callable  # (config, arm, seed, device, checkpoint, progress) -> dict
    description: str
    optional_arms: tuple[str, ...] = ()  # run only when named (--arms): controls on an expensive task
    arms_of: Callable | None = None  # config -> the arms a profile runs (grid experiments), default ``arms``
    resolve: Callable | None = None  # (config, directory) -> config with settings chosen from earlier results

    def default_arms(self, config) -> tuple[str, ...]:
        return tuple(self.arms_of(config)) if self.arms_of else self.arms


EXPERIMENTS = {
    "grokking": Experiment(
        "grokking",
        grokking.PROFILES,
        grokking.ARMS,
        grokking.run,
        "modular addition, 20,000 epochs",
        optional_arms=("frozen", "no_decay_qk"),
    ),
    "cifar10": Experiment(
        "cifar10",
        cifar10.PROFILES,
        cifar10.ARMS,
        cifar10.run,
        "CIFAR-10 patches, 4 arms x 12 paired starts",
        optional_arms=cifar10.CONTROL_ONLY_ARMS,
    ),
    "cifar10_long": Experiment(
        "cifar10_long",
        cifar10_long.PROFILES,
        cifar10_long.ARMS,
        cifar10_long.run,
        "CIFAR-10 patches, 100 epochs on 10,000 images, λ 0.05-1, four arms, 3 paired starts",
        arms_of=cifar10_long.arm_names,
    ),
    "cifar10_size": Experiment(
        "cifar10_size",
        cifar10_size.PROFILES,
        cifar10_size.ARMS,
        cifar10_size.run,
        "CIFAR-10 patches, baseline vs Stiefel at 2,500-20,000 images, 100 epochs each, 3 paired starts",
        arms_of=cifar10_size.arm_names,
    ),
    "cifar10_sweep": Experiment(
        "cifar10_sweep",
        cifar10.SWEEP_PROFILES,
        cifar10.SWEEP_ARM_NAMES,
        cifar10.run_sweep,
        "CIFAR-10 patches, baseline vs Stiefel over 4 training-set sizes",
    ),
    "cifar10_ablation": Experiment(
        "cifar10_ablation",
        ablation.CIFAR10_PROFILES,
        ABLATION_ARMS,
        ablation.run_cifar10,
        "CIFAR-10 patches, the full rule against one-switch variants, 12 paired starts",
    ),
    "grokking_ablation": Experiment(
        "grokking_ablation",
        ablation.GROKKING_PROFILES,
        ablation.GROKKING_ARMS,
        ablation.run_grokking,
        "grokking at ci scale, the full rule against one-switch variants and the mechanism's controls, 20 seeds",
    ),
    "grokking_decay_map": Experiment(
        "grokking_decay_map",
        decay_map.PROFILES,
        decay_map.ARMS,
        decay_map.run,
        "grokking at ci scale over weight decays 0-3, four arms, 10 seeds",
        arms_of=decay_map.arm_names,
    ),
    "grokking_trust_region": Experiment(
        "grokking_trust_region",
        trust_region.PROFILES,
        trust_region.ARMS,
        trust_region.run,
        "grokking at ci scale, frames at raised lrs where the trust region binds: full rule vs no trust region, 10 "
        "seeds",
        arms_of=trust_region.arm_names,
    ),
    "grokking_peers_lr": Experiment(
        "grokking_peers_lr",
        peers.SWEEP_PROFILES,
        peers.SWEEP_ARMS,
        peers.run_sweep,
        "grokking at ci scale, the lr sweep of the Stiefel rule and its relatives: 4 frame lrs x 2 seeds each, 600 "
        "epochs",
        arms_of=peers.sweep_arm_names,
    ),
    "grokking_peers": Experiment(
        "grokking_peers",
        peers.PROFILES,
        peers.PEER_ARMS,
        peers.run,
        "grokking at ci scale, the Stiefel rule against Muon, geoopt, per-entry moments and the orthogonal "
        "parametrization, 20 seeds",
    ),
    "grokking_qk_lr": Experiment(
        "grokking_qk_lr",
        fair_fight.SWEEP_PROFILES,
        fair_fight.SWEEP_ARMS,
        fair_fight.run_sweep,
        "grokking at p = 31, every arm's W_Q, W_K lr swept on 5 selection seeds until interior",
        arms_of=fair_fight.start_arms,
    ),
    "grokking_fair": Experiment(
        "grokking_fair",
        fair_fight.PROFILES,
        (*fair_fight.FAIR_ARMS, "frozen"),
        fair_fight.run,
        "grokking at p = 31, every arm at its tuned W_Q, W_K lr, 20 paired seeds",
        resolve=fair_fight.resolve,
    ),
    "grokking_fair_scale": Experiment(
        "grokking_fair_scale",
        fair_fight.SCALE_PROFILES,
        (*fair_fight.SCALE_ARMS,),
        fair_fight.run,
        "grokking at p = 31, the scale controls at their tuned W_Q, W_K lrs, 20 seeds paired with grokking_fair",
        resolve=fair_fight.resolve,
    ),
    "grokking_fair_peers": Experiment(
        "grokking_fair_peers",
        fair_fight.PEER_PROFILES,
        (*fair_fight.PEER_ARMS,),
        fair_fight.run,
        "grokking at p = 31, the ablation's variants, the relatives and Cayley Adam at their tuned "
        "W_Q, W_K lrs, 20 seeds paired with grokking_fair",
        resolve=fair_fight.resolve,
    ),
    "cifar10_qk_lr": Experiment(
        "cifar10_qk_lr",
        cifar10_fair.PROFILES,
        cifar10_fair.ARMS,
        cifar10_fair.run,
        "CIFAR-10 long protocol, AdamW's and the Stiefel rule's W_Q, W_K lr swept at each λ on 3 selection starts",
        arms_of=cifar10_fair.start_arms,
    ),
    "cifar10_peers_qk_lr": Experiment(
        "cifar10_peers_qk_lr",
        cifar10_judged.PEER_SWEEP_PROFILES,
        cifar10_judged.PEER_SWEEP_ARMS,
        cifar10_judged.run_peer_sweep,
        "CIFAR-10 long protocol at λ = 1, the relatives' W_Q, W_K lr swept on 2 selection starts until interior",
        arms_of=cifar10_judged.peer_start_arms,
    ),
    "cifar10_fair": Experiment(
        "cifar10_fair",
        cifar10_judged.PROFILES,
        (*cifar10_judged.CORE, "frozen"),
        cifar10_judged.run,
        "CIFAR-10 long protocol at λ = 1, AdamW, the Stiefel rule (each at its tuned W_Q, W_K lr) and frozen "
        "frames, 12 paired starts",
        resolve=cifar10_judged.resolve,
    ),
    "cifar10_fair_peers": Experiment(
        "cifar10_fair_peers",
        cifar10_judged.PEER_PROFILES,
        cifar10_judged.PEERS,
        cifar10_judged.run,
        "CIFAR-10 long protocol at λ = 1, the relatives at their CIFAR-10 W_Q, W_K lrs, 12 starts paired with "
        "cifar10_fair",
        resolve=cifar10_judged.resolve,
    ),
    "grokking_p97_qk_lr": Experiment(
        "grokking_p97_qk_lr",
        p97_fair.SWEEP_PROFILES,
        p97_fair.SWEEP_ARMS,
        p97_fair.run_sweep,
        "grokking at p = 97, four arms' W_Q, W_K lr at the task's lr, 1/3 and 1/10 of it, 2 selection seeds, "
        "scored by the epochs to 90 % within 10,000",
        arms_of=p97_fair.start_arms,
    ),
    "grokking_p97_fair": Experiment(
        "grokking_p97_fair",
        p97_fair.PROFILES,
        (*p97_fair.ARMS, "frozen"),
        p97_fair.run,
        "grokking at p = 97, AdamW, AdamW without decay on W_Q, W_K, the Stiefel rule and QK-norm at their tuned "
        "W_Q, W_K lrs, and frozen frames, 6 paired seeds",
        resolve=p97_fair.resolve,
    ),
    "mqar": Experiment(
        "mqar",
        routing.MQAR_PROFILES,
        routing.ARMS,
        routing.run_mqar,
        "multi-query associative recall, 2-layer nanoGPT-style model, six arms, 10 paired seeds",
        resolve=routing_sweep.resolver("mqar_qk_lr"),
    ),
    "induction": Experiment(
        "induction",
        routing.INDUCTION_PROFILES,
        routing.ARMS,
        routing.run_induction,
        "induction heads on repeated random tokens, 2-layer attention-only, six arms, 10 paired seeds",
        resolve=routing_sweep.resolver("induction_qk_lr"),
    ),
    "charlm": Experiment(
        "charlm",
        charlm.PROFILES,
        charlm.ARMS,
        charlm.run,
        "character-level LM on Gutenberg texts (nanoGPT + stiefelize), six arms, 5 paired seeds",
        resolve=routing_sweep.resolver("charlm_qk_lr"),
    ),
    "induction_decay_map": Experiment(
        "induction_decay_map",
        routing_decay_map.PROFILES,
        routing_decay_map.ARMS,
        routing_decay_map.run,
        "induction heads over weight decays 0-3 and training length, four arms at their tuned W_Q, W_K lrs, "
        "10 paired seeds",
        arms_of=routing_decay_map.arm_names,
        resolve=routing_decay_map.resolve,
    ),
    **{
        name: Experiment(
            name,
            profiles,
            routing_sweep.sweep_arms(),
            routing_sweep.runner(run_task),
            f"{name.removesuffix('_qk_lr')}: every arm's W_Q, W_K lr swept on 5 selection seeds until interior",
            arms_of=routing_sweep.start_arms,
        )
        for name, (profiles, run_task) in routing_sweep.SWEEPS.items()
    },
    "cifar10_peers": Experiment(
        "cifar10_peers",
        peers.CIFAR10_PROFILES,
        peers.PEER_ARMS,
        peers.run_cifar10,
        "CIFAR-10 patches, long protocol at λ = 1, the Stiefel rule against its relatives, 3 paired starts",
    ),
}


def default_profile() -> str:
    """``$STIEFEL_PROFILE``; unset, ``full`` with CUDA and ``ci`` without.
    Chapters: grokking, cifar10_patches, ablation, regimes."""
    profile = os.environ.get("STIEFEL_PROFILE") or ("full" if torch.cuda.is_available() else "ci")
    if profile not in PROFILES:
        raise ValueError(f"STIEFEL_PROFILE={profile!r}: choose one of {PROFILES}")
    return profile


def _experiment(name: str) -> Experiment:
    if name not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {name!r}; choose one of {sorted(EXPERIMENTS)}")
    return EXPERIMENTS[name]


def get_config(name: str, profile: str | None = None, **overrides):
    """The configuration of experiment ``name`` under ``profile``, with ``overrides`` applied.
    Chapters: grokking, cifar10_patches, ablation, regimes."""
    profile = profile or default_profile()
    experiment = _experiment(name)
    if profile not in experiment.profiles:
        raise ValueError(f"unknown profile {profile!r}; choose one of {PROFILES}")
    return dataclasses.replace(experiment.profiles[profile], **overrides)


@contextlib.contextmanager
def _locked(path: Path):
    """Hold an exclusive lock beside ``path``: shards of one sweep write one file in turn."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _as_json(config) -> dict:
    return json_safe(dataclasses.asdict(config))


def json_safe(value):
    """``value`` with tuples as lists, as JSON stores them (a results file's config). Chapters: grokking,
    cifar10_patches, ablation, regimes."""
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


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
) -> dict:
    """Run every (arm, seed) of an experiment that its results file does not hold yet.

    After each finished run the file is rewritten (under a lock, atomically), so an interrupted
    sweep loses no finished run; an unfinished one resumes from its checkpoint. ``directory``
    and ``checkpoints`` are the results and checkpoint folders (default
    :func:`results.results_dir` and :func:`results.checkpoints_dir`).
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
            raise ValueError(f"unknown arm {arm!r}; {name} has {experiment.arms + experiment.optional_arms}")
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
    for seed in seeds:
        for arm in arms:
            key = run_key(arm, seed)
            done = load_results(name, profile, directory)
            if done is not None and key in done["runs"]:
                continue
            checkpoint = checkpoints / f"{arm}-{seed}.pt"
            (resumed, trained), start = _checkpoint_progress(checkpoint), time.perf_counter()
            outcome = experiment.run(config, arm, seed, dev, checkpoint, progress)
            outcome["provenance"] = provenance(dev, trained + time.perf_counter() - start, resumed_from_epoch=resumed)
            outcome["provenance"]["compiled"] = bool(outcome.pop("compiled", False))  # the training forward's path
            with _locked(path):
                results = load_results(name, profile, directory) or {**header, "runs": {}}
                seeds_asked = set(results["config"].get("seeds", [])) | set(header["config"].get("seeds", []))
                results["config"] = {**header["config"], "seeds": sorted(seeds_asked)}  # a grown profile
                results["runs"][key] = outcome
                write_results(results, path)
    return load_results(name, profile, directory)


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
