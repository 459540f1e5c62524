"""CIFAR-10 configurations shrunk to seconds (160 training images, a 16-wide model), shared by
the tests that train on :func:`conftest.jpeg_copy`."""

from stiefel_book.experiments import get_config

TINY = dict(
    train_size=160,
    test_size=20,
    batch_size=16,
    epochs=2,
    d_model=16,
    n_heads=2,
    depth=2,
    checkpoint_every=1,
    log_every=1,
    seeds=(0, 1),
)


def tiny(name="cifar10", **overrides):
    """Experiment ``name``'s ``ci`` config with :data:`TINY` and ``overrides``."""
    return get_config(name, "ci", **{**TINY, **overrides})
