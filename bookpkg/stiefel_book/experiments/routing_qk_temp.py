"""QK-norm's initial temperature swept with its W_Q, W_K lr on the routing tasks (issue 52, item 5;
``routing_qk_temp`` in ``book/protocol.yml``): ``mqar_qk_temp`` and ``induction_qk_temp``.

QK-norm's logits are ``τ_h q̂·k̂ / √d_head`` (:mod:`stiefel_book.nanogpt`), q̂, k̂ of unit RMS: a
head's logits lie within ± τ √d_head, so τ's initial value (1 in every earlier run) caps how sharp
attention is before τ has trained. Each initial temperature is a cell ``"qk_norm@temp=<τ>"``
swept apart, as a decay cell ``"<arm>@wd=<λ>"`` is (:mod:`..engine.study`): its W_Q, W_K lr by the
ladder rule of ``routing_qk_lr`` (:mod:`.routing_sweep`) on selection seeds 100-104, a run
``"qk_norm@temp=<τ>@qklr=<lr>"``, lr 0 the shared ``frozen`` run. The temperature's choice is the
cell whose chosen lr scores best (ties to the τ nearest 1, then the smaller); while it is the
grid's largest (smallest) τ, the next rung of the half-decade ladder :data:`TEMPERATURE_LADDER`
above (below) is added and swept the same way, until the choice is interior or at the ladder's end.

The cell τ = 1 is QK-norm exactly as ``<task>_qk_lr`` swept it (the same seeds, task and rungs:
the same computation), so its runs, and ``frozen``'s, are adopted from that file, not rerun.

QK-norm judged at its tuned initial temperature (issue 52, item 5; families ``routing_mqar_qk_norm_tuned``
and ``routing_induction_qk_norm_tuned``): ``mqar_qk_norm_tuned`` and ``induction_qk_norm_tuned`` run one
arm, ``qk_norm_tuned``, QK-norm at the (initial temperature, W_Q, W_K lr) its task's temperature sweep chose,
read from the sweep's file before the first run and written into the config (``qk_temperature``, ``qk_lr``),
on the task's judged seeds 0-9 and full setting: the runs pair by seed with the other arms' runs of ``mqar``
and ``induction`` (same seeds, same task), which the families read beside these. The judged runs of QK-norm at
temperature 1 (``qk_norm`` in those files) stay as they are.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from .. import choices
from ..engine.registry import SWEEP_CI, Experiment, profiles
from ..engine.study import FROZEN, KEY, Study, stored_run, sweep_entry
from ..results_reading import grid_arm, parse_grid_arm, split_key
from ..tasks import routing
from .routing_sweep import INDUCTION_PROFILES, MQAR_CHECKED_PROFILES, SweepError, checked, sweep_file, task_setting

__all__ = [
    "ENTRIES",
    "TUNED_ENTRIES",
    "TEMPERATURES",
    "TempSweepConfig",
    "SWEEPS",
    "temperature_grid",
    "cell",
    "parse_cell",
    "TemperatureStudy",
    "TUNED_PROFILES",
    "adopter",
    "resolver",
]

TEMPERATURE_KEY = "temp"  # a cell's key: "qk_norm@temp=3"
TEMPERATURES = (1.0, 3.0, 10.0, 30.0)  # the declared first grid (book/protocol.yml, routing_qk_temp)
TEMPERATURE_LADDER = (0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0)  # where the grid may grow
ARM = "qk_norm"


def temperature_grid(values) -> tuple[float, ...]:
    """A grid of initial temperatures (numbers, or a string ``"1,3,10,30"``) as distinct ascending
    rungs of :data:`TEMPERATURE_LADDER`; anything else is refused in one clear error."""
    items = values.split(",") if isinstance(values, str) else values
    try:
        grid = tuple(float(v) for v in items)
    except (TypeError, ValueError):
        raise ValueError(f"temperature grid {values!r}: expected numbers such as 1, 3, 10, 30") from None
    if not grid or any(t not in TEMPERATURE_LADDER for t in grid) or list(grid) != sorted(set(grid)):
        raise ValueError(
            f"temperature grid {values!r}: give distinct rungs of the ladder {TEMPERATURE_LADDER}, ascending"
        )
    return grid


def cell(temperature: float) -> str:
    """``3.0`` -> ``"qk_norm@temp=3"``."""
    return grid_arm(ARM, TEMPERATURE_KEY, temperature)


def parse_cell(name: str) -> float:
    """``"qk_norm@temp=3"`` -> ``3.0``; refused unless QK-norm's cell at a rung of the ladder."""
    _, temperature = parse_grid_arm(name, TEMPERATURE_KEY, (ARM,))
    if temperature not in TEMPERATURE_LADDER:
        raise ValueError(f"cell {name!r}: the initial temperature must be a rung of {TEMPERATURE_LADDER}")
    return temperature


