"""ILNN models and their Euclidean counterparts: the genomics-style 1-D CNN (``ILNNSeqCNN`` vs
``SeqCNN``) and the CIFAR ResNet-18 (``LorentzResNet18`` vs ``ResNet18``)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V

from . import ops
from .layers import (
    GyroAdd,
    LorentzConv1d,
    LorentzConv2d,
    LorentzFC,
    LorentzGlobalPool,
    LorentzReLU,
)
from .norm import GyroBN, GyroLBN, LorentzBN

NORMS = {"gyrolbn": GyroLBN, "gyrobn": GyroBN, "lbn": LorentzBN}


def _check_seq_sizes(vocab, channels, classes, layers, kernel_size) -> tuple[int, ...]:
    vocab = V.check_int(vocab, "vocab", low=1)
    channels = V.check_int(channels, "channels", low=1)
    classes = V.check_int(classes, "classes", low=2)
    layers = V.check_int(layers, "layers", low=1)
    kernel_size = V.check_int(kernel_size, "kernel_size", low=1)
    if kernel_size % 2 == 0:
        raise ValueError(f"kernel_size must be odd (same-length residuals), got {kernel_size}")
    return vocab, channels, classes, layers, kernel_size


def _check_one_hot(x: torch.Tensor, vocab: int) -> None:
    V.check_tensor(x, "x", floating=True)
    if x.dim() != 3 or x.shape[-1] != vocab:
        raise ValueError(f"x must be one-hot input (B, L, {vocab}), got {tuple(x.shape)}")


def _check_images(images: torch.Tensor, in_channels: int) -> None:
    V.check_tensor(images, "images", floating=True)
    if images.dim() != 4 or images.shape[1] != in_channels:
        raise ValueError(f"images must be (B, {in_channels}, H, W), got {tuple(images.shape)}")


def _check_resnet_sizes(num_classes, width, in_channels, blocks) -> tuple:
    num_classes = V.check_int(num_classes, "num_classes", low=2)
    width = V.check_int(width, "width", low=1)
    in_channels = V.check_int(in_channels, "in_channels", low=1)
    if isinstance(blocks, str | bytes) or not hasattr(blocks, "__len__") or not len(blocks):
        raise TypeError(f"blocks must be a non-empty tuple of block counts, got {blocks!r}")
    blocks = tuple(V.check_int(b, "blocks", low=1) for b in blocks)
    return num_classes, width, in_channels, blocks


def _trust_inner_points(model: nn.Module) -> None:
    """Switch off the on-manifold input checks of a model's layers: the model's own input is
    checked (or built on the manifold) once, and every layer maps points to points."""
    for module in model.modules():
        if hasattr(module, "validate_input"):
            module.validate_input = False


class ILNNSeqCNN(nn.Module):
    """One-hot sequence ``(B, L, vocab)`` -> class logits, every hidden state on ``L^C``:
    embed + expmap0, ``layers`` x [LorentzConv1d -> norm -> LorentzReLU] with gyro residuals
    ``x (+) F(x)``, global Lorentz-centroid pooling, PLFC head (signed distances as logits)."""

    def __init__(
        self,
        vocab: int = 4,
        channels: int = 16,
        classes: int = 8,
        layers: int = 3,
        kernel_size: int = 5,
        curvature: float = -1.0,
        norm: str = "gyrolbn",
    ) -> None:
        super().__init__()
        vocab, channels, classes, layers, kernel_size = _check_seq_sizes(
            vocab, channels, classes, layers, kernel_size
        )
        V.check_choice(norm, "norm", tuple(NORMS))
        self.c = ops.curvature_scale(curvature)
        self.vocab = vocab
        self.embed = nn.Linear(vocab, channels)
        self.convs = nn.ModuleList(
            LorentzConv1d(
                channels, channels, kernel_size, padding=kernel_size // 2, curvature=curvature
            )
            for _ in range(layers)
        )
        self.norms = nn.ModuleList(NORMS[norm](channels, curvature) for _ in range(layers))
        self.act = LorentzReLU(curvature)
        self.residual = GyroAdd(curvature)
        self.pool = LorentzGlobalPool(curvature)
        self.head = LorentzFC(channels, classes, curvature, head=True)
        _trust_inner_points(self)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_one_hot(x, self.vocab)
        h = ops.expmap0(self.embed(x), self.c)
        for conv, norm in zip(self.convs, self.norms):
            h = self.residual(h, self.act(norm(conv(h))))
        return self.head(self.pool(h))


class SeqCNN(nn.Module):
    """Euclidean baseline: embed, ``layers`` x [Conv1d -> BN -> ReLU] with residuals, mean pool,
    Linear."""

    def __init__(
        self,
        vocab: int = 4,
        channels: int = 16,
        classes: int = 8,
        layers: int = 3,
        kernel_size: int = 5,
    ) -> None:
        super().__init__()
        vocab, channels, classes, layers, kernel_size = _check_seq_sizes(
            vocab, channels, classes, layers, kernel_size
        )
        self.vocab = vocab
        self.embed = nn.Linear(vocab, channels)
        self.convs = nn.ModuleList(
            nn.Conv1d(channels, channels, kernel_size, padding=kernel_size // 2)
            for _ in range(layers)
        )
        self.norms = nn.ModuleList(nn.BatchNorm1d(channels) for _ in range(layers))
        self.head = nn.Linear(channels, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_one_hot(x, self.vocab)
        h = self.embed(x).transpose(1, 2)
        for conv, norm in zip(self.convs, self.norms):
            h = h + F.relu(norm(conv(h)))
        return self.head(h.mean(-1))


class LorentzBasicBlock(nn.Module):
    """ResNet basic block on ``L^C`` point grids ``(B, H, W, 1 + C)``:
    ``ReLU(shortcut(x) (+) GyroLBN(conv(ReLU(GyroLBN(conv(x))))))``, where the shortcut is the
    identity or a strided 1x1 Lorentz convolution + GyroLBN when the shape changes."""

    def __init__(
        self, in_channels: int, out_channels: int, stride: int = 1, curvature: float = -1.0
    ) -> None:
        super().__init__()
        in_channels = V.check_int(in_channels, "in_channels", low=1)
        out_channels = V.check_int(out_channels, "out_channels", low=1)
        stride = V.check_int(stride, "stride", low=1)
        self.conv1 = LorentzConv2d(in_channels, out_channels, 3, stride, 1, curvature)
        self.norm1 = GyroLBN(out_channels, curvature)
        self.conv2 = LorentzConv2d(out_channels, out_channels, 3, 1, 1, curvature)
        self.norm2 = GyroLBN(out_channels, curvature)
        self.act = LorentzReLU(curvature)
        self.residual = GyroAdd(curvature)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_channels != out_channels:
            self.shortcut = nn.Sequential(
                LorentzConv2d(in_channels, out_channels, 1, stride, 0, curvature),
                GyroLBN(out_channels, curvature),
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # conv1 checks x (points on the manifold, (B, H, W, 1 + C_in)) unless inside a model
        out = self.norm2(self.conv2(self.act(self.norm1(self.conv1(x)))))
        return self.act(self.residual(self.shortcut(x), out))


class LorentzResNet18(nn.Module):
    """ResNet-18 for 32x32 images in which every hidden state is a grid of Lorentz points.

    Images ``(B, 3, H, W)`` (channels first, like torchvision) are lifted pixel-wise onto
    ``L^3`` (the pixel values are the spatial part); a 3x3 Lorentz convolution stem with GyroLBN
    and Lorentz ReLU; four stages of two :class:`LorentzBasicBlock` with ``width x (1, 2, 4, 8)``
    channels and strides ``(1, 2, 2, 2)``; global Lorentz-centroid pooling; a PLFC head whose
    signed distances are the logits. ``width=64`` is the standard ResNet-18.
    """

    def __init__(
        self,
        num_classes: int = 10,
        width: int = 64,
        in_channels: int = 3,
        curvature: float = -1.0,
        blocks: tuple[int, ...] = (2, 2, 2, 2),
    ) -> None:
        super().__init__()
        num_classes, width, in_channels, blocks = _check_resnet_sizes(
            num_classes, width, in_channels, blocks
        )
        self.c = ops.curvature_scale(curvature)
        self.in_channels = in_channels
        self.stem = nn.Sequential(
            LorentzConv2d(in_channels, width, 3, 1, 1, curvature),
            GyroLBN(width, curvature),
            LorentzReLU(curvature),
        )
        stages, channels = [], width
        for k, count in enumerate(blocks):
            out_channels = width * 2**k
            for j in range(count):
                stride = 2 if k > 0 and j == 0 else 1
                stages.append(LorentzBasicBlock(channels, out_channels, stride, curvature))
                channels = out_channels
        self.blocks = nn.Sequential(*stages)
        self.pool = LorentzGlobalPool(curvature)
        self.head = LorentzFC(channels, num_classes, curvature, head=True)
        _trust_inner_points(self)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        _check_images(images, self.in_channels)
        h = ops.lift(images.permute(0, 2, 3, 1), self.c)
        return self.head(self.pool(self.blocks(self.stem(h))))


class _BasicBlock(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride, 1)
        self.norm1 = nn.BatchNorm2d(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, 1, 1)
        self.norm2 = nn.BatchNorm2d(out_channels)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_channels != out_channels:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 1, stride), nn.BatchNorm2d(out_channels)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.norm2(self.conv2(F.relu(self.norm1(self.conv1(x)))))
        return F.relu(self.shortcut(x) + out)


class ResNet18(nn.Module):
    """Euclidean CIFAR ResNet-18 with the same layout as :class:`LorentzResNet18` (3x3 stem, no
    max-pool, ``width x (1, 2, 4, 8)`` channels, global average pool, linear head)."""

    def __init__(
        self,
        num_classes: int = 10,
        width: int = 64,
        in_channels: int = 3,
        blocks: tuple[int, ...] = (2, 2, 2, 2),
    ) -> None:
        super().__init__()
        num_classes, width, in_channels, blocks = _check_resnet_sizes(
            num_classes, width, in_channels, blocks
        )
        self.in_channels = in_channels
        self.stem = nn.Sequential(
            nn.Conv2d(in_channels, width, 3, 1, 1), nn.BatchNorm2d(width), nn.ReLU()
        )
        stages, channels = [], width
        for k, count in enumerate(blocks):
            out_channels = width * 2**k
            for j in range(count):
                stride = 2 if k > 0 and j == 0 else 1
                stages.append(_BasicBlock(channels, out_channels, stride))
                channels = out_channels
        self.blocks = nn.Sequential(*stages)
        self.head = nn.Linear(channels, num_classes)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        _check_images(images, self.in_channels)
        return self.head(self.blocks(self.stem(images)).mean((2, 3)))
