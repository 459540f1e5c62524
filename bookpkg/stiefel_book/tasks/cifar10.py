"""CIFAR-10 patches: a small vision transformer whose arms differ only in the geometry and the
optimizer of the attention's W_Q, W_K.

Arms (every other parameter is trained by AdamW in every arm):

- ``baseline``: W_Q, W_K are plain matrices, trained by AdamW with weight decay;
- ``stiefel``: W_Q, W_K are frames on St(d_model, d_head), trained by ``StiefelAdam``;
- ``fixed_step``: frames, trained by ``StiefelAdam(step_rule="fixed")``: ``ξ = -lr m̂``,
  degree one in the gradient (the preprint's "fixed-step Riemannian update");
- ``frozen``: frames, orthonormal at initialisation and never updated.

Pairing: start ``s`` seeds the model's initialisation (``torch.manual_seed(s)``, identical for
every arm: the baseline's plain W_Q, W_K start at the same frames) and the data order (a
``torch.Generator`` seeded from ``s``, whose state is checkpointed with the run). Each run
records a fingerprint of its initial weights and a checksum of the order it saw, so a results
file shows its own pairing.

The experiments that train it: :mod:`stiefel_book.experiments.cifar10` and those after it.

The preprint fixes none of the settings below except the arms, 12 paired starts and the
optimizer of the frames. Every default says why it was chosen.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import torch
import torch.nn.functional as F

from stiefel_core.manifold import orthonormality_error

from ..arms import arm as arm_of
from ..arms import task_optimizer
from ..arms.calibration import calibration_epochs, matched_lr, median_step
from ..arms.relatives import FOREIGN_ARMS, prepare_projections
from ..arms.scale_arms import prepare_patch_attention
from ..arms.variants import ABLATION_ARMS, CONTROL_ARMS
from ..compiling import compile_model
from ..models import PatchTransformer
from ..train import fit
from .cifar10_config import CIFAR10Config, warmup_cosine
from .cifar10_data import prepared_data, validation_data
from .metrics import Displacement, geometry_since_start, trust_region_metrics

__all__ = ["prepared_data", "build_model", "build_optimizer", "train", "train_arm", "matched_qk_lr", "RUNNABLE_ARMS"]

RUNNABLE_ARMS = tuple(dict.fromkeys((*ABLATION_ARMS, *CONTROL_ARMS, "qk_norm")))
CALIBRATION_IMAGES = 500  # QK-norm's base scale matches the plain scores' RMS on the pool's first 500 (balanced)


# --- model and optimizer ------------------------------------------------------------------


def build_model(config: CIFAR10Config, arm: str, seed: int, images: torch.Tensor | None = None) -> PatchTransformer:
    """The model of ``arm`` (of ``cifar10``, its ablation, the controls or QK-norm) from start ``seed``:
    identical initial weights in every arm. QK-norm's attention calibrates its base scale on
    ``images`` (default: the training pool's first :data:`CALIBRATION_IMAGES`, on the CPU).
    Chapter: cifar10_patches; the relatives' arms: peers."""
    if arm not in RUNNABLE_ARMS + FOREIGN_ARMS:
        raise ValueError(
            f"unknown arm {arm!r}; cifar10 has its ablation's {ABLATION_ARMS}, the controls {CONTROL_ARMS}, "
            f"the relatives {FOREIGN_ARMS}"
        )
    torch.manual_seed(seed)
    model = PatchTransformer(
        patch_size=config.patch_size,
        d_model=config.d_model,
        n_heads=config.n_heads,
        depth=config.depth,
        mlp_ratio=config.mlp_ratio,
        stiefel=arm_of(arm).holds_frames,
    )
    if arm in FOREIGN_ARMS:  # a relative's W_Q, W_K (chapter "Among its relatives"): the same values
        for block in model.blocks:
            prepare_projections(block.attn, arm)
    if arm == "qk_norm":
        images = prepared_data(config)[0][:CALIBRATION_IMAGES] if images is None else images
        prepare_patch_attention(model, arm, images)
    if arm == "frozen":
        for block in model.blocks:
            block.attn.W_Q.requires_grad_(False)
            block.attn.W_K.requires_grad_(False)
    return model


def build_optimizer(
    model: PatchTransformer, config: CIFAR10Config, arm: str, qk_lr: float | None = None
) -> torch.optim.Optimizer:
    """``arm``'s optimizer (:func:`stiefel_book.arms.build_optimizer`): W_Q, W_K at ``qk_lr`` (default ``lr``),
    AdamW for every other parameter. Chapter: cifar10_patches."""
    opt = task_optimizer(model, arm, config, qk_lr)
    for group in opt.param_groups:
        group.setdefault("initial_lr", group["lr"])
    return opt


def _projections(model: PatchTransformer) -> dict[str, torch.Tensor]:
    """``blocks.i.W_Q`` and ``blocks.i.W_K`` of every block, each of shape (H, d, r)."""
    return {
        f"blocks.{i}.{name}": getattr(block.attn, name)
        for i, block in enumerate(model.blocks)
        for name in ("W_Q", "W_K")
    }


def _fingerprint(model: PatchTransformer) -> str:
    digest = hashlib.sha256()
    for name, p in model.named_parameters():
        digest.update(name.encode())
        digest.update(p.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()[:16]


@torch.inference_mode()
def _scores(model: PatchTransformer, x: torch.Tensor, y: torch.Tensor, split: str) -> dict[str, float]:
    """``{"<split>_loss", "<split>_acc"}``: mean cross-entropy and accuracy over ``x``, 1,000 images a pass."""
    loss = torch.zeros((), dtype=torch.float64, device=x.device)
    correct = torch.zeros((), dtype=torch.int64, device=x.device)
    for start in range(0, len(x), 1000):
        logits, labels = model(x[start : start + 1000]), y[start : start + 1000]
        loss += F.cross_entropy(logits, labels, reduction="sum")
        correct += (logits.argmax(-1) == labels).sum()
    return {f"{split}_loss": loss.item() / len(x), f"{split}_acc": correct.item() / len(x)}


_CHECKSUM_MOD = 2**31 - 1  # order checksum: polynomial hash, exact in int64


# --- one run ------------------------------------------------------------------------------


def train(
    config: CIFAR10Config,
    arm: str,
    seed: int,
    device: torch.device | str = "cpu",
    checkpoint: Path | None = None,
    progress: bool = True,
    *,
    train_size: int | None = None,
    epochs: int | None = None,
    log_every: int | None = None,
    checkpoint_every: int | None = None,
    description: str | None = None,
    horizon: int | None = None,
    qk_lr: float | None = None,
    compile: bool | None = None,
) -> dict:
    """Train ``arm`` from start ``seed`` on the first ``train_size`` images of the pool (default
    all of it) for ``epochs`` epochs; return ``{"history", "final", "data"}``.

    Each logging epoch records the running training loss and accuracy over that epoch, the mean
    per-step displacement ``‖ΔW‖_F`` of every block's W_Q and W_K bank over that epoch
    (``step/blocks.i.W_Q``), their distance from initialisation, the mean principal angle
    (degrees) between each head's subspace now and at the start, the largest orthonormality
    error ``‖WᵀW - I‖_F``, and the test loss and accuracy (and, with ``config.val_size``, the
    validation loss and accuracy on the held-out images, ``val_loss``, ``val_acc``). ``horizon`` (default ``epochs``) is
    the length in epochs that the lr schedule spans: a shorter run is then the first epochs of
    a longer one (the calibration of ``fixed_step_matched``). ``qk_lr`` goes to the frames.
    ``compile`` (default: :func:`stiefel_book.compiling.compile_wanted`) runs the training forward
    under ``torch.compile``; the result says whether it did (``compiled``).
    """
    device = torch.device(device)
    train_x, train_y, test_x, test_y, provenance = prepared_data(config, device)
    val_x, val_y = validation_data(config, device)  # none unless config.val_size
    n = len(train_x) if train_size is None else train_size
    if not 0 < n <= len(train_x):
        raise ValueError(f"train_size must lie in [1, {len(train_x)}], got {n}")
    train_x, train_y = train_x[:n], train_y[:n]  # a prefix of the balanced order: nested, balanced
    epochs = config.epochs if epochs is None else epochs
    batch = min(config.batch_size, n)
    steps_per_epoch = n // batch  # the last partial batch is dropped: every step sees `batch` images
    total_steps = (epochs if horizon is None else horizon) * steps_per_epoch
    warmup = max(1, round(config.warmup_fraction * total_steps))

    model = build_model(config, arm, seed).to(device)
    init_fingerprint = _fingerprint(model)
    forward, compiled = compile_model(model, device, compile)
    opt = build_optimizer(model, config, arm, qk_lr)
    schedule = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: warmup_cosine(step, warmup, total_steps))  # per step
    initial = {k: W.detach().clone() for k, W in _projections(model).items()}
    moved = Displacement(_projections(model))
    generator = torch.Generator().manual_seed(10_000 + seed)  # the data order of start `seed`
    order_state = generator.get_state()  # the tensor fit checkpoints and restores in place
    checksum = torch.zeros((), dtype=torch.int64)

    def train_step(epoch: int, logging: bool) -> dict | None:
        generator.set_state(order_state)
        perm = torch.randperm(n, generator=generator)  # (n,)
        flips = torch.rand(n, generator=generator) < 0.5 if config.hflip else None  # (n,)
        order_state.copy_(generator.get_state())
        weights = torch.arange(1, n + 1, dtype=torch.int64)
        signature = (perm * weights).sum()
        if flips is not None:
            signature = signature + 7 * (flips.long() * weights).sum()
        checksum.copy_((checksum * 1_000_003 + signature % _CHECKSUM_MOD) % _CHECKSUM_MOD)
        perm = perm.to(device)
        flips = flips.to(device) if flips is not None else None
        # logged epochs accumulate on the device and read the sums once, at the epoch's end
        loss_sum, correct = torch.zeros((), device=device), torch.zeros((), dtype=torch.int64, device=device)
        for i in range(steps_per_epoch):
            idx = perm[i * batch : (i + 1) * batch]
            x, y = train_x[idx], train_y[idx]  # (B, 3, 32, 32), (B,)
            if flips is not None:
                x = torch.where(flips[i * batch : (i + 1) * batch, None, None, None], x.flip(-1), x)
            logits = forward(x)  # (B, 10)
            loss = F.cross_entropy(logits, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            if logging:
                moved.before_step()
            opt.step()
            schedule.step()
            if logging:
                moved.after_step()
                with torch.no_grad():
                    loss_sum += loss.detach() * len(y)
                    correct += (logits.argmax(-1) == y).sum()
        if not logging:
            return None
        seen = steps_per_epoch * batch
        steps = moved.mean()
        metrics = {
            "train_loss": loss_sum.item() / seen,
            "train_acc": correct.item() / seen,
            "lr": opt.param_groups[0]["initial_lr"]
            * warmup_cosine((epoch + 1) * steps_per_epoch - 1, warmup, total_steps),
            "steps_done": (epoch + 1) * steps_per_epoch,
        }  # lr: the epoch's last step's
        with torch.no_grad():
            metrics.update(trust_region_metrics(opt))
            current = _projections(model)
            for k, W in current.items():
                W = W.detach()
                metrics[f"step/{k}"] = steps[k]
                metrics[f"dist/{k}"] = (W - initial[k]).norm().item()
                metrics[f"orth_error/{k}"] = orthonormality_error(W.double()).max().item()
            metrics.update(geometry_since_start(current, initial))  # angles, and the bilinear form per head
        return metrics

    def evaluate() -> dict:
        held_out = _scores(model, val_x, val_y, "val") if config.val_size else {}
        return {**_scores(model, test_x, test_y, "test"), **held_out}

    history = fit(
        model,
        opt,
        train_step,
        evaluate,
        epochs=epochs,
        log_every=config.log_every if log_every is None else log_every,
        scheduler=schedule,
        steps_per_epoch=steps_per_epoch,
        checkpoint=checkpoint,
        checkpoint_every=config.checkpoint_every if checkpoint_every is None else checkpoint_every,
        extra_state={"order": order_state, "checksum": checksum},
        description=description or f"cifar10 {arm} start {seed}",
        progress=progress,
    )
    final = {
        **history[-1],
        "train_size": n,
        "epochs": epochs,
        "steps": total_steps,
        "init_fingerprint": init_fingerprint,
        "order_checksum": int(checksum),
    }
    return {"history": history, "final": final, "data": provenance, "compiled": compiled}


def train_arm(
    config: CIFAR10Config, arm: str, seed: int, device, checkpoint: Path | None = None, progress: bool = True, **options
) -> dict:
    """:func:`train`, with ``fixed_step_matched``'s frame lr calibrated first and recorded."""
    if arm != "fixed_step_matched":
        return train(config, arm, seed, device, checkpoint, progress, **options)
    calibration = matched_qk_lr(config, seed, device)
    return {
        **train(config, arm, seed, device, checkpoint, progress, qk_lr=calibration["lr"], **options),
        "calibration": calibration,
    }


def matched_qk_lr(config: CIFAR10Config, seed: int, device) -> dict:
    """:func:`calibration.matched_lr` on this task: short runs from ``seed`` over the first 5 % of
    training, rounded up to whole epochs (one record per epoch: its mean per-step displacement),
    on the full run's lr schedule."""
    epochs = calibration_epochs(config.epochs)
    banks = tuple(f"blocks.{i}.{w}" for i in range(config.depth) for w in ("W_Q", "W_K"))

    def measure(arm: str, qk_lr: float) -> float:
        out = train(
            config, arm, seed, device, None, False, epochs=epochs, horizon=config.epochs, log_every=1, qk_lr=qk_lr
        )
        return median_step(out["history"], banks)

    return {**matched_lr(measure, config.lr), "epochs": epochs}
