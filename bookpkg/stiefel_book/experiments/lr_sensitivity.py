"""The tuning budget (issue 49, item 3; issue 52's model-lr check): each routing task's model lr,
every parameter's rate scaled together, over the half-decade ladder 1e-4 ... 1e-1 (7 rungs, 3
decades), W_Q, W_K's rate kept at each arm's tuned ratio to it, on seeds 200-202 (apart from the
selection and judged seeds). Declared in ``book/protocol.yml`` (sweeps ``charlm_lr_sensitivity``,
``induction_lr_sensitivity``) before any run.

One engine over a table of tasks (:data:`TASKS`): a run ``"<arm>@lr=<model lr>"`` from a seed is
the task's own run (:mod:`stiefel_book.tasks.charlm`, :mod:`stiefel_book.tasks.routing`) at that model lr, W_Q, W_K at
``lr x (chosen W_Q, W_K lr / the task's lr)``, the ratio read from the task's W_Q, W_K sweep
(:mod:`.routing_sweep`) before the runs (:func:`resolver`), so the results file records it. Each
layer's largest attention logit is logged at every record (``max_logit/<layer>``,
:func:`stiefel_book.nanogpt.recording_logits`); every run is kept, diverged ones too. A run also
records its model lr and the task's initial loss (a uniform prediction), which the findings
(:mod:`stiefel_book.findings.lr_sensitivity`) read.

Cost on one core: a run costs what the task's run costs (the character model about 1.4 minutes,
induction about 1.7); 4 arms x 7 rungs x 3 seeds = 84 runs a task.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import Callable

from ..engine.registry import Experiment, profiles
from ..engine.study import SweepError, resolve_lrs, train_or_diverge
from ..nanogpt import recording_logits
from ..results import load_results
from ..results_reading import grid_arm, parse_grid_arm
from ..tasks import charlm, cifar10, routing
from ..tasks.cifar10_config import with_validation
from . import cifar10_val, fair_fight, maps, p97_fair
from .routing_sweep import CHARLM_LONG_STEPS, CHARLM_PROFILES, INDUCTION_PROFILES, MQAR_PROFILES

__all__ = ["CHECKS", "RUNGS", "ENTRIES", "SENSITIVITY", "SWEEPS", "TASKS", "recorded", "task_arm"]

ARMS = ("baseline", "muon", "stiefel", "qk_norm")  # AdamW, Muon on W_Q, W_K, the Stiefel rule, QK-norm
# Joined after the runs (arms_added in book/protocol.yml), run only when named: manifold Muon, and QK-norm at the
# initial temperature and ratio its task's temperature sweep chose (run as QK-norm at that temperature)
ADDED = ("manifold_muon", "qk_norm_tuned")
TUNED_QK_NORM = "qk_norm_tuned"
KEY = "lr"
RUNGS = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1)  # the declared half-decade ladder: 3 decades


@dataclass(frozen=True)
class LRSensitivityConfig:
    task: object  # the task's config; its ``lr`` is the rung's, its ``seeds`` the run's
    metric: str  # the endpoint: ``val_bpc``, ``val_loss`` (lower better), ``val_acc``, or ``time`` (TimedConfig)
    sweep: str  # the W_Q, W_K sweep whose choices fix each arm's ratio
    rungs: tuple[float, ...] = RUNGS
    arms: tuple[str, ...] = ARMS
    seeds: tuple[int, ...] = (200, 201, 202)
    # ``((arm, chosen W_Q, W_K lr), ...)`` at model lr ``tuned_at``: read from the sweep (resolve) when empty
    qk_lrs: tuple[tuple[str, float], ...] = ()
    tuned_at: float | None = None
    sweep_profile: str = "full"

    def qk_lr(self, arm: str, lr: float, directory=None) -> float:
        """``arm``'s W_Q, W_K lr at model lr ``lr``: its tuned ratio kept (:meth:`setting`)."""
        return self.setting(arm, lr, directory)[0]

    def setting(self, arm: str, lr: float, directory=None) -> tuple[float, dict]:
        """``(arm's W_Q, W_K lr at model lr lr, the task run's extra arguments)``: its tuned ratio kept. An arm
        added after the runs (:data:`ADDED`) reads its ratio, and the tuned QK-norm its temperature, from its
        sweep's file at its run (:func:`added_setting`)."""
        chosen = dict(self.qk_lrs)
        if arm in ADDED and arm not in chosen and self.qk_lrs:
            ratio, extra = added_setting(self, arm, directory)
            return lr * ratio, extra
        if arm not in chosen or self.tuned_at is None:
            raise ValueError(f"no tuned W_Q, W_K lr for {arm!r}: resolve the config from {self.sweep} first")
        return lr * chosen[arm] / self.tuned_at, {}


