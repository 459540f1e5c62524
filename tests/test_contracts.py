"""The library's contracts that a user could otherwise break silently (issue 17's table, rows 1-7):
the frame tag survives what replaces parameters, a frame changed behind the optimizer's back is
named, a combined step is never partial, schedulers and hooks work, torch.compile runs the step."""

import copy
import io
import pickle

import pytest
import torch
from torch import nn

from stiefel_core.attention import SelfAttention
from stiefel_core.combined import CombinedOptimizer, configure_optimizer
from stiefel_core.frames import FrameParameter, FrameTagWarning, is_frame
from stiefel_core.manifold import orthonormality_error, random_frame
from stiefel_core.optim import StiefelAdam
from stiefel_core.step_checks import FrameOffManifoldError, NonFiniteGradientError


def make_model(seed=0, stiefel=True):
    torch.manual_seed(seed)
    return nn.Sequential(SelfAttention(16, 2, stiefel=stiefel), nn.Flatten(), nn.Linear(16 * 5, 3))


def batch(seed=0, n=8):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 5, 16, generator=g), torch.randint(0, 3, (n,), generator=g)


def backward(model, seed=0, scale=1.0):
    x, y = batch(seed)
    loss = nn.functional.cross_entropy(model(x.to(next(model.parameters()).dtype)), y) * scale
    loss.backward()
    return loss


def frames_of(opt):
    return [p for o in opt.optimizers if isinstance(o, StiefelAdam) for g in o.param_groups for p in g["params"]]


def snapshot(model, opt):
    buffer = io.BytesIO()
    torch.save(opt.state_dict(), buffer)
    return [p.detach().clone() for p in model.parameters()], buffer.getvalue()


def assert_unchanged(model, opt, before):
    params, state = snapshot(model, opt)
    assert all(torch.equal(a, b) for a, b in zip(before[0], params))
    assert state == before[1]


# Row 1: torch.save(model) / pickle, load_state_dict(assign=True), to_empty() kept the frames on AdamW.


@pytest.mark.parametrize("how", ["pickle", "torch.save", "deepcopy"])
def test_the_frame_tag_survives_pickle_torch_save_and_deepcopy(how):
    model = make_model()
    model[0].W_Q.note = "kept"  # attributes on the parameter survive too
    if how == "pickle":
        clone = pickle.loads(pickle.dumps(model))
    elif how == "deepcopy":
        clone = copy.deepcopy(model)
    else:
        buffer = io.BytesIO()
        torch.save(model, buffer)
        buffer.seek(0)
        clone = torch.load(buffer, weights_only=False)
    assert is_frame(clone[0].W_Q) and is_frame(clone[0].W_K)
    if how != "deepcopy":  # nn.Parameter's own deepcopy drops attributes; pickling keeps them
        assert clone[0].W_Q.note == "kept"
    opt = configure_optimizer(clone)
    assert [g["param_names"] for g in opt.optimizers[0].param_groups] == [["0.W_Q", "0.W_K"]]


def test_the_frame_tag_survives_load_state_dict_with_assign():
    model = make_model(1)
    model.load_state_dict(make_model(2).state_dict(), assign=True)
    assert is_frame(model[0].W_Q) and is_frame(model[0].W_K)
    assert isinstance(configure_optimizer(model).optimizers[0], StiefelAdam)


def test_a_declared_frame_that_lost_its_tag_is_retagged_with_a_warning():
    with torch.device("meta"):
        model = make_model()
    model.to_empty(device="cpu")  # replaces every parameter with a plain nn.Parameter
    with torch.no_grad():
        for p in (model[0].W_Q, model[0].W_K):
            p.copy_(random_frame(16, 8, 2))
    with pytest.warns(FrameTagWarning, match=r"0\.W_Q.*0\.W_K.*StiefelAdam"):
        opt = configure_optimizer(model)
    assert isinstance(opt, CombinedOptimizer) and len(frames_of(opt)) == 2
    assert all(is_frame(p) for p in frames_of(opt))


def test_configure_optimizer_selects_frames_by_name_pattern():
    model = make_model(stiefel=False)  # plain parameters, at orthonormal frames
    opt = configure_optimizer(model, frames="*.W_[QK]")
    assert opt.optimizers[0].param_groups[0]["param_names"] == ["0.W_Q", "0.W_K"]
    with pytest.raises(ValueError, match="match no trainable parameter"):
        configure_optimizer(model, frames="*.W_X")


def test_a_frame_on_the_fused_in_proj_weight_of_multihead_attention_is_refused():
    mha = nn.MultiheadAttention(8, 2)
    with torch.no_grad():
        mha.in_proj_weight = FrameParameter(random_frame(24, 8))
    with pytest.raises(ValueError, match=r"in_proj_weight.*Q, K and V together.*stiefelize"):
        configure_optimizer(mha)


