"""The two models of the paper's experiments, each with a Stiefel and a Euclidean arm.

Both build their attention from :class:`stiefel_core.attention.SelfAttention`, so the arms
differ only in the geometry of W_Q, W_K (and so in which optimizer trains them). Built under
one torch seed, the two arms start from identical weights.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from stiefel_core.attention import SelfAttention

__all__ = ["ModularTransformer", "Block", "PatchTransformer"]


class ModularTransformer(nn.Module):
    """One-layer transformer for ``a op b mod p`` in the style of Nanda et al. (2023): the
    grokking chapter's model.

    Token and position embeddings, one attention block and one ReLU MLP, both residual and
    without LayerNorm, and an unembedding read at the last ("=") position.
    """

    def __init__(
        self,
        vocab_size: int,
        n_classes: int,
        d_model: int = 128,
        n_heads: int = 4,
        d_mlp: int = 512,
        n_ctx: int = 3,
        *,
        stiefel: bool = True,
    ):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Parameter(torch.randn(n_ctx, d_model) / d_model**0.5)
        self.attn = SelfAttention(d_model, n_heads, stiefel=stiefel, causal=True)
        self.mlp = nn.Sequential(nn.Linear(d_model, d_mlp), nn.ReLU(), nn.Linear(d_mlp, d_model))
        self.unembed = nn.Linear(d_model, n_classes, bias=False)
        nn.init.normal_(self.embed.weight, std=d_model**-0.5)

    def forward(self, tokens: Tensor) -> Tensor:
        T = tokens.shape[1]
        table = self.pos[:T, None] + self.embed.weight  # (T, V, D): every input row there can be
        # Only the last position is read, and with one layer nothing else feeds it: attention
        # queries from it alone, and projects the table rather than the batch; the MLP sees
        # the last position alone. The same logits as the full computation, a fraction of the work.
        h = table[T - 1, tokens[:, -1]].unsqueeze(1) + self.attn.forward_table(table, tokens)  # (B, 1, D)
        h = h + self.mlp(h)
        return self.unembed(h[:, 0])  # (B, n_classes)


class Block(nn.Module):
    """One pre-LayerNorm block of :class:`PatchTransformer` (the CIFAR-10 chapter): self-attention
    with per-head W_Q, W_K (frames when ``stiefel``) and a GELU MLP, each residual. Its
    submodules are ``norm1``, ``attn``, ``norm2``, ``mlp``, built in that order."""

    def __init__(self, d_model: int, n_heads: int, mlp_ratio: int, *, stiefel: bool = True):
        super().__init__()
        self.norm1 = nn.LayerNorm(d_model)
        self.attn = SelfAttention(d_model, n_heads, stiefel=stiefel)
        self.norm2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(
            nn.Linear(d_model, mlp_ratio * d_model), nn.GELU(), nn.Linear(mlp_ratio * d_model, d_model)
        )

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class PatchTransformer(nn.Module):
    """A small vision transformer on image patches (the CIFAR-10 chapter): patch embedding, a
    class token, ``depth`` pre-LayerNorm :class:`Block` s of attention and MLP, and a linear
    classifier on the class token."""

    def __init__(
        self,
        image_size: int = 32,
        patch_size: int = 4,
        channels: int = 3,
        n_classes: int = 10,
        d_model: int = 64,
        n_heads: int = 4,
        depth: int = 2,
        mlp_ratio: int = 2,
        *,
        stiefel: bool = True,
    ):
        super().__init__()
        if image_size % patch_size:
            raise ValueError(f"image_size {image_size} is not a multiple of patch_size {patch_size}")
        n_patches = (image_size // patch_size) ** 2
        self.patch_size = patch_size
        self.patch_embed = nn.Linear(channels * patch_size**2, d_model)
        self.cls = nn.Parameter(torch.zeros(1, 1, d_model))
        self.pos = nn.Parameter(torch.randn(1, n_patches + 1, d_model) * 0.02)
        self.blocks = nn.ModuleList(Block(d_model, n_heads, mlp_ratio, stiefel=stiefel) for _ in range(depth))
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, n_classes)

    def patches(self, images: Tensor) -> Tensor:
        """``(B, C, H, W)`` images to ``(B, n_patches, C p p)`` flattened patches."""
        p = self.patch_size
        B, C, H, W = images.shape
        x = images.unfold(2, p, p).unfold(3, p, p)  # (B, C, H/p, W/p, p, p)
        return x.permute(0, 2, 3, 1, 4, 5).reshape(B, (H // p) * (W // p), C * p * p)

    def forward(self, images: Tensor) -> Tensor:
        x = self.patch_embed(self.patches(images))  # (B, N, D)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos  # (B, N + 1, D)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x[:, 0]))
