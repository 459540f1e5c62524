"""Every step validates what it uses (issue 50, items 2, 3 and 5): hyperparameters set after
construction (a param group written by hand, a LambdaLR), per-group options given at
construction, a damaged optimizer state loaded, and a frame skewed off the manifold with its
norm kept. Each raises a named error, and nothing (parameters, optimizer state) has changed."""

import copy
import io
import math

import pytest
import torch
from torch import nn

from stiefel_core.attention import SelfAttention
from stiefel_core.combined import configure_optimizer
from stiefel_core.manifold import orthonormality_error
from stiefel_core.optim import StiefelAdam
from stiefel_core.step_checks import FrameOffManifoldError, InvalidHyperparameterError, InvalidOptimizerStateError


def make_model(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(SelfAttention(16, 2), nn.Flatten(), nn.Linear(16 * 5, 3))


def backward(model, seed=0):
    g = torch.Generator().manual_seed(seed)
    x, y = torch.randn(8, 5, 16, generator=g), torch.randint(0, 3, (8,), generator=g)
    nn.functional.cross_entropy(model(x), y).backward()


def trained(combined=True, steps=2):
    """A model and its optimizer after ``steps`` steps, with a fresh gradient ready."""
    model = make_model()
    opt = configure_optimizer(model, lr=1e-2) if combined else StiefelAdam([model[0].W_Q, model[0].W_K], lr=1e-2)
    for step in range(steps):
        opt.zero_grad()
        backward(model, seed=step)
        opt.step()
    opt.zero_grad()
    backward(model, seed=steps)
    return model, opt


def snapshot(model, opt):
    buffer = io.BytesIO()
    torch.save(opt.state_dict(), buffer)
    return [p.detach().clone() for p in model.parameters()], buffer.getvalue()


def assert_unchanged(model, opt, before):
    params, state = snapshot(model, opt)
    assert all(torch.equal(a, b) for a, b in zip(before[0], params))
    assert state == before[1]


# Hyperparameters written into a param group after construction.

SET_AFTER = {
    "negative lr": ("lr", -0.5),
    "infinite lr": ("lr", math.inf),
    "nan lr": ("lr", math.nan),
    "betas (2, .5)": ("betas", (2.0, 0.5)),
    "beta2 of 1": ("betas", (0.9, 1.0)),
    "negative eps": ("eps", -1e-8),
    "nan weight decay": ("weight_decay", math.nan),
    "negative trust radius": ("trust_radius", -0.5),
    "zero trust radius": ("trust_radius", 0.0),
    "unknown step rule": ("step_rule", "scale_fre"),
    "unknown projector": ("projector", "polar"),
}


@pytest.mark.parametrize("combined", [False, True], ids=["StiefelAdam", "CombinedOptimizer"])
@pytest.mark.parametrize("case", SET_AFTER)
def test_a_hyperparameter_set_after_construction_is_refused_at_the_step_and_changes_nothing(case, combined):
    key, value = SET_AFTER[case]
    model, opt = trained(combined)
    opt.param_groups[0][key] = value  # the frames' group
    before = snapshot(model, opt)
    with pytest.raises(InvalidHyperparameterError, match=key):
        opt.step()
    assert_unchanged(model, opt, before)


def test_a_negative_lr_in_the_adamw_group_stops_the_whole_combined_step():
    model, opt = trained()
    opt.param_groups[-1]["lr"] = -1e-2  # AdamW's group: the frames' step must not happen alone
    before = snapshot(model, opt)
    with pytest.raises(InvalidHyperparameterError, match="lr"):
        opt.step()
    assert_unchanged(model, opt, before)


def test_a_lambda_lr_that_goes_negative_is_caught_before_the_frames_leave_the_manifold():
    model = make_model()
    opt = configure_optimizer(model, lr=1e-2)
    scheduler = torch.optim.lr_scheduler.LambdaLR(opt, lambda epoch: 1.0 - 0.75 * epoch)  # 1, .25, -.5
    with pytest.raises(InvalidHyperparameterError, match="lr"):
        for step in range(3):
            opt.zero_grad()
            backward(model, seed=step)
            before = snapshot(model, opt)
            opt.step()
            scheduler.step()
    assert step == 2
    assert_unchanged(model, opt, before)
    assert orthonormality_error(model[0].W_Q.detach()).max() < 1e-5


GIVEN_PER_GROUP = {
    "betas (2, .5)": {"betas": (2.0, 0.5)},
    "trust radius -0.5": {"trust_radius": -0.5},
    "unknown step rule": {"step_rule": "adaptive"},
    "unknown second moment": {"second_moment": "row"},
    "infinite lr": {"lr": math.inf},
}


@pytest.mark.parametrize("case", GIVEN_PER_GROUP)
def test_a_per_group_option_given_at_construction_is_refused(case):
    model = make_model()
    with pytest.raises(InvalidHyperparameterError, match=next(iter(GIVEN_PER_GROUP[case]))):
        StiefelAdam([{"params": [model[0].W_Q]}, {"params": [model[0].W_K], **GIVEN_PER_GROUP[case]}], lr=1e-2)


# A damaged optimizer state loaded.


def damaged(state_dict, key, how):
    state = next(iter(state_dict["state"].values()))
    if how == "nan":
        state[key] = state[key].clone()
        state[key].view(-1)[0] = math.nan
    else:  # a moment of the wrong shape
        state[key] = torch.zeros(*state[key].shape, 2)
    return state_dict


@pytest.mark.parametrize("how", ["nan", "shape"])
@pytest.mark.parametrize("key", ["exp_avg", "exp_avg_sq"])
def test_a_damaged_stiefel_adam_state_is_refused_on_loading_and_nothing_is_loaded(key, how):
    model, opt = trained(combined=False)
    saved = damaged(copy.deepcopy(opt.state_dict()), key, how)
    opt.step()  # the live state moves on: loading the damaged one must not replace it
    before = snapshot(model, opt)
    with pytest.raises(InvalidOptimizerStateError, match=key):
        opt.load_state_dict(saved)
    assert_unchanged(model, opt, before)


def test_a_nan_in_one_inner_state_of_a_combined_optimizer_loads_nothing():
    model, opt = trained()
    saved = copy.deepcopy(opt.state_dict())
    damaged(saved["optimizers"][1], "exp_avg", "nan")  # AdamW's; StiefelAdam's would load first
    opt.zero_grad()
    backward(model, seed=5)
    opt.step()
    before = snapshot(model, opt)
    with pytest.raises(InvalidOptimizerStateError, match="exp_avg"):
        opt.load_state_dict(saved)
    assert_unchanged(model, opt, before)


def test_a_nan_lr_in_a_loaded_state_is_refused():
    model, opt = trained(combined=False)
    saved = copy.deepcopy(opt.state_dict())
    saved["param_groups"][0]["lr"] = math.nan
    before = snapshot(model, opt)
    with pytest.raises(InvalidOptimizerStateError, match="lr"):
        opt.load_state_dict(saved)
    assert_unchanged(model, opt, before)


def test_a_sound_state_still_loads_and_resumes_identically():
    model, opt = trained(combined=True)
    saved, params = copy.deepcopy(opt.state_dict()), [p.detach().clone() for p in model.parameters()]
    opt.step()
    expected = [p.detach().clone() for p in model.parameters()]
    with torch.no_grad():
        for p, q in zip(model.parameters(), params):
            p.copy_(q)
    opt.load_state_dict(saved)
    opt.step()
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), expected))


