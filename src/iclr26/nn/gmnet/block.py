"""The GmNet block: a depthwise-convolution block whose channel mixer is a minimal gate.

The paper (Sec. 4) argues that the product in a gated linear unit widens the feature spectrum
(convolution theorem) and that a non-smooth activation keeps high frequencies, so a cheap
self-gate ``act(h) * h`` lets a lightweight network learn textures and edges. The block follows
the released model file: DWConv-BN, 1x1 expansion, gate, 1x1 projection-BN, DWConv, layer scale,
residual.
"""

from __future__ import annotations

import torch
import torch.fx
from torch import nn

from iclr26 import validation as V

ACTIVATIONS = {
    "relu6": nn.ReLU6,
    "relu": nn.ReLU,
    "gelu": nn.GELU,
    "silu": nn.SiLU,
    "sigmoid": nn.Sigmoid,
    "identity": nn.Identity,
}
GATES = ("self", "glu", "none")


def check_feature_map(x: torch.Tensor, name: str = "x") -> torch.Tensor:
    """A floating, finite, non-empty ``(B, C, H, W)`` tensor. Registered as an FX leaf
    (``torch.fx.wrap``): ``symbolic_trace`` records the call instead of evaluating it, so the
    traced graph keeps the check and runs it on real inputs."""
    return V.check_tensor(x, name, ndim=4, floating=True)


torch.fx.wrap("check_feature_map")


def _drop_path_mask(x: torch.Tensor, keep: float) -> torch.Tensor:
    """One Bernoulli(keep) draw per sample, broadcast over the other dimensions (an FX leaf,
    since its shape arithmetic cannot be traced symbolically)."""
    return x.new_empty((x.shape[0],) + (1,) * (x.ndim - 1)).bernoulli_(keep)


torch.fx.wrap("_drop_path_mask")


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
        in_ch = V.check_int(in_ch, "in_ch", low=1)
        out_ch = V.check_int(out_ch, "out_ch", low=1)
        kernel_size = V.check_int(kernel_size, "kernel_size", low=1)
        stride = V.check_int(stride, "stride", low=1)
        padding = V.check_int(padding, "padding", low=0)
        groups = V.check_int(groups, "groups", low=1)
        V.check_bool(with_bn, "with_bn")
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
        self.p = V.check_scalar(p, "p", low=0.0, high=1.0, high_open=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.p == 0.0 or not self.training:
            return x
        keep = 1.0 - self.p
        return x * _drop_path_mask(x, keep) / keep


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
        dim = V.check_int(dim, "dim", low=1)
        mlp_ratio = V.check_int(mlp_ratio, "mlp_ratio", low=1)
        kernel_size = V.check_int(kernel_size, "kernel_size", low=1)
        if kernel_size % 2 == 0:
            raise ValueError(f"kernel_size must be odd and positive, got {kernel_size}")
        V.check_choice(gate, "gate", GATES)
        layer_scale = V.check_scalar(layer_scale, "layer_scale", low=0.0)
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
        x = check_feature_map(x)
        h = self.dwconv2(self.g(self.mix(self.dwconv(x))))
        if self.gamma is not None:
            h = h * self.gamma.view(1, -1, 1, 1)
        return x + self.drop_path(h)