CELLS = tuple(cell(t) for t in TEMPERATURE_LADDER)


@dataclass(frozen=True)
class TempSweepConfig:
    task: object  # the routing task's config (its ``lr`` centres every cell's ladder; ``steps``, the score's horizon)
    temperatures: tuple[float, ...] = TEMPERATURES
    metric: str = "val_acc"  # as the task's routing_qk_lr sweep
    seeds: tuple[int, ...] = (100, 101, 102, 103, 104)  # routing_qk_lr's selection seeds
    start_below: int = 2  # each cell's first lr grid: two rungs under the task's lr, one over
    start_above: int = 1

    def __post_init__(self):
        object.__setattr__(self, "temperatures", temperature_grid(self.temperatures))


def temperature_choice(scores: dict[float, float]) -> dict:
    """The rule on temperatures, from each swept cell's ``{τ: the score of its chosen lr}``:
    ``{"temperature", "interior", "next"}``: the τ of highest score (ties to the τ nearest 1 on a
    log scale, then the smaller), whether both its tried neighbours score no higher, and the rungs
    to add (the next one up while it is the largest τ tried, down while the smallest; none past the
    ladder's ends)."""
    best = choices.choice(scores, 1.0)
    tried, i = sorted(scores), TEMPERATURE_LADDER.index(best)
    grow_to = []
    if best == tried[-1] and i + 1 < len(TEMPERATURE_LADDER):
        grow_to.append(TEMPERATURE_LADDER[i + 1])
    if best == tried[0] and i > 0:
        grow_to.append(TEMPERATURE_LADDER[i - 1])
    return {"temperature": best, "interior": choices.is_interior(scores, best), "next": tuple(grow_to)}


def qk_norm_run(run_task: Callable, task, seed, device, checkpoint, progress, qk_lr: float, temperature) -> dict:
    """QK-norm from ``seed`` by a routing task's run (:func:`stiefel_book.tasks.routing.task_run`) at W_Q, W_K lr
    ``qk_lr`` and initial temperature ``temperature`` (lr 0: frozen frames, without a temperature)."""
    if qk_lr == 0.0:
        return run_task(task, FROZEN, seed, device, checkpoint, progress)
    return run_task(task, ARM, seed, device, checkpoint, progress, qk_lr=qk_lr, qk_temperature=temperature)


