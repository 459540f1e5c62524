"""The character model at a GPU's size (issue 49, item 5): nanoGPT's ``shakespeare_char`` configuration
(6 layers, 6 heads, width 384, 256 characters of context, batch 64, dropout 0.2, lr 1e-3 with 100
warm-up steps then cosine to a tenth, AdamW betas (0.9, 0.99), weight decay 0.1; about 10.7 million
parameters) trained by :func:`.charlm.run` on the same pinned Gutenberg corpus as the small model
(:mod:`stiefel_book.data.gutenberg`: 18 texts, about 11 million training characters, split by
document). The corpus is not Shakespeare's plays: nanoGPT's numbers on ``shakespeare_char`` (about
1.47 nats of validation loss after 5,000 steps) are not this task's and are not compared with it.

Its 2x2 (family ``charlm_gpu_2x2`` of ``book/protocol.yml``, declared before any run): the sweep
``charlm_gpu_qk_lr`` of the four corners' W_Q, W_K lr on a selection seed by the declared ladder
rule (:class:`..engine.study.Study`, :func:`.routing_sweep.study`), then ``charlm_gpu_2x2``, the four arms on
fresh paired seeds at the rates the sweep chose (:func:`.routing_sweep.resolver`). Made on a lent GPU
by the device check (``tools/device_charlm.py``); on the CPU only timed (a step at this size,
:data:`CPU_STEP_S`) and rehearsed at the ``ci`` size.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..choices import LADDER
from ..engine.registry import SWEEP_CI, Experiment, profiles
from ..engine.study import sweep_entry
from ..nanogpt import GPTConfig
from ..results_reading import grid_arm
from ..tasks import charlm
from .routing_judged import ARMS_2X2
from .routing_sweep import KEY, RoutingSweepConfig, resolver, study

__all__ = ["STEPS", "SELECTION_SEEDS", "JUDGED_SEEDS", "PROFILES", "SWEEP_PROFILES", "SWEEP", "JUDGED", "ENTRIES"]

SWEEP, JUDGED = "charlm_gpu_qk_lr", "charlm_gpu_2x2"

# A training step at the full size on this project's CPU: 29-51 s (the Stiefel rule, one thread, 4 steps
# timed 2026-12-07 on the 2-core machine at load 7-8, other runs beside it; about 1.2 TFLOP a step):
# 1,000 steps would be a day a run, so the size runs on a lent GPU only.
CPU_STEP_S = 30.0
# The declared length: 1,000 steps (64,000 windows, 16.4 million characters, about one and a half
# passes over the training texts). Why: the device check gives this job about 200 s of one GPU a
# call (its docstring's split); at the 30-60 ms a step expected of an H100 or H200 in float32 (a
# step is about 1.2 TFLOP; no torch.compile, no bf16), a run is 30-60 s of training, so a call
# makes 3-6 runs and the 12-16 runs of the sweep and 20 judged runs take 6-10 calls. nanoGPT trains
# this model 5,000 steps; 1,000 is where its shakespeare_char loss has made most of its fall
# (its log: about 1.9 nats at 500 steps, 1.6 at 1,000, 1.47 at 5,000): long enough to rank the arms,
# not their converged values.
STEPS = 1000
SELECTION_SEEDS = (100,)  # one, for cost: the choice is judged on none of the judged seeds
JUDGED_SEEDS = (60, 61, 62, 63, 64)  # fresh: none of 0-9, 20-59, 100-104, 200-202


@dataclass(frozen=True)
class CharLMGPUConfig(charlm.CharLMConfig):
    """:class:`.charlm.CharLMConfig` with nanoGPT's dropout (0.2 in ``shakespeare_char``)."""

    dropout: float = 0.2

    def model(self, vocab_size: int) -> GPTConfig:
        return dataclasses.replace(super().model(vocab_size), dropout=self.dropout)


PROFILES = {
    "full": CharLMGPUConfig(
        n_layer=6,
        n_head=6,
        n_embd=384,
        block_size=256,
        batch_size=64,
        lr=1e-3,
        betas=(0.9, 0.99),
        weight_decay=0.1,
        warmup_steps=100,
        steps=STEPS,
        val_windows=256,  # 65,536 held-out characters
        log_every=100,
        checkpoint_every=250,
        seeds=JUDGED_SEEDS,
        cpu_threads=None,
    ),
    # the device check's dry run: the same code at a size the CPU trains in a second
    "ci": CharLMGPUConfig(
        n_layer=2,
        n_head=2,
        n_embd=32,
        block_size=32,
        batch_size=8,
        steps=20,
        warmup_steps=5,
        val_windows=8,
        log_every=10,
        checkpoint_every=10,
        seeds=JUDGED_SEEDS[:1],
    ),
}
# the sweep's first grid: three rungs (one under the task's lr, it, one over; manifold Muon's around
# its own 1e-2), then the ladder rule; the ci profile two rungs (one under, the lr)
SWEEP_PROFILES = profiles(
    RoutingSweepConfig, PROFILES, SWEEP_CI, metric="-val_bpc", seeds=SELECTION_SEEDS, start_below=1, start_above=1
)


def _study(config: RoutingSweepConfig):
    return study(SWEEP, config, charlm.run, arms=ARMS_2X2)


ENTRIES = (
    sweep_entry(
        SWEEP,
        SWEEP_PROFILES,
        _study,
        "the character model at nanoGPT's shakespeare_char size: the 2x2's W_Q, W_K lrs swept on a selection "
        "seed until interior",
        arms=tuple(grid_arm(arm, KEY, lr) for arm in ARMS_2X2 for lr in LADDER),
    ),
    Experiment(
        JUDGED,
        PROFILES,
        ARMS_2X2,
        charlm.run,
        "the character model at nanoGPT's shakespeare_char size: the 2x2 of update direction and constraint, "
        "four arms at their tuned W_Q, W_K lrs, 5 fresh paired seeds",
        resolve=resolver(SWEEP, ARMS_2X2, SWEEP_PROFILES),
    ),
)
