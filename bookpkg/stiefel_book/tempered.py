"""Attention with a learned per-head logit scale, and optionally QK-norm: the arms that separate a
frame's *scale* from its *orthonormality* (issue 28).

Head h scores ``s_h c_h q̂ k̂ᵀ / √r``: ``s_h`` is the learned logit scale (``logit_scale``, an
inverse temperature as CLIP's ``logit_scale``, initialised to 1), ``c_h`` a fixed scale
(``base_scale``, a buffer). With ``qk_norm`` the queries and keys are RMS-normalised over each
head's ``r = d_head`` entries (``q̂ = q / rms(q)``, no learned gain), the QK-norm of OLMo 2 and of
the modded-nanogpt record; without it ``q̂, k̂ = q, k``. ``c_h = 1`` leaves the initial scores
exactly the plain attention's; :meth:`TemperedAttention.calibrate_base_scale_` chooses ``c_h``
so that QK-norm's initial scores have the plain attention's root mean square (no per-head scalar
can do more: the norm removes each token's own ‖q‖, ‖k‖ from its score).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from stiefel_core.attention import SelfAttention

__all__ = ["TemperedAttention"]


class TemperedAttention(SelfAttention):
    """:class:`SelfAttention` whose head h multiplies its scores by ``logit_scale[h] * base_scale[h]``,
    after an RMSNorm of q and k over ``d_head`` when ``qk_norm``. Its other arguments are
    :class:`SelfAttention`'s; W_Q, W_K are frames when ``stiefel``."""

    def __init__(self, d_model: int, n_heads: int, d_head: int | None = None, *, qk_norm: bool = False, **options):
        super().__init__(d_model, n_heads, d_head, **options)
        self.qk_norm = qk_norm
        self.logit_scale = nn.Parameter(torch.ones(n_heads))  # s_h, learned
        self.register_buffer("base_scale", torch.ones(n_heads))  # c_h, fixed

    @classmethod
    def from_attention(cls, attn: SelfAttention, *, qk_norm: bool = False) -> TemperedAttention:
        """A :class:`TemperedAttention` with ``attn``'s settings and weights (``s = c = 1``), made
        without drawing from torch's random generator."""
        with torch.random.fork_rng(devices=[]):
            new = cls(
                attn.d_model,
                attn.n_heads,
                attn.d_head,
                qk_norm=qk_norm,
                stiefel=attn.stiefel,
                causal=attn.causal,
                bias=attn.W_V.bias is not None,
                dropout=attn.dropout,
            )
        missing, unexpected = new.load_state_dict(attn.state_dict(), strict=False)
        if set(missing) != {"logit_scale", "base_scale"} or unexpected:
            raise ValueError(
                f"from_attention: {type(attn).__name__} does not match (missing {missing}, unexpected {unexpected})"
            )
        W = attn.W_Q
        return new.to(device=W.device, dtype=W.dtype)

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, qk_norm={self.qk_norm}"

    def _score_inputs(self, q: Tensor, k: Tensor) -> tuple[Tensor, Tensor]:
        if self.qk_norm:
            q, k = F.rms_norm(q, (self.d_head,)), F.rms_norm(k, (self.d_head,))
        scale = (self.logit_scale * self.base_scale).to(q.dtype)  # (H,)
        return q * scale[:, None, None], k  # heads on axis -3

    @torch.no_grad()
    def calibrate_base_scale_(self, x: Tensor, *, last_only: bool = False) -> Tensor:
        """Set ``base_scale`` so that, over the inputs ``x`` ``(B, T, d_model)``, each head's scores
        (with ``logit_scale`` as it is) have the root mean square of the plain attention's
        ``q kᵀ / √r`` on the same weights; return it. ``last_only``: the last position's query alone,
        as a model that reads only that position (``forward(x, last_only=True)``); otherwise every
        query, over the keys the causal mask leaves it."""
        queries = x[:, -1:] if last_only else x
        q, k = self._heads(queries, self.W_Q), self._heads(x, self.W_K)  # (B, H, T_q, r), (B, H, T, r)
        self.base_scale.fill_(1.0)
        plain = q @ k.mT  # (B, H, T_q, T)
        q_scored, k_scored = self._score_inputs(q, k)
        ours = q_scored @ k_scored.mT
        if self.causal and not last_only:
            T = x.shape[1]
            seen = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
            plain, ours = plain[..., seen], ours[..., seen]  # (B, H, pairs)
        heads = lambda s: s.transpose(0, 1).reshape(self.n_heads, -1)  # noqa: E731  (H, everything)
        rms_plain, rms_ours = (heads(s).double().square().mean(-1).sqrt() for s in (plain, ours))
        if not bool((rms_ours > 0).all()):
            raise ValueError("calibrate_base_scale_: a head scores every pair 0 on these inputs; nothing to match")
        self.base_scale.copy_((rms_plain / rms_ours).to(self.base_scale.dtype))
        return self.base_scale.clone()
