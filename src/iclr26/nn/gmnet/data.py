"""Texture patches from images bundled with scikit-image (``skimage-patches-8``).

Eight grayscale images, one class each. Training crops come from the left three quarters of
each image and test crops from the right quarter, so no pixel is shared. Each 32x32 crop is
standardised on its own (mean 0, std 1) so that global brightness, a low-frequency cue,
cannot identify the class; training crops are randomly flipped.
"""

from __future__ import annotations

import numpy as np
import torch

from iclr26 import validation as V
from iclr26.data import load_image

PATCH_IMAGES = ("brick", "grass", "gravel", "camera", "coins", "moon", "page", "text")


def _crops(
    image: np.ndarray, n: int, size: int, rng: np.random.Generator, flip: bool
) -> np.ndarray:
    h, w = image.shape
    if h < size or w < size:
        raise ValueError(f"image region {h}x{w} is smaller than the crop size {size}")
    ys = rng.integers(0, h - size + 1, n)
    xs = rng.integers(0, w - size + 1, n)
    windows = np.lib.stride_tricks.sliding_window_view(image, (size, size))
    crops = windows[ys, xs].copy()
    if flip:
        horizontal = rng.random(n) < 0.5
        vertical = rng.random(n) < 0.5
        crops[horizontal] = crops[horizontal, :, ::-1]
        crops[vertical] = crops[vertical, ::-1, :]
    return crops


def texture_patches(
    n_train: int = 3000,
    n_test: int = 800,
    size: int = 32,
    seed: int = 0,
    images: tuple[str, ...] = PATCH_IMAGES,
):
    """``(x_train, y_train, x_test, y_test)`` as float32 tensors (N, 1, size, size) and labels."""
    V.check_int(n_train, "n_train", low=1)
    V.check_int(n_test, "n_test", low=1)
    V.check_int(size, "size", low=4)
    V.check_int(seed, "seed", low=0)
    if isinstance(images, str) or not images:
        raise ValueError(f"images must be a non-empty tuple of image names, got {images!r}")
    if n_train < len(images) or n_test < len(images):
        raise ValueError(
            f"n_train and n_test must give at least one crop per class ({len(images)}), "
            f"got {n_train} and {n_test}"
        )
    rng = np.random.default_rng(seed)
    out = {"train": ([], []), "test": ([], [])}
    for label, name in enumerate(images):
        image = load_image(name, gray=True)
        split_col = (3 * image.shape[1]) // 4
        regions = {"train": image[:, :split_col], "test": image[:, split_col:]}
        totals = {"train": n_train, "test": n_test}
        for split, region in regions.items():
            count = totals[split] // len(images) + (label < totals[split] % len(images))
            crops = _crops(region, count, size, rng, flip=split == "train")
            out[split][0].append(crops)
            out[split][1].append(np.full(count, label))
    tensors = []
    for split in ("train", "test"):
        x = np.concatenate(out[split][0]).astype(np.float32)
        x = (x - x.mean(axis=(1, 2), keepdims=True)) / (x.std(axis=(1, 2), keepdims=True) + 1e-6)
        y = np.concatenate(out[split][1])
        tensors += [torch.from_numpy(x[:, None]), torch.from_numpy(y).long()]
    return tuple(tensors)
