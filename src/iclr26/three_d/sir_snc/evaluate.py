"""Procedural test shapes with analytic SDFs, the baselines (Draco, a non-learned SIR codec,
a dense TSDF + lzma) and the metrics (symmetric Chamfer-L2, F-score, Bjontegaard BD-rate)."""

from __future__ import annotations

import lzma
import struct
from collections.abc import Callable

import numpy as np

from iclr26 import validation as V
from iclr26.three_d.sir_snc.entropy import decode_octree, encode_octree, encode_symbols
from iclr26.three_d.sir_snc.sir import SIR, sparse_marching_cubes

# -- shapes ------------------------------------------------------------------------------


def _sphere(p, c, r):
    return np.linalg.norm(p - c, axis=1) - r


def _box(p, c, h):
    q = np.abs(p - c) - h
    return np.linalg.norm(np.maximum(q, 0), axis=1) + np.minimum(q.max(1), 0)


def _capsule(p, a, b, r):
    ba = b - a
    t = np.clip(((p - a) @ ba) / (ba @ ba), 0, 1)
    return np.linalg.norm(p - a - t[:, None] * ba, axis=1) - r


def _torus(p, c, big, small):
    q = p - c
    return np.hypot(np.hypot(q[:, 0], q[:, 1]) - big, q[:, 2]) - small


def random_shape(rng: np.random.Generator, n_parts: int = 3) -> Callable[[np.ndarray], np.ndarray]:
    """A smooth union (polynomial smooth-min, k = 0.1) of random spheres, boxes, capsules and
    tori inside [-0.8, 0.8]^3: an exact-enough analytic SDF."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")
    n_parts = V.check_int(n_parts, "n_parts", low=1, high=64)
    parts = []
    for _ in range(int(n_parts)):
        kind = int(rng.integers(4))
        c = rng.uniform(-0.35, 0.35, 3)
        if kind == 0:
            parts.append((_sphere, (c, rng.uniform(0.2, 0.4))))
        elif kind == 1:
            parts.append((_box, (c, rng.uniform(0.12, 0.3, 3))))
        elif kind == 2:
            parts.append((_capsule, (c - rng.uniform(-0.3, 0.3, 3), c, rng.uniform(0.08, 0.18))))
        else:
            parts.append((_torus, (c, rng.uniform(0.2, 0.35), rng.uniform(0.06, 0.12))))

    def sdf(p: np.ndarray) -> np.ndarray:
        d = None
        for fn, args in parts:
            e = fn(p, *args)
            if d is None:
                d = e
            else:
                h = np.clip(0.5 + 0.5 * (e - d) / 0.1, 0, 1)
                d = e * (1 - h) + d * h - 0.1 * h * (1 - h)
        return d

    return sdf


def reference_mesh(sdf, res: int = 128) -> tuple[np.ndarray, np.ndarray]:
    """The ground-truth mesh: marching cubes of the dense SDF at ``res``^3 in [-1, 1]^3."""
    from skimage.measure import marching_cubes

    if not callable(sdf):
        raise TypeError(f"sdf must be callable, got {type(sdf).__name__}")
    res = V.check_int(res, "res", low=4, high=1024)
    ax = np.linspace(-1, 1, res)
    pts = np.stack(np.meshgrid(ax, ax, ax, indexing="ij"), -1).reshape(-1, 3)
    v, f, _, _ = marching_cubes(sdf(pts).reshape(res, res, res).astype(np.float32), 0.0)
    return v * (2.0 / (res - 1)) - 1.0, f.astype(np.int64)


# -- metrics -----------------------------------------------------------------------------


def _samples(vertices, faces, n: int, seed: int) -> np.ndarray:
    import trimesh

    mesh = trimesh.Trimesh(vertices, faces, process=False)
    return trimesh.sample.sample_surface(mesh, n, seed=seed)[0]


def chamfer(mesh_a, mesh_b, n_samples: int = 100_000, seed: int = 0, threshold=None):
    """Symmetric Chamfer-L2 (mean squared nearest distance, both directions summed) between
    surface samples of two meshes given as (vertices, faces); with ``threshold`` also the
    F-score at that distance. An empty mesh gives an infinite distance."""
    from scipy.spatial import cKDTree

    n_samples = V.check_int(n_samples, "n_samples", low=1)
    meshes = []
    for name, m in (("mesh_a", mesh_a), ("mesh_b", mesh_b)):
        if not isinstance(m, tuple | list) or len(m) != 2:
            raise TypeError(f"{name} must be a (vertices, faces) pair")
        if len(m[1]) == 0:
            meshes.append((np.zeros((0, 3)), np.zeros((0, 3), dtype=np.int64)))
            continue
        v = V.check_array(m[0], f"{name} vertices", ndim=2, shape=(None, 3))
        f = V.check_array(m[1], f"{name} faces", ndim=2, shape=(None, 3), dtype=None)
        meshes.append((v, f))
    if any(len(f) == 0 for _, f in meshes):
        return (float("inf"), 0.0) if threshold is not None else float("inf")
    pa = _samples(*meshes[0], n_samples, seed)
    pb = _samples(*meshes[1], n_samples, seed + 1)
    da, _ = cKDTree(pb).query(pa)
    db, _ = cKDTree(pa).query(pb)
    cd = float((da**2).mean() + (db**2).mean())
    if threshold is None:
        return cd
    t = V.check_scalar(threshold, "threshold", low=0, low_open=True)
    prec, rec = float((da < t).mean()), float((db < t).mean())
    return cd, (2 * prec * rec / (prec + rec) if prec + rec else 0.0)


def bd_rate(rate_a, dist_a, rate_b, dist_b) -> float:
    """Bjontegaard delta rate (%) of curve A against anchor B: the mean difference of log-rate
    over the overlapping distortion interval, with log-rate interpolated piecewise-cubically
    (PCHIP) as a function of -log10(distortion). Negative means A needs fewer bits.
    NaN when the two curves do not overlap in distortion."""
    from scipy.interpolate import PchipInterpolator

    curves = []
    for tag, r, d in (("a", rate_a, dist_a), ("b", rate_b, dist_b)):
        r = V.check_array(r, f"rate_{tag}", ndim=1, low=0)
        d = V.check_array(d, f"dist_{tag}", ndim=1, n_rows=len(r), low=0)
        if len(r) < 2:
            raise ValueError(f"rate_{tag} needs at least 2 points, got {len(r)}")
        if (r <= 0).any() or (d <= 0).any():
            raise ValueError(f"rate_{tag} and dist_{tag} must be > 0")
        q, lr = -np.log10(d), np.log10(r)
        order = np.argsort(q)
        q, lr = q[order], lr[order]
        q, idx = np.unique(q, return_index=True)
        if len(q) < 2:
            raise ValueError(f"dist_{tag} needs at least 2 distinct values")
        curves.append((q, lr[idx]))
    lo = max(curves[0][0][0], curves[1][0][0])
    hi = min(curves[0][0][-1], curves[1][0][-1])
    if hi <= lo:
        return float("nan")
    grid = np.linspace(lo, hi, 201)
    ia, ib = (PchipInterpolator(q, lr)(grid) for q, lr in curves)
    diff = float(np.trapezoid(ia - ib, grid) / (hi - lo))
    return (10**diff - 1) * 100


# -- baselines ---------------------------------------------------------------------------


def draco_encode(vertices, faces, quantization_bits: int = 11) -> bytes:
    """Draco (compression level 10) bitstream of a mesh."""
    import DracoPy

    q = V.check_int(quantization_bits, "quantization_bits", low=1, high=30)
    v = V.check_array(vertices, "vertices", ndim=2, shape=(None, 3), dtype=np.float32)
    f = V.check_array(faces, "faces", ndim=2, shape=(None, 3), dtype=None)
    return bytes(DracoPy.encode(v, f.astype(np.uint32), quantization_bits=q, compression_level=10))


def draco_decode(data: bytes) -> tuple[np.ndarray, np.ndarray]:
    import DracoPy

    if not isinstance(data, bytes | bytearray) or not data:
        raise ValueError("data must be a non-empty Draco bitstream")
    mesh = DracoPy.decode(bytes(data))
    return np.asarray(mesh.points, dtype=np.float64), np.asarray(mesh.faces, dtype=np.int64)


def quantized_sir_encode(sir: SIR, levels: int = 8) -> bytes:
    """The non-learned SIR codec (baseline B2): octree-coded coordinates at full resolution +
    the TSDF uniformly quantized to ``levels`` values in [-1, 1], range-coded under the
    shape's own histogram (sent as uint32 counts)."""
    if not isinstance(sir, SIR):
        raise TypeError(f"sir must be a SIR, got {type(sir).__name__}")
    V.check_array(sir.tsdf, "sir.tsdf", ndim=1, n_rows=len(sir.coords), low=-1, high=1)
    n = V.check_int(levels, "levels", low=2, high=65535)
    coords = np.asarray(sir.coords)
    order = np.lexsort((coords[:, 2], coords[:, 1], coords[:, 0]))
    sym = np.rint((sir.tsdf[order] + 1) / 2 * (n - 1)).astype(np.int64)
    counts = np.bincount(sym, minlength=n)
    probs = np.broadcast_to(counts.astype(np.float64), (len(sym), n))
    cb = encode_octree(coords, sir.res)
    body = encode_symbols(sym, probs)
    head = struct.pack("<HHI", sir.res, n, len(cb)) + counts.astype("<u4").tobytes()
    return head + cb + body


