"""The device check's paper-scale job: grokking at p = 97 (``grokking``, profile ``full``:
20,000 epochs), the fair fight's arms there (baseline, stiefel, frozen, no_decay_qk; qk_norm once
the experiment runs it) at six paired seeds first, then more while time allows, as several
processes sharing one GPU.

    python tools/device_job.py merge device-results/runs/grokking-full.json   # into book/results/
    python tools/device_job.py worker ARM SEED --profile full --device cuda   # one run (the job starts these)

:func:`run_job` plans the runs the committed results file lacks, sizes the first wave by a
stated estimate (the grokking epoch benchmark's time, measured just before), and starts a run
only while its expected time fits before the deadline, where a guard stops what still runs:
runs write their results file when they finish and their checkpoints every 1,000 epochs, both
atomically, so a stopped job loses only the epochs since each run's last checkpoint, and a
later call resumes (finished runs are skipped; a stopped run resumes from its checkpoint).
"""

from __future__ import annotations

import argparse
import dataclasses
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENT = "grokking"
# The fair fight's p = 97 arms (issue 28); those the grokking experiment does not run yet
# (qk_norm, until it is one of its arms) are left out by runnable_arms, and join when they are.
PLAN_ARMS = ("baseline", "stiefel", "frozen", "no_decay_qk", "qk_norm")
PLAN_SEEDS = tuple(range(6))  # the fair fight's p = 97 plan: six paired seeds an arm
MORE_SEEDS = (6, 7)  # then more paired seeds while time allows (about 1 MB a run in the file)
MAX_FILE_BYTES = 15 * 2**20  # a lent machine returns files under 16 MiB
CHECKPOINT_BUNDLE = "checkpoints.tar"
DRY_CONFIG = {"epochs": 40, "log_every": 10, "checkpoint_every": 20}  # on the ci profile: seconds a run


@dataclass(frozen=True)
class Estimate:
    """One run's expected wall time when ``n`` processes share the device: the stated estimate.

    ``sharing`` is the throughput of ``n`` processes together, in single processes' worth, at
    most; 1 by default, the safe bound (time-sliced GPU contexts may gain nothing). The job
    measures the real gain (its ``aggregate``), which ``DEVICE_CHECK_SHARING`` may state next time.
    """

    ms_per_epoch: float  # one process alone: the grokking epoch benchmark's slower arm, or a prior
    source: str  # where ms_per_epoch comes from
    epochs: int
    startup_s: float = 60.0  # import, CUDA context and torch.compile of the model (stated, not measured)
    logging_factor: float = 1.3  # an evaluation every 20 epochs, which the benchmark leaves out
    sharing: float = 1.0

    def run_seconds(self, n: int) -> float:
        slowdown = n / min(n, self.sharing)
        return self.startup_s + self.epochs * self.ms_per_epoch / 1e3 * self.logging_factor * slowdown

    def processes(self, seconds_left: float, most: int) -> int:
        """The most processes (at most ``most``) whose runs are expected to finish in time; 0 if none."""
        fitting = [n for n in range(1, most + 1) if self.run_seconds(n) <= seconds_left]
        return max(fitting, default=0)

    def statement(self, n: int, seconds_left: float) -> str:
        return (
            f"estimate: one run = {self.startup_s:.0f} s start (imports, CUDA, compile) + {self.epochs:,} epochs "
            f"x {self.ms_per_epoch:.2f} ms ({self.source}) x {self.logging_factor} (evaluations) "
            f"x {n}/{min(n, self.sharing):g} ({n} processes sharing the device at an assumed {self.sharing:g}x "
            f"one process's throughput, at most) = {self.run_seconds(n):.0f} s; "
            f"{seconds_left:.0f} s left before the guard"
        )


def runnable_arms() -> tuple[str, ...]:
    """The plan's arms that ``run_experiment("grokking")`` runs."""
    from stiefel_core.experiments import EXPERIMENTS

    experiment = EXPERIMENTS[EXPERIMENT]
    return tuple(arm for arm in PLAN_ARMS if arm in experiment.arms + experiment.optional_arms)


