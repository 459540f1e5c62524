"""Float64 numerical certificates for the five propositions about ``StiefelAdam``.

Each ``certify_*`` function runs the real optimizer (:class:`~stiefel_core.optim.StiefelAdam`)
in float64 with fixed seeds and returns a small frozen dataclass of numbers. Its ``passed``
property says whether every check held; ``checks()`` names them; ``summary()`` gives the
numbers rounded (or as ``"≤ 1e-12"``), so a notebook prints the same text on every machine.
``print(certificate)`` prints that summary.

The five propositions, in our words (the preprint's full text is not available to us):

1. **Steepest descent in the embedded metric.** The direction of the step, ``ξ/‖ξ‖``, is
   ``η* = -P_W(G)/‖P_W(G)‖``, the unit tangent vector of fastest first-order decrease
   ``-⟨G, η⟩``, and that decrease is ``‖P_W G‖_F`` (:func:`certify_steepest_descent`).
2. **Independent of gradient scale.** With ``eps = 0``, multiplying the loss by any ``c > 0``
   leaves whole trajectories unchanged (:func:`certify_scale_invariance`).
3. **Well conditioned.** The retraction solves with ``I + ξᵀξ``, whose condition number is at
   most ``1 + Δ²`` under a trust radius ``Δ`` (:func:`certify_conditioning`).
4. **Exactly O(d)-equivariant.** The trajectory from ``(QW, QG_t)`` is ``Q`` times the trajectory
   from ``(W, G_t)`` (:func:`certify_equivariance`).
5. **Weight decay has identically zero Riemannian gradient.** ``P_W(λW) = 0`` on St(d, r), so
   decay cannot move a frame, while it shrinks a Euclidean ``W_Q`` (:func:`certify_weight_decay`).

The optimizer never exposes its tangent step ``ξ``; the certificates recover it from two
consecutive frames with :func:`inverse_retract_polar`, so what is certified is the step the
optimizer actually took.

The package has one module per proposition, named after its chapter (``p1_steepest_descent`` to
``p5_weight_decay``); :mod:`~stiefel_book.certify.base` holds the base class and the rounded text,
:mod:`~stiefel_book.certify.trajectory` the test problem and the trajectory runner they share,
:mod:`~stiefel_book.certify.curves` what the chapters' figures and explorers draw.
"""

from __future__ import annotations

from ..threads import one_thread
from .base import DTYPE, TOLERANCE, Certificate  # noqa: F401 (DTYPE: re-exported, kept out of __all__)
from .p1_steepest_descent import (
    P1_SHAPES,  # noqa: F401 (re-exported as certify.P1_SHAPES, kept out of __all__)
    SteepestDescentCertificate,
    certify_steepest_descent,
    sampled_decrease_ratios,
    steepest_tangent_direction,
)
from .p2_scale_invariance import (
    P2_SCALES,  # noqa: F401 (re-exported as certify.P2_SCALES, kept out of __all__)
    ScaleInvarianceCertificate,
    certify_scale_invariance,
    displacement_by_scale,
)
from .p3_conditioning import ConditioningCertificate, certify_conditioning, condition_history, retraction_condition
from .p4_equivariance import EquivarianceCertificate, certify_equivariance, equivariance_deviation, haar_orthogonal
from .p5_weight_decay import (
    P5_SHAPES,  # noqa: F401 (re-exported as certify.P5_SHAPES, kept out of __all__)
    WeightDecayCertificate,
    certify_weight_decay,
    normal_ratio,
    weight_decay_training_run,
)
from .trajectory import QuadraticProblem, inverse_retract_polar, run_trajectory

# DTYPE, P1_SHAPES, P2_SCALES and P5_SHAPES are not in __all__ (as before), but stay reachable as certify.X
__all__ = [
    "TOLERANCE",
    "Certificate",
    "SteepestDescentCertificate",
    "ScaleInvarianceCertificate",
    "ConditioningCertificate",
    "EquivarianceCertificate",
    "WeightDecayCertificate",
    "certify_steepest_descent",
    "certify_scale_invariance",
    "certify_conditioning",
    "certify_equivariance",
    "certify_weight_decay",
    "certify_all",
    "QuadraticProblem",
    "run_trajectory",
    "inverse_retract_polar",
    "steepest_tangent_direction",
    "sampled_decrease_ratios",
    "retraction_condition",
    "condition_history",
    "displacement_by_scale",
    "haar_orthogonal",
    "equivariance_deviation",
    "normal_ratio",
    "weight_decay_training_run",
    "one_thread",
]


def certify_all() -> dict[str, Certificate]:
    """All five certificates with their default settings, by proposition."""
    return {
        "P1": certify_steepest_descent(),
        "P2": certify_scale_invariance(),
        "P3": certify_conditioning(),
        "P4": certify_equivariance(),
        "P5": certify_weight_decay(),
    }
