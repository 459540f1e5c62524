"""The tuning budget (issue 49, item 3; issue 52's model-lr check): each routing task's model lr,
every parameter's rate scaled together, over the half-decade ladder 1e-4 ... 1e-1 (7 rungs, 3
decades), W_Q, W_K's rate kept at each arm's tuned ratio to it, on seeds 200-202 (apart from the
selection and judged seeds). Declared in ``book/protocol.yml`` (sweeps ``charlm_lr_sensitivity``,
``induction_lr_sensitivity``) before any run.

One engine over a table of tasks (:data:`TASKS`): a run ``"<arm>@lr=<model lr>"`` from a seed is
the task's own run (:mod:`.charlm`, :mod:`.routing`) at that model lr, W_Q, W_K at
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
import math
from dataclasses import dataclass
from typing import Callable

from ..nanogpt import recording_logits
from ..results_reading import grid_arm, parse_grid_arm
from . import charlm, routing
from .registry import Experiment
from .results import load_results
from .study import resolve_lrs

__all__ = ["ARMS", "KEY", "RUNGS", "TASKS", "LRSensitivityConfig", "arm_names", "runner", "resolver", "ENTRIES"]

ARMS = ("baseline", "muon", "stiefel", "qk_norm")  # AdamW, Muon on W_Q, W_K, the Stiefel rule, QK-norm
KEY = "lr"
RUNGS = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1)  # the declared half-decade ladder: 3 decades


@dataclass(frozen=True)
class LRSensitivityConfig:
    task: object  # the task's config; its ``lr`` is the rung's, its ``seeds`` the run's
    metric: str  # the endpoint, lower is better: ``val_bpc`` or ``val_loss``
    sweep: str  # the W_Q, W_K sweep whose choices fix each arm's ratio
    rungs: tuple[float, ...] = RUNGS
    arms: tuple[str, ...] = ARMS
    seeds: tuple[int, ...] = (200, 201, 202)
    # ``((arm, chosen W_Q, W_K lr), ...)`` at model lr ``tuned_at``: read from the sweep (resolve) when empty
    qk_lrs: tuple[tuple[str, float], ...] = ()
    tuned_at: float | None = None
    sweep_profile: str = "full"

    def qk_lr(self, arm: str, lr: float) -> float:
        """``arm``'s W_Q, W_K lr at model lr ``lr``: its tuned ratio kept."""
        chosen = dict(self.qk_lrs)
        if arm not in chosen or self.tuned_at is None:
            raise ValueError(f"no tuned W_Q, W_K lr for {arm!r}: resolve the config from {self.sweep} first")
        return lr * chosen[arm] / self.tuned_at


@dataclass(frozen=True)
class Task:
    profiles: dict  # profile -> the task's config
    run: Callable  # the task's run (config, arm, seed, device, checkpoint, progress, *, qk_lr)
    initial_loss: Callable[[object], float]  # task config -> a uniform prediction's loss, in the metric's unit
    metric: str
    sweep: str


TASKS = {
    "charlm": Task(
        charlm.PROFILES, charlm.run, lambda task: math.log2(charlm.corpus().vocab_size), "val_bpc", "charlm_qk_lr"
    ),
    "induction": Task(
        routing.INDUCTION_PROFILES,
        routing.run_induction,
        lambda task: math.log(task.vocab_size),
        "val_loss",
        "induction_qk_lr",
    ),
}


def arm_names(config: LRSensitivityConfig) -> tuple[str, ...]:
    """Every arm at every rung, arm-major (``"baseline@lr=0.0001"`` ...)."""
    return tuple(grid_arm(arm, KEY, lr) for arm in config.arms for lr in config.rungs)


def runner(task: Task) -> Callable:
    """The run of ``"<arm>@lr=<rung>"`` from a seed: the task's run at that model lr, W_Q, W_K at
    the arm's ratio, logits recorded; the outcome adds ``model_lr`` and ``initial_loss``."""

    def run(config: LRSensitivityConfig, arm: str, seed: int, device, checkpoint=None, progress=True) -> dict:
        base, lr = parse_grid_arm(arm, KEY, config.arms)
        if lr not in config.rungs:
            raise ValueError(f"{arm!r}: model lr {lr:g} is not a declared rung {config.rungs}")
        task_config = dataclasses.replace(config.task, lr=lr, seeds=(seed,))
        with recording_logits():
            outcome = task.run(task_config, base, seed, device, checkpoint, progress, qk_lr=config.qk_lr(base, lr))
        return {**outcome, "model_lr": lr, "initial_loss": task.initial_loss(task_config)}

    return run


