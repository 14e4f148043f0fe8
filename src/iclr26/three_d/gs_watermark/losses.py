"""Losses of CompMarkGS: Scaffold-GS's image loss, SSIM, the hue-masked HSV loss and PSNR."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from iclr26 import validation as V


def _ssim_map(x: torch.Tensor, y: torch.Tensor, window: int) -> torch.Tensor:
    """SSIM map of (1, C, H, W) tensors (uniform window, valid region)."""
    mu_x, mu_y = F.avg_pool2d(x, window, 1), F.avg_pool2d(y, window, 1)
    sxx = F.avg_pool2d(x * x, window, 1) - mu_x**2
    syy = F.avg_pool2d(y * y, window, 1) - mu_y**2
    sxy = F.avg_pool2d(x * y, window, 1) - mu_x * mu_y
    c1, c2 = 0.01**2, 0.03**2
    return ((2 * mu_x * mu_y + c1) * (2 * sxy + c2)) / ((mu_x**2 + mu_y**2 + c1) * (sxx + syy + c2))


def high_pass(gray: torch.Tensor, cutoff: float = 30.0, width: float = 5.0) -> torch.Tensor:
    """FFT high-pass of an (H, W) image with the mask 1 - exp(-(D - c)^2 / (2 w^2)) on the
    centred spectrum; ``cutoff``/``width`` are given for 1024 px and scaled to H."""
    V.check_tensor(gray, "gray", ndim=2, floating=True)
    cutoff = V.check_scalar(cutoff, "cutoff", low=0)
    width = V.check_scalar(width, "width", low=0, low_open=True)
    h, w = gray.shape
    scale = h / 1024.0
    spec = torch.fft.fftshift(torch.fft.fft2(gray))
    dev = gray.device
    yy, xx = torch.meshgrid(
        torch.arange(h, device=dev) - h // 2, torch.arange(w, device=dev) - w // 2, indexing="ij"
    )
    d = torch.sqrt((yy**2 + xx**2).to(gray.dtype))
    mask = 1 - torch.exp(-((d - cutoff * scale) ** 2) / (2 * (width * scale) ** 2))
    return torch.fft.ifft2(torch.fft.ifftshift(spec * mask)).real


def frequency_error(render: torch.Tensor, target: torch.Tensor, window: int = 7) -> torch.Tensor:
    """P_err = 1 - SSIM map of the high-passed grey images (valid region)."""
    V.check_tensor(render, "render", ndim=3, shape=(None, None, 3), floating=True)
    V.check_tensor(target, "target", ndim=3, shape=tuple(render.shape), floating=True)
    wgt = torch.tensor([0.299, 0.587, 0.114], dtype=render.dtype, device=render.device)
    hp_r, hp_t = high_pass(render @ wgt), high_pass(target @ wgt)
    return 1 - _ssim_map(hp_r[None, None], hp_t[None, None], window)[0, 0]


def ssim(a: torch.Tensor, b: torch.Tensor, window: int = 7) -> torch.Tensor:
    """Mean SSIM of two (H, W, C) images in [0, 1] (uniform window, valid region)."""
    _pair(a, b)
    window = V.check_int(window, "window", low=1, high=min(a.shape[0], a.shape[1]))
    return _ssim_map(a.permute(2, 0, 1)[None], b.permute(2, 0, 1)[None], window).mean()


def _pair(a, b) -> None:
    V.check_tensor(a, "a", ndim=3, floating=True)
    V.check_tensor(b, "b", ndim=3, shape=tuple(a.shape), floating=True)


def psnr(a: torch.Tensor, b: torch.Tensor) -> float:
    """PSNR in dB of two images in [0, 1]."""
    _pair(a, b)
    mse = float(((a - b) ** 2).mean())
    return 10 * float(torch.log10(torch.tensor(1.0 / max(mse, 1e-12))))


def scaffold_loss(model, camera, target: torch.Tensor, features=None) -> torch.Tensor:
    img = model.render(camera, features)
    vol = torch.exp(model.scaling[:, 3:]).prod(dim=1).mean()
    return 0.65 * (img - target).abs().mean() + 0.35 * (1 - ssim(img, target)) + 0.01 * vol


def hue_masks(image: torch.Tensor) -> torch.Tensor:
    """(3, H, W) boolean masks of red / green / blue hue ranges (saturation, value >= 0.2)."""
    V.check_tensor(image, "image", ndim=3, shape=(None, None, 3), floating=True)
    x = image.detach()
    r, g, b = x.unbind(-1)
    mx, mn = x.max(-1).values, x.min(-1).values
    delta = mx - mn
    safe = delta.clamp_min(1e-8)
    h = torch.where(
        mx == r, ((g - b) / safe) % 6, torch.where(mx == g, (b - r) / safe + 2, (r - g) / safe + 4)
    )
    hue = torch.where(delta > 0, 60.0 * h, torch.zeros_like(h))
    sat = torch.where(mx > 0, delta / mx.clamp_min(1e-8), torch.zeros_like(mx))
    ok = (sat >= 0.2) & (mx >= 0.2)
    red = (hue <= 60) | (hue >= 300)
    green = (hue > 60) & (hue <= 180)
    blue = (hue > 180) & (hue < 300)
    return torch.stack([red & ok, green & ok, blue & ok])


def hsv_loss(render: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Mean over red/green/blue of the RGB MSE inside the render's hue mask."""
    V.check_tensor(render, "render", ndim=3, shape=(None, None, 3), floating=True)
    V.check_tensor(target, "target", ndim=3, shape=tuple(render.shape), floating=True)
    m = hue_masks(render).to(render.dtype)[..., None]
    return torch.stack([(mc * (render - target) ** 2).mean() for mc in m]).mean()
