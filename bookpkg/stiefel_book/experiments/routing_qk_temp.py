"""QK-norm's initial temperature swept with its W_Q, W_K lr on the routing tasks (issue 52, item 5;
``routing_qk_temp`` in ``book/protocol.yml``): ``mqar_qk_temp`` and ``induction_qk_temp``.

QK-norm's logits are ``τ_h q̂·k̂ / √d_head`` (:mod:`stiefel_book.nanogpt`), q̂, k̂ of unit RMS: a
head's logits lie within ± τ √d_head, so τ's initial value (1 in every earlier run) caps how sharp
attention is before τ has trained. Each initial temperature is a cell ``"qk_norm@temp=<τ>"``
swept apart, as a decay cell ``"<arm>@wd=<λ>"`` is (:mod:`.study`): its W_Q, W_K lr by the
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
from ..results_reading import grid_arm, parse_grid_arm, split_key
from ..tasks import routing
from .registry import Experiment
from .routing_sweep import INDUCTION_PROFILES, MQAR_CHECKED_PROFILES, SweepError, checked, sweep_file, task_setting
from .study import FROZEN, KEY, Study, grow, stored_run, sweep_entry

__all__ = [
    "ENTRIES",
    "TEMPERATURE_KEY",
    "TEMPERATURES",
    "TEMPERATURE_LADDER",
    "TempSweepConfig",
    "SWEEPS",
    "temperature_grid",
    "cell",
    "parse_cell",
    "temperature_choice",
    "TemperatureStudy",
    "TUNED_ARM",
    "TunedConfig",
    "TUNED_PROFILES",
    "resolver",
    "runner",
]

TEMPERATURE_KEY = "temp"  # a cell's key: "qk_norm@temp=3"
TEMPERATURES = (1.0, 3.0, 10.0, 30.0)  # the declared first grid (book/protocol.yml, routing_qk_temp)
TEMPERATURE_LADDER = (0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0)  # where the grid may grow
ARM = "qk_norm"
# τ = 1's runs, adopted. MQAR's sweep is made at its checked model lr (routing_qk_temp, amended), so its
# τ = 1 cell is QK-norm as mqar_checked_qk_lr swept it there
SOURCES = {"mqar_qk_temp": "mqar_checked_qk_lr", "induction_qk_temp": "induction_qk_lr"}


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


@dataclass(frozen=True)
class TemperatureStudy:
    """The sweep ``name`` of QK-norm's (initial temperature, W_Q, W_K lr) at ``config``: each cell's
    lr by :class:`.study.Study`'s rule, the temperatures by :func:`temperature_choice`."""

    name: str
    config: TempSweepConfig
    run_task: Callable | None = None  # a routing task's run (:func:`stiefel_book.tasks.routing.task_run`)

    @property
    def study(self) -> Study:
        c = self.config
        start = (c.start_below, c.start_above)
        return Study(self.name, c.task, CELLS, c.seeds, self._train, c.metric, "steps", start=start)

    def _train(self, task, name, seed, device, checkpoint, progress, qk_lr):
        if qk_lr == 0.0:
            return self.run_task(task, FROZEN, seed, device, checkpoint, progress)
        t = parse_cell(name)
        return self.run_task(task, ARM, seed, device, checkpoint, progress, qk_lr=qk_lr, qk_temperature=t)

    def tried(self, results: dict | None) -> tuple[float, ...]:
        """The temperatures swept so far: the first grid's and those the file's runs name."""
        found = set(self.config.temperatures)
        for key in (results or {}).get("runs", {}):
            arm = split_key(key)[0]
            if arm != FROZEN:
                found.add(parse_cell(arm.rpartition(f"@{KEY}=")[0]))
        return tuple(sorted(found))

    def start_arms(self, with_frozen: bool = False) -> tuple[str, ...]:
        """Every first-grid cell's first lr rungs (then ``frozen``, lr 0, when ``with_frozen``)."""
        study, cells = self.study, [cell(t) for t in self.config.temperatures]
        first = tuple(study.run_name(c, lr) for c in cells for lr in study.start_rungs(c))
        return (*first, FROZEN) if with_frozen else first

    def run_names(self) -> tuple[str, ...]:
        return self.study.run_names()

    def run(self, name: str, seed: int, device, checkpoint=None, progress=True) -> dict:
        return self.study.run(name, seed, device, checkpoint, progress)

    def chosen(self, results: dict | None, required: bool = False) -> dict | None:
        """``{"temperature", "lr", "score", "interior", "settled", "next", "cells"}``: the chosen
        cell and its lr; ``settled`` once every tried cell's lr choice is final and the temperature's
        is interior or at the ladder's end. ``None`` (``required``: refused) while a tried cell has
        no rung with every selection seed."""
        study, temps = self.study, self.tried(results)
        cells = {t: (study.chosen(results, cell(t)) if results else None) for t in temps}
        if any(c is None for c in cells.values()):
            if required:
                missing = [t for t, c in cells.items() if c is None]
                raise ValueError(f"{self.name}: the temperatures {missing} have no complete lr rung yet")
            return None
        pick = temperature_choice({t: c["score"] for t, c in cells.items()})
        best = cells[pick["temperature"]]
        lrs_final = not study.pending(results, tuple(cell(t) for t in temps))
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
        study = self.study
        cells = tuple(arms) if arms else tuple(cell(t) for t in self.tried(results))
        for name in cells:
            parse_cell(name)
        names = study.pending(results, cells)
        if names or arms:
            return names
        pick = self.chosen(results, required=True)
        return [study.run_name(cell(t), lr) for t in pick["next"] for lr in study.start_rungs(cell(t))]

    def grow(self, run_experiment: Callable, profile: str, arms: tuple[str, ...] | None = None, **options) -> dict:
        """Run the pending rounds until the choice is settled (resumable)."""
        return grow(run_experiment, self.name, profile, lambda results: self.pending(results, arms), **options)


