"""The preprint's abstract: its numbers and its wording, quoted (never measured here), in one
place. Chapters, the claims table and the verdicts read them from this module, so no number
of the abstract is typed twice. The abstract itself is ``../shared/paper-abstract.md``.

The numbers are facts of the abstract; the strings below are formatted from them, in the
words the chapters and the claims table use.
"""

from __future__ import annotations

__all__ = [
    "GROKKING",
    "CIFAR10",
    "ABLATION_SHARE",
    "ABLATION",
    "CERTIFIED",
    "MECHANISM",
    "REGIMES",
    "GAUGE",
    "grokking_endpoint",
    "grokking_claim",
    "cifar10_wins",
    "cifar10_gain",
    "cifar10_claim",
    "movement_range",
    "movement_claim",
    "frozen_cost",
    "frozen_cost_signed",
    "GAP_WIDENS",
    "UNSTABLE",
    "CYCLES",
    "NOT_REPORTED",
]

# --- the numbers ---------------------------------------------------------------------------

# Grokking (the grokking chapter): one run per arm, validation accuracy at the horizon.
GROKKING = {"stiefel": 0.970, "baseline": 0.611, "epoch": 20_000}

# CIFAR-10 patches (the CIFAR-10 chapter): the paired gain, its t and wins over 12 starts, the
# fixed step's movement ratio against AdamW and what freezing the frames costs.
CIFAR10 = {"gain_pp": 8.98, "t": 60.6, "wins": 12, "starts": 12, "ratio": (24.0, 40.0), "frozen_cost_pp": 0.28}

# --- the wording ---------------------------------------------------------------------------

ABLATION_SHARE = "the whole gain; nothing measurable from the projector or equivariance"  # the ablation chapter
ABLATION = f"the scale-free step carries {ABLATION_SHARE}"
CERTIFIED = "certified in float64"  # Propositions 1-4
MECHANISM = "(the mechanism)"  # Proposition 5
REGIMES = "where weight decay drives collapse cycles (Proposition 5's mechanism)"  # the title's question
GAUGE = "a direction along which the loss is invariant carries no gradient"  # the gauge chapter
RELATIVES = "(not compared: AdamW is its only baseline)"  # the peers chapter
ROUTING = "(not tested: no task where attention must learn which token to read)"  # the routing chapter
FAIR_FIGHT = (
    "(untuned: every arm at one shared lr)"  # the fair-fight chapter: the preprint tuned no baseline's W_Q, W_K lr
)
GAP_WIDENS = "widens rather than erodes"  # the CIFAR-10 sweep
UNSTABLE = "unstable (the preprint's caution)"  # the grokking endpoint
CYCLES = "drive the baseline's instability"  # collapse cycles
NOT_REPORTED = "(not reported)"


def _accuracy(arm: str) -> str:
    """``"97.0%"``: an arm's accuracy at the grokking horizon."""
    return f"{100 * GROKKING[arm]:.1f}%"


def grokking_endpoint() -> str:
    """``"Stiefel 97.0%, baseline 61.1% (one run)"`` (the grokking chapter's verdicts)."""
    return f"Stiefel {_accuracy('stiefel')}, baseline {_accuracy('baseline')} (one run)"


def grokking_claim() -> str:
    """The claims table's grokking entry. Chapters: intro, grokking, cifar10_patches, ablation."""
    return (
        f"one run: {_accuracy('stiefel')} vs the baseline's {_accuracy('baseline')} "
        f"at epoch {GROKKING['epoch']:,} (unstable endpoint)"
    )


def cifar10_wins() -> str:
    """``"12/12"``: the starts the Stiefel rule won (the CIFAR-10 chapter)."""
    return f"{CIFAR10['wins']}/{CIFAR10['starts']}"


def _t_and_wins() -> str:
    """``"t = 60.6, 12/12"``: the CIFAR-10 gain's paired t and the starts it won."""
    return f"t = {CIFAR10['t']:g}, {cifar10_wins()}"


def cifar10_gain() -> str:
    """``"+8.98 pp, t = 60.6, 12/12"`` (the CIFAR-10 chapter's verdicts)."""
    return f"{CIFAR10['gain_pp']:+.2f} pp, {_t_and_wins()}"


def cifar10_claim() -> str:
    """The claims table's CIFAR-10 gain entry. Chapters: intro, grokking, cifar10_patches, ablation."""
    return (
        f"{CIFAR10['gain_pp']:+.2f} pp over {CIFAR10['starts']} paired starts ({_t_and_wins()}); "
        "the gap widens with data"
    )


def movement_range() -> str:
    """``"24-40x"``: how many times less a fixed step moves than AdamW (the CIFAR-10 chapter)."""
    low, high = CIFAR10["ratio"]
    return f"{low:g}-{high:g}x"


def movement_claim() -> str:
    """The claims table's fixed-step entry. Chapters: intro, grokking, cifar10_patches, ablation."""
    return f"{movement_range()} less per step than AdamW; freezing the frames costs {frozen_cost()}"


def frozen_cost() -> str:
    """``"0.28 pp"``: what freezing the frames costs (the CIFAR-10 chapter)."""
    return f"{CIFAR10['frozen_cost_pp']:g} pp"


def frozen_cost_signed() -> str:
    """``"+0.28"``: the cost as the fixed step minus frozen frames, in pp (the CIFAR-10 chapter)."""
    return f"{CIFAR10['frozen_cost_pp']:+.2f}"
