"""Real images bundled with scikit-image and scikit-learn (nothing is downloaded).

``skimage_images`` returns the eight RGB(-converted) pictures, ``skimage_crops`` random
square crops of them, ``lfw_faces`` the LFW subset and ``digits`` scikit-learn's 8x8 digits,
optionally upsampled; all as float32 in [0, 1], channels first.
"""

from __future__ import annotations

import functools

import numpy as np

from iclr26 import validation as V

SKIMAGE_RGB = (
    "astronaut", "camera", "coffee", "chelsea", "rocket", "coins",
    "immunohistochemistry", "hubble_deep_field",
)  # fmt: skip


def skimage_images() -> dict[str, np.ndarray]:
    """``{name: (3, H, W) float32 in [0, 1]}``; grey images are repeated over 3 channels.
    The arrays are read once per process and returned read-only."""
    return dict(_skimage_images())


@functools.lru_cache(maxsize=1)
def _skimage_images() -> tuple[tuple[str, np.ndarray], ...]:
    from skimage import data, util

    out = {}
    for name in SKIMAGE_RGB:
        image = util.img_as_float32(getattr(data, name)())
        if image.ndim == 2:
            image = np.repeat(image[..., None], 3, axis=2)
        array = np.ascontiguousarray(image[..., :3].transpose(2, 0, 1), dtype=np.float32)
        array.flags.writeable = False
        out[name] = array
    return tuple(out.items())


@functools.lru_cache(maxsize=4)
def _reduced(short_side: int):
    """The bundled images resized (area averaging) so that the shorter side is ``short_side``."""
    import torch
    import torch.nn.functional as F

    out = []
    for image in skimage_images().values():
        h, w = image.shape[1:]
        k = short_side / min(h, w)
        t = torch.from_numpy(image.copy())[None]
        out.append(F.interpolate(t, size=(round(h * k), round(w * k)), mode="area")[0])
    return tuple(out)


def skimage_crops(n: int, size: int = 64, seed: int = 0, min_frac: float = 0.15) -> np.ndarray:
    """``n`` random square crops (n, 3, size, size) of the bundled images, each with a side of
    ``min_frac``-0.6 of the shorter image side, resampled bilinearly from a copy of the image
    reduced (by area averaging) to a shorter side of ``3 * size``."""
    import torch
    import torch.nn.functional as F

    n = V.check_int(n, "n", low=1)
    size = V.check_int(size, "size", low=4, high=1024)
    min_frac = V.check_scalar(min_frac, "min_frac", low=0.0, high=0.6, low_open=True)
    images = _reduced(3 * size)
    rng = np.random.default_rng(V.check_int(seed, "seed", low=0))
    which = rng.integers(0, len(images), n)
    frac = rng.uniform(min_frac, 0.6, n)
    pos = rng.random((n, 2))
    crops = torch.empty((n, 3, size, size))
    for k, image in enumerate(images):
        sel = np.flatnonzero(which == k)
        if len(sel) == 0:
            continue
        h, w = image.shape[1:]
        side = frac[sel] * min(h, w)
        sx, sy = side / w, side / h  # half-extent of the crop in normalised coordinates
        cx = -1 + sx + pos[sel, 1] * (2 - 2 * sx)
        cy = -1 + sy + pos[sel, 0] * (2 - 2 * sy)
        theta = np.zeros((len(sel), 2, 3), np.float32)
        theta[:, 0, 0], theta[:, 0, 2], theta[:, 1, 1], theta[:, 1, 2] = sx, cx, sy, cy
        grid = F.affine_grid(
            torch.from_numpy(theta), (len(sel), 3, size, size), align_corners=False
        )
        src = image[None].expand(len(sel), -1, -1, -1)
        crops[torch.from_numpy(sel)] = F.grid_sample(src, grid, align_corners=False)
    return crops.clamp(0, 1).numpy()


def lfw_faces() -> tuple[np.ndarray, np.ndarray]:
    """``(images, labels)``: scikit-image's LFW subset, (200, 1, 25, 25) float32 in [0, 1]
    and 1 = face, 0 = not a face (the first 100 are faces)."""
    from skimage import data

    images = np.asarray(data.lfw_subset(), np.float32)[:, None]
    labels = (np.arange(len(images)) < 100).astype(np.int64)
    return np.clip(images, 0, 1), labels


def digits(size: int = 8, channels: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """``(images, labels)``: scikit-learn's digits as (1797, channels, size, size) float32 in
    [0, 1] (bilinear upsampling when ``size > 8``) and int64 labels 0-9."""
    import torch
    import torch.nn.functional as F
    from sklearn.datasets import load_digits

    size = V.check_int(size, "size", low=8, high=256)
    channels = V.check_choice(channels, "channels", (1, 3))
    bunch = load_digits()
    images = torch.from_numpy((bunch.images / 16.0).astype(np.float32))[:, None]
    if size != 8:
        images = F.interpolate(images, size=(size, size), mode="bilinear", align_corners=False)
    images = images.clamp(0, 1).repeat(1, channels, 1, 1).numpy()
    return np.ascontiguousarray(images), bunch.target.astype(np.int64)
