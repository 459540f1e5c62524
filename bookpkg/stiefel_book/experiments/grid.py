"""Arms over a grid of one setting: ``"<arm>@<key>=<value>"`` (``"stiefel@wd=0.3"``), so that one
results file holds every cell of a map and a cell's runs stay paired by seed. The name's grammar
(:func:`~stiefel_book.results_reading.grid_arm`, ``parse_grid_arm``) lives with the other run keys
in :mod:`stiefel_book.results_reading`. One engine (:class:`Grid`) makes every such experiment: its
arm names by profile, the cell a run trains, and the registry entry."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from ..results_reading import grid_arm, parse_grid_arm
from .registry import Experiment

__all__ = ["grid_arms", "Cell", "Grid"]


def grid_arms(arms: tuple[str, ...], key: str, values: tuple[float, ...]) -> tuple[str, ...]:
    """Every arm at every value, value-major. Chapter: regimes."""
    return tuple(grid_arm(arm, key, value) for value in values for arm in arms)


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

    def entry(self, name: str, profiles: dict, run_cell: Callable, description: str, **options) -> Experiment:
        """The experiment ``name``: a run is ``run_cell(config, cell, device, checkpoint, progress)``
        (:meth:`cell`); ``options`` go to :class:`Experiment` (``resolve``, ``adopt``)."""

        def run(config, arm: str, seed: int, device, checkpoint=None, progress=True) -> dict:
            return run_cell(config, self.cell(config, arm, seed), device, checkpoint, progress)

        return Experiment(name, profiles, self.every(profiles), run, description, arms_of=self.names, **options)
