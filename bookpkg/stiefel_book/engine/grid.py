"""Arms over a grid of one setting: ``"<arm>@<key>=<value>"`` (``"stiefel@wd=0.3"``), so that one
results file holds every cell of a map and a cell's runs stay paired by seed. The name's grammar
(:func:`~stiefel_book.results_reading.grid_arm`, ``parse_grid_arm``) lives with the other run keys
in :mod:`stiefel_book.results_reading`. One engine (:class:`Grid`) makes every such experiment: its
arm names by profile, the cell a run trains, and the registry entry; a sweep of cells ``"<arm>@wd=<λ>"``
(:mod:`.study`) trains and names its runs here (:func:`in_cells`, :func:`cell_run_names`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from ..results_reading import grid_arm, parse_grid_arm
from .registry import Experiment

__all__ = ["grid_arms", "Grid", "cell_run_names", "in_cells"]


def grid_arms(arms: tuple[str, ...], key: str, values: tuple[float, ...]) -> tuple[str, ...]:
    """Every arm at every value, value-major. Chapter: regimes."""
    return tuple(grid_arm(arm, key, value) for value in values for arm in arms)


def cell_run_names(study_of: Callable, arms: tuple[str, ...], profiles: dict) -> tuple[str, ...]:
    """Every run a sweep of cells ``"<arm>@wd=<λ>"`` may make: each of ``arms`` at each decay of any profile
    (arm-major, decays ascending), every rung and lr 0 (:meth:`.study.Study.run_names`)."""
    decays = sorted({w for profile in profiles.values() for w in profile.weight_decays})
    return study_of(profiles["full"]).run_names(tuple(grid_arm(arm, "wd", w) for arm in arms for w in decays))


def in_cells(train: Callable, arms: tuple[str, ...]) -> Callable:
    """A sweep's ``train`` (:data:`.study.Train`) of a cell ``"<arm>@wd=<λ>"`` (the arm one of ``arms``): the arm,
    on the task at decay λ."""

    def run(task, cell, seed, device, checkpoint, progress, qk_lr):
        arm, weight_decay = parse_grid_arm(cell, "wd", arms)
        task = dataclasses.replace(task, weight_decay=weight_decay)
        return train(task, arm, seed, device, checkpoint, progress, qk_lr)

    return run


class Cell(NamedTuple):
    """One run of a grid: its name ``arm``, the arm ``base`` and ``value`` it names, the task it trains
    (at ``value`` where the grid sets a task field, for that one seed) and the seed."""

    arm: str
    base: str
    value: float
    task: object
    seed: int


@dataclass(frozen=True)
class Grid:
    """``arms`` at each value of a profile's field ``values`` (arm names ``"<arm>@<key>=<value>"``,
    value-major); ``sets``: the task field a value sets (``None``: the run reads the value itself)."""

    arms: tuple[str, ...]
    key: str = "wd"
    values: str = "weight_decays"
    sets: str | None = "weight_decay"

    def names(self, config) -> tuple[str, ...]:
        """Every ``"<arm>@<key>=<value>"`` of a profile. Chapter: regimes."""
        return grid_arms(self.arms, self.key, getattr(config, self.values))

    def every(self, profiles: dict) -> tuple[str, ...]:
        """Every name any of ``profiles`` runs, in order."""
        return tuple(dict.fromkeys(name for config in profiles.values() for name in self.names(config)))

    def cell(self, config, arm: str, seed: int) -> Cell:
        """Run ``arm`` from ``seed``: refused unless one of :attr:`arms` at a value of the profile's grid."""
        base, value = parse_grid_arm(arm, self.key, self.arms)
        grid = getattr(config, self.values)
        if value not in grid:
            raise ValueError(f"{arm!r}: {self.key} = {value:g} is not on this profile's grid {grid}")
        changes = {self.sets: value} if self.sets else {}
        return Cell(arm, base, value, dataclasses.replace(config.task, seeds=(seed,), **changes), seed)

    def entry(
        self, name, profiles, run, description, *, value_as=None, rate=None, diverged=False, **options
    ) -> Experiment:
        """The experiment ``name``: a run is the task's ``run(task, arm, seed, device, checkpoint, progress)`` of the
        cell's arm on its task (:meth:`cell`), its value passed as keyword ``value_as`` where given. ``rate``
        (``"arm"`` or ``"cell"``): judged runs, each at the W_Q, W_K lr ``config.qk_lrs`` holds for the cell's arm
        (or the cell), recorded as ``qk_lr`` (lr 0: frozen frames; :func:`.study.judged_run`; ``diverged``: its
        rule applies). ``options`` go to :class:`Experiment` (``resolve``, ``adopt``)."""

        def run_cell(config, arm: str, seed: int, device, checkpoint=None, progress=True) -> dict:
            cell = self.cell(config, arm, seed)
            if rate is None:
                fixed = {value_as: cell.value} if value_as else {}
                return run(cell.task, cell.base, seed, device, checkpoint, progress, **fixed)
            from .study import FROZEN, resolved_lr, train_or_diverge

            lr = 0.0 if cell.base == FROZEN else resolved_lr(config, cell.base if rate == "arm" else cell.arm)
            outcome = train_or_diverge(run, cell.task, cell.base, seed, device, checkpoint, progress, lr, diverged)
            return {**outcome, "qk_lr": lr}

        return Experiment(name, profiles, self.every(profiles), run_cell, description, arms_of=self.names, **options)
