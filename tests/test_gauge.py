"""stiefel_book.gauge: the generators are symmetries of the right kind, the projections are the
orthogonal projections onto their span, the three certificates pass, and they fail where they
should (a loss with a term in W_Q alone); the chapter's figures and explorer draw without a kernel.
"""

import math
import re

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from stiefel_book import gauge  # noqa: E402
from stiefel_book.gauge import (  # noqa: E402
    RUN_TOLERANCE,
    TOLERANCE,
    direction_cosines,
    frame_normalized_component,
    gauge_component,
    generators,
    gl_action,
    gl_generators,
    normality_error,
    orthogonal_action,
    orthogonal_generators,
    project_gauge,
    project_onto_span,
    remove_gauge,
    skew_basis,
    tangency_error,
)
from stiefel_core.attention import SelfAttention  # noqa: E402
from stiefel_core.frames import is_frame  # noqa: E402
from stiefel_core.manifold import orthonormality_error, orthonormalize, project_tangent, random_frame  # noqa: E402

DT = torch.float64


@pytest.fixture(autouse=True)
def one_thread_and_close_figures():
    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(saved)
    plt.close("all")


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def pair(d, r, heads=3, *, frames=True, seed=0):
    g = gen(seed)
    if frames:
        return random_frame(d, r, heads, generator=g, dtype=DT), random_frame(d, r, heads, generator=g, dtype=DT)
    return torch.randn(heads, d, r, generator=g, dtype=DT), torch.randn(heads, d, r, generator=g, dtype=DT)


def attention_pair(stiefel, seed=0, d_model=12, n_heads=3, d_head=4):
    torch.manual_seed(seed)
    attn = SelfAttention(d_model, n_heads, d_head, stiefel=stiefel, causal=True).to(DT)
    with torch.no_grad():
        for W in (attn.W_Q, attn.W_K):
            W.copy_(orthonormalize(W))
    x = torch.randn(2, 5, d_model, generator=gen(seed + 1), dtype=DT)
    return attn, x


@torch.no_grad()
def output_with(attn, x, W_Q, W_K):
    return torch.func.functional_call(attn, {"W_Q": W_Q, "W_K": W_K}, (x,))


# --- generators -----------------------------------------------------------------------------


def test_generator_counts_and_shapes():
    W_Q, W_K = pair(7, 3, heads=2)
    for group, n in (("gl", 9), ("orthogonal", 3)):
        D_Q, D_K = generators(W_Q, W_K, group)
        assert D_Q.shape == D_K.shape == (2, n, 7, 3)
    assert torch.equal(skew_basis(3) + skew_basis(3).mT, torch.zeros(3, 3, 3, dtype=DT))
    with pytest.raises(ValueError, match="unknown gauge group"):
        generators(W_Q, W_K, "so")


def test_orthogonal_generators_are_tangent_and_symmetric_gl_ones_normal():
    W_Q, W_K = pair(9, 4)
    D_Q, D_K = orthogonal_generators(W_Q, W_K)
    assert float(torch.maximum(tangency_error(W_Q, D_Q), tangency_error(W_K, D_K)).max()) <= TOLERANCE
    # The GL directions split: X skew gives the O(r) ones (tangent), X symmetric is normal.
    G_Q, G_K = gl_generators(W_Q, W_K)
    X = gauge.gl_basis(4)
    symmetric = (X + X.mT) / 2
    S_Q, S_K = W_Q.unsqueeze(-3) @ symmetric, -(W_K.unsqueeze(-3) @ symmetric)
    assert float(torch.maximum(normality_error(W_Q, S_Q), normality_error(W_K, S_K)).max()) <= TOLERANCE
    # ...and a generic GL direction is neither
    assert float(tangency_error(W_Q, G_Q).max()) > 0.5 and float(normality_error(W_Q, G_Q).max()) > 0.5


def test_generators_are_the_velocities_of_the_orbits():
    W_Q, W_K = pair(6, 3, heads=1, frames=False)
    X = torch.randn(3, 3, generator=gen(3), dtype=DT)
    h = 1e-6
    plus, minus = (
        gl_action(W_Q, W_K, torch.linalg.matrix_exp(h * X)),
        gl_action(W_Q, W_K, torch.linalg.matrix_exp(-h * X)),
    )
    velocity = [(a - b) / (2 * h) for a, b in zip(plus, minus)]
    expected = (W_Q @ X, -(W_K @ X.mT))
    for v, e in zip(velocity, expected):
        assert torch.allclose(v, e, atol=1e-8)