def quantized_sir_decode(data: bytes) -> SIR:
    from iclr26.three_d.sir_snc.entropy import decode_symbols

    if not isinstance(data, bytes | bytearray) or len(data) < 8:
        raise ValueError("data must be a bitstream made by quantized_sir_encode")
    res, n, nc = struct.unpack("<HHI", data[:8])
    counts = np.frombuffer(data[8 : 8 + 4 * n], dtype="<u4").astype(np.float64)
    coords = decode_octree(data[8 + 4 * n : 8 + 4 * n + nc])
    sym = decode_symbols(data[8 + 4 * n + nc :], np.broadcast_to(counts, (len(coords), n)))
    tsdf = (sym.astype(np.float32) / (n - 1)) * 2 - 1
    return SIR(coords, tsdf, int(res), 0.0)


def quantized_sir_mesh(data: bytes):
    sir = quantized_sir_decode(data)
    return sparse_marching_cubes(sir.coords, sir.tsdf, sir.res)


def dense_lzma_bytes(tsdf_volume, levels: int = 16) -> int:
    """Baseline B3: size of the dense TSDF volume quantized to ``levels`` values + lzma."""
    vol = V.check_array(tsdf_volume, "tsdf_volume", ndim=3, low=-1, high=1)
    n = V.check_int(levels, "levels", low=2, high=256)
    sym = np.rint((vol + 1) / 2 * (n - 1)).astype(np.uint8)
    return len(lzma.compress(sym.tobytes(), preset=9))
