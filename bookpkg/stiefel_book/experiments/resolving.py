"""The resolve step of a judged comparison: each arm's W_Q, W_K lr read from its sweep's results
file before the runs, and written into the comparison's config (so the results file records it).
An experiment never chooses a setting while it runs."""

from __future__ import annotations

import dataclasses
from typing import Callable

from .results import load_results

__all__ = ["resolve_lrs"]


def resolve_lrs(config, sweep: str, choose: Callable[[dict, str], dict | None], directory=None):
    """``config`` with ``qk_lrs`` set to ``choose(sweep file, arm)["lr"]`` for each of ``config.arms``.

    ``config`` has ``arms``, ``sweep_profile`` and ``qk_lrs`` (kept when already set). Refused, with
    the command that grows the sweep, while the file is missing or any arm's choice is not final
    (``choose`` returns ``None`` before any rung is complete, else ``{"lr", "interior", ...}``)."""
    if config.qk_lrs:
        return config
    grow = f"`python -m stiefel_book sweep {sweep} --profile {config.sweep_profile}`"
    results = load_results(sweep, config.sweep_profile, directory)
    if not results:
        raise ValueError(f"no W_Q, W_K lr sweep yet for these arms: run {grow} first")
    lrs, open_arms = [], []
    for arm in config.arms:
        chosen = choose(results, arm)
        if chosen is None or not chosen["interior"]:
            open_arms.append(arm)
        else:
            lrs.append((arm, chosen["lr"]))
    if open_arms:
        raise ValueError(f"the sweep has not settled {open_arms} (no choice yet, or one at a grid edge): run {grow}")
    return dataclasses.replace(config, qk_lrs=tuple(lrs))
