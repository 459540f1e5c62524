"""Named experiments, each with a ``ci`` and a ``full`` profile, run into results files.

    python -m stiefel_book run grokking --profile full            # every arm and seed, resumable
    python -m stiefel_book run grokking --arms stiefel --seeds 3   # one shard of the sweep
    torchrun --nproc-per-node 4 -m stiefel_book run grokking --profile full   # seeds shared out

Shards write one results file in turn (under a file lock), so they merge as they finish.

``STIEFEL_PROFILE`` picks the profile when none is given: unset, ``full`` where CUDA is
available and ``ci`` elsewhere.
"""

from __future__ import annotations

import importlib

# Each name and its home module. The registry and runner (.runner) import every experiment, and torch with
# them: they load on first use, so that the light modules of this package (grid, registry, the configs)
# import without torch.
_HOMES = {
    "Experiment": "..engine.registry",
    "PROFILES": "..engine.registry",
    "EXPERIMENTS": ".runner",
    "default_profile": ".runner",
    "get_config": ".runner",
    "run_experiment": ".runner",
    "run_live": ".runner",
    "json_safe": "..results",
    "_as_json": ".runner",
    "load_results": "..results",
}
__all__ = [name for name in _HOMES if not name.startswith("_")]


def __getattr__(name: str):
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + __all__)
