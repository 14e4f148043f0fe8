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

from iclr26 import validation as V

from . import ops

# The released PLFC clamps the scaled distance to [-10, 10] before ``sinh`` so that one far
# point cannot overflow the output coordinates (``sinh(10) ~ 1.1e4``); we do the same.
MAX_SCALED_DISTANCE = 10.0


def hyperplane_coefficients(
    z: torch.Tensor, a: torch.Tensor, c: float = 1.0
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(w_s, w_t, |z|)`` of the Lorentz hyperplanes with normals ``z (m, n)`` at the origin and
    offsets ``a (m,)``: ``w_s = cosh(c a) z``, ``w_t = sinh(c a) |z|``."""
    z_norm = z.norm(dim=-1).clamp_min(1e-15)
    return torch.cosh(c * a).unsqueeze(-1) * z, torch.sinh(c * a) * z_norm, z_norm


def _distance(
    products: torch.Tensor,
    time: torch.Tensor,
    w_t: torch.Tensor,
    z_norm: torch.Tensor,
    c: float,
) -> torch.Tensor:
    """Signed distance from the spatial products ``x_s . w_s (..., m)`` and times ``(..., 1)``."""
    return ops.times(ops.asinh(ops.times(products - time * w_t, c) / z_norm), 1.0 / c)


def signed_distance(
    x: torch.Tensor, z: torch.Tensor, a: torch.Tensor, c: float = 1.0
) -> torch.Tensor:
    """Signed distance from points ``x (..., 1+n)`` to the hyperplanes with normals ``z (m, n)``
    (at the origin) and offsets ``a (m,)``: ``asinh(c (w_s . x_s - w_t x_t) / |z|) / c`` with
    ``w_t = sinh(c a) |z|``, ``w_s = cosh(c a) z``. Returns ``(..., m)``."""
    ops.check_points(x, "x")
    V.check_tensor(z, "z", ndim=2, shape=(None, x.shape[-1] - 1), floating=True)
    V.check_tensor(a, "a", ndim=1, shape=(z.shape[0],), floating=True)
    c = V.check_scalar(c, "c", low=0.0, low_open=True)
    w_s, w_t, z_norm = hyperplane_coefficients(z, a, c)
    return _distance(x[..., 1:] @ w_s.T, x[..., :1], w_t, z_norm, c)


class LorentzFC(nn.Module):
    """Point-to-hyperplane fully connected layer ``L^n -> L^m`` (or logits with ``head=True``).

    Output spatial coordinates ``y_j = sinh(c v_j) / c`` with ``v_j = |z_j| d(x; z_j, a_j)``
    clamped to ``[-10, 10]`` as in the released code; time from the constraint. ``bias=True``
    adds the gyro bias ``y (+) expmap0(beta)``. ``head=True`` returns the (unclamped) ``v_j``
    as logits. The normals start uniform in ``[-1/sqrt(n), 1/sqrt(n)]`` (``nn.Linear``'s
    scale; the release draws them from ``N(0, 0.02^2)``, see the README's Deviations).
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
        in_features = V.check_int(in_features, "in_features", low=1)
        out_features = V.check_int(out_features, "out_features", low=1)
        bias, head = V.check_bool(bias, "bias"), V.check_bool(head, "head")
        self.c = ops.curvature_scale(curvature)
        self.in_features, self.out_features, self.head = in_features, out_features, head
        bound = 1.0 / math.sqrt(in_features)
        self.z = nn.Parameter(torch.empty(out_features, in_features).uniform_(-bound, bound))
        self.a = nn.Parameter(torch.zeros(out_features))
        self.beta = nn.Parameter(torch.zeros(out_features)) if bias and not head else None
        self.validate_input = True  # models switch this off for their inner layers

    def coefficients(self, dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
        """``(w_s, w_t, |z|)`` of the layer's hyperplanes in ``dtype``."""
        return hyperplane_coefficients(self.z.to(dtype), self.a.to(dtype), self.c)

    def from_products(
        self, products: torch.Tensor, time: torch.Tensor, w_t: torch.Tensor, z_norm: torch.Tensor
    ) -> torch.Tensor:
        """The layer's output from ``x_s . w_s`` and ``x_t`` (shared with the convolutions,
        which compute the products without materialising the concatenated patches)."""
        v = z_norm * _distance(products, time, w_t, z_norm, self.c)
        if self.head:
            return v
        v = v.clamp(-MAX_SCALED_DISTANCE, MAX_SCALED_DISTANCE)
        y = ops.lift(ops.times(torch.sinh(ops.times(v, self.c)), 1.0 / self.c), self.c)
        if self.beta is not None:
            y = ops.gyro_add(y, ops.expmap0(self.beta.to(y.dtype), self.c), self.c)
        return y

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.validate_input:
            ops.check_on_manifold(x, self.c, "x", self.in_features + 1)
        elif x.shape[-1] != self.in_features + 1:
            raise ValueError(
                f"x must hold points of size {self.in_features + 1}, got {x.shape[-1]}"
            )
        w_s, w_t, z_norm = self.coefficients(x.dtype)
        return self.from_products(x[..., 1:] @ w_s.T, x[..., :1], w_t, z_norm)


class LorentzReLU(nn.Module):
    """ReLU on the spatial part, time recomputed from the constraint."""

    def __init__(self, curvature: float = -1.0) -> None:
        super().__init__()
        self.c = ops.curvature_scale(curvature)
        self.validate_input = True  # models switch this off for their inner layers

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.validate_input:
            ops.check_on_manifold(x, self.c)
        return ops.lift(F.relu(x[..., 1:]), self.c)


class LorentzDropout(nn.Module):
    """Inverted dropout on the spatial part, time recomputed from the constraint."""

    def __init__(self, p: float = 0.1, curvature: float = -1.0) -> None:
        super().__init__()
        p = V.check_scalar(p, "p", low=0.0, high=1.0, high_open=True)
        self.p, self.c = p, ops.curvature_scale(curvature)
        self.validate_input = True  # models switch this off for their inner layers

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.validate_input:
            ops.check_on_manifold(x, self.c)
        if not self.training or self.p == 0:
            return x
        return ops.lift(F.dropout(x[..., 1:], self.p, True), self.c)


class GyroAdd(nn.Module):
    """Gyro residual connection ``x (+) y`` of two point tensors of the same shape."""

    def __init__(self, curvature: float = -1.0) -> None:
        super().__init__()
        self.c = ops.curvature_scale(curvature)
        self.validate_input = True  # models switch this off for their inner layers

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if self.validate_input:
            ops.check_points(x, "x")
            ops.check_points(y, "y")
        if x.shape != y.shape:
            raise ValueError(f"shapes differ: {tuple(x.shape)} and {tuple(y.shape)}")
        if self.validate_input:
            ops.check_on_manifold(x, self.c, "x")
            ops.check_on_manifold(y, self.c, "y")
        return ops.gyro_add(x, y, self.c)


class LorentzGlobalPool(nn.Module):
    """Lorentz centroid over every axis between the batch and the point axis:
    ``(B, ..., 1 + C)`` -> ``(B, 1 + C)``."""

    def __init__(self, curvature: float = -1.0) -> None:
        super().__init__()
        self.c = ops.curvature_scale(curvature)
        self.validate_input = True  # models switch this off for their inner layers

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.validate_input:
            ops.check_points(x, "x")
        if x.dim() < 3:
            raise ValueError(f"x must be (B, ..., 1 + C) with a pooled axis, got {tuple(x.shape)}")
        if self.validate_input:
            ops.check_on_manifold(x, self.c)
        return ops.lorentz_centroid(x.flatten(1, -2), dim=1, c=self.c)


class _LorentzConvNd(nn.Module):
    """Shared part of the Lorentz convolutions: every window of ``k`` (or ``k x k``) points,
    padded with the origin, is joined by log-radius concatenation into one point of
    ``L^{k C_in}`` and mapped by a :class:`LorentzFC` to ``L^{C_out}``.

    The concatenated point is never materialised: its spatial part is ``s_N`` times the
    stacked spatial parts, so ``x_s . w_s`` is a Euclidean convolution of the spatial channels
    with ``s_N w_s`` (zero spatial padding is exactly origin padding), and its time
    ``sqrt(s_N^2 sum |x_s|^2 + 1/c^2)`` needs only a windowed sum of squared norms. The result
    equals unfold + :func:`ops.lorentz_concat` + PLFC, at the cost of one convolution.
    """

    dims = 1

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
        in_channels = V.check_int(in_channels, "in_channels", low=1)
        out_channels = V.check_int(out_channels, "out_channels", low=1)
        kernel_size = V.check_int(kernel_size, "kernel_size", low=1)
        stride = V.check_int(stride, "stride", low=1)
        padding = V.check_int(padding, "padding", low=0)
        scaled_concat = V.check_bool(scaled_concat, "scaled_concat")
        self.c = ops.curvature_scale(curvature)
        self.in_channels, self.out_channels, self.kernel_size = (
            in_channels,
            out_channels,
            kernel_size,
        )
        self.stride, self.padding, self.scaled_concat = stride, padding, scaled_concat
        blocks = kernel_size**self.dims
        self.concat_scale = (
            ops.log_radius_scale(in_channels, blocks) if scaled_concat and blocks > 1 else 1.0
        )
        self.fc = LorentzFC(blocks * in_channels, out_channels, curvature)
        self.fc.validate_input = False  # the concatenated patches are on the manifold
        self.validate_input = True  # models switch this off for their inner layers

    def _check(self, x: torch.Tensor, layout: str) -> None:
        if self.validate_input:
            ops.check_points(x, "x")  # type, NaN/inf and emptiness before the layout
        if x.dim() != self.dims + 2 or x.shape[-1] != self.in_channels + 1:
            raise ValueError(f"x must be {layout} = {self.in_channels + 1}, got {tuple(x.shape)}")
        if self.validate_input:
            ops.check_on_manifold(x, self.c)

    def _convolve(self, spatial: torch.Tensor) -> torch.Tensor:
        """``spatial (B, C, *grid)`` -> points ``(B, *grid', 1 + C_out)``."""
        conv = F.conv1d if self.dims == 1 else F.conv2d
        k, n_in, s = self.kernel_size, self.in_channels, self.concat_scale
        w_s, w_t, z_norm = self.fc.coefficients(spatial.dtype)
        # The patch is stacked window position first, channel second: (k..., C) blocks.
        # The spatial channels are a strided view of the point tensor (channels last) and the
        # moved weight has channels-last strides too. oneDNN's 1x1 strided convolution in the
        # channels-last layout with few channels writes past its workspace when it computes
        # the weight gradient (heap corruption with one thread, hangs or wrong gradients with
        # more; oneDNN issue 6035), so both operands get fresh channels-first strides.
        contiguous = torch.contiguous_format
        weight = (w_s * s).reshape(self.out_channels, *([k] * self.dims), n_in).movedim(-1, 1)
        weight = weight.clone(memory_format=contiguous)
        spatial = spatial.clone(memory_format=contiguous)
        products = conv(spatial, weight, stride=self.stride, padding=self.padding)
        # windowed sum of squared norms (origin padding adds 0): a sum pool, not a convolution
        squares = F.pad(spatial.pow(2).sum(1, keepdim=True), [self.padding] * (2 * self.dims))
        pool = F.avg_pool1d if self.dims == 1 else F.avg_pool2d
        window_sq = pool(squares, k, self.stride) * k**self.dims
        time = (s**2 * window_sq + 1.0 / self.c**2).sqrt()
        return self.fc.from_products(products.movedim(1, -1), time.movedim(1, -1), w_t, z_norm)


class LorentzConv1d(_LorentzConvNd):
    """Lorentz convolution over sequences of points ``(B, L, 1 + C_in)`` -> ``(B, L', 1 + C_out)``
    (window of ``kernel_size`` points, origin padding, log-radius concatenation, PLFC)."""

    dims = 1

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self._check(x, "(B, L, 1 + C_in)")
        return self._convolve(x[..., 1:].transpose(1, 2))


class LorentzConv2d(_LorentzConvNd):
    """2-D Lorentz convolution on point grids ``(B, H, W, 1 + C_in)`` -> ``(B, H', W', 1 + C_out)``
    (``kernel_size x kernel_size`` windows, see :class:`LorentzConv1d`)."""

    dims = 2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self._check(x, "(B, H, W, 1 + C_in)")
        return self._convolve(x[..., 1:].permute(0, 3, 1, 2))
