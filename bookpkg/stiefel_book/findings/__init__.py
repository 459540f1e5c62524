"""Everything that reads results: pure functions of the results dicts they are handed (they open
no file), from which chapters, the claims table and the pages print tables and verdicts. One module per chapter
(:mod:`.cifar10`, its long runs
:mod:`.long_training` and size sweep :mod:`.long_sizes`, :mod:`.ablation`, :mod:`.grokking`,
:mod:`.regimes` and its map :mod:`.decay_map`, :mod:`.peers`) and :mod:`.runs`, the starts a
file finished and whether its runs are paired. They return numbers, rows and verdict words; the
sentences several chapters share are :mod:`stiefel_book.wording`'s (which imports findings, never the
other way), the claims' lines and verdicts in words the claims table's
(:mod:`stiefel_book.claim_measures`, :mod:`stiefel_book.claim_verdicts`)."""

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
]
