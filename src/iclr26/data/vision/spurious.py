"""Shapes on spurious backgrounds (Waterbirds-style): ``make_spurious_shapes``.

The class is a family-A shape; the background is "water" (blue waves) or "land" (green/brown
grain). With probability ``rho`` the background is the one that goes with the class
(background ``y % 2``), otherwise the other one, so a classifier can shortcut through the
background on the training distribution and fail on the minority groups.
"""

from __future__ import annotations

import numpy as np

from iclr26 import validation as V
from iclr26.data.vision import _draw
from iclr26.data.vision.shapes import FAMILY_A, render_shapes

BACKGROUNDS = ("water", "land")


def _backgrounds(rng: np.random.Generator, bg: np.ndarray, size: int) -> np.ndarray:
    n = len(bg)
    xx, yy = _draw.grid(size)
    freq = rng.uniform(3.0, 6.0, n).astype(np.float32)[:, None, None]
    phase = rng.uniform(0, 2 * np.pi, n).astype(np.float32)[:, None, None]
    grain = rng.random((n, size, size), dtype=np.float32)
    waves = 0.5 + 0.5 * np.sin(
        np.pi * freq * (yy[None] + 0.15 * np.sin(3 * np.pi * xx[None])) + phase
    )
    water = np.stack([0.1 + 0.15 * waves, 0.3 + 0.2 * waves, 0.6 + 0.35 * waves], 1)
    land = np.stack([0.35 + 0.25 * grain, 0.4 + 0.2 * grain, 0.12 + 0.1 * grain], 1)
    return np.where((bg == 0)[:, None, None, None], water, land).astype(np.float32)


def make_spurious_shapes(
    n: int, rho: float, n_classes: int = 2, size: int = 32, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """``(images, labels, backgrounds, groups, captions)``: float32 (n, 3, H, W) in [0, 1];
    int64 labels; int64 background ids (0 water, 1 land); int64 groups ``2 * y + bg``;
    captions such as ``"a photo of a circle on water"``."""
    n = _draw.check_n(n)
    rho = V.check_probability(rho, "rho")
    n_classes = V.check_int(n_classes, "n_classes", low=2, high=len(FAMILY_A))
    size = _draw.check_size(size)
    rng = _draw.streams(seed, ("label", "match", "pose", "colour", "background", "noise"))
    labels = rng["label"].permutation(np.arange(n) % n_classes).astype(np.int64)
    match = rng["match"].random(n) < rho
    backgrounds = np.where(match, labels % 2, 1 - labels % 2).astype(np.int64)
    masks = render_shapes(FAMILY_A, labels, size, rng["pose"], scale_range=(0.45, 0.75))
    colour = _draw.hsv_to_rgb(
        rng["colour"].uniform(0.9, 1.1, n) % 1,
        rng["colour"].uniform(0.0, 0.25, n),
        rng["colour"].uniform(0.8, 1.0, n),
    )  # light, desaturated objects so the colour carries no class information
    images = _backgrounds(rng["background"], backgrounds, size)
    images = np.where(masks[:, None], colour[:, :, None, None], images)
    captions = [
        f"a photo of a {FAMILY_A[y]} on {BACKGROUNDS[b]}" for y, b in zip(labels, backgrounds)
    ]
    groups = 2 * labels + backgrounds
    return _draw.finish(images, rng["noise"]), labels, backgrounds, groups, captions
