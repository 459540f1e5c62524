"""The arms that separate scale from orthonormality (issue 28): each starts where every arm does,
keeps its invariant while it trains, and is trained by what it says; the sphere's and Cayley ADAM's
updates against plain float64 versions; the existing arms train as before."""

import dataclasses
import math

import pytest
import torch
import torch.nn.functional as F

from stiefel_book.arms.scale_arms import SCALE_ARM_NAMES, modular_inputs, scale_optimizer
from stiefel_book.cayley import CayleyAdam
from stiefel_book.data import modular_data
from stiefel_book.experiments.grokking import EXPLORE
from stiefel_book.plots import ARM_COLORS
from stiefel_book.sphere import SphereAdam
from stiefel_book.tasks import grokking
from stiefel_book.tempered import TemperedAttention
from stiefel_core.combined import CombinedOptimizer
from stiefel_core.manifold import orthonormality_error, random_frame
from stiefel_core.optim import StiefelAdam

SMALL = dataclasses.replace(EXPLORE, epochs=60, log_every=20)  # p = 13, d_model 32, 2 heads of r = 16
CPU = torch.device("cpu")


def effective(model):
    return {n: p.detach() for n, p in model.named_parameters() if not n.endswith("logit_scale")}


def last_query_scores(attn, x):
    """Each head's scores of the last query over every key: (B, H, 1, T), as the model computes them."""
    q, k = attn._score_inputs(attn._heads(x[:, -1:], attn.W_Q), attn._heads(x, attn.W_K))
    return q @ k.mT / attn.d_head**0.5


def test_every_scale_arm_starts_from_the_same_weights():
    reference = effective(grokking.build_model(SMALL, "baseline", 3, 14))
    for arm in SCALE_ARM_NAMES:
        model = grokking.build_model(SMALL, arm, 3, 14)
        weights = effective(model)
        assert weights.keys() == reference.keys(), arm
        assert all(torch.equal(W, reference[n]) for n, W in weights.items()), arm
    assert orthonormality_error(reference["attn.W_Q"]).max() < 1e-5


def test_qk_norm_starts_at_the_baselines_score_rms_and_stiefel_temp_at_the_stiefel_arms_scores():
    baseline, qk_norm = (grokking.build_model(SMALL, arm, 5, 14) for arm in ("baseline", "qk_norm"))
    x = modular_inputs(baseline, SMALL.p)
    with torch.no_grad():
        plain, normed = last_query_scores(baseline.attn, x), last_query_scores(qk_norm.attn, x)
    rms = lambda s: s.transpose(0, 1).reshape(s.shape[1], -1).double().square().mean(-1).sqrt()  # noqa: E731
    torch.testing.assert_close(rms(normed), rms(plain), rtol=1e-5, atol=0)  # per head, over every input
    assert (normed - plain).abs().max() > 1e-3 * plain.abs().max()  # equal in size, not in value: the norm acts
    assert torch.equal(qk_norm.attn.logit_scale.detach(), torch.ones(SMALL.n_heads))

    stiefel, tempered = (grokking.build_model(SMALL, arm, 5, 14) for arm in ("stiefel", "stiefel_temp"))
    tokens = modular_data(SMALL.p, "add", SMALL.train_fraction, 5).train_x
    with torch.no_grad():
        assert torch.equal(tempered(tokens), stiefel(tokens))  # scale 1 x base 1: the stiefel arm's logits exactly
    assert torch.equal(tempered.attn.base_scale, torch.ones(SMALL.n_heads))


def test_qk_norm_scores_do_not_see_the_scale_of_W_Q_W_K():
    model = grokking.build_model(SMALL, "qk_norm", 0, 14)
    tokens = modular_data(SMALL.p, "add", SMALL.train_fraction, 0).train_x
    with torch.no_grad():
        before = model(tokens)
        model.attn.W_Q.mul_(3.0)
        model.attn.W_K.mul_(0.2)
        torch.testing.assert_close(model(tokens), before, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="stiefel=False"):
        from stiefel_book.arms.scale_arms import prepare_attention

        prepare_attention(grokking.build_model(SMALL, "stiefel", 0, 14).attn, "qk_norm", modular_inputs(model, SMALL.p))


EXPECTED = {"qk_norm": torch.optim.AdamW, "sphere": SphereAdam, "stiefel_temp": StiefelAdam, "cayley_adam": CayleyAdam}


