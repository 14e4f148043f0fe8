"""Multi-object scenes and videos with semantic and instance masks (object discovery data).

``make_scenes``: 2-4 textured family-A shapes per image over a textured background, painted
back to front so that later objects occlude earlier ones. An object left with fewer than
:data:`MIN_VISIBLE` visible pixels is removed and the scene recomposed, so every instance id
in the mask is visible. ``make_videos``: the same scenes with constant-velocity objects that
bounce off the borders; instance ids are the same in every frame.
"""

from __future__ import annotations

import numpy as np

from iclr26 import validation as V
from iclr26.data.vision import _draw
from iclr26.data.vision.shapes import FAMILY_A

MIN_VISIBLE = 10


def _check_objects(n_objects) -> tuple[int, int]:
    if not isinstance(n_objects, tuple | list) or len(n_objects) != 2:
        raise TypeError(f"n_objects must be a (min, max) pair, got {n_objects!r}")
    lo = V.check_int(n_objects[0], "n_objects[0]", low=1, high=8)
    hi = V.check_int(n_objects[1], "n_objects[1]", low=lo, high=8)
    return lo, hi


def _object_layers(rng, n, k_max, size, n_classes, cx, cy, scale, angle):
    """Per-object masks (n, K, H, W), their classes (n, K) and per-object colour images."""
    classes = rng["class"].integers(0, n_classes, (n, k_max))
    flat = lambda a: np.asarray(a).reshape(-1)  # noqa: E731
    u, v = _draw.local_coords(size, flat(cx), flat(cy), flat(scale), flat(angle))
    masks = np.zeros((n * k_max, size, size), bool)
    for c in np.unique(classes):
        sel = np.flatnonzero(flat(classes) == c)
        masks[sel] = _draw.shape_mask(FAMILY_A[int(c)], u[sel], v[sel])
    return masks.reshape(n, k_max, size, size), classes


def _object_colours(rng, n, k_max, size) -> np.ndarray:
    """(n, K, 3, H, W) textured object appearances: a colour modulated by a faint texture."""
    hue = rng.random((n, k_max))
    base = _draw.hsv_to_rgb(
        hue, rng.uniform(0.5, 1.0, (n, k_max)), rng.uniform(0.55, 1.0, (n, k_max))
    )
    kinds = rng.integers(1, len(_draw.TEXTURES), n * k_max)  # stripes, checker, smooth
    pattern = _draw.texture_pattern(rng, kinds, size, pixel_noise=False)
    pattern = pattern.reshape(n, k_max, 1, size, size)
    return (base[..., None, None] * (0.75 + 0.25 * pattern)).astype(np.float32)


def _compose(masks: np.ndarray, present: np.ndarray):
    """Top-most present object per pixel: instance ids 1..K (0 = background), back to front."""
    n, k_max = present.shape
    inst = np.zeros(masks.shape[:1] + masks.shape[2:], np.int64)
    for k in range(k_max):
        inst = np.where(masks[:, k] & present[:, k, None, None], k + 1, inst)
    return inst


def _visible_objects(masks: np.ndarray, present: np.ndarray):
    """Drop objects with fewer than MIN_VISIBLE visible pixels until none is left."""
    present = present.copy()
    for _ in range(present.shape[1]):
        inst = _compose(masks, present)
        counts = np.stack([(inst == k + 1).sum((1, 2)) for k in range(present.shape[1])], 1)
        weak = present & (counts < MIN_VISIBLE)
        if not weak.any():
            break
        # drop only the weakest object per image, then recompose (removing one can reveal others)
        score = np.where(weak, counts, np.iinfo(np.int64).max)
        drop = np.argmin(score, 1)
        rows = np.flatnonzero(weak.any(1))
        present[rows, drop[rows]] = False
    return _compose(masks, present), present


def _renumber(inst: np.ndarray) -> np.ndarray:
    """Instance ids made consecutive (1..k in depth order) per image (or per video)."""
    out = np.zeros_like(inst)
    for i in range(inst.shape[0]):
        ids = np.unique(inst[i])
        ids = ids[ids > 0]
        lut = np.zeros(int(inst[i].max()) + 1, np.int64)
        lut[ids] = np.arange(1, len(ids) + 1)
        out[i] = lut[inst[i]]
    return out


def _paint(background, colours, inst):
    """Images from a background, per-object appearances and the instance map."""
    images = background.copy()
    for k in range(colours.shape[1]):
        images = np.where((inst == k + 1)[:, None], colours[:, k], images)
    return images