# Row 2: a frame changed after the optimizer was built gave inf, then NaN, blamed on the gradient.


CHANGES = {
    "scaling": lambda W: W.mul_(1.5),
    "noise": lambda W: W.add_(1e-2 * torch.randn_like(W)),
    "apply(init)": lambda W: nn.init.normal_(W, std=0.02),
    "orthogonal_ init": lambda W: nn.init.orthogonal_(W),
}


@pytest.mark.parametrize("change", CHANGES)
def test_a_frame_changed_after_the_optimizer_was_built_is_named(change):
    torch.manual_seed(0)
    model = make_model()
    opt = configure_optimizer(model, lr=1e-2)
    backward(model)
    opt.step()
    with torch.no_grad():
        CHANGES[change](model[0].W_K)
    opt.zero_grad()
    backward(model)
    before = snapshot(model, opt)
    with pytest.raises(FrameOffManifoldError, match=r"frame '0\.W_K' has left the Stiefel manifold.*No parameter"):
        opt.step()
    assert_unchanged(model, opt, before)


@pytest.mark.parametrize("change", CHANGES)
def test_without_the_check_a_frame_off_the_manifold_is_re_projected_and_stays_finite(change):
    torch.manual_seed(0)
    model = make_model()
    opt = configure_optimizer(model, lr=1e-2, check_finite=False)
    with torch.no_grad():
        CHANGES[change](model[0].W_K)
    for step in range(6):
        opt.zero_grad()
        backward(model, seed=step)
        opt.step()
        assert all(torch.isfinite(p).all() for p in model.parameters())
    assert orthonormality_error(model[0].W_K.detach()).max() < 1e-4


def test_the_manifold_check_adds_no_host_synchronisation_when_off(monkeypatch):
    import stiefel_core.optim as optim_module

    calls = []
    monkeypatch.setattr(optim_module, "check_step", lambda *a: calls.append(a))
    model = make_model()
    opt = StiefelAdam([model[0].W_Q], check_finite=False)
    backward(model)
    opt.step()
    assert calls == []


# Row 3: NaN in a non-frame gradient: frames stepped, AdamW wrote NaN: a partial step.


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
@pytest.mark.parametrize("where", ["2.weight", "0.W_V.weight", "0.W_Q"])
def test_a_non_finite_gradient_anywhere_stops_the_whole_step_and_is_named(bad, where):
    model = make_model()
    opt = configure_optimizer(model, lr=1e-2, weight_decay=0.1)
    backward(model)
    opt.step()
    opt.zero_grad()
    backward(model, seed=1)
    dict(model.named_parameters())[where].grad.view(-1)[3] = bad
    before = snapshot(model, opt)
    kind = "frame" if where == "0.W_Q" else "parameter"
    with pytest.raises(NonFiniteGradientError, match=rf"gradient of {kind} '{where}' holds inf or nan; no parameter"):
        opt.step()
    assert_unchanged(model, opt, before)


# Row 4: fp16: AdamW overflowed first, and StiefelAdam's error blamed a frame's gradient.


def test_float16_parameters_for_adamw_are_refused_with_the_remedy():
    plain = nn.Parameter(torch.randn(100).half())  # why: AdamW writes inf with finite gradients
    adamw = torch.optim.AdamW([plain], lr=1e-3)
    plain.grad = (1e-5 * torch.randn(100)).half()
    adamw.step()
    assert not torch.isfinite(plain).all()
    with pytest.raises(ValueError, match=r"'2\.weight'.*float16.*autocast.*GradScaler.*bfloat16"):
        configure_optimizer(make_model().half())


def test_an_fp16_overflow_is_named_before_anything_changes():
    model = make_model().half()
    frames = [(n, p) for n, p in model.named_parameters() if is_frame(p)]
    rest = [(n, p) for n, p in model.named_parameters() if not is_frame(p)]
    opt = CombinedOptimizer(StiefelAdam(frames), torch.optim.SGD(rest, lr=1e-3))  # fp16 without AdamW
    x, y = batch()
    (nn.functional.cross_entropy(model(10 * x.half()), y) * 3e4).backward()  # overflows float16
    bad = [n for n, p in model.named_parameters() if not torch.isfinite(p.grad).all()]
    assert "2.weight" in bad and "0.W_Q" in bad  # both optimizers' parameters
    before = snapshot(model, opt)
    with pytest.raises(NonFiniteGradientError, match=r"StiefelAdam \+ SGD: .*float16.*GradScaler") as error:
        opt.step()
    assert all(f"'{name}'" in str(error.value) for name in bad)  # every culprit, frame or not
    assert "'2.bias'" not in str(error.value)
    assert_unchanged(model, opt, before)