@pytest.mark.parametrize("stiefel", [True, False])
def test_orthogonal_orbit_is_a_symmetry_of_attention(stiefel):
    attn, x = attention_pair(stiefel)
    W_Q, W_K = attn.W_Q.detach(), attn.W_K.detach()
    y = output_with(attn, x, W_Q, W_K)
    Omega = torch.randn(3, 4, 4, generator=gen(5), dtype=DT)
    Omega = Omega - Omega.mT
    for t in (-3.0, 0.1, 1.0, 7.0):
        R_Q, R_K = orthogonal_action(W_Q, W_K, Omega, t)
        assert float((output_with(attn, x, R_Q, R_K) - y).abs().max()) <= TOLERANCE * float(y.abs().max())
    if stiefel:  # frames stay frames
        assert float(orthonormality_error(R_Q).max()) <= TOLERANCE


def test_gl_orbit_is_a_symmetry_of_attention():
    attn, x = attention_pair(False)
    with torch.no_grad():
        attn.W_Q.copy_(torch.randn(attn.W_Q.shape, generator=gen(8), dtype=DT) / 2)
        attn.W_K.copy_(torch.randn(attn.W_K.shape, generator=gen(9), dtype=DT) / 2)
    W_Q, W_K = attn.W_Q.detach(), attn.W_K.detach()
    y = output_with(attn, x, W_Q, W_K)
    A = torch.linalg.matrix_exp(torch.randn(3, 4, 4, generator=gen(10), dtype=DT))  # invertible, cond ~ e^4
    A_Q, A_K = gl_action(W_Q, W_K, A)
    assert float((output_with(attn, x, A_Q, A_K) - y).abs().max()) <= TOLERANCE * float(y.abs().max())
    # the attention scale 1/√r is fixed by the head width: a non-symmetry (W_Q A, W_K) does move it
    assert float((output_with(attn, x, A_Q, W_K) - y).abs().max()) > 1e-3


def test_model_loss_is_unchanged_along_both_orbits():
    data = gauge.GaugeProblem().data()
    for stiefel, group in ((True, "orthogonal"), (True, "gl"), (False, "gl")):
        model = gauge.trained_model(stiefel, steps=20)
        with torch.no_grad():
            base = gauge.task_loss(model, data.train_x, data.train_y).item()
        curves = gauge.orbit_curves(model, group, seed=4)
        on = gauge.loss_along(model, data, curves["gauge"], [-1.5, 0.4, 2.0])
        off = gauge.loss_along(model, data, curves["off"], [-1.5, 0.4, 2.0])
        assert float((on - base).abs().max()) <= TOLERANCE * base
        assert float((off - base).abs().max()) > 1e-3 * base
        with torch.no_grad():  # loss_along leaves the model as it was
            assert gauge.task_loss(model, data.train_x, data.train_y).item() == base


# --- projections ----------------------------------------------------------------------------


@given(st.integers(1, 5), st.integers(0, 3), st.integers(0, 10_000), st.booleans())
def test_closed_form_projection_is_the_orthogonal_projection(r, extra, seed, frames):
    d = r + extra
    W_Q, W_K = pair(d, r, heads=2, frames=frames, seed=seed)
    g = gen(seed + 1)
    G_Q, G_K = torch.randn(2, d, r, generator=g, dtype=DT), torch.randn(2, d, r, generator=g, dtype=DT)
    for group in gauge.GROUPS:
        if group == "orthogonal" and r == 1:
            assert generators(W_Q, W_K, group)[0].shape[-3] == 0  # O(1) is discrete: no directions
        P_Q, P_K = project_gauge(W_Q, W_K, G_Q, G_K, group)
        D_Q, D_K = generators(W_Q, W_K, group)
        for h in range(2):
            if D_Q.shape[-3] == 0:
                ref = (torch.zeros(d, r, dtype=DT),) * 2
            else:
                ref = project_onto_span(G_Q[h], G_K[h], D_Q[h], D_K[h])
            scale = 1 + float(torch.linalg.matrix_norm(G_Q[h]) + torch.linalg.matrix_norm(G_K[h]))
            assert (
                float(torch.linalg.matrix_norm(P_Q[h] - ref[0]) + torch.linalg.matrix_norm(P_K[h] - ref[1]))
                <= 1e-9 * scale
            )
        # the rest is orthogonal to every direction; projecting twice changes nothing
        R_Q, R_K = remove_gauge(W_Q, W_K, G_Q, G_K, group)
        if D_Q.shape[-3]:
            assert float(direction_cosines(W_Q, W_K, R_Q, R_K, group).max()) <= 1e-9
        again = project_gauge(W_Q, W_K, P_Q, P_K, group)
        assert float((again[0] - P_Q).abs().max() + (again[1] - P_K).abs().max()) <= 1e-9 * scale


