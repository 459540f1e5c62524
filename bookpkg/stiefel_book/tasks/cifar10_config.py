"""The CIFAR-10 patches task's configuration and its lr schedule: light (no torch), so that the
findings read them without loading the task (:mod:`.cifar10` trains). Chapter: cifar10_patches."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

__all__ = ["CIFAR10Config", "CIFAR10ValConfig", "with_validation", "warmup_cosine", "lr_factors"]


@dataclass(frozen=True)
class CIFAR10Config:
    """The settings of a CIFAR-10 patches run, each default with its reason. Chapter: cifar10_patches."""

    # data
    train_size: int = 50_000  # all of CIFAR-10's training images (the sweep: its 100 % pool)
    test_size: int = 10_000  # the whole test set: test accuracy is the reported number
    subset_seed: int = 0  # which class-balanced subset; fixed, so starts differ only in init and order
    hflip: bool = True  # random horizontal flips, the one augmentation that costs nothing on the CPU
    # model: the PatchTransformer defaults, with 8x8 patches
    patch_size: int = 8  # 16 tokens: 3.5x cheaper per image than 4x4 patches on the CPU (measured)
    d_model: int = 64  # small enough for 48 runs in the CPU budget; d_head = 16
    n_heads: int = 4
    depth: int = 2
    mlp_ratio: int = 2
    # optimisation
    epochs: int = 2  # ~40 s of CPU a run on one core (measured): 48 runs in ~35 CPU-min (sweep: epochs at 100 %)
    batch_size: int = 128  # 780 steps in 2 epochs; as fast per image as 256 on one core (measured)
    lr: float = 1e-3  # AdamW's usual ViT rate at this batch size; frames get the same per-entry rate
    betas: tuple[float, float] = (0.9, 0.999)  # AdamW's defaults, shared by StiefelAdam
    weight_decay: float = 0.05  # DeiT's decoupled decay, on every non-frame parameter (baseline: W_Q, W_K too)
    warmup_fraction: float = 0.05  # linear warm-up over the first 5 % of steps, then cosine to zero
    trust_radius: float = 0.5  # StiefelAdam's default; never binds at lr 1e-3 (a step is ~0.03)
    # bookkeeping
    log_every: int = 1  # one record per epoch (the sweep: per 100 %-pool-sized chunk of steps)
    checkpoint_every: int = 1  # at most one epoch (~20 s) lost to an interruption
    seeds: tuple[int, ...] = tuple(range(12))  # the preprint's 12 paired starts

    val_size = 0  # no held-out images (a class attribute, not a field: the stored configs stay as they were)


@dataclass(frozen=True)
class CIFAR10ValConfig(CIFAR10Config):
    """A CIFAR-10 task with held-out images for choices (issue 52): the ``val_size`` images right after
    the training pool in its balanced order, disjoint from it, normalised with its statistics; each
    logged epoch records ``val_acc``, ``val_loss`` beside the test numbers. Chapter: cifar10_patches."""

    val_size: int = 10_000  # as many as the test set: a validation score as precise as the test score


def with_validation(config: CIFAR10Config, val_size: int) -> CIFAR10ValConfig:
    """``config`` with ``val_size`` held-out images (0: none, yet a validation config)."""
    return CIFAR10ValConfig(**{f.name: getattr(config, f.name) for f in fields(CIFAR10Config)}, val_size=val_size)


def warmup_cosine(step: int, warmup: int, total_steps: int) -> float:
    """The lr factor at ``step``: linear warm-up over ``warmup`` steps, then a cosine to zero."""
    if step < warmup:
        return (step + 1) / warmup
    return 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(1, total_steps - warmup)))


def lr_factors(config: CIFAR10Config, train_size: int | None = None, epochs: int | None = None) -> list[float]:
    """The lr factor of every step of a run, as :func:`train` schedules it."""
    n = config.train_size if train_size is None else train_size
    total = (config.epochs if epochs is None else epochs) * (n // min(config.batch_size, n))
    warmup = max(1, round(config.warmup_fraction * total))
    return [warmup_cosine(step, warmup, total) for step in range(total)]
