"""The ablation: which component of the Stiefel rule earns what it gains over AdamW.

Two experiments, each with the arms of :mod:`stiefel_book.arms.variants` (the AdamW baseline, the full rule and
four variants that each remove one component):

- ``cifar10_ablation``: the CIFAR-10 patches setup of :mod:`.cifar10`, its profiles unchanged,
  12 paired starts at the full training set. Its ``full`` file needs only the three variants
  that ``cifar10`` does not run: :func:`findings.ablation.merged_results` takes the baseline, the full rule and
  the fixed step from ``cifar10-full.json`` after checking that both files hold the same
  configuration and that every start began from the same weights and saw the same data order.
- ``grokking_ablation``: the grokking setup at its ``ci`` scale (p = 31, 1,500 epochs), 20
  seeds in ``full``; one seed and 600 epochs in ``ci``. Final validation accuracy is compared.

What their results say (paired differences, shares, verdicts) is read by
:mod:`stiefel_book.findings.ablation`.
"""

from __future__ import annotations

from dataclasses import replace

from ..arms.variants import ABLATION_ARMS, CONTROL_ARMS
from ..engine.registry import Experiment
from ..tasks import cifar10 as cifar10_task
from ..tasks import grokking as grokking_task
from . import cifar10, grokking

__all__ = ["ENTRIES", "GROKKING_PROFILES", "run_cifar10", "run_grokking"]

CIFAR10_PROFILES = {
    "full": cifar10.PROFILES["full"],  # the very configuration of cifar10, so the two files can merge
    "ci": replace(cifar10.PROFILES["ci"], train_size=1_000, test_size=500),  # six arms: half of cifar10's ci run
}
GROKKING_PROFILES = {
    "full": replace(
        grokking.PROFILES["ci"], seeds=tuple(range(20))
    ),  # ~20 s a run on one core; 5 seeds left every interval wide
    "ci": replace(grokking.PROFILES["ci"], epochs=600, seeds=(0,)),
}
GROKKING_ARMS = (*ABLATION_ARMS, *CONTROL_ARMS)  # the mechanism's controls run on the same seeds


def run_cifar10(config, arm, seed, device, checkpoint=None, progress=True) -> dict:
    """One run of ``cifar10_ablation``: ``arm`` of :data:`ABLATION_ARMS` from start ``seed``. Chapter: ablation."""
    if arm not in ABLATION_ARMS:
        raise ValueError(f"unknown arm {arm!r}; cifar10_ablation has {ABLATION_ARMS}")
    return cifar10_task.train(
        config, arm, seed, device, checkpoint, progress, description=f"cifar10 ablation {arm} start {seed}"
    )


def run_grokking(config, arm, seed, device, checkpoint=None, progress=True) -> dict:
    """One run of ``grokking_ablation``: ``arm`` of :data:`GROKKING_ARMS` from seed ``seed``. Chapter: ablation."""
    if arm not in GROKKING_ARMS:
        raise ValueError(f"unknown arm {arm!r}; grokking_ablation has {GROKKING_ARMS}")
    return grokking_task.run(config, arm, seed, device, checkpoint, progress)


ENTRIES = (  # this module's experiments, collected by the runner
    Experiment(
        "cifar10_ablation",
        CIFAR10_PROFILES,
        ABLATION_ARMS,
        run_cifar10,
        "CIFAR-10 patches, the full rule against one-switch variants, 12 paired starts",
    ),
    Experiment(
        "grokking_ablation",
        GROKKING_PROFILES,
        GROKKING_ARMS,
        run_grokking,
        "grokking at ci scale, the full rule against one-switch variants and the mechanism's controls, 20 seeds",
    ),
)
