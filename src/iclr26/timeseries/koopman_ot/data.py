"""Data: damped linear oscillators (synthetic) and the UEA multivariate sets that ship as
``.ts`` files inside the installed ``aeon`` package (read directly, nothing downloaded)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import scipy.linalg


def random_orthogonal(dim: int, random_state=None) -> np.ndarray:
    rng = np.random.default_rng(random_state)
    q, r = np.linalg.qr(rng.standard_normal((dim, dim)))
    return q * np.sign(np.diag(r))


def plane_rotation(dim: int, angle: float, axes: tuple[int, int] = (1, 2)) -> np.ndarray:
    """Givens rotation by ``angle`` in the plane of coordinates ``axes``; the default (1, 2)
    turns the first oscillator's plane (e0, e1) towards (e0, e2), out of its own span."""
    i, j = axes
    if not (0 <= i < dim and 0 <= j < dim and i != j):
        raise ValueError("axes must be two distinct coordinates below dim")
    rot = np.eye(dim)
    c, s = np.cos(angle), np.sin(angle)
    rot[i, i] = rot[j, j] = c
    rot[i, j], rot[j, i] = -s, s
    return rot


def oscillator_generator(freqs, decays) -> np.ndarray:
    """Block-diagonal continuous-time generator with eigenvalues -gamma_k +- i omega_k."""
    freqs, decays = np.atleast_1d(freqs).astype(float), np.atleast_1d(decays).astype(float)
    if freqs.shape != decays.shape:
        raise ValueError("freqs and decays must have the same length")
    blocks = [np.array([[-g, -w], [w, -g]]) for w, g in zip(freqs, decays)]
    return scipy.linalg.block_diag(*blocks)


def damped_oscillator(
    freqs,
    decays,
    dt: float = 0.1,
    T: int = 200,
    n_traj: int = 20,
    noise: float = 0.01,
    mixing: np.ndarray | None = None,
    random_state=None,
) -> np.ndarray:
    """Trajectories (n_traj, T, dim) of x = Q z, z' = A z, A with eigenvalues -gamma_k +- i w_k,
    observed with Gaussian noise; ``mixing`` Q (dim x dim orthogonal, random when None)."""
    if not dt > 0 or T < 2 or n_traj < 1 or noise < 0:
        raise ValueError("need dt > 0, T >= 2, n_traj >= 1 and noise >= 0")
    gen = oscillator_generator(freqs, decays)
    dim = gen.shape[0]
    rng = np.random.default_rng(random_state)
    Q = random_orthogonal(dim, rng) if mixing is None else np.asarray(mixing, dtype=float)
    if Q.shape != (dim, dim):
        raise ValueError(f"mixing must be ({dim}, {dim})")
    step = scipy.linalg.expm(gen * dt)
    powers = np.empty((T, dim, dim))
    powers[0] = np.eye(dim)
    for t in range(1, T):  # T matrix products, then all trajectories at once
        powers[t] = step @ powers[t - 1]
    z0 = rng.standard_normal((n_traj, dim))
    z = np.einsum("tab,nb->nta", powers, z0)
    x = z @ Q.T
    return x + noise * rng.standard_normal(x.shape)


def uea_path(name: str, split: str) -> Path:
    """Location of ``<name>_<SPLIT>.ts`` in the installed aeon package (no aeon import)."""
    if split.upper() not in ("TRAIN", "TEST"):
        raise ValueError("split must be 'train' or 'test'")
    spec = importlib.util.find_spec("aeon")
    if spec is None or spec.origin is None:
        raise FileNotFoundError("the aeon package (carrier of the UEA files) is not installed")
    path = Path(spec.origin).parent / "datasets" / "data" / name / f"{name}_{split.upper()}.ts"
    if not path.exists():
        raise FileNotFoundError(f"{name} {split} is not shipped with the installed aeon")
    return path


def read_ts(path) -> tuple[list[np.ndarray], np.ndarray]:
    """Parse a sktime/aeon ``.ts`` file: a list of (T_i, C) float arrays and the labels."""
    series, labels = [], []
    in_data = False
    with open(path, encoding="utf-8") as handle:
        for raw in handle:
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            if not in_data:
                if line.lower().startswith("@data"):
                    in_data = True
                continue
            parts = line.split(":")
            label = parts[-1].strip()
            channels = [
                np.array([float(v) if v not in ("?", "NaN") else np.nan for v in p.split(",")])
                for p in parts[:-1]
            ]
            length = min(len(c) for c in channels)
            series.append(np.stack([c[:length] for c in channels], axis=1))
            labels.append(label)
    if not in_data:
        raise ValueError(f"{path} has no @data section")
    return series, np.array(labels)


def load_uea(name: str, split: str) -> tuple[list[np.ndarray], np.ndarray]:
    """A UEA multivariate set shipped in aeon (e.g. BasicMotions, JapaneseVowels)."""
    return read_ts(uea_path(name, split))