def test_each_scale_arm_is_trained_by_what_it_says():
    for arm in SCALE_ARM_NAMES:
        model = grokking.build_model(SMALL, arm, 0, 14)
        opt = scale_optimizer(model, arm, lr=1e-3, qk_lr=2e-2, weight_decay=1.0, betas=(0.9, 0.98), trust_radius=0.5)
        inner = getattr(opt, "optimizers", [opt])
        group_of = {id(p): (type(o), g) for o in inner for g in o.param_groups for p in g["params"]}
        assert len(group_of) == sum(1 for p in model.parameters() if p.requires_grad), arm
        qk_type, qk_group = group_of[id(model.attn.W_Q)]
        assert qk_group["lr"] == 2e-2 and group_of[id(model.attn.W_K)][1] is qk_group, arm
        rest_type, rest_group = group_of[id(model.embed.weight)]
        assert rest_type is torch.optim.AdamW and rest_group["lr"] == 1e-3 and rest_group["weight_decay"] == 1.0, arm
        assert qk_type is EXPECTED[arm], arm
        if arm == "qk_norm":
            assert qk_group["weight_decay"] == 1.0  # decayed, as the baseline's W_Q, W_K
        if arm in ("qk_norm", "stiefel_temp"):
            scale_type, scale_group = group_of[id(model.attn.logit_scale)]
            assert scale_type is torch.optim.AdamW and scale_group["lr"] == 1e-3 and scale_group["weight_decay"] == 0.0
        else:
            assert isinstance(opt, CombinedOptimizer)


def test_each_scale_arm_runs_a_short_grokking_and_keeps_its_invariant():
    final = {arm: grokking.run(SMALL, arm, 0, CPU, progress=False, qk_lr=1e-2)["final"] for arm in SCALE_ARM_NAMES}
    H, r = SMALL.n_heads, SMALL.d_model // SMALL.n_heads
    for arm in ("stiefel_temp", "cayley_adam"):
        assert final[arm]["ortho/W_Q"] < 1e-4 and final[arm]["ortho/W_K"] < 1e-4, arm
    assert final["sphere"]["norm/attn.W_Q"] == pytest.approx(math.sqrt(H * r), rel=1e-6)
    assert final["sphere"]["ortho/W_Q"] > 1e-2  # on the sphere, off the Stiefel manifold
    assert final["qk_norm"]["ortho/W_Q"] > 1e-2 and final["sphere"]["trust_capped"] is not None
    for arm in ("qk_norm", "stiefel_temp"):
        assert abs(final[arm]["norm/attn.logit_scale"] - math.sqrt(H)) > 1e-3, arm  # the logit scale learned
    assert len({f["val_loss"] for f in final.values()}) == len(SCALE_ARM_NAMES)
    assert all(f["angle_mean/W_Q"] > 0 for f in final.values())  # every arm moved W_Q
    with pytest.raises(ValueError, match="scale against orthonormality"):
        grokking.run(SMALL, "sphere_no_such_arm", 0, CPU)


def test_sphere_arm_holds_every_head_at_norm_sqrt_r():
    data = modular_data(SMALL.p, "add", SMALL.train_fraction, 1)
    model = grokking.build_model(SMALL, "sphere", 1, data.vocab_size)
    opt = scale_optimizer(model, "sphere", lr=3e-3, qk_lr=3e-2, weight_decay=1.0, betas=(0.9, 0.98), trust_radius=0.5)
    start = model.attn.W_Q.detach().clone()
    for _ in range(150):
        opt.zero_grad()
        F.cross_entropy(model(data.train_x), data.train_y).backward()
        opt.step()
    r = SMALL.d_model // SMALL.n_heads
    for W in (model.attn.W_Q, model.attn.W_K):
        norms = torch.linalg.matrix_norm(W.detach())  # (heads,)
        torch.testing.assert_close(norms, torch.full((SMALL.n_heads,), r**0.5), rtol=1e-5, atol=0)
    assert (model.attn.W_Q.detach() - start).norm() > 0.1


def reference_sphere_step(W, G, m, v, t, lr, betas, eps, radius):
    """One SphereAdam step on one (d, r) matrix, written plainly in float64."""
    d, r = W.shape
    P = lambda X: X - W * (W * X).sum() / (W * W).sum()  # noqa: E731
    g = P(G)
    m = P(betas[0] * m + (1 - betas[0]) * G)
    v = betas[1] * v + (1 - betas[1]) * (g * g).sum() / (d * r)
    xi = -lr * (m / (1 - betas[0] ** t)) / ((v / (1 - betas[1] ** t)).sqrt() + eps)
    if radius is not None and xi.norm() > radius:
        xi = xi * radius / xi.norm()
    Y = W + xi
    return Y * math.sqrt(r) / Y.norm(), m, v


