"""Modular-arithmetic data for grokking (Power et al. 2022; Nanda et al. 2023).

Every pair ``(a, b)`` with ``a, b`` in ``[0, p)`` is one example: the input is the
token sequence ``[a, b, p]`` (token ``p`` is the "=" sign, so the vocabulary has
``p + 1`` tokens) and the label is ``a op b (mod p)``. A fixed fraction of the pairs,
drawn with a seeded ``torch.Generator``, is the training set; the rest is validation.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

__all__ = ["OPS", "ModularData", "modular_data"]


def _is_prime(n: int) -> bool:
    return n >= 2 and all(n % k for k in range(2, int(n**0.5) + 1))


def _divide(a: Tensor, b: Tensor, p: int) -> Tensor:
    inverse = torch.tensor([pow(int(k), -1, p) if k else 0 for k in range(p)])
    return a * inverse[b] % p


OPS: dict[str, Callable[[Tensor, Tensor, int], Tensor]] = {
    "add": lambda a, b, p: (a + b) % p,
    "sub": lambda a, b, p: (a - b) % p,  # Python-style mod: always in [0, p)
    "mul": lambda a, b, p: a * b % p,
    "div": _divide,  # a * b^(-1); needs p prime, pairs with b = 0 are left out
}


@dataclass(frozen=True)
class ModularData:
    """A fixed train/validation split of all pairs; inputs ``(N, 3)`` long, labels ``(N,)`` long. Chapter: grokking."""

    train_x: Tensor
    train_y: Tensor
    val_x: Tensor
    val_y: Tensor
    p: int
    op: str = "add"

    @property
    def vocab_size(self) -> int:
        """Tokens ``0..p-1`` for the numbers, token ``p`` for "="."""
        return self.p + 1

    def to(self, device: torch.device | str) -> ModularData:
        """The same split with every tensor on ``device``."""
        moved = {f: getattr(self, f).to(device) for f in ("train_x", "train_y", "val_x", "val_y")}
        return dataclasses.replace(self, **moved)


def modular_data(p: int = 113, op: str = "add", train_fraction: float = 0.3, seed: int = 0) -> ModularData:
    """All pairs ``(a, b)`` labelled ``a op b mod p``, split at random into train and validation.

    Defaults follow Nanda et al. (2023): ``p = 113`` and 30% of the pairs for training.
    The split depends only on ``(p, op, train_fraction, seed)``: it is drawn on the CPU
    with ``torch.Generator().manual_seed(seed)``, so it is the same on every machine.
    Chapter: grokking.
    """
    try:
        p = operator.index(p)
    except TypeError:
        raise ValueError(f"p must be an integer, got {p!r}") from None
    if p < 2:
        raise ValueError(f"p must be at least 2, got {p}")
    if op not in OPS:
        raise ValueError(f"unknown op {op!r}; choose one of {sorted(OPS)}")
    if op == "div" and not _is_prime(p):
        raise ValueError(f"op 'div' needs a prime p (every b != 0 invertible), got {p}")
    if not 0.0 < train_fraction < 1.0:
        raise ValueError(f"train_fraction must lie in (0, 1), got {train_fraction!r}")

    a, b = torch.cartesian_prod(torch.arange(p), torch.arange(p)).unbind(1)  # (p*p,) each
    if op == "div":
        a, b = a[b != 0], b[b != 0]
    x = torch.stack([a, b, torch.full_like(a, p)], dim=1)  # (N, 3): [a, b, "="]
    y = OPS[op](a, b, p)  # (N,)

    n_train = round(train_fraction * len(x))
    if not 0 < n_train < len(x):
        raise ValueError(f"train_fraction={train_fraction} leaves an empty split of {len(x)} pairs")
    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(seed))
    train, val = order[:n_train], order[n_train:]
    return ModularData(x[train], y[train], x[val], y[val], p=p, op=op)
