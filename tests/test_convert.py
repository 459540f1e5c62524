"""stiefelize / unstiefelize on attention written by others: every layout, the head split each
model's own code uses, training, export, and the errors."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from stiefel_core.combined import configure_optimizer
from stiefel_core.convert import HeadFrames, stiefelize, unstiefelize
from stiefel_core.frames import is_frame
from stiefel_core.manifold import orthonormality_error, orthonormalize, random_frame
from stiefel_core.optim import StiefelAdam

import foreign_models as fm

try:
    import transformers  # noqa: F401

    HAS_TRANSFORMERS = True
except ImportError:  # the library's own tests run without it (tests/test_packaging.py)
    HAS_TRANSFORMERS = False
needs_transformers = pytest.mark.skipif(not HAS_TRANSFORMERS, reason="needs transformers (the test extra)")

# family: (factory, expected conversions as (module, kind word, heads))
FAMILIES = {
    "nanogpt": (fm.Block, [("attn.c_attn.weight", "fused nn.Linear", (4, 4))]),
    "timm": (fm.TimmAttention, [("qkv.weight", "fused nn.Linear", (4, 4))]),
    "gqa": (fm.GroupedQueryAttention, [("q_proj.weight", "query", (4, 0)), ("k_proj.weight", "key", (0, 2))]),
    "mha": (fm.MHASelf, [("mha.in_proj_weight", "in_proj_weight", (4, 4))]),
    "mha_kdim": (
        fm.MHACross,
        [("mha.q_proj_weight", "q_proj_weight", (4, 0)), ("mha.k_proj_weight", "k_proj_weight", (0, 4))],
    ),
    "encoder_layer": (fm.encoder_layer, [("self_attn.in_proj_weight", "in_proj_weight", (4, 4))]),
    "gpt2": (fm.tiny_gpt2, [(f"transformer.h.{i}.attn.c_attn.weight", "Conv1D", (4, 4)) for i in range(2)]),
}
PARAMS = [pytest.param(k, marks=needs_transformers) if k == "gpt2" else k for k in FAMILIES]


def make(family, seed=0):
    torch.manual_seed(seed)
    return FAMILIES[family][0]()


def example(family, seed=1):
    g = torch.Generator().manual_seed(seed)
    if family == "gpt2":
        return torch.randint(0, 64, (4, 12), generator=g)
    return torch.randn(4, 12, 32, generator=g)


def output(model, x):
    out = model(x)
    return out.logits if hasattr(out, "logits") else out


def loss_of(model, x):
    out = output(model, x)
    return (
        F.cross_entropy(out[:, :-1].reshape(-1, out.shape[-1]), x[:, 1:].reshape(-1))
        if x.dtype == torch.long
        else out.square().mean()
    )


def owner(model, name):
    path, attr = name.rsplit(".", 1)
    return model.get_submodule(path), attr


def head_blocks(module, attr, W, segments, r):
    """Each converted head's weight as the model's own code reads it: ``q_h = x @ block_h``
    (nn.Linear and MHA: rows of F.linear's weight; Conv1D: columns of x @ W)."""
    conv = type(module).__name__.endswith("Conv1D")
    blocks, offset = [], 0
    for _, n in segments:
        heads = []
        for h in range(n):
            sl = slice(offset + h * r, offset + (h + 1) * r)
            heads.append(W[:, sl] if conv else W[sl].T)  # (d, r)
        blocks.append(torch.stack(heads))
        offset += n * r
    return blocks


def set_scaled_frames(model, conversions, seed=3):
    """Make every converted head block exactly α_h·U_h (a scaled frame), as the model reads it."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for c in conversions:
            module, attr = owner(model, c.module)
            plist = module.parametrizations[attr]
            hf = plist[0]
            for i, (name, n) in enumerate(hf.segments):
                getattr(plist, f"original{i}").copy_(random_frame(*c.frame_shape, n, generator=g))
                getattr(hf, f"scale_{name}").copy_(0.1 + torch.rand(n, generator=g))


@pytest.mark.parametrize("family", PARAMS)
def test_each_family_converts_q_and_k_per_head_to_their_closest_frames_and_leaves_v(family):
    model = make(family)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    conversions = stiefelize(model)
    expected = FAMILIES[family][1]
    assert [(c.module, c.heads) for c in conversions] == [(m, h) for m, _, h in expected]
    assert all(word in c.kind for c, (_, word, _) in zip(conversions, expected))
    for c in conversions:
        module, attr = owner(model, c.module)
        hf = module.parametrizations[attr][0]
        W_before = before[c.module]
        frames = [getattr(module.parametrizations[attr], f"original{i}") for i in range(len(hf.segments))]
        assert all(is_frame(p) and p.shape[1:] == c.frame_shape for p in frames)
        assert all(orthonormality_error(p.detach()).max() < 1e-5 for p in frames)
        r = c.frame_shape[1]
        for (name, _), bank, raw in zip(hf.segments, frames, head_blocks(module, attr, W_before, hf.segments, r)):
            assert torch.allclose(bank, orthonormalize(raw), atol=1e-5)  # the polar factor of each head
            alpha = getattr(hf, f"scale_{name}")
            assert torch.allclose(alpha, torch.linalg.matrix_norm(raw) / r**0.5)  # scale="preserve"
        W_after = getattr(module, attr).detach()
        width = hf.width
        V = (lambda W: W[:, width:]) if type(module).__name__.endswith("Conv1D") else (lambda W: W[width:])
        assert torch.equal(V(W_after), V(W_before))  # V is never constrained
        # the model's own weight, read per head as its code reads it, is α_h·frame_h
        for (name, _), bank, block in zip(hf.segments, frames, head_blocks(module, attr, W_after, hf.segments, r)):
            assert torch.allclose(block, getattr(hf, f"scale_{name}")[:, None, None] * bank, atol=1e-6)
    names = {n for c in conversions for n in c.frames}
    assert names == {n for n, p in model.named_parameters() if is_frame(p)}


@pytest.mark.parametrize("family", PARAMS)
def test_converting_weights_that_are_scaled_frames_changes_nothing(family):
    model = make(family)
    conversions = stiefelize(model)
    set_scaled_frames(model, conversions)
    x = example(family)
    converted = output(model.eval(), x)
    unstiefelize(model)
    plain = output(model, x)
    reconverted = stiefelize(model)  # the polar factors of scaled frames are those frames
    assert torch.allclose(output(model, x), converted, atol=1e-5)
    assert torch.equal(plain, converted) or torch.allclose(plain, converted, atol=1e-6)
    assert [c.module for c in reconverted] == [c.module for c in conversions]


@pytest.mark.parametrize("family", PARAMS)
def test_a_converted_model_trains_and_exports_back_into_its_own_architecture(family):
    model = make(family)
    conversions = stiefelize(model)
    frames = {n for c in conversions for n in c.frames}
    opt = configure_optimizer(model, lr=3e-3, weight_decay=0.1)
    stiefel = next(o for o in opt.optimizers if isinstance(o, StiefelAdam))
    assert set(stiefel.param_groups[0]["param_names"]) == frames
    assert not frames & {
        n for o in opt.optimizers if not isinstance(o, StiefelAdam) for g in o.param_groups for n in g["param_names"]
    }
    x = example(family)
    losses = []
    for _ in range(8):
        opt.zero_grad()
        loss = loss_of(model, x)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    assert all(orthonormality_error(p.detach()).max() < 1e-5 for n, p in model.named_parameters() if n in frames)
    model.eval()
    trained = output(model, x).detach()
    assert sorted(unstiefelize(model)) == sorted(c.module for c in conversions)
    assert torch.equal(output(model, x), trained)  # the same function, in the model's own weights
    fresh = make(family, seed=7).eval()
    assert list(fresh.state_dict()) == list(model.state_dict())
    fresh.load_state_dict(model.state_dict())  # strict: same keys, same shapes
    assert torch.equal(output(fresh, x), trained)


@needs_transformers
def test_gpt2_save_pretrained_round_trips_exactly(tmp_path):
    from transformers import GPT2LMHeadModel

    model = fm.tiny_gpt2()
    stiefelize(model)
    opt = configure_optimizer(model, lr=3e-3)
    x = example("gpt2")
    for _ in range(3):
        opt.zero_grad()
        loss_of(model, x).backward()
        opt.step()
    unstiefelize(model)
    model.save_pretrained(tmp_path)
    loaded = GPT2LMHeadModel.from_pretrained(tmp_path).eval()
    model.eval()
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), loaded.state_dict().values()))
    assert torch.equal(output(model, x), output(loaded, x))


def test_the_scale_option_sets_the_logits_scale_explicitly():
    torch.manual_seed(0)
    weight = 0.02 * torch.randn(3 * 64, 64)
    for scale, expected in (("unit", 1.0), (0.5, 0.5)):
        hf = HeadFrames(weight, axis=0, segments=[("q", 4), ("k", 4)], head_dim=16, scale=scale)
        assert torch.equal(hf.scale_q, torch.full((4,), expected))
    hf = HeadFrames(weight, axis=0, segments=[("q", 4), ("k", 4)], head_dim=16, scale="preserve")
    joined = hf(*hf.right_inverse(weight))
    per_head = lambda W: torch.linalg.matrix_norm(W[:128].view(8, 16, 64))  # noqa: E731
    assert torch.allclose(per_head(joined), per_head(weight), rtol=1e-5)  # each head keeps its Frobenius norm


def test_a_model_without_recognisable_attention_gets_a_clear_error():
    with pytest.raises(ValueError, match=r"found no query/key projections in Sequential.*fused=, query= and key="):
        stiefelize(nn.Sequential(nn.Linear(4, 4), nn.ReLU()))


def test_unknown_head_counts_are_named_with_the_option_to_pass():
    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.query, self.key = nn.Linear(16, 16), nn.Linear(16, 16)

    model = nn.Sequential(Attention())
    with pytest.raises(ValueError, match=r"number of heads of '0\.query'.*pass n_heads="):
        stiefelize(model)
    conversions = stiefelize(model, n_heads=2)
    assert [(c.module, c.heads, c.frame_shape) for c in conversions] == [
        ("0.query.weight", (2, 0), (16, 8)),
        ("0.key.weight", (0, 2), (16, 8)),
    ]


def test_a_fused_projection_of_the_wrong_width_is_refused_by_name():
    model = fm.CausalSelfAttention()
    model.n_head = 3  # 32 is not 3 heads
    with pytest.raises(ValueError, match=r"'c_attn'.*pass n_heads="):
        stiefelize(model)


def test_converting_twice_converts_nothing_more():
    model = fm.Block()
    assert len(stiefelize(model)) == 1 and stiefelize(model) == []
    assert sum(is_frame(p) for p in model.parameters()) == 2


def test_the_converted_frames_keep_their_tag_through_state_dict_and_deepcopy():
    import copy

    model = fm.Block()
    stiefelize(model)
    clone = copy.deepcopy(model)
    other = fm.Block()
    stiefelize(other)
    other.load_state_dict(model.state_dict(), assign=True)
    for m in (clone, other):
        assert sum(is_frame(p) for p in m.parameters()) == 2


def test_pickling_a_converted_model_is_refused_clearly_and_works_after_export():
    import pickle

    model = fm.Block()
    stiefelize(model)
    with pytest.raises(RuntimeError, match="only supported through state_dict"):
        pickle.dumps(model)
    unstiefelize(model)
    assert isinstance(pickle.loads(pickle.dumps(model)), fm.Block)
