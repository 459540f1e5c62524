"""StiefelAdam: the update rule, its invariances, its torch.optim contract and its errors."""

import io

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

import stiefel_core.optim as optim_module
from stiefel_core.attention import SelfAttention
from stiefel_core.combined import CombinedOptimizer, configure_optimizer
from stiefel_core.frames import FrameParameter
from stiefel_core.manifold import orthonormality_error, project_tangent, random_frame
from stiefel_core.optim import StiefelAdam, reference_update
from stiefel_core.step_checks import NonFiniteGradientError

ABLATIONS = [
    {},
    {"step_rule": "fixed"},
    {"second_moment": "entry"},
    {"projector": "euclidean"},
    {"trust_radius": None},
]


def frames(*batch, d=12, r=3, seed=0, dtype=torch.float64):
    return random_frame(d, r, *batch, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def run(W0, grads, **options):
    """Frames after stepping through ``grads`` (one per step), and every step's frames."""
    p = FrameParameter(W0.clone())
    opt = StiefelAdam([p], **options)
    path = []
    for G in grads:
        p.grad = G.clone()
        opt.step()
        path.append(p.detach().clone())
    return torch.stack(path)


def gradients(shape, steps=8, seed=1, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(shape, generator=g, dtype=dtype) for _ in range(steps)]


@pytest.mark.parametrize("options", ABLATIONS)
def test_batched_step_equals_the_per_frame_reference(options):
    W0 = frames(5)
    grads = gradients(W0.shape, steps=12)
    options = {"lr": 0.05, **options}
    opt = StiefelAdam([FrameParameter(W0.clone())], **options)
    hp = opt.param_groups[0]
    W, m = W0.clone(), torch.zeros_like(W0)
    v = torch.zeros_like(W0) if options.get("second_moment") == "entry" else torch.zeros(5, dtype=W0.dtype)
    for t, G in enumerate(grads, start=1):
        rows = [reference_update(W[i], G[i], m[i], v[i], t, hp) for i in range(5)]
        W, m, v = (torch.stack(x) for x in zip(*rows))
    assert torch.allclose(run(W0, grads, **options)[-1], W, atol=1e-12)


def test_a_step_inside_an_autocast_block_is_the_step_outside_it():
    """Autocast would run the step's products in bfloat16 (its in-place ones refuse float32
    outputs outright): the step turns it off for its own products, so a loop that steps inside
    the block takes the same steps, to the bit."""
    W0 = frames(6, d=24, r=4, dtype=torch.float32)
    grads = gradients(W0.shape, steps=5, dtype=torch.float32)
    outside = run(W0, grads, lr=0.05)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        inside = run(W0, grads, lr=0.05)
    assert torch.equal(inside, outside)


def test_frames_of_one_shape_in_several_parameters_step_as_one_bank(monkeypatch):
    calls = []
    original = optim_module.polar_factor
    monkeypatch.setattr(optim_module, "polar_factor", lambda Y, **kw: calls.append(Y.shape) or original(Y, **kw))
    a, b, c = FrameParameter(frames(4)), FrameParameter(frames(2, 3, seed=1)), FrameParameter(frames(d=7, r=2, seed=2))
    opt = StiefelAdam([a, b, c], lr=0.01)
    separate = [StiefelAdam([FrameParameter(x.detach().clone())], lr=0.01) for x in (a, b, c)]
    for G in gradients((10, 12, 3), steps=3):
        for p, grad in ((a, G[:4]), (b, G[4:].reshape(2, 3, 12, 3)), (c, G[0, :7, :2])):
            p.grad = grad.clone()
        for o, grad in zip(separate, (G[:4], G[4:].reshape(2, 3, 12, 3), G[0, :7, :2])):
            o.param_groups[0]["params"][0].grad = grad.clone()
        opt.step()
        for o in separate:
            o.step()
    assert calls[:2] == [torch.Size([10, 12, 3]), torch.Size([1, 7, 2])]  # one kernel per shape
    for p, o in zip((a, b, c), separate):
        assert torch.allclose(p, o.param_groups[0]["params"][0], atol=1e-13)


def test_column_major_frames_are_stepped_in_place_like_contiguous_ones(monkeypatch):
    """Frames laid out as torch.linalg.qr returns them (column-major matrices) are a bank
    already: no concatenation and no copy back, and the same steps as row-major frames."""
    monkeypatch.setattr(optim_module, "IN_PLACE_NUMEL", 1)
    W0 = frames(6, d=16, r=4, seed=3)
    row = FrameParameter(W0.clone())
    col = FrameParameter(W0.clone().mT.contiguous().mT)
    assert not col.is_contiguous() and torch.equal(row, col)
    opts = StiefelAdam([row], lr=0.05), StiefelAdam([col], lr=0.05)
    cats = []
    original_cat = torch.cat
    monkeypatch.setattr(optim_module.torch, "cat", lambda *a, **k: cats.append(1) or original_cat(*a, **k))
    pointer, strides = col.data_ptr(), col.stride()
    for G in gradients((6, 16, 4), steps=4):
        row.grad, col.grad = G.clone(), G.clone().mT.contiguous().mT
        for o in opts:
            o.step()
    assert not cats  # nothing concatenated into a bank
    assert (col.data_ptr(), col.stride()) == (pointer, strides)
    assert torch.allclose(row, col, atol=1e-12)


def test_adamw_multi_tensor_path_is_the_same_update_as_its_loop():
    """configure_optimizer turns on AdamW's foreach path (torch picks it on CUDA only); on the
    CPU it gives the same bits as the per-parameter loop."""
    torch.manual_seed(0)
    models = [nn.Sequential(nn.Linear(6, 5), nn.GELU(), nn.Linear(5, 3)) for _ in range(2)]
    models[1].load_state_dict(models[0].state_dict())
    opts = [configure_optimizer(m, lr=1e-2, weight_decay=0.1, foreach=f) for m, f in zip(models, (True, False))]
    assert opts[0].defaults["foreach"] is True
    x = torch.randn(32, 6)
    for _ in range(20):
        for m, o in zip(models, opts):
            o.zero_grad()
            m(x).square().mean().backward()
            o.step()
    for a, b in zip(*(m.parameters() for m in models)):
        assert torch.equal(a, b)


@pytest.mark.parametrize("scale", [1e-8, 1e-4, 1e4, 1e8])
def test_scaling_the_loss_leaves_the_trajectory_unchanged(scale):
    W0 = frames(3)
    grads = gradients(W0.shape, steps=20)
    base = run(W0, grads, lr=0.02, eps=0.0)
    scaled = run(W0, [scale * G for G in grads], lr=0.02, eps=0.0)
    assert ((scaled - base).norm() / base.norm()).item() <= 1e-12


def test_the_fixed_step_rule_moves_in_proportion_to_the_gradient():
    W0 = frames(3)
    grads = gradients(W0.shape, steps=1)
    moves = [(run(W0, [c * G for G in grads], lr=1e-6, step_rule="fixed")[-1] - W0).norm().item() for c in (1.0, 10.0)]
    assert moves[1] / moves[0] == pytest.approx(10.0, rel=1e-6)


def random_orthogonal(d, seed):
    Q, R = torch.linalg.qr(torch.randn(d, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64))
    return Q * torch.sign(torch.diagonal(R))


@given(st.integers(0, 2**16))
def test_rotating_frames_and_gradients_rotates_the_update(seed):
    W0, Q = frames(2, seed=seed), random_orthogonal(12, seed)
    grads = gradients(W0.shape, steps=6, seed=seed)
    plain = run(W0, grads, lr=0.05)
    rotated = run(Q @ W0, [Q @ G for G in grads], lr=0.05)
    assert (rotated - Q @ plain).abs().max() <= 1e-12


def test_a_per_entry_second_moment_breaks_equivariance():
    W0, Q = frames(2), random_orthogonal(12, 5)
    grads = gradients(W0.shape, steps=6)
    plain = run(W0, grads, lr=0.05, second_moment="entry")
    rotated = run(Q @ W0, [Q @ G for G in grads], lr=0.05, second_moment="entry")
    assert (rotated - Q @ plain).abs().max() > 1e-4


def test_weight_decay_has_no_riemannian_gradient_so_the_update_takes_none():
    """Proposition 5: decay's Riemannian gradient ``P_W(λW)`` is zero on St(d, r), so ``StiefelAdam``
    accepts ``weight_decay`` for API parity and its update has no such option."""
    W0 = frames(3)
    assert project_tangent(W0, 10.0 * W0).abs().max() < 1e-12
    assert project_tangent(W0, 10.0 * W0 + W0.flip(-2)).abs().max() > 1e-3  # a non-radial term does not vanish
    assert "weight_decay" not in optim_module.UPDATE_OPTIONS
    assert StiefelAdam([FrameParameter(W0.clone())], weight_decay=10.0).param_groups[0]["weight_decay"] == 10.0


@given(st.floats(1e-3, 10.0), st.floats(0.01, 2.0), st.integers(0, 1000))
def test_the_trust_radius_is_never_exceeded(lr, radius, seed):
    steps = []
    original = optim_module.polar_factor

    def record(Y, out, **kw):  # Y = W + ξ, and out still holds W
        steps.append(torch.linalg.matrix_norm(Y - out).max().item())
        return original(Y, out=out, **kw)

    W0 = frames(4, seed=seed)
    try:
        optim_module.polar_factor = record
        run(W0, gradients(W0.shape, steps=5, seed=seed), lr=lr, trust_radius=radius)
    finally:
        optim_module.polar_factor = original
    assert max(steps) <= radius * (1 + 1e-12)


def make_model(seed, stiefel=True):
    torch.manual_seed(seed)
    return nn.Sequential(SelfAttention(16, 2, stiefel=stiefel), nn.Flatten(), nn.Linear(16 * 5, 3))


def batches(n, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(8, 5, 16, generator=g), torch.randint(0, 3, (8,), generator=g)) for _ in range(n)]


