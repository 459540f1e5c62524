"""The fair fight at p = 97 sized to decide (issue 52; ``book/protocol.yml``, family
``grokking_p97_primary``): AdamW and the Stiefel rule at the W_Q, W_K lr ``grokking_p97_qk_lr``
chose for each, 20,000 epochs, judged seeds 0-11, the Stiefel rule − AdamW on time to 90 % first
and alone at the full α (gatekeeping). Seeds 0-5 are ``grokking_p97_fair``'s runs of the same two
arms, the same computation (task, lr, seed), adopted rather than rerun; seeds 6-11 are new (about
40 minutes a run on one CPU core)."""

from __future__ import annotations

import dataclasses

from . import fair_fight, p97_fair
from .study import adopted, judged_entry

__all__ = ["ARMS", "PROFILES", "adopt", "ENTRIES"]

ARMS = ("baseline", "stiefel")
SOURCE = "grokking_p97_fair"  # the judged runs of seeds 0-5, adopted
PROFILES = {
    name: dataclasses.replace(config, arms=ARMS, seeds=tuple(range(12 if name == "full" else 1)))
    for name, config in p97_fair.PROFILES.items()
}


def adopt(config, arm: str, seed: int, directory=None) -> tuple[dict, str] | None:
    """``grokking_p97_fair``'s run of ``arm`` from ``seed`` where it trained the same task at the same
    W_Q, W_K lr (``(outcome, source)``), else ``None``: the run is made."""
    same_lr = lambda run: run.get("qk_lr") == dict(config.qk_lrs).get(arm)  # noqa: E731
    return adopted(SOURCE, config, f"{arm}/{seed}", directory, same_lr)


ENTRIES = (
    judged_entry(
        "grokking_p97_primary",
        PROFILES,
        ARMS,
        fair_fight.train,
        "grokking at p = 97, AdamW and the Stiefel rule at their tuned W_Q, W_K lrs, 12 paired seeds "
        "(0-5 adopted from grokking_p97_fair)",
        p97_fair.resolve,
        adopt=adopt,
    ),
)
