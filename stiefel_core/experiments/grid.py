"""Arms over a grid of one setting: ``"<arm>@<key>=<value>"`` (``"stiefel@wd=0.3"``), so that one
results file holds every cell of a map and a cell's runs stay paired by seed. The name's grammar
(:func:`~stiefel_core.results_reading.grid_arm`, ``parse_grid_arm``) lives with the other run keys
in :mod:`stiefel_core.results_reading`."""

from __future__ import annotations

from ..results_reading import grid_arm

__all__ = ["grid_arms"]


def grid_arms(arms: tuple[str, ...], key: str, values: tuple[float, ...]) -> tuple[str, ...]:
    """Every arm at every value, value-major. Chapter: regimes."""
    return tuple(grid_arm(arm, key, value) for value in values for arm in arms)
