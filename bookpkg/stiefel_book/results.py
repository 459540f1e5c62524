"""Results files: one gzip JSON per experiment and profile under ``book/results/``
(``NAME-PROFILE.json.gz``; an older plain ``.json`` is still read), written after every finished
run so that an interrupted sweep loses nothing and a rerun resumes. Their bytes:
:mod:`stiefel_book.results_files`.

Folders come from the caller (an argument, ``$STIEFEL_RESULTS``, ``$STIEFEL_CHECKPOINTS``), with
the checkout's ``book/results`` and ``checkpoints`` as defaults when the library runs from a
checkout; an installed library never writes into its own install folder."""

from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import functools
import os
import platform
import subprocess
from pathlib import Path

import torch

from . import results_files
from .checkout import PACKAGE_DIR, checkout_root, folder
from .protocol import protocol_hash
from .results_files import DamagedResultsError, ResultsFileError, TwoFormsError

__all__ = [
    "results_dir",
    "checkpoints_dir",
    "results_path",
    "load_results",
    "full_results",
    "write_results",
    "json_safe",
    "locked",
    "provenance",
    "git_commit",
    "code_commit",
    "InstallFolderError",
    "DamagedResultsError",
    "TwoFormsError",
    "ResultsFileError",
]


class InstallFolderError(ValueError):
    """A results or checkpoint folder that would lie inside an installed library's folder.
    Chapters: grokking, cifar10_patches, ablation, regimes."""


def _folder(directory: Path | str | None, variable: str, default: str, what: str) -> Path:
    """``directory``, else ``$variable``, else the checkout's ``default`` folder; an installed
    library has no folder of its own to write into, so it asks for one."""
    return folder(
        directory,
        variable,
        default,
        lambda: InstallFolderError(
            f"stiefel_book is installed, not run from a checkout, so it has no {what} folder of its own: "
            f"pass one (directory=...) or set {variable}=/path/to/{what}"
        ),
    )


def results_dir(directory: Path | str | None = None) -> Path:
    """``directory``, else ``$STIEFEL_RESULTS``, else the checkout's ``book/results``.
    Chapters: grokking, cifar10_patches, ablation, regimes."""
    return _folder(directory, "STIEFEL_RESULTS", "book/results", "results")


def checkpoints_dir(directory: Path | str | None = None) -> Path:
    """``directory``, else ``$STIEFEL_CHECKPOINTS``, else the checkout's ``checkpoints``.
    Chapters: grokking, cifar10_patches, ablation, regimes."""
    return _folder(directory, "STIEFEL_CHECKPOINTS", "checkpoints", "checkpoints")


def refuse_install_folder(path: Path) -> Path:
    """``path``, unless it lies inside the installed library's folder (``InstallFolderError``).
    Chapters: grokking, cifar10_patches, ablation, regimes."""
    install = PACKAGE_DIR if checkout_root() is not None else PACKAGE_DIR.parent
    if Path(path).resolve().is_relative_to(install):
        raise InstallFolderError(
            f"{path} lies inside the installed library ({install}); "
            "write results and checkpoints elsewhere (STIEFEL_RESULTS, STIEFEL_CHECKPOINTS)"
        )
    return Path(path)


def results_path(experiment: str, profile: str, directory: Path | None = None) -> Path:
    """The results file of ``experiment`` under ``profile`` in :func:`results_dir`: the one there
    (``.json.gz``, or an older plain ``.json``), else the ``.json.gz`` a run will write.
    Chapters: grokking, cifar10_patches, ablation, regimes."""
    return results_files.target(results_dir(directory), f"{experiment}-{profile}")


def load_results(experiment: str, profile: str, directory: Path | None = None) -> dict | None:
    """The results file's contents, or ``None`` when no run has written it yet; a damaged file
    (or two forms of one) is an error that names the file and the remedy.
    Chapters: grokking, cifar10_patches, ablation, regimes."""
    path = results_files.find(results_dir(directory), f"{experiment}-{profile}")
    return None if path is None else results_files.read(path)


def full_results(experiment: str) -> dict | None:
    """The full profile's results of ``experiment``, ``None`` until a run has finished (what the
    book's pages, claims and declared rows read)."""
    results = load_results(experiment, "full")
    return results if results and results.get("runs") else None


def write_results(results: dict, path: Path) -> Path:
    """Write a results file atomically as gzip JSON (``NAME.json`` becomes ``NAME.json.gz``, the
    plain one removed: :func:`stiefel_book.results_files.write`); never into the installed
    library. Returns the path written.
    Chapters: grokking, cifar10_patches, ablation, regimes."""
    refuse_install_folder(path)
    return results_files.write(results, path)


def json_safe(value):
    """``value`` with tuples as lists, as JSON stores them (a results file's config). Chapters: grokking,
    cifar10_patches, ablation, regimes."""
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


@contextlib.contextmanager
def locked(path: Path):
    """Hold an exclusive lock beside results file ``path``: shards of one sweep write one file in turn (one
    lock for both forms of the file: :func:`stiefel_book.results_files.lock_path`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(results_files.lock_path(path), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def git_commit() -> str:
    """The checkout's HEAD, with ``-dirty`` when the library's tracked files (the code a run
    executes) differ from it. A copy of a checkout without its ``.git`` (a lent GPU machine's)
    reports the commit its caller states in ``$STIEFEL_GIT_COMMIT``, marked as stated, else
    ``unknown``.
    Chapters: grokking, cifar10_patches, ablation, regimes."""
    root = checkout_root()
    if root is None:
        return "unknown"
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", "stiefel_core", "bookpkg"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
        )
        if out.returncode == 0:
            return out.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        pass
    stated = os.environ.get("STIEFEL_GIT_COMMIT", "").strip()
    return f"{stated} (stated: no git here)" if stated else "unknown"


@functools.cache
def code_commit() -> str:
    """:func:`git_commit` as it was when this process first asked, which ``run_experiment`` does
    before its first run trains: the code a process runs is the code it had then, however the
    checkout moves on while a long sweep trains. (Not asked on import: importing runs no git.)
    Chapters: grokking, cifar10_patches, ablation, regimes."""
    return git_commit()


def provenance(
    device: torch.device, wall_seconds: float, commit: str | None = None, resumed_from_epoch: int = 0
) -> dict:
    """Where and how a run was made: commit, versions, device, date, wall time. ``commit``
    is the commit of the code that ran (``None``: :func:`code_commit`). A run resumed from a
    checkpoint records the epoch it resumed from; its wall time adds the seconds its checkpoint
    had trained to those of the last segment (time lost after a checkpoint is not counted).
    ``protocol`` is the hash of the rules of inference in force when the run finished
    (:func:`stiefel_book.protocol.protocol_hash` of ``book/protocol.yml``; ``None`` where there is none).
    Chapters: grokking, cifar10_patches, ablation, regimes."""
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
        "protocol": protocol_hash(missing_ok=True),
    }
