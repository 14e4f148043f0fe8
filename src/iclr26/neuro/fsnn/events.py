"""Event-stream data: saccade-recorded digits ("N-digits") and a delayed-cue memory task."""

from __future__ import annotations

import numpy as np

from iclr26 import validation as V
from iclr26.data import as_rng


def _shift_bilinear(canvas: np.ndarray, dy: float, dx: float) -> np.ndarray:
    """Shift images ``(n, H, W)`` by a sub-pixel offset (bilinear, zero fill)."""
    iy, ix = int(np.floor(dy)), int(np.floor(dx))
    fy, fx = dy - iy, dx - ix
    out = np.zeros_like(canvas)
    for oy, wy in ((iy, 1 - fy), (iy + 1, fy)):
        for ox, wx in ((ix, 1 - fx), (ix + 1, fx)):
            if wy * wx == 0:
                continue
            out += wy * wx * _roll_zero(canvas, oy, ox)
    return out


def _roll_zero(a: np.ndarray, dy: int, dx: int) -> np.ndarray:
    out = np.zeros_like(a)
    h, w = a.shape[-2:]
    ys, yd = (slice(0, h - dy), slice(dy, h)) if dy >= 0 else (slice(-dy, h), slice(0, h + dy))
    xs, xd = (slice(0, w - dx), slice(dx, w)) if dx >= 0 else (slice(-dx, w), slice(0, w + dx))
    out[..., yd, xd] = a[..., ys, xs]
    return out


def saccade_events(
    images: np.ndarray,
    T: int = 16,
    canvas: int = 12,
    threshold: float = 0.15,
    noise_rate: float = 0.002,
    seed: int | np.random.Generator | None = 0,
) -> np.ndarray:
    """DVS-like event streams ``(n, T, 2, canvas, canvas)`` from gray images ``(n, h, w)``.

    Like N-MNIST's recording: the image sits on a larger canvas and moves along a 3-saccade
    triangle over ``T`` steps (bilinear sub-pixel shifts); an ON (OFF) event fires where the
    log-intensity rose (fell) by more than ``threshold`` since the previous step. Sensor noise
    adds random events at ``noise_rate``.
    """
    images = V.check_array(images, "images", ndim=3, dtype=np.float64, low=0.0)
    T = V.check_int(T, "T", low=2)
    canvas = V.check_int(canvas, "canvas", low=1)
    threshold = V.check_scalar(threshold, "threshold", low=0.0, low_open=True)
    noise_rate = V.check_probability(noise_rate, "noise_rate")
    n, h, w = images.shape
    if h > canvas or w > canvas:
        raise ValueError(f"images of {h}x{w} must fit on the canvas of {canvas}x{canvas}")
    rng = as_rng(seed)
    scaled = images / max(images.max(), 1e-12)
    base = np.zeros((n, canvas, canvas))
    base[:, :h, :w] = scaled
    room = canvas - max(h, w)
    vertices = np.array([[0.0, 0.0], [room, room / 2], [0.0, room], [0.0, 0.0]])
    s = np.linspace(0, 3, T + 1)
    edge = np.minimum(s.astype(int), 2)
    frac = s - edge
    path = vertices[edge] + (vertices[edge + 1] - vertices[edge]) * frac[:, None]
    frames = np.stack([_shift_bilinear(base, dy, dx) for dy, dx in path], axis=1)
    log_i = np.log(frames + 0.1)
    diff = np.diff(log_i, axis=1)  # (n, T, H, W)
    events = np.stack([diff > threshold, diff < -threshold], axis=2).astype(np.float32)
    noise = rng.random(events.shape) < noise_rate
    return np.maximum(events, noise.astype(np.float32))


def n_digits(T: int = 16, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's 1797 digits as saccade event streams ``(1797, T, 2, 12, 12)`` + labels."""
    from sklearn.datasets import load_digits

    T = V.check_int(T, "T", low=2)
    digits = load_digits()
    return saccade_events(digits.images, T=T, seed=seed), digits.target.astype(np.int64)


def delayed_cue(
    n: int = 3000,
    T: int = 48,
    channels: int = 20,
    classes: int = 5,
    cue_steps: int = 8,
    noise_rate: float = 0.05,
    seed: int | np.random.Generator | None = 0,
    pattern_seed: int = 7,
) -> tuple[np.ndarray, np.ndarray]:
    """Spike trains ``(n, T, channels)``: a class-specific Poisson pattern during the first
    ``cue_steps`` steps, then class-independent background noise; labels ``(n,)``.
    The class patterns depend on ``pattern_seed`` only (shared by train and test sets)."""
    n = V.check_int(n, "n", low=1)
    cue_steps = V.check_int(cue_steps, "cue_steps", low=1)
    T = V.check_int(T, "T", low=cue_steps + 1)
    channels = V.check_int(channels, "channels", low=1)
    classes = V.check_int(classes, "classes", low=2)
    noise_rate = V.check_probability(noise_rate, "noise_rate")
    patterns = np.random.default_rng(pattern_seed).uniform(0.0, 0.6, (classes, channels))
    rng = as_rng(seed)
    labels = rng.integers(0, classes, n)
    rates = np.full((n, T, channels), noise_rate)
    rates[:, :cue_steps] = patterns[labels][:, None, :]
    spikes = (rng.random(rates.shape) < rates).astype(np.float32)
    return spikes, labels.astype(np.int64)
