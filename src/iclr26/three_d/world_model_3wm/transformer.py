"""The random-access transformer (component (c) of 3WM / LRAS): a decoder-only GPT with rotary
position embeddings and pre-LayerNorm blocks over pointer-content token sequences. Its loss is
the cross-entropy of the *generated content* tokens only (pointers and given tokens are
conditioning), and sampling fills in content tokens after pointers supplied in any order.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V

__all__ = ["RandomAccessTransformer", "rope"]


def rope(x: torch.Tensor, offset: int = 0, base: float = 10000.0) -> torch.Tensor:
    """Rotary embedding of ``x`` (B, heads, L, dim) at positions ``offset .. offset + L - 1``."""
    x = V.check_tensor(x, "x", ndim=4, floating=True)
    offset = V.check_int(offset, "offset", low=0)
    base = V.check_scalar(base, "base", low=1.0, low_open=True)
    _, _, length, dim = x.shape
    if dim % 2:
        raise ValueError(f"x must have an even last dimension, got {dim}")
    half = dim // 2
    freqs = base ** (-torch.arange(half, dtype=x.dtype, device=x.device) / half)
    pos = torch.arange(offset, offset + length, dtype=x.dtype, device=x.device)
    ang = pos[:, None] * freqs[None]
    cos, sin = ang.cos(), ang.sin()
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1)


class _Block(nn.Module):
    def __init__(self, d: int, heads: int, mlp: int):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, mlp), nn.GELU(), nn.Linear(mlp, d))

    def forward(self, x: torch.Tensor, cache: list | None = None) -> torch.Tensor:
        """``cache`` (a 2-list, filled in place) holds this block's keys/values of earlier
        positions, so that decoding feeds only the new tokens."""
        b, length, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).reshape(b, length, 3, self.heads, -1).unbind(2)
        q, k, v = (a.transpose(1, 2) for a in (q, k, v))
        past = 0 if cache is None or cache[0] is None else cache[0].shape[2]
        q, k = rope(q, past), rope(k, past)
        if past:
            k = torch.cat([cache[0], k], 2)
            v = torch.cat([cache[1], v], 2)
        if cache is not None:
            cache[0], cache[1] = k, v
        if past == 0:
            att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            ar = torch.arange(past + length, device=x.device)
            allowed = ar[None] <= past + ar[:length, None]
            att = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
        x = x + self.proj(att.transpose(1, 2).reshape(b, length, d))
        return x + self.mlp(self.ln2(x))


class RandomAccessTransformer(nn.Module):
    """Decoder-only transformer: ``vocab_size`` tokens, width ``d``, ``layers`` pre-LN blocks
    of ``heads`` RoPE attention heads, MLP width ``mlp_ratio * d``."""

    def __init__(
        self, vocab_size: int, d: int = 128, layers: int = 4, heads: int = 4, mlp_ratio: int = 4
    ):
        super().__init__()
        self.vocab_size = V.check_int(vocab_size, "vocab_size", low=2)
        self.d = V.check_int(d, "d", low=2)
        self.n_layers = V.check_int(layers, "layers", low=1)
        self.heads = V.check_int(heads, "heads", low=1)
        mlp_ratio = V.check_int(mlp_ratio, "mlp_ratio", low=1)
        if self.d % self.heads or (self.d // self.heads) % 2:
            raise ValueError(f"d must be a multiple of 2 * heads, got d={d}, heads={heads}")
        self.embed = nn.Embedding(self.vocab_size, self.d)
        self.blocks = nn.ModuleList(
            _Block(self.d, self.heads, mlp_ratio * self.d) for _ in range(self.n_layers)
        )
        self.ln_f = nn.LayerNorm(self.d)
        self.head = nn.Linear(self.d, self.vocab_size, bias=False)
        nn.init.normal_(self.embed.weight, std=0.02)

    def _check_tokens(self, tokens: torch.Tensor) -> torch.Tensor:
        tokens = V.check_tensor(tokens, "tokens", ndim=2, integer=True)
        if tokens.min() < 0 or tokens.max() >= self.vocab_size:
            raise ValueError(f"tokens must lie in [0, {self.vocab_size - 1}]")
        return tokens

    def forward(self, tokens: torch.Tensor, cache: list | None = None) -> torch.Tensor:
        """Next-token logits ``(B, L, vocab)`` for tokens ``(B, L)`` (causal). With ``cache``
        (from :meth:`new_cache`) the tokens continue the cached sequence."""
        x = self.embed(self._check_tokens(tokens))
        if cache is not None and len(cache) != len(self.blocks):
            raise ValueError("cache must come from new_cache() of this model")
        for i, block in enumerate(self.blocks):
            x = block(x, None if cache is None else cache[i])
        return self.head(self.ln_f(x))

    def new_cache(self) -> list:
        """An empty key/value cache for incremental decoding."""
        return [[None, None] for _ in self.blocks]

    def loss(self, tokens: torch.Tensor, target_mask: torch.Tensor) -> torch.Tensor:
        """Mean cross-entropy of the tokens where ``target_mask`` (B, L) is True, each
        predicted from the tokens before it (position 0 can never be a target)."""
        tokens = self._check_tokens(tokens)
        target_mask = V.check_tensor(target_mask, "target_mask", shape=tuple(tokens.shape))
        if target_mask.dtype != torch.bool:
            raise TypeError(f"target_mask must be a bool tensor, got {target_mask.dtype}")
        if target_mask[:, 0].any():
            raise ValueError("target_mask must be False at position 0 (nothing precedes it)")
        if not target_mask.any():
            raise ValueError("target_mask selects no token")
        logits = self(tokens[:, :-1])
        sel = target_mask[:, 1:]
        return F.cross_entropy(logits[sel], tokens[:, 1:][sel])

    def flops_per_token(self, length: int) -> float:
        """Forward multiply-adds x 2 per token at sequence ``length`` (matmuls only)."""
        d, mlp = self.d, self.blocks[0].mlp[0].out_features
        per_layer = 2 * (3 * d * d + d * d + 2 * d * mlp) + 2 * 2 * length * d
        return float(self.n_layers * per_layer + 2 * d * self.vocab_size)
