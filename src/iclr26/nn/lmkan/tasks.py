"""Data for the lmKAN checks: a random teacher network, displaced methane, small image sets."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import numpy as np

from iclr26 import validation as V
from iclr26.data import as_rng, load


def random_teacher(
    n: int, dim: int = 32, width: int = 256, seed: int = 0, teacher_seed: int = 12345
) -> tuple[np.ndarray, np.ndarray]:
    """``x ~ N(0, I_dim)``, ``y = teacher(x)`` for a frozen random tanh MLP ``dim-width-width-1``.

    The teacher depends on ``teacher_seed`` only, so train and test sets drawn with different
    ``seed`` share it. Targets are standardised with the teacher's own statistics (estimated on
    a fixed reference sample).
    """
    n = V.check_int(n, "n", low=1)
    dim = V.check_int(dim, "dim", low=1)
    width = V.check_int(width, "width", low=1)
    V.check_int(seed, "seed", low=0)
    V.check_int(teacher_seed, "teacher_seed", low=0)
    t_rng = np.random.default_rng(teacher_seed)
    w1 = t_rng.normal(0, 1 / np.sqrt(dim), (dim, width))
    w2 = t_rng.normal(0, 1 / np.sqrt(width), (width, width))
    w3 = t_rng.normal(0, 1 / np.sqrt(width), (width, 1))
    b1, b2 = t_rng.normal(0, 0.1, width), t_rng.normal(0, 0.1, width)

    def teacher(x: np.ndarray) -> np.ndarray:
        return (np.tanh(np.tanh(x @ w1 + b1) @ w2 + b2) @ w3)[:, 0]

    reference = teacher(t_rng.normal(size=(4096, dim)))
    x = as_rng(seed).normal(size=(n, dim))
    y = (teacher(x) - reference.mean()) / reference.std()
    return x.astype(np.float32), y.astype(np.float32)


_BOND = 1.09  # C-H equilibrium length (angstrom)
_MASSES = np.array([12.011, 1.008, 1.008, 1.008, 1.008])


def methane_energy(coords: np.ndarray) -> np.ndarray:
    """A fixed classical force field for CH4 configurations ``(n, 5, 3)`` (C first), in eV:
    Morse C-H bonds + harmonic H-C-H angles + soft exponential H-H repulsion."""
    carbon, hydrogens = coords[:, :1], coords[:, 1:]
    bonds = hydrogens - carbon
    r = np.linalg.norm(bonds, axis=-1)
    morse = (4.7 * (1 - np.exp(-1.8 * (r - _BOND))) ** 2).sum(1)
    unit = bonds / r[..., None]
    i, j = np.triu_indices(4, 1)
    cos = np.clip((unit[:, i] * unit[:, j]).sum(-1), -1.0, 1.0)
    angles = np.arccos(cos)
    bend = (1.5 * (angles - np.arccos(-1 / 3)) ** 2).sum(1)
    hh = np.linalg.norm(hydrogens[:, i] - hydrogens[:, j], axis=-1)
    repulsion = (20.0 * np.exp(-hh / 0.35)).sum(1)
    return morse + bend + repulsion


def displaced_methane(n: int, sigma: float = 0.15, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Randomly displaced methane: features = 15 centre-of-mass-removed Cartesian coordinates,
    target = :func:`methane_energy` standardised by fixed constants (mean/std of a reference
    sample), so train and test sets share the scaling."""
    n = V.check_int(n, "n", low=1)
    sigma = V.check_scalar(sigma, "sigma", low=0.0, low_open=True)
    V.check_int(seed, "seed", low=0)
    tetra = np.array([[1, 1, 1], [1, -1, -1], [-1, 1, -1], [-1, -1, 1]]) / np.sqrt(3) * _BOND
    equilibrium = np.vstack([np.zeros(3), tetra])

    def sample(rng: np.random.Generator, count: int) -> np.ndarray:
        coords = equilibrium + rng.normal(0, sigma, (count, 5, 3))
        com = (coords * _MASSES[:, None]).sum(1, keepdims=True) / _MASSES.sum()
        return coords - com

    reference = methane_energy(sample(np.random.default_rng(999), 4096))
    coords = sample(as_rng(seed), n)
    energy = (methane_energy(coords) - reference.mean()) / reference.std()
    features = coords.reshape(n, 15) / sigma  # unit-scale inputs
    return features.astype(np.float32), energy.astype(np.float32)


def digits_images() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's bundled handwritten digits as images: ``(1797, 1, 8, 8)`` float32 in
    ``[0, 1]`` and int64 labels 0..9."""
    digits = load("digits")
    images = (digits.X / 16.0).reshape(-1, 1, 8, 8).astype(np.float32)
    return images, digits.y.astype(np.int64)


CIFAR10_ENV = "ICLR26_CIFAR10"
_CIFAR_TRAIN = tuple(f"data_batch_{k}" for k in range(1, 6))
_CIFAR_MEAN = np.array([0.4914, 0.4822, 0.4465], dtype=np.float32).reshape(1, 3, 1, 1)
_CIFAR_STD = np.array([0.2470, 0.2435, 0.2616], dtype=np.float32).reshape(1, 3, 1, 1)


def load_cifar10(
    directory: str | os.PathLike | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A local copy of CIFAR-10 in its python-pickle layout (``data_batch_1..5``,
    ``test_batch``), from ``directory`` or the ``ICLR26_CIFAR10`` environment variable.

    Returns ``x_train (50000, 3, 32, 32)``, ``y_train``, ``x_test``, ``y_test``: float32 images
    standardised per channel and int64 labels. Nothing is downloaded; a missing copy raises
    ``FileNotFoundError``.
    """
    if directory is None:
        directory = os.environ.get(CIFAR10_ENV)
        if not directory:
            raise FileNotFoundError(f"no CIFAR-10 directory given and ${CIFAR10_ENV} is not set")
    if not isinstance(directory, str | os.PathLike):
        raise TypeError(f"directory must be a path, got {type(directory).__name__}")
    root = Path(directory)
    missing = [n for n in (*_CIFAR_TRAIN, "test_batch") if not (root / n).is_file()]
    if missing:
        raise FileNotFoundError(f"CIFAR-10 batches missing in {root}: {', '.join(missing)}")

    def read(names) -> tuple[np.ndarray, np.ndarray]:
        images, labels = [], []
        for name in names:
            with open(root / name, "rb") as handle:
                batch = pickle.load(handle, encoding="bytes")
            data = np.asarray(batch[b"data"], dtype=np.uint8)
            if data.ndim != 2 or data.shape[1] != 3 * 32 * 32:
                raise ValueError(f"{name}: expected rows of 3072 bytes, got {data.shape}")
            images.append(data.reshape(-1, 3, 32, 32))
            labels.append(np.asarray(batch[b"labels"], dtype=np.int64))
        x = np.concatenate(images).astype(np.float32) / 255.0
        return (x - _CIFAR_MEAN) / _CIFAR_STD, np.concatenate(labels)

    x_train, y_train = read(_CIFAR_TRAIN)
    x_test, y_test = read(("test_batch",))
    return x_train, y_train, x_test, y_test