# The off-manifold check reads ‖WᵀW - I‖, not ‖W‖_F.


def norm_keeping_skew(W):
    """``W diag(s)`` per frame with ``Σ s² = r``: the Frobenius norm kept, ``WᵀW ≠ I``."""
    r = W.shape[-1]
    s = torch.ones(r, dtype=W.dtype)
    s[0], s[1] = 1.3, (2 - 1.3**2) ** 0.5
    return W * s


@pytest.mark.parametrize("combined", [False, True], ids=["StiefelAdam", "CombinedOptimizer"])
def test_a_norm_keeping_skew_of_a_frame_is_caught_and_changes_nothing(combined):
    model, opt = trained(combined)
    W = model[0].W_K
    with torch.no_grad():
        W.copy_(norm_keeping_skew(W))
    assert torch.allclose(torch.linalg.matrix_norm(W.detach()) ** 2, torch.tensor(8.0), atol=1e-4)  # ‖W‖²_F = r
    assert orthonormality_error(W.detach()).max() > 0.5
    before = snapshot(model, opt)
    with pytest.raises(FrameOffManifoldError):
        opt.step()
    assert_unchanged(model, opt, before)


def test_rounding_drift_of_a_trained_frame_is_not_called_off_the_manifold():
    model, opt = trained(steps=20)
    opt.step()  # float32 frames after 21 steps pass the check
    assert orthonormality_error(model[0].W_Q.detach()).max() < 1e-5
