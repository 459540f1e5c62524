"""One training loop for every experiment: progress bar, metric history, checkpoint and resume."""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import time
import warnings
from pathlib import Path
from typing import Callable

import torch
from torch import nn
from tqdm.auto import tqdm

__all__ = [
    "fit",
    "pick_device",
    "save_atomically",
    "load_checkpoint",
    "Interrupted",
    "stop_on_interrupt",
    "stop_requested",
]


class Interrupted(KeyboardInterrupt):
    """Ctrl-C under :func:`stop_on_interrupt`: the run in progress stopped at the end of an epoch,
    saved to its checkpoint (``epoch``, ``checkpoint``; both ``None`` when it stopped between runs)."""

    def __init__(self, epoch: int | None = None, checkpoint: Path | None = None):
        super().__init__(f"stopped at epoch {epoch}" if epoch is not None else "stopped between runs")
        self.epoch, self.checkpoint = epoch, checkpoint


_STOP = {"requested": False}


def stop_requested() -> bool:
    """Whether Ctrl-C asked the runs to stop (under :func:`stop_on_interrupt`)."""
    return _STOP["requested"]


@contextlib.contextmanager
def stop_on_interrupt():
    """While the block runs, a first Ctrl-C (SIGINT) asks :func:`fit` to stop at the end of its
    epoch, save its checkpoint and raise :class:`Interrupted` (a run on its last epoch finishes
    instead; a runner stops before its next run); a second one interrupts at once."""

    def ask(signum, frame):
        _STOP["requested"] = True
        signal.signal(signal.SIGINT, signal.default_int_handler)

    previous = signal.signal(signal.SIGINT, ask)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        _STOP["requested"] = False


def pick_device(device: str | torch.device | None = None) -> torch.device:
    """``device`` if given, else CUDA when available (``cuda:$LOCAL_RANK`` under torchrun),
    else the CPU."""
    if device is not None:
        return torch.device(device)
    if torch.cuda.is_available():
        return torch.device(f"cuda:{int(os.environ.get('LOCAL_RANK', 0)) % torch.cuda.device_count()}")
    return torch.device("cpu")


