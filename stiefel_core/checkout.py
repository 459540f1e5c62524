"""Where the library runs from: a checkout (the repository, with ``book/`` beside the package)
or an install. A leaf: the results files and the protocol both ask it, and it imports nothing of
the library."""

from __future__ import annotations

from pathlib import Path

__all__ = ["PACKAGE_DIR", "checkout_root"]

PACKAGE_DIR = Path(__file__).resolve().parent  # stiefel_core/, in a checkout or in site-packages


def checkout_root() -> Path | None:
    """The repository's root when the library runs from a checkout (an editable install or the
    source tree: ``pyproject.toml`` and ``book/`` beside the package), else ``None`` (a wheel).
    Chapters: grokking, cifar10_patches, ablation, regimes."""
    root = PACKAGE_DIR.parent
    return root if (root / "pyproject.toml").is_file() and (root / "book").is_dir() else None
