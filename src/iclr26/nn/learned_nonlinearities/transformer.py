"""A small causal transformer whose MLP activation and attention kernel can be splines.

With ``nonlinearities=None`` it is the baseline (GeLU MLP, softmax attention); otherwise the
shared :class:`Nonlinearities` object supplies ``phi_MLP`` and ``phi_A``. The spline
parameters belong to that object, not to the model's weights, so stage I can update them on
held-out data while each model updates only its own weights.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V
from iclr26.nn.learned_nonlinearities.spline import Nonlinearities

KERNEL_EPS = 1e-6


def _guard(den: torch.Tensor) -> torch.Tensor:
    # A learned kernel may be negative or vanish: keep the sign, bound |den| away from 0.
    sign = torch.where(den < 0, -torch.ones_like(den), torch.ones_like(den))
    return den + sign * KERNEL_EPS


class SplineAttention(nn.Module):
    def __init__(self, d: int, n_heads: int, layer: int) -> None:
        super().__init__()
        if d % n_heads:
            raise ValueError("d_model must be divisible by n_heads")
        self.n_heads, self.layer = n_heads, layer
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x: torch.Tensor, nl: Nonlinearities | None) -> torch.Tensor:
        b, n, d = x.shape
        kind = "softmax" if nl is None else nl.attention
        if kind == "pre_qkv":
            phi = nl.attn_fn(self.layer)
            i = self.layer % nl.n_layers
            x = x + phi(nl.pre_scale[i] * x + nl.pre_shift[i])
        q, k, v = self.qkv(x).view(b, n, 3, self.n_heads, d // self.n_heads).permute(2, 0, 3, 1, 4)
        if kind in ("softmax", "pre_qkv"):
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            phi = nl.attn_fn(self.layer)
            mask = torch.ones(n, n, dtype=torch.bool, device=x.device).tril()
            if kind == "kernel_feature":
                scale = q.shape[-1] ** -0.25
                kernel = phi(q * scale) @ phi(k * scale).transpose(-1, -2)
            else:  # score_fn
                kernel = F.softplus(phi(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])))
            kernel = kernel * mask
            y = (kernel @ v) / _guard(kernel.sum(-1, keepdim=True))
        return self.proj(y.transpose(1, 2).reshape(b, n, d))


class SplineBlock(nn.Module):
    def __init__(self, d: int, n_heads: int, mlp_ratio: int, layer: int) -> None:
        super().__init__()
        self.layer = layer
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = SplineAttention(d, n_heads, layer)
        self.fc1, self.fc2 = nn.Linear(d, mlp_ratio * d), nn.Linear(mlp_ratio * d, d)

    def forward(self, x: torch.Tensor, nl: Nonlinearities | None) -> torch.Tensor:
        x = x + self.attn(self.ln1(x), nl)
        phi = None if nl is None else nl.mlp_fn(self.layer)
        h = self.fc1(self.ln2(x))
        return x + self.fc2(F.gelu(h) if phi is None else phi(h))


class SplineTransformer(nn.Module):
    """Causal transformer LM over token ids; ``nonlinearities`` None gives the baseline."""

    def __init__(
        self,
        vocab_size: int,
        d_model: int = 64,
        n_heads: int = 4,
        n_layers: int = 2,
        mlp_ratio: int = 4,
        context: int = 128,
        nonlinearities: Nonlinearities | None = None,
    ) -> None:
        super().__init__()
        vocab_size = V.check_int(vocab_size, "vocab_size", low=2)
        d_model = V.check_int(d_model, "d_model", low=1)
        n_heads = V.check_int(n_heads, "n_heads", low=1)
        n_layers = V.check_int(n_layers, "n_layers", low=1)
        mlp_ratio = V.check_int(mlp_ratio, "mlp_ratio", low=1)
        context = V.check_int(context, "context", low=1)
        if d_model % n_heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by n_heads ({n_heads})")
        if nonlinearities is not None and not isinstance(nonlinearities, Nonlinearities):
            raise TypeError("nonlinearities must be a Nonlinearities module or None")
        self.vocab_size, self.context = vocab_size, context
        self.token = nn.Embedding(vocab_size, d_model)
        self.position = nn.Embedding(context, d_model)
        self.blocks = nn.ModuleList(
            SplineBlock(d_model, n_heads, mlp_ratio, i) for i in range(n_layers)
        )
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size, bias=False)
        self.nonlinearities = nonlinearities

    def weight_parameters(self) -> list[nn.Parameter]:
        """The model's own weights (everything except the shared spline parameters)."""
        shared = {id(p) for p in self.nonlinearities.parameters()} if self.nonlinearities else set()
        return [p for p in self.parameters() if id(p) not in shared]

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        V.check_tensor(idx, "idx", ndim=2, integer=True, low=0, high=self.vocab_size - 1)
        if idx.shape[1] > self.context:
            raise ValueError(f"sequence length {idx.shape[1]} exceeds context {self.context}")
        x = self.token(idx) + self.position(torch.arange(idx.shape[1], device=idx.device))
        for block in self.blocks:
            x = block(x, self.nonlinearities)
        return self.head(self.ln_f(x))