def test_gauge_component_of_a_gauge_direction_is_one():
    W_Q, W_K = pair(8, 3)
    for group in gauge.GROUPS:
        D_Q, D_K = generators(W_Q, W_K, group)
        c = gauge_component(W_Q, W_K, D_Q[:, 1], D_K[:, 1], group)
        assert torch.allclose(c, torch.ones(3, dtype=DT), atol=1e-12)
    zero = torch.zeros_like(W_Q)
    assert torch.equal(gauge_component(W_Q, W_K, zero, zero, "gl"), torch.zeros(3, dtype=DT))


def test_orthogonal_projection_of_a_tangent_vector_stays_tangent():
    W_Q, W_K = pair(10, 4)
    g = gen(2)
    xi_Q = project_tangent(W_Q, torch.randn(W_Q.shape, generator=g, dtype=DT))
    xi_K = project_tangent(W_K, torch.randn(W_K.shape, generator=g, dtype=DT))
    for P, W in zip(remove_gauge(W_Q, W_K, xi_Q, xi_K, "orthogonal"), (W_Q, W_K)):
        assert float(tangency_error(W, P).max()) <= TOLERANCE


@pytest.mark.parametrize("tangent,expected", [(False, (96, 80, 16)), (True, (76, 70, 6))])
def test_product_kernel_is_exactly_the_gauge(tangent, expected):
    W_Q, W_K = pair(12, 4, heads=1, frames=tangent, seed=1)
    k = gauge.product_kernel(W_Q[0], W_K[0], tangent=tangent)
    assert (k["domain_dim"], k["image_dim"], k["kernel_dim"]) == expected
    assert k["gauge_dim"] == expected[2] and k["span_residual"] <= 1e-10 and k["smallest_nonzero"] > 1e-3


# --- gradients ------------------------------------------------------------------------------


@pytest.mark.parametrize("stiefel", [True, False])
def test_gradient_has_no_gauge_component_and_a_penalised_one_has(stiefel):
    data = gauge.GaugeProblem().data()
    model = gauge.make_model(stiefel, 3, random_point=not stiefel)
    plain = gauge.model_gauge_components(model, data)
    assert float(plain["component"].max()) <= TOLERANCE and float(plain["cosine"].max()) <= TOLERANCE
    broken = gauge.model_gauge_components(model, data, loss_fn=gauge.query_penalty(1))
    assert float(broken["component"].min()) > 1e-3


def test_remove_gauge_from_grads_removes_only_rounding_and_the_penalty_part():
    data = gauge.GaugeProblem().data()
    for stiefel in (True, False):
        model = gauge.make_model(stiefel, 1)
        gauge.task_loss(model, data.train_x, data.train_y).backward()
        attn = gauge.attention_modules(model)[0][1]
        before = attn.W_Q.grad.clone()
        removed = gauge.remove_gauge_from_grads_(model)
        assert float(removed.max()) <= TOLERANCE
        assert float((attn.W_Q.grad - before).abs().max()) <= 1e-15 * float(before.abs().max()) * 100
        model.zero_grad()
        gauge.query_penalty(0)(model, data.train_x, data.train_y).backward()
        assert float(gauge.remove_gauge_from_grads_(model).min()) > 1e-3
        # what is left, as the optimizer sees it, has no gauge component
        W_Q, W_K, G_Q, G_K = attn.W_Q.detach(), attn.W_K.detach(), attn.W_Q.grad, attn.W_K.grad
        if is_frame(attn.W_Q):
            G_Q, G_K = project_tangent(W_Q, G_Q), project_tangent(W_K, G_K)
        assert float(gauge_component(W_Q, W_K, G_Q, G_K, "orthogonal" if stiefel else "gl").max()) <= TOLERANCE


