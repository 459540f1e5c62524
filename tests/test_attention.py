"""Self-attention with Stiefel W_Q, W_K, and its Euclidean twin."""

import pytest
import torch

from stiefel_core.attention import SelfAttention
from stiefel_core.frames import FrameParameter, is_frame
from stiefel_core.manifold import orthonormality_error


def build(stiefel, seed=0, **kw):
    torch.manual_seed(seed)
    return SelfAttention(24, 3, stiefel=stiefel, **kw)


def test_frames_start_on_the_manifold_and_are_tagged():
    layer = build(True)
    assert isinstance(layer.W_Q, FrameParameter) and is_frame(layer.W_K)
    assert layer.W_Q.shape == (3, 24, 8)
    assert orthonormality_error(layer.W_Q.detach()).max() < 1e-5
    assert not is_frame(layer.W_V.weight)


def test_the_two_arms_share_shapes_and_their_start():
    a, b = build(True), build(False)
    assert not is_frame(b.W_Q)
    for (name_a, p), (name_b, q) in zip(a.named_parameters(), b.named_parameters()):
        assert name_a == name_b and torch.equal(p, q)
    x = torch.randn(2, 7, 24)
    assert torch.equal(a(x), b(x))


def test_forward_matches_explicit_attention():
    layer = build(True, causal=True)
    x = torch.randn(2, 6, 24)
    weights = layer.attention_weights(x)  # (B, H, T, T)
    v = layer.W_V(x).view(2, 6, 3, 8).transpose(1, 2)
    expected = layer.W_O((weights @ v).transpose(1, 2).reshape(2, 6, 24))
    assert torch.allclose(layer(x), expected, atol=1e-5)
    assert torch.allclose(weights.sum(-1), torch.ones(2, 3, 6), atol=1e-6)


def test_causal_attention_ignores_the_future():
    layer = build(True, causal=True)
    x = torch.randn(1, 8, 24)
    y = x.clone()
    y[:, 5:] = torch.randn(1, 3, 24)
    assert torch.allclose(layer(x)[:, :5], layer(y)[:, :5], atol=1e-6)
    assert not torch.allclose(build(True)(x)[:, :5], build(True)(y)[:, :5], atol=1e-6)


def test_bad_configuration_and_input_are_refused():
    with pytest.raises(ValueError, match="d_head"):
        SelfAttention(8, 1, d_head=16)
    with pytest.raises(ValueError, match="expected input"):
        build(True)(torch.randn(2, 5, 23))


@pytest.mark.parametrize("causal", [True, False])
def test_last_position_shortcuts_match_the_full_output(causal):
    layer = build(True, causal=causal, bias=True).double()
    table = torch.randn(3, 11, 24, dtype=torch.float64)  # (T, V, D): token v at position t
    tokens = torch.randint(0, 11, (40, 3))
    x = table[torch.arange(3), tokens]  # (B, T, D)
    full = layer(x)[:, -1:]
    assert torch.allclose(layer(x, last_only=True), full, atol=1e-12)
    assert torch.allclose(layer.forward_table(table, tokens), full, atol=1e-12)
    # and the gradients reach the table as they reach x
    table.requires_grad_(True)
    layer.forward_table(table, tokens).square().sum().backward()
    x = table.detach()[torch.arange(3), tokens].requires_grad_(True)
    layer(x)[:, -1:].square().sum().backward()
    expected = torch.zeros_like(table).index_put_((torch.arange(3).expand(40, 3), tokens), x.grad, accumulate=True)
    assert torch.allclose(table.grad, expected, atol=1e-10)
    with pytest.raises(ValueError, match="tokens must have shape"):
        layer.forward_table(table, tokens[:, :2])


def test_the_modular_model_reads_the_last_position_as_a_full_pass_would():
    from stiefel_book.models import ModularTransformer

    torch.manual_seed(0)
    model = ModularTransformer(14, 13, 24, 3, 48).double()
    tokens = torch.cat([torch.randint(0, 13, (30, 2)), torch.full((30, 1), 13)], 1)
    h = model.embed(tokens) + model.pos[:3]
    h = h + model.attn(h)  # every position, as a model with more layers would need
    expected = model.unembed((h + model.mlp(h))[:, -1])
    assert torch.allclose(model(tokens), expected, atol=1e-12)