@pytest.mark.parametrize("radius", [0.5, 0.05, None])
def test_sphere_adam_equals_the_plain_rule(radius):
    gen = torch.Generator().manual_seed(2)
    W0 = random_frame(12, 4, 3, generator=gen, dtype=torch.float64)  # three matrices on the sphere of radius 2
    p = torch.nn.Parameter(W0.clone())
    opt = SphereAdam([p], lr=0.03, betas=(0.9, 0.98), eps=1e-8, trust_radius=radius, weight_decay=5.0)
    W, m, v = W0.clone(), torch.zeros_like(W0), torch.zeros(3, dtype=torch.float64)
    for t in range(1, 6):
        G = torch.randn(3, 12, 4, generator=gen, dtype=torch.float64)
        p.grad = G.clone()
        opt.step()
        for h in range(3):
            W[h], m[h], v[h] = reference_sphere_step(W[h], G[h], m[h], v[h], t, 0.03, (0.9, 0.98), 1e-8, radius)
        torch.testing.assert_close(p.detach(), W, rtol=1e-10, atol=1e-12)
    assert (p.detach() - W0).norm() > 1e-2
    if radius == 0.05:
        assert opt.trust_region_fraction() > 0.5


def test_sphere_adam_is_scale_free_and_refuses_a_matrix_off_the_sphere():
    gen = torch.Generator().manual_seed(4)
    W0 = random_frame(10, 3, generator=gen, dtype=torch.float64)
    G = torch.randn(10, 3, generator=gen, dtype=torch.float64)
    steps = []
    for c in (1.0, 1e4):
        p = torch.nn.Parameter(W0.clone())
        opt = SphereAdam([p], lr=0.01, eps=0.0)
        p.grad = c * G
        opt.step()
        steps.append(p.detach() - W0)
    torch.testing.assert_close(steps[0], steps[1], rtol=1e-9, atol=1e-12)
    with pytest.raises(ValueError, match="not on the sphere"):
        SphereAdam([torch.nn.Parameter(1.1 * W0)])


def brockett(X, A, N):
    """f(X) = tr(Xᵀ A X N): minimised on St(d, r) by the eigenvectors of A's smallest eigenvalues."""
    return torch.einsum("...dr,de,...es,rs->...", X, A, X, N)


def test_cayley_adam_stays_on_the_manifold_and_decreases_the_objective():
    gen = torch.Generator().manual_seed(0)
    d, r = 20, 4
    B = torch.randn(d, d, generator=gen)
    A, N = B @ B.T / d, torch.diag(torch.arange(1.0, r + 1))
    X = torch.nn.Parameter(random_frame(d, r, 3, generator=gen))  # a bank of three frames, float32 as in training
    opt = CayleyAdam([X], lr=0.1, betas=(0.9, 0.98))
    start = brockett(X.detach(), A, N)
    for _ in range(2000):
        opt.zero_grad()
        brockett(X, A, N).sum().backward()
        opt.step()
    end = brockett(X.detach(), A, N)
    best = torch.linalg.eigvalsh(A)[:r].flip(0) @ torch.diag(N)  # the minimum
    assert orthonormality_error(X.detach()).max() < 1e-3  # s = 2 leaves ~5e-4 here; it stops growing as steps shrink
    assert (end < start).all() and ((end - best) / (start - best)).max() < 0.05


def test_cayley_adam_iteration_converges_to_the_cayley_transform():
    gen = torch.Generator().manual_seed(1)
    X0 = random_frame(9, 3, generator=gen, dtype=torch.float64)
    G = torch.randn(9, 3, generator=gen, dtype=torch.float64)
    p = torch.nn.Parameter(X0.clone())
    lr, betas, eps = 0.05, (0.9, 0.99), 1e-8
    opt = CayleyAdam([p], lr=lr, betas=betas, eps=eps, s=200)
    p.grad = G.clone()
    opt.step()
    # Step 1 by hand: M = (1 - β1) G, v = (1 - β2)‖G‖², ρ = (1 - β1) √(‖G‖² + ε)
    M = (1 - betas[0]) * G
    rho = (1 - betas[0]) * math.sqrt(G.norm().item() ** 2 + eps)
    W_hat = M @ X0.T - 0.5 * X0 @ (X0.T @ M @ X0.T)
    W = (W_hat - W_hat.T) / rho
    alpha = min(lr, 1.0 / (torch.linalg.matrix_norm(W, ord=1).item() + eps))
    eye = torch.eye(9, dtype=torch.float64)
    cayley = torch.linalg.solve(eye + alpha / 2 * W, (eye - alpha / 2 * W) @ X0)
    torch.testing.assert_close(p.detach(), cayley, rtol=1e-10, atol=1e-12)
    assert orthonormality_error(p.detach()) < 1e-12
    torch.testing.assert_close(opt.state[p]["exp_avg"], rho * W @ X0)  # the momentum, projected
    with pytest.raises(ValueError, match="Stiefel manifold"):
        CayleyAdam([torch.nn.Parameter(2 * X0)])


