"""Rasterisation helpers shared by the synthetic vision generators (numpy only, batched).

Shapes are masks evaluated on a per-image coordinate grid after the inverse of a similarity
transform, so one call renders a whole batch. Every shape fits the unit disc at scale 1.
Polygons use the even-odd rule; the others are implicit functions (signed-distance style).
"""

from __future__ import annotations

import numpy as np

from iclr26 import validation as V


def streams(seed: int | None, names: tuple[str, ...]) -> dict[str, np.random.Generator]:
    """One independent generator per component (spawned from one seed), so that changing one
    option (say, the background) does not reshuffle the others (say, the poses)."""
    seed = V.check_int(seed, "seed", low=0)
    children = np.random.SeedSequence(seed).spawn(len(names))
    return {name: np.random.default_rng(child) for name, child in zip(names, children)}


def check_size(size, name: str = "size", low: int = 8) -> int:
    return V.check_int(size, name, low=low, high=1024)


def grid(size: int) -> tuple[np.ndarray, np.ndarray]:
    """Pixel-centre coordinates in [-1, 1], y down, as (H, W) arrays."""
    c = (np.arange(size, dtype=np.float32) + 0.5) / size * 2.0 - 1.0
    yy, xx = np.meshgrid(c, c, indexing="ij")
    return xx, yy


def local_coords(size: int, cx, cy, scale, angle, flip=None) -> tuple[np.ndarray, np.ndarray]:
    """Each image's grid in its shape's frame: (n, H, W) arrays ``u, v`` so that the shape
    drawn at the origin with radius 1 appears centred at (cx, cy) with radius ``scale``."""
    xx, yy = grid(size)
    cx, cy = np.asarray(cx, np.float32)[:, None, None], np.asarray(cy, np.float32)[:, None, None]
    s = np.asarray(scale, np.float32)[:, None, None]
    a = np.asarray(angle, np.float32)[:, None, None]
    dx, dy = xx[None] - cx, yy[None] - cy
    cos, sin = np.cos(a), np.sin(a)
    u = (cos * dx + sin * dy) / s
    v = (-sin * dx + cos * dy) / s
    if flip is not None:
        u = np.where(np.asarray(flip, bool)[:, None, None], -u, u)
    return u, v


def _polygon(u: np.ndarray, v: np.ndarray, pts: np.ndarray) -> np.ndarray:
    """Even-odd point-in-polygon test for vertices ``pts`` (k, 2)."""
    inside = np.zeros(u.shape, bool)
    k = len(pts)
    for i in range(k):
        x1, y1 = pts[i]
        x2, y2 = pts[(i + 1) % k]
        if y1 == y2:
            continue
        cond = (y1 > v) != (y2 > v)
        x_cross = x1 + (v - y1) * (x2 - x1) / (y2 - y1)
        inside ^= cond & (u < x_cross)
    return inside


def _regular(k: int, start: float = -np.pi / 2) -> np.ndarray:
    t = start + 2 * np.pi * np.arange(k) / k
    return np.stack([np.cos(t), np.sin(t)], 1)


def _star(k: int, inner: float) -> np.ndarray:
    t = -np.pi / 2 + np.pi * np.arange(2 * k) / k
    r = np.where(np.arange(2 * k) % 2 == 0, 1.0, inner)
    return np.stack([r * np.cos(t), r * np.sin(t)], 1)


def _poly(*xy: float) -> np.ndarray:
    return np.asarray(xy, np.float64).reshape(-1, 2)