def train(model, opt, data, scheduler=None):
    losses = []
    for x, y in data:
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if scheduler is not None:
            scheduler.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_a_resumed_run_is_bit_identical(dtype):
    data = batches(20)
    cast = [(x.to(dtype), y) for x, y in data]
    model = make_model(0).to(dtype)
    opt = configure_optimizer(model, lr=3e-3, weight_decay=0.1)
    train(model, opt, cast)

    resumed = make_model(0).to(dtype)
    opt2 = configure_optimizer(resumed, lr=3e-3, weight_decay=0.1)
    train(resumed, opt2, cast[:10])
    buffer = io.BytesIO()
    torch.save({"model": resumed.state_dict(), "opt": opt2.state_dict()}, buffer)
    buffer.seek(0)
    saved = torch.load(buffer, weights_only=True)
    fresh = make_model(99).to(dtype)
    opt3 = configure_optimizer(fresh, lr=3e-3, weight_decay=0.1)
    fresh.load_state_dict(saved["model"])
    opt3.load_state_dict(saved["opt"])
    train(fresh, opt3, cast[10:])
    for a, b in zip(model.parameters(), fresh.parameters()):
        assert torch.equal(a, b)


def test_lr_schedulers_and_param_groups_drive_every_group():
    model = make_model(0)
    opt = configure_optimizer(model, lr=1e-2)
    assert isinstance(opt, CombinedOptimizer)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    train(model, opt, batches(4), sched)
    assert [g["lr"] for g in opt.param_groups] == [2.5e-3, 2.5e-3]


