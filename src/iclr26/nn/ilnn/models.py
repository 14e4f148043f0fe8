"""Sequence classifiers: the ILNN 1-D CNN and its matched Euclidean counterpart."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from . import ops
from .layers import LorentzConv1d, LorentzFC, LorentzReLU
from .norm import GyroBN, GyroLBN, LorentzBN

NORMS = {"gyrolbn": GyroLBN, "gyrobn": GyroBN, "lbn": LorentzBN}


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
        if norm not in NORMS:
            raise ValueError(f"norm must be one of {tuple(NORMS)}, got {norm!r}")
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
        self.head = LorentzFC(channels, classes, curvature, head=True)
        for module in self.modules():
            if hasattr(module, "validate_input"):
                module.validate_input = False  # inner points are on the manifold by construction

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 3 or x.shape[-1] != self.vocab:
            raise ValueError(f"expected one-hot input (B, L, {self.vocab}), got {tuple(x.shape)}")
        h = ops.expmap0(self.embed(x), self.c)
        for conv, norm in zip(self.convs, self.norms):
            h = ops.gyro_add(h, self.act(norm(conv(h))), self.c)
        pooled = ops.lorentz_centroid(h, dim=1, c=self.c)
        return self.head(pooled)


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
        self.vocab = vocab
        self.embed = nn.Linear(vocab, channels)
        self.convs = nn.ModuleList(
            nn.Conv1d(channels, channels, kernel_size, padding=kernel_size // 2)
            for _ in range(layers)
        )
        self.norms = nn.ModuleList(nn.BatchNorm1d(channels) for _ in range(layers))
        self.head = nn.Linear(channels, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 3 or x.shape[-1] != self.vocab:
            raise ValueError(f"expected one-hot input (B, L, {self.vocab}), got {tuple(x.shape)}")
        h = self.embed(x).transpose(1, 2)
        for conv, norm in zip(self.convs, self.norms):
            h = h + F.relu(norm(conv(h)))
        return self.head(h.mean(-1))
