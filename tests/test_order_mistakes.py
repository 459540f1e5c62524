"""The order mistakes people make with a converted model (issue 50, item 4): caught where the
library can see them, and otherwise tested as they behave and documented in ``stiefelize``'s
docstring (its "Order" list) and on the user page's "Do and don't"."""

import copy

import pytest
import torch
from torch import nn

from stiefel_core.combined import configure_optimizer
from stiefel_core.convert import ConversionMismatchError, check_state_dict, stiefelize, unstiefelize
from stiefel_core.manifold import orthonormality_error
from stiefel_core.step_checks import FrameOffManifoldError

D, H, T = 16, 4, 5


class Block(nn.Module):
    """A tiny model with a fused nn.MultiheadAttention, as a user's model would hold one."""

    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(D, H, batch_first=True)
        self.head = nn.Linear(D, 3)

    def forward(self, x):
        return self.head(self.attn(x, x, x, need_weights=False)[0].mean(1))


def make_model(seed=0):
    torch.manual_seed(seed)
    return Block()


def data(seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(8, T, D, generator=g), torch.randint(0, 3, (8,), generator=g)


def train(model, opt, steps=3):
    for step in range(steps):
        x, y = data(step)
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()


def params_of(model):
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def assert_same(a, b):
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def frames_of(model):
    return [p for n, p in model.named_parameters() if "original0" in n or "original1" in n]


# Caught: a state dict loaded into a model of the other kind, by the hook stiefelize registers.


@pytest.mark.parametrize("strict", [True, False])
def test_a_plain_state_dict_loaded_into_a_converted_model_is_refused_naming_stiefelize(strict):
    plain_state = make_model(seed=1).state_dict()
    model = make_model()
    stiefelize(model)
    before = params_of(model)
    with pytest.raises(ConversionMismatchError, match="stiefelize"):
        model.load_state_dict(plain_state, strict=strict)
    assert_same(before, params_of(model))


def test_a_converted_state_dict_loaded_after_unstiefelize_is_refused_naming_unstiefelize():
    model = make_model()
    stiefelize(model)
    converted_state = copy.deepcopy(model.state_dict())
    unstiefelize(model)
    before = params_of(model)
    with pytest.raises(ConversionMismatchError, match="unstiefelize"):
        model.load_state_dict(converted_state)
    assert_same(before, params_of(model))


def test_a_converted_state_dict_round_trips_through_a_converted_model():
    source, target = make_model(), make_model(seed=1)
    stiefelize(source), stiefelize(target)
    target.load_state_dict(source.state_dict())
    assert_same(params_of(source), params_of(target))


def test_save_pretrained_before_unstiefelize_cannot_be_seen_by_a_fresh_plain_model_but_check_state_dict_names_it():
    trained = make_model()
    stiefelize(trained)
    train(trained, configure_optimizer(trained, lr=1e-2))
    saved = trained.state_dict()  # what save_pretrained writes before unstiefelize
    fresh = make_model(seed=1)  # from_pretrained builds a plain model the library never saw
    with pytest.raises(RuntimeError, match="Missing key"):  # torch's own error, strict
        fresh.load_state_dict(saved)
    fresh.load_state_dict(saved, strict=False)  # what from_pretrained does: Q, K, V stay at their init
    x, _ = data()
    assert not torch.allclose(fresh(x), trained(x), atol=1e-3)  # the reloaded model computes something else
    with pytest.raises(ConversionMismatchError, match="unstiefelize"):
        check_state_dict(make_model(seed=1), saved)
    unstiefelize(trained)  # the right order: unstiefelize, then save
    fresh = make_model(seed=1)
    fresh.load_state_dict(trained.state_dict())
    assert torch.allclose(fresh(x), trained(x), atol=1e-6)


# Caught: frames stepped by a Euclidean optimizer, at the next StiefelAdam step.


def test_frames_also_given_to_adamw_are_caught_at_the_next_step_naming_adamw():
    model = make_model()
    stiefelize(model)
    combined = configure_optimizer(model, lr=1e-2)
    adamw = torch.optim.AdamW(model.parameters(), lr=1e-2)  # the mistake: it holds the frames too
    x, y = data()
    nn.functional.cross_entropy(model(x), y).backward()
    adamw.step()  # moves the frames off the manifold
    before = params_of(model)
    with pytest.raises(FrameOffManifoldError, match="AdamW"):
        combined.step()
    assert_same(before, params_of(model))


def test_a_plain_adamw_alone_drifts_converted_frames_off_the_manifold():
    model = make_model()
    stiefelize(model)
    train(model, torch.optim.AdamW(model.parameters(), lr=3e-2), steps=10)
    assert max(orthonormality_error(p.detach()).max() for p in frames_of(model)) > 0.05


# Documented: what the library cannot see, as it behaves.


def test_an_optimizer_built_before_stiefelize_never_trains_q_and_k():
    model = make_model()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)  # holds the old in_proj_weight
    stiefelize(model)
    frames = [p.detach().clone() for p in frames_of(model)]
    train(model, opt)
    assert all(torch.equal(a, b) for a, b in zip(frames, frames_of(model)))  # Q, K never moved
    assert all(p.grad is None for g in opt.param_groups for p in g["params"] if p.ndim == 2 and p.shape[0] == 3 * D)


def test_re_initialising_after_stiefelize_leaves_the_converted_weights_as_they_were():
    model = make_model()
    stiefelize(model)
    before = {n: p.detach().clone() for n, p in model.attn.parametrizations.named_parameters()}
    model.attn._reset_parameters()  # nn.MultiheadAttention's own initialiser
    model.apply(lambda m: nn.init.normal_(m.weight) if isinstance(m, nn.Linear) else None)
    after = dict(model.attn.parametrizations.named_parameters())
    assert all(torch.equal(before[n], after[n]) for n in before)  # Q, K frames and V untouched


def test_re_initialising_in_the_right_order_changes_q_and_k():
    model = make_model()
    stiefelize(model)
    frames = [p.detach().clone() for p in frames_of(model)]
    unstiefelize(model)
    model.attn._reset_parameters()
    stiefelize(model)
    assert not any(torch.equal(a, b) for a, b in zip(frames, frames_of(model)))
