"""``stiefelize(model)``: the query and key projections of an existing model as per-head frames.

Conversion is in place and uses torch's parametrizations: the projection weight the model's
own code reads (``in_proj_weight``, ``c_attn.weight``, ``q_proj.weight``, ...) becomes a
function of per-head frame banks of shape ``(H, d_model, d_head)``, with ``q_h = x @ (α_h W[h])``.
Only Q and K are constrained; V rows, biases and the output projection stay Euclidean (AdamW).

Layouts, per head ``h`` of width ``r`` (the block a model's own code reads as head ``h``):

- ``nn.Linear`` weight ``(H r, d)`` (``q = x Wᵀ``): frame ``= W.view(H, r, d).transpose(1, 2)``;
  a fused ``[q; k; v]`` weight (``nn.MultiheadAttention.in_proj_weight``, nanoGPT's ``c_attn``,
  timm's ``qkv``) is that, row block by row block;
- Hugging Face ``Conv1D`` weight ``(d, 3 d)`` (``q = x W``): frame ``= W[:, :d].reshape(d, H, r).transpose(0, 1)``.

**The logits' scale.** A head's initial frame is the polar factor ``U_h`` of its weight
``W_h = U_h P_h``, the closest frame in Frobenius norm. ``U_h`` has every singular value 1, so
on its own it would change the attention logits ``q·k/√r`` by about ``1/(σ_q σ_k)`` (σ: the
weights' singular values; for GPT-2's initialisation, std 0.02 at d = 768, σ ≈ 0.55, so about
3.3 times larger logits). ``scale`` says what to do, explicitly: ``"preserve"`` (default) keeps
a fixed, untrained per-head factor ``α_h = ‖W_h‖_F / √r`` (the RMS singular value), so each
head's projection keeps its Frobenius norm and the logits their scale; ``"unit"`` uses the bare
frames (``α = 1``, the geometry of :class:`~stiefel_core.attention.SelfAttention`); a number
is one ``α`` for every head. ``α`` is a buffer: it is saved, never trained, and folded back
by :func:`unstiefelize`.

**Saving.** A converted model saves and loads through ``state_dict()`` (the frames keep their
tag, ``load_state_dict(assign=True)`` included). ``torch.save(model)`` of the whole converted
module is refused by torch's parametrizations with a clear error: :func:`unstiefelize` first,
then pickle or ``save_pretrained`` the plain model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch.nn.utils import parametrize

from .frames import declare_frames
from .manifold import orthonormalize

__all__ = ["stiefelize", "unstiefelize", "check_state_dict", "ConversionMismatchError", "Conversion", "HeadFrames"]
__all__ += ["QUERY", "KEY", "FUSED"]

QUERY = r"q_proj|query|q|wq|to_q|q_lin"  # separate query projections (last name component)
KEY = r"k_proj|key|k|wk|to_k|k_lin"  # their key siblings in the same parent module
FUSED = r"c_attn|qkv|Wqkv|qkv_proj"  # fused [q; k; v] projections with heads contiguous
HEAD_ATTRS = ("num_heads", "n_head", "n_heads", "num_attention_heads", "nheads")
KV_HEAD_ATTRS = ("num_key_value_heads", "n_kv_heads", "num_kv_heads", "n_kv_head")
HEAD_DIM_ATTRS = ("head_dim", "head_size", "attention_head_size", "key_value_proj_dim")


@dataclass(frozen=True)
class Conversion:
    """What :func:`stiefelize` did to one projection weight. Chapter: use_on_your_model."""

    module: str  # the module's name in the model
    kind: str  # the layout recognised
    heads: tuple[int, int]  # (query heads, key heads) converted in this weight (0: none)
    frame_shape: tuple[int, int]  # (d, r) of every frame
    frames: tuple[str, ...]  # names of the frame banks, as named_parameters() spells them
    scale: str  # the scale rule applied


class HeadFrames(nn.Module):
    """The parametrization ``weight = join(α_q·Q, α_k·K, rest)`` of one projection weight.

    ``segments`` lists the converted head blocks along the weight's output ``axis`` (0 for
    ``nn.Linear``, 1 for ``Conv1D``) in order, as ``(name, n_heads)``; what follows them (V)
    is ``rest``, a plain tensor. Its originals are the frame banks, then ``rest``.
    Chapter: use_on_your_model."""

    def __init__(self, W: Tensor, *, axis: int, segments: list[tuple[str, int]], head_dim: int, scale):
        super().__init__()
        self.axis, self.segments, self.head_dim = axis, list(segments), head_dim
        self.width = sum(n for _, n in segments) * head_dim
        self.has_rest = W.shape[axis] > self.width
        for (name, _), block in zip(self.segments, self._blocks(W)):
            r = block.shape[-1]
            if scale == "preserve":
                norms = torch.linalg.matrix_norm(block.detach().float()) / r**0.5  # (H,) RMS singular value
                alpha = torch.where(norms > 0, norms, torch.ones_like(norms))
            elif scale == "unit":
                alpha = torch.ones(block.shape[0])
            else:
                alpha = torch.full((block.shape[0],), float(scale))
            self.register_buffer(f"scale_{name}", alpha.to(device=W.device, dtype=W.dtype))

    def _blocks(self, W: Tensor) -> list[Tensor]:
        """The converted heads of ``W``, each ``(H, d, r)``."""
        r, blocks, offset = self.head_dim, [], 0
        for _, n in self.segments:
            part = W.narrow(self.axis, offset, n * r)
            if self.axis == 0:  # (H r, d): rows of head h are h r .. (h + 1) r
                blocks.append(part.reshape(n, r, -1).transpose(1, 2))
            else:  # (d, H r): columns of head h
                blocks.append(part.reshape(part.shape[0], n, r).transpose(0, 1))
            offset += n * r
        return blocks

    def forward(self, *tensors: Tensor) -> Tensor:
        parts = []
        for (name, n), frames in zip(self.segments, tensors):
            scaled = frames * getattr(self, f"scale_{name}").to(frames.dtype)[:, None, None]  # (H, d, r)
            if self.axis == 0:
                parts.append(scaled.transpose(1, 2).reshape(n * self.head_dim, -1))
            else:
                parts.append(scaled.transpose(0, 1).reshape(scaled.shape[1], n * self.head_dim))
        if self.has_rest:
            parts.append(tensors[-1])
        return torch.cat(parts, dim=self.axis)

    def right_inverse(self, W: Tensor) -> tuple[Tensor, ...]:
        """The closest frames (polar factors) of ``W``'s heads, then the rest: assigning a weight
        re-projects it."""
        frames = [orthonormalize(block.detach()).contiguous() for block in self._blocks(W)]
        rest = (
            [W.detach().narrow(self.axis, self.width, W.shape[self.axis] - self.width).clone()] if self.has_rest else []
        )
        return (*frames, *rest)


def _attr(modules: list[nn.Module], names: tuple[str, ...]) -> int | None:
    for module in modules:
        for source in (module, getattr(module, "config", None)):
            for name in names:
                value = getattr(source, name, None) if source is not None else None
                if isinstance(value, int) and value > 0:
                    return value
    return None


def _is_conv1d(module: nn.Module) -> bool:
    return (
        type(module).__name__ == "Conv1D"
        and hasattr(module, "nf")
        and isinstance(getattr(module, "weight", None), Tensor)
    )


def _parametrize(module: nn.Module, attr: str, head_frames: HeadFrames) -> tuple[str, ...]:
    requires_grad = getattr(module, attr).requires_grad
    head_frames.parameter_order = list(module._parameters)  # unstiefelize restores it: same state_dict keys, same order
    parametrize.register_parametrization(module, attr, head_frames, unsafe=True)
    plist = module.parametrizations[attr]
    names = tuple(f"original{i}" for i in range(len(head_frames.segments)))
    declare_frames(plist, *names)
    for p in plist.parameters():
        p.requires_grad_(requires_grad)
    return tuple(f"parametrizations.{attr}.{n}" for n in names)


def _heads(name: str, modules: list[nn.Module], d_model: int, n_heads, head_dim) -> tuple[int, int]:
    n_heads = n_heads or _attr(modules, HEAD_ATTRS)
    head_dim = head_dim or _attr(modules, HEAD_DIM_ATTRS) or (d_model // n_heads if n_heads else None)
    if not n_heads or not head_dim:
        raise ValueError(
            f"stiefelize: cannot tell the number of heads of '{name}' ({type(modules[0]).__name__}); "
            "pass n_heads= (and head_dim= when it is not d_model / n_heads)."
        )
    return n_heads, head_dim


def _convert(name, module, attr, axis, segments, head_dim, scale, kind) -> Conversion:
    W = getattr(module, attr)
    needed = sum(n for _, n in segments) * head_dim
    if W.shape[axis] < needed or (W.shape[1 - axis] < head_dim):
        raise ValueError(
            f"stiefelize: '{name}.{attr}' of shape {tuple(W.shape)} does not hold {segments} heads of width "
            f"{head_dim} ({kind}); pass n_heads= / head_dim=, or leave it out with skip=."
        )
    prefix = f"{name}." if name else ""
    frames = _parametrize(module, attr, HeadFrames(W, axis=axis, segments=segments, head_dim=head_dim, scale=scale))
    heads = tuple(dict(segments).get(k, 0) for k in ("q", "k"))
    d = W.shape[1 - axis]
    return Conversion(prefix + attr, kind, heads, (d, head_dim), tuple(prefix + f for f in frames), str(scale))


def stiefelize(
    model: nn.Module,
    *,
    n_heads: int | None = None,
    n_kv_heads: int | None = None,
    head_dim: int | None = None,
    scale: str | float = "preserve",
    query: str = QUERY,
    key: str = KEY,
    fused: str = FUSED,
    skip: str | None = None,
) -> list[Conversion]:
    """Convert, in place, the query and key projections of ``model`` into per-head frames.

    Recognised: ``nn.MultiheadAttention`` (fused ``in_proj_weight`` or separate
    ``q_proj_weight`` / ``k_proj_weight``); a fused ``[q; k; v]`` ``nn.Linear`` or Hugging Face
    ``Conv1D`` whose name matches ``fused`` (nanoGPT's and GPT-2's ``c_attn``, timm's ``qkv``);
    separate ``nn.Linear`` projections whose names match ``query`` and ``key`` in one parent
    (``q_proj``/``k_proj``, ...), with fewer key heads (grouped-query attention) read from the
    key's width. Patterns are regular expressions matched against a module's last name
    component; ``skip`` matches full module names to leave alone. Head counts come from the
    attention module's attributes (``num_heads``, ``n_head``, ``num_key_value_heads``,
    ``head_dim``, or its ``config``), or from ``n_heads`` / ``n_kv_heads`` / ``head_dim``.
    ``scale`` sets the logits' scale (module docstring). Returns one :class:`Conversion` per
    converted weight (none for a model converted already); raises ``ValueError`` naming the module and the option to
    pass when a
    projection cannot be converted, or when there is none.

    **Order.** The conversion replaces the Q, K weights by new parameters (the frame banks), so:

    - build the optimizer *after* ``stiefelize`` (:func:`~stiefel_core.combined.configure_optimizer`):
      one built before holds the old weights, which get no gradient, and never trains Q, K;
    - re-initialise *before* ``stiefelize`` (or ``unstiefelize``, initialise, ``stiefelize``):
      an initialiser run afterwards (``_reset_parameters()``, Hugging Face ``_init_weights``,
      ``model.apply(init)``) writes into the computed weight, a temporary, and leaves Q, K and V
      as they were;
    - load a plain checkpoint *before* ``stiefelize``, and ``unstiefelize`` *before* ``state_dict()``,
      ``save_pretrained`` or ``torch.save`` for a plain model: a converted model's state dict holds
      frames, not the weights. ``load_state_dict`` of this model checks first and raises
      :class:`ConversionMismatchError` naming the fix (also after :func:`unstiefelize`); a plain
      model the library never saw cannot check (``save_pretrained`` then ``from_pretrained``
      re-initialises Q, K silently): :func:`check_state_dict` does it by hand;
    - give the frames to ``StiefelAdam`` only: an ``AdamW`` also given them takes them off the
      manifold, and the next ``StiefelAdam`` step raises an error naming it.

    Chapter: use_on_your_model.
    """
    conversions, done, already = [], set(), False
    modules = dict(model.named_modules())
    for name, module in modules.items():
        parent_name, _, leaf = name.rpartition(".")
        parent = modules.get(parent_name, model)
        if parametrize.is_parametrized(module) and any(
            isinstance(pl[0], HeadFrames) for pl in module.parametrizations.values()
        ):
            already = True
            continue
        if name in done or (skip and re.fullmatch(skip, name)):
            continue
        if isinstance(module, nn.MultiheadAttention):
            conversions += _multihead_attention(name, module, scale)
            done.update(n for n in modules if n.startswith(f"{name}."))
        elif re.fullmatch(fused, leaf) and (isinstance(module, nn.Linear) or _is_conv1d(module)):
            conversions.append(_fused(name, module, parent, n_heads, n_kv_heads, head_dim, scale))
        elif re.fullmatch(query, leaf) and isinstance(module, nn.Linear):
            key_name, pair = _query_and_key(name, module, parent, parent_name, key, n_heads, head_dim, scale)
            conversions += pair
            done.add(key_name)
    if not conversions and not already:
        raise ValueError(
            f"stiefelize: found no query/key projections in {type(model).__name__}: no nn.MultiheadAttention, no "
            f"nn.Linear or Conv1D named like {fused!r} (fused), and no {query!r} / {key!r} pair. Pass "
            "fused=, query= and key= (regular expressions on module names) for your model."
        )
    if not getattr(model, "_stiefel_load_check", False):  # every later load of this model is checked first
        model.register_load_state_dict_pre_hook(_check_before_loading)
        model._stiefel_load_check = True
    return conversions


class ConversionMismatchError(RuntimeError):
    """A state dict of a converted model loaded into a plain one, or the reverse; nothing was loaded."""


CONVERTED_KEY = re.compile(r"(?:(.*)\.)?parametrizations\.([^.]+)\.original\d+")  # -> the plain weight's name


def _plain_names(keys) -> set[str]:
    found = (CONVERTED_KEY.fullmatch(k) for k in keys)
    return {f"{m[1]}.{m[2]}" if m[1] else m[2] for m in found if m}


def check_state_dict(model: nn.Module, state_dict: dict, prefix: str = "") -> None:
    """Raise :class:`ConversionMismatchError` when ``state_dict`` is a converted model's and
    ``model`` is plain (call :func:`unstiefelize` on the source before saving), or the reverse
    (load it before :func:`stiefelize`). ``load_state_dict`` of a model ``stiefelize`` has seen
    runs it first; call it for a model the library never saw. Chapter: use_on_your_model."""
    expected = set(model.state_dict())
    given = {k[len(prefix) :] for k in state_dict if k.startswith(prefix)}
    frames_for_plain = sorted(k for k in _plain_names(given) if k in expected and k not in given)
    if frames_for_plain:
        raise ConversionMismatchError(
            f"the state dict holds {frames_for_plain[:3]} as frames (a stiefelized model's), but this model is "
            "plain. Call stiefel_core.unstiefelize(model) on the trained model before state_dict(), "
            "save_pretrained or torch.save; or stiefelize this model before loading. Nothing was loaded."
        )
    plain_for_frames = sorted(k for k in _plain_names(expected) if k in given and k not in expected)
    if plain_for_frames:
        raise ConversionMismatchError(
            f"the state dict holds {plain_for_frames[:3]} as plain weights, but this model was stiefelized. Load "
            "plain weights before stiefel_core.stiefelize(model) (or unstiefelize(model), load, stiefelize again). "
            "Nothing was loaded."
        )


def _check_before_loading(module, state_dict, prefix, *args) -> None:
    check_state_dict(module, state_dict, prefix)  # a pre-hook of the root: runs before any module loads


def _multihead_attention(name: str, module: nn.MultiheadAttention, scale) -> list[Conversion]:
    """``nn.MultiheadAttention``: its fused ``in_proj_weight`` ``[q; k; v]``, or its separate
    ``q_proj_weight`` and ``k_proj_weight``."""
    H, r = module.num_heads, module.head_dim
    if module._qkv_same_embed_dim:
        return [
            _convert(
                name,
                module,
                "in_proj_weight",
                0,
                [("q", H), ("k", H)],
                r,
                scale,
                "nn.MultiheadAttention in_proj_weight [q; k; v]",
            )
        ]
    return [
        _convert(name, module, attr, 0, [(kind, H)], r, scale, f"nn.MultiheadAttention {attr}")
        for attr, kind in (("q_proj_weight", "q"), ("k_proj_weight", "k"))
    ]


def _fused(name: str, module: nn.Module, parent: nn.Module, n_heads, n_kv_heads, head_dim, scale) -> Conversion:
    """A fused ``[q; k; v]`` ``nn.Linear`` (rows) or Hugging Face ``Conv1D`` (columns), with
    ``n_kv_heads`` key heads (grouped-query attention) when the parent says so."""
    conv = _is_conv1d(module)
    if getattr(parent, "is_cross_attention", False):
        raise ValueError(
            f"stiefelize: '{name}' is a cross-attention projection (K and V only); leave it out with skip="
        )
    d_model = module.weight.shape[0 if conv else 1]
    H, r = _heads(name, [parent, module], d_model, n_heads, head_dim)
    Hk = n_kv_heads or _attr([parent], KV_HEAD_ATTRS) or H
    width = module.weight.shape[1 if conv else 0]
    if width != (H + 2 * Hk) * r:
        raise ValueError(
            f"stiefelize: '{name}' has {width} outputs, not (n_heads + 2 n_kv_heads) head_dim = "
            f"({H} + 2·{Hk})·{r}; pass n_heads=, n_kv_heads=, head_dim=, or skip= it."
        )
    kind = "Hugging Face Conv1D [q | k | v]" if conv else "fused nn.Linear [q; k; v]"
    return _convert(name, module, "weight", 1 if conv else 0, [("q", H), ("k", Hk)], r, scale, kind)


def _query_and_key(
    name: str, module: nn.Linear, parent: nn.Module, parent_name: str, key: str, n_heads, head_dim, scale
) -> tuple[str, list[Conversion]]:
    """A separate query ``nn.Linear`` and its one key sibling in ``parent`` (fewer key heads,
    grouped-query attention, read from the key's width): the key's name, and both conversions."""
    siblings = [(n, m) for n, m in parent.named_children() if re.fullmatch(key, n) and isinstance(m, nn.Linear)]
    if len(siblings) != 1:
        raise ValueError(
            f"stiefelize: '{name}' looks like a query projection, but its parent has "
            f"{len(siblings)} key projections matching {key!r}; pass key= (or skip=)."
        )
    key_leaf, key_module = siblings[0]
    H, r = _heads(name, [parent, module], module.in_features, n_heads, head_dim)
    if module.out_features != H * r or key_module.out_features % r:
        raise ValueError(
            f"stiefelize: '{name}' ({module.out_features} outputs) and its key '{key_leaf}' "
            f"({key_module.out_features}) do not split into heads of width {r} with {H} query heads; "
            "pass n_heads= / head_dim=."
        )
    key_name = f"{parent_name}.{key_leaf}" if parent_name else key_leaf
    return key_name, [
        _convert(name, module, "weight", 0, [("q", H)], r, scale, "nn.Linear query"),
        _convert(key_name, key_module, "weight", 0, [("k", key_module.out_features // r)], r, scale, "nn.Linear key"),
    ]


def unstiefelize(model: nn.Module) -> list[str]:
    """Fold every converted weight back into the model's own plain parameter and layout
    (``α_h W[h]`` per head, V as trained), so that ``state_dict()`` loads into the unconverted
    architecture and ``save_pretrained`` / ``from_pretrained`` round-trip. Returns the weights'
    names. The model computes the same function before and after.
    Chapter: use_on_your_model."""
    restored = []
    for name, module in list(model.named_modules()):
        if not parametrize.is_parametrized(module):
            continue
        for attr, plist in list(module.parametrizations.items()):
            if not isinstance(plist[0], HeadFrames):
                continue
            order = plist[0].parameter_order
            with torch.no_grad():
                W = getattr(module, attr).detach().clone()
            requires_grad = any(p.requires_grad for p in plist.parameters())
            parametrize.remove_parametrizations(module, attr, leave_parametrized=True)
            module._parameters[attr] = nn.Parameter(W, requires_grad=requires_grad)
            for name_ in order:  # back to the module's own order
                if name_ in module._parameters:
                    module._parameters[name_] = module._parameters.pop(name_)
            restored.append(f"{name}.{attr}" if name else attr)
    return restored