def test_attention_modules_needs_attention():
    with pytest.raises(ValueError, match="no stiefel_core.attention.SelfAttention"):
        gauge.attention_modules(torch.nn.Linear(3, 3))
    with pytest.raises(ValueError, match="only for stiefel=False"):
        gauge.make_model(True, random_point=True)


# --- certificates ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def symmetry():
    return gauge.certify_symmetry()


@pytest.fixture(scope="module")
def components():  # trained once for the certificate and the figures, as the chapter does
    return gauge.gradient_components()


@pytest.fixture(scope="module")
def gradients(components):
    return gauge.certify_gauge_gradients(components)


@pytest.fixture(scope="module")
def runs():
    return gauge.projected_runs()


@pytest.fixture(scope="module")
def projected(runs):
    return gauge.certify_projected_run(runs)


def test_symmetry_certificate_passes(symmetry):
    assert symmetry.passed, str(symmetry)
    assert symmetry.kernel_dims == symmetry.gauge_dims == (16, 6)
    assert symmetry.image_dims == (80, 70)
    text = str(symmetry)
    assert "≤ 1e-12" in text and "passed" in text


def test_symmetry_certificate_fails_on_a_non_invariant_loss():
    broken = gauge.certify_symmetry(n_curves=1, loss_fn=gauge.query_penalty(0))
    checks = broken.checks()
    assert not broken.passed
    orbits = {name.split()[-2]: passed for name, passed in checks.items() if "orbits" in name}
    assert orbits == {"O(r)": False, "GL(r)": False}


def test_gradient_certificate_passes(gradients):
    assert gradients.passed, str(gradients)
    assert gradients.worst <= TOLERANCE
    assert gradients.checkpoints == (0, 10, 20, 30, 40, 50, 60)
    assert min(gradients.control_stiefel, gradients.control_euclidean) > 1e-3


def test_gradient_certificate_fails_on_a_non_invariant_loss():
    broken = gauge.certify_gauge_gradients(n_random_points=2, steps=10, every=10, loss_fn=gauge.query_penalty(3))
    assert not broken.passed
    assert broken.stiefel_random > 1e-3 and broken.euclidean_random > 1e-3 and broken.stiefel_run > 1e-3


def test_projected_run_matches_the_plain_run(projected):
    assert projected.passed, str(projected)
    assert projected.steps >= 100
    for x in (
        projected.stiefel_param_deviation,
        projected.stiefel_loss_deviation,
        projected.euclidean_param_deviation,
        projected.euclidean_loss_deviation,
    ):
        assert x <= RUN_TOLERANCE
    assert projected.stiefel_loss[1] < 0.1 * projected.stiefel_loss[0]


def test_optimizer_steps_are_not_gauge_free(projected):
    """The finding beside the certificate: the *steps* carry a gauge part (per-frame scaling and
    momentum for StiefelAdam; per-entry scaling for AdamW), and projecting them does change the run."""
    assert projected.stiefel_update_component > 0.05 and projected.euclidean_update_component > 0.05
    assert projected.stiefel_update_removed_deviation > 1e-3 and projected.euclidean_update_removed_deviation > 1e-3
    assert set(projected.update_summary()) and "StiefelAdam" in next(iter(projected.update_summary()))


def test_first_stiefel_step_gauge_part_comes_from_per_frame_scaling():
    data = gauge.GaugeProblem().data()
    model = gauge.make_model(True, 0)
    ((W_Q, W_K, g_Q, g_K),) = gauge.head_gradients(model, gauge.task_loss(model, data.train_x, data.train_y))
    assert float(gauge_component(W_Q, W_K, g_Q, g_K, "orthogonal").max()) <= TOLERANCE
    predicted = float(frame_normalized_component(W_Q, W_K, g_Q, g_K, "orthogonal").max())
    measured = float(gauge.projected_run(True, remove="none")["update_component"][0])
    # equal but for Adam's eps = 1e-8 beside √v ≈ 2e-4 (a relative 1e-4 here)
    assert predicted > 0.05 and math.isclose(measured, predicted, rel_tol=1e-3)


def test_projected_run_rejects_unknown_modes():
    with pytest.raises(ValueError, match="remove="):
        gauge.projected_run(True, remove="both")


# --- figures and the explorer ---------------------------------------------------------------


