"""Data: damped linear oscillators (synthetic) and the UEA multivariate sets that ship as
``.ts`` files inside the installed ``aeon`` package (read directly, nothing downloaded)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import scipy.linalg

from iclr26 import validation as V


def random_orthogonal(dim: int, random_state=None) -> np.ndarray:
    """A Haar-random orthogonal (dim, dim) matrix."""
    dim = V.check_int(dim, "dim", low=1)
    rng = np.random.default_rng(random_state)
    q, r = np.linalg.qr(rng.standard_normal((dim, dim)))
    return q * np.sign(np.diag(r))


def plane_rotation(dim: int, angle: float, axes: tuple[int, int] = (1, 2)) -> np.ndarray:
    """Givens rotation by ``angle`` in the plane of coordinates ``axes``; the default (1, 2)
    turns the first oscillator's plane (e0, e1) towards (e0, e2), out of its own span."""
    dim = V.check_int(dim, "dim", low=2)
    angle = V.check_scalar(angle, "angle")
    if len(axes) != 2:
        raise ValueError(f"axes must be two coordinates, got {axes!r}")
    i, j = (V.check_int(a, "axes", low=0, high=dim - 1) for a in axes)
    if i == j:
        raise ValueError(f"axes must be two distinct coordinates below dim, got {axes!r}")
    rot = np.eye(dim)
    c, s = np.cos(angle), np.sin(angle)
    rot[i, i] = rot[j, j] = c
    rot[i, j], rot[j, i] = -s, s
    return rot


def oscillator_generator(freqs, decays) -> np.ndarray:
    """Block-diagonal continuous-time generator with eigenvalues -gamma_k +- i omega_k."""
    freqs = V.check_array(np.atleast_1d(freqs), "freqs", ndim=1, dtype=np.float64)
    decays = V.check_array(np.atleast_1d(decays), "decays", ndim=1, dtype=np.float64)
    if freqs.shape != decays.shape:
        raise ValueError(
            f"freqs and decays must have the same length, got {freqs.size} and {decays.size}"
        )
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
    dt = V.check_scalar(dt, "dt", low=0.0, low_open=True)
    T = V.check_int(T, "T", low=2)
    n_traj = V.check_int(n_traj, "n_traj", low=1)
    noise = V.check_scalar(noise, "noise", low=0.0)
    gen = oscillator_generator(freqs, decays)
    dim = gen.shape[0]
    rng = np.random.default_rng(random_state)
    if mixing is None:
        Q = random_orthogonal(dim, rng)
    else:
        Q = V.check_array(mixing, "mixing", dtype=np.float64, shape=(dim, dim))
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
    if not isinstance(name, str) or not name or "/" in name or "\\" in name or ".." in name:
        raise ValueError(f"name must be a UEA data set name such as 'BasicMotions', got {name!r}")
    if not isinstance(split, str) or split.upper() not in ("TRAIN", "TEST"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    spec = importlib.util.find_spec("aeon")
    if spec is None or spec.origin is None:
        raise FileNotFoundError("the aeon package (carrier of the UEA files) is not installed")
    path = Path(spec.origin).parent / "datasets" / "data" / name / f"{name}_{split.upper()}.ts"
    if not path.exists():
        raise FileNotFoundError(f"{name} {split} is not shipped with the installed aeon")
    return path


def read_ts(path) -> tuple[list[np.ndarray], np.ndarray]:
    """Parse a sktime/aeon ``.ts`` file: a list of (T_i, C) float arrays and the labels.

    Missing values (``?``/``NaN``) are kept as NaN; a value that is not a number is an error
    naming its line."""
    series, labels = [], []
    in_data = False
    if not Path(path).is_file():
        raise FileNotFoundError(f"path {str(path)!r}: no such file")
    with open(path, encoding="utf-8") as handle:
        for lineno, raw in enumerate(handle, start=1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            if not in_data:
                if line.lower().startswith("@data"):
                    in_data = True
                continue
            parts = line.split(":")
            label = parts[-1].strip()
            try:
                channels = [
                    np.array([float(v) if v not in ("?", "NaN") else np.nan for v in p.split(",")])
                    for p in parts[:-1]
                ]
            except ValueError as exc:
                raise ValueError(f"path {path}: line {lineno} is not numeric ({exc})") from None
            if not channels:
                raise ValueError(f"path {path}: line {lineno} has a label but no values")
            length = min(len(c) for c in channels)
            series.append(np.stack([c[:length] for c in channels], axis=1))
            labels.append(label)
    if not in_data:
        raise ValueError(f"path {path} has no @data section")
    return series, np.array(labels)


def load_uea(name: str, split: str) -> tuple[list[np.ndarray], np.ndarray]:
    """A UEA multivariate set shipped in aeon (e.g. BasicMotions, JapaneseVowels)."""
    return read_ts(uea_path(name, split))
