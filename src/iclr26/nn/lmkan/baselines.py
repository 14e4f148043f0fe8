"""The baselines of the lmKAN checks, with FLOPs counted by the lmKAN layers' convention:
multiply and add 1 FLOP each, BatchNorm and activations 1 FLOP per element."""

from __future__ import annotations

import torch
from torch import nn

from .conv import conv_output_size


class MLP(nn.Module):
    """Two hidden GELU layers."""

    def __init__(self, in_dim: int, hidden: int, out_dim: int = 1) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(in_dim, hidden),
            nn.GELU(),
            nn.Linear(hidden, hidden),
            nn.GELU(),
            nn.Linear(hidden, out_dim),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def flops(self, batch: int = 1) -> int:
        """``2 * in * out + out`` per Linear, 1 per element per GELU."""
        total = 0
        for m in self.net:
            if isinstance(m, nn.Linear):
                total += 2 * m.in_features * m.out_features + m.out_features
            else:
                total += self.net[0].out_features
        return batch * total


class PlainCNN(nn.Module):
    """The CNN the lmKAN CNN is measured against, with the same stages and head:
    ``[Conv2d(k, stride, padding=k//2, bias=False) -> BatchNorm2d -> ReLU]`` per stage, then
    flatten ``-> Linear(features, n_classes)``."""

    def __init__(
        self,
        in_channels: int,
        image_size: int,
        n_classes: int,
        widths: tuple[int, ...] = (8, 8),
        strides: tuple[int, ...] = (1, 2),
        kernel_size: int = 3,
    ) -> None:
        super().__init__()
        if len(widths) != len(strides) or not widths:
            raise ValueError("widths and strides must be non-empty and of equal length")
        self.image_size = image_size
        stages: list[nn.Module] = []
        channels, size = in_channels, image_size
        for width, stride in zip(widths, strides):
            stages += [
                nn.Conv2d(channels, width, kernel_size, stride, kernel_size // 2, bias=False),
                nn.BatchNorm2d(width),
                nn.ReLU(),
            ]
            channels, size = width, conv_output_size(size, kernel_size, stride, kernel_size // 2)
        self.features = nn.Sequential(*stages)
        self.head = nn.Linear(channels * size * size, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x).flatten(1))

    def flops(self) -> int:
        """Per image: ``2 * in * k * k * out`` per output position and conv, 1 per element for
        every BatchNorm and ReLU, ``2 * in * out + out`` for the head."""
        total, size = 0, self.image_size
        for m in self.features:
            if isinstance(m, nn.Conv2d):
                k, s, p = m.kernel_size[0], m.stride[0], m.padding[0]
                size = conv_output_size(size, k, s, p)
                total += size * size * 2 * m.in_channels * k * k * m.out_channels
                channels = m.out_channels
            else:
                total += channels * size * size
        return total + 2 * self.head.in_features * self.head.out_features + self.head.out_features
