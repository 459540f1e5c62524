"""Data for the experiments: modular arithmetic (grokking) and CIFAR-10."""

from .cifar10 import CLASSES, CIFAR10Data, DataError, load_cifar10
from .modular import OPS, ModularData, modular_data
from .normalize import NormalizedCIFAR10, channel_stats, normalize, normalize_images

__all__ = [
    "CLASSES",
    "CIFAR10Data",
    "DataError",
    "NormalizedCIFAR10",
    "channel_stats",
    "load_cifar10",
    "normalize",
    "normalize_images",
    "OPS",
    "ModularData",
    "modular_data",
]
