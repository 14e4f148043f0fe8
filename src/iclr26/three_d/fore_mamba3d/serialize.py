"""Serialisation of sparse voxels (paper, "rotated Hilbert flattening"): the scene is rotated
about z by R(theta, p) = (floor(x cos t + y sin t), floor(y cos t - x sin t), z), shifted back
into the non-negative octant and ordered by the 3-D Hilbert index (Skilling's transpose form)."""

from __future__ import annotations

import math

import numpy as np
import torch

from iclr26 import validation as V


def _as_coords(coords, name: str = "coords") -> np.ndarray:
    if isinstance(coords, torch.Tensor):
        V.check_tensor(coords, name, ndim=2, shape=(None, 3), integer=True)
        coords = coords.detach().cpu().numpy()
    arr = V.check_array(coords, name, ndim=2, shape=(None, 3))
    if not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"{name} must hold integer voxel coordinates, got {arr.dtype}")
    return arr.astype(np.int64)


def hilbert_index(coords, bits: int) -> np.ndarray:
    """3-D Hilbert index of integer coordinates in ``[0, 2**bits)`` (consecutive indices are
    face-adjacent cells)."""
    bits = V.check_int(bits, "bits", low=1, high=20)
    arr = _as_coords(coords)
    if arr.min() < 0 or arr.max() >= 2**bits:
        raise ValueError(f"coords must lie in [0, {2**bits}) for bits={bits}")
    x = [arr[:, i].astype(np.uint64) for i in range(3)]
    q = 1 << (bits - 1)
    while q > 1:  # inverse undo of the excess work
        p = np.uint64(q - 1)
        for i in range(3):
            hit = (x[i] & np.uint64(q)) != 0
            x[0] = np.where(hit, x[0] ^ p, x[0])
            t = np.where(hit, np.uint64(0), (x[0] ^ x[i]) & p)
            x[0] ^= t
            x[i] ^= t
        q >>= 1
    for i in range(1, 3):  # Gray encode
        x[i] ^= x[i - 1]
    t = np.zeros_like(x[0])
    q = 1 << (bits - 1)
    while q > 1:
        t = np.where((x[2] & np.uint64(q)) != 0, t ^ np.uint64(q - 1), t)
        q >>= 1
    for i in range(3):
        x[i] ^= t
    h = np.zeros_like(x[0])
    for b in range(bits):
        for i in range(3):
            h |= ((x[i] >> np.uint64(b)) & np.uint64(1)) << np.uint64(b * 3 + (2 - i))
    return h.astype(np.int64)


def rotate_coords(coords, theta: float, grid_shape) -> np.ndarray:
    """R(theta, p) about z, then shifted so that the rotated grid starts at 0 (the rotated
    corners of ``grid_shape`` decide the shift, so the shift does not depend on the data)."""
    arr = _as_coords(coords)
    theta = V.check_scalar(theta, "theta")
    gs = V.check_array(grid_shape, "grid_shape", ndim=1, shape=(3,))
    if (gs < 1).any():
        raise ValueError("grid_shape must be positive")
    c, s = round(math.cos(theta), 12), round(math.sin(theta), 12)

    def rot(x, y):
        return np.floor(x * c + y * s), np.floor(y * c - x * s)

    cx = np.array([0, gs[0] - 1, 0, gs[0] - 1], dtype=float)
    cy = np.array([0, 0, gs[1] - 1, gs[1] - 1], dtype=float)
    rx, ry = rot(cx, cy)
    px, py = rot(arr[:, 0].astype(float), arr[:, 1].astype(float))
    out = np.stack([px - rx.min(), py - ry.min(), arr[:, 2]], axis=1)
    return out.astype(np.int64)


def hilbert_order(coords, theta: float = 0.0, grid_shape=None) -> np.ndarray:
    """The permutation that sorts voxels by the Hilbert index of their rotated coordinates."""
    arr = _as_coords(coords)
    if grid_shape is None:
        grid_shape = arr.max(axis=0) + 1
    rotated = rotate_coords(arr, theta, grid_shape)
    bits = max(1, int(math.ceil(math.log2(max(int(rotated.max()) + 1, 2)))))
    return np.argsort(hilbert_index(rotated, bits), kind="stable")