POLYGONS: dict[str, np.ndarray] = {
    "square": _regular(4, np.pi / 4) * 0.95,
    "triangle": _regular(3),
    "pentagon": _regular(5),
    "hexagon": _regular(6),
    "star5": _star(5, 0.45),
    "cross": _poly(
        -0.3,
        -1,
        0.3,
        -1,
        0.3,
        -0.3,
        1,
        -0.3,
        1,
        0.3,
        0.3,
        0.3,
        0.3,
        1,
        -0.3,
        1,
        -0.3,
        0.3,
        -1,
        0.3,
        -1,
        -0.3,
        -0.3,
        -0.3,
    ),
    "arrow": _poly(-0.9, -0.25, 0.2, -0.25, 0.2, -0.7, 0.95, 0, 0.2, 0.7, 0.2, 0.25, -0.9, 0.25),
    "diamond": _poly(0, -1, 0.55, 0, 0, 1, -0.55, 0),
    "heptagon": _regular(7),
    "octagon": _regular(8, np.pi / 8),
    "star4": _star(4, 0.35),
    "star6": _star(6, 0.5),
    "star8": _star(8, 0.6),
    "ell": _poly(-0.8, -0.9, -0.25, -0.9, -0.25, 0.35, 0.8, 0.35, 0.8, 0.9, -0.8, 0.9),
    "tee": _poly(
        -0.9, -0.9, 0.9, -0.9, 0.9, -0.4, 0.28, -0.4, 0.28, 0.9, -0.28, 0.9, -0.28, -0.4, -0.9, -0.4
    ),
    "u_shape": _poly(
        -0.85,
        -0.9,
        -0.35,
        -0.9,
        -0.35,
        0.35,
        0.35,
        0.35,
        0.35,
        -0.9,
        0.85,
        -0.9,
        0.85,
        0.9,
        -0.85,
        0.9,
    ),
    "trapezoid": _poly(-0.45, -0.6, 0.45, -0.6, 0.95, 0.6, -0.95, 0.6),
    "parallelogram": _poly(-0.5, -0.55, 0.95, -0.55, 0.5, 0.55, -0.95, 0.55),
    "chevron": _poly(-0.9, -0.7, 0, 0.1, 0.9, -0.7, 0.9, -0.1, 0, 0.7, -0.9, -0.1),
    "bowtie": _poly(-0.9, -0.8, 0, -0.15, 0.9, -0.8, 0.9, 0.8, 0, 0.15, -0.9, 0.8),
    "h_shape": _poly(
        -0.85,
        -0.9,
        -0.4,
        -0.9,
        -0.4,
        -0.2,
        0.4,
        -0.2,
        0.4,
        -0.9,
        0.85,
        -0.9,
        0.85,
        0.9,
        0.4,
        0.9,
        0.4,
        0.2,
        -0.4,
        0.2,
        -0.4,
        0.9,
        -0.85,
        0.9,
    ),
    "bar": _poly(-0.95, -0.3, 0.95, -0.3, 0.95, 0.3, -0.95, 0.3),
}


