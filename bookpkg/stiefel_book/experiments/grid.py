"""Arms over a grid of one setting: ``"<arm>@<key>=<value>"`` (``"stiefel@wd=0.3"``), so that one
results file holds every cell of a map and a cell's runs stay paired by seed. The name's grammar
(:func:`~stiefel_book.results_reading.grid_arm`, ``parse_grid_arm``) lives with the other run keys
in :mod:`stiefel_book.results_reading`."""

from __future__ import annotations

import dataclasses

from ..results_reading import grid_arm, parse_grid_arm

__all__ = ["grid_arms", "decay_cell"]


def grid_arms(arms: tuple[str, ...], key: str, values: tuple[float, ...]) -> tuple[str, ...]:
    """Every arm at every value, value-major. Chapter: regimes."""
    return tuple(grid_arm(arm, key, value) for value in values for arm in arms)


def decay_cell(config, arm: str, seed: int, arms: tuple[str, ...]) -> tuple[str, float, object]:
    """A decay map's run ``arm`` (``"<arm>@wd=<λ>"``, the arm one of ``arms``) from ``seed``: the arm,
    λ (refused unless on ``config.weight_decays``) and ``config.task`` at decay λ for that one seed.
    Chapter: regimes."""
    base, weight_decay = parse_grid_arm(arm, "wd", arms)
    if weight_decay not in config.weight_decays:
        raise ValueError(f"λ = {weight_decay:g} is not on this profile's grid {config.weight_decays}")
    return base, weight_decay, dataclasses.replace(config.task, weight_decay=weight_decay, seeds=(seed,))