@dataclass(frozen=True)
class TimedConfig(LRSensitivityConfig):
    """A check scored by time (``metric`` ``"time"``): minus a run's epochs to validation accuracy ``threshold``
    (:func:`stiefel_book.choices.time_scores`, as its task's W_Q, W_K sweep scores), its runs stopped there."""

    threshold: float = p97_fair.THRESHOLD


@dataclass(frozen=True)
class Task:
    profiles: dict  # profile -> the task's config
    run: Callable  # the task's run (config, arm, seed, device, checkpoint, progress, *, qk_lr)
    initial_loss: Callable[[object], float]  # task config -> a uniform prediction's loss, in the metric's unit
    metric: str
    sweep: str
    choose: Callable | None = None  # (sweep results, arm) -> its choice; default the routing sweeps' rule
    horizon: str = "steps"  # the task config's length field
    threshold: float | None = None  # a time-scored task's (metric "time"): its runs stop there (TimedConfig)


def _grokking_run(task, arm, seed, device, checkpoint, progress, *, qk_lr, stop_at=None):
    train = functools.partial(fair_fight.train, stop_at=stop_at)
    return train_or_diverge(train, task, arm, seed, device, checkpoint, progress, qk_lr)


def _log_vocab(task) -> float:  # a uniform prediction's loss over the task's tokens
    return math.log(task.vocab_size)


TASKS = {
    "charlm": Task(
        CHARLM_PROFILES, charlm.run, lambda task: math.log2(charlm.corpus().vocab_size), "val_bpc", "charlm_qk_lr"
    ),
    "induction": Task(INDUCTION_PROFILES, routing.run_induction, _log_vocab, "val_loss", "induction_qk_lr"),
    "mqar": Task(MQAR_PROFILES, routing.run_mqar, _log_vocab, "val_acc", "mqar_qk_lr"),
    "grokking": Task(
        {profile: config.task for profile, config in fair_fight.SWEEP_PROFILES.items()},
        _grokking_run,
        lambda task: math.log(task.p),
        "val_acc",
        "grokking_qk_lr",
        fair_fight.study(fair_fight.SWEEP_PROFILES["full"]).chosen,
        "epochs",
    ),
    "grokking_p97": Task(  # as grokking_p97_qk_lr: 10,000 epochs, a run stopped at its first record past 90 %
        {profile: config.task for profile, config in p97_fair.SWEEP_PROFILES.items()},
        functools.partial(_grokking_run, stop_at=p97_fair.THRESHOLD),
        lambda task: math.log(task.p),
        "time",
        "grokking_p97_qk_lr",
        p97_fair.study(p97_fair.SWEEP_PROFILES["full"]).chosen,
        "epochs",
        p97_fair.THRESHOLD,
    ),
}
TASKS["cifar10"] = Task(
    {  # the long protocol at the preprint's decay (λ = 1), with held-out images to choose on
        "full": with_validation(maps.long_task("full", weight_decay=1.0), cifar10_val.VAL_SIZE),
        "ci": with_validation(maps.long_task("ci", weight_decay=1.0), 200),
    },
    cifar10.train,
    lambda task: math.log(10),
    "val_acc",
    "cifar10_qk_lr",
    horizon="epochs",
)
SENSITIVITY = ("charlm", "induction")  # the tasks of the declared tuning-budget sweeps


def arm_names(config: LRSensitivityConfig, arms: tuple[str, ...] | None = None) -> tuple[str, ...]:
    """Every arm (``arms``, default the config's) at every rung, arm-major (``"baseline@lr=0.0001"`` ...)."""
    return tuple(grid_arm(arm, KEY, lr) for arm in arms or config.arms for lr in config.rungs)


def added_setting(config: LRSensitivityConfig, arm: str, directory=None) -> tuple[float, dict]:
    """``(ratio, the task run's extra arguments)`` of an arm added after the runs (:data:`ADDED`): its W_Q, W_K lr
    over the model lr it was chosen at, read from its sweep's file. Manifold Muon's is its interior choice in the
    task's W_Q, W_K sweep (``config.sweep``); the tuned QK-norm's is the settled (temperature, lr) of the task's
    temperature sweep (``<task>_qk_temp``), its temperature passed on as ``qk_temperature``. Refused, with the
    command, while the choice is missing or unsettled, and on a task without a temperature sweep."""
    from .routing_sweep import READER

    if arm == TUNED_QK_NORM:
        from .routing_qk_temp import SWEEPS as TEMPERATURE_SWEEPS
        from .routing_qk_temp import TemperatureStudy

        name = config.sweep.replace("_qk_lr", "_qk_temp")
        if name not in TEMPERATURE_SWEEPS:
            raise ValueError(
                f"{arm!r} needs a temperature sweep; {config.sweep}'s task has none (only {sorted(TEMPERATURE_SWEEPS)})"
            )
        sweep = load_results(name, config.sweep_profile, directory)
        study = TemperatureStudy.of(name, TEMPERATURE_SWEEPS[name][0][config.sweep_profile])
        pick = study.choice(sweep) if sweep else None
        if pick is None or not pick["settled"]:
            command = f"python -m stiefel_book sweep {name} --profile {config.sweep_profile}"
            raise SweepError(f"{name} has not settled QK-norm's temperature and lr yet: run `{command}` first")
        return pick["lr"] / float(sweep["config"]["task"]["lr"]), {"qk_temperature": pick["temperature"]}
    sweep = load_results(config.sweep, config.sweep_profile, directory)
    chosen = READER.chosen(sweep, arm) if sweep else None
    if chosen is None or not chosen["interior"]:
        command = f"python -m stiefel_book sweep {config.sweep} --profile {config.sweep_profile} --arms {arm}"
        raise SweepError(f"{config.sweep} has no interior choice for {arm!r} yet: run `{command}` first")
    return chosen["lr"] / float(sweep["config"]["task"]["lr"]), {}