def test_each_param_group_keeps_its_own_lr():
    a, b = FrameParameter(frames(2)), FrameParameter(frames(2))
    start = a.detach().clone()
    opt = StiefelAdam([{"params": [a], "lr": 0.1}, {"params": [b], "lr": 0.0, "trust_radius": None}])
    G = gradients(start.shape, steps=1)[0]
    a.grad, b.grad = G.clone(), G.clone()
    opt.step()
    assert not torch.allclose(a, start) and torch.allclose(b, start, atol=1e-14)


def test_closure_is_evaluated_and_its_loss_returned():
    model = make_model(0)
    opt = configure_optimizer(model, lr=1e-2)
    x, y = batches(1)[0]

    def closure():
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        return loss

    first = opt.step(closure)
    for _ in range(30):
        last = opt.step(closure)
    assert last < first


def test_configure_optimizer_routes_frames_to_stiefel_adam_and_the_rest_to_adamw():
    model = make_model(0)
    model[0].W_K.requires_grad_(False)  # a frozen frame is left out
    opt = configure_optimizer(model, lr=1e-3, weight_decay=0.3, trust_radius=0.2)
    stiefel, adamw = opt.optimizers
    assert isinstance(stiefel, StiefelAdam) and isinstance(adamw, torch.optim.AdamW)
    assert stiefel.param_groups[0]["param_names"] == ["0.W_Q"]
    assert stiefel.param_groups[0]["trust_radius"] == 0.2
    assert adamw.param_groups[0]["weight_decay"] == 0.3
    assert len(adamw.param_groups[0]["params"]) == 4  # W_V, W_O, head weight and bias
    euclidean = configure_optimizer(make_model(0, stiefel=False), weight_decay=0.3)
    assert isinstance(euclidean, torch.optim.AdamW)


