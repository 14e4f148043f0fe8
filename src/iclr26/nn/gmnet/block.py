"""The GmNet block: a depthwise-convolution block whose channel mixer is a minimal gate.

The paper (Sec. 4) argues that the product in a gated linear unit widens the feature spectrum
(convolution theorem) and that a non-smooth activation keeps high frequencies, so a cheap
self-gate ``act(h) * h`` lets a lightweight network learn textures and edges. The block follows
the released model file: DWConv-BN, 1x1 expansion, gate, 1x1 projection-BN, DWConv, layer scale,
residual.
"""

from __future__ import annotations

import torch
from torch import nn

ACTIVATIONS = {
    "relu6": nn.ReLU6,
    "relu": nn.ReLU,
    "gelu": nn.GELU,
    "silu": nn.SiLU,
    "sigmoid": nn.Sigmoid,
    "identity": nn.Identity,
}
GATES = ("self", "glu", "none")


def make_activation(act: str | type[nn.Module]) -> nn.Module:
    """An activation module from its name (see ``ACTIVATIONS``) or class."""
    if isinstance(act, str):
        if act.lower() not in ACTIVATIONS:
            raise ValueError(f"unknown activation {act!r}; valid: {', '.join(ACTIVATIONS)}")
        return ACTIVATIONS[act.lower()]()
    if isinstance(act, type) and issubclass(act, nn.Module):
        return act()
    raise TypeError(f"act must be a name or an nn.Module class, got {type(act).__name__}")


class ConvBN(nn.Sequential):
    """Conv2d optionally followed by BatchNorm (BN weight 1, bias 0 at init)."""

    def __init__(
        self,
        in_ch: int,
        out_ch: int,
        kernel_size: int = 1,
        stride: int = 1,
        padding: int = 0,
        groups: int = 1,
        with_bn: bool = True,
    ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.in_ch, self.out_ch = in_ch, out_ch
        self.add_module(
            "conv", nn.Conv2d(in_ch, out_ch, kernel_size, stride, padding, groups=groups)
        )
        if with_bn:
            self.add_module("bn", nn.BatchNorm2d(out_ch))
            nn.init.ones_(self.bn.weight)
            nn.init.zeros_(self.bn.bias)


class DropPath(nn.Module):
    """Stochastic depth: drop the whole residual branch per sample with probability ``p``."""

    def __init__(self, p: float = 0.0) -> None:
        super().__init__()
        if not 0.0 <= p < 1.0:
            raise ValueError(f"drop path rate must be in [0, 1), got {p}")
        self.p = p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.p == 0.0 or not self.training:
            return x
        keep = 1.0 - self.p
        mask = x.new_empty((x.shape[0],) + (1,) * (x.ndim - 1)).bernoulli_(keep)
        return x * mask / keep


class GmBlock(nn.Module):
    """One GmNet block on (B, C, H, W) feature maps.

    ``gate="self"`` (paper and release): ``act(h) * h`` on one 1x1 expansion.
    ``gate="glu"``: two 1x1 expansions, ``act(W1 h) * (W2 h)`` (the paper's sigma(x)*FC(x)).
    ``gate="none"``: ``act(h)`` only, the ungated baseline.
    """

    def __init__(
        self,
        dim: int,
        mlp_ratio: int = 4,
        kernel_size: int = 7,
        act: str = "relu6",
        gate: str = "self",
        f12_bn: bool = False,
        g_bn: bool = True,
        dwconv2_bn: bool = False,
        drop_path: float = 0.0,
        layer_scale: float = 1e-6,
    ) -> None:
        super().__init__()
        if dim < 1 or mlp_ratio < 1:
            raise ValueError("dim and mlp_ratio must be positive")
        if kernel_size < 1 or kernel_size % 2 == 0:
            raise ValueError(f"kernel_size must be odd and positive, got {kernel_size}")
        if gate not in GATES:
            raise ValueError(f"unknown gate {gate!r}; valid: {', '.join(GATES)}")
        pad = (kernel_size - 1) // 2
        hidden = mlp_ratio * dim
        self.gate = gate
        self.dwconv = ConvBN(dim, dim, kernel_size, 1, pad, groups=dim, with_bn=True)
        self.f1 = ConvBN(dim, hidden, 1, with_bn=f12_bn)
        self.f2 = ConvBN(dim, hidden, 1, with_bn=f12_bn) if gate == "glu" else None
        self.act = make_activation(act)
        self.g = ConvBN(hidden, dim, 1, with_bn=g_bn)
        self.dwconv2 = ConvBN(dim, dim, kernel_size, 1, pad, groups=dim, with_bn=dwconv2_bn)
        self.gamma = (
            nn.Parameter(torch.full((dim,), float(layer_scale))) if layer_scale > 0 else None
        )
        self.drop_path = DropPath(drop_path)

    def mix(self, h: torch.Tensor) -> torch.Tensor:
        """The channel mixer's nonlinearity: the gate applied to the depthwise features."""
        u = self.f1(h)
        if self.gate == "self":
            return self.act(u) * u
        if self.gate == "glu":
            return self.act(u) * self.f2(h)
        return self.act(u)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.ndim != 4:
            raise ValueError(f"GmBlock expects (B, C, H, W), got shape {tuple(x.shape)}")
        h = self.dwconv2(self.g(self.mix(self.dwconv(x))))
        if self.gamma is not None:
            h = h * self.gamma.view(1, -1, 1, 1)
        return x + self.drop_path(h)
