"""What a named experiment is (:class:`Experiment`): each experiment module declares its own in a
module-level ``ENTRIES``, and :mod:`.runner` collects them (:func:`collect`). Light: no torch, no
experiment, so a module can import it to declare its entry."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

__all__ = [
    "PROFILES",
    "Experiment",
    "UnknownNameError",
    "collect",
    "stored_config",
    "profiles",
    "SWEEP_CI",
    "JUDGED_CI",
]

PROFILES = ("ci", "full")
SWEEP_CI = {"seeds": (100,), "start_below": 1, "start_above": 0}  # a sweep's ci profile: one seed, two first rungs
JUDGED_CI = {"sweep_profile": "ci", "seeds": (0,)}  # judged runs' ci profile: one seed, at the ci sweep's choices


class UnknownNameError(ValueError):
    """An experiment, profile or arm that does not exist (a user's typo: the command line says
    it in one line)."""


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
    # (config, arm, seed, directory) -> ``(outcome, source)``: a run another results file already holds
    # that is this one's computation bit for bit, adopted instead of rerun; ``None`` where there is none
    adopt: Callable | None = None
    study: Callable | None = None  # a sweep's: config -> its :class:`~.study.Study` (what ``sweep NAME`` grows)

    def default_arms(self, config) -> tuple[str, ...]:
        return tuple(self.arms_of(config)) if self.arms_of else self.arms


def profiles(make: Callable, tasks: dict, ci: dict | None = None, **both) -> dict:
    """An experiment's two profiles, each made from its task's profile (``tasks``; or, by ``dataclasses.replace``,
    from another experiment's): ``make(task, **both)``, with ``ci``'s fields changed so at ``ci`` (:data:`SWEEP_CI`,
    :data:`JUDGED_CI`)."""
    return {"full": make(tasks["full"], **both), "ci": make(tasks["ci"], **{**both, **(ci or {})})}


def stored_config(config) -> dict:
    """``config`` as its results file stores it: ``dataclasses.asdict``, each field under its stored name
    where the class keeps an older one (``STORED_NAMES``: the W_Q, W_K lrs ``qk_lrs`` of a grid are ``frame_lrs``)."""
    names = getattr(config, "STORED_NAMES", {})
    return {names.get(k, k): v for k, v in dataclasses.asdict(config).items()}


def collect(*sources: ModuleType | tuple[Experiment, ...], extra: tuple[Experiment, ...] = ()) -> dict[str, Experiment]:
    """``{name: Experiment}`` from every source, a module's ``ENTRIES`` or a tuple of entries (in order), then
    ``extra``; a name declared twice is refused."""
    out: dict[str, Experiment] = {}
    for entry in (*(e for source in sources for e in getattr(source, "ENTRIES", source)), *extra):
        if entry.name in out:
            raise ValueError(f"experiment {entry.name!r} is declared twice; rename one of them")
        out[entry.name] = entry
    return out