def save_atomically(obj, path: Path) -> None:
    """``torch.save`` to a temporary file, then rename: a crash never leaves half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)


def load_checkpoint(path: Path | None) -> dict | None:
    """The state saved at ``path``, or ``None`` without one. A damaged file (cut short by a full
    disk or a copy stopped half way) is moved aside to ``<name>.damaged`` with a warning that
    names it, and its run starts again from epoch 0."""
    if path is None or not Path(path).exists():
        return None
    path = Path(path)
    try:
        return torch.load(path, weights_only=True, map_location="cpu")
    except (RuntimeError, EOFError, pickle.UnpicklingError) as error:
        aside = path.with_suffix(path.suffix + ".damaged")
        os.replace(path, aside)
        reason = (str(error).splitlines() or [type(error).__name__])[0]
        warnings.warn(
            f"checkpoint {path} is damaged ({reason}); moved it aside to {aside}: its run starts again from epoch 0",
            stacklevel=2,
        )
        return None


def _fast_forward(scheduler: torch.optim.lr_scheduler.LambdaLR, steps: int) -> None:
    """Put a ``LambdaLR`` where it stands after ``steps`` steps, as if it had taken them."""
    if not isinstance(scheduler, torch.optim.lr_scheduler.LambdaLR):
        raise ValueError(
            f"this checkpoint holds no scheduler state, and a {type(scheduler).__name__} cannot be "
            "fast-forwarded: resume it with a LambdaLR, or delete the checkpoint to start over"
        )
    scheduler.last_epoch = steps
    for group, base, factor in zip(scheduler.optimizer.param_groups, scheduler.base_lrs, scheduler.lr_lambdas):
        group["lr"] = base * factor(steps)
    scheduler._last_lr = [group["lr"] for group in scheduler.optimizer.param_groups]


def fit(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    train_step: Callable[[int, bool], dict | None],
    evaluate: Callable[[], dict],
    *,
    epochs: int,
    log_every: int,
    scheduler: torch.optim.lr_scheduler.LRScheduler | None = None,
    steps_per_epoch: int = 1,
    checkpoint: Path | None = None,
    checkpoint_every: int = 1000,
    extra_state: dict | None = None,
    description: str = "",
    progress: bool = True,
    stop_when: Callable[[dict], bool] | None = None,
) -> list[dict]:
    """Train for ``epochs`` epochs and return the metric history.

    ``train_step(epoch, logging)`` trains one epoch; on logging epochs it may return metrics
    of the step itself (displacements, say). One scheduler idiom for every experiment:
    ``train_step`` calls ``scheduler.step()`` after each ``optimizer.step()`` (``scheduler``, over
    steps, is handed here to be checkpointed; ``steps_per_epoch`` says how many steps an epoch
    takes, to resume a checkpoint written before its run saved a scheduler). ``evaluate()`` returns metrics of the
    model.
    Every ``log_every`` epochs (and at the end) one record ``{"epoch": ..., **metrics}`` is
    appended to the history. With ``checkpoint``, model, optimizer, scheduler, history and
    ``extra_state`` (tensors such as a data-order generator's state, restored in place) and the
    seconds trained so far (``elapsed``, summed over resumed segments) are saved every ``checkpoint_every`` epochs, and
    a later call resumes from the file (loaded
    with ``weights_only=True``). The file is removed when training finishes.
    ``stop_when(record)`` true on a logged record ends training there (that record is the last):
    for a run whose score is fixed once it crosses a threshold.
    """
    if log_every < 1 or epochs < 0:
        raise ValueError(f"need epochs >= 0 and log_every >= 1, got {epochs} and {log_every}")
    start, history, elapsed_before, clock = 0, [], 0.0, time.perf_counter()
    if (state := load_checkpoint(checkpoint)) is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        if scheduler is not None and state.get("scheduler") is not None:
            scheduler.load_state_dict(state["scheduler"])
        elif scheduler is not None:  # an older CIFAR-10 checkpoint, whose lr was set by hand each step
            _fast_forward(scheduler, state["epoch"] * steps_per_epoch)
        for key, tensor in (extra_state or {}).items():
            tensor.copy_(state["extra"][key])
        start, history = state["epoch"], state["history"]
        elapsed_before = float(state.get("elapsed", 0.0))

    def save(epoch: int) -> None:
        save_atomically(
            {
                "epoch": epoch,
                "history": history,
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict() if scheduler is not None else None,
                "extra": {k: v.clone() for k, v in (extra_state or {}).items()},
                "elapsed": elapsed_before + time.perf_counter() - clock,  # seconds of training, over all segments
            },
            checkpoint,
        )

    quiet = not progress or os.environ.get("TQDM_DISABLE", "") not in ("", "0")  # tqdm ignores it when disable is given
    bar = tqdm(range(start, epochs), initial=start, total=epochs, desc=description, disable=quiet, leave=False)
    for epoch in bar:
        logging = (epoch + 1) % log_every == 0 or epoch + 1 == epochs
        model.train()
        step_metrics = train_step(epoch, logging)
        if logging:
            model.eval()
            with torch.no_grad():
                record = {"epoch": epoch + 1, **(step_metrics or {}), **evaluate()}
            history.append(record)
            bar.set_postfix({k: f"{v:.3f}" for k, v in record.items() if k in ("train_acc", "val_acc", "test_acc")})
            if stop_when is not None and stop_when(record):
                break
        if checkpoint is not None and (epoch + 1) % checkpoint_every == 0 and epoch + 1 < epochs:
            save(epoch + 1)
        if stop_requested() and epoch + 1 < epochs:  # Ctrl-C: save where it stands, resume from there
            if checkpoint is not None:
                save(epoch + 1)
            raise Interrupted(epoch + 1, checkpoint)
    if checkpoint is not None and Path(checkpoint).exists():
        Path(checkpoint).unlink()
    return history
