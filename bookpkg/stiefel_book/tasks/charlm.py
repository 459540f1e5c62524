"""A character-level language model (issue 30): the model people train, written as nanoGPT writes
it (fused ``c_attn``), its arms made by ``stiefelize`` and ``configure_optimizer``
(:mod:`stiefel_book.arms.routing_arms`), on the Gutenberg texts of :mod:`stiefel_book.data.gutenberg`, split by
document. Training windows are drawn fresh each step from the training texts (a generator seeded
by (seed, step)); validation is a fixed set of windows of the held-out texts, the same for every
arm and seed, scored in bits per character at every position.

Cost on one core (``tools/routing_costs.py``, ``tools/routing_costs.json``): about 1.4 minutes a
``full`` run; 6 arms x 5 seeds, about 40 core-minutes after the sweep ``charlm_qk_lr``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ..arms.routing_arms import ARMS, build, qk_metrics
from ..data.gutenberg import CharCorpus, load_corpus
from ..data.routing import generator
from ..nanogpt import GPTConfig
from .routing import VAL_SEED, RoutingTraining, task_run, train

__all__ = ["ARMS", "CharLMConfig", "run", "corpus", "windows"]


@dataclass(frozen=True)
class CharLMConfig(RoutingTraining):
    # nanoGPT's shakespeare_char recipe (lr 1e-3, betas (0.9, 0.99), weight decay 0.1, warm-up
    # then cosine) at a size one CPU core trains in minutes: 2 layers of width 64, 64 characters
    # of context (enough for words and a line's rhythm, where attention must find what to copy).
    # The trials of tools/charlm_trials.py kept lr 1e-3 and 1,500 steps: a larger lr or more steps
    # train further, but narrow the gap between frozen and trained frames (the rest adapts).
    n_layer: int = 2
    n_head: int = 4
    n_embd: int = 64
    block_size: int = 64
    lr: float = 1e-3
    betas: tuple[float, float] = (0.9, 0.99)
    steps: int = 1500
    val_windows: int = 256  # 16,384 held-out characters
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)

    def model(self, vocab_size: int) -> GPTConfig:
        return GPTConfig(vocab_size, self.block_size, self.n_layer, self.n_head, self.n_embd)


@functools.lru_cache(maxsize=1)
def corpus() -> CharCorpus:
    """The corpus, read and hash-checked once per process."""
    return load_corpus()


def windows(text: torch.Tensor, n: int, length: int, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` windows of ``length`` characters at random starts, and their next characters."""
    starts = torch.randint(len(text) - length - 1, (n,), generator=g)
    idx = starts[:, None] + torch.arange(length + 1)
    chunk = text[idx].long()
    return chunk[:, :-1], chunk[:, 1:]


def _run(config: CharLMConfig, arm: str, seed: int, device, checkpoint, progress, qk_lr: float | None) -> dict:
    data = corpus()
    model = build(config.model(data.vocab_size), arm, seed).to(device)
    val_x, val_y = (t.to(device) for t in windows(data.val, config.val_windows, config.block_size, generator(VAL_SEED)))

    def loss_of(x, y):
        logits = model(x)
        return F.cross_entropy(logits.view(-1, logits.size(-1)), y.reshape(-1))

    def loss_at(step: int) -> torch.Tensor:
        g = generator(seed * 1_000_003 + step)
        return loss_of(*(t.to(device) for t in windows(data.train, config.batch_size, config.block_size, g)))

    def evaluate() -> dict:
        val_loss = loss_of(val_x, val_y).item()
        return {"val_loss": val_loss, "val_bpc": val_loss / math.log(2), **qk_metrics(model)}

    return train(model, config, arm, qk_lr, loss_at, evaluate, checkpoint, progress, f"charlm {arm} seed {seed}")


run = task_run(_run, "run", "character-model (histories hold the validation bits per character)")
