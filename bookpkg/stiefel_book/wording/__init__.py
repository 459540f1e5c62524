"""The book's words for what :mod:`stiefel_book.findings` computes: the sentences and Markdown that
several chapters (and the claims table, the intro's pages) share, built from the findings' numbers,
rows and verdict words. One module per topic: :mod:`.tuned` (a family's rows as a reader reads
them), :mod:`.fair_fight` (rates and comparisons of the fair fight), :mod:`.p97` (grokking at
p = 97 at tuned rates), :mod:`.cifar10` (CIFAR-10's rows and answers, and the readings its
chapters state), :mod:`.regimes` (the decay map's count and the controls' readings) and
:mod:`.routing` (the routing tasks' verdicts, notes and summary). Wording imports findings;
findings never import wording (``tests/test_layers.py``)."""

from . import cifar10, fair_fight, p97, regimes, routing, tuned

__all__ = ["cifar10", "fair_fight", "p97", "regimes", "routing", "tuned"]
