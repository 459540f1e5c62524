"""Growing a W_Q, W_K lr sweep by the fair fight's rule (:mod:`stiefel_book.choices`): one round of
pending rungs at a time, each round reading the results file, so a stopped sweep resumes."""

from __future__ import annotations

from collections.abc import Callable

from ..results_reading import grid_arm
from .results import load_results

__all__ = ["grow", "grow_arms", "pending_grid_arms"]


def grow(
    run_experiment: Callable, name: str, profile: str, pending_arms: Callable[[dict | None], list[str]], **options
) -> dict:
    """Run ``pending_arms(results)`` of sweep ``name`` with ``run_experiment`` until it names none;
    the sweep's results."""
    while True:
        results = load_results(name, profile, options.get("directory"))
        names = list(dict.fromkeys(pending_arms(results)))
        if not names:
            return results
        run_experiment(name, profile, arms=names, **options)


def grow_arms(
    run_experiment: Callable,
    name: str,
    profile: str,
    config,
    arms: tuple[str, ...] | None,
    pending: Callable[[dict | None, object, str], tuple[float, ...]],
    key: str = "qklr",
    **options,
) -> dict:
    """:func:`grow` over ``arms`` (``None``: the sweep ``config``'s arms), each run named
    ``"<arm>@<key>=<lr>"`` for the rungs ``pending(results, config, arm)``."""
    return grow(
        run_experiment, name, profile, lambda results: pending_grid_arms(results, config, arms, pending, key), **options
    )


def pending_grid_arms(
    results: dict | None,
    config,
    arms: tuple[str, ...] | None,
    pending: Callable[[dict | None, object, str], tuple[float, ...]],
    key: str = "qklr",
) -> list[str]:
    """The sweep's next round: ``"<arm>@<key>=<lr>"`` for each of ``arms`` (``None``: ``config``'s)
    and each rung ``pending(results, config, arm)`` names; empty once every choice is final."""
    return [grid_arm(arm, key, lr) for arm in arms or config.arms for lr in pending(results, config, arm)]