def _implicit(name: str, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    r2 = u * u + v * v
    if name == "circle":
        return r2 <= 0.9**2
    if name == "ring":
        return (r2 <= 0.95**2) & (r2 >= 0.55**2)
    if name == "half_disk":
        return (r2 <= 0.95**2) & (v >= -0.1)
    if name == "ellipse":
        return (u / 0.95) ** 2 + (v / 0.5) ** 2 <= 1.0
    if name == "crescent":
        return (r2 <= 0.9**2) & ((u - 0.4) ** 2 + v * v >= 0.7**2)
    if name == "heart":
        x, y = u * 1.15, -v * 1.15 + 0.15
        return (x * x + y * y - 0.6) ** 3 - x * x * y**3 <= 0.0
    if name == "pacman":
        angle = np.arctan2(v, u)
        return (r2 <= 0.92**2) & ~((np.abs(angle) < 0.6) & (u > 0))
    if name == "frame":
        m = np.maximum(np.abs(u), np.abs(v))
        return (m <= 0.85) & (m >= 0.5)
    raise KeyError(name)


IMPLICIT = ("circle", "ring", "half_disk", "ellipse", "crescent", "heart", "pacman", "frame")


def shape_mask(name: str, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Boolean mask of shape ``name`` on local coordinates ``u, v``."""
    if name in POLYGONS:
        return _polygon(u, v, POLYGONS[name])
    return _implicit(name, u, v)


def outline(name: str, u: np.ndarray, v: np.ndarray, width: float = 0.22) -> np.ndarray:
    """The shape minus a shrunken copy of itself: a stroke of about ``width`` (local units)."""
    inner = shape_mask(name, u / (1 - width), v / (1 - width))
    return shape_mask(name, u, v) & ~inner


def hsv_to_rgb(h, s, v) -> np.ndarray:
    """Vectorised HSV -> RGB, inputs in [0, 1] of equal shape; returns (..., 3)."""
    h, s, v = (np.asarray(a, np.float32) for a in (h, s, v))
    i = np.floor(h * 6.0) % 6
    f = h * 6.0 - np.floor(h * 6.0)
    p, q, t = v * (1 - s), v * (1 - f * s), v * (1 - (1 - f) * s)
    table = [(v, t, p), (q, v, p), (p, v, t), (p, q, v), (t, p, v), (v, p, q)]
    out = np.zeros(h.shape + (3,), np.float32)
    for k, (r, g, b) in enumerate(table):
        sel = i == k
        out[sel] = np.stack([r[sel], g[sel], b[sel]], -1)
    return out


def _upsample(coarse: np.ndarray, size: int) -> np.ndarray:
    """Bilinear upsampling of (n, c+1, c+1) low-resolution noise to (n, H, W)."""
    cells = coarse.shape[1] - 1
    pos = (np.arange(size, dtype=np.float32) + 0.5) / size * cells
    i0 = np.minimum(pos.astype(int), cells - 1)
    f = (pos - i0)[None]
    rows = coarse[:, i0] * (1 - f[..., None]) + coarse[:, i0 + 1] * f[..., None]  # (n, H, c+1)
    return rows[:, :, i0] * (1 - f[:, None, :]) + rows[:, :, i0 + 1] * f[:, None, :]


TEXTURES = ("noise", "stripes", "checker", "smooth")


def texture_pattern(
    rng: np.random.Generator, kinds: np.ndarray, size: int, pixel_noise: bool = True
) -> np.ndarray:
    """A pattern in [0, 1] per image, (n, H, W), of texture kind ``kinds[i]`` (index into
    :data:`TEXTURES`). All random numbers are drawn for every image, whatever its kind, so the
    stream does not depend on the kinds; ``pixel_noise=False`` skips the per-pixel draws
    (kind 0 is then not allowed)."""
    n = len(kinds)
    xx, yy = grid(size)
    freq = rng.uniform(2.0, 6.0, n).astype(np.float32)[:, None, None]
    angle = rng.uniform(0, np.pi, n).astype(np.float32)[:, None, None]
    phase = rng.uniform(0, 2 * np.pi, n).astype(np.float32)[:, None, None]
    pix = rng.random((n, size, size), dtype=np.float32) if pixel_noise else None
    coarse = rng.random((n, 5, 5), dtype=np.float32)
    kinds = np.asarray(kinds)
    out = np.empty((n, size, size), np.float32)
    sel = kinds == 0
    if sel.any():
        if pix is None:
            raise ValueError("texture kind 0 (pixel noise) needs pixel_noise=True")
        out[sel] = pix[sel]
    sel = kinds == 3
    if sel.any():
        out[sel] = _upsample(coarse[sel], size)
    for kind in (1, 2):
        sel = np.flatnonzero(kinds == kind)
        if len(sel) == 0:
            continue
        a, f, ph = angle[sel], freq[sel], phase[sel]
        proj = np.cos(a) * xx[None] + np.sin(a) * yy[None]
        if kind == 1:
            out[sel] = 0.5 + 0.5 * np.sin(np.pi * f * proj + ph)
        else:
            rot = -np.sin(a) * xx[None] + np.cos(a) * yy[None]
            out[sel] = (np.floor(f * (proj + 1)) + np.floor(f * (rot + 1))) % 2
    return out


def textured_background(
    rng: np.random.Generator, n: int, size: int, textured: bool = True
) -> np.ndarray:
    """(n, 3, H, W) backgrounds: two random colours mixed by one of the four textures (or a
    flat random colour when ``textured`` is False; the same numbers are drawn either way)."""
    kinds = rng.integers(0, len(TEXTURES), n)
    c1 = hsv_to_rgb(rng.random(n), rng.uniform(0.0, 0.6, n), rng.uniform(0.2, 0.9, n))
    c2 = hsv_to_rgb(rng.random(n), rng.uniform(0.0, 0.6, n), rng.uniform(0.2, 0.9, n))
    pattern = texture_pattern(rng, kinds, size)
    if not textured:
        pattern = np.zeros_like(pattern)
    return (
        c1[:, :, None, None] * (1 - pattern[:, None]) + c2[:, :, None, None] * pattern[:, None]
    ).astype(np.float32)


def finish(images: np.ndarray, rng: np.random.Generator, sigma: float = 0.03) -> np.ndarray:
    """Add pixel noise of std ``sigma`` and clip to [0, 1] (float32)."""
    noisy = images + rng.normal(0.0, sigma, images.shape).astype(np.float32)
    return np.clip(noisy, 0.0, 1.0).astype(np.float32)


def check_n(n) -> int:
    return V.check_int(n, "n", low=1)
