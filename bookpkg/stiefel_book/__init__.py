"""stiefel_book: the machinery of the Stiefel Attention book, beside the library it studies.

The library (:mod:`stiefel_core`: frames, the optimizers that train them, ``stiefelize``) needs
torch alone and knows nothing of this package. Everything the chapters need besides lives here:
the models and data, the training loop, the experiments and their results files, the findings and
statistics that read them, the declared protocol, the claims table, plots and explorers, and the
command line (``python -m stiefel_book --help``). It imports the library, never the reverse.
"""

__version__ = "0.1.0"
