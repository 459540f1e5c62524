"""ManifoldMuon: its direction against an independent float64 solve, its invariances, its steps on
the manifold, its torch.optim contract and the errors it shares with StiefelAdam."""

import io

import pytest
import torch
from torch import nn

from stiefel_core import ManifoldMuon
from stiefel_core.attention import SelfAttention
from stiefel_core.combined import CombinedOptimizer, configure_optimizer
from stiefel_core.frames import FrameParameter
from stiefel_core.manifold import orthonormality_error, random_frame
from stiefel_core.manifold_muon import dual_direction
from stiefel_core.step_checks import FrameOffManifoldError, NonFiniteGradientError


def frames(*batch, d=24, r=4, seed=0, dtype=torch.float64):
    return random_frame(d, r, *batch, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def gradients(shape, steps=8, seed=1, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(shape, generator=g, dtype=dtype) for _ in range(steps)]


def run(W0, grads, **options):
    """Every step's frames, stepping a copy of ``W0`` through ``grads``."""
    p = FrameParameter(W0.clone())
    opt = ManifoldMuon([p], **options)
    path = []
    for G in grads:
        p.grad = G.clone()
        opt.step()
        path.append(p.detach().clone())
    return torch.stack(path)


def svd_polar(Y):
    U, _, Vh = torch.linalg.svd(Y, full_matrices=False)
    return U @ Vh


def dual_upper_bound(W, M):
    """An upper bound on max <M, A> over tangent A with ‖A‖₂ <= 1, by weak duality: for every
    symmetric Λ, ‖M - WΛ‖_* bounds it. Λ is chosen by L-BFGS on a smoothed nuclear norm over the
    full (d, r) matrices, smoothing decreasing to 1e-6: no r x r reduction, no eigenbasis steps."""
    F, d, r = W.shape
    raw = torch.zeros(F, r, r, dtype=torch.float64, requires_grad=True)
    eye = torch.eye(r, dtype=torch.float64)

    def residual():
        return M - W @ (0.5 * (raw + raw.mT))

    for mu in (1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6):
        opt = torch.optim.LBFGS([raw], max_iter=300, history_size=30, line_search_fn="strong_wolfe")

        def objective():
            opt.zero_grad()
            Z = residual()
            value = torch.linalg.eigvalsh(Z.mT @ Z + mu**2 * eye).clamp_min(0).sqrt().sum()
            value.backward()
            return value

        opt.step(objective)
    with torch.no_grad():
        return torch.linalg.svdvals(residual()).sum(-1)  # (F,): each one an exact upper bound


@pytest.mark.parametrize(
    "d, r, kind", [(24, 4, "gaussian"), (48, 6, "gaussian"), (40, 5, "momentum"), (32, 4, "anisotropic")]
)
def test_the_direction_is_tangent_unit_and_within_1_percent_of_the_float64_optimum(d, r, kind):
    W = frames(6, d=d, r=r, seed=d)
    g = torch.Generator().manual_seed(r)
    M = torch.randn(6, d, r, generator=g, dtype=torch.float64)
    if kind == "momentum":  # a sum of correlated gradients, partly in the frame's span
        M = sum(0.9**k * (M + 0.5 * W @ torch.randn(6, r, r, generator=g, dtype=torch.float64)) for k in range(5))
    elif kind == "anisotropic":
        M = M * torch.logspace(0, -1.5, r, dtype=torch.float64)
    A, taken = dual_direction(W, M)
    assert torch.linalg.matrix_norm(W.mT @ A + A.mT @ W).max() <= 1e-12  # tangent
    assert torch.linalg.matrix_norm(A, ord=2).max() <= 1 + 1e-12
    alignment, bound = (M * A).sum((-2, -1)), dual_upper_bound(W, M)
    assert (alignment >= 0.99 * bound).all()  # alignment <= optimum <= bound: within 1 % of it
    assert 1 <= taken <= 8
    A0, _ = dual_direction(W, M, max_steps=0)  # msign of the projected momentum: what the dual steps gain
    assert (M * A0).sum() < alignment.sum()


@pytest.mark.parametrize("kind", ["in the span, rank 2", "rank 1"])
def test_a_float32_momentum_of_low_rank_or_in_the_frames_span_gives_a_feasible_step(kind):
    """The character model at a high rate: a momentum nearly in the frame's span, or of low rank,
    leaves its part normal to the frame mostly rounding. Amplified, that rounding once gave a
    direction off the tangent space with ‖A‖₂ = 1.29, and a step of 0.3 left the manifold."""
    g = torch.Generator().manual_seed(5)
    W = frames(8, d=64, r=16, seed=3, dtype=torch.float32)
    low = torch.randn(8, 16, 2, generator=g) @ torch.randn(8, 2, 16, generator=g)
    if kind == "rank 1":
        M = torch.randn(8, 64, 1, generator=g) @ torch.randn(8, 1, 16, generator=g)
    else:
        M = W @ low + 1e-7 * torch.randn(8, 64, 16, generator=g)
    A, _ = dual_direction(W, M)
    assert torch.linalg.matrix_norm(W.mT @ A + A.mT @ W).max() <= 1e-5  # tangent, to float32 rounding
    assert torch.linalg.matrix_norm(A.double(), ord=2).max() <= 1 + 1e-5
    bound = dual_upper_bound(W.double(), M.double())
    assert ((M.double() * A.double()).sum((-2, -1)) >= 0.99 * bound).all()
    path = run(W, [M] * 5, lr=0.3)
    assert orthonormality_error(path).max() <= 1e-5  # it left the manifold by 0.89 before the fix


def test_the_first_step_is_the_polar_retraction_of_the_direction():
    W0 = frames(3)
    G = gradients(W0.shape, steps=1)[0]
    W1 = run(W0, [G], lr=0.05)[0]
    A, _ = dual_direction(W0, G)  # Nesterov's target at step 1 is a multiple of G: the same direction
    assert (W1 - svd_polar(W0 - 0.05 * A)).abs().max() <= 1e-12


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_frames_stay_on_the_manifold_over_200_steps(dtype):
    a, b = FrameParameter(frames(5, dtype=dtype)), FrameParameter(frames(3, d=16, r=8, seed=1, dtype=dtype))
    opt = ManifoldMuon([a, b], lr=0.05)
    g = torch.Generator().manual_seed(3)
    for _ in range(200):
        for p in (a, b):
            p.grad = torch.randn(p.shape, generator=g, dtype=dtype)
        opt.step()
    tolerance = 1e-13 if dtype == torch.float64 else 2e-6
    assert max(orthonormality_error(p.detach()).max().item() for p in (a, b)) <= tolerance
    assert 0 < opt.mean_dual_steps() <= 8


def random_orthogonal(d, seed):
    Q, R = torch.linalg.qr(torch.randn(d, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64))
    return Q * torch.sign(torch.diagonal(R))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rotating_frames_and_gradients_rotates_the_steps(seed):
    W0, Q = frames(2, seed=seed), random_orthogonal(24, seed)
    grads = gradients(W0.shape, steps=6, seed=seed)
    plain = run(W0, grads, lr=0.05)
    rotated = run(Q @ W0, [Q @ G for G in grads], lr=0.05)
    assert (rotated - Q @ plain).abs().max() <= 1e-11


@pytest.mark.parametrize("lr", [1e-3, 1e-2])
def test_a_step_moves_each_frame_by_lr_in_spectral_norm(lr):
    W0 = frames(6)
    path = run(W0, gradients(W0.shape, steps=3), lr=lr)
    previous = torch.cat([W0[None], path[:-1]])
    moves = torch.linalg.matrix_norm(path - previous, ord=2) / lr  # (steps, frames)
    assert ((moves - 1).abs() <= 0.01).all()


@pytest.mark.parametrize("scale", [1e-8, 1e8])
def test_the_step_does_not_depend_on_the_gradients_scale(scale):
    W0 = frames(3)
    grads = gradients(W0.shape, steps=10)
    base = run(W0, grads, lr=0.05)
    scaled = run(W0, [scale * G for G in grads], lr=0.05)
    assert ((scaled - base).norm() / base.norm()).item() <= 1e-10


def test_weight_decay_changes_nothing():
    W0 = frames(3)
    grads = gradients(W0.shape, steps=5)
    assert torch.equal(run(W0, grads, lr=0.05), run(W0, grads, lr=0.05, weight_decay=0.3))


def make_model(seed):
    torch.manual_seed(seed)
    return nn.Sequential(SelfAttention(16, 2, stiefel=True), nn.Flatten(), nn.Linear(16 * 5, 3))


def batches(n, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(8, 5, 16, generator=g), torch.randint(0, 3, (8,), generator=g)) for _ in range(n)]


