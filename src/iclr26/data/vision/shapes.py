"""Textured shape classification images: ``make_shapes`` (families A and B, disjoint).

Each image shows one shape (its class) with a random hue, scale 0.35-0.8 of the half-width,
rotation and position jitter, over one of four background textures (noise, stripes, checker,
smooth noise), plus pixel noise of std 0.03. Labels are balanced. Every random component
(labels, pose, colour, background, pixel noise) has its own stream.
"""

from __future__ import annotations

import numpy as np

from iclr26 import validation as V
from iclr26.data.vision import _draw

FAMILY_A: tuple[str, ...] = (
    "circle", "square", "triangle", "pentagon", "hexagon",
    "star5", "cross", "ring", "half_disk", "arrow",
)  # fmt: skip
FAMILY_B: tuple[str, ...] = (
    "diamond", "heptagon", "octagon", "star4", "star6", "star8", "ell", "tee", "u_shape",
    "trapezoid", "parallelogram", "chevron", "bowtie", "h_shape", "bar", "ellipse",
    "crescent", "heart", "pacman", "frame",
)  # fmt: skip
FAMILIES = {"A": FAMILY_A, "B": FAMILY_B}


def family_shapes(family: str) -> tuple[str, ...]:
    """The shape names of family ``"A"`` (10) or ``"B"`` (20); class ``c`` is shape ``c``."""
    return FAMILIES[V.check_choice(family, "family", tuple(FAMILIES))]


def render_shapes(
    names: list[str] | tuple[str, ...],
    shape_index: np.ndarray,
    size: int,
    pose_rng: np.random.Generator,
    scale_range: tuple[float, float] = (0.35, 0.8),
    jitter: float | None = None,
) -> np.ndarray:
    """Boolean masks (n, H, W) of shape ``names[shape_index[i]]`` under a random pose."""
    n = len(shape_index)
    scale = pose_rng.uniform(*scale_range, n)
    angle = pose_rng.uniform(0, 2 * np.pi, n)
    room = np.maximum(1.0 - scale, 0.0) if jitter is None else np.full(n, jitter)
    cx = pose_rng.uniform(-1, 1, n) * room
    cy = pose_rng.uniform(-1, 1, n) * room
    u, v = _draw.local_coords(size, cx, cy, scale, angle)
    masks = np.zeros((n, size, size), bool)
    for k in np.unique(shape_index):
        sel = np.flatnonzero(shape_index == k)
        masks[sel] = _draw.shape_mask(names[int(k)], u[sel], v[sel])
    return masks


def make_shapes(
    n: int,
    n_classes: int = 10,
    size: int = 32,
    family: str = "A",
    texture_bg: bool = True,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """``(images, labels)``: float32 images (n, 3, size, size) in [0, 1] and int64 labels in
    ``[0, n_classes)``; class ``c`` is shape ``family_shapes(family)[c]``."""
    n = _draw.check_n(n)
    names = family_shapes(family)
    n_classes = V.check_int(n_classes, "n_classes", low=2, high=len(names))
    size = _draw.check_size(size)
    texture_bg = V.check_bool(texture_bg, "texture_bg")
    rng = _draw.streams(seed, ("label", "pose", "colour", "background", "noise"))
    labels = rng["label"].permutation(np.arange(n) % n_classes).astype(np.int64)
    masks = render_shapes(names, labels, size, rng["pose"])
    colour = _draw.hsv_to_rgb(
        rng["colour"].random(n),
        rng["colour"].uniform(0.5, 1.0, n),
        rng["colour"].uniform(0.5, 1.0, n),
    )
    images = _draw.textured_background(rng["background"], n, size, textured=texture_bg)
    images = np.where(masks[:, None], colour[:, :, None, None], images)
    return _draw.finish(images, rng["noise"]), labels
