"""The device check's paper-scale job (issue 28): grokking at p = 97 at tuned W_Q, W_K lrs, as
several processes sharing one GPU. First the runs the sweep ``grokking_p97_qk_lr`` lacks (10,000
epochs a run; its grid grown by its own rule as rounds finish), then, once the sweep's choices are
settled, the judged runs of ``grokking_p97_fair`` (20,000 epochs, seeds 0-5): :mod:`device_plan`.
The same machinery runs the character model's 2x2 at nanoGPT's size (issue 49, item 5): the sweep
``charlm_gpu_qk_lr``, then ``charlm_gpu_2x2`` (:mod:`device_charlm`, ``plan_class=CharLMPlan``).

    python tools/device_job.py merge device-results/runs/*.json.gz         # into book/results/
    python tools/device_job.py worker EXPERIMENT ARM SEED --profile full   # one run (the job starts these)

:func:`run_job` brings the committed runs into its folder, sizes the first wave by a stated
estimate (the grokking epoch benchmark's time, measured just before), and starts a run only
while its expected time fits before the deadline, where a guard stops what still runs
(:mod:`device_pool`): runs write their results file when they finish and their checkpoints every
1,000 epochs, both atomically, so a stopped job loses only the epochs since each run's last
checkpoint, and a later call resumes (finished runs are skipped; a stopped run resumes from its
checkpoint).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Callable

from stiefel_book import results_files

from device_charlm import CharLMPlan, corpus_missing
from device_plan import MAX_FILE_BYTES, Plan, Run, merge, seed_work
from device_pool import Estimate, stop, supervise

__all__ = [
    "run_job",
    "bundle_checkpoints",
    "worker",
    "merge",
    "stop",
    "CHECKPOINT_BUNDLE",
    "PLANS",
    "Plan",
    "CharLMPlan",
    "plan_of",
    "corpus_missing",
]

ROOT = Path(__file__).resolve().parents[1]
CHECKPOINT_BUNDLE = "checkpoints.tar"
PLANS = (Plan, CharLMPlan)  # the jobs: p = 97's, the character model's 2x2 (tools/device_charlm.py)


def plan_of(experiment: str) -> type[Plan]:
    """The job whose plan runs ``experiment``."""
    return next(plan for plan in PLANS if experiment in plan.experiments)


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
    plan_class: type[Plan] = Plan,
) -> dict:
    """The job (``plan_class``'s: p = 97's unless named): plan, estimate, supervise. ``work`` keeps
    its results files, checkpoints and logs (on a GPU machine ``device-work/``, so that a second call
    there resumes the first); each experiment's results file is copied to ``out/runs`` after every
    run of it, and the checkpoints of stopped runs are bundled beside them where they fit (where the
    plan's do: p = 97's)."""
    profile = "ci" if dry else "full"
    results, checkpoints, logs, runs_out = work / "results", work / "checkpoints", work / "logs", out / "runs"
    for folder in (results, logs, runs_out):
        folder.mkdir(parents=True, exist_ok=True)
    seeded = seed_work(results, profile, plan_class.experiments)
    plan = plan_class(results, profile, dry, say=say)

    def returned(experiment: str) -> None:  # the job's file, atomically, where the device returns it
        file = plan.file(experiment)
        if file.exists():
            shutil.copyfile(file, runs_out / ".partial")
            os.replace(runs_out / ".partial", runs_out / file.name)
            for form in results_files.forms(runs_out, results_files.stem(file)):  # one form returns, not two
                if form.name != file.name:
                    form.unlink(missing_ok=True)

    for experiment, runs in seeded.items():
        say(f"{experiment}: {len(runs['committed'])} runs committed, {len(runs['earlier'])} from an earlier call here")
        if runs["earlier"]:  # they return with this call's
            returned(experiment)
    queue = plan()
    say(plan.statement() + f"{', tiny' if dry else ''}; first to run: " + ", ".join(f"{r.arm}/{r.seed}" for r in queue))
    source = "the grokking epoch benchmark" if ms_per_epoch else "a prior: no benchmark measured it"
    estimate = Estimate(
        ms_per_epoch or plan.prior_ms,
        source,
        getattr(plan.task(plan.experiments[0]), plan.length),
        startup_s=10.0 if dry else plan.startup_s,
        sharing=float(os.environ.get("DEVICE_CHECK_SHARING") or 1.0),
    )
    env = {
        **os.environ,
        "STIEFEL_RESULTS": str(results),
        "STIEFEL_CHECKPOINTS": str(checkpoints),
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "bookpkg")]),
        "TQDM_DISABLE": "1",
        "OMP_NUM_THREADS": "1",
        "TORCHINDUCTOR_COMPILE_THREADS": "1",
    }

    def log_of(run: Run) -> Path:
        return logs / f"{run.experiment}-{run.arm}-{run.seed}.log"

    def start(run: Run):
        command = [sys.executable, str(Path(__file__).resolve()), "worker", run.experiment, run.arm, str(run.seed)]
        command += ["--profile", profile, "--device", device] + (["--dry"] if dry else [])
        with open(log_of(run), "w") as log:
            return subprocess.Popen(
                command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )

    def on_exit(run: Run, rc):
        log = log_of(run).read_text().strip()
        if log:
            say(f"--- output of {run.experiment} {run.arm} seed {run.seed} ---\n{log}")
        returned(run.experiment)

    started = time.monotonic()
    outcome = supervise(
        plan,
        start,
        deadline,
        estimate,
        most,
        epochs_of=plan.epochs_of,
        on_exit=on_exit,
        say=say,
        poll_s=0.2 if dry else 1.0,  # the dry run's runs last seconds: a run's end is seen sooner
    )
    outcome["wall_seconds"] = time.monotonic() - started
    # the gain measured, roughly: the finished runs' training as one process alone would take it
    # (the benchmark's time), over the job's wall time less one start
    alone = sum(estimate.run_seconds(1, plan.epochs_of(run)) - estimate.startup_s for run in outcome["finished"])
    outcome["aggregate"] = alone / max(1.0, outcome["wall_seconds"] - estimate.startup_s) if alone else None
    if outcome["aggregate"]:
        say(
            f"measured: {len(outcome['finished'])} runs in {outcome['wall_seconds']:.0f} s, the processes together "
            f"at about {outcome['aggregate']:.1f}x one process (DEVICE_CHECK_SHARING for the next estimate)"
        )
    n = max(1, outcome["processes"])
    outcome["estimate"] = {
        **dataclasses.asdict(estimate),
        "run_seconds": estimate.run_seconds(n),
        "statement": estimate.statement(n, deadline - started),
    }
    names = [plan.file(experiment).name for experiment in plan.experiments]
    outcome["results_files"] = [str(runs_out / name) for name in names if (runs_out / name).exists()]
    outcome["earlier_runs"] = {experiment: sorted(runs["earlier"]) for experiment, runs in seeded.items()}
    if plan.bundles_checkpoints:
        bundle = runs_out / CHECKPOINT_BUNDLE
        outcome["checkpoints"] = bundle_checkpoints(checkpoints, profile, outcome["stopped"], bundle, say)
    else:
        outcome["checkpoints"] = None
        if outcome["stopped"]:
            say(f"{len(outcome['stopped'])} stopped runs' checkpoints stay in {checkpoints} (too large to return)")
    return outcome


def bundle_checkpoints(folder: Path, profile: str, stopped: list[Run], target: Path, say: Callable) -> str | None:
    """The stopped runs' checkpoints (about 2.5 MB each at p = 97) in one tar beside the results
    (as ``<experiment>-<profile>/<arm>-<seed>.pt``, the layout of ``folder``), as many as fit the
    size a lent machine returns; the rest stay in ``folder``, where a second call on the same
    machine resumes them."""
    names = [Path(f"{run.experiment}-{profile}") / f"{run.arm}-{run.seed}.pt" for run in map(Run._make, stopped)]
    names = [name for name in names if (folder / name).exists()]
    kept, size = [], 0
    for name in names:
        if size + (folder / name).stat().st_size <= MAX_FILE_BYTES:
            kept.append(name)
            size += (folder / name).stat().st_size
    if len(kept) < len(names):
        say(f"{len(names) - len(kept)} stopped runs' checkpoints do not fit the returned file; they stay in {folder}")
    if not kept:
        return None
    with tarfile.open(target, "w") as tar:
        for name in kept:
            tar.add(folder / name, arcname=str(name))
    say(f"the stopped runs' checkpoints: {target} ({len(kept)} files, {size:,} bytes)")
    return str(target)


def worker(experiment: str, arm: str, seed: int, profile: str, device: str, dry: bool) -> None:
    """One run into ``$STIEFEL_RESULTS`` (its checkpoints in ``$STIEFEL_CHECKPOINTS``); a judged
    run resolves its lr from the sweep file there, as the experiment's resolve step does."""
    from stiefel_book.experiments import run_experiment

    cfg = plan_of(experiment).worker_config(experiment, profile, dry)
    run_experiment(experiment, profile, arms=[arm], seeds=[seed], device=device, progress=False, config=cfg)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("worker", help="one run (the job starts these)")
    w.add_argument("experiment", choices=[e for plan in PLANS for e in plan.experiments])
    w.add_argument("arm")
    w.add_argument("seed", type=int)
    w.add_argument("--profile", default="full")
    w.add_argument("--device", default="cuda")
    w.add_argument("--dry", action="store_true", help="the dry run's tiny task")
    m = sub.add_parser("merge", help="add returned results files' new runs to the committed ones")
    m.add_argument("sources", type=Path, nargs="+")
    m.add_argument("--into", type=Path, default=None, help="a folder; default: book/results/ (the same names)")
    args = parser.parse_args(argv)
    if args.command == "worker":
        worker(args.experiment, args.arm, args.seed, args.profile, args.device, args.dry)
        return 0
    for source in args.sources:
        target = (args.into or ROOT / "book" / "results") / source.name
        merged = merge(source, target)
        print(
            f"{target}: added {len(merged['added'])} runs ({', '.join(merged['added']) or 'none'}); "
            f"{len(merged['already_there'])} were there already and were kept as they were"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
