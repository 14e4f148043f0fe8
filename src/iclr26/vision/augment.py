"""Batched image augmentations in torch, without torchvision (shared by the vision rooms).

Every function takes a float batch (B, C, H, W) in [0, 1] and an optional
``torch.Generator`` and draws its random parameters for the whole batch at once. The
geometric ones work through ``F.affine_grid`` / ``F.grid_sample`` and can return the
(B, 2, 3) sampling matrices (output coordinates -> input coordinates, normalised to
[-1, 1], ``align_corners=False``), so an equivariance loss can warp feature maps with
:func:`warp` by the same transform.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from iclr26 import validation as V

__all__ = [
    "color_jitter",
    "gaussian_blur",
    "random_affine",
    "random_grayscale",
    "random_hflip",
    "random_resized_crop",
    "simclr_augment",
    "warp",
]


def _check_batch(x, name: str = "x") -> torch.Tensor:
    V.check_tensor(x, name, ndim=4, floating=True)
    return x


def _uniform(n: int, low: float, high: float, generator, device) -> torch.Tensor:
    return low + (high - low) * torch.rand(n, generator=generator).to(device)


def _range(value, name: str, low: float | None = None, high: float | None = None):
    if not isinstance(value, tuple | list) or len(value) != 2:
        raise TypeError(f"{name} must be a (min, max) pair, got {value!r}")
    lo = V.check_scalar(value[0], f"{name}[0]", low=low, high=high)
    hi = V.check_scalar(value[1], f"{name}[1]", low=lo, high=high)
    return lo, hi


def warp(
    maps: torch.Tensor,
    theta: torch.Tensor,
    size: tuple[int, int] | None = None,
    mode: str = "bilinear",
) -> torch.Tensor:
    """Resample ``maps`` (B, C, H, W) with sampling matrices ``theta`` (B, 2, 3), e.g. those
    returned by :func:`random_resized_crop` or :func:`random_affine`; ``size`` is the output
    (H, W) (default: the input's). Points that fall outside are zero."""
    _check_batch(maps, "maps")
    V.check_tensor(theta, "theta", shape=(maps.shape[0], 2, 3), floating=True)
    size = tuple(maps.shape[-2:]) if size is None else tuple(size)
    grid = F.affine_grid(
        theta.to(maps.dtype), (maps.shape[0], maps.shape[1], *size), align_corners=False
    )
    return F.grid_sample(maps, grid, mode=mode, padding_mode="zeros", align_corners=False)


def random_resized_crop(
    x: torch.Tensor,
    size: int | None = None,
    scale: tuple[float, float] = (0.2, 1.0),
    ratio: tuple[float, float] = (3 / 4, 4 / 3),
    generator: torch.Generator | None = None,
    return_matrix: bool = False,
):
    """Crops of a random area fraction in ``scale`` and aspect ratio in ``ratio`` (log-uniform),
    resized bilinearly to ``size`` x ``size`` (default: the input size). The crop is clipped
    to the image. Returns the crops, and the (B, 2, 3) matrices when ``return_matrix``."""
    _check_batch(x)
    size = x.shape[-1] if size is None else V.check_int(size, "size", low=1)
    lo, hi = _range(scale, "scale", low=0.0, high=1.0)
    if lo <= 0:
        raise ValueError(f"scale[0] must be > 0, got {lo}")
    r_lo, r_hi = _range(ratio, "ratio", low=0.0)
    if r_lo <= 0:
        raise ValueError(f"ratio[0] must be > 0, got {r_lo}")
    b, dev = x.shape[0], x.device
    area = _uniform(b, lo, hi, generator, dev)
    log_r = _uniform(b, math.log(r_lo), math.log(r_hi), generator, dev)
    aspect = torch.exp(log_r)
    w = torch.sqrt(area * aspect).clamp(max=1.0)  # fraction of the width
    h = torch.sqrt(area / aspect).clamp(max=1.0)
    cx = (torch.rand(b, generator=generator).to(dev) * 2 - 1) * (1 - w)
    cy = (torch.rand(b, generator=generator).to(dev) * 2 - 1) * (1 - h)
    theta = torch.zeros(b, 2, 3, device=dev, dtype=x.dtype)
    theta[:, 0, 0], theta[:, 0, 2], theta[:, 1, 1], theta[:, 1, 2] = w, cx, h, cy
    out = warp(x, theta, (size, size))
    return (out, theta) if return_matrix else out


def random_affine(
    x: torch.Tensor,
    degrees: float = 15.0,
    translate: float = 0.1,
    scale: tuple[float, float] = (0.9, 1.1),
    generator: torch.Generator | None = None,
    return_matrix: bool = True,
):
    """Random rotation (uniform in +-``degrees``), translation (up to ``translate`` of the
    half-width) and isotropic scaling; border pixels are replicated. Returns the images and
    the (B, 2, 3) matrices (output -> input coordinates) unless ``return_matrix=False``."""
    _check_batch(x)
    degrees = V.check_scalar(degrees, "degrees", low=0.0, high=180.0)
    translate = V.check_scalar(translate, "translate", low=0.0, high=1.0)
    s_lo, s_hi = _range(scale, "scale", low=0.0)
    if s_lo <= 0:
        raise ValueError(f"scale[0] must be > 0, got {s_lo}")
    b, dev = x.shape[0], x.device
    angle = _uniform(b, -degrees, degrees, generator, dev) * math.pi / 180
    zoom = _uniform(b, s_lo, s_hi, generator, dev)
    shift = (torch.rand(b, 2, generator=generator).to(dev) * 2 - 1) * translate
    cos, sin = torch.cos(angle) / zoom, torch.sin(angle) / zoom
    theta = torch.stack(
        [torch.stack([cos, -sin, shift[:, 0]], 1), torch.stack([sin, cos, shift[:, 1]], 1)], 1
    ).to(x.dtype)
    grid = F.affine_grid(theta, tuple(x.shape), align_corners=False)
    out = F.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=False)
    return (out, theta) if return_matrix else out


