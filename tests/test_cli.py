"""The command line as a user meets it: --help and list without the chapters' extras, expected
conditions as one ``error:`` line, "run k of N" and a per-arm summary, and Ctrl-C (a real SIGINT)
that saves the run in progress, says how to resume, and a resumed run equal to one never stopped."""

import gzip
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from stiefel_book import extras, results_files
from stiefel_book.__main__ import main
from stiefel_book.experiments import get_config, grokking
from stiefel_book.results import PACKAGE_DIR

TINY = dict(p=7, train_fraction=0.5, d_model=16, n_heads=2, d_mlp=32, log_every=50, checkpoint_every=10**6)
BLOCK = "import sys\nfor name in {extras!r}:\n    sys.modules[name] = None\n"
# a tiny ci grokking profile, then the command line: what `python -m stiefel_book` runs, smaller
TINY_CLI = (
    "import sys\nfrom stiefel_book.experiments import get_config, grokking\nfrom stiefel_book.__main__ import main\n"
    "grokking.PROFILES['ci'] = get_config('grokking', 'ci', seeds=(0,), epochs={epochs}, **{tiny!r})\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def _python(code: str, *args: str, **kwargs):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TQDM_DISABLE": "1"}
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


def test_help_and_list_run_without_the_chapters_extras_and_a_run_says_what_to_install(tmp_path):
    blocked = BLOCK.format(extras=extras.EXTRAS) + (
        "from stiefel_book.__main__ import main\n"
        "for argv in sys.argv[1:]:\n"
        "    try:\n"
        "        code = main(argv.split())\n"
        "    except SystemExit as stop:\n"
        "        code = stop.code\n"
        "    print(f'=== exit {code}', flush=True)\n"
        "    print(f'=== exit {code}', file=sys.stderr, flush=True)\n"
    )
    commands = ["--help", f"--results {tmp_path} list", "run grokking --profile ci"]
    process = _python(blocked, *commands)  # one process: the three commands, each as the command line runs it
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    outs, errs = out.split("=== exit ")[:-1], err.split("=== exit ")
    codes = [int(part.split("\n")[0]) for part in out.split("=== exit ")[1:]]
    assert codes == [0, 0, 2]
    assert "list" in outs[0] and "bookpkg[chapters]" in outs[0]
    assert "grokking-ci.json.gz (not run)" in outs[1] and errs[1].strip() in ("0", "")
    refusal = errs[2].split("\n", 1)[1]
    assert refusal.count("\n") == 1 and refusal.startswith("error:") and "./bookpkg[chapters]" in refusal


@pytest.mark.parametrize("condition", ["empty results file", "damaged gzip", "sweep missing", "install folder"])
def test_an_expected_condition_is_one_error_line_and_exit_1(isolated, condition, capsys):
    results = isolated / "results"
    results.mkdir()
    command = ["run", "grokking", "--profile", "ci", "--no-progress"]
    if condition == "empty results file":
        (results / "grokking-ci.json").write_text("{}")
    elif condition == "damaged gzip":
        (results / "grokking-ci.json.gz").write_bytes(gzip.compress(b'{"runs": {')[:-4])
    elif condition == "sweep missing":  # mqar's judged runs need its W_Q, W_K sweep first
        command = ["run", "mqar", "--profile", "ci", "--no-progress"]
    else:
        command = ["--results", str(PACKAGE_DIR / "results"), *command]
    assert main(command) == 1
    err = capsys.readouterr().err
    assert err.startswith("error:") and err.count("\n") == 1 and "Traceback" not in err
    assert not (isolated / "checkpoints").exists()  # no run started


def test_an_unknown_arm_is_a_usage_error(isolated, capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["run", "grokking", "--profile", "ci", "--arms", "sgd"])
    assert stopped.value.code == 2 and "unknown arm 'sgd'" in capsys.readouterr().err


