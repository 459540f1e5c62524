"""The data a CIFAR-10 patches run trains on: the decoded set (once per process), nested
class-balanced subsets (every prefix of 10 k images is balanced), standardised with the training
pool's channel statistics, as tensors on the run's device."""

from __future__ import annotations

import functools
import os
from pathlib import Path

import numpy as np
import torch

from ..checkout import checkout_root
from ..data import channel_stats, load_cifar10, normalize_images
from .cifar10_config import CIFAR10Config

__all__ = ["prepared_data"]


@functools.lru_cache(maxsize=2)
def _cifar10(source: str | None, download: bool = False):
    return load_cifar10(source, download=download, progress=False)


def _balanced_order(labels: np.ndarray, seed: int) -> np.ndarray:
    """A permutation of the indices whose every prefix of 10 k is class balanced: class order
    within each round, a seeded shuffle within each class. Prefixes are nested subsets."""
    rng = np.random.default_rng(seed)
    per_class = [rng.permutation(np.flatnonzero(labels == c)) for c in range(10)]
    rounds = min(len(p) for p in per_class)
    head = np.stack([p[:rounds] for p in per_class], axis=1).reshape(-1)  # (10 rounds,)
    tail = np.concatenate([p[rounds:] for p in per_class])
    return np.concatenate([head, rng.permutation(tail)])


@functools.lru_cache(maxsize=4)
def _prepared(
    source: str | None, train_size: int, test_size: int, subset_seed: int, device: str, download: bool = False
):
    data = _cifar10(source, download)
    train_idx = _balanced_order(data.train_labels, subset_seed)[:train_size]
    test_idx = _balanced_order(data.test_labels, subset_seed + 1)[:test_size]
    if len(train_idx) < train_size or len(test_idx) < test_size:
        raise ValueError(
            f"asked for {train_size} training and {test_size} test images; the data has "
            f"{len(data.train_labels)} and {len(data.test_labels)}"
        )
    mean, std = channel_stats(data.train_images[train_idx])  # statistics of the pool the runs draw from
    to = dict(device=device)
    return (
        normalize_images(data.train_images[train_idx], mean, std).to(**to),
        torch.from_numpy(data.train_labels[train_idx]).to(**to),
        normalize_images(data.test_images[test_idx], mean, std).to(**to),
        torch.from_numpy(data.test_labels[test_idx]).to(**to),
        data.provenance(),
    )


def prepared_data(
    config: CIFAR10Config, device: torch.device | str = "cpu", source: str | None = None, *, download: bool = False
):
    """``(train_x, train_y, test_x, test_y, provenance)``: the configured class-balanced subsets,
    standardised with the training pool's channel statistics, as tensors on ``device``; decoded
    and prepared once per process. ``source`` defaults to ``$STIEFEL_CIFAR10``; a relative path
    that does not exist from the working directory is read from the checkout's root.
    ``download=True`` fetches (and checks) the official archive when no source holds the data;
    later calls find it in the cache without asking.
    Chapter: cifar10_patches."""
    source, root = source or os.environ.get("STIEFEL_CIFAR10") or None, checkout_root()
    if source and root and not Path(source).is_absolute() and not Path(source).exists() and (root / source).exists():
        source = str(root / source)  # relative to the repository root: notebooks run in book/
    return _prepared(source, config.train_size, config.test_size, config.subset_seed, str(device), download)
