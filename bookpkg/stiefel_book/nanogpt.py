"""A small GPT written the way nanoGPT (Karpathy) writes it: a fused ``c_attn`` projection, pre-
LayerNorm blocks, learned positions, a tied ``lm_head``. The routing chapter's model for all three
tasks; its W_Q, W_K become frames the way a user's model's do, by
:func:`stiefel_core.convert.stiefelize` (it finds ``c_attn`` and ``n_head``).

Two options beyond nanoGPT: ``mlp=False`` for attention-only blocks (the induction task), and
``qk_norm=True``: per-head RMSNorm of q and k (no gain) and a learned per-head temperature τ,
logits ``τ_h q̂·k̂ / √d_head``: the scale of the logits as a parameter of its own, the direction
of q, k left to W_Q, W_K (the arm that asks whether a trained scale alone does what frames do).
τ starts at ``qk_temperature`` (1 by default): with q̂, k̂ of unit RMS a head's logits lie within
± τ √d_head, so the initial temperature sets how sharp attention can be before τ has trained.
Attention weights are kept when ``keep_attention`` is set (the induction score reads them).
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

__all__ = ["GPTConfig", "GPT", "CausalSelfAttention", "recording_logits"]


@dataclass(frozen=True)
class GPTConfig:
    vocab_size: int
    block_size: int  # the longest sequence
    n_layer: int = 2
    n_head: int = 4
    n_embd: int = 64
    bias: bool = False  # nanoGPT's option; no biases trains a little better and faster
    mlp: bool = True  # False: attention-only blocks
    qk_norm: bool = False
    qk_temperature: float = 1.0  # with qk_norm: the learned temperature's initial value, every head
    dropout: float = 0.0  # nanoGPT's, where it drops: embeddings, attention weights, each residual branch


class CausalSelfAttention(nn.Module):
    record_logits = False  # every attention keeps its last forward's largest logit (:func:`recording_logits`)

    def __init__(self, config: GPTConfig):
        super().__init__()
        assert config.n_embd % config.n_head == 0
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)  # q, k, v for all heads
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.n_head, self.n_embd = config.n_head, config.n_embd
        self.qk_norm = config.qk_norm
        if config.qk_norm:
            t = config.qk_temperature
            if isinstance(t, bool) or not isinstance(t, int | float) or not (math.isfinite(t) and t > 0):
                raise ValueError(f"qk_temperature must be a positive finite number, got {t!r}")
            self.temperature = nn.Parameter(torch.full((config.n_head,), float(t)))
        mask = torch.tril(torch.ones(config.block_size, config.block_size, dtype=torch.bool))
        self.register_buffer("mask", mask.view(1, 1, config.block_size, config.block_size), persistent=False)
        self.keep_attention = False
        self.attention: Tensor | None = None  # (B, nh, T, T) of the last forward, when kept
        self.max_logit: Tensor | None = None  # the last forward's largest logit, while ``record_logits``
        self.attn_dropout, self.resid_dropout = nn.Dropout(config.dropout), nn.Dropout(config.dropout)

    def forward(self, x: Tensor) -> Tensor:
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        hs = C // self.n_head
        q = q.view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)
        k = k.view(B, T, self.n_head, hs).transpose(1, 2)
        v = v.view(B, T, self.n_head, hs).transpose(1, 2)
        if self.qk_norm:
            q, k = F.rms_norm(q, (hs,)), F.rms_norm(k, (hs,))
            q = q * self.temperature.view(1, -1, 1, 1)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
        att = att.masked_fill(~self.mask[:, :, :T, :T], float("-inf"))
        if CausalSelfAttention.record_logits:
            self.max_logit = att.detach().amax()
        att = F.softmax(att, dim=-1)
        self.attention = att.detach() if self.keep_attention else None
        y = (self.attn_dropout(att) @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


@contextlib.contextmanager
def recording_logits():
    """While inside, every attention keeps its last forward's largest pre-softmax logit in
    ``max_logit`` (one ``amax`` a forward; values unchanged)."""
    before, CausalSelfAttention.record_logits = CausalSelfAttention.record_logits, True
    try:
        yield
    finally:
        CausalSelfAttention.record_logits = before


class MLP(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.attn = CausalSelfAttention(config)
        if config.mlp:
            self.ln_2 = nn.LayerNorm(config.n_embd, bias=config.bias)
            self.mlp = MLP(config)
        self.has_mlp = config.mlp

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.attn(self.ln_1(x))
        if self.has_mlp:
            x = x + self.mlp(self.ln_2(x))
        return x


class GPT(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.config = config
        self.transformer = nn.ModuleDict(
            dict(
                wte=nn.Embedding(config.vocab_size, config.n_embd),
                wpe=nn.Embedding(config.block_size, config.n_embd),
                h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
                drop=nn.Dropout(config.dropout),
                ln_f=nn.LayerNorm(config.n_embd, bias=config.bias),
            )
        )
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying
        self.apply(self._init_weights)
        for name, p in self.named_parameters():  # scaled init of the residual projections (GPT-2)
            if name.endswith("c_proj.weight"):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    def _init_weights(self, module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx: Tensor) -> Tensor:
        """Logits ``(B, T, vocab_size)`` at every position."""
        B, T = idx.size()
        if T > self.config.block_size:
            raise ValueError(f"a sequence of {T} tokens is longer than block_size {self.config.block_size}")
        pos = torch.arange(0, T, dtype=torch.long, device=idx.device)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        for block in self.transformer.h:
            x = block(x)
        return self.lm_head(self.transformer.ln_f(x))

    def attentions(self) -> list[CausalSelfAttention]:
        return [block.attn for block in self.transformer.h]
