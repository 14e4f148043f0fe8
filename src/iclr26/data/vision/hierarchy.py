"""Two-level labelled shapes: ``make_hier_shapes``.

The superclass is a shape (family A); the subclass is a variant of it, a tint band crossed
with a stroke style (filled or outlined), so sibling subclasses share the shape and differ
in appearance only.
"""

from __future__ import annotations

import numpy as np

from iclr26 import validation as V
from iclr26.data.vision import _draw
from iclr26.data.vision.shapes import FAMILY_A


def make_hier_shapes(
    n: int, n_super: int = 4, n_sub: int = 3, size: int = 32, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(images, y_sub, y_super)``: float32 (n, 3, H, W) in [0, 1]; ``y_sub = y_super *
    n_sub + variant`` in ``[0, n_super * n_sub)``; ``y_super`` in ``[0, n_super)``. Variant
    ``k`` has hue band ``k`` of ``n_sub`` and is outlined when ``k`` is odd."""
    n = _draw.check_n(n)
    n_super = V.check_int(n_super, "n_super", low=2, high=len(FAMILY_A))
    n_sub = V.check_int(n_sub, "n_sub", low=1, high=8)
    size = _draw.check_size(size)
    rng = _draw.streams(seed, ("label", "pose", "colour", "background", "noise"))
    y_sub = rng["label"].permutation(np.arange(n) % (n_super * n_sub)).astype(np.int64)
    y_super, variant = y_sub // n_sub, y_sub % n_sub
    pose = rng["pose"]
    scale = pose.uniform(0.45, 0.8, n)
    angle = pose.uniform(0, 2 * np.pi, n)
    room = 1.0 - scale
    cx, cy = pose.uniform(-1, 1, n) * room, pose.uniform(-1, 1, n) * room
    u, v = _draw.local_coords(size, cx, cy, scale, angle)
    masks = np.zeros((n, size, size), bool)
    for s in range(n_super):
        for outlined in (False, True):
            sel = np.flatnonzero((y_super == s) & ((variant % 2 == 1) == outlined))
            if len(sel):
                draw = _draw.outline if outlined else _draw.shape_mask
                masks[sel] = draw(FAMILY_A[s], u[sel], v[sel])
    col = rng["colour"]
    hue = (variant + col.uniform(0.15, 0.85, n)) / n_sub
    colour = _draw.hsv_to_rgb(hue % 1, col.uniform(0.7, 1.0, n), col.uniform(0.7, 1.0, n))
    images = _draw.textured_background(rng["background"], n, size)
    images = np.where(masks[:, None], colour[:, :, None, None], images)
    return _draw.finish(images, rng["noise"]), y_sub, y_super
