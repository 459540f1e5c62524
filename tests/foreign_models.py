"""Attention modules written the way other projects write them (not with stiefel_core), for the
conversion tests: nanoGPT's block, timm's ViT attention, a grouped-query (Llama-style) attention,
torch's own modules and, when transformers is installed, a tiny randomly initialised GPT-2."""

import torch
import torch.nn.functional as F
from torch import nn


class CausalSelfAttention(nn.Module):  # nanoGPT's, shortened
    def __init__(self, n_embd=32, n_head=4):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.n_head, self.n_embd = n_head, n_embd

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class Block(nn.Module):  # nanoGPT's
    def __init__(self, n_embd=32, n_head=4):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(n_embd), nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class TimmAttention(nn.Module):  # timm's ViT attention
    def __init__(self, dim=32, num_heads=4):
        super().__init__()
        self.num_heads, self.head_dim = num_heads, dim // num_heads
        self.qkv = nn.Linear(dim, dim * 3, bias=False)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4).unbind(0)
        return self.proj(F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(B, N, C))


class GroupedQueryAttention(nn.Module):  # Llama-style: fewer key/value heads
    def __init__(self, hidden_size=32, num_heads=4, num_key_value_heads=2):
        super().__init__()
        self.num_heads, self.num_key_value_heads = num_heads, num_key_value_heads
        self.head_dim = hidden_size // num_heads
        self.q_proj = nn.Linear(hidden_size, num_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(hidden_size, num_key_value_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(hidden_size, num_key_value_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(num_heads * self.head_dim, hidden_size, bias=False)

    def forward(self, x):
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        k, v = (
            p(x).view(B, T, self.num_key_value_heads, self.head_dim).transpose(1, 2) for p in (self.k_proj, self.v_proj)
        )
        groups = self.num_heads // self.num_key_value_heads
        k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o_proj(y.transpose(1, 2).reshape(B, T, -1))


class MHASelf(nn.Module):
    def __init__(self, d=32, heads=4):
        super().__init__()
        self.mha = nn.MultiheadAttention(d, heads, batch_first=True)

    def forward(self, x):
        return self.mha(x, x, x, need_weights=False)[0]


class MHACross(nn.Module):  # separate q/k/v_proj_weight: keys of another width
    def __init__(self, d=32, heads=4, kdim=24):
        super().__init__()
        self.mha = nn.MultiheadAttention(d, heads, kdim=kdim, vdim=kdim, batch_first=True)
        self.memory = nn.Linear(d, kdim)

    def forward(self, x):
        memory = self.memory(x)
        return self.mha(x, memory, memory, need_weights=False)[0]


def encoder_layer():
    return nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)


def tiny_gpt2(seed=0):
    """A randomly initialised two-layer GPT-2 (transformers; no download)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(seed)
    config = GPT2Config(
        vocab_size=64,
        n_positions=16,
        n_embd=32,
        n_layer=2,
        n_head=4,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        bos_token_id=0,
        eos_token_id=0,
    )
    return GPT2LMHeadModel(config)
