"""scikit-image's bundled images, as float arrays in [0, 1]."""

from __future__ import annotations

import numpy as np

GRAY = (
    "camera",
    "coins",
    "moon",
    "page",
    "text",
    "horse",
    "checkerboard",
    "brick",
    "grass",
    "gravel",
)
COLOR = ("astronaut", "coffee", "chelsea", "rocket", "immunohistochemistry")


def load_image(name: str, gray: bool | None = None) -> np.ndarray:
    """A bundled image by name; ``gray=True`` converts colour images to luminance."""
    from skimage import color, data, util

    if name not in GRAY + COLOR:
        raise ValueError(f"unknown image {name!r}; valid: {', '.join(GRAY + COLOR)}")
    image = util.img_as_float(getattr(data, name)())
    if gray and image.ndim == 3:
        image = color.rgb2gray(image[..., :3])
    return np.asarray(image, dtype=np.float64)