def resolver(task: Task) -> Callable:
    """``(config, directory) -> config`` with each arm's chosen W_Q, W_K lr and the model lr it was
    chosen at, read from the task's sweep file (:func:`.study.resolve_lrs`); a config that has them is
    kept. Refused, with the command to run, while the sweep is missing or a choice is not interior."""

    def resolve(config: LRSensitivityConfig, directory=None) -> LRSensitivityConfig:
        if config.qk_lrs:
            return config
        from .routing_sweep import READER

        resolved = resolve_lrs(config, config.sweep, READER.chosen, directory)
        tuned_at = load_results(config.sweep, config.sweep_profile, directory)["config"]["task"]["lr"]
        return dataclasses.replace(resolved, tuned_at=tuned_at)

    return resolve


def _profiles(task: Task) -> dict:
    tasks = task.profiles
    full = LRSensitivityConfig(tasks["full"], task.metric, task.sweep)
    ci = LRSensitivityConfig(
        dataclasses.replace(tasks["ci"], steps=20, log_every=10, checkpoint_every=10, warmup_steps=5),
        task.metric,
        task.sweep,
        rungs=(1e-3, 1e-1),
        seeds=(200,),
        qk_lrs=tuple((arm, 1e-2) for arm in ARMS),  # fixed: a ci run reads no sweep
        tuned_at=1e-3,
    )
    return {"full": full, "ci": ci}


def _entry(name: str, task: Task) -> Experiment:
    probe = LRSensitivityConfig(None, task.metric, task.sweep)
    return Experiment(
        f"{name}_lr_sensitivity",
        _profiles(task),
        arm_names(probe),
        runner(task),
        f"{name}: the model lr over 1e-4 ... 1e-1 (7 rungs), four arms at their tuned W_Q, W_K ratio, seeds 200-202",
        arms_of=arm_names,
        resolve=resolver(task),
    )


# The character model trained three times as long (issue 52: its best arm under 2.5 bits per
# character), its model lr checked again at that length before any other run there
# (``book/protocol.yml``, ``charlm_long_model_lr``): AdamW alone, W_Q, W_K at its tuned ratio (10x,
# charlm_qk_lr's choice at model lr 1e-3), on selection seeds; four rungs first, the ladder's others
# run only when named (a choice at an edge grows the grid by one rung).
LONG_STEPS = 4500
LONG_START = (1e-3, 3e-3, 1e-2, 3e-2)


def _long_check() -> Experiment:
    task = TASKS["charlm"]
    fixed = {"arms": ("baseline",), "qk_lrs": (("baseline", 1e-2),), "tuned_at": 1e-3}
    full = LRSensitivityConfig(
        dataclasses.replace(charlm.PROFILES["full"], steps=LONG_STEPS),
        task.metric,
        task.sweep,
        seeds=(100, 101, 102),
        **fixed,
    )
    ci = dataclasses.replace(_profiles(task)["ci"], seeds=(100,), **fixed)
    start = lambda config: tuple(  # noqa: E731
        grid_arm("baseline", KEY, lr) for lr in config.rungs if lr in LONG_START or config.rungs != RUNGS
    )
    return Experiment(
        "charlm_long_model_lr",
        {"full": full, "ci": ci},
        start(full),
        runner(task),
        f"the character model over {LONG_STEPS:,} steps: AdamW's model lr on 1e-3 ... 3e-2 (grown by the ladder), "
        "W_Q, W_K at 10x, selection seeds 100-102",
        optional_arms=tuple(a for a in arm_names(full) if a not in start(full)),
        arms_of=start,
    )


ENTRIES = (*(_entry(name, task) for name, task in TASKS.items()), _long_check())
