"""The device job's pool: several run processes sharing one GPU under a deadline guard.

:func:`supervise` starts the runs a plan names, at most ``n`` at a time (``n`` sized by the
stated :class:`Estimate`), asks the plan again whenever a run ends (a sweep grows, a judged
comparison unlocks), starts a run only while its expected time ends before the deadline, and
there stops what still runs (:func:`stop`)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from typing import Callable

__all__ = ["Estimate", "Launched", "stop", "supervise", "label"]


@dataclass(frozen=True)
class Estimate:
    """One run's expected wall time when ``n`` processes share the device: the stated estimate.

    ``sharing`` is the throughput of ``n`` processes together, in single processes' worth, at
    most; 1 by default, the safe bound (time-sliced GPU contexts may gain nothing). The job
    measures the real gain (its ``aggregate``), which ``DEVICE_CHECK_SHARING`` may state next time.
    """

    ms_per_epoch: float  # one process alone: the grokking epoch benchmark's slower arm, or a prior
    source: str  # where ms_per_epoch comes from
    epochs: int  # a run's epochs, unless the run is named with its own
    startup_s: float = 60.0  # import, CUDA context and torch.compile of the model (stated, not measured)
    logging_factor: float = 1.3  # an evaluation every 20 epochs, which the benchmark leaves out
    sharing: float = 1.0

    def run_seconds(self, n: int, epochs: int | None = None) -> float:
        slowdown = n / min(n, self.sharing)
        epochs = self.epochs if epochs is None else epochs
        return self.startup_s + epochs * self.ms_per_epoch / 1e3 * self.logging_factor * slowdown

    def processes(self, seconds_left: float, most: int, epochs: int | None = None) -> int:
        """The most processes (at most ``most``) whose runs are expected to finish in time; 0 if none."""
        fitting = [n for n in range(1, most + 1) if self.run_seconds(n, epochs) <= seconds_left]
        return max(fitting, default=0)

    def statement(self, n: int, seconds_left: float, epochs: int | None = None) -> str:
        epochs = self.epochs if epochs is None else epochs
        return (
            f"estimate: one run = {self.startup_s:.0f} s start (imports, CUDA, compile) + {epochs:,} epochs "
            f"x {self.ms_per_epoch:.2f} ms ({self.source}) x {self.logging_factor} (evaluations) "
            f"x {n}/{min(n, self.sharing):g} ({n} processes sharing the device at an assumed {self.sharing:g}x "
            f"one process's throughput, at most) = {self.run_seconds(n, epochs):.0f} s; "
            f"{seconds_left:.0f} s left before the guard"
        )


def label(key: tuple) -> str:
    """``"<experiment> <arm> seed <seed>"`` (or ``"<arm> seed <seed>"``) for the log."""
    return f"{' '.join(map(str, key[:-1]))} seed {key[-1]}"


@dataclass
class Launched:
    key: tuple
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
    plan: list | Callable[[set], list],
    start: Callable,
    deadline: float,
    estimate: Estimate,
    most: int,
    *,
    epochs_of: Callable[[tuple], int] | None = None,
    on_exit: Callable = lambda key, rc: None,
    say: Callable = print,
    clock=time.monotonic,
    poll_s: float = 1.0,
) -> dict:
    """Run the keys ``plan`` names by ``start(key) -> Popen``, at most ``n`` at a time.

    ``plan`` is a list, or ``plan(busy) -> list``, asked again after every run that ends (``busy``:
    the keys running); a key started once in this call is never started again. ``n`` is sized by
    ``estimate`` for the runs planned (again whenever nothing runs); a run starts only while its
    expected time ends before ``deadline``: the estimate's, or once runs have finished, the
    slowest one's pace (seconds an epoch, its start included) times the run's epochs
    (``epochs_of(key)``, default the estimate's). At ``deadline`` the guard stops what still runs.
    """
    pending = plan if callable(plan) else (lambda busy, keys=list(plan): keys)
    epochs_of = epochs_of or (lambda key: estimate.epochs)
    running: list[Launched] = []
    outcome = {"finished": [], "failed": [], "stopped": [], "not_started": []}
    seconds, paces, attempted = [], [], set()

    def queue() -> list:
        busy = {run.key for run in running}
        return [key for key in pending(busy) if key not in attempted and key not in busy]

    def size(queued: list) -> int:
        if not queued:
            return 0
        return estimate.processes(deadline - clock(), min(most, len(queued) + len(running)), epochs_of(queued[0]))

    queued = queue()
    n = size(queued)
    say(estimate.statement(max(n, 1), deadline - clock(), epochs_of(queued[0]) if queued else None))
    say(f"launching up to {n} at once" if n else "not even one run is expected to fit: none started")
    while running or (queued and n):
        ended = False
        for run in list(running):
            rc = run.process.poll()
            if rc is None:
                continue
            running.remove(run)
            ended = True
            (outcome["finished"] if rc == 0 else outcome["failed"]).append(run.key)
            if rc == 0:
                seconds.append(clock() - run.started)
                paces.append(seconds[-1] / max(1, epochs_of(run.key)))
            status = "finished" if rc == 0 else f"FAILED (exit {rc})"
            say(f"{status}: {label(run.key)} in {clock() - run.started:.0f} s")
            on_exit(run.key, rc)
        if clock() >= deadline:
            stop([run.process for run in running])
            for run in running:
                outcome["stopped"].append(run.key)
                say(f"stopped by the guard (resumable from its last checkpoint): {label(run.key)}")
                on_exit(run.key, None)
            running = []
            break
        if ended:
            queued = queue()
            if not running and queued:  # a fresh wave: sized again for what is left
                n = size(queued)
        while queued and len(running) < n:
            key = queued[0]
            expected = max(paces) * epochs_of(key) if paces else estimate.run_seconds(n, epochs_of(key))
            if clock() + expected > deadline:
                break
            queued.pop(0)
            attempted.add(key)
            running.append(Launched(key, start(key), clock()))
            say(f"started: {label(key)} (expected {expected:.0f} s)")
        if not running:
            break
        time.sleep(poll_s)
    outcome.update(not_started=queue(), run_seconds=seconds, processes=n)
    return outcome
