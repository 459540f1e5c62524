"""QK-norm judged at its tuned initial temperature (issue 52, item 5; families
``routing_mqar_qk_norm_tuned`` and ``routing_induction_qk_norm_tuned`` of ``book/protocol.yml``).

``mqar_qk_norm_tuned`` and ``induction_qk_norm_tuned`` run one arm, ``qk_norm_tuned``: QK-norm at
the (initial temperature, W_Q, W_K lr) its task's temperature sweep chose (:mod:`.routing_qk_temp`),
read from the sweep's file before the first run and written into the config (``qk_temperature``,
``qk_lr``), on the task's judged seeds 0-9 and full setting: the runs pair by seed with the other
arms' runs of ``mqar`` and ``induction`` (same seeds, same task), which the families read beside
these. The judged runs of QK-norm at temperature 1 (``qk_norm`` in those files) stay as they are.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from . import routing
from .registry import Experiment
from .routing_qk_temp import SWEEPS, TemperatureStudy
from .routing_sweep import SweepError, sweep_file
from .study import FROZEN

__all__ = ["ARM", "ENTRIES", "TunedConfig", "PROFILES", "SWEEP_OF", "resolver", "runner"]

ARM = "qk_norm_tuned"
SWEEP_OF = {"mqar_qk_norm_tuned": "mqar_qk_temp", "induction_qk_norm_tuned": "induction_qk_temp"}


@dataclass(frozen=True)
class TunedConfig:
    task: object  # the judged experiment's task (routing.MQAR_PROFILES / INDUCTION_PROFILES)
    seeds: tuple[int, ...] = tuple(range(10))  # the judged seeds, paired with mqar's and induction's
    sweep_profile: str = "full"  # the profile of the temperature sweep whose choice it takes
    qk_temperature: float | None = None  # resolved before the runs (:func:`resolver`)
    qk_lr: float | None = None


def _profiles(task_profiles: dict) -> dict:
    return {
        "full": TunedConfig(task_profiles["full"]),
        "ci": TunedConfig(task_profiles["ci"], seeds=(0,), sweep_profile="ci"),
    }


PROFILES = {
    "mqar_qk_norm_tuned": _profiles(routing.MQAR_PROFILES),
    "induction_qk_norm_tuned": _profiles(routing.INDUCTION_PROFILES),
}


def resolver(name: str) -> Callable:
    """The ``resolve`` of judged experiment ``name``: ``(config, directory) -> config`` with the
    temperature sweep's chosen ``qk_temperature`` and ``qk_lr`` (a config that has both is kept).
    Refused, with the command to run, while the sweep is missing, of another setting or unsettled,
    and where the judged seeds are its selection seeds."""
    sweep = SWEEP_OF[name]

    def resolve(config: TunedConfig, directory=None) -> TunedConfig:
        if config.qk_temperature is not None and config.qk_lr is not None:
            return config
        profiles = SWEEPS[sweep][0]
        results, command = sweep_file(sweep, profiles, config.task, config.seeds, directory, config.sweep_profile)
        pick = TemperatureStudy(sweep, profiles[config.sweep_profile]).chosen(results)
        if pick is None or not pick["settled"]:
            raise SweepError(f"{sweep} has not settled its temperature and lr: grow it with {command} first")
        return dataclasses.replace(config, qk_temperature=pick["temperature"], qk_lr=pick["lr"])

    return resolve


def runner(run_task: Callable) -> Callable:
    """The judged run: QK-norm from ``seed`` at the config's resolved temperature and lr (a chosen
    lr of 0 is frozen frames, as in every sweep); the outcome records both."""

    def run(config: TunedConfig, arm: str, seed: int, device, checkpoint=None, progress=True) -> dict:
        if arm != ARM:
            raise ValueError(f"unknown arm {arm!r}: these experiments run {ARM!r} alone")
        if config.qk_temperature is None or config.qk_lr is None:
            raise ValueError("the temperature and lr are not resolved: run it through run_experiment (resolve first)")
        task = dataclasses.replace(config.task, seeds=(seed,))
        if config.qk_lr == 0.0:
            outcome = run_task(task, FROZEN, seed, device, checkpoint, progress)
        else:
            tuned = {"qk_lr": config.qk_lr, "qk_temperature": config.qk_temperature}
            outcome = run_task(task, "qk_norm", seed, device, checkpoint, progress, **tuned)
        return {**outcome, "qk_lr": config.qk_lr, "qk_temperature": config.qk_temperature}

    return run


ENTRIES = tuple(
    Experiment(
        name,
        PROFILES[name],
        (ARM,),
        runner(run_task),
        f"{name.removesuffix('_qk_norm_tuned')}: QK-norm at its tuned initial temperature and W_Q, W_K lr, "
        "judged seeds 0-9 (paired with the task's judged runs)",
        resolve=resolver(name),
    )
    for name, run_task in (("mqar_qk_norm_tuned", routing.run_mqar), ("induction_qk_norm_tuned", routing.run_induction))
)