def test_tempered_attention_keeps_the_attention_it_replaces():
    torch.manual_seed(0)
    from stiefel_core.attention import SelfAttention

    attn = SelfAttention(16, 2, causal=True)
    x = torch.randn(3, 5, 16)
    tempered = TemperedAttention.from_attention(attn)
    assert torch.equal(tempered(x), attn(x)) and tempered.stiefel
    state = torch.random.get_rng_state()
    TemperedAttention.from_attention(attn, qk_norm=True)
    assert torch.equal(torch.random.get_rng_state(), state)  # draws nothing


def test_every_scale_arm_has_a_colour():
    assert set(SCALE_ARM_NAMES) <= set(ARM_COLORS)
    assert len(set(ARM_COLORS.values())) == len(ARM_COLORS)


# Computed at main (d65adf3), before these arms existed: the existing arms train as they did.
# Exact on the machine that computed them; the tolerance allows another CPU's rounding.
STORED = {
    "baseline": (2.415632963180542, 3.0171945095062256),
    "stiefel": (2.4265551567077637, 2.9716670513153076),
}


def test_existing_arms_train_as_before():
    for arm, (train_loss, val_loss) in STORED.items():
        final = grokking.run(SMALL, arm, 0, CPU, progress=False)["final"]
        assert (final["train_loss"], final["val_loss"]) == pytest.approx((train_loss, val_loss), rel=1e-5), arm


@pytest.mark.parametrize("arm", SCALE_ARM_NAMES)
def test_an_interrupted_run_of_a_scale_arm_resumes_bit_identically(arm, tmp_path, monkeypatch):
    config = dataclasses.replace(SMALL, epochs=30, log_every=5, checkpoint_every=10)
    whole = grokking.run(config, arm, 0, CPU, progress=False, qk_lr=1e-2)
    real_fit = grokking.fit

    def interrupted_fit(model, opt, step, *args, **kwargs):  # stop after the first checkpoint, as a killed process
        def failing_step(epoch, logging):
            if epoch == 15:
                raise KeyboardInterrupt
            return step(epoch, logging)

        return real_fit(model, opt, failing_step, *args, **kwargs)

    checkpoint = tmp_path / "run.pt"
    monkeypatch.setattr(grokking, "fit", interrupted_fit)
    with pytest.raises(KeyboardInterrupt):
        grokking.run(config, arm, 0, CPU, checkpoint, progress=False, qk_lr=1e-2)
    monkeypatch.setattr(grokking, "fit", real_fit)
    assert checkpoint.exists()
    assert grokking.run(config, arm, 0, CPU, checkpoint, progress=False, qk_lr=1e-2)["history"] == whole["history"]


@pytest.mark.parametrize("kind", [SphereAdam, CayleyAdam])
def test_sphere_and_cayley_adam_take_bfloat16_matrices_and_resume_them_bit_identically(kind):
    """As StiefelAdam: a bfloat16 matrix is accepted to its dtype's precision (an orthonormal one in
    bfloat16 misses 1e-4), and a run saved and resumed through ``state_dict`` keeps its float32 second
    moment and step, so it ends where the uninterrupted run does."""
    gen = torch.Generator().manual_seed(2)
    X0 = random_frame(12, 4, 2, generator=gen).to(torch.bfloat16)
    assert orthonormality_error(X0).max() > 1e-4  # the old tolerance refused it
    grads = [torch.randn(2, 12, 4, generator=gen).to(torch.bfloat16) for _ in range(6)]

    def steps(opt, p, gs):
        for g in gs:
            p.grad = g.clone()
            opt.step()

    whole = torch.nn.Parameter(X0.clone())
    steps(kind([whole], lr=0.05), whole, grads)

    first = torch.nn.Parameter(X0.clone())
    opt = kind([first], lr=0.05)
    steps(opt, first, grads[:3])
    assert opt.state[first]["exp_avg_sq"].dtype == torch.float32
    resumed = torch.nn.Parameter(first.detach().clone())
    opt2 = kind([resumed], lr=0.05)
    opt2.load_state_dict(opt.state_dict())
    assert opt2.state[resumed]["exp_avg_sq"].dtype == torch.float32  # torch alone would cast it to bfloat16
    steps(opt2, resumed, grads[3:])
    assert torch.equal(resumed.detach(), whole.detach())
