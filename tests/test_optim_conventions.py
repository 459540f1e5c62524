"""torch.optim's conventions (issue 50, item 4), modelled on torch/optim/adamw.py: ``maximize``
and ``foreach`` mean what they mean there; ``fused``, ``capturable`` and ``differentiable`` are
refused with the reason (``False``/``None`` accepted, as torch's defaults); the package is typed."""

import copy
from pathlib import Path

import pytest
import torch
from torch import nn

import stiefel_core
from stiefel_core.attention import SelfAttention
from stiefel_core.combined import configure_optimizer
from stiefel_core.manifold import random_frame
from stiefel_core.optim import StiefelAdam


def frames_and_grads(seed=0):
    g = torch.Generator().manual_seed(seed)
    frames = [random_frame(12, 3, 4, generator=g), random_frame(12, 3, 2, generator=g), random_frame(9, 2, generator=g)]
    grads = [[torch.randn(f.shape, generator=g) for f in frames] for _ in range(4)]
    return frames, grads


def run(grad_sign=1.0, **options):
    frames, grads = frames_and_grads()
    params = [nn.Parameter(f.clone()) for f in frames]
    opt = StiefelAdam(params, lr=0.05, **options)
    for step in grads:
        for p, G in zip(params, step):
            p.grad = grad_sign * G
        opt.step()
    return [p.detach() for p in params]


def test_maximize_is_the_step_on_the_negated_gradient():
    for a, b in zip(run(maximize=True), run(grad_sign=-1.0)):
        assert torch.equal(a, b)


@pytest.mark.parametrize("foreach", [None, True, False])
def test_foreach_is_accepted_and_every_choice_takes_the_same_steps(foreach):
    for a, b in zip(run(foreach=foreach), run()):
        assert torch.allclose(a, b, atol=1e-6)


@pytest.mark.parametrize("option", ["fused", "capturable", "differentiable"])
def test_fused_capturable_and_differentiable_are_refused_with_the_reason(option):
    frames, _ = frames_and_grads()
    with pytest.raises(RuntimeError, match=option):
        StiefelAdam([nn.Parameter(frames[0])], **{option: True})
    StiefelAdam([nn.Parameter(frames[0])], **{option: False})  # torch's defaults are accepted


def test_configure_optimizer_maximizes_every_parameter():
    torch.manual_seed(0)
    model = nn.Sequential(SelfAttention(8, 2), nn.Flatten(), nn.Linear(8 * 3, 2))
    twin = copy.deepcopy(model)
    x = torch.randn(4, 3, 8)
    runs = []
    for m, maximize, sign in ((model, True, -1.0), (twin, False, 1.0)):
        opt = configure_optimizer(m, lr=1e-2, maximize=maximize)
        for _ in range(3):
            opt.zero_grad()
            (sign * m(x).square().mean()).backward()
            opt.step()
        runs.append([p.detach() for p in m.parameters()])
    for a, b in zip(*runs):
        assert torch.allclose(a, b, atol=1e-6)


def test_the_package_is_typed():
    assert (Path(stiefel_core.__file__).parent / "py.typed").is_file()
