"""Modular-arithmetic data: sizes, split, determinism, labels, errors."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from stiefel_book.data import ModularData, modular_data


def _pairs(x: torch.Tensor) -> set[tuple[int, int]]:
    return {(int(a), int(b)) for a, b, _ in x}


@settings(max_examples=30, deadline=None)
@given(p=st.integers(2, 30), fraction=st.floats(0.05, 0.95), seed=st.integers(0, 2**31))
def test_split_is_disjoint_and_covers_all_pairs(p, fraction, seed):
    n = p * p
    if not 0 < round(fraction * n) < n:
        with pytest.raises(ValueError, match="empty split"):
            modular_data(p, train_fraction=fraction, seed=seed)
        return
    data = modular_data(p, train_fraction=fraction, seed=seed)
    train, val = _pairs(data.train_x), _pairs(data.val_x)
    assert len(data.train_x) == round(fraction * n) and len(data.val_x) == n - len(data.train_x)
    assert not train & val
    assert train | val == {(a, b) for a in range(p) for b in range(p)}


def test_shapes_dtypes_and_tokens():
    data = modular_data(p=11, train_fraction=0.5, seed=3)
    assert isinstance(data, ModularData) and data.p == 11 and data.vocab_size == 12
    for x, y in ((data.train_x, data.train_y), (data.val_x, data.val_y)):
        assert x.dtype == y.dtype == torch.long and x.shape == (len(y), 3)
        assert (x[:, 2] == 11).all() and (x[:, :2] < 11).all() and (y < 11).all()
    with pytest.raises(AttributeError):  # frozen
        data.p = 5  # type: ignore[misc]


def test_defaults_follow_nanda_et_al():
    data = modular_data()
    assert data.p == 113 and len(data.train_x) == round(0.3 * 113**2)


@pytest.mark.parametrize(
    "op, rule",
    [("add", lambda a, b, p: (a + b) % p), ("sub", lambda a, b, p: (a - b) % p), ("mul", lambda a, b, p: a * b % p)],
)
def test_labels(op, rule):
    data = modular_data(p=13, op=op, train_fraction=0.4, seed=0)
    for x, y in ((data.train_x, data.train_y), (data.val_x, data.val_y)):
        for (a, b, _), label in zip(x.tolist(), y.tolist()):
            assert label == rule(a, b, 13)


def test_division_inverts_multiplication():
    data = modular_data(p=13, op="div", train_fraction=0.5, seed=1)
    x, y = torch.cat([data.train_x, data.val_x]), torch.cat([data.train_y, data.val_y])
    assert len(x) == 13 * 12 and (x[:, 1] != 0).all()
    assert ((y * x[:, 1]) % 13 == x[:, 0]).all()


def test_split_is_deterministic_per_seed():
    a, b = modular_data(p=17, seed=5), modular_data(p=17, seed=5)
    assert torch.equal(a.train_x, b.train_x) and torch.equal(a.val_y, b.val_y)
    assert not torch.equal(a.train_x, modular_data(p=17, seed=6).train_x)
    # The split ignores the global RNG state.
    torch.manual_seed(123)
    assert torch.equal(a.train_x, modular_data(p=17, seed=5).train_x)


def test_split_is_pinned():
    """The same pairs on every machine: a change here changes every grokking result."""
    data = modular_data(p=7, train_fraction=0.3, seed=0)
    assert data.train_x[:6, :2].tolist() == [[1, 4], [2, 2], [6, 1], [1, 6], [6, 5], [1, 1]]
    assert data.train_y[:6].tolist() == [5, 4, 0, 0, 4, 2]


def test_to_device_returns_a_moved_copy():
    data = modular_data(p=5, train_fraction=0.5)
    moved = data.to("cpu")
    assert isinstance(moved, ModularData) and moved.p == 5 and moved.op == "add"
    assert moved.train_x.device.type == "cpu" and torch.equal(moved.train_x, data.train_x)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"p": 1}, "at least 2"),
        ({"p": 2.5}, "integer"),
        ({"op": "pow"}, "unknown op"),
        ({"train_fraction": 0.0}, r"\(0, 1\)"),
        ({"train_fraction": 1.0}, r"\(0, 1\)"),
        ({"p": 12, "op": "div"}, "prime"),
    ],
)
def test_invalid_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        modular_data(**kwargs)