def task_arm(arm: str, extra: dict) -> str:
    """The task's own arm that runs ``arm``: the tuned QK-norm is QK-norm at its temperature (``extra``)."""
    if arm != TUNED_QK_NORM:
        return arm
    if "qk_temperature" not in extra:
        raise ValueError(f"{arm!r} runs at its chosen temperature, and none was found for it")
    return "qk_norm"


def runner(task: Task) -> Callable:
    """The run of ``"<arm>@lr=<rung>"`` from a seed: the task's run at that model lr, W_Q, W_K at
    the arm's ratio, logits recorded; the outcome adds ``model_lr`` and ``initial_loss``."""

    def run(config: LRSensitivityConfig, arm: str, seed: int, device, checkpoint=None, progress=True) -> dict:
        base, lr = parse_grid_arm(arm, KEY, config.arms + ADDED)
        if lr not in config.rungs:
            raise ValueError(f"{arm!r}: model lr {lr:g} is not a declared rung {config.rungs}")
        task_config = dataclasses.replace(config.task, lr=lr, seeds=(seed,))
        qk_lr, extra = config.setting(base, lr)
        return recorded(task, task_config, task_arm(base, extra), seed, device, checkpoint, progress, qk_lr, **extra)

    return run


def recorded(task: Task, task_config, arm: str, seed: int, device, checkpoint, progress, qk_lr: float, **extra) -> dict:
    """The task's run of ``arm`` on ``task_config`` at W_Q, W_K lr ``qk_lr`` (and ``extra``: QK-norm's
    ``qk_temperature``), its attention logits recorded; the outcome adds its ``model_lr``, ``qk_lr``, ``extra``
    and ``initial_loss`` (a uniform prediction's, the findings' cap)."""
    with recording_logits():
        outcome = task.run(task_config, arm, seed, device, checkpoint, progress, qk_lr=qk_lr, **extra)
    return {
        **outcome,
        "model_lr": task_config.lr,
        "qk_lr": qk_lr,
        **extra,
        "initial_loss": task.initial_loss(task_config),
    }


def resolver(task: Task) -> Callable:
    """``(config, directory) -> config`` with each arm's chosen W_Q, W_K lr and the model lr it was
    chosen at, read from the task's sweep file (:func:`..engine.study.resolve_lrs`); a config that has them is
    kept. Refused, with the command to run, while the sweep is missing or a choice is not interior."""

    def resolve(config: LRSensitivityConfig, directory=None) -> LRSensitivityConfig:
        if config.qk_lrs:
            return config
        from .routing_sweep import READER

        resolved = resolve_lrs(config, config.sweep, task.choose or READER.chosen, directory)
        tuned_at = load_results(config.sweep, config.sweep_profile, directory)["config"]["task"]["lr"]
        return dataclasses.replace(resolved, tuned_at=tuned_at)

    return resolve


# The model-lr checks (issue 52: every task's model lr checked for AdamW before its W_Q, W_K sweeps
# and judged runs; ``book/protocol.yml``, sweeps ``*_model_lr``): AdamW alone, W_Q, W_K at its tuned
# ratio to the model lr, on selection seeds; four rungs first, the ladder's others run only when named
# (a choice at an edge grows the grid by one rung: ``run <check> --arms baseline@lr=<rung>``). The findings read
# them (:func:`stiefel_book.findings.lr_sensitivity.ladder_check`); p = 97's by time to 90 % (:class:`TimedConfig`).


