"""Where the book's package runs from: a checkout (the repository, with ``book/`` beside the package)
or an install. A leaf: the results files and the protocol both ask it, and it imports nothing of
the library."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

__all__ = ["PACKAGE_DIR", "checkout_root", "folder"]

PACKAGE_DIR = Path(__file__).resolve().parent  # bookpkg/stiefel_book/ in a checkout, or in site-packages


def checkout_root() -> Path | None:
    """The repository's root when the book's package runs from a checkout (an editable install or
    the source tree: the package in ``bookpkg/``, with ``pyproject.toml`` and ``book/`` at the root
    above it), else ``None`` (an installed wheel).
    Chapters: grokking, cifar10_patches, ablation, regimes."""
    root = PACKAGE_DIR.parent.parent
    return root if (root / "pyproject.toml").is_file() and (root / "book").is_dir() else None


def folder(directory: Path | str | None, variable: str, default: str, refuse: Callable[[], Exception]) -> Path:
    """``directory``, else ``$variable``, else the checkout's ``default`` folder (relative to its
    root); an install has no checkout, so there it raises ``refuse()``, which says what to pass."""
    if directory is not None:
        return Path(directory)
    if os.environ.get(variable):
        return Path(os.environ[variable])
    root = checkout_root()
    if root is None:
        raise refuse()
    return root / default
