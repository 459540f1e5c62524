"""Token tasks whose whole difficulty is routing (chapter "Where attention must learn to route").

- :func:`mqar`: multi-query associative recall in the format of Zoology's ``multiquery_ar``
  (Arora et al. 2023): ``N`` key-value pairs (keys from the lower half of the vocabulary,
  values from the upper half, no key twice), then a query region where each key appears once
  at an even offset drawn from Zoology's power law (``p(gap) ∝ gap^(a-1)``: most queries come
  soon after the context, some late), the rest filled with token 0. The label of a query's
  position is its key's value; every other label is ``IGNORE``.
- :func:`induction`: a random token sequence of length ``n`` followed by itself (Olsson et al.
  2022), after a random prefix: from its second copy on, each next token is predictable only by
  finding the token's earlier occurrence and reading the one after it. ``n`` is drawn per
  sequence, so the earlier occurrence lies at no fixed distance: with one ``n`` for all, a head
  attending ``n - 1`` positions back (learned positions alone) solves the task without
  matching any content, and fixed W_Q, W_K do as well as trained ones.

Every batch comes from a ``torch.Generator`` seeded by the caller, so a step's batch is a
function of (seed, step) and a resumed run sees the batches it would have seen.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

__all__ = ["IGNORE", "TokenBatch", "mqar", "induction", "induction_targets", "generator"]

IGNORE = -100  # the label of a position the loss and accuracy skip (F.cross_entropy's ignore_index)


@dataclass(frozen=True)
class TokenBatch:
    """Inputs ``x`` and labels ``y``, both ``(B, T)`` int64; ``y`` is ``IGNORE`` where not scored.
    ``period``: each row's repeat length (induction), else None."""

    x: Tensor
    y: Tensor
    period: Tensor | None = None

    def to(self, device) -> "TokenBatch":
        period = None if self.period is None else self.period.to(device)
        return TokenBatch(self.x.to(device), self.y.to(device), period)


def generator(seed: int) -> torch.Generator:
    """A CPU generator seeded with ``seed``: the batches' only source of randomness."""
    return torch.Generator().manual_seed(int(seed))


def _distinct(n_rows: int, low: int, high: int, k: int, g: torch.Generator) -> Tensor:
    """``(n_rows, k)`` draws without replacement from ``[low, high)``, independently per row."""
    return torch.rand(n_rows, high - low, generator=g).argsort(dim=1)[:, :k] + low


def mqar(
    batch_size: int, vocab_size: int, seq_len: int, kv_pairs: int, g: torch.Generator, power_a: float = 0.01
) -> TokenBatch:
    """A batch of multi-query associative recall (Zoology's layout, token 0 as filler).

    Positions ``0 .. 2N-1`` hold ``k_1 v_1 ... k_N v_N``; the query region after them holds every
    key once, key ``i`` at ``2N + 2 gap_i`` with distinct gaps drawn with weight
    ``gap^(power_a - 1)``; the label at a query's position is its key's value."""
    context = 2 * kv_pairs
    space = (seq_len - context) // 2
    if seq_len % 2 or vocab_size < seq_len or 4 * kv_pairs > seq_len:
        raise ValueError(
            f"mqar: need an even seq_len >= 4 kv_pairs and vocab_size >= seq_len (Zoology's checks); "
            f"got seq_len={seq_len}, kv_pairs={kv_pairs}, vocab_size={vocab_size}"
        )
    keys = _distinct(batch_size, 1, vocab_size // 2, kv_pairs, g)
    values = _distinct(batch_size, vocab_size // 2, vocab_size, kv_pairs, g)
    weights = power_a * torch.arange(1, space + 1, dtype=torch.float64) ** (power_a - 1)
    gaps = torch.multinomial(weights.expand(batch_size, space), kv_pairs, replacement=False, generator=g)
    x = torch.zeros(batch_size, seq_len, dtype=torch.int64)
    x[:, 0:context:2], x[:, 1:context:2] = keys, values
    where = context + 2 * gaps
    x.scatter_(1, where, keys)
    y = torch.full_like(x, IGNORE)
    y.scatter_(1, where, values)
    return TokenBatch(x, y)


def induction(
    batch_size: int, vocab_size: int, half_len: int, g: torch.Generator, min_len: int | None = None
) -> TokenBatch:
    """A batch of rows ``[prefix, s, s]`` of length ``2 half_len``: ``s`` of ``n`` tokens, ``n``
    uniform in ``[min_len, half_len]`` per row (default ``min_len = half_len // 2``), the prefix
    random, and no token twice in ``[prefix, s]`` (so a token's earlier occurrence is unique).
    Labels are the next token on the second copy but its last (positions ``T - n .. T - 2``:
    those whose token occurred before, with a successor) and ``IGNORE`` elsewhere, where nothing
    in the row tells the next token."""
    T, min_len = 2 * half_len, half_len // 2 if min_len is None else min_len
    if not 2 <= min_len <= half_len or T > vocab_size:
        raise ValueError(
            f"induction: need 2 <= min_len <= half_len and vocab_size >= 2 half_len (distinct tokens); "
            f"got min_len={min_len}, half_len={half_len}, vocab_size={vocab_size}"
        )
    period = torch.randint(min_len, half_len + 1, (batch_size,), generator=g)
    fresh = _distinct(batch_size, 0, vocab_size, T, g)  # row b uses its first T - n: prefix, then s
    pos = torch.arange(T)
    first = T - 2 * period[:, None]  # where s starts
    source = torch.where(pos >= first + period[:, None], pos - period[:, None], pos)  # the repeat copies s
    x = fresh.gather(1, source)
    y = torch.full_like(x, IGNORE)
    scored = (pos >= T - period[:, None]) & (pos < T - 1)
    y[:, :-1] = torch.where(scored[:, :-1], x[:, 1:], IGNORE)
    return TokenBatch(x, y, period)


def induction_targets(batch: TokenBatch) -> tuple[Tensor, Tensor, Tensor]:
    """``(rows, queries, keys)``: each scored position ``i`` of the repeat, its row, and the
    position after its token's earlier occurrence (``i - n + 1``), where an induction head looks."""
    rows, queries = (batch.y != IGNORE).nonzero(as_tuple=True)
    return rows, queries, queries - batch.period[rows] + 1