# Rows 5-6: OneCycleLR (cycle_momentum) failed on empty defaults; step hooks raised TypeError.


def train_steps(model, opt, steps, scheduler=None):
    for step in range(steps):
        opt.zero_grad()
        backward(model, seed=step)
        opt.step()
        if scheduler is not None:
            scheduler.step()


def test_one_cycle_lr_with_momentum_cycling_drives_every_group():
    model = make_model()
    opt = configure_optimizer(model, lr=1e-3)
    assert {"lr", "betas", "eps", "weight_decay"} <= set(opt.defaults)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-2, total_steps=10)  # cycle_momentum=True
    train_steps(model, opt, 4, scheduler)
    lrs = {g["lr"] for g in opt.param_groups}
    beta1s = {g["betas"][0] for g in opt.param_groups}
    assert len(lrs) == 1 and len(beta1s) == 1 and beta1s != {0.9}  # all groups moved together
    assert opt.optimizers[0].param_groups[0]["betas"] == opt.optimizers[1].param_groups[0]["betas"]


def test_step_hooks_and_global_hooks_fire_around_the_combined_step():
    model = make_model()
    opt = configure_optimizer(model)
    seen = []
    opt.register_step_pre_hook(lambda o, args, kwargs: seen.append(("pre", o)))
    opt.register_step_post_hook(lambda o, args, kwargs: seen.append(("post", o)))
    from torch.optim.optimizer import register_optimizer_step_post_hook

    handle = register_optimizer_step_post_hook(lambda o, a, k: seen.append(("global", type(o))))
    try:
        train_steps(model, opt, 1)
    finally:
        handle.remove()
    assert ("pre", opt) in seen and ("post", opt) in seen and ("global", CombinedOptimizer) in seen
    assert ("global", StiefelAdam) in seen and ("global", torch.optim.AdamW) in seen  # inner steps hook too


def test_the_combined_state_dict_round_trips_with_its_hooks_and_a_scheduler():
    model, opt = make_model(), None
    opt = configure_optimizer(model, lr=1e-3)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-2, total_steps=10)
    train_steps(model, opt, 3, scheduler)
    calls = []
    opt.register_state_dict_post_hook(lambda o, sd: calls.append("saved"))
    buffer = io.BytesIO()
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "sched": scheduler.state_dict()}, buffer)
    buffer.seek(0)
    saved = torch.load(buffer, weights_only=True)
    resumed = make_model(5)
    resumed.load_state_dict(saved["model"])
    opt2 = configure_optimizer(resumed, lr=1e-3)
    scheduler2 = torch.optim.lr_scheduler.OneCycleLR(opt2, max_lr=1e-2, total_steps=10)
    opt2.register_load_state_dict_post_hook(lambda o: calls.append("loaded"))
    opt2.load_state_dict(saved["opt"])
    scheduler2.load_state_dict(saved["sched"])
    train_steps(model, opt, 3, scheduler)
    train_steps(resumed, opt2, 3, scheduler2)
    assert calls == ["saved", "loaded"]
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), resumed.parameters()))


def test_add_param_group_routes_frames_and_others():
    model, extra = make_model(), nn.Linear(3, 3)
    opt = configure_optimizer(model)
    opt.add_param_group({"params": [("new_frame", FrameParameter(random_frame(6, 2)))]})
    opt.add_param_group({"params": list(extra.named_parameters()), "lr": 1e-4})
    assert len(opt.optimizers[0].param_groups) == 2 and opt.optimizers[1].param_groups[-1]["lr"] == 1e-4
    with pytest.raises(TypeError, match="mixes frames"):
        opt.add_param_group({"params": [FrameParameter(random_frame(6, 2)), nn.Parameter(torch.zeros(2))]})


# Row 7: torch.compile(opt.step) raised an internal dynamo error.


@pytest.mark.slow
def test_a_compiled_step_runs_and_steps_the_model():
    """``torch.compile(opt.step)`` runs (the step is ``compiler.disable``d, so it runs eagerly) and
    moves every parameter, the frames staying on the manifold."""
    torch._dynamo.reset()
    model = make_model()
    before = [p.detach().clone() for p in model.parameters()]
    opt = configure_optimizer(model, lr=1e-2)
    step = torch.compile(opt.step)
    for seed in range(3):
        opt.zero_grad()
        backward(model, seed=seed)
        step()
    assert all(not torch.equal(a, p) for a, p in zip(before, model.parameters()))
    assert orthonormality_error(model[0].W_Q.detach()).max() < 1e-5
