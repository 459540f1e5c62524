r"""Gauge directions of attention, and why removing them changes nothing.

A head scores the pair of tokens ``(i, j)`` by ``x_iᵀ W_Q W_Kᵀ x_j / √r``: its logits, and so
the whole model, depend on ``W_Q, W_K`` (each ``d x r``) only through the product
``M = W_Q W_Kᵀ``. Two symmetries follow, one per geometry:

- **Euclidean, GL(r).** ``(W_Q, W_K) → (W_Q A, W_K A⁻ᵀ)`` for invertible ``A`` keeps ``M``. Along
  ``A = exp(tX)``, ``X`` in gl(r), the curve leaves with velocity ``(W_Q X, -W_K Xᵀ)``: ``r²``
  gauge directions per head (:func:`gl_generators`).
- **Stiefel, O(r).** On St(d, r) x St(d, r) only ``A = R`` orthogonal keeps both factors frames
  (``A⁻ᵀ = R``): ``(W_Q R, W_K R)``, with velocities ``(W_Q Ω, W_K Ω)`` for skew ``Ω``, ``r(r-1)/2``
  per head (:func:`orthogonal_generators`). They are tangent: ``Wᵀ(WΩ) = Ω`` is skew. The other
  ``r(r+1)/2`` GL directions, ``X = S`` symmetric, are ``(W_Q S, -W_K S)``: normal to St x St.

A loss that is constant along a curve through a point has zero derivative along the curve's
velocity, so its gradient (Euclidean, or Riemannian for the Stiefel arm, since the O(r)
directions are tangent) is orthogonal to every gauge direction. This package computes the
generators, the orthogonal projection onto their span and its removal (closed forms, float64),
and three certificates:

- :func:`certify_symmetry`: the generators are symmetries, tangent or normal as stated, and
  they are *all* the symmetry there is to first order (the kernel of ``d(W_Q W_Kᵀ)``);
- :func:`certify_gauge_gradients`: the gradient's component along the gauge directions, relative
  to the gradient's norm, is at most 1e-12, at random points and along training runs, for
  both arms; a loss with a term in ``W_Q`` alone visibly fails the same check;
- :func:`certify_projected_run`: training with the gauge component removed from every gradient
  matches plain training to 1e-10 in float64 over 120 steps.

Everything here is computed in float64 on the CPU on one thread (the problems are tiny).

The package holds one idea a module: :mod:`~stiefel_book.gauge.algebra` (generators, projections,
the product's kernel), :mod:`~stiefel_book.gauge.problem` (the toy model, its loss and orbits),
:mod:`~stiefel_book.gauge.runs` (float64 training runs, remembered so that a certificate and a
figure never train twice) and :mod:`~stiefel_book.gauge.certificates`.
"""

from __future__ import annotations

from ..certify.base import TOLERANCE
from .algebra import (
    DTYPE,
    GROUPS,
    _check_group,  # noqa: F401 (kept out of __all__) the chapter's figures validate a group name with it
    direction_cosines,
    frame_normalized_component,
    gauge_component,
    generators,
    gl_action,
    gl_basis,
    gl_generators,
    normality_error,
    orthogonal_action,
    orthogonal_generators,
    product_kernel,
    project_gauge,
    project_onto_span,
    remove_gauge,
    skew_basis,
    tangency_error,
)
from .certificates import (
    RUN_TOLERANCE,
    GaugeEquivarianceCertificate,
    GaugeGradientCertificate,
    ProjectedRunCertificate,
    SymmetryCertificate,
    certify_gauge_equivariance,
    certify_gauge_gradients,
    certify_projected_run,
    certify_symmetry,
)
from .problem import (
    GaugeProblem,
    attention_modules,
    head_gradients,
    loss_along,
    make_model,
    model_gauge_components,
    orbit_curves,
    query_penalty,
    remove_gauge_from_grads_,
    task_loss,
)
from .runs import (
    DEFAULT_LR,  # noqa: F401 (not in __all__, as before, but reachable as gauge.DEFAULT_LR)
    REMOVE_MODES,
    TrainingSetting,
    gauge_components_by_point,
    gradient_components,
    moved_start_deviation,
    moved_start_runs,
    projected_run,
    projected_runs,
    run_deviation,
    trained_model,
    training_checkpoints,
    update_gauge_components,
)

__all__ = [
    "DTYPE",
    "TOLERANCE",
    "RUN_TOLERANCE",
    "GROUPS",
    "gl_basis",
    "skew_basis",
    "gl_generators",
    "orthogonal_generators",
    "generators",
    "gl_action",
    "orthogonal_action",
    "tangency_error",
    "normality_error",
    "project_gauge",
    "remove_gauge",
    "project_onto_span",
    "gauge_component",
    "direction_cosines",
    "frame_normalized_component",
    "product_kernel",
    "GaugeProblem",
    "attention_modules",
    "make_model",
    "task_loss",
    "query_penalty",
    "head_gradients",
    "model_gauge_components",
    "remove_gauge_from_grads_",
    "loss_along",
    "orbit_curves",
    "TrainingSetting",
    "training_checkpoints",
    "trained_model",
    "REMOVE_MODES",
    "run_deviation",
    "projected_runs",
    "gauge_components_by_point",
    "gradient_components",
    "projected_run",
    "update_gauge_components",
    "SymmetryCertificate",
    "GaugeGradientCertificate",
    "ProjectedRunCertificate",
    "certify_symmetry",
    "certify_gauge_gradients",
    "certify_projected_run",
    "moved_start_deviation",
    "moved_start_runs",
    "GaugeEquivarianceCertificate",
    "certify_gauge_equivariance",
]
