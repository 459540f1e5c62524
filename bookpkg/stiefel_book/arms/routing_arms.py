"""The routing tasks' arms, on a nanoGPT-style model (:mod:`stiefel_book.nanogpt`), built the way
a user of the library builds them: ``stiefelize`` the model, ``configure_optimizer`` it.

Every arm starts from the same function: the model made under the run's seed, its W_Q, W_K heads
replaced by their polar factors at unit scale (``stiefelize(model, scale="unit")``: the geometry
of the book's own attention, q·k/√r of order one on LayerNormed inputs; ``"preserve"`` would keep
nanoGPT's std-0.02 init, logits ~20 times smaller, attention near uniform). Then:

- ``stiefel``: the frames trained by StiefelAdam at ``qk_lr`` (``configure_optimizer``);
- ``manifold_muon``: the same frames trained by ManifoldMuon at ``qk_lr`` (Muon's direction on
  frames: the spectral-norm steepest tangent step, then the polar retraction), the fourth corner
  of {Adam's direction, Muon's} x {free, on frames};
- ``frozen``: the frames never trained (lr 0): what training W_Q, W_K is worth at all;
- ``baseline``, ``no_decay_qk``, ``qk_norm``, ``muon``: ``unstiefelize`` back to a plain fused
  ``c_attn``, whose weight is then held as per-head blocks (:class:`QKVBlocks`, the same values
  and forward) so that W_Q, W_K can have an lr of their own: AdamW at ``qk_lr`` (decayed;
  not decayed in ``no_decay_qk``), with per-head RMSNorm on q, k and a learned temperature in
  ``qk_norm`` (its initial value ``qk_temperature``, 1 unless given: :func:`build`),
  ``torch.optim.Muon`` per head (as :mod:`.relatives`) in ``muon``.

Every other parameter: AdamW at the task's lr, nanoGPT's groups (matrices and embeddings decayed,
gains and biases not).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.nn.utils import parametrize

from stiefel_core.combined import CombinedOptimizer
from stiefel_core.convert import stiefelize, unstiefelize

from ..nanogpt import GPT, GPTConfig
from . import build_optimizer

__all__ = ["ARMS", "OPTIONAL_ARMS", "QKVBlocks", "build", "make_optimizer", "qk_names", "qk_metrics"]

ARMS = ("baseline", "stiefel", "frozen", "no_decay_qk", "qk_norm", "muon")  # what a routing experiment runs
OPTIONAL_ARMS = ("manifold_muon",)  # run only when named (--arms): the 2x2's fourth corner
FRAME_ARMS = ("stiefel", "frozen", "manifold_muon")


class QKVBlocks(nn.Module):
    """``c_attn.weight`` ``(3C, C)`` held as its q heads, its k heads (each ``(r, C)``) and v
    ``(C, C)``: the fused weight, with W_Q, W_K as parameters of their own."""

    def __init__(self, n_head: int):
        super().__init__()
        self.n_head = n_head

    def forward(self, *blocks: Tensor) -> Tensor:
        return torch.cat(blocks, dim=0)

    def right_inverse(self, W: Tensor) -> tuple[Tensor, ...]:
        C = W.shape[1]
        q, k, v = W.detach().split(C, dim=0)
        r = C // self.n_head
        return (*(h.clone() for h in q.split(r)), *(h.clone() for h in k.split(r)), v.clone())


def build(config: GPTConfig, arm: str, seed: int, qk_temperature: float | None = None) -> GPT:
    """``arm``'s model from ``seed`` (the same seed, the same initial function in every arm);
    ``qk_temperature``: QK-norm's initial temperature (None: 1, the default every stored run used)."""
    if arm not in ARMS + OPTIONAL_ARMS:
        raise ValueError(f"unknown arm {arm!r}; the routing tasks have {ARMS + OPTIONAL_ARMS}")
    if qk_temperature is not None and arm != "qk_norm":
        raise ValueError(f"only QK-norm has an initial temperature; {arm!r} was given qk_temperature={qk_temperature}")
    torch.manual_seed(seed)
    temperature = {} if qk_temperature is None else {"qk_temperature": qk_temperature}
    model = GPT(GPTConfig(**{**config.__dict__, "qk_norm": arm == "qk_norm", **temperature}))
    stiefelize(model, scale="unit")
    if arm in FRAME_ARMS:
        if arm == "frozen":
            for name in qk_names(model):
                model.get_parameter(name).requires_grad_(False)
        return model
    unstiefelize(model)
    for attn in model.attentions():
        parametrize.register_parametrization(attn.c_attn, "weight", QKVBlocks(attn.n_head), unsafe=True)
    return model