def random_hflip(
    x: torch.Tensor,
    p: float = 0.5,
    generator: torch.Generator | None = None,
    return_mask: bool = False,
):
    """Flip each image left-right with probability ``p``."""
    _check_batch(x)
    p = V.check_probability(p, "p")
    flip = torch.rand(x.shape[0], generator=generator).to(x.device) < p
    out = torch.where(flip[:, None, None, None], x.flip(-1), x)
    return (out, flip) if return_mask else out


def _gray(x: torch.Tensor) -> torch.Tensor:
    if x.shape[1] != 3:
        return x.mean(1, keepdim=True)
    w = torch.tensor([0.299, 0.587, 0.114], device=x.device, dtype=x.dtype)
    return (x * w[None, :, None, None]).sum(1, keepdim=True)


_RGB_TO_YIQ = torch.tensor(
    [[0.299, 0.587, 0.114], [0.596, -0.274, -0.322], [0.211, -0.523, 0.312]], dtype=torch.float64
)
_YIQ_TO_RGB = torch.linalg.inv(_RGB_TO_YIQ)


def _hue_matrices(shift: torch.Tensor) -> torch.Tensor:
    """(B, 3, 3) RGB matrices rotating the chroma (I, Q) plane of YIQ by ``2 pi shift``."""
    angle = 2 * math.pi * shift.double()
    cos, sin = torch.cos(angle), torch.sin(angle)
    rot = torch.zeros(len(shift), 3, 3, dtype=torch.float64, device=shift.device)
    rot[:, 0, 0] = 1
    rot[:, 1, 1], rot[:, 1, 2], rot[:, 2, 1], rot[:, 2, 2] = cos, -sin, sin, cos
    yiq, rgb = _RGB_TO_YIQ.to(shift.device), _YIQ_TO_RGB.to(shift.device)
    return rgb @ rot @ yiq


