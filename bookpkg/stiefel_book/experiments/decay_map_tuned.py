"""The decay map at tuned learning rates (issue 28): :mod:`.decay_map`'s grid (grokking at p = 31,
1,500 epochs, λ from 0 to 3, seeds 0-9), each swept arm training W_Q, W_K at the lr the p = 31
sweep (``grokking_qk_lr``, at the task's λ = 1) chose for it, as :mod:`.routing_decay_map` does
for induction heads. The lrs are resolved before the runs and written into the config.

Where an arm's chosen lr is the task's (the Stiefel rule's 3e-3), and for frozen frames (no lr),
its cell is ``grokking_decay_map``'s run: the same computation (a frame lr equal to the task's is
the task's lr), adopted rather than rerun, and marked so. So on these choices only AdamW and
AdamW without decay on W_Q, W_K run again: 100 runs of about 25 s on one core.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import fair_fight, grokking
from .decay_map import MAP_ARMS, WEIGHT_DECAYS, DecayMapConfig, arm_names
from .decay_map import PROFILES as MAP_PROFILES
from .grid import decay_cell
from .registry import Experiment
from .study import adopted, resolved_lr

__all__ = ["ENTRIES", "SWEPT", "DecayMapTunedConfig", "PROFILES", "resolve", "run", "adopt"]

SWEPT = ("baseline", "stiefel", "no_decay_qk")  # the map's arms with a W_Q, W_K lr (frozen frames have none)
ADOPTED_FROM = "grokking_decay_map"


@dataclass(frozen=True)
class DecayMapTunedConfig:
    task: grokking.GrokkingConfig = field(default_factory=lambda: MAP_PROFILES["full"].task)
    weight_decays: tuple[float, ...] = WEIGHT_DECAYS
    seeds: tuple[int, ...] = tuple(range(10))  # paired with grokking_decay_map's
    arms: tuple[str, ...] = SWEPT
    sweep_profile: str = "full"  # the profile of grokking_qk_lr whose choices the arms take
    qk_lrs: tuple[tuple[str, float], ...] = ()  # resolved before the runs (:func:`resolve`)


def _tuned(profile: DecayMapConfig, sweep_profile: str) -> DecayMapTunedConfig:
    return DecayMapTunedConfig(profile.task, profile.weight_decays, profile.seeds, sweep_profile=sweep_profile)


PROFILES = {name: _tuned(profile, name) for name, profile in MAP_PROFILES.items()}


resolve = fair_fight.resolve  # each swept arm's W_Q, W_K lr chosen by grokking_qk_lr (refused until final)


def run(config: DecayMapTunedConfig, arm: str, seed: int, device, checkpoint=None, progress=True) -> dict:
    """One run: ``"<arm>@wd=<λ>"`` from ``seed`` at λ, W_Q, W_K at the arm's resolved lr (frozen: none)."""
    base, _, task = decay_cell(config, arm, seed, MAP_ARMS)
    lr = 0.0 if base == "frozen" else resolved_lr(config, base)
    return {**fair_fight.train(task, base, seed, device, checkpoint, progress, lr), "qk_lr": lr}


def adopt(config: DecayMapTunedConfig, arm: str, seed: int, directory=None) -> tuple[dict, str] | None:
    """The run ``grokking_decay_map`` already holds where it is this one's computation: frozen
    frames, or an arm whose chosen lr is the task's. ``(its outcome, compacted, source)``, else ``None``."""
    base, _, _ = decay_cell(config, arm, seed, MAP_ARMS)
    lr = 0.0 if base == "frozen" else resolved_lr(config, base)
    if base != "frozen" and lr != config.task.lr:
        return None
    found = adopted(ADOPTED_FROM, config, f"{arm}/{seed}", directory)
    return found and ({**fair_fight.compact(found[0]), "qk_lr": lr}, found[1])


ENTRIES = (  # this module's experiments, collected by the runner
    Experiment(
        "grokking_decay_map_tuned",
        PROFILES,
        tuple(dict.fromkeys(name for profile in MAP_PROFILES.values() for name in arm_names(profile))),
        run,
        "grokking's decay map (p = 31, λ 0-3, 10 seeds) with each arm's W_Q, W_K at its lr tuned at λ = 1",
        arms_of=lambda config: arm_names(config),
        resolve=resolve,
        adopt=adopt,
    ),
)
