"""Grokking on modular addition: an AdamW baseline against Stiefel W_Q, W_K (Power et al. 2022;
Nanda et al. 2023), for the grokking chapter. Every setting that the preprint does not fix is
chosen here, with a reason. What the runs say is read by :mod:`stiefel_book.findings.grokking`."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from stiefel_core.manifold import orthonormality_error

from ..arms import arm as arm_of
from ..arms import task_optimizer
from ..arms.calibration import calibration_epochs, matched_lr, median_step
from ..arms.relatives import FOREIGN_ARMS, prepare_projections
from ..arms.scale_arms import SCALE_ARM_NAMES, modular_inputs, prepare_attention
from ..arms.variants import ABLATION_ARMS, CONTROL_ARMS
from ..compiling import compile_model
from ..data import modular_data
from ..models import ModularTransformer
from ..threads import threads
from ..train import fit
from .metrics import frame_geometry, trust_region_metrics, weight_norms

RUNNABLE_ARMS = (*ABLATION_ARMS, *CONTROL_ARMS, *FOREIGN_ARMS, *SCALE_ARM_NAMES)


@dataclass(frozen=True)
class GrokkingConfig:
    p: int = 97  # the modulus; Nanda et al. use 113
    train_fraction: float = 0.3  # Nanda et al.: groks within ~10^4 epochs under weight decay 1
    d_model: int = 128  # Nanda et al.'s one-layer model
    n_heads: int = 4
    d_mlp: int = 512
    lr: float = 1e-3  # Nanda et al.; the same per-entry lr for frames (StiefelAdam's v is a mean square)
    betas: tuple[float, float] = (0.9, 0.98)  # Nanda et al.
    weight_decay: float = 1.0  # decoupled, on every non-frame parameter; the force behind collapse cycles
    warmup_epochs: int = 10  # linear warm-up of the lr, as Nanda et al.
    trust_radius: float = 0.5  # StiefelAdam's default: cond(I + ξᵀξ) <= 1.25
    epochs: int = 20_000  # the preprint's horizon
    log_every: int = 20  # 1,000 records a run: fine enough to see a collapse cycle
    checkpoint_every: int = 1_000  # at most ~1.5 minutes lost to an interruption on the CPU
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4, 5)  # the preprint had one run; we want a spread
    cpu_threads: int | None = None  # torch's default; tiny models run faster on one thread


def run(
    config: GrokkingConfig,
    arm: str,
    seed: int,
    device: torch.device,
    checkpoint: Path | None = None,
    progress: bool = True,
    *,
    qk_lr: float | None = None,
    stop_at: float | None = None,
) -> dict:
    """Train one arm from one seed; return its history and final metrics. ``qk_lr`` (default
    ``config.lr``) is W_Q, W_K's lr: the frames', a relative's, a scale arm's
    (:mod:`stiefel_book.arms.scale_arms`), or AdamW's on plain W_Q, W_K. ``stop_at``: end the run at
    its first logged validation accuracy at or past it (for a score fixed there: the epochs to a
    threshold). The arm ``fixed_step_matched`` calibrates its own (:func:`matched_qk_lr`) and records
    the calibration beside its results."""
    if arm not in RUNNABLE_ARMS:
        raise ValueError(
            f"unknown arm {arm!r}; grokking has its ablation's {ABLATION_ARMS}, "
            f"its controls {CONTROL_ARMS}, its relatives {FOREIGN_ARMS}, "
            f"its arms of scale against orthonormality {SCALE_ARM_NAMES}"
        )
    if qk_lr is not None and (arm == "fixed_step_matched" or not arm_of(arm).trains_qk):
        raise ValueError(f"qk_lr is for arms that train W_Q, W_K at a chosen lr; {arm!r} does not")
    if stop_at is not None and not 0 < stop_at <= 1:
        raise ValueError(f"stop_at is a validation accuracy in (0, 1], got {stop_at}")
    with threads(config.cpu_threads if device.type == "cpu" else None):
        if arm != "fixed_step_matched":
            return _run(config, arm, seed, device, checkpoint, progress, qk_lr=qk_lr, stop_at=stop_at)
        calibration = matched_qk_lr(config, seed, device)
        outcome = _run(config, arm, seed, device, checkpoint, progress, qk_lr=calibration["lr"], stop_at=stop_at)
        return {**outcome, "calibration": calibration}


def matched_qk_lr(config: GrokkingConfig, seed: int, device: torch.device) -> dict:
    """:func:`calibration.matched_lr` on this task: short runs from ``seed`` over the first 5 %
    of ``config.epochs``, every step logged."""
    short = dataclasses.replace(config, epochs=calibration_epochs(config.epochs), log_every=1)

    def measure(arm: str, qk_lr: float) -> float:
        return median_step(_run(short, arm, seed, device, None, False, qk_lr=qk_lr)["history"])

    return {**matched_lr(measure, config.lr), "epochs": short.epochs}


def build_model(config: GrokkingConfig, arm: str, seed: int, vocab_size: int) -> ModularTransformer:
    """``arm``'s model from ``seed``: the same seed gives every arm the same initial weights."""
    torch.manual_seed(seed)
    frames = arm_of(arm).holds_frames
    model = ModularTransformer(vocab_size, config.p, config.d_model, config.n_heads, config.d_mlp, stiefel=frames)
    if arm in FOREIGN_ARMS:  # a relative's W_Q, W_K: the same values, held as its library wants them
        prepare_projections(model.attn, arm)
    if arm in SCALE_ARM_NAMES:  # the same weights; qk_norm's scores match the baseline's RMS over every input
        model.attn = prepare_attention(model.attn, arm, modular_inputs(model, config.p))
    return model


