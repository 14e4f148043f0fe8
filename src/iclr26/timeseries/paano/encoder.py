"""PaAno's patch encoder: a four-block 1-D CNN with global average pooling (Sec. 3.2).

Blocks of Conv1d ('same' padding, no bias) + BatchNorm1d + ReLU with channels
[128, 256, 128, 64] and kernels [7, 5, 3, 3]; the pooled output h is the patch embedding used
by the memory bank. Two heads serve training only: the projection head g (64 -> 256 -> 256)
whose L2-normalised output z enters the triplet loss, and the pretext head c, a linear logit on
the concatenation [h_a, h_b] of two embeddings. ``width_mult`` scales every channel count (the
paper's model is ``width_mult=1``); ``revin=True`` normalises each patch per channel inside the
encoder (no affine, eps 1e-5), the variant the official univariate script uses.
"""

from __future__ import annotations

import torch
from torch import nn

from iclr26 import validation as V

CHANNELS = (128, 256, 128, 64)
KERNELS = (7, 5, 3, 3)


class PatchRevIN(nn.Module):
    """Instance normalisation of a patch: zero mean, unit variance per channel, no affine."""

    def __init__(self, eps: float = 1e-5, min_sigma: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.min_sigma = min_sigma

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mu = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, unbiased=False, keepdim=True)
        sigma = (var + self.eps).sqrt().clamp_min(self.min_sigma)
        return (x - mu) / sigma


class PatchEncoder(nn.Module):
    """Maps patches (B, C, w) to embeddings h (B, D), D = 64 * width_mult."""

    def __init__(
        self,
        in_channels: int = 1,
        width_mult: float = 1.0,
        projection_dim: int = 256,
        revin: bool = False,
    ):
        super().__init__()
        in_channels = V.check_int(in_channels, "in_channels", low=1)
        width_mult = V.check_scalar(width_mult, "width_mult", low=0.0, low_open=True)
        projection_dim = V.check_int(projection_dim, "projection_dim", low=1)
        revin = V.check_bool(revin, "revin")
        widths = [max(1, int(round(c * width_mult))) for c in CHANNELS]
        self.in_channels = in_channels
        self.embed_dim = widths[-1]
        self.revin = PatchRevIN() if revin else None
        blocks = []
        prev = in_channels
        for width, k in zip(widths, KERNELS):
            blocks += [
                nn.Conv1d(prev, width, kernel_size=k, padding=k // 2, bias=False),
                nn.BatchNorm1d(width),
                nn.ReLU(inplace=True),
            ]
            prev = width
        self.body = nn.Sequential(*blocks)
        proj = max(1, int(round(projection_dim * width_mult))) if width_mult < 1 else projection_dim
        self.projection_head = nn.Sequential(
            nn.Linear(self.embed_dim, proj), nn.ReLU(), nn.Linear(proj, proj)
        )
        self.pretext_head = nn.Linear(2 * self.embed_dim, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The embedding h of each patch."""
        V.check_tensor(x, "x", ndim=3, shape=(None, self.in_channels, None), floating=True)
        if self.revin is not None:
            x = self.revin(x)
        return self.body(x).mean(dim=-1)

    def project(self, h: torch.Tensor) -> torch.Tensor:
        """z = g(h) / ||g(h)||, the space of the triplet loss."""
        return nn.functional.normalize(self.projection_head(h), dim=1)

    def pretext_logit(self, h_a: torch.Tensor, h_b: torch.Tensor) -> torch.Tensor:
        """Logit that h_b's patch immediately precedes h_a's."""
        return self.pretext_head(torch.cat([h_a, h_b], dim=1)).squeeze(1)

    def encoder_parameters(self) -> int:
        """Parameters of the conv body only (what the memory bank depends on)."""
        return sum(p.numel() for p in self.body.parameters())
