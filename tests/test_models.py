"""PatchTransformer's Block module: the same state_dict keys, parameter order and values, and a
bit-identical forward, as the ModuleDict of strings it replaced (so results reproduce and
checkpoints written before still load)."""

import torch
from torch import nn

from stiefel_book.models import PatchTransformer
from stiefel_core.attention import SelfAttention


def reference_blocks(d_model: int, n_heads: int, depth: int, mlp_ratio: int, stiefel: bool) -> nn.ModuleList:
    """The blocks as they were built before :class:`Block`: a ModuleDict keyed by strings."""
    return nn.ModuleList(
        nn.ModuleDict(
            {
                "norm1": nn.LayerNorm(d_model),
                "attn": SelfAttention(d_model, n_heads, stiefel=stiefel),
                "norm2": nn.LayerNorm(d_model),
                "mlp": nn.Sequential(
                    nn.Linear(d_model, mlp_ratio * d_model), nn.GELU(), nn.Linear(mlp_ratio * d_model, d_model)
                ),
            }
        )
        for _ in range(depth)
    )


def reference_forward(model: PatchTransformer, blocks: nn.ModuleList, images: torch.Tensor) -> torch.Tensor:
    x = model.patch_embed(model.patches(images))
    x = torch.cat([model.cls.expand(x.shape[0], -1, -1), x], dim=1) + model.pos
    for block in blocks:
        x = x + block["attn"](block["norm1"](x))
        x = x + block["mlp"](block["norm2"](x))
    return model.head(model.norm(x[:, 0]))


def test_blocks_keep_the_state_dict_and_the_forward_of_the_module_dict():
    for stiefel in (True, False):
        torch.manual_seed(3)
        model = PatchTransformer(patch_size=8, d_model=16, n_heads=2, depth=2, stiefel=stiefel)
        torch.manual_seed(3)
        reference = PatchTransformer(patch_size=8, d_model=16, n_heads=2, depth=2, stiefel=stiefel)
        torch.manual_seed(3)  # the same draws in the same order: rebuild the old structure from the seed
        nn.Linear(3 * 64, 16), nn.Parameter(torch.randn(1, 17, 16) * 0.02)  # patch_embed, pos: as __init__ draws them
        reference.blocks = reference_blocks(16, 2, 2, 2, stiefel)
        new, old = model.state_dict(), reference.state_dict()
        assert list(new) == list(old)  # keys, in order: old checkpoints load
        assert [n for n, _ in model.named_parameters()] == [n for n, _ in reference.named_parameters()]
        assert all(torch.equal(new[k], old[k]) for k in new)  # a seed builds the same weights
        images = torch.randn(4, 3, 32, 32)
        with torch.no_grad():
            assert torch.equal(model(images), reference_forward(reference, reference.blocks, images))
        model.load_state_dict(old)  # a checkpoint of the old layout loads strictly