def test_optimizer_state_is_about_the_size_of_the_frames():
    p = FrameParameter(frames(24, d=64, r=8, dtype=torch.float32))
    opt = StiefelAdam([p])
    p.grad = torch.randn_like(p)
    opt.step()
    state_bytes = sum(t.numel() * t.element_size() for t in opt.state[p].values())
    assert state_bytes <= 1.01 * p.numel() * p.element_size()


def test_a_frame_off_the_manifold_is_refused_by_name():
    model = make_model(0)
    with torch.no_grad():
        model[0].W_Q.mul_(1.01)
    with pytest.raises(ValueError, match=r"'0\.W_Q' is not on the Stiefel manifold.*orthonormalize"):
        configure_optimizer(model)


@pytest.mark.parametrize("shape", [(4, 6), (5,), (3, 1, 0)])
def test_shapes_that_are_not_frames_are_refused(shape):
    with pytest.raises(ValueError):
        StiefelAdam([nn.Parameter(torch.zeros(shape))])


@pytest.mark.parametrize(
    "kwargs",
    [
        {"lr": -1},
        {"betas": (1.0, 0.9)},
        {"betas": (0.9, -0.1)},
        {"eps": -1},
        {"trust_radius": 0},
        {"step_rule": "sgd"},
        {"second_moment": "row"},
        {"projector": "qr"},
    ],
)
def test_invalid_hyperparameters_are_refused(kwargs):
    with pytest.raises(ValueError):
        StiefelAdam([FrameParameter(frames(1))], **kwargs)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_a_non_finite_gradient_changes_nothing_and_names_the_frame(bad):
    model = make_model(0)
    opt = configure_optimizer(model, lr=1e-2)
    train(model, opt, batches(3))
    before_params = [p.detach().clone() for p in model.parameters()]
    before_state = io.BytesIO()
    torch.save(opt.state_dict(), before_state)
    loss = nn.functional.cross_entropy(model(batches(1)[0][0]), batches(1)[0][1])
    opt.zero_grad()
    loss.backward()
    model[0].W_K.grad[1, 2, 0] = bad
    with pytest.raises(NonFiniteGradientError, match=r"'0\.W_K'.*no parameter or optimizer state was changed"):
        opt.optimizers[0].step()
    assert all(torch.equal(a, b) for a, b in zip(before_params, model.parameters()))
    after_state = io.BytesIO()
    torch.save(opt.state_dict(), after_state)
    assert before_state.getvalue() == after_state.getvalue()


def test_training_a_small_attention_model_decreases_its_loss_and_keeps_frames_orthonormal():
    torch.manual_seed(0)
    model = make_model(0)
    data = batches(1) * 150
    losses = train(model, configure_optimizer(model, lr=1e-2), data)
    assert losses[-1] < 0.5 * losses[0]
    assert orthonormality_error(model[0].W_Q.detach()).max() <= 1e-5


def test_trust_region_fraction_counts_the_capped_frame_steps():
    from stiefel_core.manifold import random_frame

    torch.manual_seed(0)
    for lr, radius, expected in ((10.0, 0.5, 1.0), (1e-6, 0.5, 0.0), (10.0, None, 0.0)):
        W = FrameParameter(random_frame(16, 4, 3))
        opt = StiefelAdam([W], lr=lr, trust_radius=radius)
        assert opt.trust_region_fraction() is None  # no step yet
        for _ in range(4):
            W.grad = torch.randn_like(W)
            opt.step()
        assert opt.trust_region_fraction() == expected
        assert opt.state[W]["trust_capped"].shape == (3,)
        clone = StiefelAdam([FrameParameter(W.detach().clone())], lr=lr, trust_radius=radius)
        clone.load_state_dict(opt.state_dict())
        assert clone.trust_region_fraction() == expected  # the counter survives a checkpoint