def test_figures_draw(runs, components):
    from stiefel_book.plots import gauge as plots

    assert len([ax for ax in plots.orbit_grid(ts=(1.0,)).axes if ax.get_visible()]) == 2
    assert len(plots.projected_run_figure(runs).axes) == 3
    assert len(plots.update_projection_figure(runs).axes) == 2
    assert len(plots.gauge_components_figure(components).axes) == 1


def test_figures_are_readable_at_the_column_width(components):
    from stiefel_book.plots import gauge as plots

    from figure_checks import cut_off, legends_over_axes, overlapping, smallest_font

    runs = gauge.projected_runs(steps=3)
    components = plots.gauge_components_figure(components)
    (ax,) = components.axes
    assert overlapping(components, ax.get_xticklabels()) == []  # seven groups side by side, none over another
    for fig in (plots.projected_run_figure(runs), plots.update_projection_figure(runs)):
        assert len(fig.legends) == 1 and legends_over_axes(fig) == []  # one legend, under the panels
        assert not cut_off(fig)
    for fig in (components, plots.projected_run_figure(runs), plots.update_projection_figure(runs)):
        assert fig.get_figwidth() <= 6.9 and smallest_font(fig) >= 7


def test_orbit_explorer_moves_along_the_orbit_without_a_kernel():
    from stiefel_book.widgets.gauge import orbit_explorer

    ex = orbit_explorer(t=0.5)
    assert ex.calls == 1 and re.search(r"relative change ≤ 1e-12 +True", ex.text)
    ex.set(t=1.5)
    data = ex.result[2]
    assert data["t"] == 1.5 and data["change_gauge"] <= TOLERANCE and data["change_off"] > 1e-2
    (line,) = [line for ax in ex.figure.axes for line in ax.get_lines() if line.get_gid() == "current_gauge"]
    assert float(line.get_xdata()[0]) == 1.5 and abs(float(line.get_ydata()[0]) - data["loss_start"]) <= 1e-12
    ex.set(group="gl")
    assert ex.result[2]["group"] == "gl" and ex.result[2]["change_gauge"] <= TOLERANCE
    images = [o for o in ex.output.outputs if o["output_type"] == "display_data"]
    assert len(images) == 1


def test_stiefeladam_is_gauge_equivariant_and_adamw_is_not():
    cert = gauge.certify_gauge_equivariance(n_draws=1, steps=40)
    assert cert.passed, str(cert)
    assert cert.stiefel_loss_deviation <= RUN_TOLERANCE and cert.stiefel_frame_deviation <= RUN_TOLERANCE
    assert cert.euclidean_orthogonal_loss_deviation > 1e-4 and cert.euclidean_gl_loss_deviation > 1e-4
    with pytest.raises(ValueError, match="kind="):
        gauge.moved_start_deviation(True, "so")


def test_moved_start_figure_draws():
    from stiefel_book.plots import gauge as plots

    from figure_checks import cut_off, legends_over_axes, smallest_font

    fig = plots.moved_start_figure(gauge.moved_start_runs(steps=20, n_draws=2))
    assert len(fig.axes) == 1 and len(fig.axes[0].get_lines()) == 7  # two draws of three cases, and 1e-10
    assert len(fig.legends) == 1 and legends_over_axes(fig) == []  # under the axes, over no curve
    assert "(2 draws)" in fig.legends[0].get_texts()[0].get_text()
    assert not cut_off(fig) and fig.get_figwidth() <= 6.9 and smallest_font(fig) >= 7


# --- the package: one module per idea, one public surface -----------------------------------


def test_package_reexports_every_public_name_from_the_module_that_defines_it():
    for name in gauge.__all__:
        obj = getattr(gauge, name)
        if callable(obj):  # functions and classes; the rest are constants
            assert obj.__module__.startswith("stiefel_book.gauge."), name


def test_a_certificate_and_a_figure_share_their_training_runs(monkeypatch):
    from stiefel_book.plots import gauge as plots

    runs = gauge.projected_runs(steps=3)
    assert gauge.certify_projected_run(runs) == gauge.certify_projected_run(
        steps=3
    )  # handed runs: the same certificate
    monkeypatch.setattr(gauge.runs, "projected_run", lambda *a, **k: pytest.fail("a figure trained a run of its own"))
    plots.projected_run_figure(runs)  # what the certificate read: no run of its own
    plots.update_projection_figure(runs)
