"""The contrastive objective of the base framework: SimCLR's NT-Xent (InfoNCE) loss."""

from __future__ import annotations

import torch
from torch import nn

from iclr26 import validation as V
from iclr26.models.vision import nt_xent


class InfoNCELoss(nn.Module):
    """NT-Xent over the 2B views of a batch: L = mean over views of
    ``-log exp(s(z_i, z_i+) / tau) / sum_{k != i} exp(s(z_i, z_k) / tau)`` with cosine
    similarity ``s``; symmetric in its two arguments."""

    def __init__(self, temperature: float = 0.2):
        super().__init__()
        self.temperature = V.check_scalar(temperature, "temperature", low=0.0, low_open=True)

    def forward(self, z1: torch.Tensor, z2: torch.Tensor) -> torch.Tensor:
        V.check_tensor(z1, "z1", ndim=2, floating=True)
        V.check_tensor(z2, "z2", shape=tuple(z1.shape), floating=True)
        if z1.shape[0] < 2:
            raise ValueError(f"z1 needs at least 2 rows (one negative per view), got {z1.shape[0]}")
        return nt_xent(z1, z2, self.temperature)
