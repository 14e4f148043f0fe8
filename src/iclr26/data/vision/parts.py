"""Bird-like part objects for part discovery: ``make_part_objects``.

A template of four parts (head, body, wing, tail) under a random similarity transform and a
horizontal flip. The class is a combination of the head colour (4), the wing pattern (2) and
the tail colour (2), so each class has neighbours that differ in exactly one part; the body
colour and the background are nuisances drawn independently of the class.
"""

from __future__ import annotations

import numpy as np

from iclr26 import validation as V
from iclr26.data.vision import _draw

PARTS = ("background", "head", "body", "wing", "tail")
HEAD_HUES = (0.0, 0.15, 0.55, 0.8)  # red, yellow, cyan-blue, purple
TAIL_HUES = (0.33, 0.65)  # green, blue


def part_attributes(label: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(head colour, wing pattern, tail colour) indices of each class label."""
    label = np.asarray(label)
    return label % 4, (label // 4) % 2, (label // 8) % 2


def _template(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Part ids (0 bg, 1 head, 2 body, 3 wing, 4 tail) on local coordinates, facing +u."""
    parts = np.zeros(u.shape, np.int64)
    tail = (u < -0.35) & (u > -0.95) & (np.abs(v) < (-(u + 0.35)) * 0.8 + 0.05)
    body = ((u + 0.05) / 0.55) ** 2 + (v / 0.33) ** 2 <= 1.0
    head = (u - 0.6) ** 2 + (v + 0.12) ** 2 <= 0.24**2
    wing = ((u + 0.1) / 0.38) ** 2 + ((v + 0.02) / 0.17) ** 2 <= 1.0
    for pid, mask in ((4, tail), (2, body), (1, head), (3, wing)):
        parts = np.where(mask, pid, parts)
    return parts


def make_part_objects(
    n: int, n_classes: int = 16, size: int = 64, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(images, labels, part_masks)``: float32 (n, 3, H, W) in [0, 1], int64 labels in
    ``[0, n_classes)`` and int64 part masks (n, H, W) with ids of :data:`PARTS`."""
    n = _draw.check_n(n)
    n_classes = V.check_int(n_classes, "n_classes", low=2, high=16)
    size = _draw.check_size(size, low=16)
    rng = _draw.streams(seed, ("label", "pose", "colour", "background", "noise"))
    labels = rng["label"].permutation(np.arange(n) % n_classes).astype(np.int64)
    pose = rng["pose"]
    scale = pose.uniform(0.6, 0.85, n)
    angle = pose.uniform(-np.pi / 6, np.pi / 6, n)
    flip = pose.random(n) < 0.5
    cx, cy = pose.uniform(-0.12, 0.12, n), pose.uniform(-0.12, 0.12, n)
    u, v = _draw.local_coords(size, cx, cy, scale, angle, flip)
    parts = _template(u, v)
    head_i, wing_i, tail_i = part_attributes(labels)
    col = rng["colour"]
    jitter = col.uniform(-0.03, 0.03, (n, 3))
    body = _draw.hsv_to_rgb(
        col.uniform(0.05, 0.12, n), col.uniform(0.2, 0.5, n), col.uniform(0.35, 0.7, n)
    )
    head = _draw.hsv_to_rgb(
        (np.take(HEAD_HUES, head_i) + jitter[:, 0]) % 1, np.full(n, 0.9), np.full(n, 0.95)
    )
    tail = _draw.hsv_to_rgb(
        (np.take(TAIL_HUES, tail_i) + jitter[:, 1]) % 1, np.full(n, 0.85), np.full(n, 0.85)
    )
    wing_base = np.clip(body * 0.6, 0, 1)
    stripes = (np.sin(u * 22.0) > 0)[:, None]  # wing pattern 1: stripes across the wing
    spots = (((u * 6) % 1 - 0.5) ** 2 + ((v * 6) % 1 - 0.5) ** 2 < 0.09)[:, None]
    pattern = np.where((wing_i == 1)[:, None, None, None], stripes, spots)
    wing = np.where(pattern, 0.95, wing_base[:, :, None, None])
    images = _draw.textured_background(rng["background"], n, size)
    for pid, colour in ((1, head), (2, body), (4, tail)):
        images = np.where((parts == pid)[:, None], colour[:, :, None, None], images)
    images = np.where((parts == 3)[:, None], wing, images).astype(np.float32)
    return _draw.finish(images, rng["noise"]), labels, parts
