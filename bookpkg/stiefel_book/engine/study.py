"""One study: a W_Q, W_K learning-rate sweep on selection seeds grown by the declared ladder rule,
the resolve step that reads each arm's rate from the sweep's file before the judged runs, the
judged runs on paired seeds, and the diverged-run rule. Every experiment that sweeps and judges
(the fair fight at p = 31 and p = 97, CIFAR-10's core and relatives' sweeps, the decay map tuned
decay by decay, the routing tasks) declares a :class:`Study` and asks it.

The rule itself (ladder, score, choice, growth, ties, lr 0 below the ladder as frozen frames)
lives in :mod:`stiefel_book.choices`, declared in ``book/protocol.yml``; this module applies it.

A run of a sweep is ``"<arm>@qklr=<lr>"`` (``qklr`` is the results files' stored key for the W_Q,
W_K rate, kept as it is); lr 0 is the run ``"frozen"`` shared by every arm, or, where each arm
is a cell ``"<arm>@wd=<λ>"`` (frozen frames differ by decay), ``"<cell>@qklr=0"``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass

from stiefel_core.step_checks import NonFiniteGradientError

from .. import choices
from ..arms import QK_LR_KEY
from ..choices import LADDER, ladder_around
from ..results import load_results
from ..results_reading import grid_arm, without_seeds
from .registry import Experiment

__all__ = [
    "KEY",
    "FROZEN",
    "Study",
    "SweepError",
    "resolve_lrs",
    "judged_run",
    "resolved_lr",
    "stored_run",
    "adopted",
    "same_rate",
    "at_task_rate",
    "at_rate",
    "train_or_diverge",
    "sweep_entry",
    "judged_entry",
]

KEY = QK_LR_KEY  # the stored key of a run's W_Q, W_K rate (results files' grammar; in code: ``qk_lr``)
FROZEN = "frozen"


# (task, arm, seed, device, checkpoint, progress, qk_lr) -> outcome; qk_lr 0: frozen frames
Train = Callable[..., dict]


@dataclass(frozen=True)
class Study:
    """A sweep of each of ``arms``' W_Q, W_K rate on ``task`` and selection ``seeds``, grown by the
    ladder rule, whose choices judged runs take. ``metric`` is a run's late score (``"-name"``:
    lower is better) or ``"time"`` (minus the epochs to the file's ``threshold``)."""

    name: str  # the sweep's experiment: its results file, and the command that grows it
    task: object  # the sweep's task config; its ``lr`` centers the ladder (unless ``centers``)
    arms: tuple[str, ...]  # the swept arms, or cells "<arm>@wd=<λ>"
    seeds: tuple[int, ...]  # the selection seeds
    train: Train | None = None  # one run (see :data:`Train`)
    metric: str = "val_acc"
    horizon: str = "epochs"  # the task's length field the late score reads: "epochs" or "steps"
    start: tuple[int, int] = (2, 1)  # the first grid: rungs below and above the center
    centers: tuple[tuple[str, float], ...] = ()  # arms whose ladder centers elsewhere than the task's lr
    optional: tuple[str, ...] = ()  # arms swept only when named: outside the first grid a profile runs
    frozen: str | None = FROZEN  # lr 0's run name shared by every arm; None: "<arm>@qklr=0" per arm
    floor: bool = True  # whether lr 0 (frozen frames, below the ladder) is a run this sweep can make
    diverged: bool = False  # the diverged-run rule: a run whose gradients turn non-finite scores 0
    judged_seeds: tuple[int, ...] = ()  # the judged runs' seeds: refused where they meet the selection seeds

    def __post_init__(self):
        shared = sorted(set(self.seeds) & set(self.judged_seeds))
        if shared:
            raise ValueError(f"{self.name}: judged seeds {shared} are its selection seeds: judge on other seeds")

    @classmethod
    def at(cls, name: str, config, arms: tuple[str, ...], train: Train | None = None, **fields) -> Study:
        """Sweep ``name`` of ``arms`` at a profile ``config``: its task and selection seeds, its first grid
        (``start_below``, ``start_above``) and ``metric`` where it sets them, the horizon its task's length
        (``steps`` where it counts them); ``fields``: the others (``centers`` a dict)."""
        if hasattr(config, "start_below"):
            fields.setdefault("start", (config.start_below, config.start_above))
        fields.setdefault("metric", getattr(config, "metric", "val_acc"))
        fields.setdefault("horizon", "steps" if hasattr(config.task, "steps") else "epochs")
        fields["centers"] = tuple(dict(fields.get("centers", {})).items())
        return cls(name, config.task, arms, config.seeds, train, **fields)

    # --- the grid ------------------------------------------------------------------------------

    def center(self, arm: str, task_lr: float | None = None) -> float:
        """Where ``arm``'s ladder is centered: its own center, else the task's lr (``task_lr``: a file's)."""
        return dict(self.centers).get(arm, self.task.lr if task_lr is None else task_lr)

    def start_rungs(self, arm: str) -> tuple[float, ...]:
        return ladder_around(self.center(arm), *self.start)

    def run_name(self, arm: str, qk_lr: float) -> str:
        """The results key of ``arm``'s run at ``qk_lr`` (lr 0: :attr:`frozen` where shared)."""
        return self.frozen if qk_lr == 0.0 and self.frozen else grid_arm(arm, KEY, qk_lr)

    def start_arms(self, with_frozen: bool = False) -> tuple[str, ...]:
        """Every arm's first grid (then ``frozen``, lr 0, when ``with_frozen``)."""
        first = tuple(self.run_name(a, lr) for a in self.arms if a not in self.optional for lr in self.start_rungs(a))
        return (*first, self.frozen) if with_frozen else first

    def run_names(self, arms: tuple[str, ...] | None = None) -> tuple[str, ...]:
        """Every run the sweep of ``arms`` (default its own) may make: each rung of the ladder, and lr 0
        (a shared ``frozen`` last; a cell's own lr 0 first)."""
        arms = arms or self.arms
        if self.frozen:
            shared = (self.frozen,) if self.floor else ()
            return (*(grid_arm(arm, KEY, lr) for arm in arms for lr in LADDER), *shared)
        rungs = ((0.0,) if self.floor else ()) + LADDER
        return tuple(grid_arm(arm, KEY, lr) for arm in arms for lr in rungs)

    def parse(self, name: str) -> tuple[str, float]:
        """``(arm, qk_lr)`` of a run name; refused (one clear error) unless the arm is swept here and
        the lr a rung (or 0)."""
        if self.frozen and name == self.frozen:
            return FROZEN, 0.0
        arm, sep, value = name.rpartition(f"@{KEY}=")
        if not sep or arm not in self.arms:
            decays = sorted({float(a.split("@wd=")[1]) for a in self.arms if "@wd=" in a})
            cells = f" (λ in {tuple(decays)})" if decays else ""
            raise ValueError(f"{name!r}: expected '<arm>@{KEY}=<lr>' with the arm one of {self.arms}{cells}")
        try:
            lr = float(value)
        except ValueError:
            raise ValueError(f"{name!r}: {value!r} is not a number") from None
        if lr not in LADDER and not (lr == 0.0 and self.floor):
            raise ValueError(f"{name!r}: lr {lr:g} must lie on the ladder {LADDER}{' or be 0' * self.floor}")
        return arm, lr

    # --- the rule, on a results file -----------------------------------------------------------

    def scores(self, results: dict | None, arm: str) -> dict[float, list[float]]:
        """``{lr: [score per finished selection seed]}`` of ``arm`` in the sweep's file (higher is better)."""
        if not results:
            return {}
        if self.metric == "time":
            return choices.time_scores(results, arm, KEY)
        metric = results["config"].get("metric", self.metric)  # a file that says what it scored
        return choices.late_scores(results, arm, metric, key=KEY, horizon=self.horizon)

    def pending_rungs(self, results: dict | None, arm: str) -> tuple[float, ...]:
        """The rungs ``arm`` still needs: its first grid's unfinished rungs, else the rule's next ones."""
        scores = self.scores(results, arm)
        return choices.pending_rungs(scores, len(self.seeds), self.start_rungs(arm), self.center(arm))

    def pending(self, results: dict | None, arms: tuple[str, ...] | None = None) -> list[str]:
        """The sweep's next round as run names; empty once every choice is final."""
        names = (self.run_name(arm, lr) for arm in arms or self.arms for lr in self.pending_rungs(results, arm))
        return list(dict.fromkeys(names))

    def chosen(self, results: dict, arm: str, required: bool = False) -> dict | None:
        """``{"lr", "score", "interior", "scores"}``: the rule's choice for ``arm``, on the seeds and
        task lr the file records; ``None`` before a rung holds every selection seed (``required``: refused)."""
        config = results["config"]
        n, center = len(config["seeds"]), self.center(arm, config["task"]["lr"])
        scores = self.scores(results, arm)
        return choices.settled(scores, n, center) if required else choices.settled_or_none(scores, n, center)

    def in_cells(self, key: str, value: float) -> Callable[[dict, str], dict | None]:
        """``(results, arm) -> the choice of the arm's cell "<arm>@<key>=<value>"`` (a judged run's choice)."""
        return lambda results, arm: self.chosen(results, grid_arm(arm, key, value))

    def grow(self, run_experiment: Callable, profile: str, arms: tuple[str, ...] | None = None, **options) -> dict:
        """Run the pending rounds of ``arms`` (default all) with ``run_experiment`` until every choice is final,
        each round reading the results file (a stopped sweep resumes); the sweep's results."""
        while True:
            results = load_results(self.name, profile, options.get("directory"))
            names = list(dict.fromkeys(self.pending(results, arms)))
            if not names:
                return results
            run_experiment(self.name, profile, arms=names, **options)

    # --- runs ----------------------------------------------------------------------------------

    def run(self, name: str, seed: int, device, checkpoint=None, progress=True) -> dict:
        """One run of the sweep: ``name`` from selection ``seed``."""
        arm, lr = self.parse(name)
        task = dataclasses.replace(self.task, seeds=(seed,))
        return train_or_diverge(self.train, task, arm, seed, device, checkpoint, progress, lr, self.diverged)

    def resolve(self, config, directory=None, choose: Callable[[dict, str], dict | None] | None = None):
        """``config`` with each of its arms' rates chosen from this sweep's file (:func:`resolve_lrs`)."""
        return resolve_lrs(config, self.name, choose or self.chosen, directory)


class SweepError(ValueError):
    """Judged runs whose sweep is missing, unsettled, or of another setting (one line: the command to run)."""


def resolve_lrs(
    config,
    sweep: str | Callable,
    choose: Callable[[dict, str], dict | None],
    directory=None,
    arms=None,
    *,
    files: dict | None = None,
    named: tuple[str, ...] = (),
):
    """The resolve step: ``config`` with ``qk_lrs`` set to ``choose(sweep file, arm)["lr"]`` for each
    of ``arms`` (default ``config.arms``), read from the file of ``sweep`` at ``config.sweep_profile`` before
    any run; where arms take their choices from several sweeps, ``sweep(arm)`` is ``(sweep, choose, key)``.
    ``files``: ``{sweep: (its results, the command that grows it)}`` read already (:func:`.routing_sweep.sweep_file`);
    ``named``: the arms a sweep grows only when named.

    A config that has ``qk_lrs`` is kept. Refused (:class:`SweepError`), with the command that grows the sweep
    (naming its ``named`` arms), while a file is missing or any arm's choice is open (none yet, or at a grid's edge)."""
    if config.qk_lrs:
        return config
    route = sweep if callable(sweep) else lambda arm: (sweep, choose, arm)
    files, lrs, open_arms = dict(files or {}), [], {}  # open_arms: {a sweep: its open arms}
    for arm in arms or config.arms:
        name, pick, key = route(arm)
        if name not in files:
            command = f"`python -m stiefel_book sweep {name} --profile {config.sweep_profile}`"
            files[name] = load_results(name, config.sweep_profile, directory), command
            if not files[name][0]:
                raise SweepError(f"no W_Q, W_K lr sweep yet for these arms: run {command} first")
        chosen = pick(files[name][0], key)
        if chosen is None or not chosen["interior"]:
            open_arms.setdefault(name, []).append(arm)
        else:
            lrs.append((arm, chosen["lr"]))
    if open_arms:
        unsettled = [arm for group in open_arms.values() for arm in group]
        todo = " and ".join(
            _naming(files[name][1], [arm for arm in group if arm in named]) for name, group in open_arms.items()
        )
        raise SweepError(
            f"the sweep has not settled {unsettled} (no choice yet, or one at a grid edge): grow it with {todo} first"
        )
    return dataclasses.replace(config, qk_lrs=tuple(lrs))


def _naming(command: str, arms: list[str]) -> str:
    """A sweep's ``command`` naming ``arms`` (those it grows only when named)."""
    return command[:-1] + f" --arms {' '.join(arms)}`" if arms else command


def judged_run(
    train: Train, config, arm: str, seed: int, device, checkpoint=None, progress=True, *, diverged: bool = False
) -> dict:
    """One judged run: ``arm`` from ``seed`` on ``config.task`` at the rate ``config.qk_lrs`` holds
    for it; ``frozen``, or a chosen rate of 0, is frozen frames; ``diverged``: the diverged-run rule
    applies. The outcome records its ``qk_lr``."""
    lr = 0.0 if arm == FROZEN else resolved_lr(config, arm)
    task = dataclasses.replace(config.task, seeds=(seed,))
    return {**train_or_diverge(train, task, arm, seed, device, checkpoint, progress, lr, diverged), "qk_lr": lr}


def resolved_lr(config, arm: str) -> float:
    """The W_Q, W_K lr ``config.qk_lrs`` holds for ``arm`` (an arm or a cell); refused where it holds none."""
    lrs = dict(config.qk_lrs)
    if arm not in lrs:
        raise ValueError(f"{arm!r} has no resolved W_Q, W_K lr in this config; it has {sorted(lrs)}")
    return lrs[arm]


def stored_run(name: str, profile: str, directory, task, key: str, *, whole_config: bool = False) -> dict | None:
    """Run ``key`` of results file ``name`` (``profile``) where that file trained on ``task`` (seeds aside; its
    config's ``task``, or its whole config where ``whole_config``): a run to adopt, the same computation; else None."""
    source = load_results(name, profile, directory)
    if source is None:
        return None
    stored = source["config"] if whole_config else source["config"]["task"]
    if without_seeds(stored) != without_seeds(json.loads(json.dumps(dataclasses.asdict(task)))):
        return None
    return source["runs"].get(key)


def adopted(source: str, config, key: str, directory, keep: Callable | None = None, whole_config: bool = False):
    """Run ``key`` of ``source``'s file (at ``config.sweep_profile``) where that file trained ``config.task``
    (:func:`stored_run`) and ``keep(run)`` holds: ``(the run, "<source>-<profile>")``, a run to adopt, the same
    computation; else ``None``."""
    run = stored_run(source, config.sweep_profile, directory, config.task, key, whole_config=whole_config)
    return None if run is None or (keep and not keep(run)) else (run, f"{source}-{config.sweep_profile}")


def same_rate(source: str) -> Callable:
    """The ``adopt`` of judged runs that ``source``'s file already holds: its run of the arm from the seed where
    it trained the same task at the same W_Q, W_K lr (:func:`adopted`), else ``None``: the run is made."""

    def adopt(config, arm: str, seed: int, directory=None) -> tuple[dict, str] | None:
        same = lambda run: run.get("qk_lr") == dict(config.qk_lrs).get(arm)  # noqa: E731
        return adopted(source, config, f"{arm}/{seed}", directory, same)

    return adopt


def at_task_rate(source: str, cut: Callable, *, base: Callable | None = None, whole_config: bool = False) -> Callable:
    """The ``adopt`` of judged runs that ``source``'s file made at the task's own W_Q, W_K lr: frozen frames, or an
    arm (``base(config, name, seed)``: the arm a run name trains) whose resolved lr is the task's, trains bit for
    bit as that file's run of the same name and seed on the same task (a W_Q, W_K lr equal to the task's is the
    task's lr): ``({**cut(its outcome), "qk_lr": the lr}, "<source>-<profile>")``, else ``None``."""

    def adopt(config, name: str, seed: int, directory=None) -> tuple[dict, str] | None:
        arm = base(config, name, seed) if base else name
        lr = 0.0 if arm == FROZEN else resolved_lr(config, arm)
        if arm != FROZEN and lr != config.task.lr:
            return None
        found = adopted(source, config, f"{name}/{seed}", directory, whole_config=whole_config)
        return found and ({**cut(found[0]), "qk_lr": lr}, found[1])

    return adopt


def at_rate(run: Callable, **fixed) -> Train:
    """A task's ``run(task, arm, seed, device, checkpoint, progress, *, qk_lr, **fixed)`` as a :data:`Train`:
    lr 0 is frozen frames (the arm ``frozen``, run without a W_Q, W_K lr)."""

    def train(task, arm, seed, device, checkpoint, progress, qk_lr):
        rate = {} if qk_lr == 0.0 else {"qk_lr": qk_lr}
        return run(task, FROZEN if qk_lr == 0.0 else arm, seed, device, checkpoint, progress, **rate, **fixed)

    return train


def diverged_outcome(epochs: int, error: Exception) -> dict:
    """The outcome of a run whose gradients turned non-finite (an lr too large for its arm): a
    result, scored 0 at the task's last epoch, naming the optimizer that diverged."""
    record = {"epoch": epochs, "train_acc": 0.0, "val_acc": 0.0}
    return {"history": [record], "final": record, "diverged": str(error).split(":")[0]}


def train_or_diverge(train: Train, task, arm, seed, device, checkpoint, progress, qk_lr, rule: bool = True) -> dict:
    """``train(...)``; where ``rule``, a run that diverges is :func:`diverged_outcome` and its
    checkpoint removed (it would resume into the same divergence)."""
    try:
        return train(task, arm, seed, device, checkpoint, progress, qk_lr)
    except NonFiniteGradientError as error:
        if not rule:
            raise
        if checkpoint is not None:
            checkpoint.unlink(missing_ok=True)
        return diverged_outcome(task.epochs, error)


def sweep_entry(
    name: str,
    profiles: dict,
    study_of: Callable,
    description: str,
    *,
    arms: tuple[str, ...] | None = None,
    with_frozen: bool = False,
    **options,
) -> Experiment:
    """The experiment of a sweep: ``study_of(profile config)`` is its :class:`Study`, whose runs it makes and whose
    first grid (then ``frozen`` where ``with_frozen``) a profile runs; ``arms`` (default: every run the full
    profile may make of the arms it sweeps unasked) are the names it accepts, and the runs of the study's
    ``optional`` arms when named; ``options`` go to :class:`Experiment` (``resolve``: a guard; ``adopt``)."""

    def run(config, arm: str, seed: int, device, checkpoint=None, progress=True) -> dict:
        return study_of(config).run(arm, seed, device, checkpoint, progress)

    full = study_of(profiles["full"])
    optional = getattr(full, "optional", ())
    arms = arms or (full.run_names(tuple(a for a in full.arms if a not in optional)) if optional else full.run_names())
    optional_arms = tuple(n for n in full.run_names(optional) if n not in arms) if optional else ()
    first = lambda config: study_of(config).start_arms(with_frozen)  # noqa: E731
    return Experiment(name, profiles, arms, run, description, optional_arms, first, study=study_of, **options)


def judged_entry(
    name: str, profiles: dict, arms: tuple[str, ...], train: Train, description: str, resolve: Callable, **options
) -> Experiment:
    """The experiment of judged runs: each arm from a seed at the rate ``resolve`` read from its sweep
    (:func:`judged_run`, by ``train``); ``options`` go to :class:`Experiment` (``adopt``, ``arms_of``)."""

    def run(config, arm: str, seed: int, device, checkpoint=None, progress=True) -> dict:
        return judged_run(train, config, arm, seed, device, checkpoint, progress)

    return Experiment(name, profiles, arms, run, description, resolve=resolve, **options)
