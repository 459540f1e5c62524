"""Shared test settings: float64 determinism, and GPU tests skipped with a visible reason."""

import pytest
import torch
from hypothesis import settings

settings.register_profile("default", deadline=None, max_examples=40, derandomize=True)
settings.load_profile("default")


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU: run `pytest -m gpu` on a machine that has one")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def generator():
    return torch.Generator().manual_seed(1234)