def train(model, opt, data):
    losses = []
    for x, y in data:
        loss = nn.functional.cross_entropy(model(x.to(next(model.parameters()).dtype)), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def configured(model):
    return configure_optimizer(model, lr=3e-3, frame_lr=0.02, frame_optimizer="manifold_muon")


def test_configure_optimizer_routes_frames_to_manifold_muon_and_training_works():
    model = make_model(0)
    opt = configure_optimizer(model, lr=1e-2, frame_lr=0.05, frame_optimizer="manifold_muon", momentum=0.9)
    assert isinstance(opt, CombinedOptimizer)
    muon, adamw = opt.optimizers
    assert isinstance(muon, ManifoldMuon) and isinstance(adamw, torch.optim.AdamW)
    assert muon.param_groups[0]["param_names"] == ["0.W_Q", "0.W_K"]
    assert (muon.param_groups[0]["lr"], muon.param_groups[0]["momentum"]) == (0.05, 0.9)
    losses = train(model, opt, batches(1) * 100)
    assert losses[-1] < 0.5 * losses[0]
    assert orthonormality_error(model[0].W_Q.detach()).max() <= 1e-5
    with pytest.raises(ValueError, match="frame_optimizer"):
        configure_optimizer(model, frame_optimizer="muon")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_a_resumed_run_is_bit_identical(dtype):
    data = batches(16)
    model = make_model(0).to(dtype)
    train(model, configured(model), data)
    resumed = make_model(0).to(dtype)
    opt = configured(resumed)
    train(resumed, opt, data[:8])
    buffer = io.BytesIO()
    torch.save({"model": resumed.state_dict(), "opt": opt.state_dict()}, buffer)
    buffer.seek(0)
    saved = torch.load(buffer, weights_only=True)
    fresh = make_model(99).to(dtype)
    opt = configured(fresh)
    fresh.load_state_dict(saved["model"])
    opt.load_state_dict(saved["opt"])
    train(fresh, opt, data[8:])
    for a, b in zip(model.parameters(), fresh.parameters()):
        assert torch.equal(a, b)


def snapshot(model, opt):
    buffer = io.BytesIO()
    torch.save(opt.state_dict(), buffer)
    return [p.detach().clone() for p in model.parameters()], buffer.getvalue()


def assert_unchanged(model, opt, before):
    params, state = snapshot(model, opt)
    assert all(torch.equal(a, b) for a, b in zip(before[0], params))
    assert state == before[1]


def backward(model):
    x, y = batches(1, seed=5)[0]
    model.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()


@pytest.mark.parametrize("alone", [True, False])
@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_a_non_finite_gradient_changes_nothing_and_raises_the_named_error(alone, bad):
    model = make_model(0)
    opt = configured(model)
    train(model, opt, batches(3))
    backward(model)
    model[0].W_K.grad[1, 2, 0] = bad
    before = snapshot(model, opt)
    with pytest.raises(NonFiniteGradientError, match="W_K"):
        (opt.optimizers[0] if alone else opt).step()
    assert_unchanged(model, opt, before)


def test_a_frame_changed_behind_the_optimizer_raises_the_named_error():
    model = make_model(0)
    opt = configured(model)
    train(model, opt, batches(2))
    with torch.no_grad():
        model[0].W_Q.mul_(1.1)
    backward(model)
    before = snapshot(model, opt)
    with pytest.raises(FrameOffManifoldError, match="W_Q"):
        opt.step()
    assert_unchanged(model, opt, before)


def test_a_frame_off_the_manifold_is_refused_at_construction():
    with pytest.raises(ValueError, match="orthonormalize"):
        ManifoldMuon([FrameParameter(1.01 * frames(2))])
    with pytest.raises(ValueError):
        ManifoldMuon([nn.Parameter(torch.zeros(4, 6))])  # r > d: not a frame


BAD = [
    {"lr": -1.0},
    {"lr": float("nan")},
    {"lr": float("inf")},
    {"momentum": 1.0},
    {"momentum": -0.1},
    {"weight_decay": -1.0},
    {"dual_steps": -1},
    {"dual_steps": 2.5},
    {"dual_tol": 0.0},
]


@pytest.mark.parametrize("kwargs", BAD)
def test_bad_hyperparameters_are_refused_at_construction(kwargs):
    with pytest.raises(ValueError, match="Invalid"):
        ManifoldMuon([FrameParameter(frames(1))], **kwargs)


@pytest.mark.parametrize("kwargs", BAD)
def test_bad_hyperparameters_set_after_construction_change_nothing(kwargs):
    model = make_model(0)
    opt = configured(model)
    train(model, opt, batches(2))
    opt.optimizers[0].param_groups[0].update(kwargs)  # as a scheduler or a hand would
    backward(model)
    before = snapshot(model, opt)
    with pytest.raises(ValueError):  # the combined check or ManifoldMuon's own, whichever sees it first
        opt.step()
    assert_unchanged(model, opt, before)
