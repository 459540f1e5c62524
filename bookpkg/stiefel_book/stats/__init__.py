"""Statistics for comparing optimizers run from the same starts.

- :mod:`.paired`: paired differences (``paired_comparison``), one sample's spread, and the first
  verdict rule ``direction`` (kept while chapters still use it).
- :mod:`.multiple`: Holm's adjustment within a declared family (``holm``).
- :mod:`.equivalence`: paired TOST (``tost``) and the four verdict words (``verdict``,
  ``family_verdicts``): higher, lower, equivalent, inconclusive.
- :mod:`.exact`: exact binomial tests on counts (``sign_test``, ``mcnemar_exact``).
- :mod:`.logrank`: the log-rank test on censored times with a permutation p (``permutation_logrank``).
"""

from .equivalence import TOST, VERDICTS, Verdict, family_verdicts, paired_t_p, tost, verdict, word
from .exact import McNemar, SignTest, binomial_two_sided, mcnemar_exact, sign_test
from .logrank import MAX_EXACT, LogRank, logrank_statistic, permutation_logrank
from .multiple import holm
from .paired import MIN_PAIRS_FOR_VERDICT, PairedComparison, Spread, direction, mean_and_spread, paired_comparison

__all__ = [
    "PairedComparison",
    "Spread",
    "paired_comparison",
    "mean_and_spread",
    "direction",
    "MIN_PAIRS_FOR_VERDICT",
    "holm",
    "TOST",
    "tost",
    "paired_t_p",
    "VERDICTS",
    "word",
    "verdict",
    "Verdict",
    "family_verdicts",
    "binomial_two_sided",
    "SignTest",
    "sign_test",
    "McNemar",
    "mcnemar_exact",
    "MAX_EXACT",
    "LogRank",
    "logrank_statistic",
    "permutation_logrank",
]
