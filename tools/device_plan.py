"""The device job's plan (issue 28): grokking at p = 97 at tuned W_Q, W_K lrs.

First the runs the sweep ``grokking_p97_qk_lr`` still lacks, its grid grown by its own rule
(``p97_fair.study(config).pending``, the rule the sweep grows by);
then, once no sweep run is pending and the experiment's resolve step accepts the sweep's
choices, the judged runs of ``grokking_p97_fair`` (its seeds, paired: seed by seed), which resolve
their lrs from the sweep file themselves before they run. Each returned results file holds at
most what fits under a lent machine's file size; :func:`merge` adds a returned file's new runs
to the committed one.

:class:`Plan` is p = 97's; the character model's 2x2 (``device_charlm.CharLMPlan``) is the same
order on its own experiments, overriding the hooks that name them (configuration, study, resolve,
judged arms, the length field).

The job reads, of ``book/results``, only :func:`results_read`. Results files are found, read and
written by :mod:`stiefel_book.results_files` (gzip JSON; an older plain ``.json`` is still read).
"""

from __future__ import annotations

import dataclasses
import fcntl
import shutil
import sys
from pathlib import Path
from typing import Callable, NamedTuple

ROOT = Path(__file__).resolve().parents[1]
# the checkout's own packages, also on a lent machine that has no .venv: the library and the book's
sys.path[:0] = [path for path in (str(ROOT), str(ROOT / "bookpkg")) if path not in sys.path]

from stiefel_book import results_files  # noqa: E402

COMMITTED = ROOT / "book" / "results"  # the only folder of committed results the job reads
SWEEP, FAIR = "grokking_p97_qk_lr", "grokking_p97_fair"
EXPERIMENTS = (SWEEP, FAIR)  # in the order they run
MAX_FILE_BYTES = 15 * 2**20  # a lent machine returns files under 16 MiB
# the dry run's task, on the ci profiles (p = 31): seconds a run, most of it the worker's start
DRY_TASK = {"epochs": 40, "log_every": 10, "checkpoint_every": 20}
# the dry run's swept arms (frozen frames are judged beside them): two of the four rehearse the
# same plan (a grid grown per arm, then the judged runs at each arm's choice) in half the runs
DRY_ARMS = ("baseline", "stiefel")
# a run's bytes in a results file before any is written: its records (epochs / log_every) at the
# ~370 bytes a compact record takes (grokking_fair-full.json, uncompressed: 22 kB for 60 records a run;
# gzip makes a returned file smaller, so the prior errs on the safe side)
PRIOR_BYTES_PER_RECORD = 400

__all__ = [
    "SWEEP",
    "FAIR",
    "EXPERIMENTS",
    "Run",
    "results_read",
    "config",
    "epochs",
    "seed_work",
    "Plan",
    "merge",
]


class Run(NamedTuple):
    experiment: str
    arm: str
    seed: int

    @property
    def key(self) -> str:  # its key in the results file
        return f"{self.arm}/{self.seed}"


def results_read(profile: str = "full", experiments: tuple[str, ...] = EXPERIMENTS) -> list[str]:
    """The names of the committed results files a job (default p = 97's) reads (from :data:`COMMITTED`,
    in either form: ``NAME.json.gz`` or ``NAME.json``): nothing else of it."""
    return [f"{experiment}-{profile}" for experiment in experiments]


def config(experiment: str, profile: str, dry: bool):
    """The experiment's configuration (the dry run: its task cut to :data:`DRY_TASK`, its swept
    arms to :data:`DRY_ARMS`), unresolved."""
    from stiefel_book.experiments import get_config

    base = get_config(experiment, profile)
    return dataclasses.replace(base, task=dataclasses.replace(base.task, **DRY_TASK), arms=DRY_ARMS) if dry else base


def epochs(experiment: str, profile: str, dry: bool) -> int:
    return config(experiment, profile, dry).task.epochs


def _runs(path: Path | None) -> set[str]:
    return set(results_files.read(path)["runs"]) if path is not None and path.exists() else set()


