"""Everything that reads results: pure functions of the results dicts they are handed (they open
no file), from which chapters print tables, verdicts and claim lines. One module per chapter
(:mod:`.cifar10`, its long runs
:mod:`.long_training` and size sweep :mod:`.long_sizes`, :mod:`.ablation`, :mod:`.grokking`,
:mod:`.regimes` and its map :mod:`.decay_map`, :mod:`.peers`) and :mod:`.runs`, the starts a
file finished and whether its runs are paired; :mod:`.summary` gives the intro's "What we found"
and the regimes chapter's takeaways (the claims' verdicts in words are the claims table's,
:mod:`stiefel_book.claim_verdicts`)."""

from . import (
    ablation,
    cifar10,
    decay_map,
    grokking,
    long_sizes,
    long_training,
    peers,
    regimes,
    runs,
    summary,
)

__all__ = [
    "ablation",
    "cifar10",
    "decay_map",
    "grokking",
    "long_sizes",
    "long_training",
    "peers",
    "regimes",
    "runs",
    "summary",
]
