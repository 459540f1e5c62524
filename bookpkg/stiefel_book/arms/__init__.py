"""The arms as values: each :class:`Arm` has its name (the results files' readable key, kept as
stored), its label, the optimizer factory that trains its W_Q, W_K and the settings it changes.
A run's key ``"<arm>@<setting>=<value>..."`` (``"stiefel@wd=0.3@qklr=0.003"``) is written by
:func:`key` and read by :func:`parse` alone; the W_Q, W_K rate is ``qk_lr`` in code and ``qklr``
in stored keys. Light: no torch (factories are named, imported where called)."""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from ..labels import ARMS as LABELS

__all__ = ["Arm", "ARMS", "SETTINGS", "QK_LR_KEY", "arm", "key", "parse", "build_optimizer", "task_optimizer"]

QK_LR_KEY = "qklr"  # the results files' spelling of qk_lr in a run's key ("stiefel@qklr=0.003"): stored, kept


@dataclass(frozen=True)
class Arm:
    name: str  # the results files' key
    factory: str | None  # "module:function" of the optimizer factory (in stiefel_book or stiefel_core); None: frozen
    settings: tuple[tuple[str, object], ...] = ()  # what the arm changes, as the factory's keyword arguments

    @property
    def label(self) -> str:
        return LABELS[self.name]

    @property
    def trains_qk(self) -> bool:
        """Whether W_Q, W_K train (and so have a rate to sweep)."""
        return self.factory is not None

    @property
    def holds_frames(self) -> bool:
        """Whether its model holds W_Q, W_K as frames (the others start from plain matrices)."""
        return self.factory in (None, _FRAMES) or self.name == "stiefel_temp"

    def optimizer_factory(self):
        """The factory itself (imported on use)."""
        if self.factory is None:
            raise ValueError(f"{self.name!r} trains no W_Q, W_K: it has no optimizer factory of its own")
        module, _, name = self.factory.partition(":")
        package = "stiefel_core" if module.startswith("stiefel_core") else __package__
        return getattr(importlib.import_module(module, None if module.startswith("stiefel_core") else package), name)


_EUCLID, _FRAMES = ".variants:euclidean_optimizer", "stiefel_core.combined:configure_optimizer"
_SCALE, _RELATIVE = ".scale_arms:scale_optimizer", ".relatives:relative_optimizer"
ARMS: dict[str, Arm] = {
    a.name: a
    for a in (
        Arm("baseline", _EUCLID, (("decay_qk", True),)),
        Arm("no_decay_qk", _EUCLID, (("decay_qk", False),)),
        Arm("stiefel", _FRAMES),
        Arm("fixed_step", _FRAMES, (("step_rule", "fixed"),)),
        Arm("fixed_step_matched", _FRAMES, (("step_rule", "fixed"), ("calibrated", True))),
        Arm("no_projector", _FRAMES, (("projector", "euclidean"),)),
        Arm("per_entry", _FRAMES, (("second_moment", "entry"),)),
        Arm("no_trust_region", _FRAMES, (("trust_radius", None),)),
        Arm("frozen", None),
        Arm("muon", _RELATIVE, (("decay_qk", True),)),
        Arm("muon_no_decay", _RELATIVE, (("decay_qk", False),)),
        Arm("geoopt_radam", _RELATIVE),
        Arm("orthogonal_param", _RELATIVE),
        Arm("qk_norm", _SCALE),
        # QK-norm at its tuned initial temperature (the routing tasks' judged runs; routing_qk_temp):
        # its temperature and rate are in the results file's config
        Arm("qk_norm_tuned", _SCALE),
        Arm("sphere", _SCALE),
        Arm("stiefel_temp", _SCALE),
        Arm("cayley_adam", _SCALE),
        Arm("manifold_muon", _FRAMES, (("frame_optimizer", "manifold_muon"),)),
    )
}
SETTINGS = {
    "wd": "weight_decay",
    QK_LR_KEY: "qk_lr",
    "flr": "qk_lr",
    "lr": "lr",
    "n": "size",
    "%": "data_percent",
    "temp": "qk_temperature",  # QK-norm's initial temperature (routing_qk_temp's cells)
}
_STORED = {  # code -> stored spelling
    "weight_decay": "@wd=",
    "qk_lr": f"@{QK_LR_KEY}=",
    "lr": "@lr=",
    "size": "@n=",
    "qk_temperature": "@temp=",
}


