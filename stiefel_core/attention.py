"""Multi-head self-attention whose per-head W_Q and W_K are frames on St(d_model, d_head)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .frames import FrameParameter, declare_frames
from .manifold import random_frame

__all__ = ["SelfAttention"]


class SelfAttention(nn.Module):
    """Multi-head self-attention; ``stiefel`` switches the geometry of W_Q and W_K.

    ``W_Q`` and ``W_K`` are banks of shape ``(n_heads, d_model, d_head)``: head h computes
    ``q = x W_Q[h]``. With ``stiefel=True`` they are :class:`FrameParameter` s (orthonormal
    columns, trained by ``StiefelAdam``); with ``stiefel=False`` plain parameters, initialised
    at the same orthonormal frames, so two arms built with one seed start from the same point
    and differ only in geometry and optimizer. W_V and W_O are always Euclidean ``nn.Linear``.
    Chapters: primer, use_on_your_model.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_head: int | None = None,
        *,
        stiefel: bool = True,
        causal: bool = False,
        bias: bool = False,
        dropout: float = 0.0,
    ):
        super().__init__()
        d_head = d_model // n_heads if d_head is None else d_head
        if n_heads < 1 or d_head < 1:
            raise ValueError(f"n_heads ({n_heads}) and d_head ({d_head}) must be positive")
        if d_head > d_model:
            raise ValueError(
                f"d_head ({d_head}) > d_model ({d_model}): a frame in St(d_model, d_head) needs d_head <= d_model"
            )
        self.d_model, self.n_heads, self.d_head = d_model, n_heads, d_head
        self.stiefel, self.causal, self.dropout = stiefel, causal, dropout
        make = FrameParameter if stiefel else nn.Parameter
        self.W_Q = make(random_frame(d_model, d_head, n_heads))
        self.W_K = make(random_frame(d_model, d_head, n_heads))
        if stiefel:
            declare_frames(self, "W_Q", "W_K")  # the tag then survives to_empty(), load_state_dict(assign=True)
        self.W_V = nn.Linear(d_model, n_heads * d_head, bias=bias)
        self.W_O = nn.Linear(n_heads * d_head, d_model, bias=bias)

    def extra_repr(self) -> str:
        geometry = "Stiefel" if self.stiefel else "Euclidean"
        return f"d_model={self.d_model}, n_heads={self.n_heads}, d_head={self.d_head}, {geometry}, causal={self.causal}"

    def _heads(self, x: Tensor, W: Tensor) -> Tensor:
        B, T, _ = x.shape
        W_flat = W.transpose(0, 1).reshape(self.d_model, self.n_heads * self.d_head)  # (D, H r)
        return (x @ W_flat).view(B, T, self.n_heads, self.d_head).transpose(1, 2)  # (B, H, T, r)

    def _score_inputs(self, q: Tensor, k: Tensor) -> tuple[Tensor, Tensor]:
        """Queries and keys ``(..., H, T, r)`` as the scores ``q kᵀ / √r`` use them: unchanged here;
        :class:`~stiefel_book.tempered.TemperedAttention` normalises and rescales them per head."""
        return q, k

    def attention_weights(self, x: Tensor) -> Tensor:
        """The attention pattern ``softmax(q kᵀ / √r)`` of shape ``(B, H, T, T)``, for plots."""
        q, k = self._score_inputs(self._heads(x, self.W_Q), self._heads(x, self.W_K))
        logits = q @ k.transpose(-2, -1) / self.d_head**0.5  # (B, H, T, T)
        if self.causal:
            T = x.shape[1]
            mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
            logits = logits.masked_fill(mask, float("-inf"))
        return logits.softmax(-1)

    def forward(self, x: Tensor, last_only: bool = False) -> Tensor:
        """Attend over ``x`` of shape ``(B, T, d_model)``; ``last_only`` computes the output at
        the last position alone, ``(B, 1, d_model)``, for models that read only that position
        (the same values as ``forward(x)[:, -1:]`` at a third of the query cost)."""
        if x.ndim != 3 or x.shape[-1] != self.d_model:
            raise ValueError(f"expected input of shape (batch, tokens, {self.d_model}), got {tuple(x.shape)}")
        B, T, _ = x.shape
        queries = x[:, -1:] if last_only else x
        q, k = self._score_inputs(
            self._heads(queries, self.W_Q), self._heads(x, self.W_K)
        )  # (B, H, T_q, r), (B, H, T, r)
        v = self.W_V(x).view(B, T, self.n_heads, self.d_head).transpose(1, 2)  # (B, H, T, r)
        y = F.scaled_dot_product_attention(  # the last query sees every key, causal or not
            q, k, v, is_causal=self.causal and not last_only, dropout_p=self.dropout if self.training else 0.0
        )  # (B, H, T_q, r)
        return self.W_O(y.transpose(1, 2).reshape(B, queries.shape[1], self.n_heads * self.d_head))

    def forward_table(self, table: Tensor, tokens: Tensor) -> Tensor:
        """``forward(x, last_only=True)`` for ``x = table[arange(T), tokens]``, computed on the table.

        ``table`` of shape ``(T, V, d_model)`` holds the input row of token v at position t, and
        ``tokens`` of shape ``(B, T)`` picks them. Queries, keys and values are linear in the input,
        so they are projected once per table row (T·V rows) and gathered, not once per batch row
        (B·T): the same output, far fewer products when the batch is much larger than V.
        """
        T, V, _ = table.shape
        if tokens.ndim != 2 or tokens.shape[1] != T:
            raise ValueError(f"tokens must have shape (batch, {T}) to match the table, got {tuple(tokens.shape)}")
        position = torch.arange(T, device=tokens.device)
        q_rows, k_rows = self._score_inputs(
            self._heads(table[-1:], self.W_Q), self._heads(table, self.W_K)
        )  # (1|T, H, V, r)
        q = q_rows[0][:, tokens[:, -1]].unsqueeze(2).transpose(0, 1)  # (B, H, 1, r)
        k = k_rows.transpose(1, 2)[position, tokens].transpose(1, 2)  # (B, H, T, r)
        v = self.W_V(table).view(T, V, self.n_heads, self.d_head)[position, tokens].transpose(1, 2)  # (B, H, T, r)
        # One query over a few keys: elementwise products beat a fused kernel made for long sequences.
        weights = ((q * k).sum(-1, keepdim=True) / self.d_head**0.5).softmax(2)  # (B, H, T, 1)
        weights = F.dropout(weights, self.dropout, self.training)
        y = (weights * v).sum(2)  # (B, H, r)
        return self.W_O(y.reshape(tokens.shape[0], 1, self.n_heads * self.d_head))
