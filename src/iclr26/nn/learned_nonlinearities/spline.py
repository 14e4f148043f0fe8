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

from iclr26 import validation as V

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
        n_anchors = V.check_int(n_anchors, "n_anchors", low=2)
        x_range = V.check_scalar(x_range, "x_range", low=0.0, low_open=True)
        V.check_choice(init, "init", INITS)
        per_channel = V.check_bool(per_channel, "per_channel")
        init_value = V.check_scalar(init_value, "init_value")
        if per_channel:
            if channels is None:
                raise ValueError("channels must be given for per_channel splines")
            channels = V.check_int(channels, "channels", low=1)
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
        """Evaluated in float32 and cast back to ``x``'s dtype (as the release does, so the
        spline drops into bf16/fp16 models). NaN propagates, as through any activation."""
        # Cheap boundary check only (type and dtype): this runs on every activation.
        V.check_tensor(x, "x", floating=True, allow_nan=True, allow_inf=True, nonempty=False)
        if self.per_channel and (x.dim() == 0 or x.shape[-1] != self.values.shape[0]):
            raise ValueError(
                f"x must have last dimension {self.values.shape[0]} for this per-channel "
                f"spline, got shape {tuple(x.shape)}"
            )
        k = self.n_anchors
        # Anchors from the Python range (float32 whatever dtype the module was cast to).
        pos = (x.float() + self.x_range) / self.delta
        idx = pos.detach().floor().clamp(0, k - 2).long()
        frac = (pos - idx).clamp(0.0, 1.0)
        values = self.values.float()
        if self.per_channel:
            table = values.t()  # (K, C)
            ch = torch.arange(x.shape[-1], device=x.device).expand_as(idx)
            left, right = table[idx, ch], table[idx + 1, ch]
        else:
            left, right = values[idx], values[idx + 1]
        return (left + frac * (right - left)).to(x.dtype)

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
        V.check_bool(mlp, "mlp")
        V.check_choice(attention, "attention", ATTENTION_KINDS)
        n_layers = V.check_int(n_layers, "n_layers", low=1)
        V.check_choice(mlp_init, "mlp_init", INITS)
        V.check_choice(attention_init, "attention_init", INITS)
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
