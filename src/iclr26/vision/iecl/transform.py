"""The entropy-generating learnable transformation A_phi (applied to the second view).

*Project instantiation* (the paper's parameterisation was not available): a bounded
residual ``v' = clamp(v + s * tanh(c_phi([v, xi])), 0, 1)``, where ``xi ~ N(0, I)`` are
noise channels (so A_phi is stochastic and can add information rather than only shift the
image), ``c_phi`` is a 3-layer conv net and ``s = max_delta`` bounds the change per pixel.
The last layer starts at zero, so A_phi starts as the identity.
"""

from __future__ import annotations

import torch
from torch import nn

from iclr26 import validation as V
from iclr26.models.vision.protocol import check_images


class LearnableEntropyTransform(nn.Module):
    def __init__(
        self,
        in_ch: int = 3,
        width: int = 32,
        noise_ch: int = 3,
        max_delta: float = 0.15,
        zero_init: bool = True,
    ):
        super().__init__()
        self.in_ch = V.check_int(in_ch, "in_ch", low=1)
        width = V.check_int(width, "width", low=1)
        self.noise_ch = V.check_int(noise_ch, "noise_ch", low=0)
        self.max_delta = V.check_scalar(max_delta, "max_delta", low=0.0, high=1.0, low_open=True)
        V.check_bool(zero_init, "zero_init")
        self.net = nn.Sequential(
            nn.Conv2d(self.in_ch + self.noise_ch, width, 3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(width, width, 3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(width, self.in_ch, 3, padding=1),
        )
        if zero_init:
            nn.init.zeros_(self.net[-1].weight)
            nn.init.zeros_(self.net[-1].bias)

    def forward(self, v: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        check_images(v, "v", channels=self.in_ch, unit_range=True)
        parts = [v]
        if self.noise_ch:
            noise = torch.randn(
                (v.shape[0], self.noise_ch, *v.shape[2:]), generator=generator, dtype=v.dtype
            ).to(v.device)
            parts.append(noise)
        delta = self.max_delta * torch.tanh(self.net(torch.cat(parts, 1)))
        return (v + delta).clamp(0.0, 1.0)
