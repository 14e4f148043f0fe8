"""lmKAN-based convolutions: every image patch goes through one :class:`LMKAN2d` lookup.

A patch of ``in_channels * k * k`` values is unfolded (im2col), neighbouring entries of the
patch vector are paired, and each output channel sums one 2-D spline table per pair. The
per-patch map is the lookup layer itself (one ``embedding_bag`` gather over all patches of the
batch), so a convolution costs ``2x`` the FLOPs of a same-shape ``nn.Conv2d`` whatever the grid.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V

from .layer import LMKAN2d


def _positive_int(name: str, value, minimum: int = 1) -> int:
    return V.check_int(value, name, low=minimum)


def conv_output_size(size: int, kernel_size: int, stride: int, padding: int) -> int:
    """Output length of a convolution along one axis (the ``nn.Conv2d`` formula)."""
    return (size + 2 * padding - kernel_size) // stride + 1


def _int_tuple(name: str, values) -> tuple[int, ...]:
    if isinstance(values, int | str) or not hasattr(values, "__len__"):
        raise TypeError(f"{name} must be a sequence of integers, got {values!r}")
    if len(values) == 0:
        raise ValueError(f"{name} is empty: it needs at least one stage")
    return tuple(V.check_int(v, f"{name}[{k}]", low=1) for k, v in enumerate(values))


def _check_batch_for_batchnorm(module: nn.Module, x: torch.Tensor) -> None:
    """BatchNorm in training mode needs two or more samples; say so at the boundary."""
    if module.training and x.shape[0] < 2:
        raise ValueError(
            f"x has a batch of {x.shape[0]} sample(s): training mode needs at least 2 "
            "(BatchNorm statistics); call .eval() to evaluate single samples"
        )


class LMKANConv2d(nn.Module):
    """A 2-D convolution whose per-patch linear map is an :class:`LMKAN2d`.

    Args:
        in_channels, out_channels, kernel_size, stride, padding: as in ``nn.Conv2d`` (square
            kernels, zero padding).
        num_grids, init_scale, extrapolate, backend: passed to the inner :class:`LMKAN2d` over
            the ``in_channels * kernel_size**2`` patch entries, paired in unfold order
            (channel-major, then row, then column; an odd patch length is zero-padded).

    Like every lmKAN layer it is nonlinear by itself; put ``BatchNorm2d(affine=False)`` in
    front so that the inputs fall where the grid is dense.
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int,
        stride: int = 1,
        padding: int = 0,
        num_grids: int = 8,
        init_scale: float = 0.1,
        extrapolate: str = "clamp",
        backend: str = "embedding_bag",
    ) -> None:
        super().__init__()
        self.in_channels = _positive_int("in_channels", in_channels)
        self.out_channels = _positive_int("out_channels", out_channels)
        self.kernel_size = _positive_int("kernel_size", kernel_size)
        self.stride = _positive_int("stride", stride)
        self.padding = _positive_int("padding", padding, minimum=0)
        self.lmkan = LMKAN2d(
            in_channels * kernel_size**2,
            out_channels,
            num_grids,
            init_scale,
            extrapolate=extrapolate,
            backend=backend,
        )

    def extra_repr(self) -> str:
        return (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}, padding={self.padding}"
        )

    def output_size(self, height: int, width: int) -> tuple[int, int]:
        args = (self.kernel_size, self.stride, self.padding)
        return conv_output_size(height, *args), conv_output_size(width, *args)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        V.check_tensor(x, "x", ndim=4, shape=(None, self.in_channels, None, None), floating=True)
        batch, _, height, width = x.shape
        out_h, out_w = self.output_size(height, width)
        if out_h < 1 or out_w < 1:
            raise ValueError(
                f"input {height}x{width} (padding {self.padding}) is smaller than the "
                f"{self.kernel_size}x{self.kernel_size} kernel"
            )
        patches = F.unfold(x, self.kernel_size, padding=self.padding, stride=self.stride)
        flat = patches.transpose(1, 2).reshape(batch * out_h * out_w, -1)
        y = self.lmkan(flat).reshape(batch, out_h * out_w, self.out_channels)
        return y.transpose(1, 2).reshape(batch, self.out_channels, out_h, out_w)

    def flops(self, height: int, width: int) -> int:
        """Inference FLOPs for one ``height x width`` input: the lookup layer's FLOPs at every
        output position (the unfold is data movement, as in an im2col ``nn.Conv2d``)."""
        out_h, out_w = self.output_size(height, width)
        return out_h * out_w * self.lmkan.flops()

    def hessian_penalty(self) -> torch.Tensor:
        return self.lmkan.hessian_penalty()


class LMKANCNN(nn.Module):
    """A small lmKAN convolutional classifier.

    ``[BatchNorm2d(affine=False) -> LMKANConv2d(k, stride, padding=k//2)]`` per stage, then
    flatten ``-> BatchNorm1d(affine=False) -> LMKAN2d(features, n_classes)``. No activations
    (every lmKAN layer is nonlinear), no pooling: strided stages shrink the image.
    """

    def __init__(
        self,
        in_channels: int,
        image_size: int,
        n_classes: int,
        widths: tuple[int, ...] = (8, 8),
        strides: tuple[int, ...] = (1, 2),
        kernel_size: int = 3,
        num_grids: int = 8,
        init_scale: float = 0.1,
        extrapolate: str = "clamp",
    ) -> None:
        super().__init__()
        widths, strides = _int_tuple("widths", widths), _int_tuple("strides", strides)
        if len(widths) != len(strides):
            raise ValueError(
                f"widths and strides must have equal length, got {len(widths)} and {len(strides)}"
            )
        self.in_channels = _positive_int("in_channels", in_channels)
        self.image_size = _positive_int("image_size", image_size)
        _positive_int("n_classes", n_classes)
        kernel_size = _positive_int("kernel_size", kernel_size)
        stages: list[nn.Module] = []
        channels, size = in_channels, image_size
        for width, stride in zip(widths, strides):
            stages += [
                nn.BatchNorm2d(channels, affine=False),
                LMKANConv2d(
                    channels,
                    width,
                    kernel_size,
                    stride,
                    kernel_size // 2,
                    num_grids,
                    init_scale,
                    extrapolate=extrapolate,
                ),
            ]
            channels, size = width, conv_output_size(size, kernel_size, stride, kernel_size // 2)
        if size < 1:
            raise ValueError("the image is too small for these strides")
        self.features = nn.Sequential(*stages)
        features = channels * size * size
        self.head = nn.Sequential(
            nn.BatchNorm1d(features, affine=False),
            LMKAN2d(features, n_classes, num_grids, init_scale, extrapolate=extrapolate),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        size = self.image_size
        V.check_tensor(x, "x", ndim=4, shape=(None, self.in_channels, size, size), floating=True)
        _check_batch_for_batchnorm(self, x)
        return self.head(self.features(x).flatten(1))

    def lmkan_modules(self) -> list[nn.Module]:
        return [m for m in self.modules() if isinstance(m, LMKAN2d)]

    def hessian_penalty(self) -> torch.Tensor:
        return sum(m.hessian_penalty() for m in self.lmkan_modules())

    def flops(self) -> int:
        """Per-image inference FLOPs: lookups, plus 1 per element for every BatchNorm."""
        total, size = 0, self.image_size
        for m in self.features:
            if isinstance(m, nn.BatchNorm2d):
                total += m.num_features * size * size
            else:
                total += m.flops(size, size)
                size = m.output_size(size, size)[0]
        total += self.head[0].num_features + self.head[1].flops()
        return total
