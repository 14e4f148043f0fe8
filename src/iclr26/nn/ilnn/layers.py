"""ILNN layers: point-to-hyperplane FC (PLFC), gyro bias, activation, dropout, convolutions.

Every layer maps hyperboloid points to hyperboloid points ``(..., 1 + n)`` (time first). The
PLFC layer measures, for each output unit, the signed distance from the input to a learned
Lorentz hyperplane and returns the point whose signed distance to the j-th coordinate
hyperplane through the origin equals that distance (the Euclidean analogue: a linear layer
outputs scaled signed distances to hyperplanes). As the curvature goes to 0 it becomes ``Wx+b``.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from . import ops


def signed_distance(
    x: torch.Tensor, z: torch.Tensor, a: torch.Tensor, c: float = 1.0
) -> torch.Tensor:
    """Signed distance from points ``x (..., 1+n)`` to the hyperplanes with normals ``z (m, n)``
    (at the origin) and offsets ``a (m,)``: ``asinh(c (w_s . x_s - w_t x_t) / |z|) / c`` with
    ``w_t = sinh(c a) |z|``, ``w_s = cosh(c a) z``. Returns ``(..., m)``."""
    z_norm = z.norm(dim=-1).clamp_min(1e-15)
    w_t = torch.sinh(c * a) * z_norm
    w_s = torch.cosh(c * a).unsqueeze(-1) * z
    arg = (x[..., 1:] @ w_s.T - x[..., :1] * w_t) / z_norm
    return torch.asinh(c * arg) / c


class LorentzFC(nn.Module):
    """Point-to-hyperplane fully connected layer ``L^n -> L^m`` (or logits with ``head=True``).

    Output spatial coordinates ``y_j = sinh(c v_j) / c`` with ``v_j = |z_j| d(x; z_j, a_j)``;
    time from the constraint. ``bias=True`` adds the gyro bias ``y (+) expmap0(beta)``.
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        curvature: float = -1.0,
        bias: bool = True,
        head: bool = False,
    ) -> None:
        super().__init__()
        if in_features < 1 or out_features < 1:
            raise ValueError("in_features and out_features must be positive")
        self.c = ops.curvature_scale(curvature)
        self.in_features, self.out_features, self.head = in_features, out_features, head
        bound = 1.0 / math.sqrt(in_features)
        self.z = nn.Parameter(torch.empty(out_features, in_features).uniform_(-bound, bound))
        self.a = nn.Parameter(torch.zeros(out_features))
        self.beta = nn.Parameter(torch.zeros(out_features)) if bias and not head else None
        self.validate_input = True  # models switch this off for their inner layers

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-1] != self.in_features + 1:
            raise ValueError(f"expected points of size {self.in_features + 1}, got {x.shape[-1]}")
        if self.validate_input:
            ops.check_on_manifold(x, self.c)
        z, a = self.z.to(x.dtype), self.a.to(x.dtype)
        v = z.norm(dim=-1) * signed_distance(x, z, a, self.c)
        if self.head:
            return v
        y = ops.lift(torch.sinh(self.c * v) / self.c, self.c)
        if self.beta is not None:
            y = ops.gyro_add(y, ops.expmap0(self.beta.to(x.dtype), self.c), self.c)
        return y


class LorentzReLU(nn.Module):
    """ReLU on the spatial part, time recomputed from the constraint."""

    def __init__(self, curvature: float = -1.0) -> None:
        super().__init__()
        self.c = ops.curvature_scale(curvature)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ops.lift(F.relu(x[..., 1:]), self.c)


class LorentzDropout(nn.Module):
    """Inverted dropout on the spatial part, time recomputed from the constraint."""

    def __init__(self, p: float = 0.1, curvature: float = -1.0) -> None:
        super().__init__()
        if not 0.0 <= p < 1.0:
            raise ValueError(f"dropout probability must be in [0, 1), got {p}")
        self.p, self.c = p, ops.curvature_scale(curvature)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0:
            return x
        return ops.lift(F.dropout(x[..., 1:], self.p, True), self.c)


class LorentzConv1d(nn.Module):
    """Lorentz convolution over sequences of points ``(B, L, 1 + C_in)``: each window of
    ``k`` points (padded with the origin) is joined by log-radius concatenation into a point of
    ``L^{k C_in}`` and mapped by :class:`LorentzFC` to ``L^{C_out}``."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int,
        stride: int = 1,
        padding: int = 0,
        curvature: float = -1.0,
        scaled_concat: bool = True,
    ) -> None:
        super().__init__()
        self.c = ops.curvature_scale(curvature)
        self.in_channels, self.kernel_size = in_channels, kernel_size
        self.stride, self.padding, self.scaled_concat = stride, padding, scaled_concat
        self.fc = LorentzFC(kernel_size * in_channels, out_channels, curvature)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 3 or x.shape[-1] != self.in_channels + 1:
            raise ValueError(f"expected (B, L, {self.in_channels + 1}), got {tuple(x.shape)}")
        spatial = x[..., 1:]
        # Zero spatial padding is origin padding: concatenation only reads spatial parts.
        spatial = F.pad(spatial, (0, 0, self.padding, self.padding))
        windows = spatial.unfold(1, self.kernel_size, self.stride)  # (B, L', C, k)
        windows = windows.transpose(-1, -2).reshape(*windows.shape[:2], -1)
        if self.scaled_concat and self.kernel_size > 1:
            windows = windows * ops.log_radius_scale(self.in_channels, self.kernel_size)
        return self.fc(ops.lift(windows, self.c))


class LorentzConv2d(nn.Module):
    """2-D Lorentz convolution on ``(B, H, W, 1 + C_in)`` point grids (see LorentzConv1d)."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int,
        stride: int = 1,
        padding: int = 0,
        curvature: float = -1.0,
        scaled_concat: bool = True,
    ) -> None:
        super().__init__()
        self.c = ops.curvature_scale(curvature)
        self.in_channels, self.kernel_size = in_channels, kernel_size
        self.stride, self.padding, self.scaled_concat = stride, padding, scaled_concat
        self.fc = LorentzFC(kernel_size**2 * in_channels, out_channels, curvature)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 4 or x.shape[-1] != self.in_channels + 1:
            raise ValueError(f"expected (B, H, W, {self.in_channels + 1}), got {tuple(x.shape)}")
        batch, height, width, _ = x.shape
        spatial = x[..., 1:].permute(0, 3, 1, 2)
        cols = F.unfold(spatial, self.kernel_size, padding=self.padding, stride=self.stride)
        out_h = (height + 2 * self.padding - self.kernel_size) // self.stride + 1
        out_w = (width + 2 * self.padding - self.kernel_size) // self.stride + 1
        # unfold orders (C, kh, kw); regroup as k*k blocks of C channels
        cols = cols.reshape(batch, self.in_channels, self.kernel_size**2, out_h * out_w)
        cols = cols.permute(0, 3, 2, 1).reshape(batch, out_h, out_w, -1)
        if self.scaled_concat and self.kernel_size > 1:
            cols = cols * ops.log_radius_scale(self.in_channels, self.kernel_size**2)
        return self.fc(ops.lift(cols, self.c))