def qk_names(model: GPT) -> list[str]:
    """The parameters behind W_Q, W_K, as ``named_parameters`` spells them (trainable or not)."""
    names = []
    for i, attn in enumerate(model.attentions()):
        plist = attn.c_attn.parametrizations.weight
        n_qk = 2 if not isinstance(plist[0], QKVBlocks) else 2 * attn.n_head  # frame banks, or head blocks
        names += [f"transformer.h.{i}.attn.c_attn.parametrizations.weight.original{j}" for j in range(n_qk)]
    return names


def make_optimizer(
    model: GPT,
    arm: str,
    *,
    lr: float,
    qk_lr: float,
    weight_decay: float,
    betas: tuple[float, float],
    trust_radius: float | None = 0.5,
) -> torch.optim.Optimizer:
    """``arm``'s optimizer: W_Q, W_K (the head blocks) at ``qk_lr`` by the arm's rule
    (:func:`stiefel_book.arms.build_optimizer`; QK-norm's is AdamW's, its norm is in the model; ``muon``:
    ``torch.optim.Muon`` per head), the rest AdamW at ``lr``, nanoGPT's gains and biases undecayed."""
    qk = qk_names(model)
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    no_decay = [n for n, p in named if p.dim() < 2 and n not in qk]
    if arm != "muon":
        settings = dict(lr=lr, qk_lr=qk_lr, weight_decay=weight_decay, betas=betas, trust_radius=trust_radius)
        return build_optimizer(model, "baseline" if arm == "qk_norm" else arm, **settings, qk=qk, no_decay=no_decay)
    rest = [
        {"params": [p for n, p in named if n not in qk and n not in no_decay], "weight_decay": weight_decay},
        {"params": [p for n, p in named if n in no_decay], "weight_decay": 0.0},
    ]
    adamw = torch.optim.AdamW(rest, lr=lr, betas=betas, weight_decay=weight_decay, foreach=True)
    mine = [p for n, p in named if n in qk]
    return CombinedOptimizer(
        adamw, torch.optim.Muon(mine, lr=qk_lr, weight_decay=weight_decay, adjust_lr_fn="match_rms_adamw")
    )


@torch.no_grad()
def qk_metrics(model: GPT) -> dict:
    """Per layer: the RMS Frobenius norm of a head's effective W_Q and W_K (a frame's is √r at unit
    scale), with qk_norm the mean temperature, and while logits are recorded the last forward's
    largest attention logit."""
    out = {}
    for i, attn in enumerate(model.attentions()):
        W = attn.c_attn.weight
        C, H = attn.n_embd, attn.n_head
        for j, name in enumerate(("W_Q", "W_K")):
            heads = W[j * C : (j + 1) * C].reshape(H, C // H, C)
            out[f"norm/{i}.{name}"] = torch.linalg.matrix_norm(heads).pow(2).mean().sqrt().item()
        if attn.qk_norm:
            out[f"temperature/{i}"] = attn.temperature.mean().item()
        if attn.max_logit is not None:  # recorded (``nanogpt.recording_logits``) on the last forward
            out[f"max_logit/{i}"] = attn.max_logit.item()
    return out
