"""A small pre-LayerNorm causal transformer with attention written out explicitly.

softmax(QK^T / sqrt(d_head) + mask) V is spelled out because PyTorch's fused CPU attention
kernel has no forward-mode derivative, and POLCA needs forward-mode JVPs through the model.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from iclr26 import validation as V


class ExplicitSelfAttention(nn.Module):
    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        d_model = V.check_int(d_model, "d_model", low=1)
        n_heads = V.check_int(n_heads, "n_heads", low=1)
        if d_model % n_heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by n_heads ({n_heads})")
        self.n_heads = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not isinstance(x, torch.Tensor) or x.dim() != 3 or x.shape[-1] != self.out.in_features:
            raise ValueError(f"x must be a (batch, time, {self.out.in_features}) tensor")
        B, T, D = x.shape
        h = self.n_heads
        q, k, v = self.qkv(x).split(D, dim=-1)
        q, k, v = (t.reshape(B, T, h, D // h).transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(-1, -2) / math.sqrt(D // h)
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        scores = scores.masked_fill(causal, float("-inf"))
        y = torch.softmax(scores, dim=-1) @ v
        return self.out(y.transpose(1, 2).reshape(B, T, D))


class Block(nn.Module):
    def __init__(self, d_model: int, n_heads: int, d_mlp: int) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = ExplicitSelfAttention(d_model, n_heads)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, d_mlp), nn.GELU(), nn.Linear(d_mlp, d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class TinyTransformer(nn.Module):
    """Token + learned position embeddings, ``n_layers`` pre-LN blocks, tied-free LM head."""

    def __init__(
        self,
        vocab: int,
        max_len: int,
        d_model: int = 64,
        n_heads: int = 4,
        d_mlp: int = 256,
        n_layers: int = 2,
    ) -> None:
        super().__init__()
        vocab = V.check_int(vocab, "vocab", low=1)
        max_len = V.check_int(max_len, "max_len", low=1)
        d_model = V.check_int(d_model, "d_model", low=1)
        d_mlp = V.check_int(d_mlp, "d_mlp", low=1)
        n_layers = V.check_int(n_layers, "n_layers", low=0)
        self.vocab, self.max_len = vocab, max_len
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList(Block(d_model, n_heads, d_mlp) for _ in range(n_layers))
        self.ln = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        if not isinstance(tokens, torch.Tensor):
            raise TypeError(f"tokens must be a torch.Tensor, got {type(tokens).__name__}")
        if tokens.dim() != 2 or tokens.shape[1] > self.max_len or tokens.numel() == 0:
            raise ValueError(
                f"tokens must be (batch, time) with 1 <= time <= {self.max_len}, "
                f"got shape {tuple(tokens.shape)}"
            )
        if tokens.is_floating_point() or tokens.dtype == torch.bool:
            raise TypeError(f"tokens must be integer token ids, got {tokens.dtype}")
        low, high = int(tokens.min()), int(tokens.max())
        if low < 0 or high >= self.vocab:
            raise ValueError(f"tokens must lie in [0, {self.vocab}), got [{low}, {high}]")
        T = tokens.shape[1]
        x = self.tok(tokens) + self.pos(torch.arange(T, device=tokens.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))
