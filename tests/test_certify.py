"""The five certificates of stiefel_book.certify: each passes, and each fails when it should.

A certificate that could not fail would certify nothing: every one is also run on a broken
optimizer (or a broken premise) and must report ``passed = False`` there. The helpers it rests
on (the inverse retraction, the condition number, Haar rotations) are checked on their own,
and the chapters' explorers and grids are driven without a kernel.
"""

import dataclasses
import math
import re

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from stiefel_book import certify
from stiefel_book.certify import (
    TOLERANCE,
    QuadraticProblem,
    certify_conditioning,
    certify_equivariance,
    certify_scale_invariance,
    certify_steepest_descent,
    certify_weight_decay,
    inverse_retract_polar,
    retraction_condition,
)
from stiefel_core.manifold import project_tangent, random_frame, retract_polar
from stiefel_core.optim import StiefelAdam

DT = torch.float64


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


# ---------------------------------------------------------------------------------------------
# The helpers
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("d, r, size", [(3, 1, 0.3), (16, 4, 0.5), (8, 8, 2.0), (64, 8, 5.0)])
def test_inverse_retraction_recovers_the_tangent_step(d, r, size):
    W = random_frame(d, r, 3, generator=gen(), dtype=DT)
    xi = project_tangent(W, torch.randn(3, d, r, generator=gen(1), dtype=DT))
    xi = size * xi / torch.linalg.matrix_norm(xi)[:, None, None]
    recovered = inverse_retract_polar(W, retract_polar(W, xi))
    assert torch.linalg.matrix_norm(recovered - xi).max() < 1e-12 * max(1.0, size)


def test_retraction_condition_is_the_condition_number_of_I_plus_xi_t_xi():
    xi = torch.randn(5, 12, 4, generator=gen(), dtype=DT)
    eye = torch.eye(4, dtype=DT)
    expected = torch.linalg.cond(eye + xi.mT @ xi)
    assert torch.allclose(retraction_condition(xi), expected, rtol=1e-12)


def test_rank_deficient_step_reaches_the_bound_exactly():
    """A rank-one ξ of Frobenius norm Δ makes cond(I + ξᵀξ) = 1 + Δ²: the bound is tight."""
    u, v = torch.randn(12, 1, dtype=DT), torch.randn(4, 1, dtype=DT)
    xi = u @ v.T
    xi = 0.5 * xi / torch.linalg.matrix_norm(xi)
    assert math.isclose(float(retraction_condition(xi)), 1.25, rel_tol=1e-12)


def test_haar_rotations_are_orthogonal_with_both_determinants():
    Q = certify.haar_orthogonal(6, 200, generator=gen())
    assert torch.allclose(Q.mT @ Q, torch.eye(6, dtype=DT).expand(200, 6, 6), atol=1e-13)
    signs = torch.sign(torch.linalg.det(Q))
    assert (signs > 0).any() and (signs < 0).any()


def test_quadratic_problem_gradient_is_the_gradient_of_its_loss_and_rotates():
    problem = QuadraticProblem.random(2, 5, 2, steps=1, noise=0.0, seed=3)
    W = random_frame(5, 2, 2, generator=gen(), dtype=DT).requires_grad_(True)
    problem.loss(W).sum().backward()
    assert torch.allclose(W.grad, problem.gradient(W.detach(), 0), atol=1e-13)
    Q = certify.haar_orthogonal(5, 2, generator=gen(1))
    noisy = QuadraticProblem.random(2, 5, 2, steps=3, seed=3)
    assert torch.allclose(noisy.rotated(Q).gradient(Q @ W.detach(), 2), Q @ noisy.gradient(W.detach(), 2), atol=1e-13)


def test_run_trajectory_uses_the_given_optimizer_and_keeps_the_start():
    W0 = random_frame(6, 2, 2, generator=gen(), dtype=DT)
    problem = QuadraticProblem.random(2, 6, 2, 4)
    path = certify.run_trajectory(W0, problem.gradient, 4, make_optimizer=lambda ps: torch.optim.SGD(ps, lr=0.0))
    assert path.shape == (5, 2, 6, 2) and torch.equal(path[0], W0) and torch.equal(path[-1], W0)


def test_normal_ratio_is_zero_on_frames_only():
    W = random_frame(10, 3, 4, generator=gen(), dtype=DT)
    assert certify.normal_ratio(W).max() < 1e-14
    assert certify.normal_ratio(1.1 * W).min() > 0.1  # off the manifold λW is not normal


# ---------------------------------------------------------------------------------------------
# P1: steepest descent
# ---------------------------------------------------------------------------------------------


def test_p1_certificate_passes():
    cert = certify_steepest_descent()
    assert cert.passed, str(cert)
    assert cert.n_beating == 0 and cert.n_sampled == 20_000
    assert cert.best_near_ratio <= 1 + TOLERANCE
    assert cert.best_uniform_ratio[-1] < 0.5  # in St(64, 8) a random direction is nearly useless


