"""The relatives' comparison as the chapter "Among its relatives" frames it: the arms in the
chapter's order, the peers and the references they are measured against, the ingredient
comparisons (what each difference a − b isolates) and what each verdict of one says, by the
retired rule (:func:`reading`) and under a declared family (:func:`family_reading`). Constants
and string rules only: it reads no results."""

from __future__ import annotations

__all__ = [
    "ARMS",
    "PEERS",
    "REFERENCES",
    "TUNED_PEERS",
    "INGREDIENTS",
    "READINGS",
    "FAMILY_READINGS",
    "reading",
    "family_reading",
]

ARMS = ("baseline", "stiefel", "muon", "muon_no_decay", "geoopt_radam", "per_entry", "orthogonal_param")  # the
# chapter's order: experiments.peers.PEER_ARMS (a test holds them equal; this module loads no torch)
PEERS = ("per_entry", "muon", "muon_no_decay", "geoopt_radam", "orthogonal_param")
REFERENCES = ("stiefel", "baseline")
INGREDIENTS = (  # (a, b, what a − b isolates)
    ("stiefel", "per_entry", "scalar (per-frame) against per-entry second moments, the rest of the rule the same"),
    (
        "stiefel",
        "geoopt_radam",
        "the Stiefel rule against the standard Riemannian Adam (canonical metric, Cayley retraction, no trust region)",
    ),
    ("muon", "baseline", "orthogonalised updates on unconstrained weights against AdamW (both decayed)"),
    ("stiefel", "muon_no_decay", "a constraint on the weights against orthogonal updates alone, neither decayed"),
    ("muon_no_decay", "muon", "weight decay off an orthogonal-update optimizer's W_Q, W_K"),
    ("orthogonal_param", "baseline", "the constraint by parametrization, stepped by AdamW, against AdamW"),
    ("stiefel", "orthogonal_param", "the Stiefel rule against the same constraint stepped through a parametrization"),
)


TUNED_PEERS = (*PEERS, "cayley_adam")  # the relatives judged at their tuned W_Q, W_K lrs (grokking_fair_peers)


READINGS = {  # (a, b) of INGREDIENTS -> what each verdict of a − b says
    ("stiefel", "per_entry"): {
        "higher": "the scalar (per-frame) second moment matters: per-entry moments cost accuracy",
        "lower": "per-entry moments help: the scalar moment is not what earns the rule's result",
        "tie": "scalar or per-entry moments: no measurable difference here",
    },
    ("stiefel", "geoopt_radam"): {
        "higher": "the Stiefel rule beats the standard Riemannian Adam on the same constraint",
        "lower": "the standard Riemannian Adam beats the Stiefel rule on the same constraint",
        "tie": "the Stiefel rule and the standard Riemannian Adam: no measurable difference",
    },
    ("muon", "baseline"): {
        "higher": "orthogonalised updates alone beat AdamW",
        "lower": "orthogonalised updates alone do worse than AdamW",
        "tie": "orthogonalised updates alone: no measurable difference from AdamW",
    },
    ("stiefel", "muon_no_decay"): {
        "higher": "the constraint on the weights matters beyond orthogonal updates",
        "lower": "orthogonal updates without the constraint do better than the constrained rule",
        "tie": "constraint on the weights or orthogonal updates alone: no measurable difference",
    },
    ("muon_no_decay", "muon"): {
        "higher": "decay on Muon's unconstrained W_Q, W_K costs accuracy",
        "lower": "decay on Muon's W_Q, W_K helps",
        "tie": "decay on Muon's W_Q, W_K: no measurable effect",
    },
    ("orthogonal_param", "baseline"): {
        "higher": "the constraint alone, stepped by AdamW through a parametrization, beats AdamW",
        "lower": "the constraint by parametrization does worse than AdamW",
        "tie": "the constraint by parametrization: no measurable difference from AdamW",
    },
    ("stiefel", "orthogonal_param"): {
        "higher": "how the constrained step is taken matters: the Stiefel rule beats the parametrization",
        "lower": "the parametrization beats the Stiefel rule on the same constraint",
        "tie": "the Stiefel rule or the parametrization: no measurable difference",
    },
}


def reading(row: dict) -> str:
    """What one :func:`peers.ingredient_rows` row says, by the fixed rule of :data:`READINGS`."""
    if row["verdict"] == "untested":
        n = row["comparison"].n if row["comparison"] is not None else 0
        return f"untested ({n} paired seed(s); a verdict needs 3)"
    return READINGS[(row["a"], row["b"])][row["verdict"]]


FAMILY_READINGS = {  # (a, b) of INGREDIENTS -> what "equivalent" says (higher and lower: READINGS)
    ("stiefel", "per_entry"): "scalar or per-entry second moments: equivalent here",
    ("stiefel", "geoopt_radam"): "the Stiefel rule and the standard Riemannian Adam: equivalent here",
    ("muon", "baseline"): "orthogonalised updates alone and AdamW: equivalent here",
    ("stiefel", "muon_no_decay"): "the constraint on the weights and orthogonal updates alone: equivalent here",
    ("muon_no_decay", "muon"): "decay on Muon's W_Q, W_K: no effect beyond the margin",
    ("orthogonal_param", "baseline"): "the constraint by parametrization and AdamW: equivalent here",
    ("stiefel", "orthogonal_param"): "the Stiefel rule and the parametrization: equivalent here",
}


def family_reading(row: dict, label) -> str:
    """What one :func:`family_ingredient_rows` row says: higher and lower by :data:`READINGS`,
    equivalent by its own sentence, inconclusive as "these runs cannot tell"."""
    r = row["row"]
    if r is None:
        return "outside the declared family: no verdict"
    if r["verdict"] in ("higher", "lower"):
        return READINGS[(row["a"], row["b"])][r["verdict"]]
    if r["verdict"] == "equivalent":
        return FAMILY_READINGS[(row["a"], row["b"])]
    return f"inconclusive: these runs cannot tell {label(row['a'])} from {label(row['b'])}"
