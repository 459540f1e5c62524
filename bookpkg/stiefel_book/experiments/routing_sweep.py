"""The routing tasks' profiles (MQAR, induction, the character model; the tasks themselves:
:mod:`stiefel_book.tasks.routing`, :mod:`stiefel_book.tasks.charlm`) and their W_Q, W_K lr sweeps
(``mqar_qk_lr``, ``induction_qk_lr``, ``charlm_qk_lr``, and those at a checked model lr) by :mod:`..engine.study`,
on selection seeds 100-104, scored by the late validation accuracy (the language model: minus the bits per
character); their judged experiments' resolve step (:func:`resolver`) and the checks it makes of the
sweep's file (:func:`sweep_file`).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Callable

from ..engine.registry import SWEEP_CI, profiles
from ..engine.study import KEY, Study, SweepError, at_rate, resolve_lrs, sweep_entry
from ..results import load_results
from ..tasks import charlm, routing
from ..tasks.charlm import CharLMConfig
from ..tasks.routing import InductionConfig, MQARConfig

__all__ = [
    "MQAR_PROFILES",
    "INDUCTION_PROFILES",
    "MQAR_CHECKED_LR",
    "MQAR_CHECKED_PROFILES",
    "CHARLM_PROFILES",
    "CHARLM_LONG_STEPS",
    "CHARLM_LONG_LR",
    "CHARLM_LONG_PROFILES",
    "SWEPT_ARMS",
    "KEY",
    "READER",
    "RoutingSweepConfig",
    "study",
    "sweep_file",
    "chosen",
    "resolver",
    "checked",
    "SweepError",
    "SWEEPS",
    "ENTRIES",
    "task_setting",
]

CI = dict(batch_size=16, steps=60, log_every=20, checkpoint_every=20, val_size=64, warmup_steps=10, seeds=(0,))
MQAR_PROFILES = {"full": MQARConfig(), "ci": MQARConfig(n_embd=32, **CI)}
INDUCTION_PROFILES = {"full": InductionConfig(), "ci": InductionConfig(vocab_size=32, half_len=8, n_embd=32, **CI)}
# MQAR at the model lr its declared check chose (book/protocol.yml, mqar_model_lr: AdamW's late query
# accuracy 100 % at 1e-3 against 74 % at the task's 3e-3; tests/test_checked_lrs.py ties the two):
# the sweep mqar_checked_qk_lr, the 2x2's MQAR half and mqar_fresh run here
MQAR_CHECKED_LR = 1e-3
MQAR_CHECKED_PROFILES = {"full": MQARConfig(lr=MQAR_CHECKED_LR), "ci": MQARConfig(n_embd=32, lr=MQAR_CHECKED_LR, **CI)}


CHARLM_PROFILES = {
    "full": CharLMConfig(),
    "ci": CharLMConfig(
        n_embd=32,
        block_size=32,
        batch_size=16,
        steps=30,
        warmup_steps=5,
        val_windows=16,
        log_every=10,
        checkpoint_every=10,
        seeds=(0,),
    ),
}

# Trained three times as long (issue 52: the best arm under 2.5 bits per character), at the model lr
# the long check chose at that length (book/protocol.yml, charlm_long_model_lr's rule, read by
# stiefel_book.model_lr.ladder_choice from its results file; tests/test_checked_lrs.py ties the two),
# judged on seeds 0-9 (family charlm_long)
CHARLM_LONG_STEPS = 4500
CHARLM_LONG_LR = 1e-2
CHARLM_LONG_PROFILES = {
    "full": dataclasses.replace(
        CHARLM_PROFILES["full"], steps=CHARLM_LONG_STEPS, lr=CHARLM_LONG_LR, seeds=tuple(range(10))
    ),
    "ci": dataclasses.replace(CHARLM_PROFILES["ci"], steps=40, lr=CHARLM_LONG_LR),
}


SWEPT_ARMS = ("baseline", "stiefel", "no_decay_qk", "qk_norm", "muon")
OPTIONAL_SWEPT_ARMS = ("manifold_muon",)  # swept only when named (--arms): the 2x2's fourth corner
# The rung an arm's first grid is centred on, and its ties go to, where it is not the task's lr
# (book/protocol.yml, routing_qk_lr's arms_added: manifold Muon's lr moves a frame by about lr in
# spectral norm)
START_AROUND = {"manifold_muon": 1e-2}


@dataclass(frozen=True)
class RoutingSweepConfig:
    task: object  # the task's config (its ``steps`` is the score's horizon)
    metric: str = "val_acc"  # higher is better; a leading "-" negates (``-val_bpc``)
    seeds: tuple[int, ...] = (100, 101, 102, 103, 104)  # selection seeds, apart from the judged 0-19
    start_below: int = 2  # the first grid: two rungs under the task's lr, one over it
    start_above: int = 1


def study(
    name: str, config: RoutingSweepConfig, run_task: Callable | None = None, arms=SWEPT_ARMS + OPTIONAL_SWEPT_ARMS
) -> Study:
    """Sweep ``name`` at a profile: each of ``arms`` (the optional ones grown only when named), the
    late ``config.metric`` over the task's steps."""
    optional = tuple(a for a in arms if a in OPTIONAL_SWEPT_ARMS)
    return Study.at(name, config, arms, at_rate(run_task), centers=START_AROUND, optional=optional)


# reads a sweep's file: the metric, seeds and task lr it records are the file's
READER = Study("", None, SWEPT_ARMS + OPTIONAL_SWEPT_ARMS, (), horizon="steps", centers=tuple(START_AROUND.items()))