def plan(done: set[str], arms: tuple[str, ...], seeds=PLAN_SEEDS + MORE_SEEDS) -> list[tuple[str, int]]:
    """The runs still missing, seed by seed (so arms stay paired), the plan's six seeds first."""
    return [(arm, seed) for seed in seeds for arm in arms if f"{arm}/{seed}" not in done]


def committed_runs(profile: str) -> tuple[set[str], int | None]:
    """The run keys of the repository's results file, and its bytes per run (None: no file)."""
    path = ROOT / "book" / "results" / f"{EXPERIMENT}-{profile}.json"
    if not path.exists():
        return set(), None
    runs = json.loads(path.read_text())["runs"]
    return set(runs), path.stat().st_size // max(1, len(runs))


@dataclass
class Launched:
    key: tuple[str, int]
    process: subprocess.Popen
    started: float


def stop(processes: list[subprocess.Popen], grace_s: float = 10.0) -> None:
    """SIGTERM to each worker's process group (its compile workers too), SIGKILL to those left
    after ``grace_s``."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for process in processes:
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                pass
        end = time.monotonic() + grace_s
        while any(p.poll() is None for p in processes) and time.monotonic() < end:
            time.sleep(0.1)


def supervise(
    queue: list,
    start: Callable,
    deadline: float,
    estimate: Estimate,
    most: int,
    *,
    on_exit: Callable = lambda key, rc: None,
    say: Callable = print,
    clock=time.monotonic,
    poll_s: float = 1.0,
) -> dict:
    """Run ``queue`` (keys) by ``start(key) -> Popen``, at most ``n`` at a time, ``n`` sized by
    ``estimate``; a run starts only while its expected time (the slowest finished run's, else
    the estimate's) ends before ``deadline``, where the guard stops the runs still going."""
    queue, running, outcome = list(queue), [], {"finished": [], "failed": [], "stopped": [], "not_started": []}
    seconds = []
    n = estimate.processes(deadline - clock(), min(most, len(queue))) if queue else 0
    say(estimate.statement(max(n, 1), deadline - clock()))
    say(f"launching up to {n} at once" if n else "not even one run is expected to fit: none started")
    while running or (queue and n):
        for run in list(running):
            rc = run.process.poll()
            if rc is None:
                continue
            running.remove(run)
            (outcome["finished"] if rc == 0 else outcome["failed"]).append(run.key)
            if rc == 0:
                seconds.append(clock() - run.started)
            say(
                f"{'finished' if rc == 0 else f'FAILED (exit {rc})'}: {run.key[0]} seed {run.key[1]} in "
                f"{clock() - run.started:.0f} s"
            )
            on_exit(run.key, rc)
        if clock() >= deadline:
            stop([run.process for run in running])
            for run in running:
                outcome["stopped"].append(run.key)
                say(f"stopped by the guard (resumable from its last checkpoint): {run.key[0]} seed {run.key[1]}")
                on_exit(run.key, None)
            running = []
            break
        expected = max(seconds) if seconds else estimate.run_seconds(n)
        while queue and len(running) < n and clock() + expected <= deadline:
            key = queue.pop(0)
            running.append(Launched(key, start(key), clock()))
            say(f"started: {key[0]} seed {key[1]} (expected {expected:.0f} s)")
        if not running:
            break
        time.sleep(poll_s)
    outcome.update(not_started=queue, run_seconds=seconds, processes=n)
    return outcome


def run_job(
    out: Path,
    work: Path,
    deadline: float,
    ms_per_epoch: float | None,
    *,
    dry: bool,
    device: str,
    say: Callable = print,
    most: int = 7,
) -> dict:
    """The job: plan, estimate, supervise. ``work`` keeps its results file, checkpoints and logs
    (on a GPU machine ``device-work/``, so that a second call there resumes the first); the
    results file is copied to ``out/runs`` after every run, and the checkpoints of stopped runs
    are bundled beside it where they fit."""
    profile = "ci" if dry else "full"
    from stiefel_core.experiments import get_config

    config = get_config(EXPERIMENT, profile, **(DRY_CONFIG if dry else {}))
    results, checkpoints, logs, runs_out = work / "results", work / "checkpoints", work / "logs", out / "runs"
    for folder in (results, logs, runs_out):
        folder.mkdir(parents=True, exist_ok=True)
    name = f"{EXPERIMENT}-{profile}.json"
    earlier = set(json.loads((results / name).read_text())["runs"]) if (results / name).exists() else set()
    if earlier:  # an earlier call on this machine: its runs return with this call's
        shutil.copyfile(results / name, runs_out / name)
    committed, bytes_per_run = committed_runs(profile)
    arms = runnable_arms()
    if arms != PLAN_ARMS:
        say(f"left out of the plan, not (yet) arms of {EXPERIMENT}: {', '.join(set(PLAN_ARMS) - set(arms))}")
    queue = plan(committed | earlier, arms, seeds=(0,) if dry else PLAN_SEEDS + MORE_SEEDS)
    cap = MAX_FILE_BYTES // (bytes_per_run or 2**20) - len(earlier)
    if len(queue) > cap:
        say(f"at about {bytes_per_run or 2**20:,} bytes a run, {cap} more runs fit one returned file: the plan is cut")
        queue = queue[: max(0, cap)]
    say(
        f"plan: {EXPERIMENT} ({profile}{', tiny' if dry else ''}: p = {config.p}, {config.epochs:,} epochs), "
        f"{len(committed)} runs committed, {len(earlier)} from an earlier call here, {len(queue)} to run: "
        + ", ".join(f"{a}/{s}" for a, s in queue)
    )
    source = "the grokking epoch benchmark" if ms_per_epoch else "a prior: no benchmark measured it"
    estimate = Estimate(
        ms_per_epoch or 5.0,
        source,
        config.epochs,
        startup_s=10.0 if dry else 60.0,
        sharing=float(os.environ.get("DEVICE_CHECK_SHARING") or 1.0),
    )
    env = {
        **os.environ,
        "STIEFEL_RESULTS": str(results),
        "STIEFEL_CHECKPOINTS": str(checkpoints),
        "PYTHONPATH": str(ROOT),
        "TQDM_DISABLE": "1",
        "OMP_NUM_THREADS": "1",
        "TORCHINDUCTOR_COMPILE_THREADS": "1",
    }

    def start(key):
        arm, seed = key
        command = [
            sys.executable,
            str(Path(__file__).resolve()),
            "worker",
            arm,
            str(seed),
            "--profile",
            profile,
            "--device",
            device,
        ] + (["--dry"] if dry else [])
        with open(logs / f"{arm}-{seed}.log", "w") as log:
            return subprocess.Popen(
                command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )

    def on_exit(key, rc):
        arm, seed = key
        log = (logs / f"{arm}-{seed}.log").read_text().strip()
        if log:
            say(f"--- output of {arm} seed {seed} ---\n{log}")
        if (results / name).exists():
            shutil.copyfile(results / name, runs_out / ".partial")
            os.replace(runs_out / ".partial", runs_out / name)

    started = time.monotonic()
    outcome = supervise(queue, start, deadline, estimate, most, on_exit=on_exit, say=say)
    outcome["wall_seconds"] = time.monotonic() - started
    # the gain measured, roughly: the finished runs' training as one process alone would take it
    # (the benchmark's time), over the job's wall time less one start
    alone = len(outcome["run_seconds"]) * (estimate.run_seconds(1) - estimate.startup_s)
    outcome["aggregate"] = alone / max(1.0, outcome["wall_seconds"] - estimate.startup_s) if alone else None
    if outcome["aggregate"]:
        say(
            f"measured: {len(outcome['run_seconds'])} runs in {outcome['wall_seconds']:.0f} s, the processes together "
            f"at about {outcome['aggregate']:.1f}x one process (DEVICE_CHECK_SHARING for the next estimate)"
        )
    n = max(1, outcome["processes"])
    outcome["estimate"] = {
        **dataclasses.asdict(estimate),
        "run_seconds": estimate.run_seconds(n),
        "statement": estimate.statement(n, deadline - started),
    }
    outcome["results_file"] = str(runs_out / name)
    outcome["earlier_runs"] = sorted(earlier)
    outcome["checkpoints"] = bundle_checkpoints(
        checkpoints / f"{EXPERIMENT}-{profile}", outcome["stopped"], runs_out / CHECKPOINT_BUNDLE, say
    )
    return outcome


def bundle_checkpoints(folder: Path, stopped: list, target: Path, say: Callable) -> str | None:
    """The stopped runs' checkpoints (about 2.5 MB each at p = 97) in one tar beside the results,
    as many as fit the size a lent machine returns; the rest stay in ``folder``, where a second
    call on the same machine resumes them."""
    files = [folder / f"{arm}-{seed}.pt" for arm, seed in stopped if (folder / f"{arm}-{seed}.pt").exists()]
    kept, size = [], 0
    for f in files:
        if size + f.stat().st_size <= MAX_FILE_BYTES:
            kept.append(f)
            size += f.stat().st_size
    if len(kept) < len(files):
        say(f"{len(files) - len(kept)} stopped runs' checkpoints do not fit the returned file; they stay in {folder}")
    if not kept:
        return None
    with tarfile.open(target, "w") as tar:
        for f in kept:
            tar.add(f, arcname=f.name)
    say(f"the stopped runs' checkpoints: {target} ({len(kept)} files, {size:,} bytes)")
    return str(target)


def worker(arm: str, seed: int, profile: str, device: str, dry: bool) -> None:
    """One run into ``$STIEFEL_RESULTS`` (its checkpoints in ``$STIEFEL_CHECKPOINTS``)."""
    from stiefel_core.experiments import get_config, run_experiment

    config = get_config(EXPERIMENT, profile, **DRY_CONFIG) if dry else None
    run_experiment(EXPERIMENT, profile, arms=[arm], seeds=[seed], device=device, progress=False, config=config)


def merge(source: Path, target: Path) -> dict:
    """Add ``source``'s runs that ``target`` lacks (under the results files' lock); refuse a
    file of another experiment, profile or configuration."""
    from stiefel_core.experiments.results import write_results
    from stiefel_core.results_reading import without_seeds

    new = json.loads(source.read_text())
    with open(target.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        old = json.loads(target.read_text()) if target.exists() else {**new, "runs": {}}
        for key in ("experiment", "profile"):
            if old[key] != new[key]:
                raise ValueError(f"{source} holds {key} {new[key]!r}, {target} {old[key]!r}: merge a file into its own")
        if without_seeds(old["config"]) != without_seeds(new["config"]):
            raise ValueError(
                f"{source} was run with another configuration than {target}: the runs cannot be "
                "mixed; rerun them at the committed code, or keep them apart"
            )
        added = sorted(set(new["runs"]) - set(old["runs"]))
        old["runs"].update({key: new["runs"][key] for key in added})
        old["config"]["seeds"] = sorted(set(old["config"].get("seeds", [])) | set(new["config"].get("seeds", [])))
        write_results(old, target)
    return {"added": added, "already_there": sorted(set(new["runs"]) - set(added))}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("worker", help="one run (the job starts these)")
    w.add_argument("arm", choices=PLAN_ARMS)
    w.add_argument("seed", type=int)
    w.add_argument("--profile", default="full")
    w.add_argument("--device", default="cuda")
    w.add_argument("--dry", action="store_true", help="the dry run's tiny config")
    m = sub.add_parser("merge", help="add a returned results file's new runs to the committed one")
    m.add_argument("source", type=Path)
    m.add_argument("--into", type=Path, default=None, help="default: book/results/<the same name>")
    args = parser.parse_args(argv)
    if args.command == "worker":
        worker(args.arm, args.seed, args.profile, args.device, args.dry)
        return 0
    target = args.into or ROOT / "book" / "results" / args.source.name
    merged = merge(args.source, target)
    print(
        f"{target}: added {len(merged['added'])} runs ({', '.join(merged['added']) or 'none'}); "
        f"{len(merged['already_there'])} were there already and were kept as they were"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
