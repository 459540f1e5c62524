"""Subprocesses whose wait is bounded, grandchildren included.

``subprocess.run(..., timeout=)`` kills only the child it started, then waits for its pipes to
close: a grandchild that holds them (a Jupyter kernel, a pytest worker) keeps that wait going
forever. :func:`run_bounded` starts the child in a session of its own and, at the deadline, kills
the whole session, so a hung command fails its test with what it printed instead of hanging it.
"""

import os
import signal
import subprocess


def run_bounded(command: list, timeout: float, **options) -> subprocess.CompletedProcess:
    """``subprocess.run(command, capture_output=True, text=True, **options)`` that gives up after
    ``timeout`` seconds: it kills the command's whole process group and raises ``TimeoutError``
    with the end of what the command printed."""
    with subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
        **options,
    ) as process:
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            out, err = process.communicate()
            raise TimeoutError(
                f"{command[:3]}... did not finish within {timeout} s; it printed:\n"
                f"{(out or '')[-3000:]}\n{(err or '')[-3000:]}"
            ) from None
    return subprocess.CompletedProcess(command, process.returncode, out, err)