def seed_work(results: Path, profile: str, experiments: tuple[str, ...] = EXPERIMENTS) -> dict[str, dict]:
    """Bring the committed runs into the job's results folder (``results``), where its workers
    write and the judged runs' resolve step reads the whole sweep; ``{experiment: {"committed",
    "earlier"}}``: the committed runs' keys, and those an earlier call on this machine added."""
    results.mkdir(parents=True, exist_ok=True)
    out = {}
    for experiment, name in zip(experiments, results_read(profile, experiments)):
        committed, work = results_files.find(COMMITTED, name), results_files.find(results, name)
        if committed is not None:
            if work is not None:
                merge(committed, work)
            else:
                shutil.copyfile(committed, results / committed.name)
                work = results / committed.name
        out[experiment] = {"committed": _runs(committed), "earlier": _runs(work) - _runs(committed)}
    return out


class Plan:
    """The runs still to run, in order: the sweep's pending rounds, then the judged runs.

    Called (``plan(busy)``) again whenever a run ends, it reads the results files in ``results``
    afresh: a sweep round that finished may grow the grid, or settle every choice and so unlock
    the judged runs. It names at most what fits each returned file (:data:`MAX_FILE_BYTES`).

    This class is p = 97's job; another job (``device_charlm.CharLMPlan``) names its own
    :attr:`experiments` and overrides the hooks below the line."""

    experiments = EXPERIMENTS  # (the sweep, the judged runs), in the order they run
    length = "epochs"  # the task's field that counts a run's length
    prior_ms = 5.0  # the estimate's ms an epoch where no benchmark measured one (the pool's pace takes over)
    startup_s = 60.0  # a worker's start on a GPU: imports, CUDA, compile (stated, not measured)
    bundles_checkpoints = True  # stopped runs' checkpoints return in one tar (they fit: 2.5 MB each)

    def __init__(self, results: Path, profile: str, dry: bool, say: Callable = print):
        self.results, self.profile, self.dry, self.say = results, profile, dry, say
        self.configs = {experiment: self.config(experiment, profile, dry) for experiment in self.experiments}
        self._said: set[str] = set()

    def note(self, text: str) -> None:  # each message once: the plan is asked after every run
        if text not in self._said:
            self._said.add(text)
            self.say(text)

    def file(self, experiment: str) -> Path:
        return results_files.target(self.results, f"{experiment}-{self.profile}")

    def epochs_of(self, run: Run) -> int:
        return getattr(self.task(run.experiment), self.length)

    def _load(self, experiment: str) -> dict | None:
        from stiefel_book.results import load_results

        return load_results(experiment, self.profile, self.results)

    def sweep_runs(self) -> list[Run]:
        """The sweep's pending round (its study's ``pending``), each rung's seeds not yet run."""
        name = self.experiments[0]
        sweep, cfg = self._load(name), self.configs[name]
        done = set(sweep["runs"]) if sweep else set()
        arms = self.study(cfg).pending(sweep, self.swept_arms())
        return [Run(name, arm, seed) for arm in arms for seed in cfg.seeds if f"{arm}/{seed}" not in done]

    def fair_runs(self) -> list[Run]:
        """The judged runs not yet run, once the experiment's resolve step accepts the sweep."""
        sweep, judged = self.experiments
        try:
            resolved = self.resolve(self.configs[judged])
        except ValueError as error:
            self.note(f"{judged} is not planned: {error}")
            return []
        lrs = ", ".join(f"{arm} {lr:g}" for arm, lr in resolved.qk_lrs)
        self.note(f"{sweep} has settled every choice (W_Q, W_K lr: {lrs}): {judged} is planned")
        done = set((self._load(judged) or {"runs": {}})["runs"])
        arms = self.judged_arms(resolved)
        return [Run(judged, arm, seed) for seed in resolved.seeds for arm in arms if f"{arm}/{seed}" not in done]

    def bytes_per_run(self, experiment: str) -> int:
        """A run's bytes in the returned file: measured in the job's file, else the prior."""
        path = self.file(experiment)
        runs = _runs(path)
        if runs:
            return max(1, path.stat().st_size // len(runs))
        task = self.task(experiment)
        return PRIOR_BYTES_PER_RECORD * (getattr(task, self.length) // task.log_every + 1)

    # --- the job's own: p = 97's (device_charlm.CharLMPlan overrides them) ----------------------

    @staticmethod
    def config(experiment: str, profile: str, dry: bool):
        """A worker's configuration of ``experiment`` (:func:`config`)."""
        return config(experiment, profile, dry)

    @classmethod
    def worker_config(cls, experiment: str, profile: str, dry: bool):
        """The configuration a worker runs ``experiment`` with (the job's :meth:`config`)."""
        return cls.config(experiment, profile, dry)

    def task(self, experiment: str):
        """The task configuration of ``experiment``'s runs."""
        return self.configs[experiment].task

    def study(self, sweep_config):
        from stiefel_book.experiments import p97_fair

        return p97_fair.study(sweep_config)

    def swept_arms(self) -> tuple[str, ...] | None:
        """The arms the sweep grows (``None``: its study's own, which the dry run's configuration cuts)."""
        return None

    def resolve(self, judged_config):
        """The judged configuration with the sweep's choices (refused, ``ValueError``, while one is open)."""
        from stiefel_book.experiments import EXPERIMENTS as REGISTRY

        return REGISTRY[FAIR].resolve(judged_config, self.results)

    def judged_arms(self, resolved) -> list[str]:
        """The judged runs' arms: a swept arm the configuration leaves out (the dry run's) is not judged;
        frozen frames are."""
        from stiefel_book.experiments import EXPERIMENTS as REGISTRY
        from stiefel_book.experiments import p97_fair

        arms = REGISTRY[FAIR].default_arms(resolved)
        return [arm for arm in arms if arm in resolved.arms or arm not in p97_fair.ARMS]

    def describe(self, experiment: str) -> str:
        return f"p = {self.task(experiment).p}, {self.task(experiment).epochs:,} epochs"

    def __call__(self, busy: set = frozenset()) -> list[Run]:
        runs = self.sweep_runs() or self.fair_runs()  # no judged run while any sweep run is pending
        runs = [run for run in runs if run not in busy]
        if not runs:
            return []
        experiment = runs[0].experiment
        per_run = self.bytes_per_run(experiment)
        room = MAX_FILE_BYTES // per_run - len(_runs(self.file(experiment)))
        room -= sum(run.experiment == experiment for run in busy)
        if len(runs) > room:
            self.note(
                f"at about {per_run:,} bytes a run, {max(0, room)} more runs of {experiment} fit one returned "
                "file: the plan is cut"
            )
            runs = runs[: max(0, room)]
        return runs

    def statement(self) -> str:
        parts = []
        for experiment in self.experiments:
            cfg = self.configs[experiment]
            parts.append(
                f"{experiment} ({self.profile}: {self.describe(experiment)}, seeds "
                f"{', '.join(map(str, cfg.seeds))}, {len(_runs(self.file(experiment)))} runs in hand)"
            )
        return "plan: " + "; then ".join(parts)


def merge(source: Path, target: Path) -> dict:
    """Add ``source``'s runs that ``target`` lacks (under the results files' lock); refuse a
    file of another experiment, profile or configuration. ``target`` names the file in either
    form (``NAME.json`` or ``NAME.json.gz``): the one there is read, and it is written as gzip."""
    from stiefel_book.results import write_results
    from stiefel_book.results_reading import shared_config

    new = results_files.read(source)
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(results_files.lock_path(target), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        target = results_files.target(target.parent, results_files.stem(target))
        old = results_files.read(target) if target.exists() else {**new, "runs": {}}
        for key in ("experiment", "profile"):
            if old[key] != new[key]:
                raise ValueError(f"{source} holds {key} {new[key]!r}, {target} {old[key]!r}: merge a file into its own")
        if shared_config(old["config"], old) != shared_config(new["config"], old):
            raise ValueError(
                f"{source} was run with another configuration than {target}: the runs cannot be "
                "mixed; rerun them at the committed code, or keep them apart"
            )
        added = sorted(set(new["runs"]) - set(old["runs"]))
        old["runs"].update({key: new["runs"][key] for key in added})
        old["config"] = {**new["config"], "seeds": old["config"].get("seeds", [])}  # the new runs' settings too
        old["config"]["seeds"] = sorted(set(old["config"].get("seeds", [])) | set(new["config"].get("seeds", [])))
        write_results(old, target)
    return {"added": added, "already_there": sorted(set(new["runs"]) - set(added))}
