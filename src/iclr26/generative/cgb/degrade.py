"""Degradations and image patches from scikit-image's bundled images.

The paper's SR pairs come from the Real-ESRGAN pipeline resized back to the HR size; here a
simple, deterministic stand-in: x4 area downsampling then bicubic upsampling back, and
additive Gaussian noise on [0, 1] images."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from iclr26 import validation as V
from iclr26.data.images import load_image

TRAIN_IMAGES = (
    "astronaut",
    "coffee",
    "chelsea",
    "rocket",
    "coins",
    "moon",
    "grass",
    "gravel",
    "brick",
    "immunohistochemistry",
)
TEST_IMAGES = ("camera",)
TASKS = ("denoise", "sr4")


def image_patches(
    names=TRAIN_IMAGES, n: int = 512, size: int = 16, downscale: int = 4, seed: int = 0
) -> np.ndarray:
    """``n`` random grayscale ``size x size`` patches (float32 in [0, 1]) from the named
    bundled images, each first shrunk ``downscale`` times (area mean) so a small patch holds
    edges and texture rather than flat regions."""
    from skimage.transform import downscale_local_mean

    n = V.check_int(n, "n", low=1)
    size = V.check_int(size, "size", low=4)
    if size % 4:
        raise ValueError(f"size must be divisible by 4, got {size}")
    downscale = V.check_int(downscale, "downscale", low=1)
    if isinstance(names, str) or not len(names):
        raise ValueError("names must be a non-empty sequence of image names")
    rng = np.random.default_rng(V.check_int(seed, "seed", low=0))
    images = [
        downscale_local_mean(load_image(name, gray=True), (downscale, downscale)) for name in names
    ]
    out = np.empty((n, size, size), dtype=np.float32)
    which = rng.integers(0, len(images), n)
    for i, k in enumerate(which):
        img = images[k]
        r = rng.integers(0, img.shape[0] - size + 1)
        c = rng.integers(0, img.shape[1] - size + 1)
        out[i] = img[r : r + size, c : c + size]
    return np.clip(out, 0.0, 1.0)


def degrade(clean, task: str, sigma: float = 0.2, seed: int = 0) -> np.ndarray:
    """The degraded observation of ``(n, H, W)`` clean images in [0, 1]: ``"denoise"`` adds
    N(0, sigma^2) noise; ``"sr4"`` area-downsamples x4 and bicubic-upsamples back."""
    from iclr26.generative.cgb.network import as_batch

    x = as_batch(clean, "clean")
    task = V.check_choice(task, "task", TASKS)
    if task == "denoise":
        sigma = V.check_scalar(sigma, "sigma", low=0.0, low_open=True, high=1.0)
        g = torch.Generator().manual_seed(V.check_int(seed, "seed", low=0))
        y = x + sigma * torch.randn(x.shape, generator=g)
    else:
        low = F.avg_pool2d(x, 4)
        y = F.interpolate(low, scale_factor=4, mode="bicubic", align_corners=False)
    return y[:, 0].numpy()