@pytest.mark.parametrize("broken", [{"second_moment": "entry"}, {"projector": "euclidean"}])
def test_p1_fails_for_an_update_that_is_not_steepest_descent(broken):
    cert = certify_steepest_descent(shapes=((5, 2), (16, 4)), n_samples=500, steps=3, **broken)
    assert not cert.passed
    assert cert.direction_error > 1e-3


# ---------------------------------------------------------------------------------------------
# P2: scale invariance
# ---------------------------------------------------------------------------------------------


def test_p2_certificate_passes():
    cert = certify_scale_invariance()
    assert cert.passed, str(cert)
    assert cert.scales[0] == 1e-8 and cert.scales[-1] == 1e8
    assert abs(cert.fixed_slope - 1) < 0.01 and cert.fixed_ratio > 1e11


def test_p2_fails_with_adams_eps_at_small_scales():
    cert = certify_scale_invariance(scales=(1e-8, 1.0), steps=10, eps=1e-8)
    assert not cert.passed
    assert cert.max_deviation > 1e-3


def test_p2_fails_for_the_fixed_step_rule():
    cert = certify_scale_invariance(scales=(1e-2, 1.0, 1e2), steps=10, step_rule="fixed")
    assert not cert.passed


# ---------------------------------------------------------------------------------------------
# P3: conditioning
# ---------------------------------------------------------------------------------------------


def test_p3_certificate_passes_and_the_cap_binds():
    cert = certify_conditioning()
    assert cert.passed, str(cert)
    assert cert.bound == 1.25
    assert abs(cert.max_step_norm - 0.5) < 1e-12  # lr = 1 is large: every step is capped
    assert cert.uncapped_max > 2 * cert.bound  # without the cap the condition number grows


@pytest.mark.parametrize("radius", [0.1, 1.0, 2.0])
def test_p3_bound_holds_for_other_radii(radius):
    assert certify_conditioning(radius, steps=10).passed


def test_p3_fails_without_a_trust_region():
    cert = certify_conditioning(None, bound_radius=0.5, steps=10)
    assert not cert.passed
    assert cert.observed_max > cert.bound


def test_p3_needs_a_radius_to_state_its_bound():
    with pytest.raises(ValueError, match="trust radius"):
        certify_conditioning(None)


def test_p3_condition_grows_with_lr_without_a_cap():
    small, large = (float(certify.condition_history(lr, None, steps=3)["condition"].max()) for lr in (0.01, 1.0))
    assert small < 1.01 < 2.0 < large


# ---------------------------------------------------------------------------------------------
# P4: equivariance
# ---------------------------------------------------------------------------------------------


def test_p4_certificate_passes():
    cert = certify_equivariance()
    assert cert.passed, str(cert)
    assert cert.entry_deviation > 0.05  # visibly broken by a per-entry second moment
    assert cert.euclidean_projector_deviation <= TOLERANCE


def test_p4_fails_for_a_per_entry_second_moment():
    cert = certify_equivariance(2, steps=10, second_moment="entry")
    assert not cert.passed


def test_p4_fails_for_a_deliberately_broken_update():
    """Adam (per-entry, coordinate-wise) is not O(d)-equivariant; nor is a StiefelAdam that
    adds a fixed coordinate direction to every gradient."""
    cert = certify_equivariance(2, steps=10, make_optimizer=lambda ps: torch.optim.Adam(ps, lr=0.05))
    assert not cert.passed

    class Biased(StiefelAdam):
        @torch.no_grad()
        def step(self, closure=None):
            for p in self.param_groups[0]["params"]:
                p.grad[..., 0, :] += 1.0  # prefers the first coordinate axis
            return super().step(closure)

    cert = certify_equivariance(2, steps=10, make_optimizer=lambda ps: Biased(ps, lr=0.05, eps=0.0))
    assert not cert.passed and cert.max_deviation > 1e-3


# ---------------------------------------------------------------------------------------------
# P5: weight decay
# ---------------------------------------------------------------------------------------------


def test_p5_certificate_passes():
    cert = certify_weight_decay()
    assert cert.passed, str(cert)
    assert cert.argument_bit_identical
    assert all(abs(n - math.sqrt(8)) < 1e-6 for n in cert.stiefel_norms)
    assert cert.euclidean_norms[-1] < 0.25 * cert.euclidean_norms[0]


def test_p5_fails_when_the_step_is_not_projected():
    """With the Euclidean projector, a decay gradient λW added to G moves the frames."""
    cert = certify_weight_decay(projector="euclidean", steps=20, frames_per_shape=2)
    assert not cert.passed
    assert cert.coupled_deviation > 1e-6


def test_p5_contrast_fails_without_decay():
    """With no decay there is no shrinkage to attribute to it: the contrast check fails."""
    cert = certify_weight_decay(weight_decay=0.0, steps=60, frames_per_shape=2)
    contrast = [passed for name, passed in cert.checks().items() if name.startswith("decay, not the loss")]
    assert contrast == [False]
    assert not cert.passed


