"""Shared test settings and fixtures: hypothesis's profile, GPU tests skipped with a visible
reason (``STIEFEL_TEST_DEVICE=cpu`` rehearses them on the CPU instead: see ``tests/test_gpu.py``),
temporary results, checkpoints and CIFAR-10 folders, and an interrupted run."""

import contextlib
import os

import numpy as np
import pytest
import torch
from hypothesis import settings
from PIL import Image

from stiefel_book.data import CLASSES

settings.register_profile("default", deadline=None, max_examples=40, derandomize=True)
settings.load_profile("default")


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available() or os.environ.get("STIEFEL_TEST_DEVICE") == "cpu":
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU: run `pytest -m gpu` on a machine that has one")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def generator():
    return torch.Generator().manual_seed(1234)


@pytest.fixture(scope="session")
def jpeg_copy(tmp_path_factory):
    """``train/<class>/*.jpg`` (16 a class) and ``test/<class>/*.jpg`` (2 a class) of noise
    whose mean colour depends on the class, so that there is something to learn."""
    root = tmp_path_factory.mktemp("cifar10-jpeg")
    rng = np.random.default_rng(0)
    for split, count in (("train", 16), ("test", 2)):
        for label, name in enumerate(CLASSES):
            folder = root / split / name
            folder.mkdir(parents=True)
            for i in range(count):
                pixels = rng.integers(0, 256, (32, 32, 3)) // 2 + label * 12
                Image.fromarray(pixels.astype(np.uint8)).save(folder / f"{i:04d}.jpg")
    return root


@pytest.fixture
def isolated(tmp_path, monkeypatch, jpeg_copy):
    """Results, checkpoints and the CIFAR-10 cache in a temporary folder, never beside the book;
    CIFAR-10 read from :func:`jpeg_copy`."""
    monkeypatch.setenv("STIEFEL_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv("STIEFEL_CHECKPOINTS", str(tmp_path / "checkpoints"))
    monkeypatch.setenv("STIEFEL_CIFAR10", str(jpeg_copy))
    monkeypatch.setenv("STIEFEL_CACHE", str(tmp_path / "cache"))
    return tmp_path


@pytest.fixture
def interrupt(monkeypatch):
    """``with interrupt(module, epoch): ...``: training through ``module.fit`` stops at ``epoch``
    with a KeyboardInterrupt, as a killed process would (its checkpoints up to there on disk);
    the block must end so, and ``module.fit`` is itself again after it."""

    @contextlib.contextmanager
    def interrupted(module, epoch: int):
        real_fit = module.fit

        def interrupted_fit(model, optimizer, step, *args, **kwargs):
            def failing(e, logging):
                if e == epoch:
                    raise KeyboardInterrupt
                return step(e, logging)

            return real_fit(model, optimizer, failing, *args, **kwargs)

        monkeypatch.setattr(module, "fit", interrupted_fit)
        try:
            with pytest.raises(KeyboardInterrupt):
                yield
        finally:
            monkeypatch.setattr(module, "fit", real_fit)

    return interrupted