def make_scenes(
    n: int,
    size: int = 64,
    n_objects: tuple[int, int] = (2, 4),
    n_classes: int = 6,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(images, semantic, instance)``: float32 images (n, 3, H, W) in [0, 1]; int64
    semantic masks (n, H, W) with 0 = background and class ``c`` stored as ``c + 1``
    (``c`` indexes family A); int64 instance masks (n, H, W), 0 = background, 1..k."""
    n = _draw.check_n(n)
    size = _draw.check_size(size, low=16)
    lo, hi = _check_objects(n_objects)
    n_classes = V.check_int(n_classes, "n_classes", low=1, high=len(FAMILY_A))
    rng = _draw.streams(seed, ("count", "class", "pose", "colour", "background", "noise"))
    count = rng["count"].integers(lo, hi + 1, n)
    present = np.arange(hi)[None] < count[:, None]
    pose = rng["pose"]
    scale = pose.uniform(0.18, 0.36, (n, hi))
    angle = pose.uniform(0, 2 * np.pi, (n, hi))
    cx, cy = pose.uniform(-0.75, 0.75, (n, hi)), pose.uniform(-0.75, 0.75, (n, hi))
    masks, classes = _object_layers(rng, n, hi, size, n_classes, cx, cy, scale, angle)
    inst, present = _visible_objects(masks, present)
    colours = _object_colours(rng["colour"], n, hi, size)
    background = _draw.textured_background(rng["background"], n, size)
    images = _draw.finish(_paint(background, colours, inst), rng["noise"])
    lut = np.concatenate([np.zeros((n, 1), np.int64), classes + 1], 1)
    semantic = np.take_along_axis(lut, inst.reshape(n, -1), 1).reshape(inst.shape)
    return images, semantic, _renumber(inst)


def make_videos(
    n: int,
    frames: int = 6,
    size: int = 64,
    n_objects: tuple[int, int] = (2, 4),
    n_classes: int = 6,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(videos, semantic, instance)``: float32 (n, T, 3, H, W), int64 (n, T, H, W) twice.
    Objects move at constant velocity and bounce off the borders; an object's instance id is
    the same in every frame (it may be hidden in some)."""
    n = _draw.check_n(n)
    frames = V.check_int(frames, "frames", low=1, high=256)
    size = _draw.check_size(size, low=16)
    lo, hi = _check_objects(n_objects)
    n_classes = V.check_int(n_classes, "n_classes", low=1, high=len(FAMILY_A))
    rng = _draw.streams(seed, ("count", "class", "pose", "colour", "background", "noise"))
    count = rng["count"].integers(lo, hi + 1, n)
    present = np.arange(hi)[None] < count[:, None]
    pose = rng["pose"]
    scale = pose.uniform(0.18, 0.32, (n, hi))
    angle = pose.uniform(0, 2 * np.pi, (n, hi))
    cx, cy = pose.uniform(-0.7, 0.7, (n, hi)), pose.uniform(-0.7, 0.7, (n, hi))
    vx, vy = pose.uniform(-0.15, 0.15, (n, hi)), pose.uniform(-0.15, 0.15, (n, hi))
    spin = pose.uniform(-0.2, 0.2, (n, hi))
    colours = _object_colours(rng["colour"], n, hi, size)
    background = _draw.textured_background(rng["background"], n, size)
    classes = rng["class"].integers(0, n_classes, (n, hi))
    videos = np.zeros((n, frames, 3, size, size), np.float32)
    semantic = np.zeros((n, frames, size, size), np.int64)
    instance = np.zeros((n, frames, size, size), np.int64)
    lut = np.concatenate([np.zeros((n, 1), np.int64), classes + 1], 1)
    for t in range(frames):
        masks = np.zeros((n, hi, size, size), bool)
        u, v = _draw.local_coords(size, cx.ravel(), cy.ravel(), scale.ravel(), angle.ravel())
        for c in np.unique(classes):
            sel = np.flatnonzero(classes.ravel() == c)
            masks.reshape(-1, size, size)[sel] = _draw.shape_mask(FAMILY_A[int(c)], u[sel], v[sel])
        inst = _compose(masks, present)
        videos[:, t] = _paint(background, colours, inst)
        instance[:, t] = inst
        semantic[:, t] = np.take_along_axis(lut, inst.reshape(n, -1), 1).reshape(inst.shape)
        # constant velocity, reflected at the borders (the centre stays within +-(1 - scale))
        cx, cy, angle = cx + vx, cy + vy, angle + spin
        lim = 1.0 - scale
        for pos, vel in ((cx, vx), (cy, vy)):
            over = np.abs(pos) > lim
            pos[over] = np.sign(pos[over]) * (2 * lim[over] - np.abs(pos[over]))
            vel[over] = -vel[over]
    videos = _draw.finish(videos, rng["noise"])
    return videos, semantic, _renumber(instance)