def test_a_run_says_run_k_of_n_with_the_time_left_and_ends_with_each_arms_headline(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(grokking.PROFILES, "ci", get_config("grokking", "ci", epochs=20, seeds=(0, 1), **TINY))
    folders = ["--results", str(tmp_path / "r"), "--checkpoints", str(tmp_path / "c")]
    assert main([*folders, "run", "grokking", "--profile", "ci", "--arms", "stiefel", "baseline"]) == 0
    out, err = capsys.readouterr()
    progress = [line for line in err.splitlines() if "run " in line and " of 4" in line]
    assert [line.split("run ")[1].split(" of")[0] for line in progress] == ["1", "2", "3", "4"]
    assert "left" not in progress[0] and all("left" in line for line in progress[1:])  # an estimate once one ran
    runs = results_files.read(tmp_path / "r" / "grokking-ci.json.gz")["runs"]
    for arm in ("stiefel", "baseline"):
        mean = sum(runs[f"{arm}/{seed}"]["final"]["val_acc"] for seed in (0, 1)) / 2
        line = next(line for line in out.splitlines() if line.split()[:1] == [arm])
        assert float(line.split()[1]) == pytest.approx(mean, abs=1e-3) and "2 seeds" in line
    assert "val_acc" in out and not os.environ.get("STIEFEL_RESULTS", "").startswith(str(tmp_path))  # restored


def _wait_for(process, text: str, timeout: float) -> list[str]:
    lines, end = [], time.monotonic() + timeout
    while time.monotonic() < end:
        line = process.stderr.readline()
        lines.append(line)
        if text in line or not line:
            return lines
    raise AssertionError(f"no {text!r} in {lines}")


def test_ctrl_c_saves_the_run_in_progress_says_how_to_resume_and_the_resumed_run_equals_a_whole_one(tmp_path):
    # long enough that the signal lands inside the run on a fast idle machine (600 epochs there take under a
    # second, and a signal after the process ends its run finds it shutting down, not training)
    code = TINY_CLI.format(epochs=4000, tiny=TINY)

    def command(name):
        return [
            *("--results", str(tmp_path / name / "r"), "--checkpoints", str(tmp_path / name / "c")),
            *("run", "grokking", "--profile", "ci", "--arms", "stiefel", "--no-progress"),
        ]

    whole = _python(code, *command("whole"))  # beside it, never interrupted
    stopped = _python(code, *command("stopped"))
    _wait_for(stopped, "run 1 of 1", timeout=60)
    time.sleep(1.0)  # into the run's 4,000 epochs
    stopped.send_signal(signal.SIGINT)
    out, err = stopped.communicate(timeout=60)
    assert stopped.returncode == 130, err
    assert "Traceback" not in err and "Resume with" in err
    checkpoint = tmp_path / "stopped" / "c" / "grokking-ci" / "stiefel-0.pt"
    assert checkpoint.exists() and str(checkpoint) in err
    resume = err.split("Resume with:")[1].strip().split("python -m stiefel_book ")[1]
    assert resume.split() == command("stopped")
    assert results_files.find(tmp_path / "stopped" / "r", "grokking-ci") is None  # the run is not finished

    resumed = _python(code, *resume.split())
    # generous waits: two 4,000-epoch runs share the cores with the rest of the suite (a bound, not a cost)
    assert resumed.wait(timeout=600) == 0 and whole.wait(timeout=600) == 0, resumed.stderr.read()
    a, b = (
        results_files.read(tmp_path / n / "r" / "grokking-ci.json.gz")["runs"]["stiefel/0"]
        for n in ("stopped", "whole")
    )
    assert a["provenance"]["resumed_from_epoch"] > 0 and not checkpoint.exists()
    assert json.dumps([a["history"], a["final"]]) == json.dumps([b["history"], b["final"]])
    for process in (whole, stopped, resumed):
        for stream in (process.stdout, process.stderr):
            stream.close()


def test_every_sweep_in_the_engine_is_a_sweep_command():
    """A study's experiment (one that grows its grid) is named by `sweep`, and only such one is."""
    from stiefel_book.__main__ import SWEEPS
    from stiefel_book.experiments import EXPERIMENTS
    from stiefel_book.experiments.routing_sweep import SWEEPS as ROUTING_SWEEPS

    studies = {name for name, e in EXPERIMENTS.items() if e.study is not None}
    assert studies == set(SWEEPS) | set(ROUTING_SWEEPS)
