"""stiefel_core: Stiefel frames for attention's W_Q and W_K, and the Riemannian Adam that trains them.

The library needs only torch::

    from stiefel_core import stiefelize, configure_optimizer
    stiefelize(model)                            # Q, K of every attention -> per-head frames
    optimizer = configure_optimizer(model, lr=1e-3, weight_decay=0.1)
"""

__version__ = "0.1.0"

_EXPORTS = {  # name -> module; imported on first use, so that `import stiefel_core` stays light
    "StiefelAdam": "optim",
    "ManifoldMuon": "manifold_muon",
    "FrameParameter": "frames",
    "is_frame": "frames",
    "declare_frames": "frames",
    "retag_frames": "frames",
    "FrameTagWarning": "frames",
    "NonFiniteGradientError": "step_checks",
    "FrameOffManifoldError": "step_checks",
    "InvalidHyperparameterError": "step_checks",
    "InvalidOptimizerStateError": "step_checks",
    "check_step": "step_checks",
    "CombinedOptimizer": "combined",
    "configure_optimizer": "combined",
    "split_frames": "combined",
    "stiefelize": "convert",
    "unstiefelize": "convert",
    "check_state_dict": "convert",
    "ConversionMismatchError": "convert",
    "Conversion": "convert",
    "SelfAttention": "attention",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module 'stiefel_core' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + __all__)
