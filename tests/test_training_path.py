"""The experiments' fast training path: compiled and eager runs agree and stay paired, the
per-step logging measures what the clone-based one did, the logged lr is the schedule's, and the
compile policy's errors are clear. (Resuming, older checkpoints too: ``test_resume.py``.)"""

import warnings

import pytest
import torch

from stiefel_book import compiling
from stiefel_book.tasks import cifar10
from stiefel_book.tasks.cifar10_config import lr_factors
from stiefel_book.tasks.metrics import Displacement

from tiny import tiny


def test_displacement_sums_the_steps_it_is_told_about():
    g = torch.Generator().manual_seed(0)
    A, B = torch.randn(3, 8, 2, generator=g), torch.randn(5, 4, generator=g)
    meter, norms = Displacement({"A": A, "B": B}), {"A": [], "B": []}
    for _ in range(4):
        meter.before_step()
        before = {"A": A.clone(), "B": B.clone()}
        A.add_(torch.randn(A.shape, generator=g))
        B.mul_(1.5)
        meter.after_step()
        for k, W in (("A", A), ("B", B)):
            norms[k].append(float((W - before[k]).norm()))
    means = meter.mean()
    assert means == pytest.approx({k: sum(v) / 4 for k, v in norms.items()}, rel=1e-6)
    assert meter.mean() == {"A": 0.0, "B": 0.0}  # a read starts over


def test_logged_lr_is_that_of_the_epochs_last_step(isolated):
    config = tiny(epochs=3)
    out = cifar10.train(config, "stiefel", 0, "cpu", None, False)
    factors = lr_factors(config)
    steps = len(factors) // config.epochs
    assert [r["lr"] for r in out["history"]] == [config.lr * factors[(e + 1) * steps - 1] for e in range(config.epochs)]


@pytest.mark.slow
@pytest.mark.skipif(compiling.compiler_missing("cpu") is not None, reason="no C++ compiler for inductor")
def test_compiled_and_eager_runs_agree_and_stay_paired(isolated):
    """The one compile test (the experiments' compiled path is one: ``compiling.compile_model``)."""
    config = tiny(epochs=2)
    eager = cifar10.train(config, "stiefel", 0, "cpu", None, False, compile=False)
    compiled = cifar10.train(config, "stiefel", 0, "cpu", None, False, compile=True)
    assert (eager["compiled"], compiled["compiled"]) == (False, True)
    for key in ("init_fingerprint", "order_checksum", "steps"):  # the pairing: same start, same data order
        assert compiled["final"][key] == eager["final"][key]
    for a, b in zip(eager["history"], compiled["history"]):  # two epochs: far from chaos, rounding only
        assert a.keys() == b.keys()
        for key in ("train_loss", "test_loss", "step/blocks.0.W_Q", "angle_mean/blocks.1.W_K"):
            assert b[key] == pytest.approx(a[key], rel=1e-4, abs=1e-6), key


def test_the_compile_policy(monkeypatch):
    monkeypatch.delenv("STIEFEL_COMPILE", raising=False)
    assert compiling.compile_wanted("cpu") is False and compiling.compile_wanted("cuda") is True
    assert compiling.compile_wanted("cpu", True) is True
    monkeypatch.setenv("STIEFEL_COMPILE", "1")
    assert compiling.compile_wanted("cpu") is True
    monkeypatch.setenv("STIEFEL_COMPILE", "yes")
    with pytest.raises(ValueError, match="STIEFEL_COMPILE='yes'"):
        compiling.compile_wanted("cpu")


def test_a_missing_compiler_falls_back_to_eager_with_a_notice(monkeypatch):
    monkeypatch.setenv("CXX", "no-such-compiler-here")
    compiling._notice.cache_clear()
    model = torch.nn.Linear(2, 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        forward, compiled = compiling.compile_model(model, "cpu", True)
    assert forward is model and compiled is False
    assert len(caught) == 1 and "no-such-compiler-here" in str(caught[0].message)