def color_jitter(
    x: torch.Tensor,
    brightness: float = 0.4,
    contrast: float = 0.4,
    saturation: float = 0.4,
    hue: float = 0.1,
    p: float = 0.8,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """SimCLR-style colour jitter applied with probability ``p`` per image: brightness,
    contrast and saturation factors uniform in [1 - a, 1 + a], a hue shift uniform in
    +-``hue`` (fraction of the colour circle, applied as a rotation of the YIQ chroma plane,
    one 3x3 matrix per image, instead of torchvision's HSV round trip), in this fixed order.
    Output clipped to [0, 1]."""
    _check_batch(x)
    brightness = V.check_scalar(brightness, "brightness", low=0.0, high=1.0)
    contrast = V.check_scalar(contrast, "contrast", low=0.0, high=1.0)
    saturation = V.check_scalar(saturation, "saturation", low=0.0, high=1.0)
    hue = V.check_scalar(hue, "hue", low=0.0, high=0.5)
    p = V.check_probability(p, "p")
    b, dev = x.shape[0], x.device
    apply = (torch.rand(b, generator=generator).to(dev) < p)[:, None, None, None]
    fb = _uniform(b, 1 - brightness, 1 + brightness, generator, dev)[:, None, None, None]
    fc = _uniform(b, 1 - contrast, 1 + contrast, generator, dev)[:, None, None, None]
    fs = _uniform(b, 1 - saturation, 1 + saturation, generator, dev)[:, None, None, None]
    fh = _uniform(b, -hue, hue, generator, dev)
    out = (x * fb).clamp(0, 1)
    mean = _gray(out).mean((2, 3), keepdim=True)
    out = ((out - mean) * fc + mean).clamp(0, 1)
    if x.shape[1] == 3:
        gray = _gray(out)
        out = ((out - gray) * fs + gray).clamp(0, 1)
        if hue > 0:
            out = torch.einsum("bij,bjhw->bihw", _hue_matrices(fh).to(x.dtype), out)
    return torch.where(apply, out.clamp(0, 1), x)


def random_grayscale(
    x: torch.Tensor, p: float = 0.2, generator: torch.Generator | None = None
) -> torch.Tensor:
    """Replace an image by its luminance (repeated over the channels) with probability ``p``."""
    _check_batch(x)
    p = V.check_probability(p, "p")
    apply = (torch.rand(x.shape[0], generator=generator).to(x.device) < p)[:, None, None, None]
    return torch.where(apply, _gray(x).expand_as(x), x)


def gaussian_blur(
    x: torch.Tensor,
    sigma: tuple[float, float] = (0.1, 2.0),
    p: float = 0.5,
    kernel_size: int | None = None,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Separable Gaussian blur with a per-image sigma uniform in ``sigma`` (pixels), applied
    with probability ``p``; reflect padding. ``kernel_size`` defaults to about 10% of the
    image side (odd, at least 3)."""
    _check_batch(x)
    s_lo, s_hi = _range(sigma, "sigma", low=0.0)
    if s_lo <= 0:
        raise ValueError(f"sigma[0] must be > 0, got {s_lo}")
    p = V.check_probability(p, "p")
    if kernel_size is None:
        kernel_size = max(3, int(0.1 * x.shape[-1]) // 2 * 2 + 1)
    kernel_size = V.check_int(kernel_size, "kernel_size", low=1)
    if kernel_size % 2 == 0:
        raise ValueError(f"kernel_size must be odd, got {kernel_size}")
    b, c, h, w = x.shape
    dev = x.device
    apply = (torch.rand(b, generator=generator).to(dev) < p)[:, None, None, None]
    s = _uniform(b, s_lo, s_hi, generator, dev)
    r = kernel_size // 2
    offs = torch.arange(-r, r + 1, device=dev, dtype=x.dtype)
    k = torch.exp(-(offs[None] ** 2) / (2 * s[:, None] ** 2))
    k = k / k.sum(1, keepdim=True)  # (B, K)
    pad = min(r, h - 1, w - 1)
    if pad < r:  # image smaller than the kernel: trim the kernel (renormalised)
        k = k[:, r - pad : r + pad + 1]
        k = k / k.sum(1, keepdim=True)
    flat = x.reshape(1, b * c, h, w)
    kh = k.repeat_interleave(c, 0)[:, None, :, None]
    kw = k.repeat_interleave(c, 0)[:, None, None, :]
    out = F.conv2d(F.pad(flat, (0, 0, pad, pad), mode="reflect"), kh, groups=b * c)
    out = F.conv2d(F.pad(out, (pad, pad, 0, 0), mode="reflect"), kw, groups=b * c)
    return torch.where(apply, out.reshape(b, c, h, w), x)


def simclr_augment(
    x: torch.Tensor,
    size: int | None = None,
    crop_scale: tuple[float, float] = (0.2, 1.0),
    jitter: float = 0.4,
    hue: float = 0.1,
    jitter_p: float = 0.8,
    gray_p: float = 0.2,
    blur_p: float = 0.0,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """The SimCLR view distribution: random resized crop, horizontal flip, colour jitter
    (probability ``jitter_p``), grayscale (``gray_p``) and, optionally, blur (``blur_p``; off
    by default, as in SimCLR's CIFAR recipe)."""
    _check_batch(x)
    out = random_resized_crop(x, size, scale=crop_scale, generator=generator)
    out = random_hflip(out, generator=generator)
    out = color_jitter(out, jitter, jitter, jitter, hue, p=jitter_p, generator=generator)
    out = random_grayscale(out, p=gray_p, generator=generator)
    if blur_p > 0:
        out = gaussian_blur(out, p=blur_p, generator=generator)
    return out