def _run(
    config: GrokkingConfig,
    arm: str,
    seed: int,
    device: torch.device,
    checkpoint: Path | None,
    progress: bool,
    qk_lr: float | None = None,
    compile: bool | None = None,
    stop_at: float | None = None,
) -> dict:
    data = modular_data(config.p, "add", config.train_fraction, seed).to(device)
    model = build_model(config, arm, seed, data.vocab_size).to(device)
    if arm == "frozen":
        model.attn.W_Q.requires_grad_(False)
        model.attn.W_K.requires_grad_(False)
    opt = task_optimizer(model, arm, config, qk_lr)
    schedule = torch.optim.lr_scheduler.LambdaLR(opt, lambda epoch: min(1.0, (epoch + 1) / config.warmup_epochs))
    initial = {name: getattr(model.attn, name).detach().clone() for name in ("W_Q", "W_K")}

    forward, compiled = compile_model(model, device, compile)

    def train_step(epoch: int, logging: bool) -> dict | None:
        loss = F.cross_entropy(forward(data.train_x), data.train_y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        before = (
            {name: W.detach().clone() for name, W in (("W_Q", model.attn.W_Q), ("W_K", model.attn.W_K))}
            if logging
            else None
        )
        opt.step()
        schedule.step()  # one step an epoch: the schedule counts epochs
        if logging:
            return frame_geometry({"W_Q": model.attn.W_Q, "W_K": model.attn.W_K}, before, initial)
        return None

    def evaluate() -> dict:
        metrics = {}
        for split, x, y in (("train", data.train_x, data.train_y), ("val", data.val_x, data.val_y)):
            logits = model(x)
            metrics[f"{split}_loss"] = F.cross_entropy(logits, y).item()
            metrics[f"{split}_acc"] = (logits.argmax(-1) == y).float().mean().item()
        metrics.update(weight_norms(model))
        for w in ("W_Q", "W_K"):  # the projections themselves, also where a parametrization holds them
            W = getattr(model.attn, w).detach()
            metrics[f"norm/attn.{w}"] = W.norm().item()
            metrics[f"ortho/{w}"] = orthonormality_error(W).max().item()  # ‖WᵀW − I‖_F, the worst head
        metrics.update(trust_region_metrics(opt))
        return metrics

    history = fit(
        model,
        opt,
        train_step,
        evaluate,
        epochs=config.epochs,
        log_every=config.log_every,
        scheduler=schedule,
        checkpoint=checkpoint,
        checkpoint_every=config.checkpoint_every,
        description=f"grokking {arm} seed {seed}",
        progress=progress,
        stop_when=None if stop_at is None else (lambda record: record["val_acc"] >= stop_at),
    )
    return {"history": history, "final": {k: v for k, v in history[-1].items()}, "compiled": compiled}
