"""Grokking on modular addition: an AdamW baseline against Stiefel W_Q, W_K (Power et al. 2022;
Nanda et al. 2023). Every setting that the preprint does not fix is chosen here, with a reason."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from ..compiling import compile_model
from ..data import modular_data
from ..models import ModularTransformer
from ..optim import configure_optimizer
from ..threads import threads
from ..train import fit
from ..tables import Table
from .calibration import calibration_epochs, matched_lr, median_step
from .metrics import frame_geometry, trust_region_metrics, weight_norms
from .variants import ABLATION_ARMS, CONTROL_ARMS, frame_options, is_euclidean, trains_frames

ARMS = ("baseline", "stiefel")
RUNNABLE_ARMS = (*ABLATION_ARMS, *CONTROL_ARMS)


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


PROFILES = {
    "full": GrokkingConfig(),
    # Small enough for two arms in about a minute on two cores; a larger train fraction and lr
    # bring generalisation within 1,500 epochs, so the page still shows the phenomenon.
    "ci": GrokkingConfig(
        p=31, train_fraction=0.6, d_model=64, n_heads=4, d_mlp=256, lr=3e-3, epochs=1500, log_every=25, seeds=(0,), cpu_threads=1
    ),
}


def run(config: GrokkingConfig, arm: str, seed: int, device: torch.device, checkpoint: Path | None = None, progress: bool = True,
        *, frame_lr: float | None = None) -> dict:
    """Train one arm from one seed; return its history and final metrics. ``frame_lr`` (default
    ``config.lr``) is the frames' lr. The arm ``fixed_step_matched`` calibrates its own
    (:func:`matched_frame_lr`) and records the calibration beside its results."""
    if arm not in RUNNABLE_ARMS:
        raise ValueError(f"unknown arm {arm!r}; grokking has {ARMS}, its ablation {ABLATION_ARMS}, its controls {CONTROL_ARMS}")
    if frame_lr is not None and (arm == "fixed_step_matched" or not trains_frames(arm)):
        raise ValueError(f"frame_lr is for arms that train frames at a chosen lr; {arm!r} does not")
    with threads(config.cpu_threads if device.type == "cpu" else None):
        if arm != "fixed_step_matched":
            return _run(config, arm, seed, device, checkpoint, progress, frame_lr=frame_lr)
        calibration = matched_frame_lr(config, seed, device)
        outcome = _run(config, arm, seed, device, checkpoint, progress, frame_lr=calibration["lr"])
        return {**outcome, "calibration": calibration}


def matched_frame_lr(config: GrokkingConfig, seed: int, device: torch.device) -> dict:
    """:func:`calibration.matched_lr` on this task: short runs from ``seed`` over the first 5 %
    of ``config.epochs``, every step logged."""
    short = dataclasses.replace(config, epochs=calibration_epochs(config.epochs), log_every=1)

    def measure(arm: str, frame_lr: float) -> float:
        return median_step(_run(short, arm, seed, device, None, False, frame_lr=frame_lr)["history"])

    return {**matched_lr(measure, config.lr), "epochs": short.epochs}


def _run(config: GrokkingConfig, arm: str, seed: int, device: torch.device, checkpoint: Path | None, progress: bool,
         frame_lr: float | None = None, compile: bool | None = None) -> dict:
    data = modular_data(config.p, "add", config.train_fraction, seed).to(device)
    torch.manual_seed(seed)  # the same seed gives every arm the same initial weights
    model = ModularTransformer(
        data.vocab_size, config.p, config.d_model, config.n_heads, config.d_mlp, stiefel=not is_euclidean(arm)
    ).to(device)
    if arm == "frozen":
        model.attn.W_Q.requires_grad_(False)
        model.attn.W_K.requires_grad_(False)
    frames = frame_options(arm, config.trust_radius) if trains_frames(arm) else {}
    no_decay = ("attn.W_Q", "attn.W_K") if arm == "no_decay_qk" else ()
    opt = configure_optimizer(model, lr=config.lr, weight_decay=config.weight_decay, betas=config.betas,
                              frame_lr=frame_lr, no_decay=no_decay, **frames)
    schedule = torch.optim.lr_scheduler.LambdaLR(opt, lambda epoch: min(1.0, (epoch + 1) / config.warmup_epochs))
    initial = {name: model.attn.get_parameter(name).detach().clone() for name in ("W_Q", "W_K")}

    forward, compiled = compile_model(model, device, compile)

    def train_step(epoch: int, logging: bool) -> dict | None:
        loss = F.cross_entropy(forward(data.train_x), data.train_y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        before = {name: W.detach().clone() for name, W in (("W_Q", model.attn.W_Q), ("W_K", model.attn.W_K))} if logging else None
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
        metrics.update(trust_region_metrics(opt))
        return metrics

    history = fit(
        model, opt, train_step, evaluate,
        epochs=config.epochs, log_every=config.log_every, scheduler=schedule,
        checkpoint=checkpoint, checkpoint_every=config.checkpoint_every,
        description=f"grokking {arm} seed {seed}", progress=progress,
    )
    return {"history": history, "final": {k: v for k, v in history[-1].items()}, "compiled": compiled}


def endpoint_accuracies(results: dict, epoch: int | None = None) -> dict[str, dict[int, float]]:
    """Validation accuracy per arm and seed at ``epoch`` (default: each run's last record)."""
    table: dict[str, dict[int, float]] = {}
    for key, run in sorted(results["runs"].items()):
        arm, seed = key.split("/")
        records = [r for r in run["history"] if epoch is None or r["epoch"] == epoch]
        if records:
            table.setdefault(arm, {})[int(seed)] = records[-1]["val_acc"]
    return table


EXPLORE = GrokkingConfig(p=13, train_fraction=0.6, d_model=32, n_heads=2, d_mlp=64, epochs=200, log_every=10, seeds=(0,), cpu_threads=1)


def explore(lr_baseline: float, lr_stiefel: float, epochs: int = 200, seed: int = 0, *, arms: tuple[str, str] = ("baseline", "stiefel")) -> dict[str, list[dict]]:
    """Two arms (default the baseline and the Stiefel rule; any of the ablation's) on a problem
    small enough for a widget (seconds), at their own learning rates: histories by arm."""
    base = dataclasses.replace(EXPLORE, epochs=epochs, seeds=(seed,))
    cpu = torch.device("cpu")
    return {arm: run(dataclasses.replace(base, lr=lr), arm, seed, cpu, progress=False)["history"] for arm, lr in zip(arms, (lr_baseline, lr_stiefel))}


PREPRINT = {"stiefel": 0.970, "baseline": 0.611, "epoch": 20_000}  # the preprint's single run, as its abstract reports


def report(results: dict | None, epoch: int = 20_000) -> str:
    """Validation accuracy at ``epoch`` per seed and arm, their mean and spread, the paired
    difference where both arms finished a seed, and the preprint's single run beside them."""
    from ..stats import mean_and_spread, paired_comparison

    if not results or not results.get("runs"):
        return "No run of this profile has finished yet: the results file is missing or empty."
    table = endpoint_accuracies(results, epoch)
    finished = sum(key.split("/")[0] in ARMS for key in results["runs"])
    lines = [f"validation accuracy at epoch {epoch:,} ({finished} finished runs of {' and '.join(ARMS)})"]
    for arm in ARMS:
        per_seed = table.get(arm, {})
        cells = ", ".join(f"seed {s}: {100 * a:.1f}%" for s, a in sorted(per_seed.items())) or "none finished"
        lines.append(f"  {arm:8s} {cells}")
        if len(per_seed) >= 2:
            spread = mean_and_spread([100 * a for a in per_seed.values()])
            lines.append(f"  {'':8s} mean {spread.mean:.1f}%, std {spread.std:.1f}, range {spread.min:.1f}-{spread.max:.1f}% (n = {spread.n})")
        lines.append(f"  {'':8s} preprint (one run): {100 * PREPRINT[arm]:.1f}%")
    paired = sorted(set(table.get("stiefel", {})) & set(table.get("baseline", {})))
    if len(paired) >= 2:
        c = paired_comparison([100 * table["stiefel"][s] for s in paired], [100 * table["baseline"][s] for s in paired])
        lines.append(f"  stiefel - baseline over {c.n} paired seeds: {c.mean_difference:+.1f} pp, 95% CI [{c.ci_low:+.1f}, {c.ci_high:+.1f}], wins {c.wins}/{c.n}")
    return "\n".join(lines)


def largest_spike(history: list[dict], key: str = "train_loss") -> int:
    """The epoch at which ``key`` jumps most (relative to the record before): a collapse."""
    best, at = 0.0, history[len(history) // 2]["epoch"]
    for before, now in zip(history, history[1:]):
        jump = now[key] / max(before[key], 1e-12)
        if jump > best:
            best, at = jump, now["epoch"]
    return at


def run_summary(history: list[dict], threshold: float = 0.9, spike_factor: float = 10.0) -> dict:
    """What one run's log says about grokking and collapse: the first epoch at which validation
    accuracy reaches ``threshold`` (``None`` if never), the lowest validation accuracy after
    that epoch (a relapse), the number of logged training-loss spikes (a record at least
    ``spike_factor`` times the one before), and over the last quarter of training the lowest
    validation accuracy and the share of records at or above ``threshold``."""
    last = [r for r in history if r["epoch"] >= 0.75 * history[-1]["epoch"]]
    grokked_at = next((r["epoch"] for r in history if r["val_acc"] >= threshold), None)
    return {
        "grokked_at": grokked_at,
        "after_grokking_min": None if grokked_at is None else min(r["val_acc"] for r in history if r["epoch"] >= grokked_at),
        "spikes": sum(b["train_loss"] >= spike_factor * a["train_loss"] for a, b in zip(history, history[1:])),
        "final_val_acc": history[-1]["val_acc"],
        "last_quarter_min": min(r["val_acc"] for r in last),
        "last_quarter_held": sum(r["val_acc"] >= threshold for r in last) / len(last),
    }


def runs_table(results: dict | None, arms: tuple[str, ...] = ARMS) -> Table:
    """One row per run of ``arms`` in a results file: :func:`run_summary` of its log, in percent."""
    rows = []
    for key, run in sorted((results or {}).get("runs", {}).items()):
        if key.split("/")[0] not in arms:
            continue
        x = run_summary(run["history"])
        rows.append([key, f"{x['grokked_at']:,}" if x["grokked_at"] is not None else "never",
                     f"{100 * x['after_grokking_min']:.1f}" if x["after_grokking_min"] is not None else "-",
                     x["spikes"], f"{100 * x['final_val_acc']:.1f}", f"{100 * x['last_quarter_min']:.1f}",
                     f"{100 * x['last_quarter_held']:.0f}"])
    headers = ["run", "90 % at epoch", "lowest after (%)", "loss spikes", "final val. acc. (%)",
               "lowest, last quarter (%)", "last quarter ≥ 90 % (% of records)"]
    return Table(headers, rows, "lrrrrrr")


def frame_table(results: dict | None) -> Table:
    """What happened to W_Q and W_K in each arm, over every seed of a results file: the range of
    their Frobenius norms over the whole log, and their mean principal angle to initialisation at
    the end (mean and largest over seeds). Proposition 5 predicts a constant norm for frames."""
    rows = []
    for arm in ARMS:
        runs = [run["history"] for key, run in sorted((results or {}).get("runs", {}).items()) if key.startswith(arm + "/")]
        if not runs:
            continue
        for w in ("W_Q", "W_K"):
            norms = [r[f"norm/attn.{w}"] for h in runs for r in h]
            angles = [h[-1][f"angle_mean/{w}"] for h in runs]
            rows.append([f"{arm} ({len(runs)} seed{'s' if len(runs) > 1 else ''})", w, f"{min(norms):.3f}", f"{max(norms):.3f}",
                         f"{np.mean(angles):.1f}", f"{max(angles):.1f}"])
    return Table(["arm", "frame", "‖W‖_F lowest", "‖W‖_F highest", "angle to init at the end (deg), mean", "largest"], rows, "llrrrr")


def findings(results: dict | None, epoch: int = 20_000) -> list[tuple[str, str, str, str]]:
    """``(question, preprint, we measure, verdict)`` by fixed rules over the seeds that both arms
    finished: an arm ends higher when the 95 % interval of the paired difference at ``epoch``
    excludes zero; grokking is "earlier" likewise on the paired first epochs at 90 %."""
    from ..stats import mean_and_spread, paired_comparison

    table = endpoint_accuracies(results, epoch) if results else {}
    seeds = sorted(set(table.get("stiefel", {})) & set(table.get("baseline", {})))
    if len(seeds) < 2:
        return [("accuracy at epoch 20,000", "Stiefel 97.0%, baseline 61.1% (one run)", f"{len(seeds)} paired seed(s) finished", "not measured")]
    rows = []
    s, b = ([100 * table[arm][k] for k in seeds] for arm in ("stiefel", "baseline"))
    c = paired_comparison(s, b)
    ours = (f"Stiefel {mean_and_spread(s).mean:.1f}%, baseline {mean_and_spread(b).mean:.1f}% (n = {c.n}); "
            f"difference {c.mean_difference:+.1f} pp, 95% CI [{c.ci_low:+.1f}, {c.ci_high:+.1f}]; "
            f"at or above 90% in {sum(v >= 90 for v in s)}/{c.n} Stiefel and {sum(v >= 90 for v in b)}/{c.n} baseline seeds")
    if c.ci_low > 0:
        verdict = "reproduced: Stiefel ends higher"
    elif c.ci_high < 0:
        verdict = "not reproduced: the baseline ends higher"
    elif min(s + b) >= 90:
        verdict = "not reproduced: both arms generalise in every seed, no difference"
    else:
        verdict = "not reproduced: no significant difference"
    rows.append(("accuracy at epoch 20,000", "Stiefel 97.0%, baseline 61.1% (one run)", ours, verdict))
    summaries = {arm: [run_summary(results["runs"][f"{arm}/{k}"]["history"]) for k in seeds] for arm in ("stiefel", "baseline")}
    lows = {arm: [x["after_grokking_min"] for x in summaries[arm] if x["after_grokking_min"] is not None] for arm in summaries}
    relapses = sum(v < 0.5 for arm in lows for v in lows[arm])
    lowest = ", ".join(f"{arm} {100 * min(v):.1f}%" if v else f"{arm}: never reached 90%" for arm, v in lows.items())
    rows.append(("the endpoint is unstable", "unstable (the preprint's caution)",
                 f"lowest validation accuracy after first reaching 90%, any seed: {lowest}",
                 f"unstable: {relapses} run(s) fell below 50% after grokking" if relapses else "no run fell below 50% after grokking"))
    spikes = {arm: [x["spikes"] for x in summaries[arm]] for arm in summaries}
    rows.append(("collapse cycles (training-loss spikes of 10x or more)", "drive the baseline's instability",
                 f"Stiefel {np.mean(spikes['stiefel']):.1f}, baseline {np.mean(spikes['baseline']):.1f} a run",
                 "both arms cycle" if min(map(min, spikes.values())) > 0 else "only one arm cycles" if max(map(min, spikes.values())) > 0 else "no cycles"))
    grok = {arm: [x["grokked_at"] for x in summaries[arm]] for arm in summaries}
    question = "epoch at which validation accuracy first reaches 90%"
    if all(v is not None for v in grok["stiefel"] + grok["baseline"]):
        g = paired_comparison(grok["baseline"], grok["stiefel"])
        rows.append((question, "(not reported)",
                     f"Stiefel {np.mean(grok['stiefel']):,.0f}, baseline {np.mean(grok['baseline']):,.0f}; baseline − Stiefel "
                     f"{g.mean_difference:+,.0f}, 95% CI [{g.ci_low:+,.0f}, {g.ci_high:+,.0f}]",
                     "Stiefel groks earlier" if g.ci_low > 0 else "the baseline groks earlier" if g.ci_high < 0 else "no significant difference"))
    else:  # a run that never groks has no epoch: count, per seed, which arm got there first
        never = {arm: [k for k, v in zip(seeds, grok[arm]) if v is None] for arm in grok}
        inf = float("inf")
        first = {arm: [inf if v is None else v for v in grok[arm]] for arm in grok}
        earlier = sum(s_ < b_ for s_, b_ in zip(first["stiefel"], first["baseline"]))
        later = sum(s_ > b_ for s_, b_ in zip(first["stiefel"], first["baseline"]))
        ours = "; ".join(f"{arm} never reached 90% in seed(s) {', '.join(map(str, v))}" for arm, v in never.items() if v)
        rows.append((question, "(not reported)", f"{ours}; Stiefel first in {earlier} of {len(seeds)} seeds, the baseline in {later}",
                     "no interval: a run that never groks has no epoch to average"))
    return rows
