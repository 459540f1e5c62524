"""Results files: one JSON per experiment and profile under ``book/results/``, written after
every finished run so that an interrupted sweep loses nothing and a rerun resumes."""

from __future__ import annotations

import datetime as _dt
import functools
import json
import os
import platform
import subprocess
from pathlib import Path

import torch

__all__ = ["results_dir", "results_path", "load_results", "write_results", "provenance", "git_commit", "code_commit", "without_seeds"]

PACKAGE_ROOT = Path(__file__).resolve().parents[2]


def results_dir() -> Path:
    """``$STIEFEL_RESULTS``, else the checkout's ``book/results``, else ``./book/results``."""
    if os.environ.get("STIEFEL_RESULTS"):
        return Path(os.environ["STIEFEL_RESULTS"])
    if (PACKAGE_ROOT / "book").is_dir():
        return PACKAGE_ROOT / "book" / "results"
    return Path.cwd() / "book" / "results"


def results_path(experiment: str, profile: str, directory: Path | None = None) -> Path:
    return Path(directory or results_dir()) / f"{experiment}-{profile}.json"


def load_results(experiment: str, profile: str, directory: Path | None = None) -> dict | None:
    """The results file's contents, or ``None`` when no run has written it yet."""
    path = results_path(experiment, profile, directory)
    if not path.exists():
        return None
    with open(path) as f:
        return json.load(f)


def without_seeds(config: dict) -> dict:
    """A configuration without its list of seeds: what every run of a file must share. The seed
    list only says which runs a profile asks for, so it may grow without mixing configurations."""
    return {k: v for k, v in config.items() if k != "seeds"}


def write_results(results: dict, path: Path) -> None:
    """Write JSON atomically (temporary file, then rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    with open(tmp, "w") as f:
        json.dump(results, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)


def git_commit() -> str:
    """The checkout's HEAD, with ``-dirty`` when the library's tracked files (the code a run
    executes) differ from it."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=PACKAGE_ROOT, capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", "stiefel_core"], cwd=PACKAGE_ROOT, capture_output=True, text=True, timeout=10)
        return out.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "") if out.returncode == 0 else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


@functools.cache
def code_commit() -> str:
    """:func:`git_commit` as it was when this process first asked, which the experiments package
    does on import: the code a process runs is the code it imported, however the checkout
    moves on while a long sweep trains."""
    return git_commit()


def provenance(device: torch.device, wall_seconds: float, commit: str | None = None, resumed_from_epoch: int = 0) -> dict:
    """Where and how a run was made: commit, versions, device, date, wall time. ``commit``
    is the commit of the code that ran (``None``: :func:`code_commit`). A run resumed from a
    checkpoint records the epoch it resumed from; its wall time adds the seconds its checkpoint
    had trained to those of the last segment (time lost after a checkpoint is not counted)."""
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or platform.machine()
    return {
        "git_commit": commit or code_commit(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "device": f"{device.type}: {name}",
        "threads": torch.get_num_threads(),
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "wall_seconds": round(wall_seconds, 1),
        "resumed_from_epoch": resumed_from_epoch,
    }
