"""Standardising CIFAR-10 images per channel with the statistics of the training pool the runs
draw from (the CIFAR-10 chapter): exact integer sums, float32 tensors in ``(N, 3, 32, 32)``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from .cifar10 import CIFAR10Data

__all__ = ["channel_stats", "normalize_images", "NormalizedCIFAR10", "normalize"]


def channel_stats(images: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel mean and (population) std of uint8 ``(..., 3)`` images, in [0, 1] units. Chapter: cifar10_patches."""
    pixels = np.asarray(images).reshape(-1, 3)  # (P, 3)
    total, squares = [0, 0, 0], [0, 0, 0]  # exact integer sums
    for start in range(0, len(pixels), 1 << 20):
        chunk = pixels[start : start + (1 << 20)].astype(np.int64)
        total = [t + int(s) for t, s in zip(total, chunk.sum(0))]
        squares = [q + int(s) for q, s in zip(squares, (chunk * chunk).sum(0))]
    n = len(pixels)
    mean = np.array([t / n for t in total]) / 255
    var = np.array([(q * n - t * t) / n**2 for q, t in zip(squares, total)]) / 255**2
    return mean, np.sqrt(var)


def normalize_images(images: Tensor | np.ndarray, mean, std) -> Tensor:
    """uint8 ``(N, 32, 32, 3)`` images as float32 ``(N, 3, 32, 32)``: ``(x / 255 - mean) / std``.
    Chapter: cifar10_patches."""
    x = torch.as_tensor(images).permute(0, 3, 1, 2)  # (N, 3, 32, 32) view
    x = x.to(torch.float32, memory_format=torch.contiguous_format).div_(255)
    shape = dict(dtype=torch.float32, device=x.device)
    return x.sub_(torch.as_tensor(mean, **shape).view(1, 3, 1, 1)).div_(torch.as_tensor(std, **shape).view(1, 3, 1, 1))


@dataclass(frozen=True, eq=False)
class NormalizedCIFAR10:
    """Float32 ``(N, 3, 32, 32)`` images standardised with the training set's channel stats.
    Chapter: cifar10_patches."""

    train_x: Tensor
    train_y: Tensor
    test_x: Tensor
    test_y: Tensor
    mean: tuple[float, float, float]
    std: tuple[float, float, float]


def normalize(data: CIFAR10Data) -> NormalizedCIFAR10:
    """Both splits standardised per channel with the mean and std of the training images. Chapter: cifar10_patches."""
    mean, std = channel_stats(data.train_images)
    _, train_y, _, test_y = data.tensors()
    return NormalizedCIFAR10(
        normalize_images(data.train_images, mean, std),
        train_y,
        normalize_images(data.test_images, mean, std),
        test_y,
        mean=tuple(mean.tolist()),
        std=tuple(std.tolist()),
    )
