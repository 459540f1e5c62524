"""Shared test settings: float64 determinism, and GPU tests skipped with a visible reason
(``STIEFEL_TEST_DEVICE=cpu`` rehearses them on the CPU instead: see ``tests/test_gpu.py``)."""

import os

import pytest
import torch
from hypothesis import settings

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


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """Results and checkpoints in a temporary folder, never beside the book."""
    monkeypatch.setenv("STIEFEL_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv("STIEFEL_CHECKPOINTS", str(tmp_path / "checkpoints"))
    return tmp_path