def chosen(results: dict, arm: str) -> dict:
    """``{"lr", "score", "interior", "scores"}``: the rule's choice for ``arm`` (refused before a complete rung)."""
    return READER.chosen(results, arm, required=True)


UNSWEPT = ("seeds", "qk_lr", "qk_lrs")  # what a judged config may differ in from its sweep's task


def task_setting(task) -> dict:
    """A task config as its results file stores it (JSON), without the fields a sweep leaves open."""
    stored = task if isinstance(task, dict) else json.loads(json.dumps(dataclasses.asdict(task)))
    return {k: v for k, v in stored.items() if k not in UNSWEPT}


def sweep_file(sweep: str, profiles: dict, task, seeds, directory=None, profile: str | None = None) -> tuple[dict, str]:
    """The results file of sweep ``sweep`` (profiles ``profiles``) that swept ``task``'s setting, and the command
    that grows it: at ``profile``, else the profile whose task it is. Refused (:class:`SweepError`, with the command
    to run) where no profile sweeps that setting, the judged ``seeds`` are selection seeds, or the file is missing
    or holds a sweep of another setting."""
    if profile is None:
        profile = next((p for p, c in profiles.items() if task_setting(c.task) == task_setting(task)), None)
        if profile is None:
            raise SweepError(
                f"no profile of {sweep} sweeps this setting ({sorted(profiles)} sweep others): "
                "judge a setting a sweep profile runs, or add that profile"
            )
    elif task_setting(profiles[profile].task) != task_setting(task):
        raise SweepError(f"{sweep} ({profile}) sweeps another setting than these judged runs")
    command = f"`python -m stiefel_book sweep {sweep} --profile {profile}`"
    shared = sorted(set(seeds) & set(profiles[profile].seeds))
    if shared:
        raise SweepError(f"judged seeds {shared} are {sweep}'s selection seeds: judge on other seeds")
    results = load_results(sweep, profile, directory)
    if not results:
        raise SweepError(f"no sweep of this setting yet: run {command} first")
    if task_setting(results["config"]["task"]) != task_setting(task):
        raise SweepError(f"{sweep} ({profile}) holds a sweep of another setting: move it away and run {command}")
    return results, command


def resolver(sweep_name: str, arms: tuple[str, ...] = SWEPT_ARMS, profiles: dict | None = None) -> Callable:
    """The ``resolve`` of the experiment judged by sweep ``sweep_name``: ``(config, directory) ->
    config`` with each of ``arms``' chosen W_Q, W_K lr in ``qk_lrs`` (:func:`..engine.study.resolve_lrs`, a
    config that has them kept); refused as :func:`sweep_file` refuses, and while a choice is unsettled.
    ``profiles``: the sweep's, where it is not one of :data:`SWEEPS`."""

    guard = checked(sweep_name)  # runs at a checked model lr wait for the check that chose it, as their sweep

    def resolve(config, directory=None):
        if guard:
            guard(dataclasses.replace(config, seeds=(), qk_lrs=()), directory)
        if config.qk_lrs:  # chosen already (a chapter's live run, a test)
            return config
        swept = SWEEPS[sweep_name][0] if profiles is None else profiles
        files = {sweep_name: sweep_file(sweep_name, swept, config, config.seeds, directory)}
        return resolve_lrs(config, sweep_name, READER.chosen, directory, arms, files=files, named=OPTIONAL_SWEPT_ARMS)

    return resolve


def _profiles(tasks: dict, metric: str = "val_acc", **fields) -> dict:
    return profiles(RoutingSweepConfig, tasks, SWEEP_CI, metric=metric, **fields)


SWEEPS = {  # sweep name -> (its profiles, the task's run)
    "mqar_qk_lr": (_profiles(MQAR_PROFILES), routing.run_mqar),
    "induction_qk_lr": (_profiles(INDUCTION_PROFILES), routing.run_induction),
    "charlm_qk_lr": (_profiles(CHARLM_PROFILES, "-val_bpc"), charlm.run),
    # MQAR at its checked model lr (mqar_checked_qk_lr)
    "mqar_checked_qk_lr": (_profiles(MQAR_CHECKED_PROFILES), routing.run_mqar),
    # the character model at 4,500 steps and its checked model lr (charlm_long_qk_lr): 3 selection seeds
    "charlm_long_qk_lr": (_profiles(CHARLM_LONG_PROFILES, "-val_bpc", seeds=(100, 101, 102)), charlm.run),
}


def checked(sweep_name: str) -> Callable | None:
    """The guard of a sweep made at a checked model lr (``None`` for the others): it runs only where the
    check's file chose that lr (:func:`.checked_lr.at_checked_lr`)."""
    from ..model_lr import check_choice
    from .checked_lr import at_checked_lr

    if sweep_name == "charlm_long_qk_lr":
        return at_checked_lr("charlm_long_model_lr", CHARLM_LONG_PROFILES["full"])
    if sweep_name == "mqar_checked_qk_lr":
        return at_checked_lr("mqar_model_lr", MQAR_CHECKED_PROFILES["full"], choose=check_choice(0.02))
    return None


ENTRIES = tuple(  # each sweep's first grid and runs of SWEPT_ARMS, manifold Muon's when named
    sweep_entry(
        name,
        profiles,
        lambda config, name=name, run_task=run_task: study(name, config, run_task),
        f"{name.removesuffix('_qk_lr')}: every arm's W_Q, W_K lr swept on 5 selection seeds until interior",
        with_frozen=True,
        resolve=checked(name),  # a sweep at a checked model lr waits for the check
    )
    for name, (profiles, run_task) in SWEEPS.items()
)