@dataclass(frozen=True)
class Check:
    """An experiment of the engine: ``arms`` over the model lr on task ``task``, seeds ``seeds``, the rungs
    ``start`` first, the ladder's others run only when named: a model-lr check (AdamW alone), or a
    tuning-budget sweep (four arms, every rung)."""

    name: str  # the experiment and its results file
    task: str  # a key of :data:`TASKS`
    start: tuple[float, ...]  # the first rungs
    seeds: tuple[int, ...]  # a check's selection seeds; a sweep's, apart from the selection and judged ones
    replace: tuple[tuple[str, object], ...] = ()  # the task's full config changed so (a longer run)
    fixed: tuple[tuple[str, float], ...] = ()  # AdamW's W_Q, W_K lr fixed at declaration, else resolved
    tuned_at: float | None = None  # the model lr ``fixed`` was chosen at
    arms: tuple[str, ...] = ("baseline",)  # a check's: AdamW alone

    def profiles(self) -> dict:
        """The full profile, and a ci one: two rungs of a shorter run, W_Q, W_K's lrs fixed (it reads no sweep)."""
        task, fixed = TASKS[self.task], {"qk_lrs": self.fixed, "tuned_at": self.tuned_at} if self.fixed else {}
        small = task.profiles["ci"]
        shorter = {task.horizon: 20, "log_every": 10, "checkpoint_every": 10, "warmup_steps": 5, "warmup_epochs": 5}
        shorter = {k: v for k, v in shorter.items() if k in {f.name for f in dataclasses.fields(small)}}
        full = dataclasses.replace(task.profiles["full"], **dict(self.replace))
        tasks = {"full": full, "ci": dataclasses.replace(small, **shorter)}
        ci = {"rungs": (1e-3, 1e-1), "seeds": self.seeds[:1], "tuned_at": 1e-3}
        ci["qk_lrs"] = tuple((arm, 1e-2) for arm in self.arms)
        both = {"metric": task.metric, "sweep": task.sweep, "arms": self.arms, "seeds": self.seeds, **fixed}
        if task.threshold is not None:
            return profiles(TimedConfig, tasks, ci, **both, threshold=task.threshold)
        return profiles(LRSensitivityConfig, tasks, ci, **both)

    def first(self, config: LRSensitivityConfig) -> tuple[str, ...]:
        """The arms a profile runs: the first rungs at full scale, every rung of a smaller profile."""
        rungs = tuple(lr for lr in config.rungs if lr in self.start or config.rungs != RUNGS)
        return tuple(grid_arm(arm, KEY, lr) for arm in config.arms for lr in rungs)

    def entry(self) -> Experiment:
        profiles = self.profiles()
        full = profiles["full"]
        added = arm_names(full, ADDED) if self.arms == ARMS else ()
        lrs = ", ".join(f"{lr:g}" for lr in self.start)
        what = (
            f"AdamW's model lr on {lrs} (grown by the ladder), W_Q, W_K at its tuned ratio, selection seeds"
            if self.arms == ("baseline",)
            else "the model lr over 1e-4 ... 1e-1 (7 rungs), four arms at their tuned W_Q, W_K ratio, seeds"
        )
        return Experiment(
            self.name,
            profiles,
            self.first(full),
            runner(TASKS[self.task]),
            f"{self.task}: {what} {self.seeds[0]}-{self.seeds[-1]}",
            optional_arms=tuple(a for a in arm_names(full) if a not in self.first(full)) + added,
            arms_of=self.first,
            resolve=None if self.fixed else resolver(TASKS[self.task]),
        )


CHECKS = (
    Check(
        "charlm_long_model_lr",
        "charlm",
        (1e-3, 3e-3, 1e-2, 3e-2),
        (100, 101, 102),
        replace=(("steps", CHARLM_LONG_STEPS),),
        fixed=(("baseline", 1e-2),),  # charlm_qk_lr's 10x at model lr 1e-3, as declared
        tuned_at=1e-3,
    ),
    Check("grokking_model_lr", "grokking", (1e-3, 3e-3, 1e-2, 3e-2), (100, 101, 102, 103, 104)),
    Check("mqar_model_lr", "mqar", (1e-3, 3e-3, 1e-2, 3e-2), (100, 101, 102)),
    Check(
        "cifar10_model_lr",
        "cifar10",
        (1e-4, 3e-4, 1e-3, 3e-3),
        (100, 101, 102),
        fixed=(("baseline", 1e-3),),  # cifar10_qk_lr's choice for AdamW at λ = 1, at model lr 1e-3 (tested)
        tuned_at=1e-3,
    ),
    Check("grokking_p97_model_lr", "grokking_p97", (3e-4, 1e-3, 3e-3, 1e-2), (100, 101, 102)),
)

SWEEPS = tuple(Check(f"{task}_lr_sensitivity", task, RUNGS, (200, 201, 202), arms=ARMS) for task in SENSITIVITY)
ENTRIES = tuple(check.entry() for check in (*SWEEPS, *CHECKS))