def arm(name: str) -> Arm:
    """The arm called ``name``; an unknown name is refused, naming the known ones."""
    if name not in ARMS:
        raise ValueError(f"no arm {name!r}; the arms are {sorted(ARMS)}")
    return ARMS[name]


def key(name: str, **settings: float) -> str:
    """``key("stiefel", weight_decay=0.3, qk_lr=0.003)`` -> ``"stiefel@wd=0.3@qklr=0.003"`` (in the order given)."""
    arm(name)
    return name + "".join(f"@{v:g}%" if k == "data_percent" else f"{_STORED[k]}{v:g}" for k, v in settings.items())


def parse(run_arm: str) -> tuple[Arm, dict[str, float]]:
    """``"stiefel@wd=0.3@qklr=0.003"`` -> ``(the Stiefel rule's Arm, {"weight_decay": 0.3, "qk_lr": 0.003})``;
    a setting keeps its stored order. Refused: an unknown arm or setting, a value that is not a number."""
    name, *parts = run_arm.split("@")
    settings = {}
    for part in parts:
        stored, sep, value = part.partition("=")
        if not sep and part.endswith("%"):  # cifar10_sweep's share of the training images, "stiefel@20%"
            stored, sep, value = "%", "=", part[:-1]
        if not sep or stored not in SETTINGS:
            raise ValueError(f"{run_arm!r}: {part!r} is not a setting; the settings are {sorted(SETTINGS)}")
        try:
            settings[SETTINGS[stored]] = float(value)
        except ValueError:
            raise ValueError(f"{run_arm!r}: {value!r} is not a number") from None
    return arm(name), settings


def build_optimizer(
    model, name: str, *, lr: float, qk_lr: float | None, weight_decay: float, betas, trust_radius, qk=None, no_decay=()
):
    """Arm ``name``'s optimizer, by its factory and settings: W_Q, W_K at ``qk_lr`` (None: ``lr``), every
    other parameter AdamW at ``lr`` with decoupled ``weight_decay``; ``trust_radius`` is the task's (an arm
    may override it). Frozen frames, and a Euclidean arm at the task's lr, are plain AdamW (W_Q, W_K undecayed
    where the arm says). W_Q, W_K are the parameters named so (the modular and patch models), or ``qk`` (the
    routing model's head blocks: frames, Euclidean arms); ``no_decay`` names others AdamW does not decay."""
    a, common = arm(name), {"lr": lr, "weight_decay": weight_decay, "betas": betas}
    options = {k: v for k, v in a.settings if k != "calibrated"}  # the calibrated step's lr is its runner's
    if a.factory in (_SCALE, _RELATIVE):
        own = {"trust_radius": trust_radius} if a.factory == _SCALE else {}
        return a.optimizer_factory()(model, name, qk_lr=lr if qk_lr is None else qk_lr, **common, **own)
    if a.factory == _EUCLID and qk_lr is not None:
        return a.optimizer_factory()(model, qk_lr=qk_lr, **common, **options, qk=qk, no_decay=no_decay)
    from stiefel_core.combined import configure_optimizer

    if a.factory == _FRAMES:
        radius = {} if "frame_optimizer" in options else {"trust_radius": trust_radius}
        return configure_optimizer(model, **common, frame_lr=qk_lr, **{**radius, **options}, no_decay=no_decay)
    names = [n for n, p in model.named_parameters() if p.requires_grad and n.rpartition(".")[2] in ("W_Q", "W_K")]
    return configure_optimizer(model, **common, no_decay=[*no_decay, *([] if options.get("decay_qk", True) else names)])


def task_optimizer(model, name: str, config, qk_lr: float | None, factory=None):
    """Arm ``name``'s optimizer at the task ``config``'s settings (its ``lr``, ``weight_decay``, ``betas``,
    ``trust_radius``), W_Q, W_K at ``qk_lr``: ``factory`` (default :func:`build_optimizer`; the routing
    tasks pass their own) called with them, the one call every task runner makes."""
    return (factory or build_optimizer)(
        model,
        name,
        lr=config.lr,
        qk_lr=qk_lr,
        weight_decay=config.weight_decay,
        betas=config.betas,
        trust_radius=config.trust_radius,
    )
