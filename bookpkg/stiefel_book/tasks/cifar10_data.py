"""The data a CIFAR-10 patches run trains on: the decoded set (once per process), nested
class-balanced subsets (every prefix of 10 k images is balanced), standardised with the training
pool's channel statistics, as tensors on the run's device; and its held-out validation images
(``val_size``): the next images of the same balanced order, disjoint from every training image."""

from __future__ import annotations

import functools
import os
from pathlib import Path

import numpy as np
import torch

from ..checkout import checkout_root
from ..data import channel_stats, load_cifar10, normalize_images
from .cifar10_config import CIFAR10Config

__all__ = ["prepared_data", "validation_data", "split_indices"]


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


def split_indices(
    labels: np.ndarray, train_size: int, val_size: int, subset_seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """``(training, validation)`` indices into the training images: the first ``train_size`` of the
    balanced order, then the next ``val_size`` (disjoint; balanced where the order's rounds are).
    Refused when the two do not fit in the pool."""
    if train_size < 1 or val_size < 0 or train_size + val_size > len(labels):
        raise ValueError(
            f"train_size {train_size} + val_size {val_size} must fit in CIFAR-10's {len(labels)} training images "
            "(train_size at least 1, val_size at least 0): the validation images are carved from the same pool"
        )
    order = _balanced_order(labels, subset_seed)
    return order[:train_size], order[train_size : train_size + val_size]


@functools.lru_cache(maxsize=4)
def _prepared(
    source: str | None,
    train_size: int,
    test_size: int,
    subset_seed: int,
    device: str,
    download: bool = False,
    val_size: int = 0,
):
    data = _cifar10(source, download)
    train_idx, val_idx = split_indices(data.train_labels, train_size, val_size, subset_seed)
    test_idx = _balanced_order(data.test_labels, subset_seed + 1)[:test_size]
    if len(test_idx) < test_size:
        raise ValueError(f"asked for {test_size} test images; the data has {len(data.test_labels)}")
    mean, std = channel_stats(data.train_images[train_idx])  # statistics of the pool the runs draw from
    to = dict(device=device)
    return (
        normalize_images(data.train_images[train_idx], mean, std).to(**to),
        torch.from_numpy(data.train_labels[train_idx]).to(**to),
        normalize_images(data.test_images[test_idx], mean, std).to(**to),
        torch.from_numpy(data.test_labels[test_idx]).to(**to),
        data.provenance(),
        normalize_images(data.train_images[val_idx], mean, std).to(**to),  # the training pool's statistics
        torch.from_numpy(data.train_labels[val_idx]).to(**to),
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
    return _prepared_for(config, device, source, download)[:5]


def validation_data(
    config: CIFAR10Config, device: torch.device | str = "cpu", source: str | None = None, *, download: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(val_x, val_y)``: the ``config.val_size`` images after the training pool in its balanced
    order (none with val_size 0), standardised with the training pool's statistics, on ``device``."""
    return _prepared_for(config, device, source, download)[5:]


def _prepared_for(config: CIFAR10Config, device, source: str | None, download: bool):
    source, root = source or os.environ.get("STIEFEL_CIFAR10") or None, checkout_root()
    if source and root and not Path(source).is_absolute() and not Path(source).exists() and (root / source).exists():
        source = str(root / source)  # relative to the repository root: notebooks run in book/
    sizes = (config.train_size, config.test_size, config.subset_seed, str(device), download)
    return _prepared(source, *sizes, config.val_size) if config.val_size else _prepared(source, *sizes)