def _profiles(task_profiles: dict) -> dict:
    return {
        "full": TempSweepConfig(task_profiles["full"]),
        "ci": TempSweepConfig(task_profiles["ci"], temperatures=(1.0, 3.0), seeds=(100,), start_below=1, start_above=0),
    }


SWEEPS = {  # sweep name -> (its profiles, the task's run)
    "mqar_qk_temp": (_profiles(MQAR_CHECKED_PROFILES), routing.run_mqar),
    "induction_qk_temp": (_profiles(INDUCTION_PROFILES), routing.run_induction),
}


def adopter(name: str) -> Callable:
    """The ``adopt`` of sweep ``name``: a run of the cell τ = 1 (or ``frozen``) is ``SOURCES[name]``'s
    run of QK-norm at the same lr and seed on the same task, where that file holds it."""
    profiles = SWEEPS[name][0]

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
        run = stored_run(SOURCES[name], profile, directory, config.task, key)
        if run is None:
            return None
        return ({**run} if arm == FROZEN else {**run, "qk_temperature": 1.0}), f"{SOURCES[name]}-{profile}"

    return adopt


ENTRIES = tuple(
    sweep_entry(
        name,
        profiles,
        lambda config, name=name, run_task=run_task: TemperatureStudy(name, config, run_task),
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
SWEEP_OF = {"mqar_qk_norm_tuned": "mqar_qk_temp", "induction_qk_norm_tuned": "induction_qk_temp"}


@dataclass(frozen=True)
class TunedConfig:
    task: object  # the judged experiment's task (MQAR_PROFILES / INDUCTION_PROFILES)
    seeds: tuple[int, ...] = tuple(range(10))  # the judged seeds, paired with mqar's and induction's
    sweep_profile: str = "full"  # the profile of the temperature sweep whose choice it takes
    qk_temperature: float | None = None  # resolved before the runs (:func:`resolver`)
    qk_lr: float | None = None


FRESH_SEEDS = tuple(range(20, 50))  # MQAR's judged seeds at its checked model lr (mqar_fresh's), amended
TUNED_PROFILES = {
    name: {"full": TunedConfig(tasks["full"], seeds), "ci": TunedConfig(tasks["ci"], seeds[:1], sweep_profile="ci")}
    for name, tasks, seeds in (
        ("mqar_qk_norm_tuned", MQAR_CHECKED_PROFILES, FRESH_SEEDS),
        ("induction_qk_norm_tuned", INDUCTION_PROFILES, tuple(range(10))),
    )
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
        if arm != TUNED_ARM:
            raise ValueError(f"unknown arm {arm!r}: these experiments run {TUNED_ARM!r} alone")
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


TUNED_ENTRIES = tuple(
    Experiment(
        name,
        TUNED_PROFILES[name],
        (TUNED_ARM,),
        runner(run_task),
        f"{name.removesuffix('_qk_norm_tuned')}: QK-norm at its tuned initial temperature and W_Q, W_K lr, "
        "judged seeds 0-9 (paired with the task's judged runs)",
        resolve=resolver(name),
    )
    for name, run_task in (("mqar_qk_norm_tuned", routing.run_mqar), ("induction_qk_norm_tuned", routing.run_induction))
)
