"""The engine every experiment is declared on: what an experiment is and its two profiles
(:mod:`.registry`), the runner that makes its missing runs, resumable (:mod:`.run`), one study that
sweeps W_Q, W_K's rate by the declared ladder rule, resolves the choices and judges them on paired
seeds (:mod:`.study`), and arms over a grid of one setting (:mod:`.grid`). It knows no task and no
experiment: the catalogue of named experiments (:mod:`stiefel_book.experiments`) declares them on it."""
