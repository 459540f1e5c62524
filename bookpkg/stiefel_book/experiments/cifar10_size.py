"""CIFAR-10 over training-set sizes at matched epochs: is "the gap widens with data" true where
weight decay acts?

The ``cifar10_sweep`` experiment (as the preprint's) keeps the number of steps fixed, so every
size has the same tiny decay budget. Here every size trains the long-training protocol's 100
epochs (each image seen as often at every size), baseline and Stiefel, 3 paired starts, at
2,500 to 20,000 class-balanced images (nested prefixes of one balanced order). The decay is the
one at which ``cifar10_long``'s paired gain over its first three starts is largest
(:func:`stiefel_book.choices.largest_gap_decay`): it is chosen from that results file when the
runs start, and each arm carries it in its name (``"stiefel@wd=0.3@n=2500"``), so runs at two
decays never mix and every run key records it. (It is not written into the config: the committed
``cifar10_size-full`` file's config says ``weight_decay: null``, and resuming it must not change it.) Chapters: CIFAR-10
patches, regimes.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..choices import largest_gap_decay
from ..engine.registry import Experiment, profiles
from ..results import load_results
from ..results_reading import parse_size_arm, size_arm
from ..tasks import cifar10
from . import maps

__all__ = ["ENTRIES", "chosen_decay"]

SIZE_ARMS = ("baseline", "stiefel")
SIZES = (2_500, 5_000, 10_000, 20_000)


@dataclass(frozen=True)
class SizeConfig:
    """The data-size sweep: its task, the training-set sizes, the decay (``None``: the long
    grid's choice), the starts. Chapter: regimes."""

    task: cifar10.CIFAR10Config
    sizes: tuple[int, ...] = SIZES
    weight_decay: float | None = None  # None: chosen from cifar10_long's results (see the module)
    seeds: tuple[int, ...] = (0, 1, 2)


# ci: the machinery in seconds, two small sizes, a fixed decay
PROFILES = profiles(SizeConfig, maps.long_tasks(), {"sizes": (500, 1_000), "weight_decay": 1.0, "seeds": (0,)})


def chosen_decay(config: SizeConfig, long_results: dict | None = None) -> float:
    """``config.weight_decay``, or the long-training grid's decay of largest paired gain (its
    ``full`` results file unless handed one). Raises when that grid is not complete yet.
    Chapter: regimes."""
    if config.weight_decay is not None:
        return config.weight_decay
    results = long_results if long_results is not None else load_results("cifar10_long", "full")
    decay = largest_gap_decay(results)
    if decay is None:
        raise ValueError(
            "cifar10_size chooses its weight decay from cifar10_long's results, which do not yet hold "
            "starts 0-2 of baseline and stiefel at every decay: run "
            "`python -m stiefel_book run cifar10_long --profile full` first"
        )
    return decay


def arm_names(config: SizeConfig) -> tuple[str, ...]:
    """Every ``"<arm>@wd=<λ>@n=<images>"`` of a profile, at its chosen decay. Chapter: regimes."""
    decay = chosen_decay(config)
    return tuple(size_arm(arm, decay, size) for size in config.sizes for arm in SIZE_ARMS)


def _all_arms() -> tuple[str, ...]:
    """Every arm any profile could run (the decay over the long grid's values)."""
    decays = {*maps.LONG_WEIGHT_DECAYS, *(p.weight_decay for p in PROFILES.values() if p.weight_decay is not None)}
    return tuple(
        size_arm(arm, decay, size)
        for decay in sorted(decays)
        for profile in PROFILES.values()
        for size in profile.sizes
        for arm in SIZE_ARMS
    )


ARMS = tuple(dict.fromkeys(_all_arms()))


def run(config: SizeConfig, arm: str, seed: int, device, checkpoint=None, progress=True) -> dict:
    """One run: ``arm`` (``"<arm>@wd=<λ>@n=<images>"``) from start ``seed``. Chapter: regimes."""
    base, decay, size = parse_size_arm(arm, SIZE_ARMS)
    if size not in config.sizes:
        raise ValueError(f"{size} images is not on this profile's sizes {config.sizes}")
    pool = max(config.sizes)  # every size is a prefix of one balanced order of this many images
    task = dataclasses.replace(config.task, train_size=pool, weight_decay=decay, seeds=(seed,))
    return cifar10.train_arm(
        task, base, seed, device, checkpoint, progress, train_size=size, description=f"cifar10 size {arm} start {seed}"
    )


ENTRIES = (  # this module's experiments, collected by the runner
    Experiment(
        "cifar10_size",
        PROFILES,
        ARMS,
        run,
        "CIFAR-10 patches, baseline vs Stiefel at 2,500-20,000 images, 100 epochs each, 3 paired starts",
        arms_of=arm_names,
    ),
)
