"""Synthetic LiDAR-like scenes: a ground plane, walls, poles and vegetation blobs as background,
2-6 "car" (about 4 x 2 x 1.5 m, random yaw) and "pedestrian" (about 0.6 x 0.6 x 1.7 m) boxes; a
sensor at the grid centre keeps only the first hit per (azimuth, elevation) beam, so objects are
partial shells whose density falls with range. Points are voxelised with a mean VFE."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from iclr26 import validation as V

CLASSES = ("car", "pedestrian")
_SIZES = {0: (4.0, 2.0, 1.5), 1: (0.6, 0.6, 1.7)}


@dataclass
class LidarScene:
    """One voxelised scene: integer ``coords`` (N, 3), ``feats`` (N, 4: mean x, y, z offsets in
    the voxel and range), ``fg`` (N,) foreground label, ``sem`` (N,) class (0 background,
    1 car, 2 pedestrian), ``boxes`` (K, 7: cx, cy, cz, l, w, h, yaw in metres), ``labels`` and
    ``instance`` (N,) (0 background, k + 1 inside ``boxes[k]``)."""

    coords: torch.Tensor
    feats: torch.Tensor
    fg: torch.Tensor
    sem: torch.Tensor
    boxes: np.ndarray
    labels: np.ndarray
    instance: torch.Tensor | None = None  # (N,) 0 background, k + 1 for boxes[k]


def _box_surface(rng, centre, size, yaw, step):
    l, w, h = size
    pts = []
    for axis, (a, b, c) in enumerate([(l, w, h), (w, l, h), (h, l, w)]):
        uu, vv = np.meshgrid(np.arange(-b / 2, b / 2, step), np.arange(-c / 2, c / 2, step))
        for sign in (-1, 1):
            face = np.zeros((uu.size, 3))
            face[:, axis] = sign * a / 2
            others = [i for i in range(3) if i != axis]
            face[:, others[0]], face[:, others[1]] = uu.ravel(), vv.ravel()
            pts.append(face)
    p = np.concatenate(pts)
    # the face loop above maps (axis0=l, axis1=w, axis2=h); reorder to x=l, y=w, z=h
    cs, sn = np.cos(yaw), np.sin(yaw)
    x, y = p[:, 0] * cs - p[:, 1] * sn, p[:, 0] * sn + p[:, 1] * cs
    return np.stack([x + centre[0], y + centre[1], p[:, 2] + centre[2]], 1)


class SyntheticLidarScenes:
    """A generator of ``n`` scenes on a ``grid_shape`` voxel grid of ``voxel_size`` metres."""

    def __init__(
        self,
        n: int,
        grid_shape=(64, 64, 8),
        voxel_size: float = 0.5,
        seed: int = 0,
        n_objects=(2, 6),
        azimuth_bins: int = 1440,
        elevation_bins: int = 48,
    ):
        self.n = V.check_int(n, "n", low=1)
        gs = V.check_array(grid_shape, "grid_shape", ndim=1, shape=(3,))
        if (gs < 4).any() or not np.all(gs == np.round(gs)):
            raise ValueError("grid_shape must hold integers >= 4")
        self.grid_shape = tuple(int(g) for g in gs)
        self.voxel_size = V.check_scalar(voxel_size, "voxel_size", low=0, low_open=True)
        self.seed = V.check_int(seed, "seed", low=0)
        lo, hi = (V.check_int(v, "n_objects", low=1) for v in n_objects)
        if hi < lo:
            raise ValueError("n_objects must be (low, high) with low <= high")
        self.n_objects = (lo, hi)
        self.az_bins = V.check_int(azimuth_bins, "azimuth_bins", low=8)
        self.el_bins = V.check_int(elevation_bins, "elevation_bins", low=4)
        self._memo: dict[int, LidarScene] = {}

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> LidarScene:
        i = V.check_int(i, "i", low=0, high=self.n - 1)
        if i not in self._memo:  # a scene is generated once (deterministic in seed and i)
            self._memo[i] = self._make(np.random.default_rng([self.seed, i]))
        return self._memo[i]

    def _make(self, rng) -> LidarScene:
        vs = self.voxel_size
        ex, ey, ez = (g * vs for g in self.grid_shape)
        sensor = np.array([ex / 2, ey / 2, 1.8])
        step = vs / 3
        parts = []
        gx, gy = np.meshgrid(np.arange(0, ex, step), np.arange(0, ey, step))
        parts.append(np.stack([gx.ravel(), gy.ravel(), np.full(gx.size, 0.05)], 1))
        for _ in range(rng.integers(2, 5)):  # walls
            c = rng.uniform([0, 0], [ex, ey])
            parts.append(
                _box_surface(
                    rng, (*c, 1.5), (rng.uniform(4, 10), 0.3, 3.0), rng.uniform(0, np.pi), step
                )
            )
        for _ in range(rng.integers(3, 8)):  # poles
            c = rng.uniform([0, 0], [ex, ey])
            parts.append(_box_surface(rng, (*c, 1.75), (0.3, 0.3, 3.5), 0.0, step))
        for _ in range(rng.integers(3, 7)):  # vegetation blobs
            c = np.r_[rng.uniform([0, 0], [ex, ey]), rng.uniform(0.8, 2.0)]
            r = rng.uniform(0.6, 1.4)
            d = rng.normal(size=(int(400 * r * r), 3))
            parts.append(c + r * d / np.linalg.norm(d, axis=1, keepdims=True))
        boxes, labels = [], []
        k = rng.integers(self.n_objects[0], self.n_objects[1] + 1)
        for _ in range(200):  # rejection sampling; a small grid may hold fewer objects
            if len(boxes) == k:
                break
            cls = int(rng.random() < 0.5)
            size = np.array(_SIZES[cls]) * rng.uniform(0.9, 1.1, 3)
            c = np.r_[rng.uniform(2, ex - 2), rng.uniform(2, ey - 2), size[2] / 2]
            if np.hypot(*(c[:2] - sensor[:2])) < 2.5 or any(
                np.hypot(*(c[:2] - b[:2])) < 4.5 for b in boxes
            ):
                continue
            yaw = rng.uniform(-np.pi, np.pi)
            boxes.append(np.r_[c, size, yaw])
            labels.append(cls)
            parts.append(_box_surface(rng, c, size, yaw, step))
        pts = np.concatenate(parts)
        pts = pts[(pts[:, 0] >= 0) & (pts[:, 0] < ex) & (pts[:, 1] >= 0) & (pts[:, 1] < ey)]
        pts = pts[(pts[:, 2] >= 0) & (pts[:, 2] < ez)]
        rel = pts - sensor
        rng_ = np.linalg.norm(rel, axis=1)
        az = ((np.arctan2(rel[:, 1], rel[:, 0]) + np.pi) / (2 * np.pi) * self.az_bins).astype(
            int
        ) % self.az_bins
        el = np.arcsin(rel[:, 2] / np.maximum(rng_, 1e-6))
        eb = ((el + np.radians(30)) / np.radians(40) * self.el_bins).astype(int)
        ok = (eb >= 0) & (eb < self.el_bins)
        pts, rng_, beam = pts[ok], rng_[ok], (az * self.el_bins + eb)[ok]
        order = np.lexsort((rng_, beam))
        first = np.r_[True, beam[order][1:] != beam[order][:-1]]
        pts, rng_ = pts[order][first], rng_[order][first]  # first return per beam
        vox = np.floor(pts / vs).astype(np.int64)
        vox = np.minimum(vox, np.array(self.grid_shape) - 1)
        _, ny, nz = self.grid_shape
        key = (vox[:, 0] * ny + vox[:, 1]) * nz + vox[:, 2]  # lexicographic, as unique(axis=0)
        ukey, inv = np.unique(key, return_inverse=True)
        uniq = np.stack([ukey // (ny * nz), (ukey // nz) % ny, ukey % nz], 1)
        inv = inv.ravel()
        cnt = np.bincount(inv, minlength=len(uniq))[:, None]
        mean = np.zeros((len(uniq), 4))
        np.add.at(mean, inv, np.c_[pts / vs - vox, rng_ / max(ex, ey)])
        mean /= cnt
        centres = (uniq + 0.5) * vs
        sem = np.zeros(len(uniq), dtype=np.int64)
        inst = np.zeros(len(uniq), dtype=np.int64)
        for j, (b, cls) in enumerate(zip(boxes, labels)):
            d = centres - b[:3]
            cs, sn = np.cos(-b[6]), np.sin(-b[6])
            lx, ly = d[:, 0] * cs - d[:, 1] * sn, d[:, 0] * sn + d[:, 1] * cs
            inside = (np.abs(lx) <= b[3] / 2 + 0.5) & (np.abs(ly) <= b[4] / 2 + 0.5)
            inside &= np.abs(d[:, 2]) <= b[5] / 2 + 0.25  # enlarged by 0.5 m in x/y, 0.25 m in z
            inst[inside & (sem == 0)] = j + 1
            sem[inside & (sem == 0)] = cls + 1
        return LidarScene(
            coords=torch.from_numpy(uniq),
            feats=torch.from_numpy(mean).float(),
            fg=torch.from_numpy(sem > 0).float(),
            sem=torch.from_numpy(sem),
            boxes=np.array(boxes).reshape(-1, 7),
            labels=np.array(labels, dtype=np.int64),
            instance=torch.from_numpy(inst),
        )