@dataclass(frozen=True)
class TemperatureStudy(Study):
    """The sweep of QK-norm's (initial temperature, W_Q, W_K lr) over the cells :data:`CELLS`: each cell's
    lr by :class:`..engine.study.Study`'s rule (:meth:`chosen`), the temperatures, from the first grid ``temperatures``
    on, by :func:`temperature_choice` (:meth:`choice`)."""

    temperatures: tuple[float, ...] = TEMPERATURES

    @classmethod
    def of(cls, name: str, config: TempSweepConfig, run_task: Callable | None = None) -> TemperatureStudy:
        """Sweep ``name`` at a profile, a cell's run made by ``run_task``."""

        def train(task, name, seed, device, checkpoint, progress, qk_lr):
            temperature = parse_cell(name) if qk_lr else None
            return qk_norm_run(run_task, task, seed, device, checkpoint, progress, qk_lr, temperature)

        return cls.at(name, config, CELLS, train, temperatures=config.temperatures)

    def tried(self, results: dict | None) -> tuple[float, ...]:
        """The temperatures swept so far: the first grid's and those the file's runs name."""
        found = set(self.temperatures)
        for key in (results or {}).get("runs", {}):
            arm = split_key(key)[0]
            if arm != FROZEN:
                found.add(parse_cell(arm.rpartition(f"@{KEY}=")[0]))
        return tuple(sorted(found))

    def start_arms(self, with_frozen: bool = False) -> tuple[str, ...]:
        """Every first-grid cell's first lr rungs (then ``frozen``, lr 0, when ``with_frozen``)."""
        return Study.start_arms(dataclasses.replace(self, arms=tuple(map(cell, self.temperatures))), with_frozen)

    def choice(self, results: dict | None, required: bool = False) -> dict | None:
        """``{"temperature", "lr", "score", "interior", "settled", "next", "cells"}``: the chosen
        cell and its lr; ``settled`` once every tried cell's lr choice is final and the temperature's
        is interior or at the ladder's end. ``None`` (``required``: refused) while a tried cell has
        no rung with every selection seed."""
        temps = self.tried(results)
        cells = {t: (self.chosen(results, cell(t)) if results else None) for t in temps}
        if any(c is None for c in cells.values()):
            if required:
                missing = [t for t, c in cells.items() if c is None]
                raise ValueError(f"{self.name}: the temperatures {missing} have no complete lr rung yet")
            return None
        pick = temperature_choice({t: c["score"] for t, c in cells.items()})
        best = cells[pick["temperature"]]
        lrs_final = not super().pending(results, tuple(cell(t) for t in temps))
        return {
            **pick,
            "lr": best["lr"],
            "score": best["score"],
            "settled": lrs_final and not pick["next"],
            "cells": cells,
        }

    def pending(self, results: dict | None, arms: tuple[str, ...] | None = None) -> list[str]:
        """The sweep's next round: the tried cells' pending lr rungs (only ``arms``' where named: a
        shard, which never grows the temperatures), else the first rungs of the temperatures the rule adds."""
        cells = tuple(arms) if arms else tuple(cell(t) for t in self.tried(results))
        for name in cells:
            parse_cell(name)
        names = super().pending(results, cells)
        if names or arms:
            return names
        pick = self.choice(results, required=True)
        return [self.run_name(cell(t), lr) for t in pick["next"] for lr in self.start_rungs(cell(t))]


# each task: its profiles (MQAR's sweep is made at its checked model lr: routing_qk_temp, amended), its run, the
# sweep whose τ = 1 runs are adopted (QK-norm as that file swept it) and the judged seeds (MQAR's at its checked
# model lr, mqar_fresh's, amended)
TASKS = {
    "mqar": (MQAR_CHECKED_PROFILES, routing.run_mqar, "mqar_checked_qk_lr", tuple(range(20, 50))),
    "induction": (INDUCTION_PROFILES, routing.run_induction, "induction_qk_lr", tuple(range(10))),
}
SWEEPS = {  # sweep name -> (its profiles, the task's run)
    f"{task}_qk_temp": (profiles(TempSweepConfig, tasks, {**SWEEP_CI, "temperatures": (1.0, 3.0)}), run)
    for task, (tasks, run, _, _) in TASKS.items()
}


def adopter(name: str) -> Callable:
    """The ``adopt`` of sweep ``name``: a run of the cell τ = 1 (or ``frozen``) is the task's lr sweep's
    run of QK-norm at the same lr and seed on the same task, where that file holds it."""
    profiles, source = SWEEPS[name][0], TASKS[name.removesuffix("_qk_temp")][2]

    def adopt(config: TempSweepConfig, arm: str, seed: int, directory=None) -> tuple[dict, str] | None:
        profile = next((p for p, c in profiles.items() if task_setting(c.task) == task_setting(config.task)), None)
        if profile is None:
            return None
        if arm == FROZEN:
            key = f"{FROZEN}/{seed}"
        else:
            name_of_cell, _, lr = arm.rpartition(f"@{KEY}=")
            if parse_cell(name_of_cell) != 1.0:
                return None
            key = f"{grid_arm(ARM, KEY, float(lr))}/{seed}"
        run = stored_run(source, profile, directory, config.task, key)
        if run is None:
            return None
        return ({**run} if arm == FROZEN else {**run, "qk_temperature": 1.0}), f"{source}-{profile}"

    return adopt


