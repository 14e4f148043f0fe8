"""Photometric losses of 3D Gaussian Splatting: a differentiable SSIM in the form of the 3DGS
reference implementation and its L1 + D-SSIM training loss.

SSIM (Wang et al., 2004) as 3DGS computes it: local means, variances and the covariance are
Gaussian-weighted averages over an 11 x 11 window (sigma 1.5, normalised weights), taken per
channel with zero padding of 5 pixels so that the map has the size of the image ('same');
C1 = 0.01^2 and C2 = 0.03^2 (a data range of 1); the score is the mean of the map over every
pixel and channel. Images are laid out as :func:`~iclr26.three_d.gs_raster.render` returns
them, channels last: (H, W, C), or (B, H, W, C) for a batch.

Near the border the window reaches into the zero padding, so the map there differs from an
implementation that pads by reflection (scikit-image); at least 5 pixels away from the border
the window lies inside the image and the two agree."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from iclr26 import validation as V

WINDOW_SIZE = 11
WINDOW_SIGMA = 1.5
SSIM_C1 = 0.01**2
SSIM_C2 = 0.03**2


def gaussian_window(
    size: int = WINDOW_SIZE, sigma: float = WINDOW_SIGMA, *, dtype=torch.float32, device=None
) -> torch.Tensor:
    """The (size, size) SSIM window: the outer product of a normalised 1-D Gaussian of std
    ``sigma`` sampled at the integer offsets -size//2 .. size//2 (sums to 1)."""
    size = V.check_int(size, "size", low=1)
    if size % 2 == 0:
        raise ValueError(f"size must be odd, got {size}")
    sigma = V.check_scalar(sigma, "sigma", low=0, low_open=True)
    x = torch.arange(size, dtype=torch.float64) - size // 2
    g = torch.exp(-(x**2) / (2 * sigma**2))
    g = g / g.sum()
    return torch.outer(g, g).to(dtype=dtype, device=device)


def _pair(a, b, name_a: str, name_b: str):
    V.check_tensor(a, name_a, ndim=(3, 4), floating=True)
    V.check_tensor(b, name_b, ndim=(3, 4), floating=True)
    if a.shape != b.shape:
        raise ValueError(
            f"{name_b} must have the shape of {name_a} {tuple(a.shape)}, got {tuple(b.shape)}"
        )
    h, w = a.shape[-3], a.shape[-2]
    if min(h, w) < WINDOW_SIZE:
        raise ValueError(
            f"{name_a} must be at least {WINDOW_SIZE}x{WINDOW_SIZE} pixels (the SSIM window), "
            f"got {h}x{w} (images are (H, W, C) or (B, H, W, C))"
        )


def _ssim_map(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    batched = a.dim() == 4
    x = (a if batched else a[None]).permute(0, 3, 1, 2)  # (B, C, H, W)
    y = (b if batched else b[None]).permute(0, 3, 1, 2).to(x.dtype)
    c = x.shape[1]
    win = gaussian_window(dtype=x.dtype, device=x.device)[None, None].expand(c, 1, -1, -1)
    pad = WINDOW_SIZE // 2

    def blur(t):
        return F.conv2d(t, win, padding=pad, groups=c)  # zero padding, per channel

    mu_x, mu_y = blur(x), blur(y)
    mu_xx, mu_yy, mu_xy = mu_x * mu_x, mu_y * mu_y, mu_x * mu_y
    var_x = blur(x * x) - mu_xx
    var_y = blur(y * y) - mu_yy
    cov = blur(x * y) - mu_xy
    num = (2 * mu_xy + SSIM_C1) * (2 * cov + SSIM_C2)
    den = (mu_xx + mu_yy + SSIM_C1) * (var_x + var_y + SSIM_C2)
    out = (num / den).permute(0, 2, 3, 1)  # back to channels last
    return out if batched else out[0]


def ssim_map(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Per-pixel, per-channel SSIM of two images (H, W, C) or (B, H, W, C), same shape as the
    input (see the module docstring for the window, padding and constants). Differentiable."""
    _pair(a, b, "a", "b")
    return _ssim_map(a, b)


def ssim(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Mean SSIM (a 0-d tensor, 1 for identical images, in [-1, 1]) of two images (H, W, C)
    or (B, H, W, C) with values in [0, 1]; the mean runs over every pixel, channel and image,
    border pixels included (3DGS). Differentiable in both arguments."""
    _pair(a, b, "a", "b")
    return _ssim_map(a, b).mean()


def l1_dssim_loss(
    render: torch.Tensor, target: torch.Tensor, lambda_dssim: float = 0.2
) -> torch.Tensor:
    """The 3DGS photometric loss ``(1 - lambda_dssim) * L1 + lambda_dssim * (1 - SSIM)``, L1 the
    mean absolute error over all pixels and channels; images (H, W, C) or (B, H, W, C).
    ``lambda_dssim`` in [0, 1] (0.2, the 3DGS default)."""
    _pair(render, target, "render", "target")
    lam = V.check_scalar(lambda_dssim, "lambda_dssim", low=0.0, high=1.0)
    target = target.to(render.dtype)
    l1 = (render - target).abs().mean()
    if lam == 0.0:
        return l1
    return (1.0 - lam) * l1 + lam * (1.0 - _ssim_map(render, target).mean())


__all__ = [
    "SSIM_C1",
    "SSIM_C2",
    "WINDOW_SIGMA",
    "WINDOW_SIZE",
    "gaussian_window",
    "l1_dssim_loss",
    "ssim",
    "ssim_map",
]
