"""Learnable 1-D linear splines that replace a transformer's fixed nonlinearities.

A ``LinearSpline`` holds values ``v_0..v_{K-1}`` at uniform anchors on ``[-R, R]``; between
anchors it interpolates linearly and outside the range it is constant (the released code's
form: K = 64, R = 15, values initialised to 0.01 or to the identity). ``Nonlinearities``
bundles the splines of one architecture (MLP activation and the attention nonlinearity) so
several models can share, and later freeze, the same object.
"""

from __future__ import annotations

import torch
from torch import nn

ATTENTION_KINDS = ("softmax", "kernel_feature", "score_fn", "pre_qkv")
INITS = ("constant", "linear", "gelu", "exp")


class LinearSpline(nn.Module):
    """Piecewise-linear function with learnable values at uniform anchors on ``[-R, R]``."""

    def __init__(
        self,
        n_anchors: int = 64,
        x_range: float = 15.0,
        init: str = "constant",
        per_channel: bool = False,
        channels: int | None = None,
        init_value: float = 0.01,
    ) -> None:
        super().__init__()
        if n_anchors < 2:
            raise ValueError("a spline needs at least 2 anchors")
        if x_range <= 0:
            raise ValueError("x_range must be positive")
        if init not in INITS:
            raise ValueError(f"unknown init {init!r}; valid: {', '.join(INITS)}")
        if per_channel and (channels is None or channels < 1):
            raise ValueError("per_channel splines need a positive channel count")
        self.x_range = float(x_range)
        self.per_channel = per_channel
        anchors = torch.linspace(-x_range, x_range, n_anchors)
        self.register_buffer("anchors", anchors)
        self.delta = float(anchors[1] - anchors[0])
        if init == "constant":
            values = torch.full((n_anchors,), float(init_value))
        elif init == "linear":
            values = anchors.clone()
        elif init == "gelu":
            values = nn.functional.gelu(anchors)
        else:
            values = torch.exp(anchors.clamp(max=10.0))
        if per_channel:
            values = values.repeat(channels, 1)
        self.values = nn.Parameter(values)

    @property
    def n_anchors(self) -> int:
        return self.anchors.numel()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.per_channel and x.shape[-1] != self.values.shape[0]:
            raise ValueError(
                f"per-channel spline expects last dim {self.values.shape[0]}, got {x.shape[-1]}"
            )
        k = self.n_anchors
        pos = (x - self.anchors[0]) / self.delta
        idx = pos.detach().floor().clamp(0, k - 2).long()
        frac = (pos - idx).clamp(0.0, 1.0)
        if self.per_channel:
            table = self.values.t()  # (K, C)
            ch = torch.arange(x.shape[-1], device=x.device).expand_as(idx)
            left, right = table[idx, ch], table[idx + 1, ch]
        else:
            left, right = self.values[idx], self.values[idx + 1]
        return left + frac * (right - left)

    def extra_repr(self) -> str:
        return f"anchors={self.n_anchors}, range=±{self.x_range:g}, per_channel={self.per_channel}"


class Nonlinearities(nn.Module):
    """The learnable architecture parameters ``theta`` shared by the models of stage I.

    ``mlp``: spline replacing GeLU (or None for GeLU); ``attention``: ``softmax`` (kept),
    ``kernel_feature`` (``K(q,k) = phi(q).phi(k)``), ``score_fn`` (``K = softplus(phi(q.k/
    sqrt d))``) or ``pre_qkv`` (``x + phi(a x + b)`` before the projections, softmax kept).
    ``n_layers > 1`` gives one spline per layer (``layer_specific``), else one shared.
    """

    def __init__(
        self,
        mlp: bool = True,
        attention: str = "kernel_feature",
        n_layers: int = 1,
        n_anchors: int = 64,
        x_range: float = 15.0,
        mlp_init: str = "constant",
        attention_init: str = "constant",
    ) -> None:
        super().__init__()
        if attention not in ATTENTION_KINDS:
            raise ValueError(
                f"unknown attention {attention!r}; valid: {', '.join(ATTENTION_KINDS)}"
            )
        if n_layers < 1:
            raise ValueError("n_layers must be >= 1")
        self.attention = attention
        self.n_layers = n_layers

        def splines(init):
            return nn.ModuleList(LinearSpline(n_anchors, x_range, init) for _ in range(n_layers))

        self.mlp = splines(mlp_init) if mlp else None
        self.attn = splines(attention_init) if attention != "softmax" else None
        if attention == "pre_qkv":
            self.pre_scale = nn.Parameter(torch.ones(n_layers))
            self.pre_shift = nn.Parameter(torch.zeros(n_layers))

    def mlp_fn(self, layer: int):
        return None if self.mlp is None else self.mlp[layer % self.n_layers]

    def attn_fn(self, layer: int):
        return None if self.attn is None else self.attn[layer % self.n_layers]

    def frozen(self) -> Nonlinearities:
        """A detached copy with ``requires_grad=False`` (stage II)."""
        import copy

        copy_ = copy.deepcopy(self)
        for p in copy_.parameters():
            p.requires_grad_(False)
        return copy_