ENTRIES = tuple(
    sweep_entry(
        name,
        profiles,
        lambda config, name=name, run_task=run_task: TemperatureStudy.of(name, config, run_task),
        f"{name.removesuffix('_qk_temp')}: QK-norm's initial temperature swept with its W_Q, W_K lr, "
        "5 selection seeds, until both choices are interior",
        with_frozen=True,
        adopt=adopter(name),
        resolve=checked("mqar_checked_qk_lr") if name == "mqar_qk_temp" else None,  # MQAR waits for its lr check
    )
    for name, (profiles, run_task) in SWEEPS.items()
)


# --- QK-norm judged at its tuned initial temperature ---------------------------------------------------------

TUNED_ARM = "qk_norm_tuned"


@dataclass(frozen=True)
class TunedConfig:
    task: object  # the judged experiment's task (MQAR_PROFILES / INDUCTION_PROFILES)
    seeds: tuple[int, ...] = tuple(range(10))  # the judged seeds, paired with mqar's and induction's
    sweep_profile: str = "full"  # the profile of the temperature sweep whose choice it takes
    qk_temperature: float | None = None  # resolved before the runs (:func:`resolver`)
    qk_lr: float | None = None


TUNED_PROFILES = {
    f"{task}_qk_norm_tuned": profiles(TunedConfig, tasks, {"seeds": seeds[:1], "sweep_profile": "ci"}, seeds=seeds)
    for task, (tasks, _, _, seeds) in TASKS.items()
}


def resolver(name: str) -> Callable:
    """The ``resolve`` of judged experiment ``name``: ``(config, directory) -> config`` with the
    temperature sweep's chosen ``qk_temperature`` and ``qk_lr`` (a config that has both is kept).
    Refused, with the command to run, while the sweep is missing, of another setting or unsettled,
    and where the judged seeds are its selection seeds."""
    sweep = name.replace("_qk_norm_tuned", "_qk_temp")

    def resolve(config: TunedConfig, directory=None) -> TunedConfig:
        if config.qk_temperature is not None and config.qk_lr is not None:
            return config
        profiles = SWEEPS[sweep][0]
        results, command = sweep_file(sweep, profiles, config.task, config.seeds, directory, config.sweep_profile)
        pick = TemperatureStudy.of(sweep, profiles[config.sweep_profile]).choice(results)
        if pick is None or not pick["settled"]:
            raise SweepError(f"{sweep} has not settled its temperature and lr: grow it with {command} first")
        return dataclasses.replace(config, qk_temperature=pick["temperature"], qk_lr=pick["lr"])

    return resolve


def runner(run_task: Callable) -> Callable:
    """The judged run: QK-norm from ``seed`` at the config's resolved temperature and lr (a chosen
    lr of 0 is frozen frames, as in every sweep); the outcome records both."""

    def run(config: TunedConfig, arm: str, seed: int, device, checkpoint=None, progress=True) -> dict:
        if arm != TUNED_ARM:
            raise ValueError(f"unknown arm {arm!r}: these experiments run {TUNED_ARM!r} alone")
        if config.qk_temperature is None or config.qk_lr is None:
            raise ValueError("the temperature and lr are not resolved: run it through run_experiment (resolve first)")
        task, lr, temperature = dataclasses.replace(config.task, seeds=(seed,)), config.qk_lr, config.qk_temperature
        outcome = qk_norm_run(run_task, task, seed, device, checkpoint, progress, lr, temperature)
        return {**outcome, "qk_lr": lr, "qk_temperature": temperature}

    return run


TUNED_ENTRIES = tuple(
    Experiment(
        name,
        TUNED_PROFILES[name],
        (TUNED_ARM,),
        runner(TASKS[name.removesuffix("_qk_norm_tuned")][1]),
        f"{name.removesuffix('_qk_norm_tuned')}: QK-norm at its tuned initial temperature and W_Q, W_K lr, "
        "judged seeds 0-9 (paired with the task's judged runs)",
        resolve=resolver(name),
    )
    for name in TUNED_PROFILES
)
