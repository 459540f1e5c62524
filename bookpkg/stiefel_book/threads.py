"""How many CPU threads torch uses: for the whole library (tiny float64 problems run on one)."""

from __future__ import annotations

import contextlib
import functools

import torch

__all__ = ["threads", "one_thread", "single_threaded"]


@contextlib.contextmanager
def threads(n: int | None):
    """Run torch on ``n`` CPU threads inside the block (``None``: leave the setting alone).
    Chapters: gauge, p1_steepest_descent to p5_weight_decay, grokking."""
    saved = torch.get_num_threads()
    if n is not None:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(saved)


def one_thread():
    """One CPU thread inside the block. For tiny matrices extra threads only add
    synchronisation, and on a shared two-core machine they slow runs ~10x.
    Chapters: gauge, p1_steepest_descent to p5_weight_decay, grokking."""
    return threads(1)


def single_threaded(fn):
    """Decorator: ``fn`` runs under :func:`one_thread`.
    Chapters: gauge, p1_steepest_descent to p5_weight_decay, grokking."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with one_thread():
            return fn(*args, **kwargs)

    return wrapper
