"""Baselines of the AnyUp paper, with the upsamplers' common call ``f(image, features,
output_size=None)``.

- :func:`bilinear`, :func:`bicubic`: interpolation of the features alone (the image is only
  checked and gives the default output size).
- :class:`JointBilateralUpsampler`: training-free joint bilateral upsampling (Kopf et al.,
  2007): each output pixel averages the low-resolution features in a (2R + 1)^2 neighbourhood
  with weights exp(-d^2 / 2 sigma_s^2) exp(-|I(p) - I_low(q)|^2 / 2 sigma_r^2), d measured in
  low-resolution cells and I_low the area-downsampled guidance.
- :class:`SpecificUpsampler`: the AnyUp architecture with a fixed ``Conv(in_dim -> qk)`` in
  place of the feature-agnostic layer (the JAFAR-like, feature-specific ablation): it only
  accepts features with ``in_dim`` channels and must be trained per encoder.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from iclr26 import validation as V
from iclr26.vision.anyup.layers import ResBlock
from iclr26.vision.anyup.model import AnyUp, check_inputs


def _interpolate(image, features, output_size, mode: str) -> torch.Tensor:
    image, features, size = check_inputs(image, features, output_size, unit_range=False)
    return F.interpolate(features, size=size, mode=mode, align_corners=False)


def bilinear(image: torch.Tensor, features: torch.Tensor, output_size=None) -> torch.Tensor:
    """Bilinear interpolation of ``features`` (B, C, h, w) to ``output_size`` (default: the
    image size)."""
    return _interpolate(image, features, output_size, "bilinear")


def bicubic(image: torch.Tensor, features: torch.Tensor, output_size=None) -> torch.Tensor:
    """Bicubic interpolation of ``features`` to ``output_size`` (default: the image size)."""
    return _interpolate(image, features, output_size, "bicubic")


class JointBilateralUpsampler(nn.Module):
    """Training-free joint bilateral upsampling guided by an image in [0, 1].

    ``sigma_spatial`` is in low-resolution cells, ``sigma_range`` in RGB units, ``radius``
    the neighbourhood half-width in low-resolution cells. The weights are positive and
    normalised, so outputs are convex combinations of input features."""

    def __init__(self, sigma_spatial: float = 1.0, sigma_range: float = 0.15, radius: int = 2):
        super().__init__()
        self.sigma_spatial = V.check_scalar(sigma_spatial, "sigma_spatial", low=0.0, low_open=True)
        self.sigma_range = V.check_scalar(sigma_range, "sigma_range", low=0.0, low_open=True)
        self.radius = V.check_int(radius, "radius", low=0, high=16)

    def forward(
        self, image: torch.Tensor, features: torch.Tensor, output_size=None
    ) -> torch.Tensor:
        image, features, (hh, ww) = check_inputs(image, features, output_size, unit_range=True)
        b, c, lh, lw = features.shape
        dev, dt = features.device, features.dtype
        if (hh, ww) == tuple(image.shape[-2:]):
            guide = image.to(dt)
        else:
            guide = F.interpolate(image.to(dt), size=(hh, ww), mode="bilinear", antialias=True)
        guide_low = F.adaptive_avg_pool2d(image.to(dt), (lh, lw)).flatten(2)  # (B, 3, h*w)
        # continuous low-res coordinates of each output pixel centre
        ur = (torch.arange(hh, device=dev, dtype=dt) + 0.5) * lh / hh - 0.5
        uc = (torch.arange(ww, device=dev, dtype=dt) + 0.5) * lw / ww - 0.5
        cr, cc = ur.round().long(), uc.round().long()
        offs = torch.arange(-self.radius, self.radius + 1, device=dev)
        qr = cr[:, None] + offs[None]  # (H, K1)
        qc = cc[:, None] + offs[None]  # (W, K1)
        ok_r, ok_c = (qr >= 0) & (qr < lh), (qc >= 0) & (qc < lw)
        qr, qc = qr.clamp(0, lh - 1), qc.clamp(0, lw - 1)
        d_r = torch.exp(-((ur[:, None] - qr) ** 2) / (2 * self.sigma_spatial**2)) * ok_r
        d_c = torch.exp(-((uc[:, None] - qc) ** 2) / (2 * self.sigma_spatial**2)) * ok_c
        k1 = len(offs)
        spatial = (d_r[:, None, :, None] * d_c[None, :, None, :]).reshape(hh * ww, k1 * k1)
        index = (qr[:, None, :, None] * lw + qc[None, :, None, :]).reshape(hh * ww, k1 * k1)
        g_q = guide_low[:, :, index]  # (B, 3, H*W, K)
        diff2 = ((guide.flatten(2)[..., None] - g_q) ** 2).sum(1)  # (B, H*W, K)
        weight = spatial[None] * torch.exp(-diff2 / (2 * self.sigma_range**2))
        dense = torch.zeros(b, hh * ww, lh * lw, device=dev, dtype=dt)
        dense.scatter_add_(2, index[None].expand(b, -1, -1), weight)
        dense = dense / dense.sum(2, keepdim=True).clamp_min(1e-30)
        out = dense @ features.flatten(2).transpose(1, 2)  # (B, H*W, C)
        return out.transpose(1, 2).reshape(b, c, hh, ww)


class SpecificUpsampler(AnyUp):
    """AnyUp with a fixed ``Conv(in_dim -> qk_dim)`` (kernel ``kernel_size_lfu``) instead of
    the feature-agnostic layer: trained for one encoder's ``in_dim`` channels only."""

    def __init__(self, in_dim: int, **kwargs):
        self.in_dim = V.check_int(in_dim, "in_dim", low=1)
        super().__init__(**kwargs)

    def _feature_encoder(self, init_gaussian_derivatives: bool) -> nn.Module:
        k = self.kernel_size_lfu
        conv = nn.Conv2d(self.in_dim, self.qk_dim, k, padding=k // 2, bias=False)
        return nn.Sequential(
            conv, ResBlock(self.qk_dim, self.qk_dim), ResBlock(self.qk_dim, self.qk_dim)
        )

    def _check_features(self, features: torch.Tensor) -> None:
        if features.shape[1] != self.in_dim:
            raise ValueError(
                f"features must have in_dim = {self.in_dim} channels for this feature-specific "
                f"upsampler, got {features.shape[1]}"
            )