def test_training_runs_are_remembered_and_copied():
    a = certify.weight_decay_training_run(True, steps=5)
    a["W_Q_norm"].zero_()
    b = certify.weight_decay_training_run(True, steps=5)
    assert b["W_Q_norm"][0] > 2.8 and b["frames_are_frames"]


# ---------------------------------------------------------------------------------------------
# The certificates' contract: frozen, rounded, printable
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_certificates():
    return [
        certify_steepest_descent(shapes=((5, 2),), n_samples=100, steps=2),
        certify_scale_invariance(scales=(1e-3, 1e3), steps=5),
        certify_conditioning(steps=5),
        certify_equivariance(1, steps=5),
        certify_weight_decay(steps=60, frames_per_shape=2),
    ]


def test_certificates_are_frozen_and_their_summaries_are_rounded(small_certificates):
    long_float = re.compile(r"\d\.\d{7,}")  # raw float reprs would differ between machines
    for cert in small_certificates:
        with pytest.raises(dataclasses.FrozenInstanceError):
            cert.tolerance = 1.0
        text = str(cert)
        assert type(cert).__name__ in text and "passed" in text
        assert not long_float.search(text), text
        assert set(cert.checks()) and isinstance(cert.passed, bool)


def test_a_failing_certificate_shows_the_failing_value():
    cert = certify_scale_invariance(scales=(1e-8, 1.0), steps=5, eps=1e-8)
    assert "(> 1e-12)" in str(cert)


# ---------------------------------------------------------------------------------------------
# The chapters' explorers (plain functions) and static grids
# ---------------------------------------------------------------------------------------------


def test_explorer_views_report_what_they_draw():
    from stiefel_book.widgets import propositions as views

    fig, text, data = views.steepest_descent_view(d=8, r=2)
    assert data["direction_error"] <= TOLERANCE and data["best_sample"] < 1.0 and "St(8, 2)" in text
    fig, text, data = views.scale_view(log10_scale=6.0)
    assert data["deviation"] <= TOLERANCE
    fig, text, data = views.scale_view(log10_scale=-8.0, eps=1e-8)
    assert data["deviation"] > 1e-3
    fig, text, data = views.conditioning_view(log10_lr=1.0, trust_radius=0.25)
    assert data["max_condition"] <= data["bound"] * (1 + TOLERANCE)
    fig, text, data = views.conditioning_view(log10_lr=1.0, trust_radius=None)
    assert data["max_condition"] > 2 and "none" in text
    fig, text, data = views.equivariance_view("entry", "tangent", seed=2)
    assert data["max_deviation"] > 1e-3
    fig, text, data = views.weight_decay_view(weight_decay=0.5)
    assert abs(data["stiefel"]["final_norm"] - data["orthonormal_norm"]) < 1e-12
    assert data["euclidean"]["final_norm"] < 1.0
    plt.close("all")


def test_explorers_redraw_when_a_control_moves():
    from stiefel_book.widgets import propositions as views

    ex = views.scale_explorer()
    ex.set(step_rule="fixed", log10_scale=-4.0)
    assert ex.result[2]["deviation"] > 1e-3 and "fixed" in ex.text
    ex = views.equivariance_explorer()
    assert ex.result[2]["max_deviation"] <= TOLERANCE
    ex.set(second_moment="entry")
    assert ex.result[2]["max_deviation"] > 1e-3
    for make in (views.steepest_descent_explorer, views.conditioning_explorer):
        assert make().calls == 1
    plt.close("all")


@pytest.mark.parametrize(
    "name, panels",
    [("steepest_descent_grid", 4), ("scale_grid", 6), ("conditioning_grid", 4), ("equivariance_grid", 4)],
)
def test_static_grids_draw_one_panel_per_setting(name, panels):
    from stiefel_book.plots import propositions as figures

    fig = getattr(figures, name)()
    assert sum(ax.get_visible() for ax in fig.axes) == panels
    plt.close(fig)


def test_package_reexports_every_public_name_from_the_module_that_defines_it():
    from stiefel_book import threads

    assert certify.one_thread is threads.one_thread  # kept for old imports
    for name in certify.__all__:
        obj = getattr(certify, name)
        if callable(obj) and name != "one_thread":  # functions and classes; the rest are constants
            assert obj.__module__.startswith("stiefel_book.certify"), name


def test_conditioning_explorer_figure_follows_the_learning_rate():
    # issue 51 item 7: the lr slider changes the figure, not only the readout
    from stiefel_book.widgets import propositions as views

    def drawn(log10_lr):
        fig, _, data = views.conditioning_view(log10_lr=log10_lr, trust_radius=0.5)
        lines = [line.get_ydata() for ax in fig.axes for line in ax.get_lines()]
        return data, np.concatenate([np.asarray(y, dtype=float).ravel() for y in lines])

    (slow, slow_lines), (fast, fast_lines) = drawn(-2.0), drawn(-1.25)
    assert slow_lines.shape == fast_lines.shape and not np.allclose(slow_lines, fast_lines)
    assert len(slow["loss"]) == 31 and fast["final_loss"] < slow["final_loss"]  # a longer step goes further down
    plt.close("all")
