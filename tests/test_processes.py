"""tests/processes.py: a bounded run gives up at its deadline even when a grandchild holds its pipes."""

import sys
import time

import pytest

from processes import run_bounded


def test_a_grandchild_holding_the_pipes_does_not_outlast_the_deadline():
    start = time.monotonic()
    with pytest.raises(TimeoutError, match="did not finish within 1 s"):
        run_bounded(["bash", "-c", "echo started; sleep 60 & sleep 60"], 1)
    assert time.monotonic() - start < 10


def test_a_finished_command_gives_its_output_and_status():
    done = run_bounded([sys.executable, "-c", "import sys; print('out'); sys.exit(3)"], 60)
    assert (done.returncode, done.stdout) == (3, "out\n")
