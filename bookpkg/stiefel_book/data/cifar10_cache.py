"""The decoded CIFAR-10 cache: where it lives (``$STIEFEL_CACHE``, else the user's cache folder),
read back checked, written atomically."""

from __future__ import annotations

import os
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

__all__ = ["CACHE_ENV", "CACHE_FORMAT", "cache_folder", "read_cache", "write_cache"]

CACHE_ENV = "STIEFEL_CACHE"
CACHE_FORMAT = 1  # bump when decoding changes, so old caches are ignored


def cache_folder(cache_dir: str | os.PathLike[str] | None) -> Path:
    """``cache_dir``, else ``$STIEFEL_CACHE/cifar10``, else the user's cache folder
    (``$XDG_CACHE_HOME`` or ``~/.cache``) under ``stiefel_core/cifar10``."""
    if cache_dir is not None:
        return Path(cache_dir).expanduser()
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser() / "cifar10"
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "stiefel_core" / "cifar10"


_KEYS = ("train_images", "train_labels", "test_images", "test_labels")


def read_cache(file: Path, check: Callable[..., tuple[np.ndarray, ...]]) -> tuple[str, tuple[np.ndarray, ...]] | None:
    """``(source kind, arrays)`` from ``file``, the arrays passed through ``check``; ``None`` when
    the file is missing, unreadable or fails the check (then the set is decoded again)."""
    if not file.is_file():
        return None
    try:
        with np.load(file, allow_pickle=False) as npz:
            kind = str(npz["source_kind"])
            return kind, check(*(npz[k] for k in _KEYS))
    except Exception:  # unreadable or stale cache: decode again and overwrite it
        return None


def write_cache(file: Path, kind: str, arrays: tuple[np.ndarray, ...]) -> None:
    """Write ``file`` atomically; a folder that cannot be written gets a warning, not an error."""
    tmp: Path | None = None
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=file.parent, suffix=".tmp", delete=False) as out:
            tmp = Path(out.name)
            np.savez(out, source_kind=np.array(kind), **dict(zip(_KEYS, arrays)))
        os.replace(tmp, file)  # atomic: a concurrent reader never sees half a file
    except OSError as exc:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
        warnings.warn(f"Could not cache CIFAR-10 in {file.parent}: {exc}", stacklevel=3)
