"""The relatives under the declared families (``book/protocol.yml``: ``grokking_fair``,
``peers_grokking``, ``peers_cifar10``), in the four words of :mod:`stiefel_book.stats`: the arms
in the chapter's order, the peers and the references they are measured against, the ingredient
comparisons (what each difference a − b isolates), each read from a family's rows, the takeaways
and the claims table's line. Pure functions of the rows they are handed."""

from __future__ import annotations

from . import tuned

__all__ = ["ARMS", "PEERS", "REFERENCES", "TUNED_PEERS", "INGREDIENTS", "merged", "family_peer_rows"]
__all__ += ["family_ingredient_rows"]

ARMS = ("baseline", "stiefel", "muon", "muon_no_decay", "geoopt_radam", "per_entry", "orthogonal_param")  # the
# chapter's order: experiments.peers.PEER_ARMS (a test holds them equal; this module loads no torch)
PEERS = ("per_entry", "muon", "muon_no_decay", "geoopt_radam", "orthogonal_param")
REFERENCES = ("stiefel", "baseline")
TUNED_PEERS = (*PEERS, "cayley_adam")  # the relatives judged at their tuned W_Q, W_K lrs (grokking_fair_peers)
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


def merged(*results: dict | None) -> dict:
    """The runs of several files of one comparison (same seeds, same initial weights) as one
    results dict, the first file's config kept."""
    present = [r for r in results if r]
    return {
        "config": present[0]["config"] if present else {},
        "runs": {k: v for r in present for k, v in r["runs"].items()},
    }


def family_peer_rows(rows: list[dict], results: dict | None = None, peers: tuple[str, ...] = PEERS) -> list[dict]:
    """Each peer − each reference (the Stiefel rule, AdamW) read from a family's rows
    (:func:`fair_fight.family_rows`: four words, Holm across the family), in the chapter's order;
    with ``results``, the Kaplan-Meier median epochs to 90 % of both arms over the same seeds
    (described, not tested). A pair the family lacks is left out."""
    from .regimes import paired_seeds, survival

    out = []
    for peer in peers:
        for ref in REFERENCES:
            row = tuned.find(rows, peer, ref)
            if row is None:
                continue
            if results is not None:
                seeds = paired_seeds(results, peer, ref)
                row = {
                    **row,
                    "median": survival(results, peer, 0.9, seeds).median,
                    "reference_median": survival(results, ref, 0.9, seeds).median,
                }
            out.append(row)
    return out


def family_ingredient_rows(rows: list[dict]) -> list[dict]:
    """:data:`INGREDIENTS` read from a family's rows (``row`` ``None`` where the family does not
    hold that comparison: it is outside the declared family and gets no verdict)."""
    return [{"a": a, "b": b, "meaning": meaning, "row": tuned.find(rows, a, b)} for a, b, meaning in INGREDIENTS]
