"""Named experiments, each with a ``ci`` and a ``full`` profile, run into results files.

    python -m stiefel_core run grokking --profile full            # every arm and seed, resumable
    python -m stiefel_core run grokking --arms stiefel --seeds 3   # one shard of the sweep
    torchrun --nproc-per-node 4 -m stiefel_core run grokking --profile full   # seeds shared out

Shards write one results file in turn (under a file lock), so they merge as they finish.

``STIEFEL_PROFILE`` picks the profile when none is given: unset, ``full`` where CUDA is
available and ``ci`` elsewhere.
"""

from __future__ import annotations

import importlib

__all__ = [
    "Experiment",
    "EXPERIMENTS",
    "PROFILES",
    "default_profile",
    "get_config",
    "run_experiment",
    "run_live",
    "load_results",
    "json_safe",
]

# The registry and runner (.runner) import every experiment, and torch with them: they load on first use, so
# that the light modules of this package (grid, selection, the configs) import without torch.
_RUNNER = frozenset(__all__) | {"_as_json"}


def __getattr__(name: str):
    if name in _RUNNER:
        return getattr(importlib.import_module(".runner", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + __all__)
